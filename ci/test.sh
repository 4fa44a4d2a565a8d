#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test, then
# the core tests again under valgrind memcheck, and prints
# "N passed, N failed" as its last line. Exits non-zero on any failure.
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
meson test -C "$builddir" --setup valgrind --suite core --print-errorlogs || status=1

# Count from meson's own logs: one JSON object per test.
python3 - "$builddir/meson-logs/testlog.json" "$builddir/meson-logs/testlog-valgrind.json" <<'PY' || status=1
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
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
