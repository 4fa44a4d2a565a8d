#!/usr/bin/env python3
"""check-clinfo.py <kiln> — `kiln info --raw` agrees with `clinfo --raw`.

Runs both under the same environment (meson gives PoCL and Oclgrind through
OCL_ICD_VENDORS, and POCL_DEVICES="pthread pthread"), parses each into
(platform, device, CL name) -> value, and compares every field the two
share, platform fields included. Fails with the list of mismatches, when the
two do not list the same devices, or when a device shares fewer than
MIN_SHARED fields (a parser or layout regression would otherwise pass
vacuously). Exits 77 (skipped) when clinfo is not installed, except under
CI, where ci/deps.sh installs it and its absence is a failure.
"""
import os
import re
import shutil
import subprocess
import sys

MIN_SHARED = 60

# clinfo --raw aligns a name in 46 columns after its indent, then two spaces;
# a longer name is followed by two spaces. The value may itself start with a
# space (Oclgrind's extension string does), so it is cut at that column
# rather than stripped.
NAME_WIDTH = 46
LINE = re.compile(r"^(?:\[(?P<tag>[^\]/]*)/(?P<index>[^\]]*)\])?(?P<indent>\s*)(?P<name>#?[A-Z][A-Z0-9_]*)")

# PoCL derives these from the host memory hwloc reports, which in a sandbox
# follows what other processes use: two runs a second apart differed by
# gigabytes here. POCL_MEMORY_LIMIT (GiB) caps the first, and PoCL derives the
# other two from it, so both tools see the same values as long as the host
# reports more than the cap. Should it not, a run whose only mismatches are
# these fields is repeated (see compare_with_retries), never ignored.
MEMORY_DERIVED = {
    "CL_DEVICE_GLOBAL_MEM_SIZE",
    "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
    "CL_DEVICE_IMAGE_MAX_BUFFER_SIZE",
}
POCL_MEMORY_LIMIT_GIB = "1"
RETRIES = 3


def parse(text):
    """(platform ordinal, device index or '*', name) -> value."""
    fields = {}
    top_platform = -1   # in the leading #PLATFORMS section
    platform = -1       # in the per-platform [tag/index] sections
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or m.group("name").startswith("#"):
            continue
        name, tag, index = m.group("name"), m.group("tag"), m.group("index")
        start = m.start("name")
        value = line[start + max(NAME_WIDTH, len(name)) + 2:]
        if tag is None:
            if name == "CL_PLATFORM_NAME":
                top_platform += 1
            fields[(top_platform, "*", name)] = value
        elif tag == "OCLICD":
            continue  # clinfo's ICD loader section; kiln has none
        else:
            if index == "*" and name == "CL_PLATFORM_NAME":
                platform += 1
                continue  # repeats the leading section
            fields[(platform, index, name)] = value
    return fields


def run(cmd, env):
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def compare(clinfo, kiln):
    """Returns (mismatches, compared count per (platform, device))."""
    mismatches, counts = [], {}
    for key in sorted(set(clinfo) & set(kiln), key=str):
        counts[key[:2]] = counts.get(key[:2], 0) + 1
        if clinfo[key] != kiln[key]:
            mismatches.append((key, clinfo[key], kiln[key]))
    return mismatches, counts


def compare_with_retries(clinfo_cmd, kiln_cmd, env):
    for attempt in range(1, RETRIES + 1):
        clinfo, kiln = parse(run(clinfo_cmd, env)), parse(run(kiln_cmd, env))
        mismatches, counts = compare(clinfo, kiln)
        volatile = [m for m in mismatches if m[0][2] in MEMORY_DERIVED]
        if not volatile or len(volatile) != len(mismatches) or attempt == RETRIES:
            return clinfo, kiln, mismatches, counts
        print(f"attempt {attempt}: only memory-derived fields differ "
              f"({', '.join(sorted({m[0][2] for m in volatile}))}); running both again")


def devices(fields):
    return {(p, d) for (p, d, _) in fields if d != "*"}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check-clinfo.py <kiln>")
    clinfo_exe = shutil.which("clinfo")
    if not clinfo_exe:
        print("clinfo is not installed (apt-get install clinfo); nothing to compare with")
        sys.exit(1 if os.environ.get("CI") else 77)
    env = dict(os.environ, POCL_MEMORY_LIMIT=POCL_MEMORY_LIMIT_GIB)
    clinfo, kiln, mismatches, counts = compare_with_retries(
        [clinfo_exe, "--raw"], [sys.argv[1], "info", "--raw"], env)

    status = 0
    if not devices(clinfo):
        print("no OpenCL device: nothing to compare")
        sys.exit(1 if os.environ.get("CI") else 77)
    if devices(clinfo) != devices(kiln):
        print(f"FAIL: the devices differ: clinfo {sorted(devices(clinfo))}, "
              f"kiln {sorted(devices(kiln))}")
        status = 1
    for (p, d), n in sorted(counts.items(), key=str):
        what = f"platform {p}" + ("" if d == "*" else f" device {d}")
        name = kiln.get((p, d, "CL_DEVICE_NAME" if d != "*" else "CL_PLATFORM_NAME"), "?")
        print(f"{what} ({name}): {n} fields compared")
        if d != "*" and n < MIN_SHARED:
            print(f"FAIL: {what} shares only {n} fields with clinfo; expected at least "
                  f"{MIN_SHARED}")
            status = 1
    for (p, d, name), want, got in mismatches:
        print(f"MISMATCH platform {p} device {d} {name}:\n  clinfo: {want!r}\n  kiln:   {got!r}")
    if mismatches:
        print(f"FAIL: {len(mismatches)} of {sum(counts.values())} shared fields differ")
        status = 1
    if status == 0:
        print(f"OK: all {sum(counts.values())} shared fields agree")
    sys.exit(status)


if __name__ == "__main__":
    main()
