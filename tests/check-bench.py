#!/usr/bin/env python3
"""check-bench.py <kiln> <json|no-json> [suite] — the whole `kiln bench` suite runs.

`kiln bench --quick --repeat 1` (small sizes: seconds) exits 0 and prints one
table on stdout with a row for every group; --json (with json-c) and --csv
write the same records, every group among them, each with its fields; --plot
writes a PNG when gnuplot is installed and says in one line why not when it
is not (and still writes the rest, exit 0); the JSON records the run (kiln,
device, driver, platform, time); --compare runs an old file's cases again and
marks each SLOWER, exit 1, or none, exit 0, against records made 10^4 times
faster or slower than this machine's; bad options are one line on stderr and
exit 2. The figures themselves are never judged: timing belongs to `kiln
bench`, not to tests. With `suite`, only the suite's run and its records
(each case checks its result before it is timed, and a failed check fails
the run): the rusticl suite's run on llvmpipe (KILN_DEVICE=mesa), where what
is tried is the device, not the options.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from kilncheck import FAILURES, check

GROUPS = ["gemm", "conv", "reduce", "fft", "launch", "overhead", "streams", "bandwidth", "compile", "mlp",
          "devices"]
FIELDS = ["group", "case", "size", "backend", "median", "unit", "repeats", "checked",
          "op", "dtype", "shape", "median_ms", "gflops", "gbps"]
NO_GNUPLOT = "no plot: gnuplot is not installed"


def run(args, env=None, cwd=None):
    return subprocess.run([KILN, "bench"] + args, env=env or os.environ, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)


def check_records(records, source):
    groups = {r.get("group") for r in records}
    check(set(GROUPS) <= groups, f"{source} holds every group ({sorted(groups)})")
    missing = [f for f in FIELDS if any(f not in r for r in records)]
    check(records and not missing, f"{source}: every record has every field ({missing})")
    figures = all(float(r["median"]) > 0 and int(r["repeats"]) >= 1 for r in records)
    check(figures, f"{source}: every median is a positive number, repeats >= 1")


def check_png(path, what):
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
    except OSError as e:
        magic = repr(e).encode()
    check(magic == b"\x89PNG\r\n\x1a\n", f"{what}: {path} is a PNG ({magic!r})")


def check_suite(tmp, with_json, compare=True):
    out = {k: os.path.join(tmp, "suite." + k) for k in ("json", "csv", "png")}
    args = ["--quick", "--repeat", "1", "--csv", out["csv"], "--plot", out["png"]]
    if with_json:
        args += ["--json", out["json"]]
    proc = run(args)
    check(proc.returncode == 0,
          f"kiln bench {' '.join(args)} exits 0 (got {proc.returncode}: "
          f"{proc.stderr.strip()[-2000:]})")
    rows = proc.stdout.splitlines()
    check(rows and rows[0].split()[:3] == ["group", "case", "backend"],
          "stdout is one table with its heading")
    seen = {row.split()[0] for row in rows[1:] if row.split()}
    check(set(GROUPS) <= seen, f"the table has rows of every group ({sorted(seen)})")
    if with_json:
        with open(out["json"]) as f:
            doc = json.load(f)
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc.get("time", "")) and
              all(doc.get(k) for k in ("kiln", "device", "driver", "platform")),
              f"--json records the run: kiln, device, driver, platform, time "
              f"({ {k: v for k, v in doc.items() if k != 'records'} })")
        check_records(doc.get("records", []), "--json")
        if compare:
            check_compare(tmp, doc)
    with open(out["csv"], newline="") as f:
        check_records(list(csv.DictReader(f)), "--csv")
    if shutil.which("gnuplot"):
        check_png(out["png"], "--plot with gnuplot")
    else:
        check(NO_GNUPLOT in proc.stderr and not os.path.exists(out["png"]),
              "--plot without gnuplot says so and writes no file")


def check_compare(tmp, doc):
    """--compare against the suite's file, its records of two groups (one
    with named rows) made 10^4 times faster, then slower, than they are (100
    times once failed: a case the suite's run timed under heavy load ran more
    than 100 times faster in --compare's run): every
    case SLOWER and exit 1, then none and exit 0; and a bare array of
    records, as --json wrote before it recorded the run."""
    some = [r for r in doc["records"] if r["group"] in ("reduce", "fft")]
    for factor, code, what in ((1e4, 1, "all SLOWER"), (1e-4, 0, "none slower")):
        old = dict(doc, records=[dict(r, median=r["median"] * (
            factor if r["unit"] in ("GFLOP/s", "GB/s") else 1 / factor)) for r in some])
        path = os.path.join(tmp, "old.json")
        with open(path, "w") as f:
            json.dump(old if code else old["records"], f)
        proc = run(["--compare", path, "--repeat", "1"])
        rows = [line for line in proc.stdout.splitlines()
                if line.split()[:1] in (["reduce"], ["fft"])]
        marked = [line for line in rows if line.endswith("SLOWER")]
        check(proc.returncode == code and len(rows) == len(some) and
              len(marked) == (len(some) if code else 0),
              f"--compare {what}: exit {proc.returncode} (expected {code}), {len(rows)} of "
              f"{len(some)} cases, {len(marked)} SLOWER ({proc.stderr.strip()[-300:]!r})")


def check_without_gnuplot(tmp):
    """No gnuplot on PATH: one clear line, the other outputs, exit 0. The
    bandwidth group compiles no kernel, so it needs nothing from PATH."""
    csv_path, png = os.path.join(tmp, "bw.csv"), os.path.join(tmp, "bw.png")
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    env = dict(os.environ, PATH=empty)
    proc = run(["bandwidth", "--quick", "--repeat", "1", "--csv", csv_path,
                "--plot", png], env=env)
    lines = [l for l in proc.stderr.splitlines() if NO_GNUPLOT in l]
    check(proc.returncode == 0 and len(lines) == 1 and not os.path.exists(png),
          f"without gnuplot: exit 0, one line, no PNG (exit {proc.returncode}: "
          f"{proc.stderr.strip()!r})")
    check(os.path.exists(csv_path) and "copy" in proc.stdout,
          "without gnuplot the table and the CSV are still written")


def check_group_plot(tmp):
    if not shutil.which("gnuplot"):
        return
    png = os.path.join(tmp, "reduce.png")
    proc = run(["reduce", "--quick", "--repeat", "1", "--plot", png])
    check(proc.returncode == 0,
          f"kiln bench reduce --plot exits 0 ({proc.stderr.strip()!r})")
    check_png(png, "one group's plot")


def check_errors(with_json):
    cases = [(["--frob"], "unknown option '--frob'"),
             (["frob"], "unknown group 'frob'"),
             (["--repeat", "0"], "--repeat '0' is not a value it takes; --repeat R:"),
             (["conv", "--plot", "x.png"], "conv has no sizes to plot"),
             (["launch", "--sizes", "0"], "--sizes '0' is not a value it takes; "
              "--sizes N,...: the cases: launch counts"),
             (["overhead", "--sizes", "8"], "the cases: case numbers"),
             (["bandwidth", "--backend", "memcpy"],
              "--backend 'memcpy' is not a value it takes; --backend copy,write,read:"),
             (["compile", "--sizes", "3"], "the cases: kernel file numbers")]
    if not with_json:
        cases.append((["--json", "x.json"], "--json needs kiln built with json-c"))
        cases.append((["--compare", "x.json"], "--compare reads JSON"))
    cases += [(["--tolerance", "5%"], "--tolerance goes with --compare"),
              (["--compare", "x.json", "--tolerance", "ten"], "--tolerance 'ten'"),
              (["gemm", "--compare", "x.json", "--sizes", "8"], "--compare runs OLD.json's")]
    for args, text in cases:
        proc = run(args)
        lines = proc.stderr.splitlines()
        check(proc.returncode == 2 and len(lines) == 1 and text in lines[0],
              f"kiln bench {' '.join(args)}: one line naming the fault, exit 2 "
              f"(exit {proc.returncode}: {proc.stderr.strip()!r})")
    proc = run(["--help"])
    commands = proc.stdout.split("\ncommands", 1)[-1].split("\n\n")[0]
    listed = re.findall(r"^  (\w+) ", commands, re.M)
    check(proc.returncode == 0 and listed == GROUPS,
          f"kiln bench --help lists every group, in order ({listed})")


def main():
    with_json = sys.argv[2] == "json"
    if sys.argv[3:] == ["suite"]:
        with tempfile.TemporaryDirectory() as tmp:
            check_suite(tmp, with_json, compare=False)
        print(f"{len(FAILURES)} failed" if FAILURES else "all passed")
        return 1 if FAILURES else 0
    check_errors(with_json)
    with tempfile.TemporaryDirectory() as tmp:
        check_suite(tmp, with_json)
        check_without_gnuplot(tmp)
        check_group_plot(tmp)
    print(f"{len(FAILURES)} failed" if FAILURES else "all passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    KILN = sys.argv[1]
    sys.exit(main())
