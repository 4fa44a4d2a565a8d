#!/usr/bin/env python3
"""check-npy-numpy.py <libkiln.so>

Cross-checks kiln's .npy support against numpy itself, through ctypes:
every dtype, shapes from 0-d to 5-d with empty ones, C and Fortran order,
format versions 1.0, 2.0 and 3.0. kiln must read what numpy writes, numpy
must read what kiln writes, and kiln's files must be byte for byte those of
np.save. Exits 77 (skipped) when numpy is not importable: test-npy.c covers
the format without it.
"""
import ctypes
import io
import os
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is not importable: skipped")
    sys.exit(77)

MAX_DIMS = 8
# kiln_dtype values (include/kiln/kiln.h) and their numpy types.
DTYPES = {1: np.float16, 2: np.float32, 3: np.float64, 4: np.complex64,
          5: np.complex128, 6: np.int32, 7: np.int64}
SHAPES = [(), (0,), (1,), (5,), (2, 3), (0, 3), (3, 0), (4, 1), (2, 3, 4),
          (2, 1, 3, 2, 2), (1, 2, 1, 2, 1, 2, 1, 2)]


class KilnArray(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_uint),
                ("shape", ctypes.c_size_t * MAX_DIMS),
                ("fortran_order", ctypes.c_int), ("count", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


def open_kiln(path):
    lib = ctypes.CDLL(path)
    lib.kiln_npy_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(KilnArray)]
    lib.kiln_npy_save.argtypes = [ctypes.c_char_p, ctypes.POINTER(KilnArray)]
    lib.kiln_array_to_c_order.argtypes = [ctypes.POINTER(KilnArray)]
    lib.kiln_array_free.argtypes = [ctypes.POINTER(KilnArray)]
    lib.kiln_array_free.restype = None
    lib.kiln_last_error.argtypes = [ctypes.c_void_p]
    lib.kiln_last_error.restype = ctypes.c_char_p
    return lib


def sample(dtype, shape, fortran):
    n = int(np.prod(shape, dtype=np.int64))
    values = np.arange(n, dtype=np.float64) * 1.25 - 3
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * (values + 0.5)
    a = values.astype(dtype).reshape(shape)
    # copy(order=...), as np.ascontiguousarray makes a 0-d array 1-d
    return a.copy(order="F" if fortran else "C")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def kiln_load(lib, path):
    arr = KilnArray()
    st = lib.kiln_npy_load(path.encode(), ctypes.byref(arr))
    check(st == 0, "kiln_npy_load(%s): %s" % (path, lib.kiln_last_error(None)))
    return arr


def kiln_bytes(arr, itemsize):
    return ctypes.string_at(arr.data, arr.count * itemsize) if arr.count else b""


def round_trip(lib, tmp, code, shape, fortran, version):
    a = sample(DTYPES[code], shape, fortran)
    src, out = os.path.join(tmp, "np.npy"), os.path.join(tmp, "kiln.npy")
    what = "%s %s fortran=%s v%s" % (a.dtype, shape, fortran, version)
    with open(src, "wb") as f:
        if version is None:
            np.save(f, a)
        else:
            np.lib.format.write_array(f, a, version=version)
    arr = kiln_load(lib, src)
    check(arr.dtype == code and arr.ndim == len(shape), what + ": dtype or ndim")
    check(tuple(arr.shape[:arr.ndim]) == shape, what + ": shape")
    # numpy says C order whenever the array is also C-contiguous: 0-d, 1-d,
    # empty, or one axis longer than 1.
    fortran_stored = not a.flags.c_contiguous
    check(bool(arr.fortran_order) == fortran_stored, what + ": fortran_order")
    order = "F" if fortran_stored else "C"
    check(kiln_bytes(arr, a.itemsize) == a.tobytes(order=order), what + ": data")
    check(lib.kiln_npy_save(out.encode(), ctypes.byref(arr)) == 0, what + ": save")
    if version is None:
        with open(src, "rb") as f1, open(out, "rb") as f2:
            check(f1.read() == f2.read(), what + ": kiln's file differs from np.save's")
    back = np.load(out)
    check(back.dtype == a.dtype and back.shape == a.shape, what + ": np.load")
    check(np.array_equal(back, a), what + ": np.load values")
    check(lib.kiln_array_to_c_order(ctypes.byref(arr)) == 0, what + ": to_c_order")
    check(kiln_bytes(arr, a.itemsize) == a.copy(order="C").tobytes(),
          what + ": kiln_array_to_c_order differs from numpy's C order")
    lib.kiln_array_free(ctypes.byref(arr))


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    lib = open_kiln(sys.argv[1])
    runs = 0
    with tempfile.TemporaryDirectory(prefix="kiln-npy-numpy-") as tmp:
        for code in DTYPES:
            for shape in SHAPES:
                for fortran in (False, True):
                    for version in (None, (2, 0), (3, 0)):
                        round_trip(lib, tmp, code, shape, fortran, version)
                        runs += 1
    print("%d round trips agree with numpy %s" % (runs, np.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
