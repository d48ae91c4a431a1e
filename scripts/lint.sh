#!/usr/bin/env bash
# Static analysis of coda's own code: clang-tidy (checks in .clang-tidy) on every .cpp, using
# build/compile_commands.json, then cppcheck (false positives in scripts/cppcheck_suppressions.txt,
# each with its reason). Exits non-zero on any finding.
#
#   scripts/lint.sh            # everything
#   scripts/lint.sh core/units.cpp arch/arch_spec.cpp   # only these files (clang-tidy and cppcheck)
#   scripts/lint.sh --since REV    # only what the changes since commit REV can affect
#
# --since is what CI runs, with the commit in .ci/lint_clean_at, where the whole lint last passed
# (record it with scripts/lint.sh --record after a clean full run). A .cpp is linted again when it
# changed or when any header it includes changed (its dependencies as the build recorded them in
# build/); everything is linted when the lint's own settings, the compiler flags (CMakeLists.txt,
# cmake/) or the list of files changed. clang-tidy's and cppcheck's findings depend only on the
# translation unit, its flags and the checks, so the files left out would give what they gave at
# REV: clean.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packages.sh
scripts/ensure_packages.sh "${CODA_BUILD_PACKAGES[@]}" clang-tidy cppcheck

[ -f build/compile_commands.json ] || scripts/setup.sh
# The generated header (core/version.h) must exist for clang-tidy to parse the sources.
cmake --build build --target coda_core >/dev/null

all_files() {
  git ls-files --cached --others --exclude-standard '*.cpp' | grep -v '^fuzz/' | sort
}

# The .cpp files the changes since $1 can affect (see the top of this file).
files_affected_since() {
  local since=$1 top
  top=$(pwd)
  if ! git cat-file -e "$since^{commit}" 2>/dev/null; then
    echo "lint: $since is not a commit of this clone; linting everything" >&2
    all_files
    return
  fi
  mapfile -t changed < <({ git diff --name-only "$since" --; git ls-files --others --exclude-standard; } | sort -u)
  if printf '%s\n' "${changed[@]}" | grep -q -E \
      '^(\.clang-tidy|scripts/lint\.sh|scripts/cppcheck_suppressions\.txt|scripts/packages\.sh|cmake/.*|(.*/)?CMakeLists\.txt)$'; then
    all_files
    return
  fi
  # ninja -t deps: each object, then its source and headers, indented; paths made relative.
  ninja -C build -t deps | awk -v top="$top/" -v changed="$(printf '%s\n' "${changed[@]}")" '
    BEGIN { n = split(changed, list, "\n"); for (i = 1; i <= n; i++) is_changed[list[i]] = 1 }
    /^[^ ]/ { source = ""; next }
    /^    / {
      path = $1; sub("^" top, "", path)
      if (source == "") { source = path; seen[source] = 1 }
      if (path in is_changed) hit[source] = 1
    }
    END { for (s in hit) print s; for (s in seen) print "seen " s }' > build/lint-deps.txt
  # Affected: files whose source or headers changed, and any .cpp the build never compiled.
  all_files | while read -r f; do
    if grep -q -x -F "$f" build/lint-deps.txt || ! grep -q -x -F "seen $f" build/lint-deps.txt; then
      echo "$f"
    fi
  done
}

if [ "${1:-}" = "--record" ]; then
  [ -z "$(git status --porcelain)" ] || { echo "lint.sh --record: commit first" >&2; exit 1; }
  "$0"
  git rev-parse HEAD > .ci/lint_clean_at
  echo "lint: recorded $(cat .ci/lint_clean_at) in .ci/lint_clean_at (commit it)"
  exit 0
elif [ "${1:-}" = "--since" ]; then
  [ $# -eq 2 ] || { echo "usage: scripts/lint.sh --since COMMIT" >&2; exit 2; }
  mapfile -t files < <(files_affected_since "$2")
  echo "lint: ${#files[@]} of $(all_files | wc -l) files can be affected by the changes since ${2:0:12}"
elif [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(all_files)
fi

status=0
echo "lint: clang-tidy on ${#files[@]} files"
if [ ${#files[@]} -gt 0 ]; then
  printf '%s\n' "${files[@]}" | xargs -P 2 -n 4 clang-tidy -p build --quiet 2>/dev/null \
    || status=1
fi

# cppcheck 2.10 has no GoogleTest library config and reads every TEST(...) as a syntax error,
# so it sees the library code only; clang-tidy above covers the tests.
mapfile -t library_files < <(printf '%s\n' "${files[@]}" | grep -v -E '(^|/)tests/|^$' || true)
echo "lint: cppcheck on ${#library_files[@]} files"
if [ ${#library_files[@]} -gt 0 ]; then
  cppcheck --enable=warning,performance,portability --std=c++20 --language=c++ --quiet \
    --inline-suppr --suppressions-list=scripts/cppcheck_suppressions.txt --error-exitcode=1 \
    -I . -I build/generated -j 2 "${library_files[@]}" || status=1
fi

[ $status -eq 0 ] && echo "lint: clean"
exit $status
