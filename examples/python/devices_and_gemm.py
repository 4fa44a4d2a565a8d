#!/usr/bin/env python3
"""kiln for a PyTorch user: which device is there, how much memory is free,
and a batched matrix product split into pieces that fit the device's memory,
with kiln's profile table of it, checked against numpy on the CPU.

    python3 examples/python/devices_and_gemm.py [--batch 64] [--n 256]
        [--memory-limit BYTES]

With --memory-limit (say 4000000) the runtime gets less memory than the
whole batch needs, and the product runs in several pieces.
"""
import argparse
import time

import numpy as np

import kiln


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64, help="matrices in the batch")
    p.add_argument("--n", type=int, default=256, help="each matrix is n x n")
    p.add_argument("--memory-limit", type=int, default=None,
                   help="bytes the runtime may hold (default: the device's memory)")
    args = p.parse_args()

    # torch.cuda.device_count() and get_device_name(), for every vendor.
    for d in kiln.devices():
        print(f"device {d['index']}: {d['name']} ({d['type']}, {d['platform']}), "
              f"{d['global_mem_bytes'] / 2**30:.1f} GiB; {d['rank_reasons']}")

    with kiln.Runtime(memory_limit=args.memory_limit, profile=True) as rt:
        print(f"kiln runs on {rt.device['name']}: {rt.why}")
        stats = rt.memory_stats()
        free = stats["device_free_bytes"]  # -1 where the driver cannot say
        left = stats["limit_bytes"] - stats["current_bytes"]
        print(f"memory: {left / 2**20:.0f} MiB of kiln's budget left"
              + (f", {free / 2**20:.0f} MiB free on the device" if free >= 0 else ""))

        rng = np.random.default_rng(0)
        n, batch = args.n, args.batch
        x = rng.standard_normal((batch, n, n), dtype=np.float32)
        w = rng.standard_normal((n, n), dtype=np.float32)

        # torch.matmul(x, w) of a (batch, n, n) by an (n, n): a batched
        # product with w shared, in pieces of whole matrices: each piece's
        # input and output, plus w, in half of what is left (the rest for
        # kiln's own workspace).
        wd = rt.array(w)
        per_matrix = 2 * n * n * 4
        fit = max(1, int(left // 2 - wd.nbytes) // per_matrix)
        pieces = range(0, batch, fit)
        print(f"batch of {batch} products {n}x{n} @ {n}x{n}: "
              f"{len(pieces)} piece(s) of up to {min(fit, batch)}")
        out = np.empty_like(x)
        t0 = time.perf_counter()
        with rt.profile() as prof:  # torch.profiler.profile()
            for start in pieces:
                stop = min(start + fit, batch)
                out[start:stop] = rt.gemm(rt.array(x[start:stop]), wd).numpy()
        t_kiln = time.perf_counter() - t0
        print(prof.table)

        t0 = time.perf_counter()
        want = x @ w
        t_numpy = time.perf_counter() - t0
        err = np.abs(out - want).max() / np.abs(want).max()
        gflop = 2.0 * batch * n * n * n / 1e9
        print(f"kiln {t_kiln * 1e3:.1f} ms ({gflop / t_kiln:.1f} GFLOP/s, transfers "
              f"included), numpy {t_numpy * 1e3:.1f} ms ({gflop / t_numpy:.1f} GFLOP/s); "
              f"largest relative difference {err:.1e}")
        if not err < 1e-4:
            raise SystemExit(f"kiln and numpy differ by {err:.1e}")
        print(f"peak device memory: {rt.memory_stats()['peak_bytes'] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
