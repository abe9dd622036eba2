#!/bin/bash
# Description: SIGKILL of the daemon under 4 writer threads on a set of three devices (lib/set.h), 10 times: test-crash-loop.sh's checks (fsck of the set clean, fsync'd files exact, no foreign bytes), then everything deleted gives its space back and refilling it fills every member
#
# TFS_CRASH_ITERS (default 10 here) and TFS_SEED as in test-crash-loop.sh,
# which this runs with TFS_CRASH_MEMBERS=3.
TFS_CRASH_MEMBERS=3
TFS_CRASH_ITERS=${TFS_CRASH_ITERS:-10}
# shellcheck source-path=SCRIPTDIR
# shellcheck source=test-crash-loop.sh
. "$(dirname "$0")/test-crash-loop.sh"
