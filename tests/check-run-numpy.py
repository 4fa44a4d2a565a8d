#!/usr/bin/env python3
"""check-run-numpy.py KILN — `kiln run` against numpy itself: the same call
gives the same values and the same dtype.

- fft: numpy.fft's fft, ifft, rfft and irfft (fftn, rfftn, irfftn over
  --axes) of float16, float32, float64, int32, int64, complex64 and
  complex128 arrays, with n cutting and padding, every norm, and irfft of
  half spectra that are not Hermitian (numpy drops what does not fit);
  the dtype is numpy 2's (complex64 from single precision; numpy 1.x,
  which upcasts to complex128, is compared by value);
- gemm: C's dtype is np.result_type of the matrices (float16 stays
  float16, float32 with float64 is float64, int32 with float32 float64);
  --bias broadcast as numpy does, and each --activation;
- reduce: sum, mean, min, max, argmin, argmax and norm of float16,
  float32, float64 and int32, whole and along axes: numpy's dtype (float16
  stays float16) and values;
- conv2d: --pad of one, two (height, width) and four numbers, --stride and
  --dilation of one and two, against a numpy cross-correlation;
- .npz: members by name (np.savez, np.savez_compressed), numpy's arr_0, an
  archive of one array without a name.

On a device without fp64 (rusticl's llvmpipe) kiln refuses float64 work,
saying that it needs fp64: those runs are counted and skipped, except
under CI (PoCL has fp64). Exits 77 (skipped) when numpy is not
importable."""
import os
import subprocess
import sys
import tempfile

from kilncheck import under_ci

try:
    import numpy as np
except ImportError:
    print("numpy is not importable: skipped")
    sys.exit(77)

KILN = sys.argv[1]
FAILURES = []
NO_FP64 = []  # the runs kiln refused for want of fp64
RNG = np.random.default_rng(2026)


def check(cond, what):
    print(("ok      " if cond else "FAILED  ") + what)
    if not cond:
        FAILURES.append(what)


def kiln(*args, expect=0):
    r = subprocess.run([KILN, "run", *args], capture_output=True, text=True, timeout=120)
    if expect == 0 and r.returncode == 1 and "needs fp64 (cl_khr_fp64)" in r.stderr and \
            not under_ci():
        NO_FP64.append(" ".join(os.path.basename(a) for a in args))
        return r
    check(r.returncode == expect, "kiln run %s: exit %d (%s)" % (
        " ".join(os.path.basename(a) for a in args), r.returncode, r.stderr.strip()[:300]))
    return r


def within(got, want, tol):
    """(whether got has want's shape and every value within tol of the
    largest of want's, the largest error, that largest value)"""
    err = float(np.max(np.abs(got.astype(np.complex128) - want))) if want.size else 0.0
    scale = float(np.max(np.abs(want))) if want.size else 1.0
    return got.shape == want.shape and err <= tol * max(scale, 1e-30), err, scale


def close(got, want, tol, what):
    """got has want's shape, and every value within tol of the largest of
    want's."""
    ok, err, scale = within(got, want, tol)
    check(ok, "%s: shape %s (numpy %s), error %.2g of %.2g" % (
        what, got.shape, want.shape, err, scale))


def sample(dtype, shape):
    x = RNG.standard_normal(shape) * 4
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape) * 4
    return x.astype(dtype)


def tol_of(dtype):
    single = np.dtype(dtype) in (np.float16, np.float32, np.complex64)
    return 2e-6 if single else 1e-13


def fft_tol(dtype, n, size):
    """The bound of a 1-D transform of n points, relative to the largest
    value of the result (size values a row), from the arithmetic kiln runs:
    float16, float32 and complex64 in single precision (u = 2^-24; float16
    widens to float32 exactly and Y is complex64, so half precision rounds
    nothing), the rest in double (2^-53). A transform's error in the 2-norm
    is within c log2(m) u of the result's (Higham, 24.1), m up to 4n where
    a backend pads a length that is not a power of two (Bluestein), c = 2
    with its twiddles' own rounding; the normalisation and the output round
    once more each. The largest element's error is within the 2-norm's, and
    the 2-norm within sqrt(size) of the largest value."""
    single = np.dtype(dtype) in (np.float16, np.float32, np.complex64)
    u = 2.0 ** -24 if single else 2.0 ** -53
    return 2 * (np.log2(4 * n) + 2) * u * np.sqrt(size)


def fft_cases(t):
    x_path, y_path = os.path.join(t, "x.npy"), os.path.join(t, "y.npy")
    for dtype in (np.float16, np.float32, np.float64, np.int32, np.int64, np.complex64,
                  np.complex128):
        x = sample(dtype, (3, 10))
        np.save(x_path, x)
        want_dtype = np.result_type(x.dtype, np.complex64)  # numpy 2's
        # The values: numpy's transform of X's values in double, exact to
        # the bounds here (numpy 2 itself, for float16, rounds the 1/n of
        # its norms to float16: 2^-12 of the result, which failed ifft and
        # rfft --norm forward of n = 10 and 13 on a GPU)
        xd = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
        cases = [([], 10, np.fft.fft(xd)), (["--inverse"], 10, np.fft.ifft(xd)),
                 (["--n", "7"], 7, np.fft.fft(xd, 7)),
                 (["--n", "16", "--norm", "ortho"], 16, np.fft.fft(xd, 16, norm="ortho")),
                 (["--inverse", "--norm", "forward"], 10, np.fft.ifft(xd, norm="forward"))]
        if not np.iscomplexobj(x):
            cases += [(["--real"], 10, np.fft.rfft(xd)),
                      (["--real", "--n", "13", "--norm", "forward"], 13,
                       np.fft.rfft(xd, 13, norm="forward"))]
        for args, n, want in cases:
            what = "fft %s %s" % (x.dtype, " ".join(args))
            if kiln("fft", x_path, "-o", y_path, *args).returncode == 0:
                y = np.load(y_path)
                check(y.dtype == want_dtype, "%s: dtype %s (numpy 2: %s)" % (
                    what, y.dtype, want_dtype))
                tol = fft_tol(dtype, n, want.shape[-1])
                close(y, want, tol, what)
    # 2-D and 3-D, real and complex
    for shape, axes in (((2, 6, 10), (-2, -1)), ((2, 3, 4, 6), (-3, -2, -1))):
        x = sample(np.float32, shape)
        np.save(x_path, x)
        ax = ",".join(map(str, axes))
        for args, want in ((["--axes", ax], np.fft.fftn(x, axes=axes)),
                           (["--axes", ax, "--real"], np.fft.rfftn(x, axes=axes)),
                           (["--axes", ax, "--inverse"], np.fft.ifftn(x, axes=axes))):
            what = "fftn %s %s" % (shape, " ".join(args))
            if kiln("fft", x_path, "-o", y_path, *args).returncode == 0:
                close(np.load(y_path), want, 1e-5, what)
    # irfft of half spectra, Hermitian or not (numpy keeps only the part of
    # bin 0, and of bin n/2, that a real signal has)
    for shape, naxes in (((2, 5), 1), ((3, 4, 5), 2), ((2, 3, 4, 6), 3)):
        for dtype in (np.complex64, np.complex128):
            h = sample(dtype, shape)
            np.save(x_path, h)
            axes = list(range(-naxes, 0))
            for n in (None, 2 * shape[-1] - 1, 3):
                s = None if n is None else [shape[a] for a in axes[:-1]] + [n]
                want = np.fft.irfftn(h, s=s, axes=axes)
                args = ["--real", "--inverse", "--axes", ",".join(map(str, axes))]
                args += ["--n", str(n)] if n else []
                what = "irfftn %s %s %s" % (h.dtype, shape, " ".join(args))
                if kiln("fft", x_path, "-o", y_path, *args).returncode == 0:
                    y = np.load(y_path)
                    real = np.float32 if dtype == np.complex64 else np.float64
                    check(y.dtype == real, "%s: dtype %s" % (what, y.dtype))
                    close(y, want, tol_of(dtype) * 10, what)


def gemm_cases(t):
    p = lambda f: os.path.join(t, f)
    for ta, tb, tc, want in ((np.float16, np.float16, None, np.float16),
                             (np.float32, np.float64, None, np.float64),
                             (np.float16, np.float32, None, np.float32),
                             (np.int32, np.float32, None, np.float64),
                             (np.float32, np.float32, np.float64, np.float64)):
        a = (RNG.integers(-4, 5, (5, 7))).astype(ta)
        b = (RNG.integers(-4, 5, (7, 3))).astype(tb)
        np.save(p("a.npy"), a)
        np.save(p("b.npy"), b)
        args = [p("a.npy"), p("b.npy"), "-o", p("c.npy"), "--alpha", "0.5"]
        ref = 0.5 * (a.astype(np.float64) @ b.astype(np.float64))
        types = [a.dtype, b.dtype]
        if tc:
            c0 = RNG.integers(-4, 5, (5, 3)).astype(tc)
            np.save(p("c0.npy"), c0)
            args += ["--c", p("c0.npy"), "--beta", "2"]
            ref = ref + 2 * c0
            types.append(c0.dtype)
        what = "gemm %s" % " @ ".join(str(d) for d in types)
        check(np.result_type(*types) == want, "%s: numpy's type is %s" % (what, want))
        if kiln("gemm", *args).returncode == 0:
            c = np.load(p("c.npy"))
            check(c.dtype == want, "%s: C is %s (numpy: %s)" % (what, c.dtype, want))
            close(c, ref, 1e-3 if want == np.float16 else 1e-6, what)
    np.save(p("a.npy"), np.ones((2, 2), np.int32))
    kiln("gemm", p("a.npy"), p("a.npy"), "-o", p("c.npy"), expect=1)  # int32 @ int32
    # --bias as numpy broadcasts it, and --activation, against their
    # definitions (GELU's erf through math.erf)
    import math
    erf = np.vectorize(math.erf)
    acts = {"relu": lambda v: np.maximum(v, 0), "gelu": lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2))),
            "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}
    a = RNG.standard_normal((6, 9)).astype(np.float32)
    b = RNG.standard_normal((9, 4)).astype(np.float32)
    np.save(p("a.npy"), a)
    np.save(p("b.npy"), b)
    for shape, act in (((4,), "relu"), ((1, 4), "gelu"), ((6, 1), "sigmoid"), ((4,), "tanh")):
        bias = RNG.standard_normal(shape).astype(np.float32)
        np.save(p("bias.npy"), bias)
        what = "gemm --bias %s --activation %s" % (shape, act)
        if kiln("gemm", p("a.npy"), p("b.npy"), "--bias", p("bias.npy"), "--activation", act,
                "-o", p("c.npy")).returncode == 0:
            c = np.load(p("c.npy"))
            want = acts[act](a.astype(np.float64) @ b.astype(np.float64) + bias)
            check(c.dtype == np.float32, "%s: C is %s" % (what, c.dtype))
            close(c, want, 1e-5, what)
    np.save(p("bias.npy"), np.ones((6,), np.float32))  # (m,) does not broadcast to (6, 4)
    r = kiln("gemm", p("a.npy"), p("b.npy"), "--bias", p("bias.npy"), "-o", p("c.npy"),
             expect=1)
    check("does not broadcast" in r.stderr, "a bias that does not broadcast is refused: %s" %
          r.stderr.strip()[:200])


def reduce_cases(t):
    x_path, y_path = os.path.join(t, "x.npy"), os.path.join(t, "y.npy")
    ops = {"sum": np.sum, "mean": np.mean, "min": np.min, "max": np.max,
           "argmin": np.argmin, "argmax": np.argmax,
           "norm": lambda x, axis=None: np.linalg.norm(x.ravel() if axis is None else x,
                                                       axis=axis)}
    for dtype in (np.float16, np.float32, np.float64, np.int32):
        x = (RNG.standard_normal((4, 6)) * 5).astype(dtype)
        np.save(x_path, x)
        for op, f in ops.items():
            # the ops that keep X's type (or give indexes) once, along an axis
            for axis in (None, 0) if op in ("sum", "mean", "norm") else (-1,):
                args = ["--op", op, x_path, "-o", y_path]
                args += ["--axis", str(axis)] if axis is not None else []
                want = np.asarray(f(x, axis=axis))
                what = "reduce %s of %s axis %s" % (op, x.dtype, axis)
                if kiln("reduce", *args).returncode == 0:
                    y = np.load(y_path)
                    check(y.dtype == want.dtype, "%s: dtype %s (numpy: %s)" % (
                        what, y.dtype, want.dtype))
                    exact = np.asarray(f(x.astype(np.float64), axis=axis))
                    close(y, exact, 2e-3 if dtype == np.float16 else 1e-6, what)


def conv_ref(x, w, stride, pad, dil):
    """Cross-correlation, NCHW, one group, in float64."""
    t, b, l, r = pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, b), (l, r)))
    k, c, fr, fs = w.shape
    p = (xp.shape[2] - dil[0] * (fr - 1) - 1) // stride[0] + 1
    q = (xp.shape[3] - dil[1] * (fs - 1) - 1) // stride[1] + 1
    y = np.zeros((x.shape[0], k, p, q))
    for i in range(fr):
        for j in range(fs):
            patch = xp[:, :, i * dil[0]:i * dil[0] + stride[0] * (p - 1) + 1:stride[0],
                       j * dil[1]:j * dil[1] + stride[1] * (q - 1) + 1:stride[1]]
            y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j].astype(np.float64))
    return y


def conv_cases(t):
    p = lambda f: os.path.join(t, f)
    x = sample(np.float32, (2, 3, 9, 8))
    w = sample(np.float32, (4, 3, 3, 2))
    np.save(p("x.npy"), x)
    np.save(p("w.npy"), w)
    for args, stride, pad, dil in (
            (["--pad", "1"], (1, 1), (1, 1, 1, 1), (1, 1)),
            (["--pad", "2,1"], (1, 1), (2, 2, 1, 1), (1, 1)),
            (["--pad", "0,2,1,0"], (1, 1), (0, 2, 1, 0), (1, 1)),
            (["--stride", "2,1", "--pad", "1,0"], (2, 1), (1, 1, 0, 0), (1, 1)),
            (["--dilation", "2,1", "--stride", "2"], (2, 2), (0, 0, 0, 0), (2, 1))):
        what = "conv2d %s" % " ".join(args)
        if kiln("conv2d", p("x.npy"), p("w.npy"), "-o", p("y.npy"), *args).returncode == 0:
            y = np.load(p("y.npy"))
            check(y.dtype == np.float32, "%s: dtype %s" % (what, y.dtype))
            close(y, conv_ref(x, w, stride, pad, dil), 1e-5, what)


def npz_cases(t):
    p = lambda f: os.path.join(t, f)
    x = sample(np.float32, (1, 2, 6, 6))
    w = sample(np.float64, (3, 2, 3, 3))
    np.savez(p("named.npz"), X=x, W=w)
    np.savez_compressed(p("packed.npz"), X=x, W=w)
    np.savez(p("plain.npz"), x, w)  # numpy names them arr_0, arr_1
    np.savez(p("one.npz"), w)
    want = conv_ref(x, w.astype(np.float32), (1, 1), (1, 1, 1, 1), (1, 1))
    for xs, ws in ((p("named.npz") + ":X", p("named.npz") + ":W"),
                   (p("packed.npz") + ":X", p("packed.npz") + ":W"),
                   (p("plain.npz") + ":arr_0", p("one.npz"))):
        what = "conv2d of %s and %s" % (os.path.basename(xs), os.path.basename(ws))
        if kiln("conv2d", xs, ws, "--pad", "1", "-o", p("y.npy")).returncode == 0:
            close(np.load(p("y.npy")), want, 1e-5, what)
    r = kiln("conv2d", p("named.npz") + ":Q", p("named.npz") + ":W", "-o", p("y.npy"),
             expect=1)
    check("has no array 'Q'; it holds X and W" in r.stderr, "a missing member is named, "
          "with the archive's: " + r.stderr.strip())


def main():
    with tempfile.TemporaryDirectory(prefix="kiln-run-numpy-") as t:
        fft_cases(t)
        gemm_cases(t)
        reduce_cases(t)
        conv_cases(t)
        npz_cases(t)
    if NO_FP64:
        print("skipped: %d runs need fp64 (cl_khr_fp64), which the device has not, "
              "e.g. kiln run %s" % (len(NO_FP64), NO_FP64[0]))
    print("numpy %s: %d failure(s)" % (np.__version__, len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
