"""kilncheck — what the check-*.py scripts share: a line for each check with
the failures kept, `kiln run OP` that must exit as expected, and the device
group's report of `kiln run OP ... --devices SEL`. Standard library only."""
import re
import subprocess

FAILURES = []


def check(cond, what):
    """Prints "ok" or "FAILED" and what was checked; keeps a failure in FAILURES."""
    print(("ok      " if cond else "FAILED  ") + what)
    if not cond:
        FAILURES.append(what)


def run_op(kiln, op, args, expect=0):
    """`kiln run OP ARGS...`, its output captured; ends the script with both
    outputs unless it exits with `expect`."""
    r = subprocess.run([kiln, "run", op, *args], capture_output=True, text=True)
    if r.returncode != expect:
        raise SystemExit("FAIL: kiln run %s %s: exit %d, expected %d\n%s%s" % (
            op, " ".join(args), r.returncode, expect, r.stdout, r.stderr))
    return r


# run.c's run_group_report(): "group    N devices: ...", then a row a device:
# "  P:D name units share% chunks seconds s"
GROUP_LINE = re.compile(r"^group +(\d+) devices: ", re.M)
GROUP_ROW = re.compile(r"^  (\d+):(\d+) +(\S.*?) +(\d+) +[\d.]+% +(\d+) +[\d.]+ s$")


def group_problem(stdout, units=None):
    """What is wrong with the report of `kiln run OP ... --devices all` in
    stdout ("" when nothing): the device is "a group (below)", then the
    group's line names at least two devices (the tests' environment has two
    PoCL devices), a row for each, no device failed, and their units (rows,
    images, transforms...) add up to `units` when it is given."""
    if not re.search(r"^device +a group \(below\)$", stdout, re.M):
        return "no 'device   a group (below)' in:\n" + stdout
    m = GROUP_LINE.search(stdout)
    if not m:
        return "no 'group    N devices:' line in:\n" + stdout
    n = int(m.group(1))
    rows = stdout[m.end():].split("\n")[1:n + 1]
    found = [GROUP_ROW.match(row) for row in rows]
    if n < 2 or len(rows) != n or not all(found):
        return "expected a row for each of at least 2 devices after %r in:\n%s" % (
            m.group(0), stdout)
    done = sum(int(f.group(4)) for f in found)
    if units is not None and done != units:
        return "the devices did %d units; expected %d:\n%s" % (done, units, stdout)
    return ""
