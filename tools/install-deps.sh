#!/bin/sh
# install-deps.sh: install the Debian packages tensorfs needs to build and
# test, and only those that are missing.  Run as root (or with sudo).
#
#   tools/install-deps.sh          build and test dependencies
#   tools/install-deps.sh --print  list the missing packages, install nothing
#
# Exit status: 0 when everything is installed, 1 when apt-get failed,
# 2 on a usage error.
set -eu

PACKAGES="build-essential cmake pkg-config clang
libfuse3-dev fuse3 liburing-dev libinih-dev libcmocka-dev libaio-dev libjansson-dev
zlib1g-dev libblkid-dev
attr e2fsprogs xfsprogs fdisk fio python3 python3-numpy python3-torch util-linux procps
gnuplot-nox
groff-base bsdextrautils systemd
shellcheck cppcheck codespell clang-format"

usage() {
	sed -n '2,9s/^# \{0,1\}//p' "$0"
}

print_only=0
case "${1:-}" in
"") ;;
--print) print_only=1 ;;
-h|--help) usage; exit 0 ;;
*) echo "install-deps.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
esac

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "install-deps.sh: all packages are installed"
	exit 0
fi
echo "install-deps.sh: missing:$missing"
[ "$print_only" = 1 ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install-deps.sh: not root and no sudo; run as root" >&2
		exit 1
	}
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q || exit 1
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing || exit 1
