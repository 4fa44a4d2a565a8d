#!/usr/bin/env python3
"""check-cli-bad.py KILN — every `kiln` command given bad input: malformed
.npy files of many kinds, files that are missing or are folders, operands of
the wrong type or shape for each operation, unknown options, options without
their value, numbers out of range, output paths that cannot be written and a
bad KILN_DEVICE. Each must end with a non-zero exit that is not a signal,
exactly one non-empty line on stderr, nothing on stdout, no sign of a crash,
and no output file: none where there was none, and a file that was there
before left as it was. Standard library only; the .npy files are written
byte by byte here."""
import os
import stat
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

from npyfile import save

KILN = sys.argv[1]
CRASH = ("Segmentation", "AddressSanitizer", "LeakSanitizer", "runtime error",
         "Aborted", "core dumped", "double free", "stack smashing", "free():",
         "malloc():", "Assertion")
SENTINEL = b"kept: a file from before the failed run\n"

cases = 0
failures = []


def run(args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([KILN, *args], capture_output=True, env=env, timeout=120)


def leftovers(out):
    """Temporary files a save left beside out."""
    d, base = os.path.split(out)
    try:
        return [n for n in os.listdir(d or ".") if n.startswith(base + ".tmp")]
    except OSError:
        return []


def refused(what, args, out=None, env=None, pre=True):
    """Runs kiln with args, which must fail cleanly; out is the -o path, which
    must not be created, and is also tried as a file that exists before (when
    pre and its folder is writable), which must be left unchanged."""
    global cases
    for existing in (False, True) if out and pre and not os.path.isdir(out) else (False,):
        if out and not os.path.isdir(out):
            if existing:
                try:
                    with open(out, "wb") as f:
                        f.write(SENTINEL)
                except OSError:  # a folder nobody can write: no such case
                    continue
            elif os.path.lexists(out):
                os.remove(out)
        cases += 1
        r = run(args, env)
        err = r.stderr.decode("utf-8", "replace")
        outtext = r.stdout.decode("utf-8", "replace")
        problems = []
        if r.returncode == 0:
            problems.append("exit 0")
        elif r.returncode < 0 or r.returncode >= 128:
            problems.append("exit %d: killed by a signal" % r.returncode)
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].strip():
            problems.append("stderr has %d lines, expected one" % len(lines))
        if outtext:
            problems.append("stdout is not empty")
        for sign in CRASH:
            if sign in err or sign in outtext:
                problems.append("'%s' in the output" % sign)
        if out and not os.path.isdir(out):
            if existing:
                with open(out, "rb") as f:
                    if f.read() != SENTINEL:
                        problems.append("the existing %s was changed" % out)
                os.remove(out)
            elif os.path.lexists(out):
                problems.append("%s was created" % out)
                os.remove(out)
        if out and leftovers(out):
            problems.append("temporary files left: %s" % leftovers(out))
        label = what + (" (over an existing -o file)" if existing else "")
        if problems:
            failures.append(label)
            print("FAIL: %s: %s\n    kiln %s\n    exit %d\n    stderr: %r\n    stdout: %r"
                  % (label, "; ".join(problems), " ".join(args), r.returncode, err[:600],
                     outtext[:300]))
        else:
            print("ok: %s: %s" % (label, lines[0][:110]))


# ---- .npy files, byte by byte ---------------------------------------------

def npy(header, data=b"", version=(1, 0), magic=b"\x93NUMPY", hlen=None, pad=True):
    """A .npy file with the header dict text `header`, padded as numpy pads
    it; hlen overrides the stored header length."""
    h = header.encode("latin-1") if isinstance(header, str) else header
    prelen = 10 if version[0] == 1 else 12
    if pad:
        h += b" " * ((64 - (prelen + len(h) + 1) % 64) % 64) + b"\n"
    n = len(h) if hlen is None else hlen
    size = struct.pack("<H", n) if version[0] == 1 else struct.pack("<I", n)
    return magic + bytes(version) + size + h + data


def head(descr="<f4", fortran="False", shape="(2, 3)"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (
        descr if descr.startswith(("'", "[")) else "'%s'" % descr, fortran, shape)


F6 = struct.pack("<6f", *range(6))

# name -> bytes; each is not a .npy file kiln reads
MALFORMED = {
    "empty file": b"",
    "truncated magic": b"\x93NUM",
    "bad magic": npy(head(), F6, magic=b"\x93NUMPX"),
    "text file": b"1,2,3\n4,5,6\n",
    "version 9.0": npy(head(), F6, version=(9, 0)),
    "version 1.9": npy(head(), F6, version=(1, 9)),
    "no header length": b"\x93NUMPY\x01\x00",
    "header length beyond the file": npy(head(), F6, hlen=60000),
    "header length 0": npy(head(), F6, hlen=0),
    "v2 header length beyond the file": npy(head(), F6, version=(2, 0), hlen=1 << 31),
    "header not a dict": npy("[1, 2, 3]", F6),
    "header garbage": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", F6),
    "header with NUL": npy("{'descr': '<f4'\x00, 'fortran_order': False, 'shape': (2, 3), }", F6),
    "header not latin-1 text": npy(b"{'descr': '<f4', \xff\xfe 'shape': (2, 3), }", F6),
    "missing shape": npy("{'descr': '<f4', 'fortran_order': False, }", F6),
    "missing descr": npy("{'fortran_order': False, 'shape': (2, 3), }", F6),
    "unknown key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1, }", F6),
    "repeated key": npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                        "'shape': (2, 3), }", F6),
    "dtype <U4": npy(head("<U4"), b"\0" * 96),
    "dtype >f4": npy(head(">f4"), F6),
    "dtype object": npy(head("|O"), b"\0" * 48),
    "dtype bool": npy(head("|b1"), b"\0" * 6),
    "dtype uint16": npy(head("<u2"), b"\0" * 12),
    "dtype <f16": npy(head("<f16"), b"\0" * 96),
    "structured dtype": npy(head("[('a', '<f4'), ('b', '<f4')]"), b"\0" * 48),
    "dtype not a string": npy(head("4"), F6),
    "fortran_order not a bool": npy(head(fortran="'yes'"), F6),
    "fortran_order 1": npy(head(fortran="1"), F6),
    "shape not a tuple": npy(head(shape="6"), F6),
    "negative dimension": npy(head(shape="(-2, 3)"), F6),
    "dimension not a number": npy(head(shape="(2, 'x')"), F6),
    "huge shape overflowing": npy(head(shape="(4294967296, 4294967296, 16)"), F6),
    "dimension beyond 64 bits": npy(head(shape="(100000000000000000000000, 1)"), F6),
    "nine dimensions": npy(head(shape="(1, 1, 1, 1, 1, 1, 1, 2, 3)"), F6),
    "data shorter than the shape": npy(head(shape="(2, 3)"), F6[:-4]),
    "data longer than the shape": npy(head(shape="(2, 3)"), F6 + b"\0\0\0\0"),
    "no data": npy(head(shape="(2, 3)"), b""),
    "data a partial element": npy(head(shape="(2, 3)"), F6[:-1]),
    "v3 header beyond the file": npy(head(), F6, version=(3, 0), hlen=4096),
}


def main():
    t = tempfile.mkdtemp(prefix="kiln-cli-bad-")
    p = lambda name: os.path.join(t, name)
    start = time.monotonic()
    # good operands, so that each case has one thing wrong
    save(p("a.npy"), (2, 3), [1, 2, 3, 4, 5, 6])
    save(p("b.npy"), (3, 2), [1, 0, 0, 1, 1, 1])
    save(p("x.npy"), (1, 2, 5, 5), [i / 8 for i in range(50)])
    save(p("w.npy"), (3, 2, 3, 3), [(i % 5) / 4 for i in range(54)])
    save(p("w3.npy"), (3, 3, 3, 3), [(i % 7) / 4 for i in range(81)])
    save(p("b2.npy"), (2,), [1, 2])
    save(p("z.npy"), (4, 8), [complex(i, -i) for i in range(32)], descr="<c8")
    save(p("r.npy"), (4, 8), [float(i) for i in range(32)])
    save(p("i.npy"), (2, 3), [1, 2, 3, 4, 5, 6], descr="<i4")
    save(p("empty.npy"), (0, 3), [])
    save(p("scalar.npy"), (), [2.0])
    save(p("v1.npy"), (3,), [1, 2, 3])
    save(p("z1.npy"), (4, 1), [complex(i, 1) for i in range(4)], descr="<c8")
    save(p("i3.npy"), (3, 2), [1, 0, 0, 1, 1, 1], descr="<i4")
    with open(p("a.npz"), "wb") as f:  # not a zip archive
        f.write(b"not a zip\n")
    with zipfile.ZipFile(p("ab.npz"), "w") as z:  # as np.savez writes one
        z.write(p("a.npy"), "A.npy")
        z.write(p("b.npy"), "B.npy")
        z.writestr("notes.npy", "not an array\n")
    os.mkdir(p("folder.npy"))
    with open(p("afile"), "w") as f:
        f.write("not a folder\n")
    for name, data in MALFORMED.items():
        with open(p(name.replace(" ", "_") + ".npy"), "wb") as f:
            f.write(data)
    bad = lambda name: p(name.replace(" ", "_") + ".npy")
    out = p("out.npy")

    # -- every malformed file as each operand of each operation, and as a
    # member of an .npz archive (read from memory, with the same checks)
    with zipfile.ZipFile(p("malformed.npz"), "w", zipfile.ZIP_DEFLATED) as z:
        for k, name in enumerate(MALFORMED):
            z.writestr("m%d.npy" % k, MALFORMED[name])
    for k, name in enumerate(MALFORMED):
        refused("gemm A: %s" % name, ["run", "gemm", bad(name), p("b.npy"), "-o", out], out)
        refused("gemm A from an .npz: %s" % name,
                ["run", "gemm", p("malformed.npz") + ":m%d" % k, p("b.npy"), "-o", out], out)
    for name in ("bad magic", "header length beyond the file", "dtype >f4",
                 "data shorter than the shape", "huge shape overflowing", "empty file"):
        refused("gemm B: %s" % name, ["run", "gemm", p("a.npy"), bad(name), "-o", out], out)
        refused("gemm --c: %s" % name, ["run", "gemm", p("a.npy"), p("b.npy"), "--c",
                                        bad(name), "-o", out], out)
        refused("reduce: %s" % name, ["run", "reduce", "--op", "sum", bad(name), "-o", out],
                out)
        refused("conv2d X: %s" % name, ["run", "conv2d", bad(name), p("w.npy"), "-o", out],
                out)
        refused("conv2d W: %s" % name, ["run", "conv2d", p("x.npy"), bad(name), "-o", out],
                out)
        refused("conv2d --bias: %s" % name, ["run", "conv2d", p("x.npy"), p("w.npy"),
                                            "--bias", bad(name), "-o", out], out)
        refused("fft: %s" % name, ["run", "fft", bad(name), "-o", out], out)

    # -- missing files and folders
    for op, args in (("gemm", ["run", "gemm", "{}", p("b.npy")]),
                     ("reduce", ["run", "reduce", "--op", "max", "{}"]),
                     ("conv2d", ["run", "conv2d", "{}", p("w.npy")]),
                     ("fft", ["run", "fft", "{}"])):
        for what, path in (("a missing file", p("nope.npy")), ("a folder", p("folder.npy")),
                           ("an empty name", "")):
            refused("%s of %s" % (op, what),
                    [a.replace("{}", path) for a in args] + ["-o", out], out)
    refused("build of a missing file", ["build", p("nope.cl")])
    refused("build of a folder", ["build", t])

    # -- operands of the wrong type or shape for each operation
    wrong = [
        ("gemm of a 1-D A", ["run", "gemm", p("v1.npy"), p("b.npy")]),
        ("gemm of a 0-D A", ["run", "gemm", p("scalar.npy"), p("b.npy")]),
        ("gemm of a 4-D A", ["run", "gemm", p("x.npy"), p("b.npy")]),
        ("gemm with mismatched inner sizes", ["run", "gemm", p("a.npy"), p("a.npy")]),
        ("gemm of an empty A", ["run", "gemm", p("empty.npy"), p("b.npy")]),
        ("gemm of complex A", ["run", "gemm", p("z.npy"), p("b.npy")]),
        ("gemm with --c of another shape", ["run", "gemm", p("a.npy"), p("b.npy"),
                                            "--c", p("a.npy")]),
        ("reduce along an axis it lacks", ["run", "reduce", "--op", "sum", "--axis", "2",
                                           p("a.npy")]),
        ("reduce along axis -3 of 2-D", ["run", "reduce", "--op", "sum", "--axis", "-3",
                                         p("a.npy")]),
        ("reduce of complex", ["run", "reduce", "--op", "sum", p("z.npy")]),
        ("argmax of nothing", ["run", "reduce", "--op", "argmax", p("empty.npy")]),
        ("min of nothing along an axis", ["run", "reduce", "--op", "min", "--axis", "0",
                                          p("empty.npy")]),
        ("conv2d of a 2-D X", ["run", "conv2d", p("a.npy"), p("w.npy")]),
        ("conv2d of a 2-D W", ["run", "conv2d", p("x.npy"), p("a.npy")]),
        ("conv2d with channels that differ", ["run", "conv2d", p("x.npy"), p("w3.npy")]),
        ("conv2d of int32", ["run", "conv2d", p("i.npy"), p("w.npy")]),
        ("conv2d with a bias of another length", ["run", "conv2d", p("x.npy"), p("w.npy"),
                                                  "--bias", p("b2.npy")]),
        ("conv2d with a filter larger than X", ["run", "conv2d", p("x.npy"), p("w.npy"),
                                                "--dilation", "4"]),
        ("conv2d with groups that do not divide", ["run", "conv2d", p("x.npy"),
                                                   p("w.npy"), "--groups", "3"]),
        ("fft --real of complex data", ["run", "fft", "--real", p("z.npy")]),
        ("fft along an axis it lacks", ["run", "fft", "--axes", "-3", p("z.npy")]),
        ("fft of an empty array", ["run", "fft", p("empty.npy")]),
        ("fft of a 0-D array", ["run", "fft", p("scalar.npy")]),
        ("fft --real --inverse of one bin, no --n",
         ["run", "fft", "--real", "--inverse", p("z1.npy")]),
        ("gemm of int32 matrices", ["run", "gemm", p("i.npy"), p("i3.npy")]),
        ("npz without the member", ["run", "gemm", p("ab.npz") + ":C", p("b.npy")]),
        ("npz of two arrays, none named", ["run", "gemm", p("ab.npz"), p("b.npy")]),
        ("npz that is not a zip", ["run", "gemm", p("a.npy").replace(".npy", ".npz"),
                                   p("b.npy")]),
        ("npz member that is not .npy", ["run", "gemm", p("ab.npz") + ":notes",
                                         p("b.npy")]),
    ]
    for what, args in wrong:
        refused(what, args + ["-o", out], out)

    # -- unknown options, options without their value, numbers out of range
    gemm = ["run", "gemm", p("a.npy"), p("b.npy"), "-o", out]
    red = ["run", "reduce", "--op", "sum", p("a.npy"), "-o", out]
    conv = ["run", "conv2d", p("x.npy"), p("w.npy"), "-o", out]
    fft = ["run", "fft", p("z.npy"), "-o", out]
    options = [
        ("gemm --bogus", gemm + ["--bogus"]),
        ("gemm --bogus last", gemm + ["--bogus", "1"]),
        ("gemm --alpha without a value", gemm + ["--alpha"]),
        ("gemm --alpha abc", gemm + ["--alpha", "abc"]),
        ("gemm --alpha 1e400", gemm + ["--alpha", "1e400"]),
        ("gemm --beta nan", gemm + ["--beta", "nan"]),
        ("gemm --alpha empty", gemm + ["--alpha", ""]),
        ("gemm --dtype int8", gemm + ["--dtype", "int8"]),
        ("gemm --backend gpu", gemm + ["--backend", "gpu"]),
        ("gemm --c without a value", gemm + ["--c"]),
        ("gemm without -o", ["run", "gemm", p("a.npy"), p("b.npy")]),
        ("gemm -o without a value", ["run", "gemm", p("a.npy"), p("b.npy"), "-o"]),
        ("gemm with three matrices", gemm + [p("a.npy")]),
        ("gemm without operands", ["run", "gemm", "-o", out]),
        ("reduce without --op", ["run", "reduce", p("a.npy"), "-o", out]),
        ("reduce --op bogus", red + ["--op", "median"]),
        ("reduce --axis abc", red + ["--axis", "abc"]),
        ("reduce --axis 1e400", red + ["--axis", "1e400"]),
        ("reduce --axis 99", red + ["--axis", "99"]),
        ("reduce --axis 1.5", red + ["--axis", "1.5"]),
        ("reduce --axis without a value", red + ["--axis"]),
        ("reduce --backend vkfft", red + ["--backend", "vkfft"]),
        ("reduce --bogus", red + ["--bogus"]),
        ("conv2d --stride 0", conv + ["--stride", "0"]),
        ("conv2d --stride -1", conv + ["--stride", "-1"]),
        ("conv2d --stride abc", conv + ["--stride", "abc"]),
        ("conv2d --stride 1,2,3", conv + ["--stride", "1,2,3"]),
        ("conv2d --pad 1e400", conv + ["--pad", "1e400"]),
        ("conv2d --pad 99999999999", conv + ["--pad", "99999999999"]),
        ("conv2d --groups 0", conv + ["--groups", "0"]),
        ("conv2d --layout nchwd", conv + ["--layout", "nchwd"]),
        ("conv2d --backend cudnn", conv + ["--backend", "cudnn"]),
        ("conv2d --dilation without a value", conv + ["--dilation"]),
        ("conv2d --bogus", conv + ["--bogus"]),
        ("fft --axes abc", fft + ["--axes", "abc"]),
        ("fft --axes 5", fft + ["--axes", "5"]),
        ("fft --axes -1,-1", fft + ["--axes", "-1,-1"]),
        ("fft --n 0", ["run", "fft", "--real", "--inverse", p("z.npy"), "-o", out, "--n", "0"]),
        ("fft --n -3", ["run", "fft", "--real", "--inverse", p("z.npy"), "-o", out, "--n", "-3"]),
        ("fft --n 1e400", ["run", "fft", "--real", "--inverse", p("z.npy"), "-o", out,
                           "--n", "1e400"]),
        ("fft --backend cufft", fft + ["--backend", "cufft"]),
        ("fft --norm none", fft + ["--norm", "none"]),
        ("fft --bogus", fft + ["--bogus"]),
        ("run without an operation", ["run"]),
        ("run of an unknown operation", ["run", "matmul", p("a.npy"), p("b.npy"), "-o", out]),
    ]
    for what, args in options:
        refused(what, args, out if "-o" in args and args[args.index("-o") + 1:] else None)
    for what, args in [
        ("no command", []),
        ("an unknown command", ["frobnicate"]),
        ("info --bogus", ["info", "--bogus"]),
        ("info --device without a value", ["info", "--device"]),
        ("info --device 99:99", ["info", "--device", "99:99"]),
        ("info --device bogus", ["info", "--device", "name=no-such-device"]),
        ("devices --bogus", ["devices", "--bogus"]),
        ("devices with an argument", ["devices", "x"]),
        ("kernels --bogus", ["kernels", "--bogus"]),
        ("cache --bogus", ["cache", "--bogus"]),
        ("cache --clear extra", ["cache", "--clear", "x"]),
        ("check with an argument", ["check", "x"]),
        ("build without a file", ["build"]),
        ("bench --bogus", ["bench", "--bogus"]),
        ("bench of an unknown group", ["bench", "frob"]),
        ("bench gemm --sizes abc", ["bench", "gemm", "--sizes", "abc"]),
        ("bench gemm --sizes -1", ["bench", "gemm", "--sizes", "-1"]),
        ("bench gemm --sizes 1e400", ["bench", "gemm", "--sizes", "1e400"]),
        ("bench gemm --sizes without a value", ["bench", "gemm", "--sizes"]),
        ("bench --repeat 0", ["bench", "gemm", "--repeat", "0"]),
        ("bench --repeat abc", ["bench", "gemm", "--repeat", "abc"]),
        ("bench --backend gpu", ["bench", "gemm", "--backend", "gpu"]),
        ("bench --csv without a value", ["bench", "gemm", "--csv"]),
    ]:
        refused(what, args)

    # -- output paths that cannot be written
    if os.geteuid() == 0:  # root writes any mode-0555 folder; sysfs refuses even root
        readonly = "/sys/kiln-cli-bad.npy"
    else:
        os.mkdir(p("readonly"))
        os.chmod(p("readonly"), stat.S_IRUSR | stat.S_IXUSR)
        readonly = p("readonly/out.npy")
    for what, path in (("in a missing folder", p("missing/out.npy")),
                       ("under a file", p("afile/out.npy")),
                       ("in a read-only folder", readonly),
                       ("an existing folder", p("folder.npy"))):
        refused("gemm -o %s" % what, ["run", "gemm", p("a.npy"), p("b.npy"), "-o", path], path)
        refused("reduce -o %s" % what, ["run", "reduce", "--op", "sum", p("a.npy"), "-o",
                                        path], path)
        refused("conv2d -o %s" % what, ["run", "conv2d", p("x.npy"), p("w.npy"), "-o", path],
                path)
        refused("fft -o %s" % what, ["run", "fft", p("z.npy"), "-o", path], path)
    for flag in ("--json", "--csv", "--plot"):
        path = p("missing/bench." + flag[2:])
        refused("bench %s %s" % (flag, "in a missing folder"),
                ["bench", "reduce", "--sizes", "1K", "--repeat", "1", "--backend", "kiln",
                 flag, path], path)

    # -- a bad KILN_DEVICE, for every command that opens a device
    env = {"KILN_DEVICE": "no-such-device"}
    for what, args, o in [
        ("devices", ["devices"], None),
        ("kernels", ["kernels"], None),
        ("check", ["check"], None),
        ("cache", ["cache"], None),
        ("build", ["build", p("nope.cl")], None),
        ("bench", ["bench", "reduce", "--sizes", "1K", "--repeat", "1"], None),
        ("run gemm", gemm, out),
        ("run reduce", red, out),
        ("run conv2d", conv, out),
        ("run fft", fft, out),
    ]:
        refused("KILN_DEVICE=no-such-device: %s" % what, args, o, env)
    refused("KILN_DEVICE=99:0: run gemm", gemm, out, {"KILN_DEVICE": "99:0"})
    refused("KILN_DEVICE empty: run gemm", gemm, out, {"KILN_DEVICE": ","})

    os.chmod(t, stat.S_IRWXU)
    if os.path.isdir(p("readonly")):
        os.chmod(p("readonly"), stat.S_IRWXU)
    subprocess.run(["rm", "-rf", t])
    print("%d cases, %d failed, %.1f s" % (cases, len(failures), time.monotonic() - start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
