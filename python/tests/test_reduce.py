"""rt.reduce against numpy: every op, dtype and axis; NaN and empty rules."""
import numpy as np
import pytest

import kiln

OPS = {"sum": np.sum, "mean": np.mean, "min": np.min, "max": np.max,
       "argmin": np.argmin, "argmax": np.argmax,
       "norm": lambda x, axis=None: np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axis))}
SHAPES = [(1,), (1000,), (3, 5), (7, 1, 9), (2, 3, 4, 5)]


def dtypes(rt):
    return [np.float16, np.float32, np.int32] + ([np.float64] if rt.device["has_fp64"] else [])


def needs_fp64(rt, op, dtype):
    """int32's mean and norm are float64, which a device without fp64
    refuses (kiln.UnsupportedError)."""
    return dtype == np.int32 and op in ("mean", "norm") and not rt.device["has_fp64"]


def sample(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.int32:
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    return rng.uniform(-10, 10, shape).astype(dtype)


def check(got, want, op, dtype, n):
    got = np.asarray(got)
    if op in ("argmin", "argmax", "min", "max") or dtype == np.int32 and op == "sum":
        np.testing.assert_array_equal(got, want)
        return
    eps = {np.float16: 1e-3, np.float32: 1e-5, np.float64: 1e-12, np.int32: 1e-12}[dtype]
    np.testing.assert_allclose(got, np.asarray(want, np.float64), rtol=eps * 10,
                               atol=eps * 10 * n)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("shape", SHAPES)
def test_reduce_numpy(rt, op, shape):
    for i, dtype in enumerate(dtypes(rt)):
        x = sample(shape, dtype, i + len(shape))
        axes = [None] + list(range(len(shape))) + [-1]
        for axis in axes:
            if needs_fp64(rt, op, dtype):
                with pytest.raises(kiln.UnsupportedError, match="fp64"):
                    rt.reduce(x, op, axis=axis)
                continue
            got = rt.reduce(x, op, axis=axis)
            # numpy's rules for what it takes: argmin of int32 is int64 ...
            want = OPS[op](x.astype(np.float64) if dtype == np.float16 else x, axis=axis)
            n = x.size if axis is None else x.shape[axis]
            check(got, want, op, dtype, n)
            if axis is None:
                assert np.ndim(got) == 0
            else:
                assert np.shape(got) == np.shape(want)


def test_reduce_dtypes_as_numpy(rt):
    x = np.arange(10, dtype=np.int32)
    assert rt.reduce(x).dtype == np.int64  # exact, as numpy's sum
    if not needs_fp64(rt, "mean", np.int32):
        assert rt.reduce(x, "mean").dtype == np.float64
    assert rt.reduce(x, "argmax").dtype == np.int64
    assert rt.reduce(x, "max").dtype == np.int32
    assert rt.reduce(x.astype(np.float32), "sum").dtype == np.float32


def test_reduce_device(rt):
    x = sample((6, 50), np.float32, 7)
    d = rt.array(x)
    got = rt.reduce(d, "sum", axis=1)
    assert isinstance(got, kiln.DeviceArray) and got.shape == (6,)
    check(got.numpy(), x.sum(axis=1), "sum", np.float32, 50)
    s = rt.reduce(d, "argmin")
    assert isinstance(s, kiln.DeviceArray) and s.shape == ()
    assert int(s.numpy()) == x.argmin()


def test_nan_rules(rt):
    x = np.array([1.0, np.nan, -3.0, np.nan], np.float32)
    for op in ("sum", "mean", "min", "max"):
        assert np.isnan(rt.reduce(x, op))
    assert rt.reduce(x, "argmin") == 1 and rt.reduce(x, "argmax") == 1


def test_empty(rt):
    e = np.zeros((0,), np.float32)
    assert rt.reduce(e, "sum") == 0
    with pytest.warns(RuntimeWarning):
        want = np.mean(e)
    assert np.isnan(rt.reduce(e, "mean")) and np.isnan(want)
    for op in ("min", "max", "argmin", "argmax"):
        with pytest.raises(ValueError):
            rt.reduce(e, op)
    np.testing.assert_array_equal(rt.reduce(np.zeros((3, 0), np.float32), "sum", axis=1),
                                  np.zeros(3))


def test_reduce_errors(rt):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(np.AxisError):
        rt.reduce(x, axis=2)
    with pytest.raises(np.AxisError):
        rt.reduce(x, axis=-3)
    with pytest.raises(TypeError, match="argmin"):
        rt.reduce(x, "argmin", axis=(0, 1))
    with pytest.raises(ValueError, match="duplicate"):
        rt.reduce(x, axis=(1, -1))
    with pytest.raises(np.AxisError):
        rt.reduce(x, axis=(0, 2))
    with pytest.raises(TypeError):
        rt.reduce(x, axis=1.0)
    with pytest.raises(kiln.UnsupportedError):
        rt.reduce(x, axis=())
    with pytest.raises(ValueError, match="not one of"):
        rt.reduce(x, "median")
    with pytest.raises(kiln.InvalidDtypeError):
        rt.reduce(x.astype(np.complex64))
    with pytest.raises(kiln.InvalidDtypeError):
        rt.reduce(np.ones(3, np.uint8))
    assert rt.reduce(x) == 12  # usable after


TUPLES = [(0, 1), (1, 2), (2, 3), (0, 2), (0, 3), (1, 3), (0, 1, 3), (-1, 0), (0, 1, 2, 3),
          (1,)]


@pytest.mark.parametrize("op", ["sum", "mean", "min", "max", "norm"])
def test_reduce_tuple_axes_and_keepdims(rt, op):
    for i, dtype in enumerate(dtypes(rt)):
        x = sample((3, 4, 5, 6), dtype, 40 + i)
        for axes in TUPLES:
            for keepdims in (False, True):
                if needs_fp64(rt, op, dtype):
                    with pytest.raises(kiln.UnsupportedError):
                        rt.reduce(x, op, axis=axes, keepdims=keepdims)
                    continue
                norm = [a % 4 for a in axes]
                adjacent = max(norm) - min(norm) == len(norm) - 1
                if dtype == np.int32 and op == "sum" and not adjacent:
                    with pytest.raises(kiln.UnsupportedError, match="adjacent"):
                        rt.reduce(x, op, axis=axes, keepdims=keepdims)
                    continue
                got = rt.reduce(x, op, axis=axes, keepdims=keepdims)
                ref = x.astype(np.float64) if dtype == np.float16 else x
                if op == "norm":
                    want = np.sqrt(np.sum(ref.astype(np.float64) ** 2, axis=axes,
                                          keepdims=keepdims))
                else:
                    want = OPS[op](ref, axis=axes, keepdims=keepdims)
                assert np.shape(got) == np.shape(want), (axes, keepdims)
                n = int(np.prod([x.shape[a] for a in axes]))
                check(got, want, op, dtype, n)


def test_keepdims_none_and_device(rt):
    x = sample((4, 7), np.float32, 3)
    got = rt.reduce(x, "max", keepdims=True)
    assert isinstance(got, np.ndarray) and got.shape == (1, 1)
    assert got[0, 0] == x.max()
    d = rt.array(x)
    k = rt.reduce(d, "sum", axis=1, keepdims=True)
    assert isinstance(k, kiln.DeviceArray) and k.shape == (4, 1)
    check(k.numpy(), x.sum(axis=1, keepdims=True), "sum", np.float32, 7)
    a = rt.reduce(d, "argmax", axis=0, keepdims=True)
    assert a.shape == (1, 7)
    np.testing.assert_array_equal(a.numpy(), x.argmax(axis=0)[None])
    t = rt.reduce(rt.array(sample((3, 4, 5), np.float32, 9)), "min", axis=(0, 2))
    assert isinstance(t, kiln.DeviceArray) and t.shape == (4,)
    np.testing.assert_array_equal(t.numpy(), sample((3, 4, 5), np.float32, 9).min(axis=(0, 2)))


def test_out(rt):
    x = sample((5, 6, 3), np.float32, 11)
    out = np.empty((5, 3), np.float32)
    r = rt.reduce(x, "sum", axis=1, out=out)
    assert r is out
    check(out, x.sum(axis=1), "sum", np.float32, 6)
    out = np.empty((1, 6, 1), np.float32)
    assert rt.reduce(x, "max", axis=(0, 2), keepdims=True, out=out) is out
    np.testing.assert_array_equal(out, x.max(axis=(0, 2), keepdims=True))
    idx = np.empty((), np.int64)
    assert rt.reduce(x, "argmin", out=idx) is idx and idx == x.argmin()
    d = rt.array(x)
    big = rt.array(np.zeros((4, 5, 3), np.float32))
    dv = big[2]                                   # a view as out
    assert rt.reduce(d, "mean", axis=1, out=dv) is dv
    check(big.numpy()[2], x.mean(axis=1), "mean", np.float32, 6)
    np.testing.assert_array_equal(big.numpy()[[0, 1, 3]], 0)
    do = rt.array(np.zeros(6, np.float32))
    assert rt.reduce(d, "min", axis=(0, 2), out=do) is do
    np.testing.assert_array_equal(do.numpy(), x.min(axis=(0, 2)))
    for bad in [np.empty((5, 3), np.float64), np.empty((3, 5), np.float32),
                np.empty((5, 3), np.float32)[:, :2], np.empty((6, 5), np.float32).T[:5, :3],
                d, [0.0] * 15]:
        with pytest.raises(ValueError, match="out"):
            rt.reduce(x, "sum", axis=1, out=bad)
    with pytest.raises(ValueError, match="out"):
        rt.reduce(d, "sum", axis=1, out=np.empty((5, 3), np.float32))
    with pytest.raises(ValueError, match="out"):
        rt.reduce(d, "sum", axis=1, out=rt.array(np.empty((5, 3), np.int32)))


def test_nan_rules_over_axes(rt):
    x = sample((3, 4, 5), np.float32, 2)
    x[1, 2, 3] = np.nan
    for op in ("sum", "mean", "min", "max", "norm"):
        got = np.asarray(rt.reduce(x, op, axis=(0, 2)))
        assert np.isnan(got[2]) and not np.isnan(np.delete(got, 2)).any()
    arg = rt.reduce(x, "argmax", axis=1)
    assert arg[1, 3] == 2  # the NaN's index
