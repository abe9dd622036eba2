#!/bin/bash
# Description: power cuts under concurrent writers on a set of three devices (lib/set.h), 40 rounds: test-powercut.sh's rounds (unflushed writes lost or kept block by block on every member, fsck of the set clean, fsync'd files exact, no foreign bytes) with the file system striped over three images, and in every other round only one member (each in turn) losing its unflushed writes
#
# TFS_POWERCUT_ROUNDS (default 40 here) and TFS_SEED as in
# test-powercut.sh, which this runs with TFS_POWERCUT_MEMBERS=3.
TFS_POWERCUT_MEMBERS=3
TFS_POWERCUT_ROUNDS=${TFS_POWERCUT_ROUNDS:-40}
# shellcheck source-path=SCRIPTDIR
# shellcheck source=test-powercut.sh
. "$(dirname "$0")/test-powercut.sh"
