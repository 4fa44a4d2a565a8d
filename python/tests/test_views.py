"""Views of device arrays by indexing (kiln_buffer_view): the contiguous
ranges numpy's basic indexing gives, against numpy, chained operations on
them, writes through them, and the indexing that needs a copy refused."""
import gc

import numpy as np
import pytest

import kiln

DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int32,
          np.int64]
KEYS = [0, -1, 3, slice(None), slice(1, 4), slice(-3, None), slice(5, 2), slice(2, 100),
        (2, slice(1, 6)), (-1, 0), (1, 2, slice(None)), (Ellipsis,), (0, Ellipsis),
        (slice(0, 2), Ellipsis), (Ellipsis, slice(None), slice(None)), (4, 6, 1), ()]


def sample(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape) * 10
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_views_as_numpy(rt, dtype):
    x = sample((5, 7, 3), dtype)
    d = rt.array(x)
    for key in KEYS:
        v = d[key]
        want = x[key]
        assert isinstance(v, kiln.DeviceArray)
        assert v.shape == want.shape and v.dtype == want.dtype, key
        np.testing.assert_array_equal(v.numpy(), want)
        assert v.base is (d if want.size else None)


def test_one_dimensional_ranges_and_views_of_views(rt):
    x = np.arange(1001, dtype=np.int32)
    d = rt.array(x)
    for a, b in [(0, 1), (1, 1000), (333, 334), (999, 1001), (-7, -2)]:
        np.testing.assert_array_equal(d[a:b].numpy(), x[a:b])
    w = d[100:900][50:60][3:]
    np.testing.assert_array_equal(w.numpy(), x[100:900][50:60][3:])
    assert w.base is d
    assert int(d[17].numpy()) == 17 and d[17].shape == ()
    del d
    gc.collect()
    np.testing.assert_array_equal(w.numpy(), x[153:160])  # the view keeps its base


def test_chained_operations_on_views(rt):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (9, 33, 17)).astype(np.float32)
    b = rng.uniform(-1, 1, (17, 5)).astype(np.float32)
    d = rt.array(x)
    prod = rt.gemm(d[4], b)                       # a view at an odd offset in
    assert isinstance(prod, kiln.DeviceArray)
    np.testing.assert_allclose(prod.numpy(), x[4].astype(np.float64) @ b, atol=1e-4)
    s = rt.reduce(prod[3:20], "sum", axis=0)      # a view of a result
    np.testing.assert_allclose(s.numpy(), (x[4].astype(np.float64) @ b)[3:20].sum(0),
                               atol=1e-3)
    m = rt.reduce(d[2, 5:], "max", axis=1)
    np.testing.assert_array_equal(m.numpy(), x[2, 5:].max(axis=1))
    assert int(rt.reduce(d[7, 1:], "argmin").numpy()) == x[7, 1:].argmin()


def test_writes_through_views(rt):
    x = np.arange(60, dtype=np.float32).reshape(6, 10)
    d = rt.array(x)
    v = d[2:4]
    v[0] = 5                              # a scalar, broadcast as numpy does
    d[3, 2:5] = [1.5, 2.5, 3.5]
    d[5] = rt.array(np.full(10, -1, np.float32))
    d[0:1] = np.ones((1, 10), np.float64)  # cast as numpy assigns
    want = x.copy()
    want[2] = 5
    want[3, 2:5] = [1.5, 2.5, 3.5]
    want[5] = -1
    want[0] = 1
    np.testing.assert_array_equal(d.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), want[2:4])  # the view sees it
    d[1:1] = np.zeros((0, 10), np.float32)  # nothing to write


def test_refused_indexing(rt):
    d = rt.array(np.zeros((4, 6, 2), np.float32))
    for key in [(slice(None), 1), slice(None, None, 2), (slice(1, 3), slice(0, 2)),
                (0, slice(None, None, -1)), [0, 1], None, "a", 1.5]:
        with pytest.raises(ValueError, match="one contiguous range") as e:
            d[key]
        assert isinstance(e.value, kiln.InvalidArgumentError)
    for key in [4, -5, (0, 6), (0, 0, 0, 0)]:
        with pytest.raises(IndexError):
            d[key]
    with pytest.raises(ValueError, match="same"):
        d[0] = rt.array(np.zeros((6, 3), np.float32))
    with pytest.raises(ValueError):
        d[0] = np.zeros((5,), np.float32)  # numpy cannot broadcast it
    with pytest.raises(TypeError):
        del d[0]
    with pytest.raises(TypeError):
        len(rt.array(np.float32(1)))
    assert len(d) == 4


def test_views_freed(rt):
    gc.collect()
    start = rt.memory_stats()
    d = rt.array(np.ones((100, 100), np.float32))
    held = rt.memory_stats()["current_bytes"]
    views = [d[i] for i in range(100)]
    assert rt.memory_stats()["current_bytes"] == held  # views hold no memory
    del d
    gc.collect()
    assert rt.memory_stats()["live_buffers"] > start["live_buffers"]
    del views
    gc.collect()
    assert rt.memory_stats()["live_buffers"] == start["live_buffers"]
