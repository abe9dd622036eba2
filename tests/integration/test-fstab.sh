#!/bin/bash
# Description: the boot-time route of tensorfs(8)'s BOOT-TIME MOUNTING: its three fstab lines (in .nf blocks of conf/man/tensorfs.8.in: a device, an image, a set) pass findmnt --verify and mount(8) reads them (mount -T on a copy, --fake); systemd's fstab generator turns them into mount units that wait for the device's systemd-fsck, for the image's tensorfs-fsck@.service, and for each member's device of the set (tensorfs#DEV1:DEV2, type fuse, pass 0), which systemd --test shows without the dependency on a device named DEV1:DEV2 that systemd gives a fuse.tensorfs line of the set; tensorfs-fsck@.service is verified by systemd-analyze and its command checks the image; fsck(8) reaches tensorfs-fsck as fsck.tensorfs (-t tensorfs) and fsck.fuse.tensorfs (the fstab type, also with -a as at boot, and with -f as systemd-fsck passes for fsck.mode=force), passing its exit status through; the installed tree has the links, the pages and the config
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need findmnt fsck mount systemd-escape systemd-analyze setpriv
top=$(cd "$(dirname "$0")/../.." && pwd)
tfs_mkimg 128M
mkdir -p "$MNT"
export PATH="$TFS_BIN:$PATH"

# ----- tensorfs(8)'s fstab lines, on a copy, pointing at this test's image -----
# the text lines of the section's .nf blocks that name the type; roff's \-
# is -, \e is \
PAGE="$top/conf/man/tensorfs.8.in"
awk '/^\.SH / {s = ($0 ~ /^\.SH BOOT/)} /^\.nf/ {nf = 1} /^\.fi/ {nf = 0}
	s && nf && !/^\./ && /fuse\.tensorfs|tensorfs#/' "$PAGE" | sed 's/\\-/-/g; s/\\e/\\/g' >"$WORK/lines"
# a device's line, an image's and a set's, each once
for l in "^/dev/nvme0n1 " "^/var/lib/tensorfs/nvme.img " "^tensorfs#/dev/nvme0n1:/dev/nvme1n1 "; do
	[ "$(grep -c "$l" "$WORK/lines")" = 1 ] ||
		tfs_fail "expected one fstab line matching '$l' in tensorfs(8)'s BOOT-TIME MOUNTING, got: $(cat "$WORK/lines")"
done
[ "$(wc -l <"$WORK/lines")" = 3 ] || tfs_fail "expected three fstab lines in tensorfs(8)'s BOOT-TIME MOUNTING, got: $(cat "$WORK/lines")"
grep -q '^/dev/nvme0n1 .* 0  *2$' "$WORK/lines" || tfs_fail "tensorfs(8)'s device line has no fsck pass 2"
grep "^/var/lib/tensorfs/nvme.img " "$WORK/lines" | tr -s " " |
	sed "s|^/var/lib/tensorfs/nvme.img  */local_nvme |$IMG $MNT |; s|=/var/lib/tensorfs,|=$WORK,|;
		s|tensorfs-fsck@var-lib-tensorfs-nvme.img.service|tensorfs-fsck@$(systemd-escape --path "$IMG" | sed 's/\\/\\\\/g').service|" >"$WORK/fstab"
grep -q "^$IMG $MNT fuse.tensorfs defaults,nofail," "$WORK/fstab" || tfs_fail "tensorfs(8)'s image line: $(cat "$WORK/lines")"
findmnt --verify --tab-file "$WORK/fstab" >"$WORK/verify" 2>&1 ||
	{ cat "$WORK/verify" >&2; tfs_fail "findmnt --verify finds errors in tensorfs(8)'s fstab line"; }
grep -q "0 parse errors, 0 errors" "$WORK/verify" || { cat "$WORK/verify" >&2; tfs_fail "findmnt --verify: no clean summary"; }
# mount(8) finds the line by mount point and by source; -i: no helper
# (mount.fuse3 would mount for real even with --fake)
for what in "$MNT" "$IMG"; do
	mount -T "$WORK/fstab" --fake -i -v "$what" >"$WORK/out" 2>&1 ||
		{ cat "$WORK/out" >&2; tfs_fail "mount -T fstab --fake $what failed"; }
	grep -q "$IMG mounted on $MNT" "$WORK/out" || tfs_fail "mount -T fstab --fake $what: $(cat "$WORK/out")"
done
# the set's line, with a set of two images of this test for its members
# (findmnt takes the type fuse for a pseudo file system and checks
# neither its source nor its type)
S1=$WORK/s1.img
S2=$WORK/s2.img
"$MKFS" -q -s 64M "$S1" "$S2" >"$WORK/mkfs.log" 2>&1 ||
	{ cat "$WORK/mkfs.log" >&2; tfs_fail "mkfs.tensorfs of a set of two images failed"; }
grep "^tensorfs#" "$WORK/lines" | tr -s " " |
	sed "s|^tensorfs#/dev/nvme0n1:/dev/nvme1n1 /local_nvme |tensorfs#$S1:$S2 $MNT |" >"$WORK/fstab.set"
grep -q "^tensorfs#$S1:$S2 $MNT fuse defaults,nofail,x-systemd.requires=/dev/nvme0n1,x-systemd.requires=/dev/nvme1n1 0 0\$" "$WORK/fstab.set" ||
	tfs_fail "tensorfs(8)'s set line: $(grep "^tensorfs#" "$WORK/lines")"
if ! findmnt --verify --tab-file "$WORK/fstab.set" >"$WORK/verify" 2>&1 ||
	! grep -Eq "^(0 parse errors, 0 errors|Success, no errors)" "$WORK/verify"; then
	cat "$WORK/verify" >&2
	tfs_fail "findmnt --verify finds errors in tensorfs(8)'s set line"
fi
for what in "$MNT" "tensorfs#$S1:$S2"; do
	mount -T "$WORK/fstab.set" --fake -i -v "$what" >"$WORK/out" 2>&1 ||
		{ cat "$WORK/out" >&2; tfs_fail "mount -T fstab --fake $what (the set's line) failed"; }
	grep -qF "tensorfs#$S1:$S2 mounted on $MNT" "$WORK/out" ||
		tfs_fail "mount -T fstab --fake $what (the set's line): $(cat "$WORK/out")"
done
tfs_mounted "$MNT" && tfs_fail "--fake mounted something"

# ----- systemd at boot: tensorfs(8)'s lines as the fstab generator sees them -----
gen=/lib/systemd/system-generators/systemd-fstab-generator
[ -x "$gen" ] || tfs_fail "no $gen: is systemd installed (tools/install-deps.sh)?"
inst=$(systemd-escape --path "$IMG")
# gen NAME FSTAB: run the generator on FSTAB into $WORK/NAME, with
# fsck.fuse.tensorfs found in PATH as at boot
gen() {
	mkdir -p "$WORK/$1"
	SYSTEMD_FSTAB=$2 SYSTEMD_PROC_CMDLINE="" "$gen" "$WORK/$1" "$WORK/$1" "$WORK/$1" \
		>"$WORK/$1.log" 2>&1 || { cat "$WORK/$1.log" >&2; tfs_fail "systemd-fstab-generator failed on $2"; }
}
gen img "$WORK/fstab"
unit="$WORK/img/$(systemd-escape --path --suffix=mount "$MNT")"
[ -f "$unit" ] || tfs_fail "the generator wrote no mount unit for the image's line: $(ls "$WORK/img")"
for dep in Requires After; do
	grep -Fqx "$dep=tensorfs-fsck@$inst.service" "$unit" ||
		tfs_fail "the image's mount unit has no $dep=tensorfs-fsck@$inst.service: $(cat "$unit")"
done
grep -Fqx "RequiresMountsFor=$WORK" "$unit" || tfs_fail "the image's mount unit does not wait for $WORK: $(cat "$unit")"
# the device's line: pass 2 makes systemd-fsck@ run fsck.fuse.tensorfs first
grep "^/dev/nvme0n1 " "$WORK/lines" >"$WORK/fstab.dev"
gen dev "$WORK/fstab.dev"
unit="$WORK/dev/local_nvme.mount"
[ -f "$unit" ] || tfs_fail "the generator wrote no mount unit for the device's line: $(ls "$WORK/dev")"
for dep in Requires After; do
	grep -Fqx "$dep=systemd-fsck@dev-nvme0n1.service" "$unit" ||
		tfs_fail "the device's mount unit has no $dep=systemd-fsck@dev-nvme0n1.service: $(cat "$unit"; cat "$WORK/dev.log")"
done

# the set's line: the mount waits for each member's device, with no check
grep "^tensorfs#" "$WORK/lines" >"$WORK/fstab.setdev"
gen set "$WORK/fstab.setdev"
unit="$WORK/set/local_nvme.mount"
[ -f "$unit" ] || tfs_fail "the generator wrote no mount unit for the set's line: $(ls "$WORK/set")"
grep -Fqx "What=tensorfs#/dev/nvme0n1:/dev/nvme1n1" "$unit" || tfs_fail "the set's mount unit: $(cat "$unit")"
for dev in dev-nvme0n1 dev-nvme1n1; do
	for dep in Requires After; do
		grep -Eq "^$dep=(.* )?$dev\.device( |\$)" "$unit" ||
			tfs_fail "the set's mount unit has no $dep=$dev.device: $(cat "$unit"; cat "$WORK/set.log")"
	done
done
grep "fsck@" "$unit" && tfs_fail "the set's mount unit waits for a check (pass 0, none required): $(cat "$unit")"
# and as systemd loads it, with the dependencies it adds itself (systemd
# --test, which refuses to run as root): none on a device named by the
# whole set.  A fuse.tensorfs line of the set gets one, systemd taking
# its source for a device, tensorfs(8) says: checked where systemd has
# device units (not with a read-only /sys, as in some containers)
sd=/lib/systemd/systemd
[ -x "$sd" ] || tfs_fail "no $sd: is systemd installed (tools/install-deps.sh)?"
sed 's|^tensorfs#\([^ ]*\)\( *[^ ]* *\)fuse |\1\2fuse.tensorfs |' "$WORK/fstab.setdev" >"$WORK/fstab.plain"
grep -q "^/dev/nvme0n1:/dev/nvme1n1 .* fuse.tensorfs " "$WORK/fstab.plain" || tfs_fail "the set's line as fuse.tensorfs: $(cat "$WORK/fstab.plain")"
gen plain "$WORK/fstab.plain"
chmod a+x "$WORK"
chmod -R a+rX "$WORK/set" "$WORK/plain"
# deps NAME: the dependencies systemd gives local_nvme.mount from $WORK/NAME
deps() {
	SYSTEMD_UNIT_PATH="$WORK/$1:" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$sd" --test --system --no-pager --unit=local_nvme.mount >"$WORK/$1.dump" 2>&1 ||
		{ tail "$WORK/$1.dump" >&2; tfs_fail "systemd --test with the $1 line's unit failed"; }
	awk '/-> Unit local_nvme\.mount:/ { f = 1; next } f && /-> Unit / { exit } f' \
		"$WORK/$1.dump" | grep -E '^\s*(Requires|BindsTo|After):' >"$WORK/$1.deps"
	[ -s "$WORK/$1.deps" ] || tfs_fail "systemd --test shows no dependencies of local_nvme.mount from the $1 line"
}
deps set
for dev in dev-nvme0n1 dev-nvme1n1; do
	grep -Eq "^\s*Requires: $dev\.device " "$WORK/set.deps" ||
		tfs_fail "systemd: the set's mount does not require $dev.device: $(cat "$WORK/set.deps")"
done
grep -F "dev-nvme0n1:-dev-nvme1n1" "$WORK/set.deps" &&
	tfs_fail "systemd makes the set's mount wait for a device named by the whole set, which never appears"
if findmnt -n -o OPTIONS /sys | grep -qE '(^|,)ro(,|$)'; then
	tfs_log "/sys is read-only: systemd has no device units here; the fuse.tensorfs line of a set not checked"
else
	deps plain
	grep -Eq "^\s*Requires: dev-nvme0n1:-dev-nvme1n1\.device " "$WORK/plain.deps" ||
		tfs_fail "tensorfs(8) says systemd makes a fuse.tensorfs line of a set wait for a device named by the whole set, but it does not here: $(cat "$WORK/plain.deps")"
fi

# ----- fsck(8) reaches tensorfs-fsck -----
expect_clean() {	# WHAT COMMAND...
	local what=$1
	shift
	"$@" >"$WORK/out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { cat "$WORK/out" >&2; tfs_fail "$what: exit $rc"; }
	grep -Eq "^$IMG: clean, 1 files, [0-9]+/[0-9]+ blocks\$" "$WORK/out" || tfs_fail "$what: no clean line: $(cat "$WORK/out")"
}
expect_clean "fsck -t tensorfs" fsck -t tensorfs "$IMG"
expect_clean "fsck -t fuse.tensorfs -a" fsck -t fuse.tensorfs -a "$IMG"
# what systemd-fsck runs when booted with fsck.mode=force, and a progress
# descriptor as e2fsck takes it (fsck(8) passes -f on, keeps -C for ext*)
expect_clean "fsck -a -T -l -M -f -C0 (systemd-fsck, fsck.mode=force)" \
	fsck -t fuse.tensorfs -a -T -l -M -f -C0 "$IMG"
expect_clean "tensorfs-fsck -f -C 3" "$FSCK" -f -C 3 "$IMG"
# by the fstab's type, as at boot (fsck -T DEVICE looks the device up)
FSTAB_FILE="$WORK/fstab" expect_clean "fsck by the fstab line" fsck -V -T "$IMG"
grep -q "fsck.fuse.tensorfs" "$WORK/out" || tfs_fail "fsck by the fstab line did not run fsck.fuse.tensorfs: $(cat "$WORK/out")"
# an error passes through: exit 8 for a file that is not tensorfs
head -c 64M /dev/zero >"$WORK/zero.img"
fsck -t tensorfs "$WORK/zero.img" >"$WORK/out" 2>&1
tfs_eq "fsck -t tensorfs on zeros" 8 "$?"

# ----- the installed tree -----
cmake --install "$TFS_BIN/.." --prefix "$WORK/inst" >"$WORK/install.log" 2>&1 ||
	{ cat "$WORK/install.log" >&2; tfs_fail "cmake --install failed"; }
for f in sbin/fsck.tensorfs sbin/fsck.fuse.tensorfs; do
	[ "$(readlink "$WORK/inst/$f")" = tensorfs-fsck ] || tfs_fail "$f is not a link to tensorfs-fsck"
done
"$WORK/inst/sbin/fsck.tensorfs" -V | grep -q '^fsck.tensorfs ' || tfs_fail "installed fsck.tensorfs -V: not 'fsck.tensorfs VERSION', the name it was run as"
for p in man8/tensorfs.8 man8/mkfs.tensorfs.8 man8/tensorfs-fsck.8 man8/fsck.tensorfs.8 \
	man1/tensorfs-plan.1 man1/tensorfs-cat.1 man1/tensorfs-stat.1 man5/tensorfs.ini.5 \
	man7/tensorfs-offload.7; do
	[ -s "$WORK/inst/share/man/$p" ] || tfs_fail "$p not installed"
done
if command -v man >/dev/null 2>&1; then
	MANPATH="$WORK/inst/share/man" man -w fsck.tensorfs >/dev/null 2>&1 ||
		tfs_fail "man -w fsck.tensorfs finds nothing"
fi
cmp "$WORK/inst/share/tensorfs/tensorfs.ini" "$top/conf/tensorfs.ini" || tfs_fail "conf/tensorfs.ini not installed"

# ----- the installed tensorfs-fsck@.service: verified, and its command checks -----
u="$WORK/inst/lib/systemd/system/tensorfs-fsck@.service"
[ -f "$u" ] || tfs_fail "tensorfs-fsck@.service not installed in PREFIX/lib/systemd/system"
grep -q "^ExecStart=/usr/local/sbin/tensorfs-fsck -p %f\$" "$u" || tfs_fail "unit's ExecStart: $(grep ExecStart "$u")"
# the same unit with this build's tensorfs-fsck, as an instance for the image
mkdir -p "$WORK/units"
sed "s|^ExecStart=/usr/local/sbin/|ExecStart=$TFS_BIN/|" "$u" >"$WORK/units/tensorfs-fsck@.service"
(cd "$WORK/units" && systemd-analyze verify --man=no "$WORK/units/tensorfs-fsck@$inst.service") >"$WORK/verify" 2>&1 ||
	{ cat "$WORK/verify" >&2; tfs_fail "systemd-analyze verify refuses tensorfs-fsck@.service"; }
# verify exits 0 on unknown keys; it must print nothing about our unit
grep "tensorfs-fsck@" "$WORK/verify" && tfs_fail "systemd-analyze verify warns about the unit"
# run the instance's command as systemd would: %f is the unescaped path
f=$(systemd-escape --unescape --path "$inst")
tfs_eq "the instance's path" "$IMG" "$f"
cmd=$(sed -n 's/^ExecStart=//p' "$WORK/units/tensorfs-fsck@.service" | sed "s|%f|$f|")
# shellcheck disable=SC2086 # the command line is split as systemd splits it
expect_clean "the unit's ExecStart" $cmd
head -c 4096 /dev/zero | dd of="$IMG" bs=4096 seek=0 conv=notrunc status=none
head -c 4096 /dev/zero | dd of="$IMG" bs=4096 seek=1 conv=notrunc status=none
# shellcheck disable=SC2086
$cmd >"$WORK/out" 2>&1
rc=$?
case $rc in 0|1) cat "$WORK/out" >&2; tfs_fail "the unit's command passed an image without superblocks (exit $rc), so the mount would go ahead" ;; esac
tfs_pass
