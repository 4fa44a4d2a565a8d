#!/usr/bin/env python3
"""check-doc.py KILN MAN COMPLETION TOOLS_DIR — the man page and the bash
completion that the build made from kiln's help (tools/kiln-doc.py) say
what the help says.

- kiln.1: man formats it without a warning; it has a section for every
  command of the help, every option of each, the environment variables and
  the exit status.
- the completion, sourced into a bash without the bash-completion package:
  for every command, "-" completes to exactly the options of its help, and
  its next word to its subcommands; every option whose help lists choices
  completes to them; files, comma lists, `kiln help`'s words and the
  device selectors (P:D of every device `kiln info --list` shows, the
  words of KILN_DEVICE) complete as a user expects.
Standard library only."""
import re
import shutil
import subprocess
import sys

sys.path.insert(0, sys.argv[4])
from kilnhelp import commands, entries, run, sections  # noqa: E402 (tools/, given)

KILN, MAN, COMPLETION = sys.argv[1:4]
FAILURES = []


def check(cond, what):
    print(("ok      " if cond else "FAILED  ") + what)
    if not cond:
        FAILURES.append(what)


def man_page(every):
    text = open(MAN).read()
    if shutil.which("man"):
        r = subprocess.run(["man", "--warnings", "-l", "-Tutf8", MAN], capture_output=True,
                           text=True)
        check(r.returncode == 0 and not r.stderr.strip(),
              "man formats kiln.1 without a warning (%r)" % r.stderr.strip()[:300])
    for path, help_text in every[1:]:
        name = " ".join(["kiln"] + path)
        check(".SS %s\n" % name in text, "kiln.1 has a section for %s" % name)
        section = text.split(".SS %s\n" % name, 1)[-1].split("\n.SS ", 1)[0]
        for names, _, _ in entries(sections(help_text).get("options", [])):
            for n in names:
                if n not in ("-h", "--help"):
                    check("\\fB%s\\fR" % n.replace("-", "\\-") in section,
                          "kiln.1's %s names %s" % (name, n))
    for what in (".SH ENVIRONMENT", ".B KILN_DEVICE", ".SH EXIT STATUS"):
        check(what in text, "kiln.1 has %s" % what)


def completions(cases):
    """COMPREPLY for each list of words after `kiln` (the last one the word
    being completed), from one bash."""
    script = ["source %s" % shlex_quote(COMPLETION)]
    for words in cases:
        arr = " ".join(shlex_quote(w) for w in [KILN] + words)
        script.append('COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=(); _kiln; '
                      'echo "${COMPREPLY[*]}"' % (arr, len(words)))
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and not r.stderr, "bash sources and runs the completion "
          "(%r)" % r.stderr.strip()[:300])
    out = r.stdout.split("\n")
    return [set(line.split()) for line in out[:len(cases)]]


def shlex_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def completion(every):
    cases, wants = [], []
    for path, help_text in every:
        s = sections(help_text)
        opts = {n for names, _, _ in entries(s.get("options", [])) for n in names}
        cases.append(path + ["-"])
        wants.append(("%s -<TAB>: the help's options" % " ".join(path), opts))
        subs = {e[0][0] for e in entries(s.get("commands", []))}
        if subs:
            cases.append(path + [""])
            wants.append(("%s <TAB>: its commands" % " ".join(path), subs))
        for names, value, _ in entries(s.get("options", [])):
            if re.fullmatch(r"[a-z0-9-]+(\|[a-z0-9-]+)+", value):
                cases.append(path + [names[-1], ""])
                wants.append(("%s %s <TAB>: its choices" % (" ".join(path), names[-1]),
                              set(value.split("|"))))
    listed = run(KILN, "info", "--list").stdout
    devices, platform = set(), ""
    for p, d in re.findall(r"Platform #(\d+)|Device #(\d+)", listed):
        platform = p or platform
        if d:
            devices.add("%s:%s" % (platform, d))
    fixed = [(["run", "conv2d", "x.npy", "--pad", "1", "--st"], {"--stride"}),
             (["bench", "gemm", "--backend", "kiln,c"], {"kiln,clblast"}),
             (["tune", "--only", "gemm,f"], {"gemm,fft"}),
             (["help", "run", "co"], {"conv2d"}),
             (["help", "e"], {"env"}),
             (["run", "gemm", "-o", COMPLETION[:-1]], {COMPLETION}),
             (["build", COMPLETION[:-1]], {COMPLETION}),
             (["info", "--device", ""], devices | {"gpu", "cpu", "name="})]
    for words, want in fixed:
        cases.append(words)
        wants.append(("%s<TAB>" % " ".join(words), want))
    got = completions(cases)
    for (what, want), have in zip(wants, got):
        exact = "-<TAB>" in what or "choices" in what or "commands" in what
        check(have == want if exact else want <= have,
              "%s: %s (want %s)" % (what, sorted(have), sorted(want)))


def main():
    every = commands(KILN)
    man_page(every)
    completion(every)
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
