#!/usr/bin/env bash
# check-symbols.sh <libkiln.so> <kiln.symbols>
#
# Compares the dynamic symbols libkiln.so defines and exports with the list in
# kiln.symbols (one symbol per line, sorted, '#' starts a comment). Any symbol
# exported but not listed (added) or listed but not exported (missing) fails
# the check: the exported ABI changes only together with the list.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 <libkiln.so> <kiln.symbols>" >&2
  exit 2
fi
lib=$1
list=$2
nm_prog=${NM:-nm}

if [ ! -f "$lib" ]; then
  echo "FAIL: no library at $lib" >&2
  exit 1
fi
if [ ! -f "$list" ]; then
  echo "FAIL: no symbol list at $list" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# nm -D --defined-only --format=posix prints "name type value [size]".
# Keep global (upper-case) code and data symbols: T text, D/G data, B/S bss,
# R read-only, V/W weak, plus i (GNU indirect function) and u (unique
# global). A (absolute) is dropped: those are linker or version-node symbols.
# The linker's own markers are dropped by name. A version suffix
# (name@@VERS) is cut off.
"$nm_prog" -D --defined-only --format=posix "$lib" > "$tmp/nm.txt"
awk '$2 ~ /^[BDGRSTVWiu]$/ { sub(/@.*/, "", $1); print $1 }' "$tmp/nm.txt" |
  grep -Ev '^(_init|_fini|__bss_start|__bss_start__|_bss_end__|__bss_end__|_edata|_end|__end__|_etext|__etext|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|__dso_handle)$' |
  LC_ALL=C sort -u > "$tmp/exported.txt" || true

# The list without comments, surrounding blanks and empty lines.
sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$list" |
  grep -v '^$' > "$tmp/listed-raw.txt" || true
LC_ALL=C sort -u "$tmp/listed-raw.txt" > "$tmp/listed.txt"

if ! LC_ALL=C sort -c "$tmp/listed-raw.txt" 2>/dev/null; then
  echo "note: $list is not sorted (LC_ALL=C sort)"
fi
dups=$(LC_ALL=C sort "$tmp/listed-raw.txt" | uniq -d)
if [ -n "$dups" ]; then
  echo "note: $list lists these more than once:"
  printf '%s\n' "$dups" | sed 's/^/  /'
fi

added=$(LC_ALL=C comm -23 "$tmp/exported.txt" "$tmp/listed.txt")
missing=$(LC_ALL=C comm -13 "$tmp/exported.txt" "$tmp/listed.txt")

n_exported=$(wc -l < "$tmp/exported.txt")
n_listed=$(wc -l < "$tmp/listed.txt")
echo "library: $lib exports $n_exported symbols; $list lists $n_listed"

status=0
if [ -n "$added" ]; then
  echo "ADDED: exported by the library but not in $list:"
  printf '%s\n' "$added" | sed 's/^/  + /'
  status=1
fi
if [ -n "$missing" ]; then
  echo "MISSING: in $list but not exported by the library:"
  printf '%s\n' "$missing" | sed 's/^/  - /'
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "OK: exported symbols match $list"
else
  echo "FAIL: exported symbols differ from $list"
fi
exit "$status"
