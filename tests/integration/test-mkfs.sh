#!/bin/bash
# Description: mkfs.tensorfs formats, sizes, extends and refuses images as its contract says
#
# Covers image files; test-mkfs-blockdev.sh covers block devices.  Checks:
# a fresh image mounts and is clean; SIZE suffixes; a 1 TiB sparse image
# formats within 20 s and stays small on disk; -s extends a smaller file;
# an existing tensorfs is refused without -f (and left byte for byte as it
# was) and replaced with -f; a file that holds data (a torch.save
# checkpoint, .npy, safetensors, zip, gzip, an ext2/3/4 or XFS image, or
# 100 MiB of anything) is refused, named and kept, and overwritten with -f,
# while an empty or sparse one is formatted; the journal of 64 MiB, 100 GiB
# and 1 TiB images is what --help and mkfs.tensorfs(8) say (one rule); a
# mounted image is refused even with -f; below 64 MiB is refused; a
# directory, a FIFO and /dev/zero are neither a block device nor a regular
# file; -q is quiet; usage errors exit 2, an owner (-u) out of range or
# unknown among them, a refusal 1; --help exits 0.
. "$(dirname "$0")/lib.sh"

tfs_need fusermount3 mountpoint truncate du stat sha256sum cmp dd mkfifo tr sed

MIB=$((1024 * 1024))

# size_of FILE: its apparent size in bytes
size_of() { stat -c %s "$1"; }

# fsck_clean DEVICE: tensorfs-fsck DEVICE must exit 0
fsck_clean() {
	tfs_expect_exit 0 "tensorfs-fsck '$1'" "$FSCK" "$1"
}

# fs_bytes: total bytes of the mounted file system (statfs f_blocks)
fs_bytes() {
	local _b _s
	read -r _b _s < <(stat -f -c '%b %S' "$MNT")
	echo $((_b * _s))
}

tfs_mkimg 128M

# ===== a fresh image: right size, clean, mounts, keeps a file =====

tfs_eq "size of 'mkfs.tensorfs -s 128M'" $((128 * MIB)) "$(size_of "$IMG")"
tfs_fsck_clean
tfs_mount
head -c 300000 /dev/urandom >"$WORK/marker"
cp "$WORK/marker" "$MNT/marker" || tfs_fail "cp to a fresh mount: expected success, got failure"
tfs_umount
tfs_fsck_clean
tfs_mount
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "marker after remount: expected the bytes written, got others"
tfs_umount

# ===== SIZE suffixes: K M G T and KiB MiB GiB TiB are all binary (1T below) =====

for spec in 65536K:$((64 * MIB)) 65536KiB:$((64 * MIB)) 100M:$((100 * MIB)) \
	100MiB:$((100 * MIB)) 1G:$((1024 * MIB)) 1GiB:$((1024 * MIB)) \
	1TiB:$((1024 * 1024 * MIB)); do
	sz=${spec%%:*}
	want=${spec#*:}
	img="$WORK/size-$sz.img"
	tfs_expect_exit 0 "mkfs.tensorfs -s $sz" "$MKFS" -s "$sz" "$img"
	tfs_eq "size of 'mkfs.tensorfs -s $sz'" "$want" "$(size_of "$img")"
	fsck_clean "$img"
	rm -f "$img"
done

# ===== 1 TiB sparse: fast, small on disk, mounts with the full size =====

BIG="$WORK/big.img"
t0=$(date +%s%N)
tfs_expect_exit 0 "mkfs.tensorfs -s 1T" "$MKFS" -s 1T "$BIG"
ms=$((($(date +%s%N) - t0) / 1000000))
tfs_log "formatting 1 TiB took $ms ms"
[ "$ms" -le 20000 ] || tfs_fail "formatting a 1 TiB sparse image: expected <= 20000 ms, got $ms ms"
tfs_eq "size of the 1 TiB image" $((1024 * 1024 * MIB)) "$(size_of "$BIG")"
du_kib=$(du -k "$BIG" | cut -f1)
tfs_log "1 TiB image uses $du_kib KiB on disk"
[ "$du_kib" -le 65536 ] || tfs_fail "disk use of a fresh 1 TiB image: expected <= 64 MiB, got $du_kib KiB"
fsck_clean "$BIG"
SAVED_IMG=$IMG
IMG=$BIG
tfs_mount
total=$(fs_bytes)
[ "$total" -ge $((1024 * 1024 * MIB * 95 / 100)) ] && [ "$total" -le $((1024 * 1024 * MIB)) ] ||
	tfs_fail "statfs size of the 1 TiB file system: expected 95..100% of 1 TiB, got $total bytes"
cp "$WORK/marker" "$MNT/marker" || tfs_fail "cp to the 1 TiB mount: expected success, got failure"
tfs_umount
fsck_clean "$BIG"
du_kib=$(du -k "$BIG" | cut -f1)
[ "$du_kib" -le $((65536 + 1024)) ] ||
	tfs_fail "disk use of the 1 TiB image after a mount and a 300 KB file: expected <= 65 MiB, got $du_kib KiB"
rm -f "$BIG"
IMG=$SAVED_IMG

# ===== -s extends an existing smaller file =====

EXT="$WORK/extend.img"
dd if=/dev/urandom of="$EXT" bs=1M count=1 status=none
truncate -s 70M "$EXT"
# it holds data: -f to overwrite it (a sparse file is extended without
# -f: the 1 TiB image above)
tfs_expect_exit 1 "mkfs.tensorfs -s 256M on a 70 MiB file of data" "$MKFS" -s 256M "$EXT"
tfs_expect_words "mkfs.tensorfs -s 256M on a 70 MiB file of data" "$WORK/err" "holds data" -f
tfs_eq "size of a 70 MiB file of data after a refused mkfs -s 256M" $((70 * MIB)) "$(size_of "$EXT")"
tfs_expect_exit 0 "mkfs.tensorfs -f -s 256M on a 70 MiB file" "$MKFS" -f -s 256M "$EXT"
tfs_eq "size after 'mkfs.tensorfs -s 256M' of a 70 MiB file" $((256 * MIB)) "$(size_of "$EXT")"
fsck_clean "$EXT"
du_kib=$(du -k "$EXT" | cut -f1)
[ "$du_kib" -le 65536 ] || tfs_fail "disk use after extending to 256 MiB: expected <= 64 MiB, got $du_kib KiB"
IMG=$EXT
tfs_mount
total=$(fs_bytes)
[ "$total" -gt $((200 * MIB)) ] ||
	tfs_fail "statfs size after extending to 256 MiB: expected > 200 MiB, got $total bytes"
tfs_umount
# and a formatted 128 MiB tensorfs grows to 512 MiB with -f -s 512M
tfs_expect_exit 0 "mkfs.tensorfs -f -s 512M on a 256 MiB tensorfs" "$MKFS" -f -s 512M "$EXT"
tfs_eq "size after 'mkfs.tensorfs -f -s 512M'" $((512 * MIB)) "$(size_of "$EXT")"
fsck_clean "$EXT"
tfs_mount
total=$(fs_bytes)
[ "$total" -gt $((400 * MIB)) ] ||
	tfs_fail "statfs size after extending to 512 MiB: expected > 400 MiB, got $total bytes"
tfs_umount
rm -f "$EXT"
IMG=$SAVED_IMG

# ===== a regular file that holds data: refused, named, kept; -f overwrites =====

DATA="$(dirname "$0")/../data"
# kind FILE WHAT...: mkfs.tensorfs FILE and -s 64M FILE exit 1, name
# every WHAT and the size, and leave FILE byte for byte as it was
kind() {
	local _f=$1 _sum _size _o
	shift
	_sum=$(sha256sum <"$_f")
	_size=$(size_of "$_f")
	for _o in "" "-s 64M" "-q -s 64M"; do
		# shellcheck disable=SC2086 # options, as words
		tfs_expect_exit 1 "mkfs.tensorfs $_o on $(basename "$_f")" "$MKFS" $_o "$_f"
		tfs_expect_words "mkfs.tensorfs $_o on $(basename "$_f")" "$WORK/err" \
			"$_f: holds data (" "$@" "would destroy it" "-f to overwrite it"
	done
	tfs_eq "bytes of $(basename "$_f") after refused mkfs runs" "$_sum" "$(sha256sum <"$_f")"
	tfs_eq "size of $(basename "$_f") after refused mkfs runs" "$_size" "$(size_of "$_f")"
}
cp "$DATA/torch/state_dict.pt" "$WORK/model.pt"
kind "$WORK/model.pt" "a torch.save checkpoint" "$(size_of "$WORK/model.pt") B"
cp "$DATA/torch/optim.legacy.pt" "$WORK/legacy.pt"
kind "$WORK/legacy.pt" "a torch.save checkpoint"
cp "$DATA/npz/arrays.npz" "$WORK/arrays.npz"
kind "$WORK/arrays.npz" "a zip archive"
printf 'PK\005\006%018d' 0 | tr 0 '\000' >"$WORK/empty.zip"
kind "$WORK/empty.zip" "a zip archive"
{ printf '\223NUMPY\001\000\166\000'; printf "%-117s\n" "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"; head -c 16 /dev/zero; } >"$WORK/a.npy"
kind "$WORK/a.npy" "a NumPy .npy array"
{ printf '\040\000\000\000\000\000\000\000'; printf '{"__metadata__":{"a":"b"}}      '; } >"$WORK/a.safetensors"
kind "$WORK/a.safetensors" "a safetensors file"
{ printf '\037\213\010\000'; head -c 4000 /dev/urandom; } >"$WORK/a.gz"
kind "$WORK/a.gz" "gzip"
truncate -s 70M "$WORK/ext.img"
printf '\123\357' | dd of="$WORK/ext.img" bs=1 seek=1080 conv=notrunc status=none
kind "$WORK/ext.img" "ext2/3/4" "70 MiB"
{ printf 'XFSB'; head -c 8000 /dev/urandom; } >"$WORK/xfs.img"
kind "$WORK/xfs.img" "XFS"
head -c $((100 * MIB)) /dev/urandom >"$WORK/user.bin"
kind "$WORK/user.bin" "100 MiB"
# -f overwrites it, as a tensorfs that mounts
tfs_expect_exit 0 "mkfs.tensorfs -f -s 64M on a torch checkpoint" "$MKFS" -f -s 64M "$WORK/model.pt"
fsck_clean "$WORK/model.pt"
tfs_expect_exit 0 "mkfs.tensorfs -f on 100 MiB of data" "$MKFS" -f "$WORK/user.bin"
tfs_eq "size of 100 MiB of data after mkfs -f" $((100 * MIB)) "$(size_of "$WORK/user.bin")"
fsck_clean "$WORK/user.bin"
rm -f "$WORK"/model.pt "$WORK"/legacy.pt "$WORK"/arrays.npz "$WORK"/empty.zip "$WORK"/a.* \
	"$WORK"/ext.img "$WORK"/xfs.img "$WORK"/user.bin
# an empty file, and a sparse one (no blocks allocated), hold nothing
: >"$WORK/empty.img"
tfs_expect_exit 0 "mkfs.tensorfs -s 64M on an empty file" "$MKFS" -s 64M "$WORK/empty.img"
fsck_clean "$WORK/empty.img"
truncate -s 100M "$WORK/sparse.img"
tfs_expect_exit 0 "mkfs.tensorfs on a sparse 100 MiB file" "$MKFS" "$WORK/sparse.img"
fsck_clean "$WORK/sparse.img"
rm -f "$WORK/empty.img" "$WORK/sparse.img"

# ===== the journal: as big as --help and mkfs.tensorfs(8) say =====

# bytes "N UNIT": N (whole or N.0) of B, KiB, MiB, GiB, TiB in bytes
bytes() {
	local _n=${1%% *} _u=${1#* } _s=0
	_n=${_n%.0}
	case $_u in
	B) _s=0 ;; KiB) _s=10 ;; MiB) _s=20 ;; GiB) _s=30 ;; TiB) _s=40 ;;
	*) tfs_fail "size '$1': expected N B/KiB/MiB/GiB/TiB" ;;
	esac
	echo $((_n << _s))
}
# rule TEXT-FILE: "FRACTION MIN MAX" from "journal takes 1/F of the
# device, at least MIN and at most MAX" (on however many lines)
rule() {
	tr -s '\n ' '  ' <"$1" | sed -n 's/.*[Jj]ournal takes 1\/\([0-9]*\) of the device, at least \([0-9.]* [KMGT]*i*B\) and at most \([0-9.]* [KMGT]*i*B\).*/\1:\2:\3/p'
}
"$MKFS" --help >"$WORK/help" || tfs_fail "mkfs.tensorfs --help: expected exit 0, got $?"
help_rule=$(rule "$WORK/help")
[ -n "$help_rule" ] || tfs_fail "mkfs.tensorfs --help: expected 'journal takes 1/N of the device, at least MIN and at most MAX', got '$(cat "$WORK/help")'"
PAGE="$TFS_BIN/../man/mkfs.tensorfs.8"
[ -s "$PAGE" ] || tfs_fail "no mkfs.tensorfs(8) at $PAGE; the build writes it"
sed 's/\\-/-/g' "$PAGE" >"$WORK/page"
page_rule=$(rule "$WORK/page")
tfs_eq "the journal's rule in mkfs.tensorfs(8), as in --help" "$help_rule" "$page_rule"
IFS=: read -r frac jmin jmax <<<"$help_rule"
jmin=$(bytes "$jmin")
jmax=$(bytes "$jmax")
tfs_log "journal: 1/$frac of the device, $jmin..$jmax bytes"
for sz in 64M:$((64 * MIB)) 100G:$((100 * 1024 * MIB)) 1T:$((1024 * 1024 * MIB)); do
	img="$WORK/journal-${sz%%:*}.img"
	want=$((${sz#*:} / frac))
	[ "$want" -ge "$jmin" ] || want=$jmin
	[ "$want" -le "$jmax" ] || want=$jmax
	tfs_expect_exit 0 "mkfs.tensorfs -s ${sz%%:*}" "$MKFS" -s "${sz%%:*}" "$img"
	got=$(sed -n 's/.*, \([0-9.]* [KMGT]*i*B\) for the journal.*/\1/p' "$WORK/out")
	[ -n "$got" ] || tfs_fail "mkfs.tensorfs -s ${sz%%:*}: expected 'N MiB for the journal', got '$(cat "$WORK/out")'"
	tfs_eq "journal of 'mkfs.tensorfs -s ${sz%%:*}' (--help: 1/$frac, $jmin..$jmax bytes)" "$want" "$(bytes "$got")"
	rm -f "$img"
	[ "${sz%%:*}" != 100G ] || journal_100g=$want
done
# the example the manual gives is what mkfs gives
ex=$(tr -s '\n ' '  ' <"$WORK/page" | sed -n 's/.*a 100 GiB device gets \([0-9.]* [KMGT]*i*B\).*/\1/p')
[ -n "$ex" ] || tfs_fail "mkfs.tensorfs(8): expected 'a 100 GiB device gets N MiB', got none"
tfs_eq "the journal of 100 GiB in mkfs.tensorfs(8), as mkfs gives it" "$journal_100g" "$(bytes "$ex")"

# ===== an existing tensorfs: refused without -f, replaced with -f =====

before=$(sha256sum <"$IMG")
tfs_expect_exit 1 "mkfs.tensorfs over a tensorfs without -f" "$MKFS" "$IMG"
tfs_expect_words "mkfs.tensorfs over a tensorfs without -f" "$WORK/err" already -f
tfs_expect_exit 1 "mkfs.tensorfs -s 128M over a tensorfs without -f" "$MKFS" -s 128M "$IMG"
tfs_expect_words "mkfs.tensorfs -s 128M over a tensorfs without -f" "$WORK/err" already -f
tfs_expect_exit 1 "mkfs.tensorfs -q over a tensorfs without -f" "$MKFS" -q "$IMG"
tfs_expect_words "mkfs.tensorfs -q over a tensorfs without -f" "$WORK/err" already -f
tfs_eq "image bytes after refused mkfs runs" "$before" "$(sha256sum <"$IMG")"
tfs_mount
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "marker after a refused mkfs: expected it intact, got other bytes"
tfs_umount

tfs_expect_exit 0 "mkfs.tensorfs -f over a tensorfs" "$MKFS" -f "$IMG"
tfs_eq "size after mkfs -f" $((128 * MIB)) "$(size_of "$IMG")"
tfs_fsck_clean
tfs_mount
[ ! -e "$MNT/marker" ] || tfs_fail "after mkfs -f: expected an empty file system, got the old 'marker'"
extra=$(find "$MNT" -mindepth 1 -maxdepth 1 ! -name '.*' | head -3)
[ -z "$extra" ] || tfs_fail "after mkfs -f: expected an empty root, got '$extra'"
cp "$WORK/marker" "$MNT/marker" || tfs_fail "cp after mkfs -f: expected success, got failure"

# ===== a mounted image: refused, with -f too, and the mount goes on =====

tfs_expect_exit 1 "mkfs.tensorfs -f on a mounted image" "$MKFS" -f "$IMG"
tfs_expect_some_word "mkfs.tensorfs -f on a mounted image" "$WORK/err" "in use" mounted
tfs_expect_exit 1 "mkfs.tensorfs -f -s 128M on a mounted image" "$MKFS" -f -s 128M "$IMG"
tfs_expect_some_word "mkfs.tensorfs -f -s 128M on a mounted image" "$WORK/err" "in use" mounted
tfs_expect_exit 1 "mkfs.tensorfs on a mounted image" "$MKFS" "$IMG"
tfs_expect_some_word "mkfs.tensorfs on a mounted image" "$WORK/err" "in use" mounted already
ln -s "$IMG" "$WORK/alias.img"
tfs_expect_exit 1 "mkfs.tensorfs -f on a mounted image through a symlink" "$MKFS" -f "$WORK/alias.img"
tfs_expect_some_word "mkfs.tensorfs -f through a symlink" "$WORK/err" "in use" mounted
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "marker after refused mkfs on the mount: expected intact, got other bytes"
head -c 123457 /dev/urandom >"$WORK/second"
cp "$WORK/second" "$MNT/second" || tfs_fail "cp after refused mkfs on the mount: expected success, got failure"
tfs_umount
tfs_fsck_clean
tfs_mount
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "marker after remount: expected intact, got other bytes"
cmp "$WORK/second" "$MNT/second" || tfs_fail "second file after remount: expected intact, got other bytes"
tfs_umount

# ===== below the 64 MiB minimum =====

SMALL="$WORK/small.img"
tfs_expect_exit 1 "mkfs.tensorfs -s 32M" "$MKFS" -s 32M "$SMALL"
tfs_expect_words "mkfs.tensorfs -s 32M" "$WORK/err" "too small" minimum
rm -f "$SMALL"
# below one block: not taken for "no size given" (it was, once)
tfs_expect_exit 1 "mkfs.tensorfs -s 1K" "$MKFS" -s 1K "$SMALL"
tfs_expect_words "mkfs.tensorfs -s 1K" "$WORK/err" "too small" minimum "1024 B"
[ ! -e "$SMALL" ] || tfs_fail "mkfs.tensorfs -s 1K: expected no image file left, got one"
truncate -s 32M "$SMALL"
tfs_expect_exit 1 "mkfs.tensorfs on an existing 32 MiB file" "$MKFS" "$SMALL"
tfs_expect_words "mkfs.tensorfs on an existing 32 MiB file" "$WORK/err" "too small" minimum
rm -f "$SMALL"
truncate -s $((64 * MIB - 4096)) "$SMALL"
tfs_expect_exit 1 "mkfs.tensorfs on a file of 64 MiB - 4 KiB" "$MKFS" "$SMALL"
tfs_expect_words "mkfs.tensorfs on a file of 64 MiB - 4 KiB" "$WORK/err" "too small" minimum
rm -f "$SMALL"
tfs_expect_exit 0 "mkfs.tensorfs -s 64M (exactly the minimum)" "$MKFS" -s 64M "$SMALL"
fsck_clean "$SMALL"
IMG=$SMALL
tfs_mount
cp "$WORK/second" "$MNT/second" || tfs_fail "cp to a 64 MiB file system: expected success, got failure"
tfs_umount
fsck_clean "$SMALL"
IMG=$SAVED_IMG

# ===== -q =====

tfs_expect_exit 0 "mkfs.tensorfs -q -s 100M" "$MKFS" -q -s 100M "$WORK/quiet.img"
[ ! -s "$WORK/out" ] && [ ! -s "$WORK/err" ] ||
	tfs_fail "mkfs.tensorfs -q: expected no output, got '$(cat "$WORK/out" "$WORK/err" | head -c 300)'"
fsck_clean "$WORK/quiet.img"
rm -f "$WORK/quiet.img"

# ===== operational errors =====

tfs_expect_exit 1 "mkfs.tensorfs on a missing file without -s" "$MKFS" "$WORK/absent.img"
[ -s "$WORK/err" ] || tfs_fail "mkfs.tensorfs on a missing file: expected a message on stderr, got none"
[ ! -e "$WORK/absent.img" ] || tfs_fail "mkfs.tensorfs on a missing file without -s: expected no file created, got one"
tfs_expect_exit 1 "mkfs.tensorfs -s 100M in a missing directory" "$MKFS" -s 100M "$WORK/nodir/x.img"
[ -s "$WORK/err" ] || tfs_fail "mkfs.tensorfs in a missing directory: expected a message on stderr, got none"
# a directory, a FIFO, a character device: named, with or without -f, -s
mkdir "$WORK/adir"
mkfifo "$WORK/afifo"
for dev in "$WORK/adir" "$WORK/afifo" /dev/zero; do
	for o in "" "-f" "-f -s 64M"; do
		# shellcheck disable=SC2086 # options, as words
		tfs_expect_exit 1 "mkfs.tensorfs $o on $dev" "$MKFS" $o "$dev"
		tfs_expect_words "mkfs.tensorfs $o on $dev" "$WORK/err" \
			"mkfs.tensorfs: $dev: neither a block device nor a regular file"
	done
done
[ -d "$WORK/adir" ] && [ -p "$WORK/afifo" ] ||
	tfs_fail "mkfs.tensorfs on a directory and a FIFO: expected them left as they were"

# ===== usage errors exit 2; --help exits 0 =====

U="$WORK/usage.img"
tfs_expect_exit 2 "mkfs.tensorfs without arguments" "$MKFS"
[ -s "$WORK/err" ] || tfs_fail "mkfs.tensorfs without arguments: expected a message on stderr, got none"
tfs_expect_exit 2 "mkfs.tensorfs with an unknown option" "$MKFS" -Z -s 100M "$U"
[ -s "$WORK/err" ] || tfs_fail "mkfs.tensorfs -Z: expected a message on stderr, got none"
tfs_expect_exit 2 "mkfs.tensorfs -s without its argument" "$MKFS" -s
many=()
for i in $(seq 65); do many+=("$U.$i"); done
tfs_expect_exit 2 "mkfs.tensorfs with 65 devices" "$MKFS" -s 100M "${many[@]}"
tfs_expect_words "mkfs.tensorfs with 65 devices" "$WORK/err" "more than 64 devices"
[ ! -e "$U" ] && [ ! -e "$U.1" ] || tfs_fail "usage errors: expected no image created, got one"
# two devices are a set (test-set.sh); one that cannot be made leaves
# none of the images behind
tfs_expect_exit 1 "mkfs.tensorfs of a set whose second member is too small" "$MKFS" -s 100M "$U" /dev/null
[ ! -e "$U" ] || tfs_fail "mkfs.tensorfs of a set that failed: expected the image it created removed, got $U"
# a malformed SIZE is a usage error or an error, but always named
for bad in abc 12X 1.5.G -5M; do
	tfs_expect_exit "1|2" "mkfs.tensorfs -s '$bad'" "$MKFS" -s "$bad" "$U"
	tfs_expect_words "mkfs.tensorfs -s '$bad'" "$WORK/err" "$bad"
	[ ! -e "$U" ] || tfs_fail "mkfs.tensorfs -s '$bad': expected no image created, got one"
done
# -u: an id out of 0..4294967294, signed, blank or not a known name is
# refused with the value and the range, never wrapped into another owner
for bad in 4294967296 4294967295 18446744073709551616 -1 +5 " 7" 12abc \
	no_such_user_tfs 0:4294967296 0:-1 0:no_such_group_tfs ""; do
	tfs_expect_exit 2 "mkfs.tensorfs -u '$bad'" "$MKFS" -s 100M -u "$bad" "$U"
	case $bad in
	*:*) val=${bad#*:} ;;
	*) val=$bad ;;
	esac
	[ -z "$val" ] || tfs_expect_words "mkfs.tensorfs -u '$bad'" "$WORK/err" \
		"'$val'" 4294967294
	[ ! -e "$U" ] || tfs_fail "mkfs.tensorfs -u '$bad': expected no image created, got one"
done
# the largest ids are kept as given
tfs_expect_exit 0 "mkfs.tensorfs -u 4294967294:4294967294" \
	"$MKFS" -q -s 100M -u 4294967294:4294967294 "$U"
SAVED_IMG=$IMG
IMG=$U
tfs_mount
tfs_eq "owner of the root after -u 4294967294:4294967294" \
	4294967294:4294967294 "$(stat -c %u:%g "$MNT")"
tfs_umount
IMG=$SAVED_IMG
rm -f "$U"

# run through sudo, the root belongs to SUDO_UID:SUDO_GID; values that are
# not ids are ignored with a warning (root keeps it), never wrapped
if [ "$(id -u)" = 0 ]; then
	IMG=$U
	for env in "1234 5678 1234:5678" "99999999999 5678 0:0" "1234 -1 1234:0" "12x 7 0:0"; do
		# shellcheck disable=SC2086 # three words
		set -- $env
		rm -f "$U"
		SUDO_UID=$1 SUDO_GID=$2 "$MKFS" -q -s 100M "$U" 2>"$WORK/err" ||
			tfs_fail "mkfs.tensorfs with SUDO_UID=$1 SUDO_GID=$2 failed: $(cat "$WORK/err")"
		case $3 in
		0:0) grep -q "warning: ignoring SUDO_UID='$1'" "$WORK/err" ||
			tfs_fail "SUDO_UID=$1: no warning: $(cat "$WORK/err")" ;;
		*:0) grep -q "warning: ignoring SUDO_GID='$2'" "$WORK/err" ||
			tfs_fail "SUDO_GID=$2: no warning: $(cat "$WORK/err")" ;;
		esac
		tfs_mount
		tfs_eq "owner of the root with SUDO_UID=$1 SUDO_GID=$2" "$3" "$(stat -c %u:%g "$MNT")"
		tfs_umount
	done
	IMG=$SAVED_IMG
	rm -f "$U"
fi

tfs_expect_exit 0 "mkfs.tensorfs --help" "$MKFS" --help
tfs_expect_words "mkfs.tensorfs --help" "$WORK/out" usage mkfs.tensorfs -s -f
# the exit codes, as --help and the manual say them
tfs_expect_words "mkfs.tensorfs --help" "$WORK/out" "0 formatted" "1 refused or failed" "2 usage error"
sed -n '/^\.SH EXIT STATUS/,/^\.SH [^E]/p' "$WORK/page" | tr -s '\n ' '  ' >"$WORK/exit"
tfs_expect_words "EXIT STATUS of mkfs.tensorfs(8)" "$WORK/exit" \
	"0 success, 1 failed or refused (the message says why), 2 usage error" \
	".B 0" ".B 1" ".B 2"

tfs_pass
