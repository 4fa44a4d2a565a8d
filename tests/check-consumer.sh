#!/usr/bin/env bash
# check-consumer.sh <source dir>
#
# kiln as a dependency of another meson project (tests/consumer), both ways
# a project takes it:
#   1. installed: `meson install --prefix P` of kiln alone; P/bin/kiln must
#      run without LD_LIBRARY_PATH (its run path), and the consumer finds
#      kiln through pkg-config at P/<libdir>/pkgconfig, the path the README
#      gives;
#   2. as a subproject: kiln in the consumer's subprojects/kiln, found by
#      dependency('kiln') through kiln's meson.override_dependency(), with
#      default_library=static: only the library is built (no tests, no
#      tools), the consumer needs no libkiln.so, and `meson install`
#      installs the consumer alone.
# Each builds kiln's library once more (about a minute on two cores).
set -euo pipefail

if [ "$#" -ne 1 ]; then
  echo "usage: $0 <source dir>" >&2
  exit 2
fi
src=$(cd "$1" && pwd)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
quiet() { "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; fail "$*"; }; }

# ---- 1. installed under a prefix --------------------------------------------
prefix=$tmp/prefix
echo "== kiln installed with --prefix $prefix"
quiet meson setup "$tmp/kiln-build" "$src" --prefix "$prefix" -Dtests=disabled \
  -Dbuildtype=release
quiet meson install -C "$tmp/kiln-build"
libdir=$(meson introspect --buildoptions "$tmp/kiln-build" |
  python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
pcdir=$prefix/$libdir/pkgconfig
[ -f "$pcdir/kiln.pc" ] || fail "no kiln.pc in $pcdir: $(find "$prefix" -name kiln.pc)"
echo "kiln.pc in $pcdir"
env -u LD_LIBRARY_PATH "$prefix/bin/kiln" version || fail "$prefix/bin/kiln does not run"
ldd "$prefix/bin/kiln" >"$tmp/ldd"
grep -qF "=> $prefix/$libdir/libkiln.so" "$tmp/ldd" ||
  fail "$prefix/bin/kiln does not load $prefix's libkiln: $(grep kiln "$tmp/ldd")"

echo "== the consumer against it, through pkg-config"
PKG_CONFIG_PATH=$pcdir quiet meson setup "$tmp/c1" "$src/tests/consumer" \
  --wrap-mode=nofallback
grep -q "Run-time dependency kiln found: YES" "$tmp/c1/meson-logs/meson-log.txt" ||
  fail "the consumer did not find kiln through pkg-config"
quiet meson compile -C "$tmp/c1"
LD_LIBRARY_PATH=$prefix/$libdir "$tmp/c1/consumer" || fail "the consumer failed"

# ---- 2. as a subproject -------------------------------------------------------
parent=$tmp/parent
mkdir -p "$parent/subprojects"
cp "$src/tests/consumer/meson.build" "$src/tests/consumer/consumer.c" "$parent/"
ln -s "$src" "$parent/subprojects/kiln"
echo "== the consumer with kiln in subprojects/kiln, default_library=static"
quiet meson setup "$tmp/c2" "$parent" -Ddefault_library=static --wrap-mode=nodownload
quiet meson compile -C "$tmp/c2"
targets=$(meson introspect --targets "$tmp/c2" |
  python3 -c 'import json, sys; print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')
echo "targets: $targets"
for t in $targets; do
  case "$t" in
    consumer | kiln | kiln@sta) ;; # the consumer and the library
    kiln-cl-*) ;;                   # kiln's kernels, embedded into the library
    *) fail "as a subproject kiln built '$t' as well; expected the library alone" ;;
  esac
done
readelf -d "$tmp/c2/consumer" >"$tmp/needed"
if grep -q 'NEEDED.*libkiln' "$tmp/needed"; then
  fail "default_library=static, yet the consumer needs libkiln.so"
fi
env -u LD_LIBRARY_PATH "$tmp/c2/consumer" || fail "the consumer (static kiln) failed"
quiet meson install -C "$tmp/c2" --destdir "$tmp/stage"
installed=$(cd "$tmp/stage" && find . -type f | sort)
[ "$installed" = "./usr/local/bin/consumer" ] ||
  fail "meson install of the parent installed more than its own program: $installed"
echo "OK: kiln works installed (pkg-config) and as a subproject"
