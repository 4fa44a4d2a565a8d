#!/usr/bin/env python3
"""check-env-doc.py KILN DOC SRC_DIR — the environment variables are
one table (src/base/env.def): `kiln help env` prints it, and the table of the
page DOC (docs/environment.md) must list the same variables in the same
order, with the same kiln_options fields, each meaning starting with the
table's one line. And no file of the library but env.c reads the
environment, so the table is the whole of it."""
import re
import subprocess
import sys
from pathlib import Path

kiln, doc_page, src = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
failures = []


def plain(text):
    """Markdown to the words: no backticks, one space between words."""
    return " ".join(text.replace("`", "").split())


def help_rows():
    """[name, meaning, option] per variable; an "option:" line, indented
    past the name column, belongs to the variable above it."""
    out = subprocess.run([kiln, "help", "env"], capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines():
        option = re.match(r"^ {3,}option: (.*)$", line)
        row = re.match(r"^  (\S+)\s+(.*)$", line)
        if option and rows:
            rows[-1][2] = plain(option.group(1))
        elif row:
            rows.append([row.group(1), plain(row.group(2)), ""])
    return rows


def doc_rows():
    """The rows of the table under the page's "Environment variables"
    heading, up to the next heading of its level or above."""
    text = doc_page.read_text()
    head = re.search(r"^(#+) Environment variables\s*$", text, re.M)
    if not head:
        failures.append(f"{doc_page} has no \"Environment variables\" heading")
        return []
    rest = text[head.end():]
    end = re.search(r"^#{1,%d} " % len(head.group(1)), rest, re.M)
    section = rest[:end.start()] if end else rest
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        rows.append([cells[0].strip("`"), plain(cells[1]), plain(cells[2])])
    return rows


got, doc = help_rows(), doc_rows()
if not got:
    failures.append("kiln help env printed no variable")
names, doc_names = [r[0] for r in got], [r[0] for r in doc]
if names != doc_names:
    failures.append(f"the variables differ:\n  kiln help env: {names}\n  {doc_page}: {doc_names}")
for (name, meaning, option), d in zip(got, doc):
    if name != d[0]:
        continue
    if not d[1].startswith(meaning):
        failures.append(f"{name}: {doc_page}'s meaning does not start with the table's:\n"
                        f"  table:  {meaning}\n  page:   {d[1]}")
    if option != d[2]:
        failures.append(f"{name}: option '{option}' in the table, '{d[2]}' in {doc_page}")

for path in sorted(src.rglob("*.c")):
    if path.name == "env.c":
        continue
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if re.search(r"\b(secure_)?getenv\s*\(", line):
            failures.append(f"{path}:{n} reads the environment outside env.c: {line.strip()}")

for f in failures:
    print("FAIL:", f)
print(f"{len(got)} variables; {'FAILED' if failures else 'the table, the help and ' + str(doc_page) + ' agree'}")
sys.exit(1 if failures else 0)
