"""kiln from Python: numpy in, numpy out, on any vendor's OpenCL device.

    import kiln, numpy as np
    with kiln.Runtime() as rt:
        print(rt.device["name"], rt.why)
        c = rt.gemm(np.ones((64, 32), np.float32), np.ones((32, 16), np.float32))

See docs/python.md.
"""
from ._kiln import *  # noqa: F401,F403  (Runtime, DeviceArray, devices, errors)
from ._kiln import Error, DeviceArray, Event, Stream, devices, kiln_version

from . import _kiln, _fft, _elementwise
from ._elementwise import ElementwiseKernel

__version__ = kiln_version


class Profile:
    """What Runtime.profile() yields: after the `with`, `table` holds kiln's
    profile table (kiln_profile_report: one line per operation and backend,
    device and host times, GFLOP/s, GB/s, then builds and plans) and `rows`
    its rows as dicts (kiln_profile_rows); str(p) is the table."""

    def __init__(self, runtime, print_table):
        self._rt = runtime
        self._print = print_table
        self.table = ""
        self.rows = []

    def __enter__(self):
        self._rt._profile_reset()
        return self

    def __exit__(self, *exc):
        self.table = self._rt._profile_table()  # after kiln_finish: complete
        self.rows = self._rt.profile_rows()
        if self._print:
            print(self.table, end="")
        return False

    def __str__(self):
        return self.table


class Runtime(_kiln.Runtime):
    __doc__ = _kiln.Runtime.__doc__
    __slots__ = ()

    def profile(self, print=False):  # noqa: A002  (as torch.profiler's)
        """profile(print=False): a context manager that records the calls made
        inside it (the runtime must record: Runtime(profile=True)) and gives
        a Profile whose table and rows are kiln's after the `with`; prints
        the table only with print=True."""
        if not self.profiling:
            self._profile_reset()  # raises kiln.UnsupportedError, with what to do
        return Profile(self, print)


for _name, _f in _fft.METHODS.items():
    setattr(Runtime, _name, _f)
del _name, _f
Runtime.elementwise = _elementwise.elementwise
Runtime.elementwise_kernel = _elementwise.elementwise_kernel


def tune(device=None, what=None, *, budget=0, progress=None):
    """tune(device=None, what=None, *, budget=0, progress=None): `kiln tune`
    from Python: kiln_tune on the device (as Runtime's device argument),
    which keeps the best parameters as the device's tuning record; later
    runtimes on it apply them. See Runtime.tune."""
    with Runtime(device=device) as rt:
        rt.tune(what, budget=budget, progress=progress)
