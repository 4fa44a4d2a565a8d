#!/usr/bin/env python3
"""check-rusticl.py KILN — `kiln check` on Mesa's rusticl (llvmpipe), a second
compiler stack without fp64: every operation it runs agrees with its CPU
reference there, and Mesa prints no warning while it compiles kiln's kernels
(rusticl keeps no build log; it warns on stderr, some warnings only when a
kernel is compiled for its first launch, so kiln's cache and Mesa's shader
cache are off). Run with tests/icd/all's platforms (OCL_ICD_VENDORS) and
RUSTICL_ENABLE=llvmpipe."""
import os
import subprocess
import sys
import tempfile

KILN = sys.argv[1]

with tempfile.TemporaryDirectory(prefix="kiln-rusticl-") as cache:
    env = dict(os.environ, KILN_DEVICE="mesa", KILN_CACHE_DIR=cache,
               MESA_SHADER_CACHE_DISABLE="true")
    r = subprocess.run([KILN, "check"], capture_output=True, text=True, env=env,
                       timeout=600)
out, err = r.stdout, r.stderr
failures = []
if r.returncode != 0:
    failures.append(f"kiln check exited {r.returncode}:\n{out}{err}")
if "llvmpipe" not in out:
    failures.append(f"kiln check did not run on llvmpipe:\n{out}")
warnings = [line for line in err.splitlines() if "warning" in line.lower()]
if warnings:
    failures.append("the compilers warned:\n" + "\n".join(warnings))
print(out, end="")
for f in failures:
    print("FAILED  " + f)
sys.exit(1 if failures else 0)
