#!/usr/bin/env bash
# Fuzzes kiln: builds tests/fuzz's libFuzzer harnesses with clang, ASan and
# UBSan (build dir build-fuzz, -Dfuzzing=true), and runs each for
# KILN_FUZZ_SECONDS (default 30) from a copy of its seed corpus and
# regressions, so nothing new lands in the source tree. Fails on any crash,
# leak, timeout or sanitizer report, and keeps the input for
# tests/fuzz/regressions/<harness>/. Prints one line per harness with
# libFuzzer's figures, and last "fuzz: H harnesses, N runs, C crashes".
#
#   bash ci/fuzz.sh                   every harness
#   bash ci/fuzz.sh npy desc          only those
#   KILN_FUZZ_SECONDS=600 bash ci/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_FUZZ_BUILD_DIR:-build-fuzz}
seconds=${KILN_FUZZ_SECONDS:-30}
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(npy select cache desc)

# The longest input each harness reads: .npy files of a few KiB, one line
# each of selectors, cache entries with a short payload, descriptors.
declare -A max_len=([npy]=4096 [select]=512 [cache]=2048 [desc]=512)

fail() {
  echo "fuzz: $*" >&2
  echo "fuzz: ${#harnesses[@]} harnesses, 0 runs, 1 crashes"
  exit 1
}

command -v clang >/dev/null || fail "clang not found (ci/deps.sh installs it)"
if [ -f "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" -Dwerror=true -Dfuzzing=true -Dpython=disabled >/dev/null ||
    fail "meson setup failed"
else
  CC=clang meson setup "$builddir" -Dwerror=true -Dfuzzing=true -Dpython=disabled >/dev/null ||
    fail "meson setup failed"
fi
targets=()
for h in "${harnesses[@]}"; do
  [ -n "${max_len[$h]:-}" ] || fail "no harness '$h'; expected npy, select, cache or desc"
  targets+=("fuzz-$h")
done
meson compile -C "$builddir" "${targets[@]}" >/dev/null ||
  fail "building the harnesses failed (is $builddir configured with clang? remove it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-fuzz.XXXXXX")
total_runs=0
crashes=0
export UBSAN_OPTIONS=print_stacktrace=1
for h in "${harnesses[@]}"; do
  corpus="$work/$h/corpus"
  mkdir -p "$corpus" "$work/$h/artifacts"
  cp tests/fuzz/corpus/"$h"/* "$corpus"/
  [ -d tests/fuzz/regressions/"$h" ] && cp tests/fuzz/regressions/"$h"/* "$corpus"/
  seeds=$(ls "$corpus" | wc -l)
  dict=()
  [ -f tests/fuzz/"$h".dict ] && dict=(-dict=tests/fuzz/"$h".dict)
  log="$work/$h/log"
  "$builddir/tests/fuzz/fuzz-$h" "$corpus" "${dict[@]}" \
    -max_total_time="$seconds" -max_len="${max_len[$h]}" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -error_exitcode=1 \
    -artifact_prefix="$work/$h/artifacts/" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  runs=${runs:-0}
  total_runs=$((total_runs + runs))
  found=$(ls "$work/$h/artifacts" | wc -l)
  if [ $rc -ne 0 ] || [ "$found" -ne 0 ]; then
    crashes=$((crashes + (found > 0 ? found : 1)))
    echo "fuzz-$h: FAILED (exit $rc); the log, last lines:"
    grep -E "ERROR|SUMMARY|property failed|runtime error|Test unit written" "$log" | head -20
    echo "  inputs: $work/$h/artifacts/ (fix the bug, then copy them to" \
         "tests/fuzz/regressions/$h/)"
  fi
  echo "fuzz-$h: $runs runs in ${seconds} s (${rate:-0} exec/s), corpus $seeds -> $(ls "$corpus" | wc -l) inputs"
done

echo "fuzz: ${#harnesses[@]} harnesses, $total_runs runs, $crashes crashes"
if [ $crashes -ne 0 ]; then
  echo "fuzz: kept $work for the crashing inputs" >&2
  exit 1
fi
rm -rf "$work"
