"""kilnhelp — the kiln command's help, read back: its sections, the rows of
its lists and every command under `kiln`. The help is made from each
command's rows (tools/opts.h), so what is read here is what the parser
takes. Used by kiln-doc.py (the man page and the bash completion, at build
time) and tests/check-help.py. Standard library only."""
import re
import subprocess


def run(kiln, *args):
    """`kiln ARGS...`, its output captured."""
    return subprocess.run([kiln, *args], capture_output=True, text=True, timeout=60)


def sections(text):
    """{section name: [its lines]} of a help: a line "name:" or "name (...):"
    at the left edge starts one. The lines before the first are "top" (the
    usage and the summary); text at the left edge after a list (whose lines
    are indented) is "about", the command's paragraphs."""
    out, name = {"top": []}, "top"
    for line in text.splitlines():
        m = re.match(r"^([a-z][a-z ]*?)(?: \(.*\))?:$", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        if name not in ("top", "about") and line and not line.startswith(" "):
            name = "about"
        out.setdefault(name, []).append(line)
    return out


def entries(lines):
    """[(names, value, text)] of a two-column list: "  NAMES VALUE  text",
    the text going on over the lines indented below it. names: ["-l",
    "--list"], or an argument's or a command's name alone."""
    items = []
    for line in lines:
        if re.match(r"^  \S", line):
            head, _, text = line[2:].partition("  ")
            m = re.match(r"^(-[\w-]+(?:, -[\w-]+)?|\S+)(?: (.*))?$", head.strip())
            names = [n.strip() for n in m.group(1).split(",")]
            items.append([names, (m.group(2) or "").strip(), text.strip()])
        elif items and line.strip():
            items[-1][2] = (items[-1][2] + " " + line.strip()).strip()
    return items


def commands(kiln):
    """[(words, help text)] of kiln and every command under it, depth first:
    ([], kiln help's), (["info"], kiln help info's), ..."""
    seen = []

    def walk(path):
        text = run(kiln, "help", *path).stdout
        seen.append((path, text))
        for names, _, _ in entries(sections(text).get("commands", [])):
            walk(path + [names[0]])

    walk([])
    return seen


def paragraphs(lines):
    """The paragraphs of a section's lines, each one string."""
    out, cur = [], []
    for line in lines + [""]:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            out.append(" ".join(cur))
            cur = []
    return out
