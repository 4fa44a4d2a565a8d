"""kilncheck — what the check-*.py scripts share: a line for each check with
the failures kept, `kiln run OP` that must exit as expected, and the device
group's report of `kiln run OP ... --devices SEL`. Standard library only."""
import os
import re
import subprocess

FAILURES = []


def under_ci():
    """Whether CI runs the script (CI set, not "0" or "false"): there, on
    PoCL with the devices meson registers, every need is met."""
    return os.environ.get("CI", "") not in ("", "0", "false")


def need(holds, what):
    """Whether what a case needs (PoCL's two devices...) holds; where not,
    says "skipped: needs WHAT". Under CI a missing need is a failure: the
    caller gets True and the failure is kept in FAILURES."""
    if holds:
        return True
    if under_ci():
        check(False, "needs %s (under CI every need is met)" % what)
        return True
    print("skipped: needs %s" % what)
    return False


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
    PoCL devices; a machine's one GPU makes a group of one, and need()
    says so), a row for each, no device failed, and their units (rows,
    images, transforms...) add up to `units` when it is given."""
    if not re.search(r"^device +a group \(below\)$", stdout, re.M):
        return "no 'device   a group (below)' in:\n" + stdout
    m = GROUP_LINE.search(stdout)
    if not m:
        return "no 'group    N devices:' line in:\n" + stdout
    n = int(m.group(1))
    rows = stdout[m.end():].split("\n")[1:n + 1]
    found = [GROUP_ROW.match(row) for row in rows]
    # one device: said and skipped, or under CI a failure
    few = n < 2 and need(False, "two devices for a group (PoCL's two: "
                                "POCL_DEVICES='pthread pthread')")
    if few or len(rows) != n or not all(found):
        return "expected a row for each of at least 2 devices after %r in:\n%s" % (
            m.group(0), stdout)
    done = sum(int(f.group(4)) for f in found)
    if units is not None and done != units:
        return "the devices did %d units; expected %d:\n%s" % (done, units, stdout)
    return ""
