#!/usr/bin/env python3
"""check-help.py KILN TOOLS_DIR — every command's help and its parser agree.

Walks `kiln help` and, through each help's list of commands, every command
and subcommand (kiln run gemm, kiln bench fft, ...). For each:

- `kiln CMD --help`, `kiln CMD -h` and `kiln help CMD` print the same help on
  stdout, exit 0, nothing on stderr; it has a usage line, its options, an
  example; every option that takes a value says its default or that it is
  required;
- every option in the help is accepted (followed by an option that exists
  nowhere, the parser must get to that one and name it), by each of its
  names, with a value the help gives (its default, a choice, the low end of
  its range), also joined as --name=value;
- an option with a range or choices, given a value outside them, is one
  line on stderr, exit 2, naming the value and giving the option's line of
  help;
- every option any help names, and every option-like string literal in
  tools/*.c, is refused as unknown by each command whose help does not list
  it: what a command accepts is in its help;
- each example parses (as above, with an unknown option after it);
- usage errors (no command, an unknown one, an unknown option, a missing
  argument) are one line on stderr with the usage, and exit 2.

Runs no device work: every command line it gives stops in the parser.
Standard library only."""
import re
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kilncheck import FAILURES, check

KILN, TOOLS = sys.argv[1], Path(sys.argv[2])
sys.path.insert(0, str(TOOLS))
from kilnhelp import commands, entries, run, sections  # noqa: E402 (tools/, given)
NOPE = "--zzz-no-such-option"
BAD = "bogus-value"


def kiln(*args):
    return run(KILN, *args)


def values(value, text):
    """Values the help says an option takes, best first."""
    out = []
    d = re.search(r"\(default: ([^()\s]+)\)$", text)
    if d and d.group(1) != "none":
        out.append(d.group(1))
    if value and re.fullmatch(r"[\w-]+(\|[\w-]+)+", value):
        out.append(value.split("|")[0])
    if value and re.fullmatch(r"[\w-]+(,[\w-]+)+", value):
        out.append(value.split(",")[0])
    low = re.search(r"(-?\d+(?:\.\d+)?) to ", text)
    if low:
        out.append(low.group(1))
    return out + ["1", "x"]


def refused_as(r, option):
    return r.returncode == 2 and f"unknown option '{option}'" in r.stderr


def one_line_usage_error(r, what, needle):
    lines = r.stderr.splitlines()
    check(r.returncode == 2 and len(lines) == 1 and not r.stdout and needle in r.stderr,
          f"{what}: exit 2, one line on stderr with {needle!r} "
          f"(exit {r.returncode}: {r.stderr.strip()[:300]!r})")


def check_command(path, text, tokens):
    name = " ".join(["kiln"] + path)
    for args in ([*path, "--help"], [*path, "-h"]):
        r = kiln(*args)
        check(r.returncode == 0 and r.stdout == text and not r.stderr,
              f"kiln {' '.join(args)} prints what kiln help {' '.join(path)} prints")
    s = sections(text)
    check(text.startswith("usage: " + name), f"{name}: the help starts with its usage")
    check(bool(s.get("example") or s.get("examples")), f"{name}: the help has an example")
    options = entries(s.get("options", []))
    known = {n for names, _, _ in options for n in names}
    check({"-h", "--help"} <= known, f"{name}: -h, --help is in the options")
    rest = any(n.endswith("...") for names, _, _ in entries(s.get("arguments", []))
               for n in names)
    for names, value, entry in options:
        if names == ["-h", "--help"]:
            continue
        takes = bool(value)
        if value.endswith("..."):  # takes the rest of the command line
            r = kiln(*path, names[-1])
            check(not refused_as(r, names[-1]), f"{name} {names[-1]} is accepted")
            continue
        if takes:
            check("default" in entry or "(required)" in entry,
                  f"{name} {names[-1]}: the help gives its default or says it is required")
        for option in names:
            if not takes:
                r = kiln(*path, option, NOPE)
                check(refused_as(r, NOPE), f"{name} {option} is accepted")
                continue
            for v in values(value, entry):
                r = kiln(*path, option, v, NOPE)
                if refused_as(r, NOPE):
                    break
            check(refused_as(r, NOPE),
                  f"{name} {option} is accepted with a value its help gives "
                  f"({r.stderr.strip()[:200]!r})")
            if option.startswith("--") and refused_as(r, NOPE):
                r = kiln(*path, f"{option}={v}", NOPE)
                check(refused_as(r, NOPE), f"{name} {option}={v} is accepted")
        ranged = "|" in value or re.search(r"\d to (\d|2\^)", entry) or \
            "comma-separated" in entry or entry.startswith("the cases:")
        if takes and ranged:
            r = kiln(*path, names[-1], BAD)
            one_line_usage_error(r, f"{name} {names[-1]} {BAD}",
                                 f"{names[-1]} '{BAD}' is not a value it takes; "
                                 f"{names[-1]} {value}: {entry[:40]}")
    # What the help does not list is unknown: nothing is accepted unseen.
    for token in sorted(tokens - known):
        r = kiln(*path, token, NOPE)
        check(refused_as(r, token), f"{name} refuses {token}, which its help does not "
              f"list ({r.stderr.strip()[:200]!r})")
    one_line_usage_error(kiln(*path, NOPE), f"{name} {NOPE}", "usage: " + name)
    for line in (s.get("example", []) + s.get("examples", [])):
        words = [w for w in shlex.split(line) if not re.match(r"^[A-Z_]+=", w)]
        if rest or words[:len(path) + 1] != ["kiln"] + path:
            continue
        r = kiln(*words[1:], NOPE)
        check(refused_as(r, NOPE), f"the example '{line.strip()}' parses")


def main():
    top = kiln("help")
    check(top.returncode == 0 and "commands" in top.stdout and not top.stderr,
          "kiln help lists the commands")
    for args in (["--help"], ["-h"]):
        r = kiln(*args)
        check(r.stdout == top.stdout and r.returncode == 0, f"kiln {args[0]} is kiln help")
    every = commands(KILN)
    check(len(every) > 20, f"{len(every)} commands walked")
    helped = {n for _, text in every
              for names, _, _ in entries(sections(text).get("options", [])) for n in names}
    literal = set()
    for f in sorted(TOOLS.glob("*.c")):
        literal |= set(re.findall(r'"(--?[a-z][a-z0-9-]*)"', f.read_text()))
    tokens = (helped | literal | {"-v", "--verbose", "-V", "-q", "--all"}) - {"--"}
    print(f"{len(every)} commands, {len(tokens)} option names to try on each")
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda c: check_command(c[0], c[1], tokens), every))
    one_line_usage_error(kiln(), "kiln without a command", "usage: kiln")
    one_line_usage_error(kiln("frobnicate"), "kiln frobnicate", "unknown command")
    one_line_usage_error(kiln("help", "frobnicate"), "kiln help frobnicate", "frobnicate")
    one_line_usage_error(kiln("run", "gemm"), "kiln run gemm without arrays", "missing A.npy")
    one_line_usage_error(kiln("run", "matmul"), "kiln run matmul", "unknown operation")
    r = kiln("help", "env")
    check(r.returncode == 0 and "KILN_DEVICE" in r.stdout, "kiln help env lists the variables")
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
