#!/usr/bin/env bash
# check-cli.sh <kiln> — the kiln command's general behaviour: help, version,
# `kiln devices`, and one clear line plus a non-zero exit for what is wrong.
set -uo pipefail
kiln=$1
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

check "help" 0 "devices +rank the devices" help
check "no command" 2 "usage: kiln" 
check "unknown command" 2 "unknown command 'frobnicate'" frobnicate
check "version" 0 "^kiln [0-9]+\.[0-9]+\.[0-9]+$" version
check "--version names the backends built in" 0 "^backends: kiln(, [a-z]+)*$" --version
check "devices ranks and picks" 0 "<- picked" devices
check "devices says why" 0 "^picked [0-9]+:[0-9]+ " devices
# name= of the picked device's first word (PoCL's "pthread-...", "NVIDIA H200"),
# whatever the device is
name=$("$kiln" devices 2>/dev/null | sed -n 's/^picked [0-9]*:[0-9]* \([A-Za-z0-9_]*\).*/\1/p')
KILN_DEVICE=name=$name check "devices shows the selector" 0 \
  "KILN_DEVICE='name=$name': 'name=$name' picks" devices
KILN_DEVICE=bogus check "a bad selector" 1 "'bogus' is not a device selector" devices
KILN_MEMORY_LIMIT=lots check "a bad environment value" 1 "KILN_MEMORY_LIMIT='lots'" devices
KILN_PROFILE=yes check "KILN_PROFILE must be 0 or 1" 1 "KILN_PROFILE='yes' is not 0 or 1" devices
KILN_PROFILE=1 check "profiling prints the table at exit" 0 "^Op +Backend +Calls +Device total" devices
KILN_TRACE=/nonexistent-kiln/t.json check "a trace that cannot be written is said" 0 \
  "cannot create the trace file '/nonexistent-kiln/t.json'" devices

# kiln check: six operations, each within its bound (the bounds are in
# tools/check.c); with profiling on, the table follows.
check "check runs every operation" 0 "every result within its bound" check
check "check reports each" 0 "^kernel +saxpy.* ok$" check
# The profile's rows: gemm's names the backend that the report's line names
# (kiln's own on a CPU, CLBlast on a GPU), each operation called twice.
out=$(KILN_PROFILE=1 "$kiln" check 2>&1)
gemm_backend=$(awk '$1 == "gemm" && /error\/bound/ { for (i = 3; i <= NF; i++)
  if ($i == "ms") { print $(i - 2); exit } }' <<<"$out")
for row in "gemm +${gemm_backend:-none} +2 " "conv2d +[a-z0-9]+ +2 " "fft +[a-z0-9]+ +2 " \
           "reduce\.sum +[a-z0-9]+ +2 "; do
  if grep -qE "^$row" <<<"$out"; then
    echo "ok: check prints the profile: $row"
  else
    echo "FAIL: check prints the profile: no row '$row' (gemm ran on '$gemm_backend'), output:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  fi
done
check "check takes no argument" 2 "unexpected argument 'x'" check x

# The kernel cache, in a folder of this run's own.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export KILN_CACHE_DIR=$cache
check "kernels build" 0 "compiled [1-9][0-9]*, from the cache 0" kernels
check "kernels come from the cache" 0 "compiled 0, from the cache [1-9]" kernels --time
check "cache lists entries" 0 "entries +[1-9]" cache
check "cache clears" 0 "files removed" cache --clear
check "cache is empty" 0 "entries +0$" cache
# Building ahead: the operations' kernels, then none on a first call.
check "cache --warm builds" 0 "^  reduce +[1-9][0-9]* kernels ready" cache --warm reduce
KILN_PROFILE=1 check "a call after --warm only loads" 0 \
  "^load cl/reduce\.cl kiln_reduce_sum_chunks_f32 +opencl +1 " check
check "cache --warm refuses another name" 2 "--warm 'nope' is not a value it takes" cache --warm nope
check "cache clears after --warm" 0 "files removed" cache --clear
# Profiling: building kiln's kernels is a row of the builds' section, not
# the first call's; with the cache filled, a load.
KILN_PROFILE=1 check "the profile's builds have a section" 0 \
  "^Builds, cache loads and FFT plans \(host time" check
KILN_PROFILE=1 check "the profile's builds are rows" 0 \
  "^load cl/gemm\.cl kiln_gemm_[a-z0-9_]+ +opencl +1 " check
check "cache clears again" 0 "files removed" cache --clear
KILN_PROFILE=1 check "the profile's builds on a cold cache" 0 \
  "^build cl/gemm\.cl kiln_gemm_[a-z0-9_]+ +opencl +1 " check
check "cache refuses options" 2 "usage: kiln cache" cache --all
KILN_CACHE=0 check "cache off" 0 "kernel cache off: KILN_CACHE=0" cache
check "devices names the cache" 0 "^kernel cache: $cache$" devices
# A folder every user may write is refused, and both commands say why.
chmod 777 "$cache"
check "cache refuses a folder others may write" 0 \
  "^kernel cache off: $cache is writable by every user .*fix: chmod 700 $cache" cache
check "devices says the cache is off" 0 "^kernel cache off: $cache is writable" devices
check "kernels says why the cache is off" 0 "^kernel cache off: $cache is writable" kernels
check "devices says why no record is kept" 0 \
  "records need the kernel cache, which is off: $cache is writable" devices
check "tune says why it has no record" 0 \
  "record \(none: the kernel cache is off: $cache is writable" tune --clear
chmod 700 "$cache"
KILN_CACHE=2 check "KILN_CACHE must be 0 or 1" 1 "KILN_CACHE='2' is not 0 or 1" cache

# kiln build: a user's kernel file, and one that does not compile.
printf 'kernel void twice(global float *x) { x[get_global_id(0)] *= 2; }\n' > "$cache/ok.cl"
printf 'kernel void broken(global float *x) { x[0] = nope; }\n' > "$cache/bad.cl"
check "build compiles a file" 0 "ok.cl builds on .* \(compiled\)" build "$cache/ok.cl" -DTWICE
check "build shows the log of a failure" 1 "options: -cl-kernel-arg-info -DX=1" build "$cache/bad.cl" -DX=1
check "build's log names the error" 1 "nope" build "$cache/bad.cl"
check "build of a missing file" 1 "cannot open '/nonexistent.cl'" build /nonexistent.cl

# kiln tune: the convolution's kernels on a short budget, into this run's
# cache folder; the record then shows their section.
check "tune --only refuses a bad kernel" 2 "--only 'bogus' is not a value it takes; --only gemm,reduce,fft,conv" tune --only bogus
check "tune --only conv runs" 0 "^conv direct +(was|kept)" tune --only conv --budget 3
check "tune --show has the conv section" 0 '"col_kib"' tune --show

# kiln bench: runs, checks its results, and prints the records' fields. The
# figures are not judged here; timing belongs to `kiln bench` itself.
check "bench gemm table" 0 "kiln/openblas" bench gemm --sizes 16,33 --repeat 1 --backend kiln
check "bench gemm json" 0 '"shape": ?"33x33x33"' bench gemm --sizes 33 --repeat 1 --backend kiln --json
check "bench gemm json fields" 0 '"gbps": ?null' bench gemm --sizes 8 --repeat 1 --backend kiln --json
check "bench refuses bad sizes" 2 "--sizes '0' is not a value it takes; --sizes N" bench gemm --sizes 0
check "bench refuses bad backends" 2 "--backend 'gpu' is not a value it takes" bench gemm --backend gpu
check "bench --untuned compares tuned with untuned" 0 "tuned/untuned" \
  bench gemm --sizes 33 --repeat 1 --backend kiln --untuned
check "bench --untuned gives a verdict with a record" 0 \
  "^(no kiln figure is slower tuned|slower tuned beyond the noise)" \
  bench gemm --sizes 33 --repeat 1 --untuned
# The record above is of the convolution: GEMM's parameters are the rules',
# so kiln's GEMM runs the same code on both sides, a noise row.
check "bench --untuned reads rows at the rules' values as noise" 0 \
  "where the record holds the rules' values, gemm kiln:" \
  bench gemm --sizes 33 --repeat 1 --untuned
# Without a record both sides run the rules: nothing to judge.
nocache=$(mktemp -d)
trap 'rm -rf "$cache" "$nocache"' EXIT
KILN_CACHE_DIR=$nocache check "bench --untuned without a record" 0 \
  "^no tuning record applies to this device" \
  bench gemm --sizes 33 --repeat 1 --untuned
for field in '"op": ?"reduce"' '"backend": ?"kiln"' '"backend": ?"c-loop"' \
             '"dtype": ?"float32"' '"shape": ?"262144"' '"median_ms": ?[0-9]' \
             '"gflops": ?null' '"gbps": ?[0-9]'; do
  check "bench reduce json has $field" 0 "$field" bench reduce --sizes 1M --backend kiln --json
done
check "bench reduce table" 0 "kiln/c-loop" bench reduce --sizes 64K --backend kiln --repeat 1
check "bench reduce refuses bad sizes" 2 "--sizes '0' is not" bench reduce --sizes 0
check "bench reduce refuses part of a float" 2 "--sizes '1026' is not" bench reduce --sizes 1026
check "bench reduce refuses unknown units" 2 "--sizes '1T' is not" bench reduce --sizes 1T
check "bench reduce refuses openblas" 2 "--backend kiln,clblast: " bench reduce --backend openblas
check "bench reduce refuses unknown options" 2 "usage: kiln bench reduce" bench reduce --dtype float64
check "bench conv refuses bad backends" 2 "--backend im2col,direct,clblast,openblas: " \
  bench conv --backend winograd --json
check "bench conv refuses bad layers" 2 "--sizes LAYER,...: the cases: layer numbers" bench conv --sizes 7
check "bench conv json (the depthwise layer)" 0 '"shape": ?"n8c128h56w56k128r3s3g128"' \
  bench conv --sizes 4 --backend direct --repeat 1 --json
check "bench names its groups" 0 "^  conv +GFLOP/s" bench --help
# kiln bench overhead: host time per call of each operation, with and
# without the caching pool; each case checked against known answers.
check "bench overhead table" 0 "kiln/no-pool" bench overhead --sizes 1,7 --repeat 1
check "bench overhead checks every case" 0 "copy4K +kiln-wait +warm-up and check\.\.\. ok" \
  bench overhead --quick --repeat 1
check "bench overhead json counts allocations" 0 '"allocs": ?[0-9]+' \
  bench overhead --sizes 3 --backend kiln --repeat 1 --json
check "bench overhead refuses bad sizes" 2 "the cases: case numbers" \
  bench overhead --sizes 8
check "bench overhead refuses bad backends" 2 "--backend kiln,no-pool,kiln-wait: " \
  bench overhead --backend pool
check "bench names the overhead group" 0 "^  overhead +host us" bench --help

# kiln run conv2d's errors: exactly one line on stderr, no file; exit 2 for a
# usage error, 1 for a failure.
one_line() { # one_line <description> <expected exit> <args...>
  local what=$1 want=$2
  shift 2
  local err rc
  err=$("$kiln" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne "$want" ] || [ "$(wc -l <<<"$err")" -ne 1 ] || [ -e "$cache/y.npy" ] ||
     ! grep -q "^kiln run conv2d: " <<<"$err"; then
    echo "FAIL: $what: exit $rc (expected $want), stderr:"
    sed 's/^/    /' <<<"$err"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}
one_line "run conv2d of a missing file" 1 run conv2d "$cache/nope.npy" "$cache/w.npy" -o "$cache/y.npy"
one_line "run conv2d with a bad backend" 2 run conv2d x.npy w.npy -o "$cache/y.npy" --backend kiln
one_line "run conv2d with a bad pad" 2 run conv2d x.npy w.npy -o "$cache/y.npy" --pad 1,2,3
one_line "run conv2d with an unknown option" 2 run conv2d x.npy w.npy -o "$cache/y.npy" --fast
KILN_GEMM_BACKEND=fast check "KILN_GEMM_BACKEND is checked" 1 "KILN_GEMM_BACKEND='fast'" devices

[ "$failures" -eq 0 ]
