"""Runtime.fft and its family: numpy.fft's names, arguments, lengths and
norms over kiln_fft (Runtime._fft: the last 1 to 3 axes of a C-order array,
the leading axes a batch).

A numpy input is cropped or zero-padded to `n` / `s` and its axes moved
last on the host, as numpy.fft does, and the result is a numpy array. A
device array is transformed where it is: its axes must be the last ones in
order and its lengths those asked (irfft's input n // 2 + 1), else a
kiln.InvalidArgumentError says to pass its numpy form.

Precision: single stays single (float32 and complex64 give complex64, as
CuPy's fft does; numpy before 2.0 gives complex128); float64, complex128 and
integers give complex128 (they need a device with fp64); float16 is computed
in float32.
"""
import numpy as np

from . import _kiln

_NORMS = {None: 0, "backward": 0, "ortho": 1, "forward": 2}
_C2C, _R2C, _C2R = 0, 1, 2


def _norm(norm):
    try:
        return _NORMS[norm]
    except (KeyError, TypeError):
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", '
                         f'"ortho" or "forward".') from None


def _host_dtype(x, kind):
    """numpy's promotion, keeping single precision."""
    single = x.dtype in (np.float16, np.float32, np.complex64)
    if kind == _R2C:
        if np.issubdtype(x.dtype, np.complexfloating):
            raise TypeError(f"rfft takes real input; got {x.dtype}")
        return np.float32 if single else np.float64
    return np.complex64 if single else np.complex128


def _axes_lengths(ndim, s, axes, shape, name):
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(ndim))
    axes = [int(a) for a in axes]
    for a in axes:
        if not -ndim <= a < ndim:
            raise np.AxisError(a, ndim)
    axes = [a % ndim for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axes {axes}")
    if s is None:
        s = [shape[a] for a in axes]
    s = [int(n) for n in s]
    if len(s) != len(axes):
        raise ValueError(f"{name}: s and axes have different lengths")
    for n in s:
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if not 1 <= len(axes) <= 3:
        raise _kiln.UnsupportedError(f"{name}: kiln transforms 1 to 3 axes at once; "
                                     f"got {len(axes)}")
    return s, axes


def _fit(x, axis, n):
    """x cropped or zero-padded to n along axis."""
    have = x.shape[axis]
    if have == n:
        return x
    if have > n:
        return x[(slice(None),) * axis + (slice(0, n),)]
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - have)
    return np.pad(x, pad)


def _transform(rt, x, s, axes, norm, kind, inverse, name):
    code = _norm(norm)
    if isinstance(x, _kiln.DeviceArray):
        return _device(rt, x, s, axes, code, kind, inverse, name)
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError(f"{name}: a 0-d array has no axis to transform")
    s, axes = _axes_lengths(x.ndim, s, axes, x.shape, name)
    x = x.astype(_host_dtype(x, kind), copy=False)
    n_last = 0
    for i, (a, n) in enumerate(zip(axes, s)):
        if kind == _C2R and i == len(axes) - 1:
            n_last = n
            n = n // 2 + 1
        x = _fit(x, a, n)
    last = list(range(x.ndim - len(axes), x.ndim))
    x = np.ascontiguousarray(np.moveaxis(x, axes, last))
    out = rt._fft(x, kind, len(axes), inverse, code, n_last)
    return np.moveaxis(out, last, axes)


def _device(rt, x, s, axes, code, kind, inverse, name):
    if x.ndim == 0:
        raise ValueError(f"{name}: a 0-d array has no axis to transform")
    s, axes = _axes_lengths(x.ndim, s, axes, x.shape, name)
    last = list(range(x.ndim - len(axes), x.ndim))
    n_last = 0
    want = list(s)
    if kind == _C2R:
        n_last = s[-1]
        want[-1] = n_last // 2 + 1
    if axes != last or [x.shape[a] for a in axes] != want:
        raise _kiln.InvalidArgumentError(
            f"{name}: a device array is transformed in place along its last "
            f"{len(axes)} axes at its own lengths {[x.shape[a] for a in last]}; "
            f"asked axes {axes} at {want}: pass x.numpy() to crop, pad or move axes")
    return rt._fft(x, kind, len(axes), inverse, code, n_last)


def fft(self, a, n=None, axis=-1, norm=None):
    """fft(a, n=None, axis=-1, norm=None): numpy.fft.fft on the device."""
    return _transform(self, a, None if n is None else [n], [axis], norm, _C2C, 0, "fft")


def ifft(self, a, n=None, axis=-1, norm=None):
    """ifft(a, n=None, axis=-1, norm=None): numpy.fft.ifft on the device."""
    return _transform(self, a, None if n is None else [n], [axis], norm, _C2C, 1, "ifft")


def rfft(self, a, n=None, axis=-1, norm=None):
    """rfft(a, n=None, axis=-1, norm=None): numpy.fft.rfft on the device."""
    return _transform(self, a, None if n is None else [n], [axis], norm, _R2C, 0, "rfft")


def irfft(self, a, n=None, axis=-1, norm=None):
    """irfft(a, n=None, axis=-1, norm=None): numpy.fft.irfft on the device; n
    defaults to 2 * (m - 1)."""
    if n is None:
        n = 2 * (np.shape(a)[axis] - 1) if np.ndim(a) else 0
    return _transform(self, a, [n], [axis], norm, _C2R, 1, "irfft")


def fftn(self, a, s=None, axes=None, norm=None):
    """fftn(a, s=None, axes=None, norm=None): numpy.fft.fftn, 1 to 3 axes."""
    return _transform(self, a, s, axes, norm, _C2C, 0, "fftn")


def ifftn(self, a, s=None, axes=None, norm=None):
    """ifftn(a, s=None, axes=None, norm=None): numpy.fft.ifftn, 1 to 3 axes."""
    return _transform(self, a, s, axes, norm, _C2C, 1, "ifftn")


def rfftn(self, a, s=None, axes=None, norm=None):
    """rfftn(a, s=None, axes=None, norm=None): numpy.fft.rfftn, 1 to 3 axes."""
    return _transform(self, a, s, axes, norm, _R2C, 0, "rfftn")


def irfftn(self, a, s=None, axes=None, norm=None):
    """irfftn(a, s=None, axes=None, norm=None): numpy.fft.irfftn, 1 to 3 axes;
    the last axis defaults to 2 * (m - 1) points."""
    if s is None:
        shape = np.shape(a)
        ax = list(range(len(shape))) if axes is None else list(axes)
        if ax:
            s = [shape[i] for i in ax[:-1]] + [2 * (shape[ax[-1]] - 1)]
    return _transform(self, a, s, axes, norm, _C2R, 1, "irfftn")


def fft2(self, a, s=None, axes=(-2, -1), norm=None):
    """fft2(a, s=None, axes=(-2, -1), norm=None): numpy.fft.fft2."""
    return fftn(self, a, s, axes, norm)


def ifft2(self, a, s=None, axes=(-2, -1), norm=None):
    """ifft2(a, s=None, axes=(-2, -1), norm=None): numpy.fft.ifft2."""
    return ifftn(self, a, s, axes, norm)


def rfft2(self, a, s=None, axes=(-2, -1), norm=None):
    """rfft2(a, s=None, axes=(-2, -1), norm=None): numpy.fft.rfft2."""
    return rfftn(self, a, s, axes, norm)


def irfft2(self, a, s=None, axes=(-2, -1), norm=None):
    """irfft2(a, s=None, axes=(-2, -1), norm=None): numpy.fft.irfft2."""
    return irfftn(self, a, s, axes, norm)


METHODS = {f.__name__: f for f in (fft, ifft, rfft, irfft, fftn, ifftn, rfftn, irfftn,
                                   fft2, ifft2, rfft2, irfft2)}
