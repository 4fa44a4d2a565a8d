"""Fixtures of the Python module's tests: one runtime per module, and the
tolerance of each dtype. They run on whatever device kiln picks (PoCL in
CI), so they assert what holds on any device."""
import numpy as np
import pytest

import kiln


@pytest.fixture(scope="module")
def rt():
    with kiln.Runtime() as runtime:
        yield runtime


def tol(dtype, k=1):
    """Relative tolerance of a sum of k products in dtype."""
    eps = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-14}[np.dtype(dtype).type]
    return eps * 8 * max(1, k) ** 0.5 + (2e-3 if dtype == np.float16 else 0)


def float_dtypes(runtime):
    """The float dtypes the device computes in: float64 only with fp64."""
    out = [np.float16, np.float32]
    if runtime.device["has_fp64"]:
        out.append(np.float64)
    return out
