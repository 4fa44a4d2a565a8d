"""rt.fft and its family against numpy.fft: names, lengths (cropped and
zero-padded), axes, norms, dtypes, device arrays, errors. Each distinct
shape builds a plan (a compile on most backends), so the shapes are few."""
import numpy as np
import pytest

import kiln

NORMS = [None, "backward", "ortho", "forward"]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dtype)


def close(got, want, single=True):
    assert isinstance(got, np.ndarray)
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=(2e-5 if single else 1e-11) * scale)


@pytest.mark.parametrize("n", [1, 5, 12, 16, 17])
def test_fft_lengths_and_norms(rt, n):
    x = data((3, n), np.complex64, n)
    for norm in NORMS:
        y = rt.fft(x, norm=norm)
        assert y.dtype == np.complex64 and y.shape == x.shape
        close(y, np.fft.fft(x, norm=norm))
        close(rt.ifft(x, norm=norm), np.fft.ifft(x, norm=norm))
    r = x.real.copy()
    z = rt.rfft(r)
    assert z.dtype == np.complex64 and z.shape == (3, n // 2 + 1)
    close(z, np.fft.rfft(r))
    back = rt.irfft(z, n=n, norm="backward")
    assert back.dtype == np.float32 and back.shape == (3, n)
    close(back, r)
    close(rt.irfft(z, n=n, norm="ortho"), np.fft.irfft(np.fft.rfft(r), n=n, norm="ortho"))


def test_n_crops_and_pads_and_axis(rt):
    x = data((6, 10, 4), np.complex64, 1)
    for n, axis in [(7, 1), (16, 1), (3, 0), (5, -1), (1, 2)]:
        close(rt.fft(x, n=n, axis=axis), np.fft.fft(x, n=n, axis=axis))
    r = x.real.copy()
    close(rt.rfft(r, n=9, axis=0), np.fft.rfft(r, n=9, axis=0))
    z = np.fft.rfft(r, axis=1).astype(np.complex64)
    close(rt.irfft(z, axis=1), np.fft.irfft(z, axis=1))           # n = 2 (m - 1)
    close(rt.irfft(z, n=7, axis=1), np.fft.irfft(z, n=7, axis=1))  # z cropped
    close(rt.irfft(z, n=15, axis=1), np.fft.irfft(z, n=15, axis=1))  # z padded


def test_two_and_three_axes(rt):
    x = data((2, 6, 5), np.complex64, 2)
    for norm in (None, "ortho", "forward"):
        close(rt.fft2(x, norm=norm), np.fft.fft2(x, norm=norm))
        close(rt.ifft2(x, norm=norm), np.fft.ifft2(x, norm=norm))
    close(rt.fftn(x), np.fft.fftn(x))
    close(rt.fftn(x, s=(4, 8), axes=(0, 2)), np.fft.fftn(x, s=(4, 8), axes=(0, 2)))
    close(rt.ifftn(x, axes=(2, 1)), np.fft.ifftn(x, axes=(2, 1)))
    r = x.real.copy()
    close(rt.rfft2(r), np.fft.rfft2(r))
    close(rt.rfftn(r), np.fft.rfftn(r))
    # C2R of a spectrum that no real array has (what its Nyquist and DC bins
    # hold) differs between FFT libraries: only real arrays' spectra here.
    z = np.fft.rfft2(r).astype(np.complex64)
    close(rt.irfft2(z, s=(6, 5)), r)
    even = r[..., :4].copy()
    close(rt.irfft2(np.fft.rfft2(even).astype(np.complex64)), even)  # s: (6, 2 (m - 1))
    close(rt.irfftn(np.fft.rfftn(r).astype(np.complex64), s=r.shape), r)


def test_dtypes(rt):
    x16 = data((4, 8), np.float16)
    y = rt.fft(x16)
    assert y.dtype == np.complex64  # computed in float32
    close(y, np.fft.fft(x16.astype(np.float32)))
    for dtype in (np.float64, np.complex128, np.int32, np.int64):
        x = (data((4, 8), np.float64) * 100).astype(dtype)
        if not rt.device["has_fp64"]:
            with pytest.raises(kiln.UnsupportedError):
                rt.fft(x)
            continue
        y = rt.fft(x)
        assert y.dtype == np.complex128
        close(y, np.fft.fft(x), single=False)
        close(rt.ifft(x, norm="ortho"), np.fft.ifft(x, norm="ortho"), single=False)
        if dtype != np.complex128:
            z = rt.rfft(x)
            close(z, np.fft.rfft(x), single=False)
            close(rt.irfft(z, n=8), np.fft.irfft(np.fft.rfft(x), n=8), single=False)


def test_device_arrays(rt):
    x = data((5, 16), np.complex64, 4)
    d = rt.array(x)
    y = rt.fft(d)
    assert isinstance(y, kiln.DeviceArray) and y.dtype == np.complex64
    close(y.numpy(), np.fft.fft(x))
    close(rt.ifft(y).numpy(), x)                  # chained on the device
    close(rt.fft(d[1:4], norm="ortho").numpy(), np.fft.fft(x[1:4], norm="ortho"))
    close(rt.fft2(d).numpy(), np.fft.fft2(x))
    r = rt.array(x.real.copy())
    z = rt.rfft(r)
    assert isinstance(z, kiln.DeviceArray) and z.shape == (5, 9)
    back = rt.irfft(z)
    assert back.shape == (5, 16)
    close(back.numpy(), x.real)
    with pytest.raises(kiln.InvalidArgumentError, match="x.numpy()"):
        rt.fft(d, axis=0)
    with pytest.raises(kiln.InvalidArgumentError, match="x.numpy()"):
        rt.fft(d, n=8)
    with pytest.raises(kiln.InvalidDtypeError):
        rt.fft(r)  # a real device array: rfft, or a complex one
    with pytest.raises(kiln.InvalidDtypeError):
        rt.rfft(d)


def test_errors(rt):
    x = data((4, 8), np.complex64)
    with pytest.raises(ValueError, match="norm"):
        rt.fft(x, norm="none")
    with pytest.raises(ValueError, match="data points"):
        rt.fft(x, n=0)
    with pytest.raises(ValueError, match="data points"):
        rt.fft(np.zeros((3, 0), np.complex64))
    with pytest.raises(np.AxisError):
        rt.fft(x, axis=2)
    with pytest.raises(TypeError):
        rt.rfft(x)
    with pytest.raises(ValueError):
        rt.fft(np.complex64(1))
    with pytest.raises(kiln.UnsupportedError, match="1 to 3 axes"):
        rt.fftn(np.zeros((2, 2, 2, 2), np.complex64))
    with pytest.raises(ValueError, match="repeated"):
        rt.fftn(x, axes=(0, 0))
    close(rt.fft(np.ones(4, bool)), np.fft.fft(np.ones(4, bool)), single=False) \
        if rt.device["has_fp64"] else None  # promoted as numpy does
    close(rt.fft(np.zeros((0, 4), np.complex64)), np.zeros((0, 4)))  # an empty batch
    close(rt.fft(x), np.fft.fft(x))  # usable after
