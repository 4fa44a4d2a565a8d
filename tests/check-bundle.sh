#!/usr/bin/env bash
# tests/check-bundle.sh SRC BUILD: ci/bundle.sh's tarball of this build, as a
# GPU machine gets it. Unpacked into another folder, nothing in it names the
# build or the sources; every ELF file's run path is $ORIGIN's; ldd (with no
# LD_LIBRARY_PATH) resolves each library of each of them inside the bundle,
# or to glibc's or the C++ runtime's; it is at most 30 MB; and its
# bin/kiln-gpu-check --allow-cpu --quick passes on PoCL from another working
# folder, with the build and the sources hidden (a tmpfs over each, in a
# mount namespace of its own) where unshare can make one, and the report
# holds what it should. Exit 77 without patchelf (ci/packages.sh has it).
set -uo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}
command -v patchelf >/dev/null 2>&1 || {
  echo "patchelf not found (Debian's patchelf: ci/deps.sh installs it): skipped"
  exit 77
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $tmp/ in
  "$src"/* | "$build"/*) echo "FAIL: the temporary folder $tmp is inside the sources or the build"; exit 1 ;;
esac

# ---- made, then unpacked elsewhere -------------------------------------------------
if ! "$src/ci/bundle.sh" --build "$build" --out "$tmp/made"; then
  echo "FAIL: ci/bundle.sh --build $build"
  exit 1
fi
tarball=$(find "$tmp/made" -name 'kiln-*-linux-*.tar.gz')
[ -f "$tarball" ] || { echo "FAIL: no kiln-VERSION-linux-ARCH.tar.gz in $tmp/made"; exit 1; }
bytes=$(stat -c %s "$tarball")
echo "bundle: ${tarball##*/}, $bytes bytes"
[ "$bytes" -le 30000000 ] || fail "the bundle is $bytes bytes, more than 30 MB"
mkdir "$tmp/elsewhere"
tar -xzf "$tarball" -C "$tmp/elsewhere" || { echo "FAIL: cannot unpack $tarball"; exit 1; }
rm -rf "$tmp/made"
root=$(find "$tmp/elsewhere" -mindepth 1 -maxdepth 1 -type d)
for f in bin/kiln bin/kiln-gpu-check lib/libkiln.so.0 tests/tests.json tests/left-out.txt BUNDLE.txt; do
  [ -e "$root/$f" ] || fail "no $f in the bundle"
done

# ---- no path of this machine's build or sources ------------------------------------
for p in "$build" "$src"; do
  hits=$(grep -rlaF -- "$p" "$root")
  [ -z "$hits" ] || fail "these name $p: $(echo "$hits" | sed "s|$root/||" | tr '\n' ' ')"
done

# ---- run paths and libraries ----------------------------------------------------------
# shellcheck source=ci/system-libs.sh
. "$src/ci/system-libs.sh" # glibc's and the C++ runtime's
elves=0
while IFS= read -r -d '' f; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  elves=$((elves + 1))
  rel=${f#"$root"/}
  runpath=$(readelf -d "$f" | sed -n 's/.*(\(RUN\)\{0,1\}R\{0,1\}PATH).*\[\(.*\)\]/\2/p')
  # shellcheck disable=SC2016 # $ORIGIN as written, not expanded
  case $runpath in
    '$ORIGIN' | '$ORIGIN/'*) ;;
    *) fail "$rel: run path '$runpath', not \$ORIGIN's" ;;
  esac
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = not ]; then
      fail "$rel: $soname not found"
    elif [[ $path != "$root"/* ]] && ! system_lib "$soname"; then
      fail "$rel: $soname resolves outside the bundle, to $path"
    fi
  done < <(env -u LD_LIBRARY_PATH ldd "$f" 2>&1)
done < <(find "$root" -type f -print0)
echo "ELF files: $elves, each with \$ORIGIN's run path and its libraries in the bundle"
[ "$elves" -ge 10 ] || fail "only $elves ELF files in the bundle"

# ---- kiln-gpu-check from it -------------------------------------------------------------
# The build and the sources hidden where a mount namespace can be made (as
# root, or with user namespaces); else they stay, and the checks above say
# that nothing in the bundle names them.
hide=()
if unshare -m --propagation private true 2>/dev/null; then
  # shellcheck disable=SC2016 # for the inner shell
  hide=(unshare -m --propagation private sh -c 'for d in "$@"; do
      case $d in --) shift; break ;; esac
      mount -t tmpfs none "$d" || exit 1
      shift
    done
    exec "$@"' sh "$src")
  [[ $build/ == "$src"/* ]] || hide+=("$build")
  hide+=(--)
  echo "the sources ($src) and the build ($build) hidden"
else
  echo "no mount namespace here: the build and the sources stay in place"
fi
mkdir "$tmp/run"
cd "$tmp/run" || exit 1
env -u LD_LIBRARY_PATH -u KILN_DEVICE "${hide[@]}" "$root/bin/kiln-gpu-check" --allow-cpu \
  --quick --budget 150 --out "$tmp/run/report.tar.gz"
rc=$?
[ "$rc" -eq 0 ] || fail "bin/kiln-gpu-check --allow-cpu --quick exited $rc"
mkdir "$tmp/report"
if tar -xzf "$tmp/run/report.tar.gz" -C "$tmp/report"; then
  rep=$(find "$tmp/report" -mindepth 1 -maxdepth 1 -type d)
  grep -q '^result:   ok$' "$rep/report.txt" || fail "report.txt: not 'result: ok'"
  grep -Eq '^  tests .* [1-9][0-9]* passed, 0 failed' "$rep/report.txt" ||
    fail "report.txt: no tests passed, or some failed"
  for j in summary.json info.json bench.json tune-record.json; do
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$rep/$j" ||
      fail "$j: missing or not JSON"
  done
  # kiln's own results each checked (a peer's is the reference)
  python3 - "$rep/bench.json" <<'PY' || fail "bench.json: no records, or kiln's unchecked"
import json, sys
records = json.load(open(sys.argv[1]))["records"]
kiln = [r for r in records if r["backend"].startswith("kiln")]
sys.exit(0 if kiln and all(r["checked"] for r in kiln) else 1)
PY
else
  fail "no report (report.tar.gz)"
fi
[ "$failed" -eq 0 ] && echo "ok: the bundle runs where it is unpacked, from itself alone"
exit "$failed"
