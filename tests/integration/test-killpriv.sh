#!/bin/bash
# Description: write, truncate, O_TRUNC and chown clear setuid, setgid and
# security.capability as on tmpfs (the reference, same steps), seen by stat at once
# and after remounts; HANDLE_KILLPRIV_V2 is negotiated where offered; fsck clean
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need setpriv getfattr setfattr dd truncate
export LC_ALL=C
tfs_setup 256M
stat --cached=never -c %a "$MNT" >/dev/null 2>&1 || tfs_skip "needs stat --cached=never (coreutils 8.32+)"

# the unprivileged caller: no CAP_FSETID, in no group but its own
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# security.capability, VFS_CAP_REVISION_2 with the effective flag:
# cap_net_raw+ep, as setcap writes it (setcap is not a dependency)
CAP=0x0100000200200000000000000000000000000000
# the unprivileged caller reaches the mounts through $WORK
chmod 755 "$WORK" || tfs_fail "chmod $WORK failed"

# ----- what the connection negotiated -----

v2=$(awk '$1 == "fuse_handle_killpriv_v2" { print $2 }' "$MNT/.tensorfs/stats")
case $v2 in
1) ;;
0)
	# the kernel offers it from protocol 7.33 (Linux 5.11); an older one
	# clears the bits itself, and the cases below must pass all the same
	kminor=$(sed -n 's/.*FUSE protocol 7\.[0-9]* (kernel 7\.\([0-9]*\)).*/\1/p' "$WORK/daemon.log" | head -1)
	[ -n "$kminor" ] || tfs_fail "no 'FUSE protocol ... (kernel 7.NN)' line in the daemon's log: $(cat "$WORK/daemon.log")"
	[ "$kminor" -lt 33 ] ||
		tfs_fail "fuse_handle_killpriv_v2: expected 1 from a kernel of protocol 7.$kminor (7.33+ offers it), got 0; log: $(cat "$WORK/daemon.log")"
	tfs_log "kernel protocol 7.$kminor: no FUSE_HANDLE_KILLPRIV_V2, the kernel clears the bits"
	;;
*) tfs_fail "fuse_handle_killpriv_v2 in .tensorfs/stats: expected 0 or 1, got '$v2'" ;;
esac
if [ "$v2" = 1 ]; then
	grep -q 'negotiated: [^;]*handle_killpriv_v2' "$WORK/daemon.log" ||
		tfs_fail "stats say handle_killpriv_v2, the log's INIT line does not: $(cat "$WORK/daemon.log")"
fi

# ----- the cases -----

# NAME MODE GROUP CAP WHO ACTION: a file NAME holding a line, of group
# GROUP and mode MODE, with security.capability if CAP is "cap"; then WHO
# (u: the unprivileged caller, r: root) does ACTION to it: write (append
# a line), dwrite (an O_DIRECT write of 4 KiB), trunc (truncate -s 1),
# otrunc (open with O_TRUNC: ": >FILE"), chown (to uid 65534), read
CASES='
w6777u 6777 0 - u write
w6777r 6777 0 - r write
w2766u 2766 0 - u write
w2766g 2766 65534 - u write
d6777u 6777 0 - u dwrite
t6777u 6777 0 - u trunc
t6777r 6777 0 - r trunc
o6777u 6777 0 - u otrunc
o6777r 6777 0 - r otrunc
t2766u 2766 0 - u trunc
c6755r 6755 0 - r chown
c6745r 6745 0 - r chown
kw755r 755 0 cap r write
kt755r 755 0 cap r trunc
kw777u 777 0 cap u write
ko777u 777 0 cap u otrunc
kc755r 755 0 cap r chown
kn755r 755 0 cap r read
'

# result FILE [never]: "MODE cap|nocap", the mode as stat shows it (with
# "never", asked of the file system, not the kernel's cache)
result() {
	local _m _v _c=nocap
	if [ "${2:-}" = never ]; then
		_m=$(stat --cached=never -c %a "$1") || return 1
	else
		_m=$(stat -c %a "$1") || return 1
	fi
	_v=$(getfattr --absolute-names -n security.capability -e hex "$1" 2>/dev/null) && _c=cap
	_v=$(sed -n 's/^security\.capability=//p' <<<"$_v")
	# a capability that is there must be the one set
	[ "$_c" = nocap ] || [ "$_v" = "$CAP" ] || _c="cap($_v)"
	echo "$_m $_c"
}

# run_case DIR NAME MODE GROUP CAP WHO ACTION: make the file, do the
# action; 1 if a step failed (the message in $WORK/case.err)
run_case() {
	local _d=$1 _n=$2 _mode=$3 _grp=$4 _cap=$5 _who=$6 _act=$7 _f
	local -a _as=()
	_f="$_d/$_n"
	{
		echo data >"$_f" && chgrp "$_grp" "$_f" && chmod "$_mode" "$_f" &&
			if [ "$_cap" = cap ]; then setfattr -n security.capability -v "$CAP" "$_f"; fi
	} 2>"$WORK/case.err" || return 1
	[ "$_who" = u ] && _as=("${NOBODY[@]}")
	case $_act in
	write) "${_as[@]}" sh -c 'echo more >>"$1"' sh "$_f" ;;
	dwrite) "${_as[@]}" dd if=/dev/zero of="$_f" bs=4096 count=1 oflag=direct conv=notrunc status=none ;;
	trunc) "${_as[@]}" truncate -s 1 "$_f" ;;
	otrunc) "${_as[@]}" sh -c ': >"$1"' sh "$_f" ;;
	chown) chown 65534 "$_f" ;;
	read) cat "$_f" >/dev/null ;;
	esac 2>"$WORK/case.err"
}

# the reference: the same cases on a tmpfs, whose clearing is the VFS's
# (file_remove_privs(), setattr_should_drop_suidgid()), as ext4's is
REF="$WORK/ref"
mkdir "$REF" || tfs_fail "mkdir $REF failed"
mount -t tmpfs -o mode=755 tfs-killpriv-ref "$REF" || tfs_skip "cannot mount a tmpfs for the reference"
tfs_at_exit "umount '$REF' 2>/dev/null"
: >"$REF/probe"
if ! dd if=/dev/zero of="$REF/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	tfs_log "tmpfs has no O_DIRECT on this kernel (before 6.6): the O_DIRECT case is left out"
	CASES=$(echo "$CASES" | grep -v dwrite)
fi
: >"$WORK/expected"
while read -r n mode grp cap who act; do
	[ -n "$n" ] || continue
	run_case "$REF" "$n" "$mode" "$grp" "$cap" "$who" "$act" ||
		tfs_fail "reference (tmpfs) $n: $who $act failed: $(cat "$WORK/case.err")"
	echo "$n $(result "$REF/$n")" >>"$WORK/expected"
done <<<"$CASES"
umount "$REF" || tfs_fail "umount of the reference tmpfs failed"
# unambiguous ones, whatever the kernel: the reference itself is checked
for want in "w6777u 777 nocap" "w6777r 6777 nocap" "w2766g 2766 nocap" "t6777u 777 nocap" \
	"o6777u 777 nocap" "c6755r 755 nocap" "c6745r 2745 nocap" "kw755r 755 nocap" "kn755r 755 cap"; do
	grep -qx "$want" "$WORK/expected" ||
		tfs_fail "reference (tmpfs): expected '$want', got '$(grep "^${want%% *} " "$WORK/expected")'"
done
if [ "$v2" = 0 ]; then
	# the kernel's own clearing (fuse_setattr()) keeps setgid without
	# group-exec whoever writes; the VFS's since 6.2 drops it for a
	# caller outside the group: with the kernel doing it, expect FUSE's
	sed -i -e 's/^\(w2766u\|t2766u\) 766 /\1 2766 /' "$WORK/expected"
fi

BAD="$WORK/bad"
: >"$BAD"
NCHECKS=0
bad() { echo "$*" >>"$BAD"; }

# round DIR WHAT: the cases in DIR (a directory of the mount), each
# compared with the reference: what stat shows at once and what the file
# system holds
round() {
	local _d=$1 _what=$2 n mode grp cap who act want got fresh
	mkdir "$_d" || tfs_fail "mkdir $_d failed"
	while read -r n mode grp cap who act; do
		[ -n "$n" ] || continue
		run_case "$_d" "$n" "$mode" "$grp" "$cap" "$who" "$act" || {
			bad "$_what, $n: $who $act failed: $(cat "$WORK/case.err")"
			continue
		}
		want=$(awk -v n="$n" '$1 == n { print $2, $3 }' "$WORK/expected")
		NCHECKS=$((NCHECKS + 1))
		got=$(result "$_d/$n")
		fresh=$(result "$_d/$n" never)
		if [ "$fresh" != "$want" ]; then
			bad "$_what, $n (mode $mode, $cap, $who $act): expected '$want' as tmpfs, got '$fresh' from the daemon"
		elif [ "$got" != "$want" ]; then
			bad "$_what, $n (mode $mode, $cap, $who $act): expected '$want' as tmpfs, got '$got' from stat at once (the daemon holds '$fresh': the kernel's cached mode was not invalidated)"
		fi
	done <<<"$CASES"
}

# persisted DIR WHAT: after a remount, every file of round DIR is as
# the reference
persisted() {
	local n want got
	while read -r n want; do
		NCHECKS=$((NCHECKS + 1))
		got=$(result "$1/$n")
		[ "$got" = "$want" ] || bad "$2, $n: expected '$want' as tmpfs, got '$got'"
	done <"$WORK/expected"
}

round "$MNT/r1" "first mount"
tfs_umount
tfs_mount
persisted "$MNT/r1" "first mount's, after a remount"
round "$MNT/r2" "remounted"
tfs_umount
tfs_mount
persisted "$MNT/r2" "remounted's, after a second remount"
persisted "$MNT/r1" "first mount's, after a second remount"
tfs_umount
tfs_fsck_clean

if [ -s "$BAD" ]; then
	cat "$BAD" >&2
	tfs_fail "$(wc -l <"$BAD") of $NCHECKS checks differ from tmpfs (above); handle_killpriv_v2=$v2"
fi
tfs_log "$NCHECKS checks of $(grep -c . <<<"$CASES") cases as tmpfs, before and after remounts; handle_killpriv_v2=$v2"
tfs_pass
