"""kilncheck — what the check-*.py scripts share: a line for each check with
the failures kept, and `kiln run OP` that must exit as expected. Standard
library only."""
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
