#!/usr/bin/env bash
# check-format.sh SOURCE_ROOT [CLANG_FORMAT] — the C sources of src/, examples/, python/,
# include/, tools/ and tests/ are as .clang-format lays them out. Formatting
# is a habit, not a debate: run `clang-format -i` on what this names.
set -uo pipefail
root=$1
clang_format=${2:-clang-format}
cd "$root" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files 'src/*.[ch]' 'include/*.h' 'tools/*.[ch]' 'tests/*.[ch]' 'examples/*.[ch]' 'python/*.[ch]')
else # a tarball: every C file there
  mapfile -t files < <(find src include tools tests examples python -name '*.[ch]' | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "no C files found under $root"; exit 1; }
bad=0
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    bad=$((bad + 1))
  fi
done
echo "${#files[@]} files checked, $bad not formatted"
[ "$bad" -eq 0 ]
