#!/usr/bin/env python3
"""check-info.py <kiln> <json|no-json> — every `kiln info` layout runs.

Each layout exits 0 and shows every device (--device one); --json is valid
JSON by `python3 -m json.tool` (or, built without json-c, fails naming
libjson-c-dev); a bad option or selector is one line on stderr and a
non-zero exit, never a crash; with no OpenCL platform at all, `kiln info`
says "Number of platforms 0" and how to get a driver, and exits 0.
"""
import json
import os
import subprocess
import sys
import tempfile

from kilncheck import FAILURES, check


def run(args, env=None):
    return subprocess.run([KILN, "info"] + args, env=env or os.environ,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)


def check_ok(args, env=None):
    proc = run(args, env)
    check(proc.returncode == 0,
          f"kiln info {' '.join(args)} exits 0 (got {proc.returncode}: {proc.stderr.strip()})")
    return proc


def check_error(args):
    proc = run(args)
    lines = proc.stderr.splitlines()
    check(0 < proc.returncode < 128 and len(lines) == 1 and lines[0].startswith("kiln info: "),
          f"kiln info {' '.join(args)} fails with one line (exit {proc.returncode}: "
          f"{proc.stderr.strip()!r})")


def device_lines(listing):
    return [l for l in listing.splitlines() if "-- Device #" in l]


def check_layouts(with_json):
    listing = check_ok(["--list"]).stdout
    n = len(device_lines(listing))
    check(n >= 1, f"kiln info --list lists devices ({n})")
    human = check_ok([]).stdout
    check("Number of platforms" in human, "the report starts with the platform count")
    check(human.count("  Device Name  ") == n, f"the report shows {n} devices")
    raw = check_ok(["--raw"]).stdout
    check(raw.startswith("#PLATFORMS"), "--raw starts with #PLATFORMS")
    check(sum(1 for l in raw.splitlines() if "  CL_DEVICE_NAME  " in l) == n,
          f"--raw shows {n} devices")
    check_ok(["--help"])
    for sel in ["0", "0:0", str(n - 1)]:
        one = check_ok(["--device", sel]).stdout
        check(one.count("  Device Name  ") == 1, f"--device {sel} shows one device")
        check(len(device_lines(check_ok(["--list", f"--device={sel}"]).stdout)) == 1,
              f"--list --device={sel} lists one device")
        check_ok(["--raw", "--device", sel])
    if with_json:
        check_json(n)
    else:
        proc = run(["--json"])
        check(proc.returncode == 1 and "libjson-c-dev" in proc.stderr,
              "--json without json-c exits 1 naming libjson-c-dev")


def check_json(n):
    out = check_ok(["--json"]).stdout
    tool = subprocess.run([sys.executable, "-m", "json.tool"], input=out,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    check(tool.returncode == 0, f"--json parses with json.tool ({tool.stderr.strip()})")
    if tool.returncode != 0:
        return
    doc = json.loads(out)
    devices = [d for p in doc["platforms"] for d in p["devices"]]
    check(len(devices) == n, f"--json has {n} devices")
    check(all(d["properties"]["CL_DEVICE_NAME"]["available"] for d in devices),
          "--json: every device has its name")
    one = json.loads(check_ok(["--json", "--device", "0"]).stdout)
    check(sum(len(p["devices"]) for p in one["platforms"]) == 1, "--json --device 0: one device")


def check_errors():
    for args in (["--bogus"], ["--device"], ["--device", "999"], ["--device", "0:999"],
                 ["--device", "x"], ["--device", "1:"], ["--device", "-1"],
                 ["--device", ""], ["--raw", "--json"], ["--list", "--raw"]):
        check_error(args)


def check_no_platform(with_json):
    with tempfile.TemporaryDirectory(prefix="kiln-no-icd-") as empty:
        env = dict(os.environ, OCL_ICD_VENDORS=empty)
        proc = check_ok([], env)
        check(proc.stdout.split() == ["Number", "of", "platforms", "0"],
              f"no platform: 'Number of platforms 0' ({proc.stdout.strip()!r})")
        check("pocl-opencl-icd" in proc.stderr, "no platform: stderr says how to get a driver")
        for args in (["--raw"], ["--list"]) + ((["--json"],) if with_json else ()):
            check_ok(args, env)


def main():
    global KILN
    if len(sys.argv) != 3:
        sys.exit("usage: check-info.py <kiln> <json|no-json>")
    KILN = sys.argv[1]
    with_json = sys.argv[2] == "json"
    if run(["--list"]).stdout.strip() == "":
        print("no OpenCL device")
        sys.exit(1 if os.environ.get("CI") else 77)
    check_layouts(with_json)
    check_errors()
    check_no_platform(with_json)
    if FAILURES:
        print(f"FAIL: {len(FAILURES)} checks failed")
        sys.exit(1)
    print("OK")


KILN = None

if __name__ == "__main__":
    main()
