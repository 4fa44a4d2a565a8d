"""kiln from Python: numpy in, numpy out, on any vendor's OpenCL device.

    import kiln, numpy as np
    with kiln.Runtime() as rt:
        print(rt.device["name"], rt.why)
        c = rt.gemm(np.ones((64, 32), np.float32), np.ones((32, 16), np.float32))

See docs/python.md.
"""
from ._kiln import *  # noqa: F401,F403  (Runtime, DeviceArray, devices, errors)
from ._kiln import Error, Runtime, DeviceArray, devices, kiln_version

__version__ = kiln_version
