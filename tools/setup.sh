#!/bin/sh
# setup.sh: from a fresh Debian 12 machine to a mounted tensorfs, in one go.
#
#   sudo tools/setup.sh [--image FILE] [--size SIZE] [--mount DIR] [--device DEV]
#
# It installs the missing Debian packages, builds tensorfs, installs it in
# /usr/local, formats an image file (once: an existing one is kept) and
# mounts it.  Defaults: --image /var/lib/tensorfs/nvme.img, --size half of
# the free space where the image lives, --mount /local_nvme.  The settings
# are in /etc/tensorfs/tensorfs.ini (installed from conf/tensorfs.ini if
# absent, never overwritten), which tensorfs reads by default.  Where the
# kernel has FUSE over io_uring it turns it on, now and at boot (see
# tensorfs(8), FUSE TRANSPORT).  With
# --device /dev/nvmeXnY it formats and mounts that device instead (it
# refuses one that holds a file system; format it yourself with
# mkfs.tensorfs -f to overwrite).  Run it again to remount after a reboot,
# or add the fstab line it prints (see tensorfs(8)) to mount at boot.
#
# Exit status: 0 mounted, 1 a step failed (its message says which), 2 usage.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
image=/var/lib/tensorfs/nvme.img
size=""
mnt=/local_nvme
device=""

usage() { sed -n '2,20s/^# \{0,1\}//p' "$0"; }
die() { echo "setup.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case "$1" in
	--image) image=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--mount) mnt=$2; shift 2 ;;
	--device) device=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "setup.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || die "run as root (sudo tools/setup.sh): it installs packages and mounts"

"$top/tools/install-deps.sh" || die "installing packages failed"
cmake -S "$top" -B "$top/build/release" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
	die "cmake configure failed"
cmake --build "$top/build/release" -j"$(nproc)" || die "build failed"
cmake --install "$top/build/release" --prefix /usr/local >/dev/null || die "install failed"
conf=/etc/tensorfs/tensorfs.ini
if [ ! -e "$conf" ]; then
	mkdir -p /etc/tensorfs
	cp /usr/local/share/tensorfs/tensorfs.ini "$conf" || die "cannot write $conf"
	echo "setup.sh: installed $conf (every setting at its default; edit it and remount)"
fi

if [ -n "$device" ]; then
	target=$device
	/usr/local/sbin/tensorfs-fsck "$target" >/dev/null 2>&1 ||
		/usr/local/sbin/mkfs.tensorfs "$target" || die "mkfs.tensorfs $target failed"
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
# systemd checks devices at boot (pass 2), not image files: an image's
# line requires tensorfs-fsck@.service, whose instance is its escaped path
if [ -n "$device" ]; then
	deps="x-systemd.requires=$target  0  2"
else
	unit=tensorfs-fsck@$(systemd-escape --path "$target").service
	deps="x-systemd.requires-mounts-for=$(dirname "$target"),x-systemd.requires=$unit  0  0"
fi
echo "setup.sh: to mount it at boot, add to /etc/fstab:"
printf '%s\n' "$target  $mnt  fuse.tensorfs  defaults,nofail,$deps"
