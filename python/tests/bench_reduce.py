"""A float32 sum of a device array from Python, beside `kiln bench reduce`'s
C figure (kiln_reduce then kiln_finish on a buffer already on the device):
GB/s of the input's bytes, the median of R calls each waited for
("kiln-wait": rt.reduce then rt.synchronize, as the C bench times) and each
read back ("kiln-read": the result's float read on the host as well).

    kiln bench reduce --sizes 256M --backend kiln
    PYTHONPATH=build/python python3 python/tests/bench_reduce.py [MIB] [R]
"""
import statistics
import sys
import time

import numpy as np

import kiln


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    n = mib * 2**20 // 4
    with kiln.Runtime() as rt:
        host = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
        x = rt.array(host)
        want = host.sum(dtype=np.float64)
        got = float(rt.reduce(x, "sum").numpy())
        assert abs(got - want) <= 1e-3 * np.abs(host).sum(), (got, want)

        def wait():
            rt.reduce(x, "sum")
            rt.synchronize()

        def read():
            float(rt.reduce(x, "sum").numpy())

        print(f"reduce {mib}M float32 sum, GB/s, median of {repeats} "
              f"({rt.device['name']})")
        for name, fn in (("kiln-wait", wait), ("kiln-read", read)):
            fn()
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            print(f"  {name:10} {n * 4 / statistics.median(times) / 1e9:8.2f}")


if __name__ == "__main__":
    main()
