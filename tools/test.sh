#!/bin/sh
# test.sh: the whole test suite, as CI runs it.
#
#   sudo tools/test.sh [CTEST-ARGS...]
#
# 1. installs the missing Debian packages (tools/install-deps.sh);
# 2. builds with clang and with gcc, warnings as errors;
# 3. runs the cmocka unit tests under AddressSanitizer and
#    UndefinedBehaviorSanitizer (clang build);
# 4. runs every test, unit and integration (real mounts of real images in
#    temporary directories), on the gcc build with invariant checks on.
# Extra arguments go to both ctest runs (e.g. -R rename).  Needs root and
# /dev/fuse for the integration tests.  Exit status: 0 when all passed.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

"$top/tools/install-deps.sh"

cmake -S "$top" -B "$top/build/test-asan" -DCMAKE_C_COMPILER=clang \
	-DCMAKE_BUILD_TYPE=Debug -DTFS_SANITIZE=ON -DTFS_CHECKS=ON -DTFS_WERROR=ON \
	-DTFS_TEST_HOOKS=ON
cmake --build "$top/build/test-asan" -j"$jobs"
cmake -S "$top" -B "$top/build/test-gcc" -DCMAKE_C_COMPILER=gcc \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFS_CHECKS=ON -DTFS_WERROR=ON \
	-DTFS_TEST_HOOKS=ON
cmake --build "$top/build/test-gcc" -j"$jobs"

echo "== unit tests under ASan+UBSan (clang)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd "$top/build/test-asan" && ctest -L unit --output-on-failure -j"$jobs" "$@")
unset ASAN_OPTIONS UBSAN_OPTIONS

echo "== all tests (gcc)"
(cd "$top/build/test-gcc" && ctest --output-on-failure "$@")

# 5. fuzzes every parser of untrusted bytes for 30 s each (tools/fuzz.sh:
#    libFuzzer, clang, ASan+UBSan); tools/fuzz.sh 3600 runs longer
echo "== fuzzing, 30 s per parser (clang)"
"$top/tools/fuzz.sh" 30
