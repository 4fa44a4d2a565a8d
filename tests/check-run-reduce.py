#!/usr/bin/env python3
"""check-run-reduce.py KILN [clblast|no-clblast] — `kiln run reduce` on .npy
files: every op along every axis of 1-D to 4-D arrays and over all of them,
in each input type, against a reference computed here in double precision
as numpy defines the ops (NaN propagates, first index on ties); empty and
0-d arrays; the CLBlast backend where it applies and its refusals; over a
device group (--devices all); and the command's errors: one line, a
non-zero exit, no output file. Files are written and read by npyfile.py
(standard library only).

Each case is a `kiln` process, which pays the driver's start (a fifth of a
second on a GPU); the cases run in parallel, each in a folder of its own,
so that the ~300 of them fit in 30 s on any device."""
import concurrent.futures
import math
import os
import struct
import subprocess
import sys
import tempfile
import threading

from kilncheck import group_problem, under_ci
from npyfile import as_stored, count, load, save

KILN = sys.argv[1]
HAVE_CLBLAST = len(sys.argv) > 2 and sys.argv[2] == "clblast"
# kiln processes at once: each mostly waits for the driver's start, so more
# than the cores (PoCL's kernels of a few elements are short)
JOBS = min(16, 4 * (os.cpu_count() or 1))
OPS = ("sum", "mean", "min", "max", "argmin", "argmax", "norm")
NAN = float("nan")
INF = float("inf")


def out_descr(op, descr):
    """numpy's result type: kiln_reduce_out_dtype()'s, but float16's sum, mean
    and norm, which numpy keeps in float16 and kiln run rounds to it."""
    if descr in ("<f2", "<f4") and op in ("sum", "mean", "norm"):
        return descr
    if op == "sum":
        return "<i8" if descr == "<i4" else "<f8"
    if op in ("mean", "norm"):
        return "<f8"
    return "<i8" if op.startswith("arg") else descr


def fold(op, seq):
    """One result of op over seq, in double precision."""
    nans = [j for j, v in enumerate(seq) if v != v]
    if op == "sum":
        return float(sum(seq))
    if op == "mean":
        return float(sum(seq)) / len(seq) if seq else NAN
    if op == "norm":
        return math.sqrt(sum(v * v for v in seq))
    if op in ("min", "max"):
        return NAN if nans else (min(seq) if op == "min" else max(seq))
    if nans:
        return nans[0]
    best = min(seq) if op == "argmin" else max(seq)
    return seq.index(best)


def reference(op, shape, values, axis):
    """(shape, values) of op over the C-order array, along axis or all."""
    if axis is None:
        return (), [fold(op, values)]
    axis %= len(shape)
    outer, n, inner = count(shape[:axis]), shape[axis], count(shape[axis + 1:])
    out = [fold(op, [values[(o * n + j) * inner + i] for j in range(n)])
           for o in range(outer) for i in range(inner)]
    return shape[:axis] + shape[axis + 1:], out


def rounded(v, descr):
    """v as the output type stores it: float32 and float16 overflow to inf
    beyond their largest value (as numpy's float32 norm of 3e38 does)."""
    code = {"<f4": "<f", "<f2": "<e"}.get(descr)
    if code and v == v and not math.isinf(v):
        try:
            return struct.unpack(code, struct.pack(code, v))[0]
        except OverflowError:
            return math.copysign(INF, v)
    return v


def close(got, want, descr):
    want = rounded(want, descr)
    if want != want:
        return got != got
    if math.isinf(want) or descr.startswith("<i"):
        return got == want
    # float16: the float32 (or better) result rounded once more, which may
    # land one unit of the last place from the double reference's rounding
    tol = {"<f8": 1e-12, "<f4": 1e-6, "<f2": 2.0 ** -10}[descr]
    return abs(got - want) <= tol * abs(want) + 1e-30


class Checker:
    """Runs the cases in parallel (`jobs` at a time), each in a folder of
    its own; wait() ends when all have been checked."""

    def __init__(self, folder, jobs):
        self.folder = folder
        self.failures = 0
        self.runs = 0
        self.lock = threading.Lock()
        self.pool = concurrent.futures.ThreadPoolExecutor(jobs)
        self.pending = []
        self.fp64 = True  # whether the device computes float64 (fp64_check())
        self.no_fp64 = []  # the cases left out without it

    def path(self, name):
        return os.path.join(self.folder, name)

    def case_folder(self):
        """A new folder for one case's files."""
        with self.lock:
            self.runs += 1
            n = self.runs
        d = self.path("case%d" % n)
        os.mkdir(d)
        return d

    def kiln(self, *args):
        return subprocess.run([KILN, "run", "reduce", *args], capture_output=True, text=True)

    def say(self, line):
        with self.lock:
            print(line, flush=True)

    def fail(self, what, detail):
        with self.lock:
            self.failures += 1
            print("FAIL: %s: %s" % (what, detail), flush=True)

    def later(self, fn, *args):
        """fn(*args) on the pool; its exception, if any, is a failure."""
        self.pending.append(self.pool.submit(fn, *args))

    def wait(self):
        for f in self.pending:
            try:
                f.result()
            except Exception as e:  # a bug of this script: said, and a failure
                self.fail("a case raised", repr(e))
        self.pending = []
        self.pool.shutdown()

    def check(self, op, shape, values, descr="<f4", axis=None, backend=None,
              fortran=False, quiet=True, devices=None, units=None, now=False):
        """Runs op on an array and compares every result with reference();
        over the device group `devices` selects, when given, whose devices
        must have done `units` units. On the pool, unless now (then it
        returns kiln's result, or None after a failure)."""
        folder = self.case_folder()
        x, y = os.path.join(folder, "x.npy"), os.path.join(folder, "y.npy")
        save(x, shape, values, descr, fortran)
        args = ["--op", op, x, "-o", y]
        if axis is not None:
            args += ["--axis", str(axis)]
        if backend:
            args += ["--backend", backend]
        if devices:
            args += ["--devices", devices]
        what = "%s of %s %s axis %s%s%s" % (op, descr, shape, axis,
                                            " on " + backend if backend else "",
                                            " over " + devices if devices else "")
        case = (what, args, y, op, shape, values, descr, axis, quiet, devices, units)
        if now:
            return self.run_case(*case)
        self.later(self.run_case, *case)

    def run_case(self, what, args, y, op, shape, values, descr, axis, quiet, devices,
                 units):
        if not self.fp64 and "<f8" in (descr, out_descr(op, descr)):
            with self.lock:
                self.no_fp64.append(what)
            return None
        r = self.kiln(*args)
        if r.returncode != 0:
            return self.fail(what, "exit %d: %s" % (r.returncode, r.stderr.strip()))
        values = as_stored(values, descr)  # rounded to float32 or float16
        got_descr, got_shape, got = load(y)
        want_shape, want = reference(op, tuple(shape), values, axis)
        want_descr = out_descr(op, descr)
        bad = [i for i in range(len(want)) if not close(got[i], want[i], want_descr)]
        # without fp64 a sum accumulates in compensated float32 (kiln.h),
        # whose partial sums overflow where the magnitudes' sum does
        if not self.fp64 and op in ("sum", "mean") and axis is None and \
                sum(abs(v) for v in values) > 3.4028234663852886e38:
            bad = [i for i in bad if not math.isinf(got[i])]
        if got_descr != want_descr or got_shape != want_shape or bad:
            return self.fail(what, "got %s %s, expected %s %s; first wrong: %s" % (
                got_descr, got_shape, want_descr, want_shape,
                [(i, got[i], want[i]) for i in bad[:3]]))
        problem = devices and group_problem(r.stdout, units)
        if problem:
            return self.fail(what, problem)
        if not quiet:
            self.say("ok: %s" % what)
        return r

    def fp64_check(self):
        """Whether the device computes float64: a sum of float64 refused
        as needing fp64 (rusticl's llvmpipe) says not. Under CI, on PoCL,
        it must."""
        x, y = self.path("f8.npy"), self.path("f8-sum.npy")
        save(x, (2,), [1.0, 2.0], "<f8")
        r = self.kiln("--op", "sum", x, "-o", y)
        self.fp64 = not (r.returncode == 1 and "needs fp64" in r.stderr)
        if not self.fp64 and under_ci():
            self.fail("float64", "needs fp64 (under CI every need is met): " + r.stderr)

    def refuse(self, what, args, words, code=1):
        """A command that must fail: exit `code`, `words` in one line on
        stderr, and no output file. On the pool."""
        y = os.path.join(self.case_folder(), "y.npy")
        self.later(self.run_refusal, what, [a if a != "Y" else y for a in args], y, words,
                   code)

    def run_refusal(self, what, args, y, words, code):
        r = self.kiln(*args)
        lines = r.stderr.strip().splitlines()
        if r.returncode != code or words not in r.stderr or os.path.exists(y) or \
                (len(lines) != 1 and words != "usage"):
            return self.fail("refuses %s" % what, "exit %d, stderr %r" % (
                r.returncode, r.stderr))
        self.say("ok: refuses %s" % what)


def data(n, descr="<f4"):
    """Multiples of 1/8 (exact in float16) with ties; integers for int32."""
    if descr == "<i4":
        return [(i * 37) % 19 - 9 for i in range(n)]
    return [((i * 37) % 19 - 9) / 8 for i in range(n)]


def every_axis(c, shape, descr="<f4", fortran=False):
    values = data(count(shape), descr)
    for op in OPS:
        for axis in [None, -1] + list(range(len(shape))):
            c.check(op, shape, values, descr, axis, fortran=fortran)
    print("queued: every op along every axis of %s %s%s" % (
        descr, shape, " (Fortran order)" if fortran else ""))


def main():
    with tempfile.TemporaryDirectory() as t:
        c = Checker(t, JOBS)
        x = c.path("x.npy")  # the refusals' array, read by several at once
        save(x, (3, 4), data(12))
        c.fp64_check()
        # the report
        r = c.check("sum", (2, 3), data(6), axis=1, now=True)
        for word in ("device", "backend", "reduce", "time", "GB/s", "wrote"):
            if r and word not in r.stdout:
                c.fail("the report", "no %s in:\n%s" % (word, r.stdout))
        # float32 in 1 to 4 dimensions, one file in Fortran order
        for shape in [(7,), (2, 3, 4), (2, 1, 3, 2)]:
            every_axis(c, shape)
        every_axis(c, (3, 4), fortran=True)
        # the other input types
        for descr in ("<f8", "<i4", "<f2"):
            every_axis(c, (3, 5), descr)
        # NaN, infinities, ties: first NaN, first extreme
        for values in ([1.0, 2.0, NAN, 3.0, NAN, -1.0], [INF, 1.0, -INF, INF, 0.0],
                       [-INF, -INF, -INF], [3.0, 1.0, 3.0, 1.0, 3.0],
                       [-3e38, -1e38, 1e38, 3e38, 3e38, -3e38]):
            for op in OPS:
                c.check(op, (len(values),), values)
        ties = [1.0, 2.0, 2.0, 1.0, 0.0, 2.0, 0.0, 1.0, 2.0, 2.0, 0.0, 0.0]
        for op in ("argmin", "argmax"):
            for axis in (None, 0, 1):
                c.check(op, (3, 4), ties, axis=axis)
        print("queued: NaN, infinities and ties")
        # longer than one work-group's share, prime length
        big = [((i * 7919) % 1000) / 1000 for i in range(100003)]
        for op in OPS:
            c.check(op, (len(big),), big, quiet=False)
        # empty and 0-d arrays
        for op in ("sum", "mean", "norm"):
            c.check(op, (0,), [], quiet=False)
            c.check(op, (3, 0), [], axis=1)
        c.check("max", (3, 0), [], axis=0, quiet=False)  # no outputs: nothing to do
        for op in OPS:
            c.check(op, (), [2.5])
        print("queued: empty and 0-d arrays")
        # CLBlast: whole float32 and float64 sums and norms; refusals
        if HAVE_CLBLAST:
            for descr in ("<f4", "<f8"):
                for op in ("sum", "norm"):
                    c.check(op, (1000,), data(1000), descr, backend="clblast", quiet=False)
            c.refuse("clblast along an axis", ["--op", "sum", "--axis", "0", "--backend",
                                               "clblast", x, "-o", "Y"], "along an axis")
            c.refuse("clblast argmax", ["--op", "argmax", "--backend", "clblast", x,
                                        "-o", "Y"], "first index on ties")
        # over the group (--devices all), with the units its devices must
        # have done: positions before the axis (3 over two devices; 1 when
        # the axis is the first, or of a batch of 1), or of every element
        # grains of at least 16384 elements (one here); an empty view is
        # one call
        for op, shape, descr, axis, units in [
                ("sum", (3, 33, 17), "<f4", 1, 3),
                ("mean", (3, 33, 17), "<f2", -1, 99),
                ("argmax", (33, 17), "<f4", 0, 1),
                ("min", (1, 17), "<f8", 1, 1),
                ("norm", (33, 17), "<f8", None, 1),
                ("sum", (3, 33, 17), "<i4", None, 1),
                ("sum", (3, 0), "<f4", 1, 1)]:
            c.check(op, shape, data(count(shape), descr), descr, axis, quiet=False,
                    devices="all", units=units)
        # errors
        save(c.path("e.npy"), (3, 0), [])
        save(c.path("i8.npy"), (3,), [1, 2, 3], "<i8")
        save(c.path("0d.npy"), (), [1.5])
        # a usage error (the parser's) exits 2, a failure 1
        for what, args, words, code in [
            ("an unknown op", ["--op", "median", x, "-o", "Y"], "--op 'median'", 2),
            ("an axis out of range", ["--op", "sum", "--axis", "2", x, "-o", "Y"],
             "--axis 2 is out of range", 1),
            ("a negative axis out of range", ["--op", "sum", "--axis", "-3", x, "-o", "Y"],
             "--axis -3 is out of range", 1),
            ("an axis that is not a number", ["--op", "sum", "--axis", "one", x, "-o", "Y"],
             "--axis 'one'", 2),
            ("a bad backend", ["--op", "sum", "--backend", "gpu", x, "-o", "Y"],
             "--backend 'gpu'", 2),
            ("a missing file", ["--op", "sum", c.path("nope.npy"), "-o", "Y"], "nope.npy", 1),
            ("int64 input", ["--op", "sum", c.path("i8.npy"), "-o", "Y"], "X holds int64", 1),
            ("the max of nothing", ["--op", "max", "--axis", "1", c.path("e.npy"), "-o", "Y"],
             "max of an empty view", 1),
            ("the max of nothing over a group (every device refuses it)",
             ["--op", "max", "--axis", "1", "--devices", "all", c.path("e.npy"), "-o", "Y"],
             "max of an empty view", 1),
            ("a bad --devices", ["--op", "sum", "--devices", "nope:9", x, "-o", "Y"],
             "'nope:9' is not a device selector", 1),
            ("an axis of a 0-d array", ["--op", "sum", "--axis", "0", c.path("0d.npy"),
                                        "-o", "Y"], "0-d array, which has no axis", 1),
            ("a second array", ["--op", "sum", x, x, "-o", "Y"], "unexpected argument", 2),
            ("an unknown option", ["--op", "sum", "--keepdims", "1", x, "-o", "Y"],
             "unknown option '--keepdims'", 2),
            ("no output", ["--op", "sum", x], "usage", 2),
            ("no op", [x, "-o", "Y"], "usage", 2),
        ]:
            c.refuse(what, args, words, code)
        c.wait()
        if c.no_fp64:
            print("skipped: %d cases need fp64 (cl_khr_fp64) for their float64 input or "
                  "result, e.g. %s" % (len(c.no_fp64), c.no_fp64[0]))
        print("%d runs (%d at a time), %d failed" % (c.runs - len(c.no_fp64), JOBS,
                                                     c.failures))
        return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
