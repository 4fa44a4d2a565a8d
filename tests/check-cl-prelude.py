#!/usr/bin/env python3
"""Only cl/prelude.cl defines what every kernel file shares.

usage: check-cl-prelude.py PRELUDE.cl FILE.cl...

The prelude's macros (each `#define NAME` in it), the cl_khr_fp64 pragma and
the half loads and stores (vload_half, vstore_half_rte) live in the prelude
alone, which kiln puts before every other file: a kernel file that defines
one of them again, or calls the half built-ins instead of the prelude's
LOAD_f16 and STORE_f16, is a copy coming back. Each file must also refuse,
with a message, to be built without the prelude (`kiln build FILE.cl`).
Exits 1 naming each copy.
"""
import os
import re
import sys


def code(text):
    """The text without its comments, so that prose may name a helper."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        prelude = code(f.read())
    shared = re.findall(r"^#define (\w+)", prelude, re.M)
    if not shared:
        sys.exit(f"{argv[1]} defines no macro: is it the prelude?")
    bad = []
    for path in argv[2:]:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            text = code(f.read())
        for n, line in enumerate(text.splitlines(), 1):
            m = re.match(r"\s*#\s*define\s+(\w+)", line)
            if m and m.group(1) in shared:
                bad.append(f"cl/{name}:{n}: defines {m.group(1)}, which cl/prelude.cl "
                           "defines for every file")
            for what in ("cl_khr_fp64", "vload_half", "vstore_half_rte"):
                if re.search(r"\b%s\b" % what, line):
                    bad.append(f"cl/{name}:{n}: {what} belongs in cl/prelude.cl "
                               "(LOAD_f16, STORE_f16 and the fp64 pragma)")
        if not re.search(r"^#ifndef KILN_PRELUDE\n#error ", text, re.M):
            bad.append(f"cl/{name}: no `#ifndef KILN_PRELUDE` / `#error` saying that "
                       "it is built after cl/prelude.cl")
    for b in bad:
        print(b)
    print(f"{len(argv) - 2} kernel files, {len(shared)} shared macros, "
          f"{len(bad)} copies")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(sys.argv)
