#!/usr/bin/env python3
"""check-run-conv.py KILN [clblast|no-clblast] — `kiln run conv2d` on .npy
files against a reference computed here in double precision (a direct
cross-correlation loop): stride, asymmetric padding, dilation, groups and
depthwise, bias and ReLU, 1x1 to 7x7 filters, both layouts, float64 and
float16 inputs, with the im2col and direct backends and AUTO; CLBlast's
convgemm where it applies, and its refusals where it does not; over a
device group (--devices all), images of the batch to each device; and the
command's errors: one line on stderr, a non-zero exit, no output file.
Files are written and read by npyfile.py (standard library only)."""
import math
import os
import subprocess
import sys
import tempfile

from kilncheck import group_problem, run_op
from npyfile import as_stored, count, load, save

KILN = sys.argv[1]
HAVE_CLBLAST = len(sys.argv) > 2 and sys.argv[2] == "clblast"


def side(size, pad_a, pad_b, f, dil, stride):
    return (size + pad_a + pad_b - dil * (f - 1) - 1) // stride + 1


# --activation's functions, from their definitions (GELU: the erf form)
ACTIVATIONS = {"none": lambda v: v, "gelu": lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
               "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "tanh": math.tanh}


def conv_ref(x, wt, bias, case):
    """(shape, values, magnitudes) of act(x conv wt + bias), the
    magnitudes being sum |x * w| + |bias| per output, for the tolerance."""
    n, c, h, w, k, r, s = (case[key] for key in "nchwkrs")
    sh, sw = case.get("stride", (1, 1))
    pt, pb, pl, pr = case.get("pad", (0, 0, 0, 0))
    dh, dw = case.get("dilation", (1, 1))
    g = case.get("groups", 1)
    nhwc = case.get("layout") == "nhwc"
    cg, kg = c // g, k // g
    p, q = side(h, pt, pb, r, dh, sh), side(w, pl, pr, s, dw, sw)
    if nhwc:
        xi = lambda b, ci, hi, wi: ((b * h + hi) * w + wi) * c + ci
        wi_ = lambda ko, cj, ri, si: ((ko * r + ri) * s + si) * cg + cj
        yi = lambda b, ko, pi, qi: ((b * p + pi) * q + qi) * k + ko
        shape = (n, p, q, k)
    else:
        xi = lambda b, ci, hi, wi: ((b * c + ci) * h + hi) * w + wi
        wi_ = lambda ko, cj, ri, si: ((ko * cg + cj) * r + ri) * s + si
        yi = lambda b, ko, pi, qi: ((b * k + ko) * p + pi) * q + qi
        shape = (n, k, p, q)
    y, mag = [0.0] * (n * k * p * q), [0.0] * (n * k * p * q)
    for b in range(n):
        for ko in range(k):
            grp = ko // kg
            for pi in range(p):
                for qi in range(q):
                    acc = bias[ko] if bias else 0.0
                    m = abs(acc)
                    for cj in range(cg):
                        ci = grp * cg + cj
                        for ri in range(r):
                            hi = pi * sh - pt + ri * dh
                            if hi < 0 or hi >= h:
                                continue
                            for si in range(s):
                                wi = qi * sw - pl + si * dw
                                if wi < 0 or wi >= w:
                                    continue
                                t = x[xi(b, ci, hi, wi)] * wt[wi_(ko, cj, ri, si)]
                                acc += t
                                m += abs(t)
                    if case.get("relu"):
                        acc = max(acc, 0.0)
                    acc = ACTIVATIONS[case.get("act", "none")](acc)
                    y[yi(b, ko, pi, qi)] = acc
                    mag[yi(b, ko, pi, qi)] = m
    return shape, y, mag


def flags(case):
    out = []
    if "stride" in case:
        out += ["--stride", "%d,%d" % case["stride"]]
    if "pad" in case:
        pad = case["pad"]
        if len(set(pad)) == 1:
            out += ["--pad", "%d" % pad[0]]
        elif pad[0] == pad[1] and pad[2] == pad[3]:  # (height, width), as PyTorch's
            out += ["--pad", "%d,%d" % (pad[0], pad[2])]
        else:
            out += ["--pad", "%d,%d,%d,%d" % pad]
    if "dilation" in case:
        dil = case["dilation"]
        out += ["--dilation", "%d" % dil[0] if dil[0] == dil[1] else "%d,%d" % dil]
    if "groups" in case:
        out += ["--groups", str(case["groups"])]
    if case.get("relu"):
        out += ["--relu"]
    if "act" in case:
        out += ["--activation", case["act"]]
    if "layout" in case:
        out += ["--layout", case["layout"]]
    return out


# name, sizes and options; "clblast": whether convgemm runs it (else the
# words of its refusal)
CASES = [
    ("3x3 pad 1", dict(n=1, c=3, h=7, w=6, k=4, r=3, s=3, pad=(1, 1, 1, 1)), True),
    ("5x5 stride 2 pad 2, batch 3", dict(n=3, c=2, h=9, w=11, k=3, r=5, s=5,
                                          stride=(2, 2), pad=(2, 2, 2, 2)), True),
    ("1x1", dict(n=2, c=5, h=4, w=3, k=6, r=1, s=1), True),
    ("7x7 stride 2 pad 3", dict(n=1, c=3, h=13, w=12, k=2, r=7, s=7, stride=(2, 2),
                                pad=(3, 3, 3, 3)), True),
    ("dilation 2, stride 2,1", dict(n=1, c=2, h=9, w=8, k=3, r=3, s=3, dilation=(2, 2),
                                    stride=(2, 1), pad=(2, 2, 1, 1)), True),
    ("asymmetric pad 0,2,1,0", dict(n=2, c=3, h=6, w=7, k=2, r=3, s=2,
                                     pad=(0, 2, 1, 0)), "pads each axis"),
    ("groups 2", dict(n=1, c=4, h=5, w=6, k=6, r=3, s=3, pad=(1, 1, 1, 1), groups=2),
     "no groups"),
    ("depthwise, dilation 2", dict(n=2, c=3, h=7, w=7, k=3, r=3, s=3, pad=(2, 2, 2, 2),
                                   dilation=(2, 2), groups=3), "no groups"),
    ("bias and relu", dict(n=1, c=3, h=5, w=5, k=4, r=3, s=3, pad=(1, 1, 1, 1),
                           bias=True, relu=True), "no bias"),
    ("relu", dict(n=1, c=3, h=5, w=5, k=4, r=3, s=3, relu=True), "no activation"),
    ("bias and gelu", dict(n=2, c=3, h=5, w=6, k=4, r=3, s=3, pad=(1, 1, 1, 1),
                           bias=True, act="gelu"), "no bias"),
    ("NHWC tanh", dict(n=1, c=4, h=6, w=5, k=3, r=1, s=1, layout="nhwc", act="tanh"),
     "no activation"),
    ("sigmoid", dict(n=1, c=2, h=7, w=5, k=3, r=3, s=2, stride=(2, 1), act="sigmoid"),
     "no activation"),
    ("NHWC 3x3 stride 2", dict(n=2, c=3, h=7, w=8, k=4, r=3, s=3, stride=(2, 2),
                               pad=(1, 1, 1, 1), layout="nhwc"), "NCHW only"),
    ("NHWC groups 2, bias", dict(n=1, c=4, h=5, w=5, k=2, r=3, s=3, pad=(0, 1, 1, 0),
                                 groups=2, bias=True, layout="nhwc"), "no groups"),
    ("NHWC with one channel in and out", dict(n=2, c=1, h=5, w=6, k=1, r=3, s=2,
                                              layout="nhwc"), True),
    ("float64", dict(n=1, c=2, h=6, w=5, k=3, r=3, s=3, pad=(1, 1, 1, 1),
                     descr="<f8"), True),
    ("float16 input, odd sizes", dict(n=1, c=3, h=5, w=7, k=2, r=3, s=3,
                                      pad=(1, 1, 1, 1), descr="<f2"),
     "cl_khr_fp16|accumulates in half"),
]

# Files larger than KILN_MEMORY_LIMIT: kiln_conv2d_host() runs them in runs of
# images, or of an image's output rows (name, case, limit).
LIMITED = [
    ("4 images of 18 KiB under 48K", dict(n=4, c=3, h=40, w=38, k=4, r=3, s=3,
                                          pad=(1, 1, 1, 1), bias=True), "48K"),
    ("one image of 120 KiB, stride 2, under 64K",
     dict(n=1, c=3, h=160, w=64, k=2, r=5, s=5, stride=(2, 2), pad=(2, 1, 2, 2)), "64K"),
    ("NHWC image of 120 KiB under 64K",
     dict(n=1, c=3, h=160, w=64, k=2, r=3, s=3, stride=(2, 1), pad=(1, 1, 1, 1),
          layout="nhwc", relu=True), "64K"),
]


# Over a device group (--devices all): a batch of 3 over two devices
# (uneven) and a batch of 1 (one device).
GROUP = [
    ("batch 3 over the group, bias", dict(n=3, c=2, h=9, w=11, k=3, r=3, s=3,
                                          stride=(2, 1), pad=(1, 1, 1, 1), bias=True)),
    ("batch 1 over the group, NHWC", dict(n=1, c=3, h=7, w=6, k=2, r=3, s=2,
                                          layout="nhwc", act="tanh")),
]


def run(*args, expect=0):
    return run_op(KILN, "conv2d", args, expect)


def run_limited(limit, args):
    """`kiln run conv2d ARGS` under KILN_MEMORY_LIMIT=limit; exits on failure."""
    r = subprocess.run([KILN, "run", "conv2d", *args], capture_output=True, text=True,
                       env=dict(os.environ, KILN_MEMORY_LIMIT=limit))
    if r.returncode != 0:
        raise SystemExit("FAIL: kiln run conv2d %s under KILN_MEMORY_LIMIT=%s: exit %d\n%s"
                         % (" ".join(args), limit, r.returncode, r.stderr))
    return r


def tolerance(descr):
    return {"<f8": 1e-12, "<f4": 1e-5, "<f2": 2e-3}[descr]


def one(t, name, case, backend, clblast, limit=None, devices=None):
    """Runs case on backend (under KILN_MEMORY_LIMIT=limit, when given; over
    the device group `devices` selects, when given); returns the failures
    (0 or 1)."""
    p = lambda f: os.path.join(t, f)
    descr = case.get("descr", "<f4")
    nhwc = case.get("layout") == "nhwc"
    n, c, h, w, k, r, s = (case[key] for key in "nchwkrs")
    cg = c // case.get("groups", 1)
    xs = (n, h, w, c) if nhwc else (n, c, h, w)
    ws = (k, r, s, cg) if nhwc else (k, cg, r, s)
    x = as_stored([((i * 37) % 19 - 9) / 8 for i in range(count(xs))], descr)
    wt = as_stored([((i * 53) % 23 - 11) / 16 for i in range(count(ws))], descr)
    bias = as_stored([(i % 5 - 2) / 4 for i in range(k)], descr) if case.get("bias") else None
    save(p("x.npy"), xs, x, descr=descr)
    save(p("w.npy"), ws, wt, descr="<f4" if descr == "<f2" else descr)
    args = [p("x.npy"), p("w.npy"), "-o", p("y.npy"), "--backend", backend] + flags(case)
    if bias:
        save(p("b.npy"), (k,), bias, descr=descr)
        args += ["--bias", p("b.npy")]
    if devices:
        args += ["--devices", devices]
    if os.path.exists(p("y.npy")):
        os.remove(p("y.npy"))
    label = "%s [%s]" % (name, backend)
    if backend == "clblast" and clblast is not True:
        r = run(*args, expect=1)
        words = clblast.split("|")
        if (not any(wd in r.stderr for wd in words) or r.stderr.count("\n") != 1
                or os.path.exists(p("y.npy"))):
            print("FAIL: %s: expected a one-line refusal with %r, got %r" % (
                label, clblast, r.stderr))
            return 1
        print("ok: %s refused: %s" % (label, r.stderr.strip().split(": ")[-1]))
        return 0
    r = run_limited(limit, args) if limit else run(*args)
    got_descr, shape, got = load(p("y.npy"))
    want_shape, want, mag = conv_ref(x, wt, bias, case)
    tol = tolerance(descr)
    bad = [i for i in range(len(want))
           if abs(got[i] - want[i]) > tol * (mag[i] + 1)]
    if shape != want_shape or got_descr != descr or bad:
        print("FAIL: %s: shape %s (expected %s), dtype %s, %d wrong, first %s" % (
            label, shape, want_shape, got_descr, len(bad),
            [(i, got[i], want[i]) for i in bad[:3]]))
        return 1
    for word in ("device", "backend", "GFLOP/s"):
        if word not in r.stdout:
            print("FAIL: %s: no %s in the output:\n%s" % (label, word, r.stdout))
            return 1
    problem = devices and group_problem(r.stdout, units=n)
    if problem:
        print("FAIL: %s: %s" % (label, problem))
        return 1
    print("ok: %s" % label)
    return 0


def errors(t):
    """Each error: one line on stderr, exit 1 (2 for usage), no file."""
    p = lambda f: os.path.join(t, f)
    if os.path.exists(p("y.npy")):  # the cases' last output
        os.remove(p("y.npy"))
    save(p("x.npy"), (1, 4, 5, 5), [0.5] * 100)
    save(p("w.npy"), (2, 4, 3, 3), [0.25] * 72)
    save(p("w3.npy"), (2, 3, 3, 3), [0.25] * 54)
    save(p("big.npy"), (2, 4, 7, 7), [0.25] * 392)
    save(p("x3.npy"), (4, 5, 5), [0.5] * 100)
    save(p("xi.npy"), (1, 4, 5, 5), [1] * 100, descr="<i4")
    save(p("b3.npy"), (3,), [0.0] * 3)
    base = [p("x.npy"), p("w.npy"), "-o", p("y.npy")]
    failures = 0
    # a usage error (the parser's) exits 2, a failure 1
    for args, words, code in [
        ([p("x.npy"), p("w3.npy"), "-o", p("y.npy")], "expected 4", 1),   # channels
        (base + ["--groups", "3"], "groups do not divide", 1),             # groups
        ([p("x.npy"), p("w.npy"), "-o", p("y.npy"), "--groups", "2"], "expected 2", 1),
        ([p("x.npy"), p("big.npy"), "-o", p("y.npy")], "no rows or columns", 1),
        ([p("x3.npy"), p("w.npy"), "-o", p("y.npy")], "expected 4, (n, c, h, w)", 1),
        ([p("xi.npy"), p("w.npy"), "-o", p("y.npy")], "X holds int32", 1),
        (base + ["--bias", p("b3.npy")], "shape (2,)", 1),
        (base + ["--pad", "1,2,3"], "--pad '1,2,3'", 2),
        (base + ["--stride", "0"], "--stride '0'", 2),
        (base + ["--dilation", "1,2,3"], "--dilation '1,2,3'", 2),
        (base + ["--layout", "chwn"], "--layout 'chwn'", 2),
        (base + ["--backend", "kiln"], "--backend auto|im2col|direct|clblast:", 2),
        (base + ["--winograd"], "unknown option", 2),
        ([p("x.npy"), p("nope.npy"), "-o", p("y.npy")], "nope.npy", 1),
        (base + ["--groups"], "--groups needs a value", 2),
        (base + ["--devices", "nope:9"], "'nope:9' is not a device selector", 1),
        ([p("x.npy"), p("w.npy")], "usage: kiln run conv2d", 2),
    ]:
        r = run(*args, expect=code)
        one_line = r.stderr.count("\n") == 1 or words.startswith("usage")
        if words not in r.stderr or not one_line or os.path.exists(p("y.npy")):
            failures += 1
            print("FAIL: %s: %r" % (" ".join(args[2:]), r.stderr))
        else:
            print("ok: refused %s" % words)
    return failures


def main():
    failures = 0
    backends = ["auto", "im2col", "direct"] + (["clblast"] if HAVE_CLBLAST else [])
    with tempfile.TemporaryDirectory() as t:
        for name, case, clblast in CASES:
            for backend in backends:
                failures += one(t, name, case, backend, clblast)
        for name, case, limit in LIMITED:
            for backend in ("auto", "direct"):
                failures += one(t, name + " (KILN_MEMORY_LIMIT)", case, backend, True,
                                limit)
        for name, case in GROUP:
            for backend in ("auto", "direct"):
                failures += one(t, name, case, backend, True, devices="all")
        failures += errors(t)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
