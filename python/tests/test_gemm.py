"""rt.gemm against numpy's matmul in float64."""
import numpy as np
import pytest

import kiln
from conftest import float_dtypes, tol

SIZES = [(1, 1, 1), (2, 3, 4), (17, 33, 5), (64, 64, 64), (70, 1, 129), (1, 100, 3)]


def ref(a, b, alpha=1.0, beta=0.0, c=None, ta=False, tb=False):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    r = alpha * ((a64.T if ta else a64) @ (b64.T if tb else b64))
    return r + beta * c.astype(np.float64) if c is not None else r


def check(got, want, dtype, k):
    assert got.dtype == dtype and got.shape == want.shape
    scale = np.abs(want).max() if want.size else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0,
                               atol=tol(dtype, k) * max(scale, 1.0))


@pytest.mark.parametrize("m,n,k", SIZES)
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm_numpy(rt, m, n, k, ta, tb):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    for dtype in float_dtypes(rt):
        a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(dtype)
        b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(dtype)
        got = rt.gemm(a, b, trans_a=ta, trans_b=tb)
        assert isinstance(got, np.ndarray)
        check(got, ref(a, b, ta=ta, tb=tb), dtype, k)


def test_gemm_alpha_beta_c(rt):
    rng = np.random.default_rng(1)
    for dtype in float_dtypes(rt):
        a, b = rng.uniform(-1, 1, (9, 13)).astype(dtype), rng.uniform(-1, 1, (13, 6)).astype(dtype)
        c = rng.uniform(-1, 1, (9, 6)).astype(dtype)
        c0 = c.copy()
        got = rt.gemm(a, b, alpha=0.5, beta=-2.0, c=c)
        check(got, ref(a, b, 0.5, -2.0, c), dtype, 13)
        np.testing.assert_array_equal(c, c0)  # c is an input, not written


def test_gemm_device_and_mixed(rt):
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (31, 17)).astype(np.float32), rng.uniform(-1, 1, (17, 12)).astype(np.float32)
    c = rng.uniform(-1, 1, (31, 12)).astype(np.float32)
    da, db, dc = rt.array(a), rt.array(b), rt.array(c)
    for args in ((da, db), (da, b), (a, db)):
        got = rt.gemm(*args)
        assert isinstance(got, kiln.DeviceArray)
        check(got.numpy(), ref(a, b), np.float32, 17)
    got = rt.gemm(a, b, c=dc, beta=1.0)
    assert isinstance(got, kiln.DeviceArray)
    check(got.numpy(), ref(a, b, 1.0, 1.0, c), np.float32, 17)
    np.testing.assert_array_equal(dc.numpy(), c)
    # chained on the device: (a @ b) @ b.T
    chained = rt.gemm(rt.gemm(da, db), db, trans_b=True)
    check(chained.numpy(), ref(ref(a, b), b, tb=True), np.float32, 17 * 12)


def test_gemm_non_contiguous_inputs(rt):
    rng = np.random.default_rng(3)
    big = rng.uniform(-1, 1, (40, 40)).astype(np.float32)
    a, b = big[::2, 1::3], big.T[:13, :9]
    check(rt.gemm(a, b), ref(a, b), np.float32, 13)


def test_gemm_empty(rt):
    z = rt.gemm(np.ones((0, 3), np.float32), np.ones((3, 4), np.float32))
    assert z.shape == (0, 4)
    z = rt.gemm(np.ones((2, 0), np.float32), np.ones((0, 4), np.float32))
    np.testing.assert_array_equal(z, np.zeros((2, 4)))
    c = np.full((2, 4), 3, np.float32)
    z = rt.gemm(np.ones((2, 0), np.float32), np.ones((0, 4), np.float32), beta=2.0, c=c)
    np.testing.assert_array_equal(z, 2 * c)
    assert z.dtype == np.float32


def test_gemm_errors(rt):
    f = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="op\\(a\\)'s columns") as e:
        rt.gemm(f, f)
    assert isinstance(e.value, kiln.InvalidArgumentError)
    with pytest.raises(kiln.InvalidDtypeError):
        rt.gemm(f, np.ones((4, 2), np.float64))
    with pytest.raises(TypeError):
        rt.gemm(np.ones((3, 4), np.int32), np.ones((4, 2), np.int32))
    with pytest.raises(ValueError, match="2-D"):
        rt.gemm(np.ones(4, np.float32), f)
    with pytest.raises(ValueError, match="c must be"):
        rt.gemm(f, f, trans_b=True, c=np.ones((3, 4), np.float32))
    with pytest.raises(TypeError):
        rt.gemm(f, f.T, 2.0)  # alpha is keyword-only
    rt.gemm(f, f.T)  # usable after


ACTS = {None: lambda y: y, "relu": lambda y: np.maximum(y, 0),
        "sigmoid": lambda y: 1 / (1 + np.exp(-y)), "tanh": np.tanh,
        "gelu": lambda y: y / 2 * (1 + np.vectorize(__import__("math").erf)(y / 2 ** .5))}


def bref(a, b, ta=False, tb=False):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (np.swapaxes(a64, -1, -2) if ta else a64) @ (np.swapaxes(b64, -1, -2) if tb else b64)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batched(rt, ta, tb):
    rng = np.random.default_rng(7)
    bt, m, n, k = 5, 9, 6, 13
    for dtype in float_dtypes(rt):
        a3 = rng.uniform(-1, 1, (bt, k, m) if ta else (bt, m, k)).astype(dtype)
        b3 = rng.uniform(-1, 1, (bt, n, k) if tb else (bt, k, n)).astype(dtype)
        a2, b2 = a3[1], b3[2]
        c = rng.uniform(-1, 1, (bt, m, n)).astype(dtype)
        for x, y in [(a3, b3), (a3, b2), (a2, b3)]:
            got = rt.gemm(x, y, trans_a=ta, trans_b=tb)
            assert got.shape == (bt, m, n)
            check(got, bref(x, y, ta, tb), dtype, k)
            got = rt.gemm(x, y, trans_a=ta, trans_b=tb, alpha=2.0, beta=0.5, c=c)
            check(got, 2 * bref(x, y, ta, tb) + 0.5 * c.astype(np.float64), dtype, k)
        d = rt.gemm(rt.array(a3), b2, trans_a=ta, trans_b=tb)  # on the device
        assert isinstance(d, kiln.DeviceArray) and d.shape == (bt, m, n)
        check(d.numpy(), bref(a3, b2, ta, tb), dtype, k)
    empty = rt.gemm(np.zeros((0, 3, 4), np.float32), np.zeros((0, 4, 2), np.float32))
    assert empty.shape == (0, 3, 2)


def test_bias_and_activation(rt):
    rng = np.random.default_rng(8)
    m, n, k, bt = 7, 11, 5, 3
    for dtype in float_dtypes(rt):
        a = rng.uniform(-1, 1, (m, k)).astype(dtype)
        b = rng.uniform(-1, 1, (k, n)).astype(dtype)
        p = bref(a, b)
        for bias in [rng.uniform(-1, 1, n), rng.uniform(-1, 1, (1, n)),
                     rng.uniform(-1, 1, (m, 1))]:
            bias = bias.astype(dtype)
            for act, f in ACTS.items():
                got = rt.gemm(a, b, bias=bias, activation=act)
                check(got, f(p + bias.astype(np.float64)), dtype, k)
        got = rt.gemm(a, b, activation="relu", alpha=-1.0)
        check(got, np.maximum(-p, 0), dtype, k)
        a3 = rng.uniform(-1, 1, (bt, m, k)).astype(dtype)
        p3 = bref(a3, b)
        for bias in [rng.uniform(-1, 1, (bt, n)), rng.uniform(-1, 1, (bt, 1, n)),
                     rng.uniform(-1, 1, (bt, m, 1)), rng.uniform(-1, 1, n),
                     rng.uniform(-1, 1, (m, 1))]:
            bias = bias.astype(dtype)
            want = p3 + (bias[:, None, :] if bias.shape == (bt, n) else bias).astype(np.float64)
            check(rt.gemm(a3, b, bias=bias, activation="tanh"), np.tanh(want), dtype, k)
            b3 = rng.uniform(-1, 1, (bt, k, n)).astype(dtype)
            want = bref(a3, b3) + (bias[:, None, :] if bias.shape == (bt, n) else bias)
            got = rt.gemm(rt.array(a3), rt.array(b3), bias=rt.array(bias))
            check(got.numpy(), want, dtype, k)


def test_batched_and_epilogue_errors(rt):
    a = np.ones((3, 4, 5), np.float32)
    b = np.ones((2, 5, 6), np.float32)
    with pytest.raises(ValueError, match="batch"):
        rt.gemm(a, b)
    with pytest.raises(ValueError, match="2-D"):
        rt.gemm(np.ones((2, 2, 2, 2), np.float32), np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="bias"):
        rt.gemm(a, b[0], bias=np.ones(5, np.float32))
    with pytest.raises(ValueError, match="bias"):
        rt.gemm(a, b[0], bias=np.ones((2, 6), np.float32))
    with pytest.raises(TypeError):
        rt.gemm(a, b[0], bias=np.ones(6, np.float64))
    with pytest.raises(ValueError, match="c must"):
        rt.gemm(a, b[0], c=np.ones((4, 6), np.float32), beta=1.0)
    with pytest.raises(ValueError, match="c must"):
        rt.gemm(a[0], b[0], c=np.float32(1), beta=1.0)
    with pytest.raises(ValueError, match="swish"):
        rt.gemm(a, b[0], activation="swish")
    with pytest.raises(ValueError, match="k = 0"):
        rt.gemm(np.ones((3, 0), np.float32), np.ones((0, 2), np.float32), activation="relu")
    np.testing.assert_array_equal(rt.gemm(a, b[0]), np.full((3, 4, 6), 5.0))
