#!/bin/bash
# Description: the shipped conf/tensorfs.ini is exactly what the key table
# prints, -o overrides -c, and bad settings stop the mount: a bad -c file
# (a directory, a file that is not text, a bad value) with exit 1 naming
# FILE:LINE, a setting in -o that is unknown or out of range with exit 2
# (a bad command line), settings that contradict each other with exit 1
# naming each key, its value and where it came from (never the config
# file for a value -o gave).
. "$(dirname "$0")/lib.sh"

SHIPPED="$(cd "$(dirname "$0")/../.." && pwd)/conf/tensorfs.ini"
# this test is about configuration: none but its own
export TENSORFS_CONFIG=/nonexistent/tensorfs.ini
out=$("$TENSORFS" --print-config) || tfs_fail "--print-config exited $?"
diff <(printf '%s\n' "$out") "$SHIPPED" >&2 ||
	tfs_fail "conf/tensorfs.ini differs from 'tensorfs --print-config'; regenerate it"

got=$("$TENSORFS" -c "$SHIPPED" -o commit_interval_ms=250 --print-config |
	awk -F' = ' '$1 == "commit_interval_ms" {print $2}')
[ "$got" = 250 ] || tfs_fail "-o commit_interval_ms=250 over -c: expected 250, got '$got'"

# without -c, the default file if it exists (TENSORFS_CONFIG here, as
# /etc/tensorfs/tensorfs.ini on an installed machine); -c wins over it
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")
printf '[mount]\ncommit_interval_ms = 777\n' >"$WORK/default.ini"
got=$(TENSORFS_CONFIG="$WORK/default.ini" "$TENSORFS" --print-config |
	awk -F' = ' '$1 == "commit_interval_ms" {print $2}')
[ "$got" = 777 ] || tfs_fail "the default config file was not read: commit_interval_ms '$got'"
got=$(TENSORFS_CONFIG="$WORK/default.ini" "$TENSORFS" -c "$SHIPPED" --print-config |
	awk -F' = ' '$1 == "commit_interval_ms" {print $2}')
[ "$got" = 5000 ] || tfs_fail "-c did not replace the default config file: commit_interval_ms '$got'"
printf '[mount]\ncommit_intervl_ms = 1\n' >"$WORK/bad.ini"
TENSORFS_CONFIG="$WORK/bad.ini" "$TENSORFS" --print-config >/dev/null 2>"$WORK/err" &&
	tfs_fail "a bad default config file was accepted"
grep -q "bad.ini:2" "$WORK/err" || tfs_fail "a bad default config file: expected its name and line, got $(cat "$WORK/err")"
rm -rf "$WORK"
WORK=""

tfs_mkimg 256M

# -c with a directory or a file that is not text: exit 1 naming it, never
# a mount with the defaults (fopen() opens a directory, and its read
# failed as if the file were empty)
tfs_expect_exit 1 "tensorfs -c DIRECTORY --print-config" \
	"$TENSORFS" -c "$WORK" --print-config
tfs_expect_words "tensorfs -c DIRECTORY" "$WORK/err" \
	"'$WORK' is a directory; give an INI file"
tfs_try_mount "$IMG" "$MNT" -c "$WORK"
[ "$TFS_RC" = 1 ] || tfs_fail "tensorfs -c DIRECTORY DEVICE MOUNTPOINT: expected exit 1, got $TFS_RC"
tfs_expect_words "tensorfs -c DIRECTORY DEVICE MOUNTPOINT" "$WORK/err" \
	"is a directory; give an INI file"
tfs_expect_exit 1 "tensorfs -c /dev/zero --print-config" \
	"$TENSORFS" -c /dev/zero --print-config
tfs_expect_words "tensorfs -c /dev/zero" "$WORK/err" "/dev/zero:1:" "NUL byte"
"$TENSORFS" -f -o max_threds=4 "$IMG" "$MNT" 2>"$WORK/err"
rc=$?
[ "$rc" = 2 ] || tfs_fail "-o with a misspelt setting: expected exit 2, got $rc"
mountpoint -q "$MNT" && tfs_fail "-o with a misspelt setting: expected no mount"
grep -q "unknown setting 'max_threds'; did you mean 'max_threads'?" "$WORK/err" ||
	tfs_fail "-o max_threds=4: expected the nearest setting named, got: $(cat "$WORK/err")"

# --print-config refuses the same typo, with the same suggestion
"$TENSORFS" -o offload_param.buffer_cont=4 --print-config >"$WORK/out" 2>"$WORK/err"
rc=$?
[ "$rc" = 2 ] || tfs_fail "--print-config -o with a misspelt setting: expected exit 2, got $rc"
grep -q "did you mean 'buffer_count'" "$WORK/err" ||
	tfs_fail "--print-config -o buffer_cont=4: expected the nearest setting named, got: $(cat "$WORK/err")"
# FUSE's own key=value options and x-systemd.* ones are not taken for typos
"$TENSORFS" -o max_read=131072,fsname=x,x-systemd.after=y.service,commit_interval_ms=300 \
	--print-config >"$WORK/out" 2>"$WORK/err" ||
	tfs_fail "FUSE options taken for misspelt settings: $(cat "$WORK/err")"

"$TENSORFS" -f -o max_threads=0 "$IMG" "$MNT" 2>"$WORK/err"
rc=$?
[ "$rc" = 2 ] || tfs_fail "-o max_threads=0: expected exit 2, got $rc"
grep -q "out of range" "$WORK/err" || tfs_fail "-o max_threads=0: expected 'out of range', got: $(cat "$WORK/err")"

# a bad value in the file: bad input, exit 1 with FILE:LINE
printf '[mount]\nmax_threads = 0\n' >"$WORK/zero.ini"
tfs_try_mount "$IMG" "$MNT" -c "$WORK/zero.ini"
[ "$TFS_RC" = 1 ] || tfs_fail "-c with max_threads = 0: expected exit 1, got $TFS_RC"
tfs_expect_words "-c with max_threads = 0" "$WORK/err" "zero.ini:2:" "out of range"

# Regression: -o offload_param.buffer_size=1 was blamed on the config
# file read before it, and exited 2.  Values that contradict each other
# are refused (exit 1), each named with where it came from; the default
# file is read here as /etc/tensorfs/tensorfs.ini is on an installed
# machine
printf '[offload_param]\nbuffer_count = 4\n' >"$WORK/site.ini"
TENSORFS_CONFIG="$WORK/site.ini" tfs_try_mount "$IMG" "$MNT" -o offload_param.buffer_size=1
[ "$TFS_RC" = 1 ] || tfs_fail "-o offload_param.buffer_size=1: expected exit 1, got $TFS_RC"
tfs_expect_words "-o offload_param.buffer_size=1" "$WORK/err" \
	"offload_param.buffer_size = 1 from -o offload_param.buffer_size=1" \
	"offload_param.buffer_count = 4 from $WORK/site.ini:2" \
	"aio.block_size = 1MiB by default" "raise buffer_size or lower block_size"
grep -qF "tensorfs: $WORK/site.ini:" "$WORK/err" &&
	tfs_fail "-o offload_param.buffer_size=1: expected the config file not blamed, got '$(cat "$WORK/err")'"
tfs_expect_unmounted "-o offload_param.buffer_size=1" "$MNT"
# the same contradiction from the file names its line, and exits 1 too
printf '[offload_param]\nbuffer_size = 1\n' >"$WORK/small.ini"
tfs_try_mount "$IMG" "$MNT" -c "$WORK/small.ini"
[ "$TFS_RC" = 1 ] || tfs_fail "-c with buffer_size = 1: expected exit 1, got $TFS_RC"
tfs_expect_words "-c with buffer_size = 1" "$WORK/err" \
	"offload_param.buffer_size = 1 from $WORK/small.ini:2"

tfs_mount -o commit_interval_ms=100,max_threads=4
echo data >"$MNT/f" || tfs_fail "write on a mount with -o settings failed"
tfs_umount
tfs_fsck_clean
tfs_pass
