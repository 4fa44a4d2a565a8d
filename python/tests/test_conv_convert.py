"""rt.conv2d against a numpy convolution in float64 (NCHW and NHWC,
strides, padding, dilation, groups, bias, activations), and rt.convert /
DeviceArray.astype against numpy's astype."""
import math

import numpy as np
import pytest

import kiln

ACTS = {None: lambda y: y, "relu": lambda y: np.maximum(y, 0),
        "sigmoid": lambda y: 1 / (1 + np.exp(-y)), "tanh": np.tanh,
        "gelu": lambda y: y / 2 * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))}


def conv_ref(x, w, b, stride, pad, dil, groups):
    """Cross-correlation in float64, NCHW; pad = (top, bottom, left, right)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pad[:2], pad[2:]))
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    p = (h - dil[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd - dil[1] * (s - 1) - 1) // stride[1] + 1
    y = np.zeros((n, k, p, q))
    kg = k // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * kg:(g + 1) * kg].astype(np.float64)
        for i in range(r):
            for j in range(s):
                patch = xs[:, :, i * dil[0]:i * dil[0] + stride[0] * (p - 1) + 1:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * (q - 1) + 1:stride[1]]
                y[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, ws[:, :, i, j])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def dtypes(rt):
    return [np.float16, np.float32] + ([np.float64] if rt.device["has_fp64"] else [])


def atol(dtype, terms):
    return {np.float16: 2e-2, np.float32: 1e-4, np.float64: 1e-10}[dtype] * max(1, terms) ** .5


CASES = [  # (n, c, h, w, k, r, s, stride, padding, dilation, groups)
    (1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1),
    (2, 3, 7, 5, 4, 3, 3, 1, 1, 1, 1),
    (1, 4, 9, 11, 6, 3, 2, (2, 1), (1, 0), 1, 2),
    (3, 2, 8, 8, 2, 3, 3, 2, (1, 2, 0, 1), (2, 1), 2),  # depthwise
    (1, 5, 6, 7, 3, 1, 1, 1, 0, 1, 1),
]


def four(pad):
    if isinstance(pad, int):
        return (pad,) * 4
    return (pad[0], pad[0], pad[1], pad[1]) if len(pad) == 2 else tuple(pad)


def two(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("case", CASES)
def test_conv2d_numpy(rt, case):
    n, c, h, w, k, r, s, stride, pad, dil, groups = case
    rng = np.random.default_rng(sum(case[:7]))
    for dtype in dtypes(rt):
        x = rng.uniform(-1, 1, (n, c, h, w)).astype(dtype)
        wt = rng.uniform(-1, 1, (k, c // groups, r, s)).astype(dtype)
        b = rng.uniform(-1, 1, k).astype(dtype)
        want = conv_ref(x, wt, b, two(stride), four(pad), two(dil), groups)
        got = rt.conv2d(x, wt, b, stride=stride, padding=pad, dilation=dil, groups=groups)
        assert isinstance(got, np.ndarray) and got.dtype == dtype
        np.testing.assert_allclose(got, want, atol=atol(dtype, c // groups * r * s), rtol=0)
        got = rt.conv2d(x, wt, stride=stride, padding=pad, dilation=dil, groups=groups)
        np.testing.assert_allclose(got, want - b.astype(np.float64)[None, :, None, None],
                                   atol=atol(dtype, c // groups * r * s), rtol=0)


def test_conv2d_activations_nhwc_and_device(rt):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 3, 6, 5)).astype(np.float32)
    wt = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    base = conv_ref(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    for act, f in ACTS.items():
        got = rt.conv2d(x, wt, b, padding=1, activation=act)
        np.testing.assert_allclose(got, f(base), atol=1e-4, rtol=0)
    nhwc = rt.conv2d(x.transpose(0, 2, 3, 1), wt.transpose(0, 2, 3, 1), b, padding=1,
                     layout="NHWC")
    np.testing.assert_allclose(nhwc, base.transpose(0, 2, 3, 1), atol=1e-4, rtol=0)
    dx = rt.array(x)
    got = rt.conv2d(dx, wt, b, padding=1, activation="relu")  # numpy weights copied
    assert isinstance(got, kiln.DeviceArray) and got.shape == (2, 4, 6, 5)
    np.testing.assert_allclose(got.numpy(), np.maximum(base, 0), atol=1e-4, rtol=0)
    one = rt.conv2d(dx[1:], rt.array(wt), padding=1)  # a view in
    np.testing.assert_allclose(one.numpy(), base[1:] - b[None, :, None, None], atol=1e-4)


def test_conv2d_errors(rt):
    x = np.ones((1, 4, 5, 5), np.float32)
    w = np.ones((2, 4, 3, 3), np.float32)
    for kwargs, err, match in [
        (dict(groups=3), ValueError, "channels"),
        (dict(stride=0), ValueError, "at least 1"),
        (dict(padding=(1, 2, 3)), ValueError, "padding"),
        (dict(padding=-1), ValueError, "padding"),
        (dict(dilation="a"), ValueError, "dilation"),
        (dict(activation="swish"), ValueError, "swish"),
        (dict(layout="CHWN"), ValueError, "layout"),
    ]:
        with pytest.raises(err, match=match):
            rt.conv2d(x, w, **kwargs)
    with pytest.raises(ValueError, match="4-D"):
        rt.conv2d(x[0], w)
    with pytest.raises(TypeError):
        rt.conv2d(x, w.astype(np.float16))
    with pytest.raises(TypeError):
        rt.conv2d(x.astype(np.int32), w.astype(np.int32))
    with pytest.raises(ValueError, match="bias"):
        rt.conv2d(x, w, np.ones(3, np.float32))
    with pytest.raises(kiln.InvalidArgumentError):
        rt.conv2d(np.ones((1, 4, 2, 2), np.float32), w)  # filter larger than input
    np.testing.assert_allclose(rt.conv2d(x, w), np.full((1, 2, 3, 3), 36.0))


CONVERT = [np.float16, np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("src", CONVERT)
def test_convert(rt, src):
    fp64 = rt.device["has_fp64"]
    rng = np.random.default_rng(1)
    x = (rng.uniform(-1000, 1000, (3, 7, 5))).astype(src)
    for dst in CONVERT:
        if not fp64 and np.float64 in (src, dst):
            with pytest.raises(kiln.UnsupportedError):
                rt.convert(x, dst)
            continue
        got = rt.convert(x, dst)
        assert isinstance(got, np.ndarray) and got.dtype == dst and got.shape == x.shape
        np.testing.assert_array_equal(got, x.astype(dst))  # round to nearest, truncate
        d = rt.array(x)
        dd = d.astype(dst)
        assert isinstance(dd, kiln.DeviceArray) and dd.dtype == dst
        np.testing.assert_array_equal(dd.numpy(), x.astype(dst))
        np.testing.assert_array_equal(rt.convert(d[1], np.dtype(dst)).numpy(), x[1].astype(dst))


def test_convert_rules_and_errors(rt):
    x = np.array([np.nan, 1e10, -1e10, 2.5, -2.5, 65520.0], np.float32)
    np.testing.assert_array_equal(rt.convert(x, np.int32),
                                  [0, 2**31 - 1, -2**31, 2, -2, 65520])  # saturate, NaN 0
    with np.errstate(over="ignore"):
        half = x.astype(np.float16)  # 65520 rounds to inf, as numpy's
    np.testing.assert_array_equal(rt.convert(x, np.float16), half)
    assert rt.convert(np.zeros((0, 3), np.int32), np.float32).shape == (0, 3)
    with pytest.raises(kiln.InvalidDtypeError):
        rt.convert(x, np.complex64)
    with pytest.raises(kiln.InvalidDtypeError):
        rt.convert(x.astype(np.complex64), np.float32)
    with pytest.raises(TypeError):
        rt.convert(x, np.uint8)
    with pytest.raises(TypeError):
        rt.convert(x, "no such type")
