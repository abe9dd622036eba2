#!/bin/sh
# test.sh: the whole test suite, as CI runs it.
#
#   sudo tools/test.sh [CTEST-ARGS...]
#
# 1. installs the missing Debian packages (tools/install-deps.sh), then
#    runs the fast checks of tools/lint.sh (shellcheck, cppcheck,
#    codespell);
# 2. builds with clang and with gcc, warnings as errors, with clang
#    under ThreadSanitizer, and the Release build setup.sh installs (gcc);
# 3. runs the cmocka unit tests under AddressSanitizer and
#    UndefinedBehaviorSanitizer (clang build), then the integration tests
#    labelled 'sanitized' (reads, writes, mmap, threads, crashes; see
#    tests/integration/CMakeLists.txt) against that build's daemon: any
#    sanitizer report of the daemon or a tool fails the test that ran it
#    (tests/integration/lib.sh collects them);
# 4. runs the unit tests under ThreadSanitizer (clang build);
# 5. runs every test, unit and integration (real mounts of real images in
#    temporary directories), on the gcc build with invariant checks on;
#    then, where the kernel has FUSE over io_uring, the integration tests
#    again over it (enable_uring on for the run): the sanitized ones
#    against the ASan daemon, all against the gcc one (left out, and said
#    so, when the run has already taken TFS_TEST_BUDGET seconds, 2400 by
#    default);
# 6. fuzzes every parser of untrusted bytes for 30 s each (tools/fuzz.sh).
# All test builds have the fault injection (-DTFS_TEST_HOOKS=ON).  Each step says how long it took.  Extra arguments go to every ctest run
# (e.g. -R rename).  Needs root and /dev/fuse for the integration tests.
# Exit status: 0 when all passed.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
# the reruns over io_uring are left out once the run has taken this many
# seconds: CI ends a run at 90 minutes, the whole run takes 50-55 on a
# 2-core machine (about 27 before the reruns, 22 for them, 5 fuzzing)
budget=${TFS_TEST_BUDGET:-2400}
t_start=$(date +%s)

# step NAME: say that step NAME starts, and how long the previous one took
step_name=""
step_t0=0
step() {
	now=$(date +%s)
	[ -z "$step_name" ] || echo "== $step_name: $((now - step_t0)) s"
	step_name=$1
	step_t0=$now
	[ -z "$step_name" ] || echo "== $step_name"
}

step "dependencies"
"$top/tools/install-deps.sh"

step "lint (tools/lint.sh)"
sh "$top/tools/lint.sh"

step "builds"
cmake -S "$top" -B "$top/build/test-asan" -DCMAKE_C_COMPILER=clang \
	-DCMAKE_BUILD_TYPE=Debug -DTFS_SANITIZE=ON -DTFS_CHECKS=ON -DTFS_WERROR=ON \
	-DTFS_TEST_HOOKS=ON
cmake --build "$top/build/test-asan" -j"$jobs"
cmake -S "$top" -B "$top/build/test-gcc" -DCMAKE_C_COMPILER=gcc \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFS_CHECKS=ON -DTFS_WERROR=ON \
	-DTFS_TEST_HOOKS=ON
cmake --build "$top/build/test-gcc" -j"$jobs"
cmake -S "$top" -B "$top/build/test-tsan" -DCMAKE_C_COMPILER=clang \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFS_SANITIZE=thread \
	-DTFS_CHECKS=ON -DTFS_WERROR=ON -DTFS_TEST_HOOKS=ON
cmake --build "$top/build/test-tsan" -j"$jobs"
# what setup.sh installs, Release (-O3): its warnings differ from -O2's
cmake -S "$top" -B "$top/build/test-rel" -DCMAKE_C_COMPILER=gcc \
	-DCMAKE_BUILD_TYPE=Release -DTFS_WERROR=ON
cmake --build "$top/build/test-rel" -j"$jobs"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
step "unit tests under ASan+UBSan (clang)"
(cd "$top/build/test-asan" && ctest -L unit --output-on-failure -j"$jobs" "$@")
step "integration tests against the ASan+UBSan daemon (clang)"
(cd "$top/build/test-asan" && ctest -L sanitized --output-on-failure "$@")
unset ASAN_OPTIONS UBSAN_OPTIONS

# ThreadSanitizer maps its shadow memory at fixed addresses; on a kernel
# that randomises mmap more than it expects (vm.mmap_rnd_bits = 32, with
# LLVM before 18) a library can land there and it dies with "FATAL:
# ThreadSanitizer: unexpected memory mapping".  Without randomisation
# (setarch -R, inherited by ctest and the tests) there is no such clash.
step "unit tests under TSan (clang)"
norandom=""
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norandom="setarch $(uname -m) -R"
fi
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
(cd "$top/build/test-tsan" &&
	$norandom ctest -L unit --output-on-failure -j"$jobs" "$@")
unset TSAN_OPTIONS

step "all tests (gcc)"
(cd "$top/build/test-gcc" && ctest --output-on-failure "$@")

# FUSE over io_uring (Linux 6.14+): the integration tests again with
# every daemon carrying its requests over it (TFS_TEST_IO_URING,
# tests/integration/lib.sh), the sanitized ones against the ASan daemon
# too.  The kernel offers it while enable_uring is Y: on for these runs,
# then back as it was.
param=/sys/module/fuse/parameters/enable_uring
if [ $(($(date +%s) - t_start)) -gt "$budget" ]; then
	echo "== the run has taken over $budget s (TFS_TEST_BUDGET): the reruns over FUSE io_uring are left out"
elif [ -w "$param" ]; then
	was=$(cat "$param")
	trap 'echo "$was" >"$param"' EXIT
	echo Y >"$param"
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	step "integration tests over FUSE io_uring, ASan+UBSan daemon (clang)"
	(cd "$top/build/test-asan" &&
		TFS_TEST_IO_URING=on ctest -L sanitized \
			--output-on-failure "$@")
	unset ASAN_OPTIONS UBSAN_OPTIONS
	step "integration tests over FUSE io_uring (gcc)"
	(cd "$top/build/test-gcc" &&
		TFS_TEST_IO_URING=on ctest -L integration \
			--output-on-failure "$@")
	echo "$was" >"$param"
	trap - EXIT
else
	echo "== no FUSE over io_uring in this kernel ($param): those runs skipped"
fi

# fuzzes every parser of untrusted bytes for 30 s each (tools/fuzz.sh:
# libFuzzer, clang, ASan+UBSan); tools/fuzz.sh 3600 runs longer
step "fuzzing, 30 s per parser (clang)"
"$top/tools/fuzz.sh" 30
step ""
