"""kiln from Python: numpy in, numpy out, on any vendor's OpenCL device.

    import kiln, numpy as np
    with kiln.Runtime() as rt:
        print(rt.device["name"], rt.why)
        c = rt.gemm(np.ones((64, 32), np.float32), np.ones((32, 16), np.float32))

See docs/python.md.
"""
from ._kiln import *  # noqa: F401,F403  (Runtime, DeviceArray, devices, errors)
from ._kiln import Error, DeviceArray, devices, kiln_version
from . import _kiln, _fft

__version__ = kiln_version


class Runtime(_kiln.Runtime):
    __doc__ = _kiln.Runtime.__doc__
    __slots__ = ()


for _name, _f in _fft.METHODS.items():
    setattr(Runtime, _name, _f)
del _name, _f
