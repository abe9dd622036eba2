#!/bin/bash
# Description: open(O_TMPFILE) makes a nameless file that linkat() can name (atomic file creation; overlayfs's copy-up), or, where the FUSE library cannot offer it, fails cleanly with EOPNOTSUPP, changing nothing: then the test skips
#
# A FUSE file system receives O_TMPFILE as a FUSE_TMPFILE request (recent
# kernels), which libfuse hands to a 'tmpfile' handler of
# fuse_lowlevel_ops only in releases after 3.14; libfuse 3.14 (Debian 12,
# Ubuntu 24.04) has no such handler and answers ENOSYS, which the kernel
# turns into EOPNOTSUPP for the rest of the mount.  overlayfs then copies
# up through its work directory instead ("upper fs does not support
# tmpfile" in the kernel log; test-rename-whiteout runs it).  So with 3.14
# this test checks that the refusal is clean and skips (77); built against
# a libfuse with the handler, tensorfs would need to implement it (an
# inode with no links, which the lookup references of fs/fuse_ops.c's
# reply_entry() already keep alive) and this test checks it.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3
export LC_ALL=C
tfs_setup 256M

mkdir "$MNT/t" || tfs_fail "mkdir failed"
python3 - "$MNT/t" >"$WORK/tmp.out" 2>&1 <<'EOF'
import errno, os, sys

d = sys.argv[1]
try:
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
except OSError as e:
    if e.errno == errno.EOPNOTSUPP and os.listdir(d) == []:
        print("EOPNOTSUPP")
        sys.exit(0)
    sys.exit(f"O_TMPFILE failed with {errno.errorcode[e.errno]}, "
             f"left {os.listdir(d)}; expected success or a clean EOPNOTSUPP")
os.write(fd, b"tmp data")
st = os.fstat(fd)
if st.st_nlink != 0 or os.listdir(d) != []:
    sys.exit(f"a tmpfile has nlink {st.st_nlink} and the directory {os.listdir(d)}")
os.link(f"/proc/self/fd/{fd}", f"{d}/named")
os.close(fd)
if open(f"{d}/named", "rb").read() != b"tmp data":
    sys.exit("the linked tmpfile lost its data")
fd = os.open(d, os.O_TMPFILE | os.O_WRONLY | os.O_EXCL, 0o600)
os.write(fd, b"x" * 1000)
os.close(fd)
if os.listdir(d) != ["named"]:
    sys.exit(f"the directory holds {os.listdir(d)}, expected only 'named'")
print("OK")
EOF
rc=$?
[ "$rc" = 0 ] || { cat "$WORK/tmp.out" >&2; tfs_fail "O_TMPFILE (above)"; }
# the mount still works after the refusal
echo after >"$MNT/t/after" || tfs_fail "create after O_TMPFILE failed"
tfs_eq "read after O_TMPFILE" after "$(cat "$MNT/t/after")"
tfs_umount
tfs_fsck_clean
if [ "$(cat "$WORK/tmp.out")" = EOPNOTSUPP ]; then
	tfs_skip "O_TMPFILE: EOPNOTSUPP, as it must be with libfuse $(pkg-config --modversion fuse3 2>/dev/null || echo 3.14), which has no tmpfile handler (see the header)"
fi
tfs_eq "O_TMPFILE" OK "$(cat "$WORK/tmp.out")"
tfs_pass
