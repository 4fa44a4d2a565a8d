#!/usr/bin/env bash
# check-tune-clblast.sh <kiln> <folder> clblast|no-clblast — `kiln tune
# --clblast` run with the stand-in tuners in <folder>
# (fake-clblast-tuner.c): the fastest result of each that CLBlast's GEMM
# gets right lands in the record when the rematch against CLBlast's own
# parameters finds it faster and nowhere slower, and --show, --export,
# --import, --clear and `kiln devices` see it; `kiln bench` checks CLBlast's
# GEMM with it. One slower at a size is refused, naming the size and both
# times. The rematch's times come from --rematch-times files (the seam), so
# no device's noise decides; one run times two small sizes for real and
# checks only the report. A fastest result that is wrong is passed over for
# the next; none right keeps CLBlast's own. A tuner that is missing, fails, writes garbage,
# measures another device or writes a parameter that is not a whole
# number: one clear line, exit 1.
set -uo pipefail
kiln=$1 fakes=$2 have=$3
failures=0
out="" rc=0
run() { # run <args...>: kiln's output and exit status into $out and $rc
  capture "$kiln" "$@"
}
# shellcheck source=tests/expect.sh
. "$(dirname "$0")/expect.sh"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR=$dir/cache TMPDIR=$dir

if [ "$have" != clblast ]; then
  run tune --clblast --tuners "$fakes"
  expect "without CLBlast" 1 "built without CLBlast"
  [ "$failures" -eq 0 ]
  exit
fi

run tune --clblast --tuners /nonexistent
expect "a missing tuner is named" 1 \
  "clblast_tuner_xgemm is not in /nonexistent .*apt install clblast-utils"
out=$(PATH=/nonexistent "$kiln" tune --clblast 2>&1)
rc=$?
expect "a tuner not on PATH is named" 1 "clblast_tuner_xgemm is not on PATH"

# The rematch's outcomes, decided by the seam's times (ms, CLBlast's own
# then tuned): faster at one size and alike at another; slower at 4096
# (with 32^3 timed for real, whose verdict is the device's to give).
printf '64 2.0 1.0\n4096 30.0 30.1\n' >"$dir/faster.times"
printf '32\n64 2.0 1.0\n1024 4.0 3.0\n4096 8.1 15.3\n' >"$dir/slower.times"
fast=(--tuners "$fakes" --rematch-times "$dir/faster.times")

run tune --clblast "${fast[@]}"
expect "each tuner's best, checked and faster, is kept" 0 \
  "^Xgemm +f32 +1.500 ms at 512x512x512, the best of 2 configurations .* MWG=16 .*VWN=4$" \
  "^XgemmDirect +f32 +1.500 ms .* WGD=32$" \
  "Xgemm f32 \[2/3\] 4.25 ms" \
  "-m 512 -n 512 -k 512 " \
  "Xgemm f32: checking the fastest \(1.500 ms\) in CLBlast's GEMM: right at 4 shapes" \
  "Xgemm f32: 64\^3: 1.000 ms tuned, 2.000 ms with CLBlast's own \(2.00x\): faster" \
  "Xgemm f32: 4096\^3: 30.100 ms tuned, 30.000 ms with CLBlast's own \(1.00x\): alike" \
  "^Xgemm +f32 +kept: faster than CLBlast's own at 1 of 2 sizes, slower at none$"
run tune --show
expect "show prints them" 0 '"kernel": ?"XgemmDirect"' '"MWG": ?16'
refuse "the record leaves out the tuners' PRECISION" PRECISION
run devices
expect "devices says CLBlast is tuned" 0 "CLBlast tuned too: [1-9][0-9]* of its kernels"
# bench checks each result against OpenBLAS (or a naive loop) first.
run bench gemm --sizes 64,256 --backend clblast --repeat 1
expect "CLBlast's GEMM runs with them" 0 \
  "gemm 256\^3 clblast +warm-up and check\.\.\. [0-9.]+ GFLOP/s"
run tune --export "$dir/record.json"
expect "export" 0 ""
grep -q '"XgemmDirect"' "$dir/record.json" || {
  echo "FAIL: the export has no CLBlast parameters"
  failures=$((failures + 1))
}
run tune --clear
expect "clear" 0 "record deleted"
run tune --show
refuse "clear takes them too" XgemmDirect
run tune --import "$dir/record.json"
expect "import" 0 "record imported"
run tune --show
expect "imported: back" 0 '"kernel": ?"Xgemm"'

run tune --clear
FAKE_CLBLAST_TUNER=bad-best run tune --clblast --tuners "$fakes" \
  --rematch-times "$dir/slower.times"
expect "one slower at a size is refused, naming it; a size alone is timed" 0 \
  "Xgemm f32: rematch against CLBlast's own parameters, 3 rounds each: 32\\^3 64\\^3 1024\\^3 4096\\^3" \
  "Xgemm f32: 32\\^3: [0-9.]+ ms tuned, [0-9.]+ ms with CLBlast's own \\([0-9.]+x\\): (faster|alike|slower)" \
  "Xgemm f32: 4096\\^3: 15.300 ms tuned, 8.100 ms with CLBlast's own \\(0.53x\\): slower" \
  "^Xgemm +f32 +refused the fastest right one \\(1.500 ms at 512x512x512\\): slower than CLBlast's own at 4096\\^3 \\(15.300 ms tuned against 8.100 ms\\)"
run tune --show
refuse "a refused one is not kept" '"kernel": ?"Xgemm"'
run tune --clblast --tuners "$fakes" --rematch-times /nonexistent
expect "an unreadable times file is said, before any tuner runs" 1 \
  "--rematch-times /nonexistent: not lines"
refuse "no tuner ran" "Tuning"
printf '64 1.0\n' >"$dir/bad.times"
run tune --clblast --tuners "$fakes" --rematch-times "$dir/bad.times"
expect "a line with one time is refused" 1 "bad.times: not lines of N or N MS MS"
run tune --rematch-times "$dir/faster.times"
expect "--rematch-times goes with --clblast" 2 "goes with --clblast"

FAKE_CLBLAST_TUNER=bad-best run tune --clblast "${fast[@]}"
expect "a wrong fastest is passed over" 0 \
  "Xgemm f32: checking the fastest \(1.000 ms\) in CLBlast's GEMM: wrong: " \
  "Xgemm f32: checking the next fastest \(1.500 ms\) in CLBlast's GEMM: right" \
  "^Xgemm +f32 +1.500 ms at 512x512x512, the fastest right one of 3 configurations" \
  "^XgemmDirect +f32 +1.500 ms .*, the fastest right one of 3 configurations"
run tune --show
refuse "a wrong one is not kept" '"VWM": ?5'
FAKE_CLBLAST_TUNER=all-bad run tune --clblast "${fast[@]}"
expect "none right: CLBlast's own stay" 0 \
  "^Xgemm +f32 +none of the 2 fastest of 2 configurations is right"
run tune --show
refuse "none right: nothing wrong kept" '"VWM": ?5'

FAKE_CLBLAST_TUNER=other-device run tune --clblast "${fast[@]}"
expect "another device's results are refused" 1 "names the device 'Some Other GPU'"
FAKE_CLBLAST_TUNER=garbage run tune --clblast "${fast[@]}"
expect "garbage is refused" 1 "is not a CLBlast tuner's JSON"
FAKE_CLBLAST_TUNER=fraction run tune --clblast "${fast[@]}"
expect "a fraction is refused" 1 "parameter HALF is not a whole number"
FAKE_CLBLAST_TUNER=fail run tune --clblast "${fast[@]}"
expect "a failed tuner is said" 1 "Xgemm f32: no result \(the tuner exited with 1"
run tune --show
expect "what was kept stays" 0 '"kernel": ?"XgemmDirect"'

[ "$failures" -eq 0 ]
