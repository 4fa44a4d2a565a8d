"""examples/python/devices_and_gemm.py runs, splits when memory is short,
and agrees with numpy (it exits non-zero otherwise)."""
import os
import re
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python",
                       "devices_and_gemm.py")


def run(*args):
    return subprocess.run([sys.executable, EXAMPLE, *args], check=True, capture_output=True,
                          text=True, timeout=120).stdout


def test_example_whole_batch():
    out = run("--batch", "6", "--n", "48")
    assert "kiln runs on" in out and "1 piece(s)" in out
    assert "kiln profile on" in out and "gemm" in out  # the profile table


def test_example_split_to_fit_memory():
    # 2 MiB for 40 products of 96x96 floats (~2.9 MiB in and out): pieces.
    out = run("--batch", "40", "--n", "96", "--memory-limit", str(2 << 20))
    pieces = int(re.search(r"(\d+) piece\(s\)", out).group(1))
    assert pieces > 1, out
