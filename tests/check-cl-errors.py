#!/usr/bin/env python3
"""Compare kiln_cl_error_name() with the error codes the OpenCL headers define.

Usage: check-cl-errors.py <path to libkiln.so> --compiler <cc>

Finds the folder holding CL/cl.h that <cc> uses, reads every CL/*.h in it as
text (Windows-only headers such as cl_d3d10.h included; nothing is
preprocessed), collects every `#define CL_<NAME> <negative integer>` that is an
error code, and checks that libkiln names each code with one of the names the
headers give it. Standard library only.
"""

import argparse
import ctypes
import os
import re
import subprocess
import sys

# Fewer codes than this means the parsing broke (cl.h alone defines 61).
MIN_CODES = 60

# Negative #defines in the headers that are not error codes.
# CL_BUILD_NONE, CL_BUILD_ERROR, CL_BUILD_IN_PROGRESS: values of
# CL_PROGRAM_BUILD_STATUS (cl_build_status), which reuse -1..-3.
NOT_ERRORS_EXACT = {"CL_BUILD_NONE", "CL_BUILD_ERROR", "CL_BUILD_IN_PROGRESS"}
NOT_ERRORS_PATTERNS = [
    # CL_FLT_MIN_EXP, CL_DBL_MIN_10_EXP, CL_HALF_MIN_EXP ...: floating-point
    # limits in cl_platform.h (exponents), not errors.
    re.compile(r"_MIN(_10)?_EXP$"),
    # CL_PARTITION_BY_NAMES_LIST_END_INTEL, ...: terminators of property lists
    # (-1 marks the end of a list), not errors.
    re.compile(r"_LIST_END(_|$)"),
    # CL_SCHAR_MIN, CL_SHRT_MIN, CL_INT_MIN, CL_LONG_MIN: integer limits in
    # cl_platform.h, not errors.
    re.compile(r"^CL_\w*_MIN$"),
]

DEFINE_RE = re.compile(r"^\s*#\s*define\s+(CL_\w+)\s+(.*?)\s*$")
# -5, (-5), ((cl_int)-5), (cl_int)(-5), -5L, with optional spaces.
NEG_INT_RE = re.compile(
    r"^\(*\s*(?:\(\s*cl_int\s*\)\s*)?\(*\s*(-\s*(?:0[xX][0-9a-fA-F]+|\d+))"
    r"[uUlL]*\s*\)*$")
ALIAS_RE = re.compile(r"^\(*\s*(CL_\w+)\s*\)*$")


def excluded(name):
    return name in NOT_ERRORS_EXACT or any(p.search(name)
                                           for p in NOT_ERRORS_PATTERNS)


def run(cmd, stdin_text):
    try:
        proc = subprocess.run(cmd, input=stdin_text, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True,
                              check=False)
    except OSError as e:
        print("check-cl-errors: cannot run {}: {}".format(cmd[0], e),
              file=sys.stderr)
        return None
    return proc


def find_cl_folder(compiler):
    """The folder holding CL/cl.h for `compiler`, or None."""
    src = "#include <CL/cl.h>\n"
    # 1. The preprocessor's line markers name the file it opened.
    proc = run([compiler, "-E", "-x", "c", "-"], src)
    if proc is not None and proc.returncode == 0:
        for line in proc.stdout.splitlines():
            m = re.match(r'^#(?:line)?\s*\d+\s+"(.*)"', line)
            if not m:
                continue
            path = m.group(1).replace("\\\\", "\\")
            norm = path.replace("\\", "/")
            if norm.endswith("/CL/cl.h") and os.path.isfile(path):
                return os.path.dirname(os.path.abspath(path))
    # 2. The include search list printed by -v: the first folder with CL/cl.h.
    proc = run([compiler, "-E", "-x", "c", "-", "-v"], src)
    if proc is not None:
        in_list = False
        for line in proc.stderr.splitlines():
            if line.startswith("#include <...> search starts here"):
                in_list = True
                continue
            if line.startswith("End of search list"):
                break
            if in_list:
                d = line.strip()
                d = re.sub(r"\s+\(framework directory\)$", "", d)
                cand = os.path.join(d, "CL")
                if os.path.isfile(os.path.join(cand, "cl.h")):
                    return os.path.abspath(cand)
    return None


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def collect(cl_dir):
    """Returns (codes, headers, suspicious):
    codes: {code: set of (header, macro)}; headers: list of files read;
    suspicious: macros that look negative but could not be parsed."""
    headers = sorted(f for f in os.listdir(cl_dir)
                     if f.endswith(".h") and os.path.isfile(
                         os.path.join(cl_dir, f)))
    values = {}   # macro -> set of (header, int)
    aliases = []  # (header, macro, target macro)
    suspicious = []
    for h in headers:
        with open(os.path.join(cl_dir, h), encoding="utf-8",
                  errors="replace") as f:
            text = f.read()
        # Join continued lines, then drop comments.
        text = strip_comments(text.replace("\\\n", " "))
        for line in text.splitlines():
            m = DEFINE_RE.match(line)
            if not m:
                continue
            name, value = m.group(1), m.group(2)
            if excluded(name):
                continue
            n = NEG_INT_RE.match(value)
            if n:
                code = int(re.sub(r"\s+", "", n.group(1)), 0)
                values.setdefault(name, set()).add((h, code))
                continue
            a = ALIAS_RE.match(value)
            if a:
                aliases.append((h, name, a.group(1)))
                continue
            if re.match(r"^\(*\s*(\(\s*\w+\s*\)\s*)?-", value):
                suspicious.append((h, name, value))
    codes = {}
    for name, hv in values.items():
        for h, code in hv:
            codes.setdefault(code, set()).add((h, name))
    # `#define CL_NEW_NAME CL_OLD_NAME` where CL_OLD_NAME is an error code.
    for h, name, target in aliases:
        for _, code in values.get(target, ()):
            codes[code].add((h, name))
    return codes, headers, suspicious


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", help="path to libkiln.so")
    ap.add_argument("--compiler", default=os.environ.get("CC", "cc"),
                    help="C compiler whose OpenCL headers to read")
    args = ap.parse_args()

    compiler = args.compiler
    # meson passes cc.cmd_array()[0], which is the wrapper itself when the
    # compiler is wrapped ("ccache cc"): the wrapper cannot preprocess.
    if os.path.basename(compiler) in ("ccache", "sccache", "distcc"):
        cc_env = os.environ.get("CC", "").split()
        compiler = next((w for w in cc_env if os.path.basename(w) not in
                         ("ccache", "sccache", "distcc")), "cc")
        print("note: {} is a compiler wrapper; using {}".format(
            args.compiler, compiler))
    cl_dir = find_cl_folder(compiler)
    if cl_dir is None:
        print("FAIL: {} finds no CL/cl.h".format(compiler))
        return 1
    print("OpenCL headers: {}".format(cl_dir))

    codes, headers, suspicious = collect(cl_dir)
    for h, name, value in suspicious:
        print("note: {}: {} = {} looks negative but is not a plain integer; "
              "not checked".format(h, name, value))

    lib = ctypes.CDLL(os.path.abspath(args.library))
    fn = lib.kiln_cl_error_name
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_char_p

    def name_of(code):
        r = fn(code)
        return None if r is None else r.decode("utf-8", "replace")

    failures = 0
    header_names = {}  # macro -> code
    for code, defs in codes.items():
        for _, name in defs:
            header_names[name] = code

    for code in sorted(codes, reverse=True):
        defs = codes[code]
        allowed = {name for _, name in defs}
        got = name_of(code)
        if got not in allowed:
            failures += 1
            for h, name in sorted(defs):
                print("MISMATCH: {}: {} = {}: kiln_cl_error_name returned "
                      "{!r}".format(h, name, code, got))

    fixed = [(0, "CL_SUCCESS"), (-9999, "CL_UNKNOWN_ERROR"),
             (12345, "CL_UNKNOWN_ERROR")]
    for code, want in fixed:
        if code in codes:
            continue
        got = name_of(code)
        if got != want:
            failures += 1
            print("MISMATCH: kiln_cl_error_name({}) returned {!r}, expected "
                  "{!r}".format(code, got, want))

    # Codes kiln names that these headers do not define are fine (kiln lists
    # codes from newer headers), but such a name must not be one the headers
    # give to another code.
    extra = []
    for code in range(-2000, 0):
        if code in codes:
            continue
        got = name_of(code)
        if got in header_names:
            failures += 1
            print("MISMATCH: kiln_cl_error_name({}) returned {!r}, which the "
                  "headers define as {}".format(code, got, header_names[got]))
        elif got != "CL_UNKNOWN_ERROR":
            extra.append("{}={}".format(code, got))
    if extra:
        print("note: kiln names codes these headers do not define: "
              + ", ".join(extra))

    with_codes = {h for defs in codes.values() for h, _ in defs}
    print("checked {} codes from {} headers ({} CL/*.h files read)".format(
        len(codes), len(with_codes), len(headers)))
    if len(codes) < MIN_CODES:
        print("FAIL: only {} error codes found (expected at least {}): the "
              "header parsing is broken".format(len(codes), MIN_CODES))
        return 1
    if failures:
        print("FAIL: {} mismatch(es)".format(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
