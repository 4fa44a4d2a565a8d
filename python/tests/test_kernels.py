"""The user's own kernels (Runtime.program, Program.kernel, Kernel calls)
against numpy: device arrays, typed scalars, local memory, 1-3 dimensions,
and kiln's checks and messages."""
import gc
import os
import sys
import tracemalloc

import numpy as np
import pytest

import kiln

SOURCE = r"""
kernel void saxpy(global float *y, global const float *x, float a, int n)
{
  int i = get_global_id(0);
  if (i < n) y[i] += a * x[i];
}

/* each work-group sums its items through local memory */
kernel void group_sum(global const int *x, global int *out, local int *tmp)
{
  size_t l = get_local_id(0), g = get_local_size(0);
  tmp[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t k = 0; k < g; k++) s += tmp[k];
    out[get_group_id(0)] = s;
  }
}

kernel void index2d(global long *out, ulong cols)
{
  size_t r = get_global_id(1), c = get_global_id(0);
  out[r * cols + c] = (long)(r * 1000 + c) * SCALE;
}
"""


@pytest.fixture(scope="module")
def prog(rt):
    p = rt.program(SOURCE, "-DSCALE=3")
    assert isinstance(p, kiln.Program) and isinstance(p.build_log, str)
    return p


def test_saxpy(rt, prog):
    k = prog.kernel("saxpy")
    assert k.name == "saxpy"
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, np.float32)
    dx, dy = rt.array(x), rt.array(y)
    k(128, 32, dy, dx, np.float32(2.5), np.int32(100))
    k((100,), None, dy, dx, np.float32(1), np.int32(50))  # the driver's local size
    want = y + 2.5 * x
    want[:50] += x[:50]
    np.testing.assert_array_equal(dy.numpy(), want)
    # a view goes as its sub-buffer: from an offset of 4096 bytes, which
    # every device's base-address alignment divides
    big = np.arange(2048, dtype=np.float32)
    dbig = rt.array(big)
    k(16, None, dbig[1024:], dx, np.float32(-1), np.int32(16))
    big[1024:1040] -= x[:16]
    np.testing.assert_array_equal(dbig.numpy(), big)


def test_local_memory(rt, prog):
    k = prog.kernel("group_sum")
    x = np.arange(256, dtype=np.int32) - 100
    out = rt.array(np.zeros(8, np.int32))
    k(256, 32, rt.array(x), out, kiln.LocalMemory(32 * 4))
    np.testing.assert_array_equal(out.numpy(), x.reshape(8, 32).sum(axis=1))
    assert kiln.LocalMemory(128).nbytes == 128


def test_two_dims_and_options(rt, prog):
    k = prog.kernel("index2d")
    out = rt.array(np.zeros((3, 5), np.int64))
    k((5, 3), None, out, np.uint64(5))
    r, c = np.mgrid[0:3, 0:5]
    np.testing.assert_array_equal(out.numpy(), (r * 1000 + c) * 3)


def test_argument_errors(rt, prog):
    k = prog.kernel("saxpy")
    y = rt.array(np.zeros(4, np.float32))
    # kiln's check against the declaration, with its message
    with pytest.raises(kiln.InvalidArgumentError, match=r"argument 2 \(a: float\)"):
        k(4, None, y, y, np.float64(1), np.int32(4))
    with pytest.raises(kiln.InvalidArgumentError, match="np.float32"):
        k(4, None, y, y, 1.0, np.int32(4))
    with pytest.raises(kiln.InvalidArgumentError, match="rt.array"):
        k(4, None, y, np.zeros(4, np.float32), np.float32(1), np.int32(4))
    with pytest.raises(kiln.InvalidArgumentError, match="argument 3"):
        k(4, None, y, y, np.float32(1))  # n was never set on this kernel
    with pytest.raises(kiln.InvalidArgumentError):
        k(4, None, y, y, kiln.LocalMemory(16), np.int32(4))  # not a __local argument
    with pytest.raises(kiln.InvalidArgumentError):
        k(4, None, y, y, np.float32(1), np.int32(4), np.int32(0))  # one too many
    with pytest.raises(ValueError, match="global_size"):
        k(0, None, y, y, np.float32(1), np.int32(4))
    with pytest.raises(ValueError, match="local_size"):
        k((4, 4), 2, y, y, np.float32(1), np.int32(4))
    with pytest.raises(TypeError):
        k(4)
    with pytest.raises(ValueError):
        kiln.LocalMemory(0)
    with kiln.Runtime() as other:
        d = other.array(np.zeros(4, np.float32))
        with pytest.raises(kiln.WrongRuntimeError):
            k(4, None, d, y, np.float32(1), np.int32(4))
        del d
    # still usable
    k(4, None, y, y, np.float32(1), np.int32(4))
    rt.synchronize()


def test_build_and_name_errors(rt, prog):
    with pytest.raises(kiln.BuildError, match="build log") as e:
        rt.program("kernel void broken(global float *y) { y[0] = undeclared; }")
    assert "undeclared" in str(e.value)
    with pytest.raises(kiln.BuildError, match="-DFOO"):
        rt.program("kernel void f(global float *y) { y[0] = FOO; }", "-DFOO=")
    with pytest.raises(kiln.InvalidArgumentError, match="saxpy"):
        prog.kernel("nope")  # the message lists the program's kernels
    with pytest.raises(TypeError):
        prog.kernel(3)


def test_closed_runtime():
    rt = kiln.Runtime()
    p = rt.program("kernel void z(global int *y) { y[get_global_id(0)] = 7; }")
    k = p.kernel("z")
    d = rt.array(np.zeros(4, np.int32))
    k(4, None, d)
    np.testing.assert_array_equal(d.numpy(), 7)
    rt.close()
    with pytest.raises(kiln.Error, match="closed"):
        k(4, None, d)
    with pytest.raises(kiln.Error, match="closed"):
        p.kernel("z")
    del k, p, d
    gc.collect()


def test_no_leak(rt, prog):
    k = prog.kernel("saxpy")
    ew = rt.elementwise_kernel("y = a * x + y")
    y = rt.array(np.zeros(64, np.float32))
    a, n, host = np.float32(1), np.int32(64), np.ones(64, np.float32)
    refs = tuple(sys.getrefcount(o) for o in (k, prog, y, a, n, host, ew))

    def calls(count):
        for _ in range(count):
            k(64, 16, y, y, a, n)
            prog.kernel("saxpy")
            ew(x=y, y=y, a=2.0)
            ew(x=host, a=a)
            try:
                k(64, None, y, y, 1.0, n)
            except kiln.InvalidArgumentError:
                pass
            try:
                prog.kernel("nope")
            except kiln.InvalidArgumentError:
                pass

    calls(20)
    rt.synchronize()
    gc.collect()
    start = rt.memory_stats()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    calls(60 if os.environ.get("KILN_TEST_RUSTICL") else 200)
    rt.synchronize()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(d.size_diff for d in after.compare_to(before, "filename"))
    assert grown < 64 * 1024, grown
    end = rt.memory_stats()
    assert end["live_buffers"] == start["live_buffers"]
    assert tuple(sys.getrefcount(o) for o in (k, prog, y, a, n, host, ew)) == refs
