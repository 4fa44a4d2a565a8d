#!/usr/bin/env python3
"""check-run.py KILN — `kiln run gemm` on .npy files against a reference
computed here in double precision, with the files written and read by
npyfile.py (standard library only: the .npy format is small), over a device
group (--devices all) too, and its errors."""
import os
import sys
import tempfile

from kilncheck import group_problem, run_op
from npyfile import load, save

KILN = sys.argv[1]


def matmul(a, b, m, n, k, ta, tb, ar, ac, br, bc):
    A = lambda i, p: a[p * ac + i] if ta else a[i * ac + p]
    B = lambda p, j: b[j * bc + p] if tb else b[p * bc + j]
    return [sum(A(i, p) * B(p, j) for p in range(k)) for i in range(m) for j in range(n)]


def run(*args, expect=0):
    return run_op(KILN, "gemm", args, expect)


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as t:
        p = lambda name: os.path.join(t, name)
        m, n, k = 7, 5, 11
        a = [((i * 37) % 19 - 9) / 8 for i in range(m * k)]
        b = [((i * 53) % 23 - 11) / 4 for i in range(k * n)]
        for ta in (0, 1):
            for tb in (0, 1):
                # A and B as stored: transposed when the flag says so; one
                # file in Fortran order, to go through kiln's reordering
                ar, ac = (k, m) if ta else (m, k)
                br, bc = (n, k) if tb else (k, n)
                save(p("a.npy"), (ar, ac), a, fortran=bool(ta and tb))
                save(p("b.npy"), (br, bc), b, descr="<f8")
                flags = (["--ta"] if ta else []) + (["--tb"] if tb else [])
                r = run(p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--alpha", "0.5",
                        "--dtype", "float32", *flags)
                for word in ("device", "backend", "time"):
                    if word not in r.stdout:
                        failures += 1
                        print("FAIL: no %s in the output:\n%s" % (word, r.stdout))
                _, (rows, cols), got = load(p("c.npy"))
                want = [0.5 * x for x in matmul(a, b, m, n, k, ta, tb, ar, ac, br, bc)]
                bad = [i for i in range(m * n) if abs(got[i] - want[i]) > 1e-4 * (1 + abs(want[i]))]
                if (rows, cols) != (m, n) or bad:
                    failures += 1
                    print("FAIL: ta=%d tb=%d: shape %s, first bad %s" % (ta, tb, (rows, cols), bad[:3]))
                else:
                    print("ok: ta=%d tb=%d (%s)" % (ta, tb, r.stdout.split("\n")[1]))
        # C0 and beta
        save(p("a.npy"), (m, k), a)
        save(p("b.npy"), (k, n), b)
        c0 = [float(i % 3) for i in range(m * n)]
        save(p("c0.npy"), (m, n), c0)
        run(p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--c", p("c0.npy"), "--beta", "-2")
        _, _, got = load(p("c.npy"))
        want = [x - 2 * y for x, y in zip(matmul(a, b, m, n, k, 0, 0, m, k, k, n), c0)]
        if any(abs(g - w) > 1e-4 * (1 + abs(w)) for g, w in zip(got, want)):
            failures += 1
            print("FAIL: --c with --beta -2")
        else:
            print("ok: --c C0.npy --beta -2")
        # over the group: rows of C to each device, 33 of them over two
        # devices (uneven), and one row (one device does it all); A
        # transposed, then C0 with beta (a chunk reads C)
        for m1, ta in ((33, 1), (1, 0)):
            ar, ac = (k, m1) if ta else (m1, k)
            a1 = [((i * 29) % 17 - 8) / 8 for i in range(m1 * k)]
            c1 = [float(i % 5) for i in range(m1 * n)]
            save(p("a.npy"), (ar, ac), a1)
            save(p("c0.npy"), (m1, n), c1)
            flags = ["--ta", "--alpha", "0.5"] if ta else ["--c", p("c0.npy"), "--beta", "-2"]
            r = run(p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--devices", "all", *flags)
            ref = matmul(a1, b, m1, n, k, ta, 0, ar, ac, k, n)
            want = [0.5 * x for x in ref] if ta else [x - 2 * y for x, y in zip(ref, c1)]
            _, shape, got = load(p("c.npy"))
            bad = [i for i in range(m1 * n) if abs(got[i] - want[i]) > 1e-4 * (1 + abs(want[i]))]
            problem = group_problem(r.stdout, units=m1)
            what = "--devices all, %d x %d x %d%s" % (m1, n, k, ", --ta" if ta else ", C0")
            if shape != (m1, n) or bad or problem:
                failures += 1
                print("FAIL: %s: shape %s, first bad %s %s" % (what, shape, bad[:3], problem))
            else:
                print("ok: %s" % what)
        save(p("a.npy"), (m, k), a)
        # errors: one line on stderr, non-zero exit, no output file
        os.remove(p("c.npy"))
        save(p("bad.npy"), (k + 1, n), [0.0] * ((k + 1) * n))
        # a failure exits 1, a usage error 2
        for args, words, code in [
            ((p("a.npy"), p("bad.npy"), "-o", p("c.npy")), "expected op(B) to have", 1),
            ((p("a.npy"), p("nope.npy"), "-o", p("c.npy")), "nope.npy", 1),
            ((p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--dtype", "int8"),
             "--dtype 'int8' is not a value it takes", 2),
            ((p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--alpha", "x"),
             "--alpha 'x' is not a value it takes; --alpha X:", 2),
            ((p("a.npy"), p("b.npy")), "usage", 2),
            ((p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--devices", "nope:9"),
             "'nope:9' is not a device selector", 1),
        ]:
            r = run(*args, expect=code)
            if words not in r.stderr or os.path.exists(p("c.npy")):
                failures += 1
                print("FAIL: %s: %r" % (" ".join(args[2:]), r.stderr))
            else:
                print("ok: refused %s" % words)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
