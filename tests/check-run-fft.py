#!/usr/bin/env python3
"""check-run-fft.py KILN — `kiln run fft` on .npy files: C2C forward and
inverse of complex64 and complex128 arrays, R2C (--real) of float32 and
float64, C2R (--real --inverse) of even and odd lengths, over the last one,
two and three axes with the leading axes as the batch, against a naive DFT
computed here with cmath in double precision; each named backend, which may
refuse a case (one line, non-zero exit); over a device group (--devices
all), transforms of the batch to each device; and the command's errors: one
line, a non-zero exit, no output file. Files are written and read by
npyfile.py.

Tolerance, as test-fft.c explains it (Higham, Theorem 24.2, with room for
Bluestein's algorithm): each element within
20 (log2 N + 2) u ||x||_2 s + 2 u |y_k|, s the inverse's 1/N or 1."""
import cmath
import math
import os
import subprocess
import sys
import tempfile

from kilncheck import group_problem
from npyfile import as_stored, count, load, save

KILN = sys.argv[1]
U = {"<c8": 2.0 ** -24, "<f4": 2.0 ** -24, "<c16": 2.0 ** -53, "<f8": 2.0 ** -53}
COMPLEX_OF = {"<f4": "<c8", "<f8": "<c16"}
REAL_OF = {"<c8": "<f4", "<c16": "<f8"}
failures = []


def lcg(seed):
    while True:
        seed = (seed * 6364136223846793005 + 1442695040888963407) % 2 ** 64
        yield (seed >> 11) * 2.0 ** -52 - 1


def dft_axis(vals, shape, axis, sign):
    """The DFT of the C-order array along one axis, in double precision."""
    n = shape[axis]
    inner = count(shape[axis + 1:])
    outer = count(shape[:axis])
    tw = [cmath.exp(sign * 2j * math.pi * m / n) for m in range(n)]
    out = list(vals)
    for o in range(outer):
        for i in range(inner):
            base = o * n * inner + i
            line = [vals[base + j * inner] for j in range(n)]
            for k in range(n):
                out[base + k * inner] = sum(line[j] * tw[j * k % n] for j in range(n))
    return out


def dft(vals, shape, naxes, sign):
    for a in range(len(shape) - naxes, len(shape)):
        vals = dft_axis(vals, shape, a, sign)
    return vals


def hermitian(half, shape, naxes, n):
    """The full spectrum (last axis n) that the half-spectrum stands for."""
    full_shape = shape[:-1] + (n,)
    lead = shape[len(shape) - naxes:-1]  # transformed axes before the last
    m = shape[-1]
    out = []
    for flat in range(count(full_shape)):
        k = flat % n
        rest = flat // n
        if k < m:
            out.append(half[rest * m + k])
            continue
        # -(index) over the transformed leading axes; the batch stays
        idx, r = [], rest
        for s in reversed(lead):
            idx.insert(0, r % s)
            r //= s
        neg = r
        for s, i in zip(lead, idx):
            neg = neg * s + (s - i) % s
        out.append(half[neg * m + (n - k)].conjugate())
    return full_shape, out


def smooth(lengths):
    """Whether every prime factor of every length is at most 13 (clFFT's)."""
    for n in lengths:
        for p in (2, 3, 5, 7, 11, 13):
            while n % p == 0:
                n //= p
        if n != 1:
            return False
    return True


def run(args, limit=None):
    """`kiln run fft ARGS`; limit: KILN_MEMORY_LIMIT for it."""
    env = dict(os.environ, KILN_MEMORY_LIMIT=limit) if limit else None
    return subprocess.run([KILN, "run", "fft"] + args, capture_output=True, text=True,
                          env=env)


def check(name, descr, shape, naxes, inverse=False, real=False, n_out=None,
          backend=None, seed=1, limit=None, devices=None):
    """One case (under KILN_MEMORY_LIMIT=limit, when given; over the device
    group `devices` selects, when given); returns False when a named
    backend refused it."""
    g = lcg(seed)
    size = count(shape)
    if real and not inverse:  # R2C
        x = as_stored([next(g) for _ in range(size)], descr)
        full_shape, full = shape, [complex(v) for v in x]
    elif real:  # C2R: the half-spectrum of a real array
        n = n_out or 2 * (shape[-1] - 1)
        rshape = shape[:-1] + (n,)
        r = as_stored([next(g) for _ in range(count(rshape))], REAL_OF[descr])
        spec = dft([complex(v) for v in r], rshape, naxes, -1)
        x = as_stored([spec[i // shape[-1] * n + i % shape[-1]] for i in range(size)], descr)
        full_shape, full = hermitian(x, shape, naxes, n)
    else:
        x = as_stored([complex(next(g), next(g)) for _ in range(size)], descr)
        full_shape, full = shape, x
    sign = 1 if inverse else -1
    y = dft(full, full_shape, naxes, sign)
    nt = count(full_shape[len(full_shape) - naxes:])
    scale = 1 / nt if inverse else 1
    y = [v * scale for v in y]
    if real and not inverse:
        m = shape[-1] // 2 + 1
        want_shape = shape[:-1] + (m,)
        y = [y[i // m * shape[-1] + i % m] for i in range(count(want_shape))]
        want_descr = COMPLEX_OF[descr]
    elif real:
        want_shape, y, want_descr = full_shape, [v.real for v in y], REAL_OF[descr]
    else:
        want_shape, want_descr = shape, descr
    batch = count(full_shape[:len(full_shape) - naxes])
    xnorm = math.sqrt(sum(abs(v) ** 2 for v in full) / batch)
    u = U[descr]
    base = 20 * (math.log2(nt) + 2) * u * xnorm * scale
    with tempfile.TemporaryDirectory() as d:
        xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
        save(xp, shape, x, descr)
        args = [xp, "-o", yp]
        if naxes != 1 or seed % 2:
            args += ["--axes", ",".join(str(a) for a in range(-naxes, 0))]
        args += ["--inverse"] * inverse + ["--real"] * real
        args += ["--n", str(n_out)] if n_out else []
        args += ["--backend", backend] if backend else []
        args += ["--devices", devices] if devices else []
        p = run(args, limit)
        if p.returncode != 0:
            # Without VkFFT (whose message names its package), lengths with a
            # prime factor above 13 have no backend; with it, AUTO runs all.
            if not backend and not smooth(full_shape[len(full_shape) - naxes:]) \
                    and "libvkfft-dev" in p.stderr and len(p.stderr.strip().splitlines()) == 1:
                print("  %s: refused without VkFFT: %s" % (name, p.stderr.strip()))
                return False
            if backend and len(p.stderr.strip().splitlines()) == 1 and not os.path.exists(yp):
                print("  %s refused %s: %s" % (backend, name, p.stderr.strip()))
                return False
            failures.append("%s: exit %d: %s" % (name, p.returncode, p.stderr.strip()))
            return True
        got_descr, got_shape, got = load(yp)
    problem = devices and group_problem(p.stdout, units=batch)
    if problem:
        failures.append("%s: %s" % (name, problem))
        return True
    if (got_descr, got_shape) != (want_descr, want_shape):
        failures.append("%s: wrote %s %s, expected %s %s" % (
            name, got_descr, got_shape, want_descr, want_shape))
        return True
    worst = 0
    for i, (a, b) in enumerate(zip(got, y)):
        tol = base + 2 * u * abs(b)
        err = abs(a - b)
        worst = max(worst, err / tol if tol else 0)
        if not err <= tol:
            failures.append("%s: element %d is %r, expected %r (error %.3g, bound %.3g)"
                            % (name, i, a, b, err, tol))
            break
    print("  %-44s ok (largest error %.3g of its bound)" % (name, worst))
    return True


CASES = [
    # name, descr, shape, naxes, inverse, real, n_out
    ("c8 (8,)", "<c8", (8,), 1, False, False, None),
    ("c8 (13,)", "<c8", (13,), 1, False, False, None),
    ("c8 (3, 12) batch 3", "<c8", (3, 12), 1, False, False, None),
    ("c8 inverse (2, 17)", "<c8", (2, 17), 1, True, False, None),
    ("c8 (4, 6) axes -2,-1", "<c8", (4, 6), 2, False, False, None),
    ("c8 inverse (2, 6, 10) axes -2,-1", "<c8", (2, 6, 10), 2, True, False, None),
    ("c8 (2, 3, 5, 4) axes -3,-2,-1", "<c8", (2, 3, 5, 4), 3, False, False, None),
    ("c16 (17,)", "<c16", (17,), 1, False, False, None),
    ("c16 inverse (4, 9) axes -2,-1", "<c16", (4, 9), 2, True, False, None),
    ("f4 R2C (16,)", "<f4", (16,), 1, False, True, None),
    ("f4 R2C (2, 15)", "<f4", (2, 15), 1, False, True, None),
    ("f4 R2C (6, 10) axes -2,-1", "<f4", (6, 10), 2, False, True, None),
    ("f8 R2C (3, 9)", "<f8", (3, 9), 1, False, True, None),
    ("c8 C2R (2, 9) -> 16", "<c8", (2, 9), 1, True, True, None),
    ("c8 C2R (2, 8) --n 15", "<c8", (2, 8), 1, True, True, 15),
    ("c8 C2R (6, 6) axes -2,-1 -> (6, 10)", "<c8", (6, 6), 2, True, True, None),
    ("c16 C2R (5,) --n 9", "<c16", (5,), 1, True, True, 9),
]


# Over a device group (--devices all): batches of 3 over two devices
# (uneven) and of 1 (one device).
GROUP = [
    # name, descr, shape, naxes, inverse, real, n_out
    ("c8 (3, 33) over the group", "<c8", (3, 33), 1, False, False, None),
    ("f4 R2C (3, 5, 17) axes -2,-1 over the group", "<f4", (3, 5, 17), 2, False, True,
     None),
    ("c16 C2R (3, 9) -> 16 over the group", "<c16", (3, 9), 1, True, True, None),
    ("c8 inverse (1, 17) over the group", "<c8", (1, 17), 1, True, False, None),
]


def refusals():
    """The command's errors: one line naming the problem, exit non-zero, no file."""
    with tempfile.TemporaryDirectory() as d:
        c1, c2, yp = (os.path.join(d, f) for f in ("c1.npy", "c2.npy", "y.npy"))
        save(c2, (4, 6), [complex(i, 1) for i in range(24)], "<c8")
        save(c1, (4, 1), [complex(i, 1) for i in range(4)], "<c8")
        bad = [
            ([c2, "-o", yp, "--axes", "0"], "last"),
            ([c2, "-o", yp, "--axes", "-2"], "last"),
            ([c2, "-o", yp, "--axes", "-1,-1"], "twice"),
            ([c2, "-o", yp, "--axes", "-3,-2,-1"], "dimension"),
            ([c2, "-o", yp, "--axes", "x"], "--axes"),
            ([c2, "-o", yp, "--real"], "complex64"),
            ([c1, "-o", yp, "--real", "--inverse"], "give the length with --n"),
            ([c2, "-o", yp, "--n", "0"], "--n"),
            ([c2, "-o", yp, "--norm", "none"], "--norm"),
            ([c2, "-o", yp, "--backend", "clblast"], "clfft"),
            # every device of the group refuses it: the library's one line
            ([c2, "-o", yp, "--backend", "kiln", "--devices", "all"], "power-of-two"),
            ([c2, "-o", yp, "--devices", "nope:9"], "is not a device selector"),
            ([c2, "-o", yp, "--bogus", "1"], "unknown"),
            ([c2], "usage"),
            ([os.path.join(d, "missing.npy"), "-o", yp], "missing.npy"),
        ]
        for args, needle in bad:
            if os.path.exists(yp):
                os.remove(yp)
            p = run(args)
            lines = p.stderr.strip().splitlines()
            if p.returncode == 0 or not lines or needle not in p.stderr or os.path.exists(yp):
                failures.append("kiln run fft %s: exit %d, stderr %r (expected one line "
                                "naming %r, no file)" % (" ".join(args[1:]), p.returncode,
                                                        p.stderr, needle))
            elif len(lines) != 1 and needle != "usage":
                failures.append("kiln run fft %s: %d lines on stderr" % (args[1:], len(lines)))


def main():
    probe = run([])
    if "usage" not in probe.stderr:
        print("kiln run fft is not there:", probe.stderr.strip())
        return 1
    for k, c in enumerate(CASES):
        check(*c[:4], inverse=c[4], real=c[5], n_out=c[6], seed=k)
    for be in ("clfft", "vkfft"):
        for k, c in enumerate(CASES[:3] + CASES[9:10] + CASES[13:14]):
            check(c[0] + " on " + be, *c[1:4], inverse=c[4], real=c[5], n_out=c[6],
                  backend=be, seed=k)
    # Files larger than KILN_MEMORY_LIMIT: kiln_fft_host() runs the batch in
    # pieces (x and y 128 KiB each, the budget 64 KiB; x 32 KiB, y 34 KiB,
    # the budget 32 KiB).
    check("c8 (256, 64) under KILN_MEMORY_LIMIT=64K", "<c8", (256, 64), 1, seed=5,
          limit="64K")
    check("f4 R2C (64, 4, 32) axes -2,-1 under KILN_MEMORY_LIMIT=32K", "<f4",
          (64, 4, 32), 2, real=True, seed=6, limit="32K")
    for k, c in enumerate(GROUP):
        check(*c[:4], inverse=c[4], real=c[5], n_out=c[6], seed=k, devices="all")
    refusals()
    for f in failures:
        print("FAIL", f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
