#!/usr/bin/env bash
# Static analysis of coda's own code: clang-tidy (checks in .clang-tidy) on every .cpp, using
# build/compile_commands.json, then cppcheck (false positives in scripts/cppcheck_suppressions.txt,
# each with its reason). Exits non-zero on any finding.
#
#   scripts/lint.sh            # everything
#   scripts/lint.sh core/units.cpp arch/arch_spec.cpp   # only these files (clang-tidy and cppcheck)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packages.sh
scripts/ensure_packages.sh "${CODA_BUILD_PACKAGES[@]}" clang-tidy cppcheck

[ -f build/compile_commands.json ] || scripts/setup.sh
# The generated header (core/version.h) must exist for clang-tidy to parse the sources.
cmake --build build --target coda_core >/dev/null

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' \
    | grep -v '^fuzz/' | sort)
fi

status=0
echo "lint: clang-tidy on ${#files[@]} files"
printf '%s\n' "${files[@]}" | xargs -P 2 -n 4 clang-tidy -p build --quiet 2>/dev/null \
  || status=1

# cppcheck 2.10 has no GoogleTest library config and reads every TEST(...) as a syntax error,
# so it sees the library code only; clang-tidy above covers the tests.
mapfile -t library_files < <(printf '%s\n' "${files[@]}" | grep -v -E '(^|/)tests/' || true)
echo "lint: cppcheck on ${#library_files[@]} files"
if [ ${#library_files[@]} -gt 0 ]; then
  cppcheck --enable=warning,performance,portability --std=c++20 --language=c++ --quiet \
    --inline-suppr --suppressions-list=scripts/cppcheck_suppressions.txt --error-exitcode=1 \
    -I . -I build/generated -j 2 "${library_files[@]}" || status=1
fi

[ $status -eq 0 ] && echo "lint: clean"
exit $status
