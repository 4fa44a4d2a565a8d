#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test, and
# prints "N passed, N failed" as its last line. Exits non-zero on any failure.
#
#   1. the whole suite (build/), which also warms PoCL's kernel cache for
#      the runs after it: a cold LLVM compile is ~1 s a kernel;
#   2. the core suite under valgrind memcheck (no kernel compiled there);
#   3. the whole suite with AddressSanitizer, UBSan and LeakSanitizer
#      (ci/asan.sh, build-asan/), fault injection included;
#   4. the threaded tests under ThreadSanitizer (ci/tsan.sh, build-tsan/);
#   5. each libFuzzer harness for KILN_FUZZ_SECONDS, 30 by default
#      (ci/fuzz.sh, build-fuzz/).
# The plain build replays the fuzzers' seeds and regressions in step 1.
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_BUILD_DIR:-build}

bash ci/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
bash ci/build.sh || { echo "0 passed, 1 failed"; exit 1; }

status=0
meson test -C "$builddir" --print-errorlogs || status=1
# valgrind: zero errors and no definite leaks from kiln (tests/valgrind.supp
# names each suppression of PoCL, LLVM or the ICD loader). No kernel is
# compiled in this suite: LLVM under valgrind is very slow.
# PoCL alone where a test takes the machine's platforms (tests/icd/meson.build
# says why).
OCL_ICD_VENDORS="$(realpath "$builddir")/tests/icd/pocl" \
  meson test -C "$builddir" --setup valgrind --suite core --print-errorlogs || status=1
logs=("$builddir/meson-logs/testlog.json" "$builddir/meson-logs/testlog-valgrind.json")

# A script that fails before its tests run leaves no log, which counts as a
# failure below, rather than an old log that would count as a pass.
asan_log=${KILN_ASAN_BUILD_DIR:-build-asan}/meson-logs/testlog.json
tsan_log=${KILN_TSAN_BUILD_DIR:-build-tsan}/meson-logs/testlog.json
rm -f "$asan_log" "$tsan_log"
bash ci/asan.sh || status=1
bash ci/tsan.sh || status=1
logs+=("$asan_log" "$tsan_log")

# The fuzzers are not meson tests: each harness counts as one test.
fuzz_log=$(mktemp)
bash ci/fuzz.sh | tee "$fuzz_log"
fuzz_rc=${PIPESTATUS[0]}
[ "$fuzz_rc" -eq 0 ] || status=1
fuzz_ok=$(grep -c '^fuzz-[a-z]*: [0-9]* runs' "$fuzz_log")
fuzz_failed=$(grep -c '^fuzz-[a-z]*: FAILED' "$fuzz_log")
[ "$fuzz_rc" -eq 0 ] || [ "$fuzz_failed" -gt 0 ] || fuzz_failed=1
rm -f "$fuzz_log"

# Count from meson's own logs: one JSON object per test.
python3 - "$((fuzz_ok - fuzz_failed))" "$fuzz_failed" "${logs[@]}" <<'PY' || status=1
import json, sys
passed, failed = int(sys.argv[1]), int(sys.argv[2])
skipped = 0
for path in sys.argv[3:]:
    try:
        f = open(path)
    except OSError as e:
        print(f"no test log: {e}", file=sys.stderr)
        failed += 1
        continue
    with f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
tail = f", {skipped} skipped" if skipped else ""
print(f"{passed} passed, {failed} failed{tail}")
sys.exit(1 if failed or passed == 0 else 0)
PY
exit $status
