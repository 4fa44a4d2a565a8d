#!/usr/bin/env python3
"""kiln-gpu-check: kiln checked on this machine's GPU from the bundle alone
(ci/bundle.sh), with python3 and nothing else: no meson, no compiler, no
packages. It does what ci/gpu.sh does from the sources: kiln info, kiln
devices, kiln check, the bundle's tests with KILN_DEVICE=gpu in parallel,
kiln tune and kiln bench --json, each step under a time cap of its own and
all of them within --budget, and writes one report: a .tar.gz of report.txt
(the summary and each step's output), summary.json, the JSON of kiln info,
the tuning record and the benchmark, and every log. The report is rewritten
after each step, so a run cut short still leaves what it did.

Exit status: 0 every step passed, 1 a step failed (the report says which),
2 a usage error, 77 no GPU (unless --allow-cpu).
"""

import argparse
import concurrent.futures as cf
import datetime
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
KILN = os.path.join(ROOT, "bin", "kiln")

# Each step's share of a 600-second budget and its cap there; both scale
# with --budget. A step gets its share, plus what the ones before it left
# unused, less what the ones after it are planned to take.
PLAN = {  # name: (share, cap)
    "version": (5, 20), "icd": (10, 30), "info": (10, 30), "info-json": (10, 30),
    "devices": (10, 30), "check": (60, 150), "tests": (250, 400), "tune": (90, 150),
    "tune-record": (5, 20), "bench": (145, 600),
}
STEPS = ["info", "devices", "check", "tests", "tune", "bench"]
# --quick: a few tests, a short tune and the quick benchmark of two groups,
# for CI on a CPU (a check that every step runs, not figures to quote).
QUICK_TESTS = ["runtime", "abi", "elementwise", "streams", "example-mlp",
               "example-fft_filter", "example-user_kernel", "kernels"]
QUICK_BENCH = ["launch", "gemm"]
# kiln bench's groups that take longest (their largest sizes), by how many
# even shares of the bench step's time each gets; the others one.
BENCH_WEIGHT = {"gemm": 3, "conv": 2, "fft": 2}
# The environment of the bundle's tests, as on a GPU machine: one platform
# as the machine registers it, no Oclgrind, no rusticl, no second PoCL
# device.
TEST_ENV = {"KILN_TEST_PLATFORMS": "1", "KILN_TEST_OCLGRIND": "0", "KILN_TEST_RUSTICL": "0"}
TEST_ENV_DROP = ("POCL_DEVICES", "RUSTICL_ENABLE")


def now():
    return time.monotonic()


class Run:
    """One check: its options, folders, environment, deadline and results."""

    def __init__(self, args):
        self.args = args
        self.t0 = now()
        self.deadline = self.t0 + args.budget
        self.scale = args.budget / 600.0
        self.work = args.work or tempfile.mkdtemp(prefix="kiln-gpu-check-")
        os.makedirs(self.work, mode=0o700, exist_ok=True)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.name = f"kiln-gpu-report-{platform.node() or 'host'}-{stamp}"
        self.out = os.path.abspath(args.out or self.name + ".tar.gz")
        self.rep = os.path.join(self.work, "report")  # what the tarball holds
        for d in (self.rep, os.path.join(self.rep, "logs"), os.path.join(self.rep, "tests")):
            os.makedirs(d, exist_ok=True)
        self.env = dict(os.environ)
        # The kernel cache and tuning record of this run, apart from the
        # user's (kiln wants its cache folder private: 0700).
        self.env["KILN_CACHE_DIR"] = self.mkdir("cache")
        self.env.pop("KILN_DEVICE", None)
        self.device = args.device
        self.device_note = ""
        self.notes = []
        self.steps = []  # dicts: name, rc, seconds, cap, cmd
        self.tests = []  # dicts: name, result, rc, seconds, ok, not_ok, skipped
        self.planned = [s for s in PLAN if self.wanted(s)]

    def mkdir(self, name):
        path = os.path.join(self.work, name)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    def wanted(self, step):
        group = {"version": "info", "icd": "devices", "info-json": "info",
                 "tune-record": "tune"}.get(step, step)
        return group in self.args.steps

    def left(self):
        return self.deadline - now()

    def cap(self, step):
        """Seconds step may take now: a short --budget scales every share
        down, but no step's cap below 20 s nor its share below 5 s."""
        share, most = (max(floor, v * self.scale) for v, floor in zip(PLAN[step], (5, 20)))
        later = self.planned[self.planned.index(step) + 1:] if step in self.planned else []
        reserve = sum(max(5, PLAN[s][0] * self.scale) for s in later)
        return max(0.0, min(most, max(share, self.left() - reserve), self.left() - 2))

    def say(self, text):
        print(f"[{now() - self.t0:5.0f}s] {text}", flush=True)

    # ---- running a command with a deadline --------------------------------
    def execute(self, cmd, log, limit, env=None, cwd=None, echo=False, stdout_file=None):
        """Runs cmd (its output to the file log, and to the terminal when
        echo; its stdout alone to stdout_file when given) for at most limit
        seconds; returns (exit status or 'timeout', seconds)."""
        start = now()
        with open(log, "w", errors="replace") as f:
            out = open(stdout_file, "wb") if stdout_file else None
            try:
                p = subprocess.Popen(cmd, stdout=out or subprocess.PIPE,
                                     stderr=subprocess.PIPE if out else subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env or self.env,
                                     cwd=cwd or self.work, start_new_session=True)
            except OSError as e:
                f.write(f"cannot run {cmd[0]}: {e}\n")
                return 127, 0.0
            finally:
                if out:
                    out.close()

            def pump():
                for raw in p.stderr if stdout_file else p.stdout:
                    line = raw.decode(errors="replace")
                    f.write(line)
                    f.flush()
                    if echo:
                        print("    " + line.rstrip()[:160], flush=True)

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            try:
                rc = p.wait(timeout=max(limit, 0.1))
            except subprocess.TimeoutExpired:
                rc = "timeout"
                kill_group(p)
            reader.join(timeout=5)
            if rc == "timeout":
                f.write(f"\n[kiln-gpu-check: stopped after its cap of {limit:.0f} s]\n")
        return rc, now() - start

    def step(self, name, cmd, env=None, limit=None, stdout_to=None):
        """Runs one step of the check, records it and rewrites the report."""
        if not self.wanted(name):
            return None
        limit = self.cap(name) if limit is None else limit
        log = os.path.join(self.rep, "logs", name + ".txt")
        if limit < 1:
            self.steps.append({"name": name, "rc": "no time", "seconds": 0, "cap": round(limit),
                               "cmd": cmd})
            self.say(f"{name}: no time left (--budget {self.args.budget:.0f})")
            self.pack()
            return "no time"
        self.say(f"{name}: {' '.join(short(c) for c in cmd)} (cap {limit:.0f} s)")
        # a JSON piece (kiln info --json, kiln tune --export -) as its own
        # file, its notes on stderr in the log
        rc, sec = self.execute(cmd, log, limit, env=env, echo=self.args.verbose,
                               stdout_file=stdout_to and os.path.join(self.rep, stdout_to))
        self.steps.append({"name": name, "rc": rc, "seconds": round(sec, 1), "cap": round(limit),
                           "cmd": cmd})
        last = tail(log, 1)
        self.say(f"{name}: {verdict(rc)} in {sec:.1f} s{': ' + last[:100] if last else ''}")
        self.pack()
        return rc

    # ---- the report ---------------------------------------------------------
    def result(self):
        bad = [s["name"] for s in self.steps if s["rc"] != 0 and not s.get("expected")]
        bad += [f"test {t['name']}" for t in self.tests if t["result"] not in ("ok", "skipped")]
        return "ok" if not bad else "FAILED: " + ", ".join(bad)

    def pack(self, result=None):
        """Writes report.txt and summary.json, then the tarball (atomically)."""
        result = result or self.result()
        summary = {"result": result, "bundle": first_line(os.path.join(ROOT, "BUNDLE.txt")),
                   "device": self.device, "device_note": self.device_note,
                   "budget": self.args.budget, "seconds": round(now() - self.t0, 1),
                   "steps": self.steps, "tests": self.tests, "notes": self.notes}
        with open(os.path.join(self.rep, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, default=str)
        with open(os.path.join(self.rep, "report.txt"), "w") as f:
            f.write(self.report_text(result))
        tmp = self.out + ".part"
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(self.rep, arcname=self.name)
        os.replace(tmp, self.out)

    def report_text(self, result):
        w = io.StringIO()
        p = lambda s="": print(s, file=w)  # noqa: E731
        p("kiln GPU report (bin/kiln-gpu-check)")
        p(f"result:   {result}")
        p(f"date:     {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}")
        p(f"host:     {platform.node()}")
        p(f"system:   {os_name()}, {platform.machine()}, glibc "
          f"{(os.confstr('CS_GNU_LIBC_VERSION') or '?').split()[-1]}, {os.cpu_count()} CPUs")
        p(f"bundle:   {first_line(os.path.join(ROOT, 'BUNDLE.txt'))}")
        p(f"command:  bin/kiln-gpu-check {' '.join(sys.argv[1:])}")
        p(f"device:   KILN_DEVICE={self.device}{self.device_note}")
        p(f"budget:   {self.args.budget:.0f} s, used {now() - self.t0:.0f} s")
        p()
        for s in self.steps:
            v = verdict(s["rc"]) + (" (see the notes)" if s.get("expected") else "")
            line = f"  {s['name']:<12} {v:<16} {s['seconds']:>6} s (cap {s['cap']} s)"
            if s["name"] == "tests":
                line += "  " + tests_line(self.tests)
            p(line)
        for n in self.notes:
            p(f"note: {n}")
        for s in self.steps:
            p(f"\n==== {s['name']}: {' '.join(short(c) for c in s['cmd'])} ====")
            if s["name"] == "tests":
                p(self.tests_text())
            elif s["name"] == "bench":
                p(read(os.path.join(self.rep, "logs", "bench.txt"), 400))
            else:
                p(read(os.path.join(self.rep, "logs", s["name"] + ".txt"), 300))
        p("\n==== end ====")
        return w.getvalue()

    def tests_text(self):
        w = io.StringIO()
        print(tests_line(self.tests), file=w)
        for t in self.tests:
            print(f"  {t['name']:<22} {t['result']:<8} rc={t['rc']!s:<8} {t['seconds']:6.1f} s"
                  f"  ok={t['ok']} not_ok={t['not_ok']} skipped={t['skipped']}", file=w)
        for t in self.tests:
            if t["result"] in ("ok", "skipped"):
                continue
            print(f"\n--- {t['name']}: {t['result']} (rc {t['rc']}); "
                  "the end of its output:", file=w)
            print(tail(os.path.join(self.rep, "tests", t["name"] + ".log"), 60), file=w)
        return w.getvalue()


def kill_group(p):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            pass


def short(c):
    c = str(c)
    return c.replace(ROOT + "/", "") if c.startswith(ROOT + "/") else c


def verdict(rc):
    return {0: "ok", 77: "skipped", "timeout": "TIMEOUT", "no time": "not run (no time)"}.get(
        rc, f"FAILED (exit {rc})")


def read(path, most_lines):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return "(no output)"
    if len(lines) > most_lines:
        lines = lines[:most_lines // 2] + [f"[... {len(lines) - most_lines} lines: "
                                           "the whole in logs/ ...]"] + lines[-most_lines // 2:]
    return "\n".join(lines)


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            return "\n".join(f.read().rstrip().splitlines()[-n:])
    except OSError:
        return ""


def first_line(path):
    t = read(path, 10)
    return t.splitlines()[0] if t else "?"


def os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def tests_line(tests):
    count = {}
    for t in tests:
        count[t["result"]] = count.get(t["result"], 0) + 1
    failed = sum(v for k, v in count.items() if k not in ("ok", "skipped"))
    return (f"{count.get('ok', 0)} passed, {failed} failed, "
            f"{count.get('skipped', 0)} skipped")


# ---- the steps ----------------------------------------------------------------
def machine(run):
    """What the report says of the machine, before kiln runs."""
    lines = [f"uname: {' '.join(platform.uname())}", f"system: {os_name()}",
             f"glibc: {os.confstr('CS_GNU_LIBC_VERSION')}", f"cpus: {os.cpu_count()}",
             f"python: {sys.version.split()[0]}", f"bundle: {ROOT}"]
    for k in ("LD_LIBRARY_PATH", "OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "KILN_DEVICE",
              "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        if k in os.environ:
            lines.append(f"{k}={os.environ[k]}")
    vendors = os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"
    lines.append(f"\n.icd files in {vendors}:")
    try:
        for n in sorted(os.listdir(vendors)):
            lines.append(f"  {n}: {read(os.path.join(vendors, n), 2).strip()}")
    except OSError as e:
        lines.append(f"  none ({e.strerror})")
    with open(os.path.join(run.rep, "logs", "machine.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if shutil.which("nvidia-smi"):
        run.execute(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
                     "--format=csv"], os.path.join(run.rep, "logs", "nvidia-smi.txt"), 20)
    if shutil.which("clinfo"):
        run.execute(["clinfo", "-l"], os.path.join(run.rep, "logs", "clinfo-l.txt"), 20)


def find_drivers(run):
    """`kiln devices --icd-dir DIR`: the .icd files in use, and one for each
    vendor's driver that no .icd file names, into DIR; the rest of the run
    uses DIR (OCL_ICD_VENDORS) when it got any."""
    icd = run.mkdir("vendors")
    rc = run.step("icd", [KILN, "devices", "--icd-dir", icd])
    if rc is None or rc == "no time":
        return
    got = sorted(n for n in os.listdir(icd) if n.endswith(".icd"))
    if rc != 2 and got:
        run.env["OCL_ICD_VENDORS"] = icd
        run.notes.append(f"OCL_ICD_VENDORS={icd} for this run: {', '.join(got)} "
                         "(kiln devices --icd-dir)")
    elif rc == 2:
        run.steps[-1]["expected"] = True
        run.say("icd: this kiln has no --icd-dir: the machine's .icd files alone")
        run.notes.append("this kiln has no `kiln devices --icd-dir`: a driver that no .icd "
                         "file names is not looked for")
    else:
        run.notes.append(f"kiln devices --icd-dir: {verdict(rc)}, {len(got)} .icd files; "
                         "the machine's own .icd files are used")


def pick_device(run):
    """KILN_DEVICE=--device: 0 when kiln finds it, 77 when not (and no
    --allow-cpu)."""
    env = dict(run.env, KILN_DEVICE=run.device)
    rc = run.step("devices", [KILN, "devices"], env=env)
    if rc in (0, None):
        return 0
    if rc == "no time" or not run.args.allow_cpu:
        return 77
    run.device_note = f" (NO GPU: KILN_DEVICE={run.device} matched none; --allow-cpu ran on cpu)"
    run.say(f"kiln sees no device for KILN_DEVICE={run.device}; --allow-cpu: on the CPU")
    # The failed pick stays in the report, as what was asked and not found;
    # the CPU's pick is the step.
    run.steps[-1].update(name="devices-" + run.device, expected=True)
    os.replace(os.path.join(run.rep, "logs", "devices.txt"),
               os.path.join(run.rep, "logs", f"devices-{run.device}.txt"))
    run.device = "cpu"
    rc = run.step("devices", [KILN, "devices"], env=dict(run.env, KILN_DEVICE="cpu"),
                  limit=min(run.cap("devices"), 30))
    return 0 if rc == 0 else 77


def load_tests(run):
    with open(os.path.join(ROOT, "tests", "tests.json")) as f:
        tests = json.load(f)
    names = [t["name"] for t in tests]
    want = run.args.tests or (QUICK_TESTS if run.args.quick else names)
    unknown = [n for n in want if n not in names]
    if unknown:
        raise SystemExit(f"kiln-gpu-check: no test {', '.join(unknown)} in this bundle "
                         "(--list-tests)")
    return [t for t in tests if t["name"] in want]


def run_one(run, t, deadline, cache):
    """One test of the bundle's list, with its own folder as cwd."""
    folder = run.mkdir(os.path.join("tests", t["name"]))

    def sub(v):
        return v.replace("@BUNDLE@", ROOT).replace("@WORK@", folder)

    env = dict(run.env)
    for k in TEST_ENV_DROP:
        env.pop(k, None)
    env.update({k: sub(v) for k, v in t["env"].items()})
    env.update(TEST_ENV, KILN_DEVICE=run.device, KILN_CACHE_DIR=cache)
    left = deadline - now()
    log = os.path.join(run.rep, "tests", t["name"] + ".log")
    if left < 3:
        with open(log, "w") as f:
            f.write("not run: no time left\n")
        return dict(name=t["name"], result="no time", rc="-", seconds=0.0, ok=0, not_ok=0,
                    skipped=0)
    rc, sec = run.execute([sub(c) for c in t["cmd"]], log, min(t["timeout"], left), env=env,
                          cwd=folder)
    out = read(log, 10**9)
    skipped = len(re.findall(r"^(?:not )?ok \d+.*# SKIP", out, re.M))
    ok = len(re.findall(r"^ok \d+", out, re.M)) - len(re.findall(r"^ok \d+.*# SKIP", out, re.M))
    not_ok = len(re.findall(r"^not ok \d+", out, re.M)) - len(
        re.findall(r"^not ok \d+.*# SKIP", out, re.M))
    result = {0: "ok", 77: "skipped", "timeout": "timeout"}.get(rc, "failed")
    return dict(name=t["name"], result=result, rc=rc, seconds=round(sec, 1), ok=ok,
                not_ok=not_ok, skipped=skipped)


def run_tests(run):
    if not run.wanted("tests"):
        return
    tests = load_tests(run)
    limit = run.cap("tests")
    start = now()
    deadline = start + limit
    jobs = run.args.jobs or max(1, min(6, os.cpu_count() or 1))
    run.say(f"tests: {len(tests)} of the bundle's, {jobs} at a time, KILN_DEVICE={run.device} "
            f"(cap {limit:.0f} s)")
    cache = run.mkdir("cache-tests")
    # meson's is_parallel: false ones run alone, after the others.
    together = [t for t in tests if t["parallel"]]
    alone = [t for t in tests if not t["parallel"]]

    def record(r):
        run.tests.append(r)
        run.say(f"  {r['name']:<22} {r['result']:<8} {r['seconds']:6.1f} s  ok={r['ok']} "
                f"not_ok={r['not_ok']}")

    with cf.ThreadPoolExecutor(jobs) as pool:
        for fut in cf.as_completed([pool.submit(run_one, run, t, deadline, cache)
                                    for t in together]):
            record(fut.result())
    for t in alone:
        record(run_one(run, t, deadline, cache))
    order = {t["name"]: i for i, t in enumerate(tests)}
    run.tests.sort(key=lambda r: order[r["name"]])
    bad = [r for r in run.tests if r["result"] not in ("ok", "skipped")]
    run.steps.append({"name": "tests", "rc": 0 if not bad else 1,
                      "seconds": round(now() - start, 1), "cap": round(limit),
                      "cmd": ["tests/tests.json", f"KILN_DEVICE={run.device}"]})
    with open(os.path.join(run.rep, "logs", "tests.txt"), "w") as f:
        f.write(run.tests_text())
    run.say(f"tests: {tests_line(run.tests)}")
    run.pack()


def bench_groups(run):
    """The groups `kiln bench --help` lists, in its order."""
    if run.args.bench:
        return run.args.bench
    if run.args.quick:
        return QUICK_BENCH
    try:
        text = subprocess.run([KILN, "bench", "--help"], capture_output=True, text=True,
                              env=run.env, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    part = text.split("\ncommands", 1)[-1].split("\n\n", 1)[0]
    return re.findall(r"^  (\w[\w-]*)  ", part, re.M)


def run_bench(run):
    """`kiln bench GROUP --json` for each group in turn (a group cut short by
    the cap loses its own figures alone), merged into bench.json as one
    `kiln bench --json` file (kiln bench --compare reads it)."""
    if not run.wanted("bench"):
        return
    groups = bench_groups(run)
    limit = run.cap("bench")
    start = now()
    end = start + limit
    env = dict(run.env, KILN_DEVICE=run.device)
    merged, failed, cut = None, [], []
    run.say(f"bench: {', '.join(groups) or 'the whole suite'} (cap {limit:.0f} s)")
    log = os.path.join(run.rep, "logs", "bench.txt")
    with open(log, "w") as whole:
        for i, g in enumerate(groups):
            # each group its weighted share of what is left, at least 10 s
            weights = [BENCH_WEIGHT.get(x, 1) for x in groups[i:]]
            share = max(10.0, (end - now()) * weights[0] / sum(weights))
            share = min(share, end - now())
            part = os.path.join(run.work, f"bench-{g}.json")
            glog = os.path.join(run.work, f"bench-{g}.txt")
            if share < 3:
                whole.write(f"\n## kiln bench {g}: not run, no time left\n")
                cut.append(g)
                continue
            cmd = [KILN, "bench", g, "--json", part] + (["--quick"] if run.args.quick else [])
            rc, sec = run.execute(cmd, glog, share, env=env, echo=run.args.verbose)
            whole.write(f"\n## kiln bench {g}: {verdict(rc)} in {sec:.1f} s (cap {share:.0f} s)\n")
            whole.write(read(glog, 10**9) + "\n")
            run.say(f"  bench {g:<10} {verdict(rc)} in {sec:.1f} s")
            # a group cut short by the budget is a note; one that fails is
            # a failure
            if rc == "timeout":
                cut.append(g)
            elif rc != 0:
                failed.append(g)
            try:
                with open(part) as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                continue
            if merged is None:
                merged = doc
            else:
                merged["records"] += doc.get("records", [])
    if merged is not None:
        with open(os.path.join(run.rep, "bench.json"), "w") as f:
            json.dump(merged, f, indent=1)
    ran = len(groups) - len(failed) - len(cut)
    run.steps.append({"name": "bench", "rc": 0 if not failed and ran else 1,
                      "seconds": round(now() - start, 1), "cap": round(limit),
                      "cmd": ["kiln", "bench", ",".join(groups), "--json"]})
    if failed:
        run.notes.append(f"kiln bench: not ok: {', '.join(failed)}")
    if cut:
        run.notes.append(f"kiln bench: cut short or not run by the budget: {', '.join(cut)} "
                         "(a larger --budget, or --bench GROUPS)")
    run.say(f"bench: {'ok' if not failed else 'not ok: ' + ', '.join(failed)}"
            f"{', cut short: ' + ', '.join(cut) if cut else ''} in {now() - start:.0f} s")
    run.pack()


def run_tune(run):
    if not run.wanted("tune"):
        return
    limit = run.cap("tune")
    # kiln tune's own budget is for its search; the rest is its start and
    # the record's write.
    budget = max(1, int(limit * 0.8) - 5)
    extra = ["--only", "reduce"] if run.args.quick else []
    env = dict(run.env, KILN_DEVICE=run.device)
    run.step("tune", [KILN, "tune", "--budget", str(budget)] + extra, env=env, limit=limit)
    run.step("tune-record", [KILN, "tune", "--export", "-"], env=env,
             stdout_to="tune-record.json")


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="bin/kiln-gpu-check",
        description="Check kiln on this machine's GPU from this bundle: kiln info, devices, "
                    "check, the tests with KILN_DEVICE=gpu, kiln tune and kiln bench, and one "
                    "report file to send back.",
        epilog="Exit status: 0 every step passed, 1 a step failed (the report says which), "
               "2 a usage error, 77 no GPU (unless --allow-cpu). docs/gpu.md has more.")
    ap.add_argument("--budget", type=float, default=600, metavar="SECONDS",
                    help="the whole run, every step within it (default: 600)")
    ap.add_argument("--out", metavar="FILE.tar.gz",
                    help="the report (default: ./kiln-gpu-report-HOST-DATE.tar.gz)")
    ap.add_argument("--work", metavar="DIR",
                    help="logs, kernel caches and test folders (default: a new folder in "
                         "$TMPDIR, removed at the end unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep --work's folder")
    ap.add_argument("--device", default="gpu", metavar="SEL",
                    help="the device, as KILN_DEVICE selects (default: gpu)")
    ap.add_argument("--allow-cpu", action="store_true",
                    help="when SEL matches no device, run on a CPU device (KILN_DEVICE=cpu) "
                         "instead of exiting 77")
    ap.add_argument("--quick", action="store_true",
                    help=f"a short check: the tests {', '.join(QUICK_TESTS)}; a short kiln "
                         f"tune of the reductions; kiln bench --quick of "
                         f"{', '.join(QUICK_BENCH)}")
    ap.add_argument("--steps", default=",".join(STEPS), metavar="LIST",
                    help=f"the steps to run, of {','.join(STEPS)} (default: all)")
    ap.add_argument("--tests", metavar="NAMES", help="the tests to run (comma-separated; "
                    "default: all of the bundle's, or --quick's)")
    ap.add_argument("--bench", metavar="GROUPS",
                    help="kiln bench's groups to run (default: every group)")
    ap.add_argument("--jobs", type=int, default=0, metavar="N",
                    help="tests at once (default: the CPUs, at most 6)")
    ap.add_argument("--list-tests", action="store_true",
                    help="print the bundle's tests and exit")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print each step's output as it comes")
    args = ap.parse_args(argv)
    args.steps = [s for s in args.steps.split(",") if s]
    bad = [s for s in args.steps if s not in STEPS]
    if bad:
        ap.error(f"--steps: no step {', '.join(bad)} (of {','.join(STEPS)})")
    args.tests = [t for t in (args.tests or "").split(",") if t] or None
    args.bench = [g for g in (args.bench or "").split(",") if g] or None
    if args.budget < 10:
        ap.error("--budget: at least 10 seconds")
    if args.jobs < 0:
        ap.error("--jobs: 0 (the CPUs) or more")
    return args


def main(argv):
    args = parse(argv)
    if args.list_tests:
        with open(os.path.join(ROOT, "tests", "tests.json")) as f:
            for t in json.load(f):
                print(f"{t['name']:<22} {' '.join(t['suites'])}")
        return 0
    if not os.access(KILN, os.X_OK):
        print(f"kiln-gpu-check: no {KILN}: run it from an unpacked bundle (ci/bundle.sh)",
              file=sys.stderr)
        return 2
    run = Run(args)
    try:
        run.pack("running")
    except OSError as e:
        print(f"kiln-gpu-check: cannot write the report {run.out}: {e.strerror}", file=sys.stderr)
        return 2
    run.say(f"kiln-gpu-check: budget {args.budget:.0f} s, report {run.out}, work {run.work}")
    try:
        return check(run)
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(run.work, ignore_errors=True)


def check(run):
    machine(run)
    run.step("version", [KILN, "--version"])
    if run.wanted("devices"):
        find_drivers(run)
    run.step("info", [KILN, "info"])
    run.step("info-json", [KILN, "info", "--json"], stdout_to="info.json")
    if run.wanted("devices") and pick_device(run) == 77:
        result = f"NO GPU: kiln sees no device for KILN_DEVICE={run.device}"
        run.pack(result)
        run.say(f"{result}; what it sees and the drivers looked for: {run.out}")
        return 77
    env = dict(run.env, KILN_DEVICE=run.device, KILN_PROFILE="1")
    run.step("check", [KILN, "check"], env=env)
    run_tests(run)
    run_tune(run)
    run_bench(run)
    result = run.result()
    run.pack(result)
    run.say(f"{result}: the report is {run.out}")
    return 0 if result == "ok" else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
