#!/usr/bin/env bash
# check-tune-clblast.sh <kiln> <folder> clblast|no-clblast — `kiln tune
# --clblast` run with the stand-in tuners in <folder>
# (fake-clblast-tuner.c): the best result of each lands in the record, and
# --show, --export, --import, --clear and `kiln devices` see it; CLBlast's
# GEMM runs with it and `kiln bench` checks its results. A tuner that is
# missing, fails, writes garbage, measures another device or writes a
# parameter that is not a whole number: one clear line, exit 1.
set -uo pipefail
kiln=$1 fakes=$2 have=$3
failures=0
check() { # check <description> <expected exit> <pattern in output> <args...>
  local what=$1 want=$2 pattern=$3
  shift 3
  local out rc
  out=$("$kiln" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $what: exit $rc (expected $want), output:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR=$dir/cache TMPDIR=$dir

if [ "$have" != clblast ]; then
  check "without CLBlast" 1 "built without CLBlast" tune --clblast --tuners "$fakes"
  [ "$failures" -eq 0 ]
  exit
fi

check "a missing tuner is named" 1 \
  "clblast_tuner_xgemm is not in /nonexistent .*apt install clblast-utils" \
  tune --clblast --tuners /nonexistent
out=$(PATH=/nonexistent "$kiln" tune --clblast 2>&1)
rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "clblast_tuner_xgemm is not on PATH" <<<"$out"; then
  echo "FAIL: a tuner not on PATH is named: exit $rc (expected 1), output:"
  sed 's/^/    /' <<<"$out"
  failures=$((failures + 1))
else
  echo "ok: a tuner not on PATH is named"
fi
check "Xgemm: the tuner's best" 0 \
  "^Xgemm +f32 +1.500 ms at 512x512x512, the best of 2 configurations .* MWG=16 .*VWN=4$" \
  tune --clblast --tuners "$fakes"
check "XgemmDirect: the tuner's best" 0 "^XgemmDirect +f32 +1.500 ms .* WGD=32$" \
  tune --clblast --tuners "$fakes"
check "progress, one line a configuration" 0 "Xgemm f32 \[2/3\] 4.25 ms" \
  tune --clblast --tuners "$fakes"
check "show prints them" 0 '"kernel": ?"XgemmDirect"' tune --show
check "show leaves out the tuner's PRECISION" 0 '"MWG": ?16' tune --show
if "$kiln" tune --show | grep -q PRECISION; then
  echo "FAIL: the record keeps the tuners' PRECISION"
  failures=$((failures + 1))
fi
check "devices says CLBlast is tuned" 0 "CLBlast tuned too: [1-9][0-9]* of its kernels" \
  devices
# bench checks each result against OpenBLAS (or a naive loop) first.
check "CLBlast's GEMM runs with them" 0 "gemm 256\^3 clblast +warm-up and check\.\.\. [0-9.]+ GFLOP/s" \
  bench gemm --sizes 64,256 --backend clblast --repeat 1
check "export" 0 "" tune --export "$dir/record.json"
grep -q '"XgemmDirect"' "$dir/record.json" || {
  echo "FAIL: the export has no CLBlast parameters"
  failures=$((failures + 1))
}
check "clear" 0 "record deleted" tune --clear
if "$kiln" tune --show | grep -q XgemmDirect; then
  echo "FAIL: --clear left the CLBlast parameters"
  failures=$((failures + 1))
fi
check "import" 0 "record imported" tune --import "$dir/record.json"
check "imported: back" 0 '"kernel": ?"Xgemm"' tune --show

FAKE_CLBLAST_TUNER=other-device check "another device's results are refused" 1 \
  "names the device 'Some Other GPU'" tune --clblast --tuners "$fakes"
FAKE_CLBLAST_TUNER=garbage check "garbage is refused" 1 \
  "is not a CLBlast tuner's JSON" tune --clblast --tuners "$fakes"
FAKE_CLBLAST_TUNER=fraction check "a fraction is refused" 1 \
  "parameter HALF is not a whole number" tune --clblast --tuners "$fakes"
FAKE_CLBLAST_TUNER=fail check "a failed tuner is said" 1 \
  "Xgemm f32: no result \(the tuner exited with 1" tune --clblast --tuners "$fakes"
check "what was kept stays" 0 '"kernel": ?"XgemmDirect"' tune --show

[ "$failures" -eq 0 ]
