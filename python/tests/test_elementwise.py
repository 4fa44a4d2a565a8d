"""Elementwise expressions (kiln_elementwise) against numpy: kinds in and out,
dtypes, scalars, outputs given or allocated, errors."""
import numpy as np
import pytest

import kiln


def dtypes(rt):
    out = [np.float32, np.int32, np.int64]
    if rt.device["has_fp64"]:
        out.append(np.float64)
    return out


def test_numpy_in_numpy_out(rt):
    for dt in dtypes(rt):
        x = (np.arange(37) - 11).astype(dt)
        y = rt.elementwise("y = a * x + b", x=x, a=3, b=-2)
        assert isinstance(y, np.ndarray) and y.dtype == dt and y.shape == x.shape
        np.testing.assert_array_equal(y, 3 * x - 2)


def test_float_scalars_and_builtins(rt):
    x = np.linspace(-2, 2, 101).astype(np.float32).reshape(101)
    y = rt.elementwise("y = max(a * x + b, 0)", x=x, a=np.float32(1.5), b=0.25)
    np.testing.assert_allclose(y, np.maximum(1.5 * x + 0.25, 0), rtol=1e-6)
    a = rt.elementwise("if (x > 0) y = x; else y = -x", x=x)
    np.testing.assert_array_equal(a, np.abs(x))
    z = rt.elementwise("z = exp(x) * c", x=x, c=2.0)
    np.testing.assert_allclose(z, 2 * np.exp(x), rtol=1e-5)


def test_device_in_device_out(rt):
    x = np.arange(3 * 5, dtype=np.float32).reshape(3, 5)
    d = rt.array(x)
    y = rt.elementwise("y = x * x", x=d)
    assert isinstance(y, kiln.DeviceArray) and y.shape == (3, 5) and y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), x * x)
    # a numpy operand beside a device one: copied, and the result stays there
    w = rt.elementwise("w = x + v", x=d, v=np.ones((3, 5), np.float32))
    assert isinstance(w, kiln.DeviceArray)
    np.testing.assert_array_equal(w.numpy(), x + 1)
    # a view as input (kiln_buffer_view)
    v = rt.elementwise("y = 2 * x", x=d[1])
    np.testing.assert_array_equal(v.numpy(), 2 * x[1])


def test_outputs_given_in_place(rt):
    x = np.arange(10, dtype=np.float32)
    y = np.full(10, 5, np.float32)
    r = rt.elementwise("y = y + a * x", x=x, y=y, a=2.0)
    assert r is y
    np.testing.assert_array_equal(y, 5 + 2 * x)
    d = rt.array(y)
    r = rt.elementwise("y = y - x", x=x, y=d)
    assert r is d
    np.testing.assert_array_equal(d.numpy(), 5 + x)
    # a strided numpy output is written through its strides
    big = np.zeros(20, np.float32)
    rt.elementwise("y = x + 1", x=x, y=big[::2])
    np.testing.assert_array_equal(big[::2], x + 1)
    np.testing.assert_array_equal(big[1::2], 0)


def test_compiled_object_reused(rt):
    saxpy = rt.elementwise_kernel("y = a * x + y")
    assert isinstance(saxpy, kiln.ElementwiseKernel)
    for dt in (np.float32, np.int32):
        x = np.arange(8, dtype=dt)
        y = np.ones(8, dt)
        for _ in range(3):
            saxpy(x=x, y=y, a=2)
        np.testing.assert_array_equal(y, 1 + 6 * x)
    assert len(saxpy._built) == 2  # one kernel per combination of types


def test_several_outputs_and_result_type(rt):
    a = np.arange(6, dtype=np.int32)
    b = np.arange(6, dtype=np.float32) / 4
    if not rt.device["has_fp64"]:  # numpy's int32 + float32 is float64: refused
        with pytest.raises(kiln.UnsupportedError, match="fp64"):
            rt.elementwise("s = a + b; d = a - b", a=a, b=b)
        b = b.astype(np.float16) if rt.device["has_fp16"] else b
        a = a.astype(np.float32)
    s, d = rt.elementwise("s = a + b; d = a - b", a=a, b=b)
    assert s.dtype == np.result_type(a, b)
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_allclose(d, a - b, rtol=1e-6)


def test_scalar_types(rt):
    x = np.arange(4, dtype=np.int64)
    big = 2**40
    y = rt.elementwise("y = x + k", x=x, k=big)  # a long: it does not fit an int
    np.testing.assert_array_equal(y, x + big)
    y = rt.elementwise("y = x + k", x=x.astype(np.int32), k=np.uint32(7))
    np.testing.assert_array_equal(y, x + 7)


def test_complex_and_half(rt):
    z = (np.arange(5) + 1j * np.arange(5)).astype(np.complex64)
    y = rt.elementwise("y = x * a", x=z, a=2.0)
    assert y.dtype == np.complex64
    np.testing.assert_allclose(y, 2 * z)
    if rt.device["has_fp16"]:
        h = np.arange(16, dtype=np.float16)
        y = rt.elementwise("y = x + x", x=h)
        assert y.dtype == np.float16
        np.testing.assert_array_equal(y, h + h)


def test_indexed_form_and_empty(rt):
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(9, np.float32)
    rt.elementwise("y[i] = x[i + 1] - x[i]", x=x, y=y)
    np.testing.assert_array_equal(y, np.diff(x))
    e = rt.elementwise("y = x + 1", x=np.zeros((0, 3), np.float32))
    assert e.shape == (0, 3)
    s = rt.elementwise("y = x + 1", x=np.full((), 2, np.float32))
    assert s.shape == () and s == 3


def test_errors(rt):
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(kiln.InvalidArgumentError, match="different shapes"):
        rt.elementwise("y = x + z", x=x, z=np.ones(5, np.float32))
    with pytest.raises(kiln.InvalidDtypeError, match="uint8"):
        rt.elementwise("y = x + 1", x=x.astype(np.uint8))
    with pytest.raises(kiln.InvalidDtypeError, match="int8"):
        rt.elementwise("y = x + k", x=x, k=np.int8(1))
    with pytest.raises(kiln.InvalidArgumentError, match="no array"):
        rt.elementwise("y = a", a=1.0)
    with pytest.raises(kiln.InvalidArgumentError, match="assigns to no name"):
        rt.elementwise("x + 1", x=x)
    with pytest.raises(kiln.InvalidArgumentError, match="named other than i and n"):
        rt.elementwise("y = n", n=x)
    with pytest.raises(kiln.BuildError, match="the kernel was"):
        rt.elementwise("y = x +* 2", x=x)
    with pytest.raises(TypeError, match="operand k"):
        rt.elementwise("y = x + k", x=x, k="2")
    with pytest.raises(kiln.InvalidArgumentError, match="must be an array"):
        rt.elementwise("y = x", x=x, y=3.0)
    with kiln.Runtime() as other:
        d = other.array(x)
        with pytest.raises(kiln.WrongRuntimeError):
            rt.elementwise("y = x", x=d)
        del d
    # the runtime stays usable
    np.testing.assert_array_equal(rt.elementwise("y = x", x=x), x)


def test_no_leak(rt):
    k = rt.elementwise_kernel("y = x + 1")
    d = rt.array(np.zeros(16, np.float32))
    k(x=d)
    before = rt.memory_stats()["live_buffers"]
    for _ in range(300):
        k(x=d)
        k(x=np.zeros(16, np.float32))
    rt.synchronize()
    assert rt.memory_stats()["live_buffers"] == before


def test_threads_share_a_kernel(rt):
    import threading
    k = rt.elementwise_kernel("y = a * x + b")
    errors = []

    def work(t):
        try:
            x = np.arange(100, dtype=np.float32) + t
            d = rt.array(x)
            for _ in range(10):
                np.testing.assert_array_equal(k(x=x, a=float(t), b=1.0), t * x + 1)
                np.testing.assert_array_equal(k(x=d, a=2.0, b=float(t)).numpy(), 2 * x + t)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
