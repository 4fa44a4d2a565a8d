"""A small call's cost from Python, beside `kiln bench overhead`'s C figures
(the same cases: gemm64, a 64x64x64 float32 GEMM, and sum64K, a sum of 65536
float32, on device arrays): us per call, medians of samples of 50 calls,
enqueued back to back ("kiln": the synchronize that drains them outside the
span) and each waited for ("kiln-wait").

    PYTHONPATH=build/python python3 python/tests/bench_overhead.py [SAMPLES]
"""
import statistics
import sys
import time

import numpy as np

import kiln

CALLS = 50


def per_call(rt, fn, wait):
    t = time.perf_counter()
    for _ in range(CALLS):
        fn()
        if wait:
            rt.synchronize()
    dt = time.perf_counter() - t
    rt.synchronize()
    return dt / CALLS * 1e6


def main():
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with kiln.Runtime() as rt:
        a = rt.array(np.ones((64, 64), np.float32))
        x = rt.array(np.ones(65536, np.float32))
        cases = {"gemm64": lambda: rt.gemm(a, a), "sum64K": lambda: rt.reduce(x)}
        print(f"{'case':10} {'kiln':>8} {'kiln-wait':>10}   (us per call, medians; {rt.device['name']})")
        for name, fn in cases.items():
            fn()
            rt.synchronize()
            got = {w: statistics.median(per_call(rt, fn, w) for _ in range(samples))
                   for w in (False, True)}
            print(f"{name:10} {got[False]:8.1f} {got[True]:10.1f}")


if __name__ == "__main__":
    main()
