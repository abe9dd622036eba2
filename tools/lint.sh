#!/bin/sh
# lint.sh: the fast checks tools/test.sh runs first, on the tracked files:
#
#   - every C file through clang-format-14 with .clang-format: a file
#     that clang-format would change is a finding (clang-format-14 -i
#     FILE fixes it; an exception is a "clang-format off" comment, with
#     its reason beside it).  Another clang-format version formats some
#     constructs differently, so without clang-format-14 the check is
#     skipped, saying so;
#   - every shell script through ShellCheck, warnings and errors;
#   - lib/ and fs/ through cppcheck (--enable=warning), with the test
#     hooks on; an exception is an inline cppcheck-suppress comment, with
#     its reason beside it;
#   - sources, scripts, manual pages and docs through codespell; the words
#     it takes for typos that are names in the code are listed below
#     (CODESPELL_NAMES).
#
# The compilers' own checks are in CMakeLists.txt (-Wall -Wextra ... -Wvla
# -Wformat=2 -Wwrite-strings -Wundef, errors with -DTFS_WERROR=ON).
# Exit status: 0 when every check is clean, 1 when one found something
# (each says what), 2 when a tool is missing (tools/install-deps.sh
# installs them).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2

# fo (tfs_fs_opts), nd (a node), inflight (a counter), clen (a length),
# bu (roff's bullet, \(bu)
CODESPELL_NAMES=fo,nd,inflight,clen,bu

for t in shellcheck cppcheck codespell git; do
	command -v "$t" >/dev/null 2>&1 || {
		echo "lint.sh: $t is not installed; run tools/install-deps.sh" >&2
		exit 2
	}
done

rc=0
say() { echo "lint.sh: $*" >&2; }

cf=
for c in clang-format-14 clang-format; do
	if command -v "$c" >/dev/null 2>&1 &&
		"$c" --version | grep -q 'version 14\.'; then
		cf=$c
		break
	fi
done
if [ -z "$cf" ]; then
	say "clang-format 14 not found: format check skipped (tools/install-deps.sh installs it)"
else
	# shellcheck disable=SC2046
	bad=$(for f in $(git ls-files '*.c' '*.h'); do
		"$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
	done)
	if [ -n "$bad" ]; then
		printf '%s: not in the house format\n' $bad >&2
		say "run $cf -i on the files above"
		rc=1
	fi
fi

# shellcheck disable=SC2046 # file names from git have no spaces
if ! shellcheck -x -S warning -f gcc $(git ls-files '*.sh' .ci/run); then
	say "shellcheck found the problems above"
	rc=1
fi

out=$(cppcheck -q --enable=warning --inline-suppr --std=c11 \
	-D__GNUC__ -DTFS_TEST_HOOKS -Ilib -Ilib/include -Ilib/util -Ilib/tensor \
	--template='{file}:{line}: {severity}: {message} [{id}]' lib fs 2>&1 |
	grep -E '^[^ ]+:[0-9]+: ')
if [ -n "$out" ]; then
	printf '%s\n' "$out" >&2
	say "cppcheck found the problems above"
	rc=1
fi

# shellcheck disable=SC2046
if ! codespell -L "$CODESPELL_NAMES" $(git ls-files '*.c' '*.h' '*.sh' \
	'*.md' '*.py' '*.in' '*.ini' '*.txt' '*.service.in' | grep -v '^tests/data/'); then
	say "codespell found the words above; fix them, or add a name to CODESPELL_NAMES"
	rc=1
fi

[ "$rc" = 0 ] && echo "lint.sh: clang-format, shellcheck, cppcheck and codespell clean"
exit "$rc"
