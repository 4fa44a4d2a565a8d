"""Device arrays: numpy in, numpy out, every dtype and odd shapes."""
import gc

import numpy as np
import pytest

import kiln

DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int32,
          np.int64]
SHAPES = [(), (0,), (1,), (7,), (3, 0, 2), (1, 1), (3, 5, 7), (2,) * 8]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 100
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip(rt, dtype, shape):
    x = sample(shape, dtype)
    d = rt.array(x)
    assert isinstance(d, kiln.DeviceArray)
    assert d.shape == x.shape and d.dtype == x.dtype and d.ndim == x.ndim
    assert d.size == x.size and d.nbytes == x.nbytes and d.runtime is rt
    y = d.numpy()
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(np.asarray(d), x)
    assert "DeviceArray" in repr(d)


def test_non_contiguous_and_foreign_order_are_copied(rt):
    x = sample((6, 10), np.float32)
    for view in (x.T, x[::2, 1::3], x[:, 3], np.asfortranarray(x),
                 x.astype(x.dtype.newbyteorder(">"))):
        np.testing.assert_array_equal(rt.array(view).numpy(), np.ascontiguousarray(view))
    np.testing.assert_array_equal(rt.array([[1.5, 2.5]]).numpy(), [[1.5, 2.5]])


@pytest.mark.parametrize("bad", [np.zeros(3, np.uint8), np.zeros(3, bool),
                                 np.zeros(3, np.int16), np.zeros(3, object),
                                 np.zeros(3, "U3"), np.zeros(3, [("a", np.float32)])])
def test_refused_dtypes(rt, bad):
    with pytest.raises(TypeError, match="kiln has no dtype") as e:
        rt.array(bad)
    assert isinstance(e.value, kiln.InvalidDtypeError)


def test_too_many_dimensions(rt):
    with pytest.raises(ValueError, match="at most 8"):
        rt.array(np.zeros((1,) * 9, np.float32))


def test_copy_of_device_array_is_independent(rt):
    x = sample((5, 3), np.float64 if rt.device["has_fp64"] else np.float32)
    a = rt.array(x)
    b = rt.array(a)
    assert b is not a
    del a
    gc.collect()
    np.testing.assert_array_equal(b.numpy(), x)


def test_arrays_of_another_runtime_are_refused(rt):
    with kiln.Runtime() as other:
        x = other.array(np.ones((2, 2), np.float32))
        with pytest.raises(kiln.WrongRuntimeError):
            rt.gemm(x, np.ones((2, 2), np.float32))
        del x


def test_freed_when_collected(rt):
    start = rt.memory_stats()["live_buffers"]
    xs = [rt.array(np.ones(1000, np.float32)) for _ in range(10)]
    assert rt.memory_stats()["live_buffers"] == start + 10
    del xs
    gc.collect()
    assert rt.memory_stats()["live_buffers"] == start


def test_array_keeps_its_runtime_alive():
    x = kiln.Runtime().array(np.arange(5, dtype=np.int32))  # no other reference
    gc.collect()
    np.testing.assert_array_equal(x.numpy(), np.arange(5))
    assert not x.runtime.closed


def test_memory_stats_and_empty_cache(rt):
    s = rt.memory_stats()
    for key in ("current_bytes", "peak_bytes", "live_buffers", "limit_bytes",
                "cached_bytes", "device_free_bytes", "plan_bytes"):
        assert isinstance(s[key], int)
    x = rt.array(np.ones(1 << 16, np.float32))
    assert rt.memory_stats()["current_bytes"] >= s["current_bytes"] + x.nbytes
    del x
    rt.empty_cache()
    after = rt.memory_stats()
    assert after["cached_bytes"] == 0 and after["trims"] >= s["trims"] + 1
    rt.synchronize()
