#!/usr/bin/env python3
"""check-layers.py SRC_DIR [STATIC_LIB | OBJECT_DIR]

src/'s folders are the layers of libkiln (docs/architecture.md, "Layers").
A layer uses only the layers below it; a lower one learns of a higher one
only through what the higher one registers (a reclaimer, a destroy hook, a
record section, a backend's entry in an operation's table).

Two checks, each failure naming the file, what it uses and both layers:
  - includes: a file of src/ that includes a header of a higher layer;
  - calls: an object of the static library whose undefined kiln__ symbol
    is defined by an object of a higher layer (nm on the archive). This
    one also sees a call through a declaration copied into a lower file.
Without STATIC_LIB (or without nm) only the includes are checked.

LAYERS below is the one place that says the order.
"""
import os
import re
import shutil
import subprocess
import sys

# Lowest first. A folder not listed here fails the check: a new folder
# takes its place in the order on purpose, not by accident.
LAYERS = [
    "base",
    "device",
    "core",
    "profile",
    "compile",
    "tuning",
    "ops",
    "backends",
    "runtime",
    "group",
    "io",
]
# Built as a library of its own over the public API (kiln/kiln.h): it may
# include nothing of src/ but its own folder.
APART = {"mpi"}

# Uses across layers not yet turned into registration (issue 41): each is
# (file, header or symbol). The list only shrinks; an entry no longer
# found fails too, so that it is taken out. Empty since the runtime's
# assembly moved to runtime/ (its own layer): keep it so.
KNOWN = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    top = rel.split("/", 1)[0]
    if top in APART:
        return top
    return top if top in LAYERS else None


def rank(layer):
    return LAYERS.index(layer) if layer in LAYERS else -1


def sources(src):
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                path = os.path.join(root, name)
                yield os.path.relpath(path, src).replace(os.sep, "/")


def check_includes(src, files):
    bad = []
    for rel in files:
        if "/" not in rel:
            bad.append(f"{rel}: a file at src/'s top, in no layer; expected one of "
                       f"the folders {', '.join(LAYERS)}")
            continue
        mine = layer_of(rel)
        if mine is None:
            bad.append(f"{rel}: folder '{rel.split('/')[0]}' is in no layer; add it "
                       f"to LAYERS in tests/check-layers.py at its place")
            continue
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            text = f.read()
        for header in INCLUDE.findall(text):
            if "/" not in header or header.startswith("kiln/"):
                continue  # same folder, the public API, or a generated file
            theirs = layer_of(header)
            if theirs is None or theirs == mine:
                continue
            if mine in APART or theirs in APART:
                bad.append(f"{rel} ({mine}) includes {header} ({theirs}): {mine} and "
                           f"{theirs} meet only through the public API")
            elif rank(theirs) > rank(mine):
                bad.append((rel, header, f"{rel} (layer {mine}) includes {header} "
                            f"of the higher layer {theirs}"))
    return bad


def object_names(files):
    """meson's name for each .c's object: its path from src/, '/' as '_'."""
    return {rel.replace("/", "_") + ".o": rel for rel in files if rel.endswith(".c")}


def check_calls(lib, files):
    nm = os.environ.get("NM") or shutil.which("nm")
    if not nm:
        print("note: no nm; calls across layers not checked", file=sys.stderr)
        return []
    objs = [lib]
    if os.path.isdir(lib):  # a folder of objects (meson's NAME.p) will do too
        objs = sorted(os.path.join(lib, n) for n in os.listdir(lib) if n.endswith(".o"))
    out = subprocess.run([nm, "-A", "--format=posix"] + objs, check=True,
                         capture_output=True, text=True).stdout
    names = object_names(files)
    defined, used = {}, []
    member = re.compile(r"^(?:.*\[)?([^\[\]:]+?)\]?:\s*(\S+)\s+(\S)")
    for line in out.splitlines():
        m = member.match(line)
        if not m:
            continue
        obj, sym, kind = m.groups()
        rel = names.get(os.path.basename(obj))
        if rel is None or not sym.startswith("kiln__"):
            continue
        if kind == "U":
            used.append((rel, sym))
        elif kind in "TW":  # code: a registry a higher layer fills is data
            defined[sym] = rel
    if not defined:
        return [f"{lib}: no kiln__ symbol defined by any object named after a "
                f"file of src/; expected meson's names (core_buffer.c.o)"]
    bad = []
    for rel, sym in sorted(set(used)):
        home = defined.get(sym)
        if home is None:
            continue
        mine, theirs = layer_of(rel), layer_of(home)
        if mine in LAYERS and theirs in LAYERS and rank(theirs) > rank(mine):
            bad.append((rel, sym, f"{rel} (layer {mine}) calls {sym}, defined in "
                            f"{home} of the higher layer {theirs}"))
    return bad


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    src = argv[1]
    files = list(sources(src))
    if not files:
        print(f"FAIL: no .c or .h file under {src}", file=sys.stderr)
        return 1
    found = check_includes(src, files)
    if len(argv) == 3:
        found += check_calls(argv[2], files)
    bad = [f[-1] if isinstance(f, tuple) else f for f in found
           if not (isinstance(f, tuple) and f[:2] in KNOWN)]
    seen = {f[:2] for f in found if isinstance(f, tuple)}
    for rel, what in sorted(KNOWN - seen):
        if len(argv) == 3 or not what.startswith("kiln__"):
            bad.append(f"{rel} no longer uses {what}: take it out of KNOWN in "
                       f"tests/check-layers.py")
    for line in bad:
        print("FAIL: " + line)
    if bad:
        print(f"{len(bad)} use{'s' if len(bad) != 1 else ''} across layers, lowest "
              f"first: {' < '.join(LAYERS)} (tests/check-layers.py)")
        return 1
    print(f"ok: {len(files)} files, layers {' < '.join(LAYERS)}; "
          f"{len(KNOWN)} known uses upward left (KNOWN)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
