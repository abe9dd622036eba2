#!/bin/sh
# fuzz.sh: build the libFuzzer targets of tests/fuzz (clang, -DTFS_FUZZ=ON,
# with ASan and UBSan) and run each for a while, one after the other.
#
#   tools/fuzz.sh                 every target, 30 s each
#   tools/fuzz.sh 3600            every target, an hour each
#   tools/fuzz.sh 600 torch zip   only fuzz_torch and fuzz_zip
#
# Each target starts from its seeds (tests/fuzz/seeds/TARGET and the files
# of tests/data it reads) and keeps what it learns in
# build/fuzz/corpus/TARGET between runs.  A crash, leak or timeout is saved
# as build/fuzz/crashes/TARGET/crash-... (rerun it with
# build/fuzz/fuzz/fuzz_TARGET FILE); fix it, and add the input as a
# regression unit test.  Exit status: 0 when no target found anything, 1
# otherwise, 2 on a usage error.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build/fuzz"
secs=${1:-30}
case "$secs" in
'' | *[!0-9]*) echo "fuzz.sh: '$secs' is not a number of seconds; see the header of $0" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && shift
targets=${*:-torch pickle zip npy safetensors config deepspeed format model}

command -v clang >/dev/null 2>&1 || { echo "fuzz.sh: needs clang (tools/install-deps.sh)" >&2; exit 2; }
cmake -S "$top" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DTFS_FUZZ=ON -DTFS_WERROR=ON >/dev/null
for t in $targets; do
	cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "fuzz_$t" >/dev/null
done

# seeds: TARGET's own, plus the files of tests/data it reads
seeds() {
	s="$top/tests/fuzz/seeds/$1"
	[ -d "$s" ] && echo "$s"
	case $1 in
	torch | zip | model) echo "$top/tests/data/torch" "$top/tests/data/npz" ;;
	deepspeed) echo "$top/tests/data/deepspeed" ;;
	config) echo "$top/conf" ;;
	esac
}

found=0
for t in $targets; do
	corpus="$build/corpus/$t"
	crashes="$build/crashes/$t"
	mkdir -p "$corpus" "$crashes"
	echo "== fuzz_$t for $secs s"
	# shellcheck disable=SC2046
	if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$build/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" $(seeds "$t") \
		>"$build/fuzz_$t.log" 2>&1; then
		found=1
		tail -40 "$build/fuzz_$t.log" >&2
		echo "fuzz.sh: fuzz_$t found a bug; the input is in $crashes/" >&2
	else
		grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$build/fuzz_$t.log" | tr '\n' ' '
		echo
	fi
done
exit $found
