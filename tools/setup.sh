#!/bin/sh
# setup.sh: from a fresh Debian 12 machine to a mounted tensorfs, in one go.
#
#   sudo tools/setup.sh [--image FILE] [--size SIZE] [--mount DIR]
#   sudo tools/setup.sh --device DEV [--device DEV...] [--mount DIR]
#
# It installs the missing Debian packages, builds tensorfs, installs it in
# /usr/local, formats an image file (once: an existing one is kept) and
# mounts it.  Defaults: --image /var/lib/tensorfs/nvme.img, --size half of
# the free space where the image lives, --mount /local_nvme.  The settings
# are in /etc/tensorfs/tensorfs.ini (installed from conf/tensorfs.ini if
# absent, never overwritten), which tensorfs reads by default.  Where the
# kernel has FUSE over io_uring it turns it on, now and at boot (see
# tensorfs(8), FUSE TRANSPORT).
#
# With --device /dev/nvmeXnY it formats and mounts that block device
# instead of an image.  Repeated (--device /dev/nvme0n1 --device
# /dev/nvme1n1 ...), it makes one file system striped over all of the
# devices, a set, mounted as /dev/nvme0n1:/dev/nvme1n1; the order of the
# devices does not matter.  Every device is formatted, and the data on it
# is lost; only devices that hold this tensorfs already (all of the set,
# checked clean: a second run) are mounted as they are.  Like
# mkfs.tensorfs, it refuses a device that holds a file system (tensorfs
# included), a partition table, a RAID or LVM member or swap: format it
# yourself with mkfs.tensorfs -f to overwrite it.  A
# member's name cannot hold ':'.  --image and --size do not go with
# --device.
#
# Run it again to remount after a reboot, or add the fstab line it prints
# (see tensorfs(8), BOOT-TIME MOUNTING) to mount at boot.
#
# Exit status: 0 mounted, 1 a step failed (its message says which), 2 usage
# (also a --device that does not exist, is no block device or is given
# twice, and --image or --size with --device).
#
# For the tests (tests/integration/test-setup-set.sh): TFS_SETUP_BUILD=DIR
# installs the build tree DIR as it is, without installing packages or
# building; the test runs setup.sh in a mount namespace of its own, where
# /etc and /usr/local are overlays and enable_uring a file of the test.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
image=/var/lib/tensorfs/nvme.img
image_given=""
size=""
mnt=/local_nvme
devices=""	# the --device arguments, one a line
ndev=0
nl='
'

usage() { sed -n '2,34s/^# \{0,1\}//p' "$0"; }
die() { echo "setup.sh: $*" >&2; exit 1; }
usage_error() { echo "setup.sh: $*; see --help" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--image|--size|--mount|--device) [ $# -ge 2 ] || usage_error "$1 needs a value" ;;
	esac
	case "$1" in
	--image) image=$2; image_given=1; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--mount) mnt=$2; shift 2 ;;
	--device) devices="$devices$2$nl"; ndev=$((ndev + 1)); shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage_error "unknown argument '$1'" ;;
	esac
done

# the devices, before anything is installed: each a block device, given
# once (also under another name: a symlink of /dev/disk/by-id), and in a
# set without ':' in its name, as ':' joins the members (tensorfs(8))
target=""
if [ "$ndev" -gt 0 ]; then
	[ -z "$image_given" ] || usage_error "--image and --device exclude each other: the file system is on an image file or on devices"
	[ -z "$size" ] || usage_error "--size is the size of an image file: a device is formatted whole"
	checked=""
	set -f
	IFS=$nl
	for dev in $devices; do
		[ -e "$dev" ] || usage_error "--device $dev: no such device"
		[ -b "$dev" ] || usage_error "--device $dev: not a block device (an image file goes with --image)"
		case $dev in
		*:*) [ "$ndev" = 1 ] || usage_error "--device $dev: a member of a set cannot have ':' in its name, which joins the members; give its /dev/nvmeXnY or /dev/disk/by-id name" ;;
		esac
		for prev in $checked; do
			[ "$prev" != "$dev" ] || usage_error "--device $dev given twice"
			[ "$(readlink -f "$prev")" != "$(readlink -f "$dev")" ] ||
				usage_error "--device $prev and --device $dev are the same device, $(readlink -f "$dev")"
		done
		checked="$checked$dev$nl"
		target=${target:+$target:}$dev
	done
	unset IFS
	set +f
fi
[ "$(id -u)" = 0 ] || die "run as root (sudo tools/setup.sh): it installs packages and mounts"

if [ -n "${TFS_SETUP_BUILD:-}" ]; then
	build=$TFS_SETUP_BUILD
else
	"$top/tools/install-deps.sh" || die "installing packages failed"
	build=$top/build/release
	cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
		die "cmake configure failed"
	cmake --build "$build" -j"$(nproc)" || die "build failed"
fi
cmake --install "$build" --prefix /usr/local >/dev/null || die "install failed"
conf=/etc/tensorfs/tensorfs.ini
if [ ! -e "$conf" ]; then
	mkdir -p /etc/tensorfs
	cp /usr/local/share/tensorfs/tensorfs.ini "$conf" || die "cannot write $conf"
	echo "setup.sh: installed $conf (every setting at its default; edit it and remount)"
fi

# devices that hold this tensorfs already (a second run: tensorfs-fsck
# passes it) are kept, others formatted; mkfs.tensorfs refuses a device
# that holds a file system (tensorfs included) or anything else libblkid
# knows.  Nothing to do while the
# mount is up (setup.sh run again): both would find the devices in use
if [ "$ndev" -gt 0 ]; then
	if ! mountpoint -q "$mnt" 2>/dev/null; then
		rc=0
		out=$(/usr/local/sbin/tensorfs-fsck "$target" 2>&1) || rc=$?
		case $rc in
		0) echo "setup.sh: $target holds tensorfs already: kept as it is" ;;
		4) die "tensorfs-fsck finds errors on $target (tensorfs-fsck -y $target repairs them): $out" ;;
		*)
			set -f
			IFS=$nl
			# shellcheck disable=SC2086 # the devices, one a line
			/usr/local/sbin/mkfs.tensorfs $devices || die "mkfs.tensorfs of $target failed"
			unset IFS
			set +f
			;;
		esac
	fi
else
	target=$image
	if [ ! -e "$image" ]; then
		mkdir -p "$(dirname "$image")"
		if [ -z "$size" ]; then
			# half of the free space of the file system that holds it
			avail=$(df -Pk "$(dirname "$image")" | awk 'NR==2 {print $4}')
			size=$((avail / 2 / 1048576))G
			[ "$size" = 0G ] && size=1G
		fi
		/usr/local/sbin/mkfs.tensorfs -s "$size" "$image" || die "mkfs.tensorfs failed"
	fi
fi

# FUSE over io_uring (Linux 6.14+) starts off in the kernel: on, for this
# boot and the next ones (a module option where fuse is a module, which
# has an initstate, and a systemd-tmpfiles line that writes it at boot
# where systemd runs); tensorfs uses it by default (see tensorfs(8), FUSE
# TRANSPORT)
param=/sys/module/fuse/parameters/enable_uring
if [ -e "$param" ]; then
	if [ "$(cat "$param")" != Y ]; then
		echo Y >"$param" || die "cannot turn on FUSE over io_uring ($param)"
		echo "setup.sh: turned on FUSE over io_uring ($param): tensorfs carries its requests over it"
	fi
	if [ -e /sys/module/fuse/initstate ] && command -v modprobe >/dev/null &&
		[ ! -e /etc/modprobe.d/tensorfs.conf ]; then
		mkdir -p /etc/modprobe.d &&
			echo 'options fuse enable_uring=1' >/etc/modprobe.d/tensorfs.conf ||
			die "cannot write /etc/modprobe.d/tensorfs.conf"
		echo "setup.sh: installed /etc/modprobe.d/tensorfs.conf: FUSE over io_uring stays on when fuse is loaded again"
	fi
	if command -v systemd-tmpfiles >/dev/null && [ ! -e /etc/tmpfiles.d/tensorfs.conf ]; then
		mkdir -p /etc/tmpfiles.d &&
			printf 'w %s - - - - Y\n' "$param" >/etc/tmpfiles.d/tensorfs.conf ||
			die "cannot write /etc/tmpfiles.d/tensorfs.conf"
		echo "setup.sh: installed /etc/tmpfiles.d/tensorfs.conf: FUSE over io_uring is turned on at every boot"
	fi
else
	echo "setup.sh: this kernel has no FUSE over io_uring (Linux 6.14+ has it); tensorfs uses /dev/fuse"
fi

mkdir -p "$mnt"
if mountpoint -q "$mnt"; then
	echo "setup.sh: $mnt is already mounted"
else
	/usr/local/bin/tensorfs -c "$conf" "$target" "$mnt" ||
		die "mounting $target on $mnt failed"
fi
df -h "$mnt"
echo "setup.sh: tensorfs is mounted on $mnt; set DeepSpeed's nvme_path to $mnt"
echo "setup.sh: unmount with: fusermount3 -u $mnt"
# The fstab line (tensorfs(8), BOOT-TIME MOUNTING).  systemd checks
# devices at boot (pass 2), not image files: an image's line requires
# tensorfs-fsck@.service, whose instance is its escaped path.  A set is no
# device systemd knows: it takes a source that begins with /dev/ for one
# device of that whole name, which never appears, and gives up on the
# mount after 90 s.  So a set goes after tensorfs#, with the type fuse
# (mount.fuse3 runs tensorfs on the rest), and requires each member's
# device; pass 0, as systemd-fsck@ checks one device and
# tensorfs-fsck@.service would not wait for the members' devices (the
# daemon replays the journal at mount all the same)
if [ "$ndev" -gt 1 ]; then
	deps=""
	set -f
	IFS=$nl
	for dev in $devices; do deps="$deps,x-systemd.requires=$dev"; done
	unset IFS
	set +f
	line="tensorfs#$target  $mnt  fuse  defaults,nofail$deps  0  0"
elif [ "$ndev" = 1 ]; then
	line="$target  $mnt  fuse.tensorfs  defaults,nofail,x-systemd.requires=$target  0  2"
else
	unit=tensorfs-fsck@$(systemd-escape --path "$target").service
	line="$target  $mnt  fuse.tensorfs  defaults,nofail,x-systemd.requires-mounts-for=$(dirname "$target"),x-systemd.requires=$unit  0  0"
fi
echo "setup.sh: to mount it at boot, add to /etc/fstab:"
printf '%s\n' "$line"
