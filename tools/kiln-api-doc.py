#!/usr/bin/env python3
"""kiln-api-doc.py HEADER [-o OUT | --check OUT] — the API manual from the
header's own comments, as zstd makes zstd_manual.html from zstd.h.

What it reads in include/kiln/kiln.h:
- the opening comment (its one-line headings, such as "Stability", become
  headings of the manual's introduction);
- each banner, /*==== NAME ====*/, a section;
- a comment standing alone (a blank line after it), the section's prose;
- each /*! name() : ... */ block, an entry: its comment, then the
  declaration under it (up to the next blank line outside braces).

-o OUT writes the manual (stdout without it). --check OUT makes it again in
memory and fails, with the difference and the command that regenerates it,
when OUT is not what it would write. Standard library only."""
import difflib
import re
import sys

REGENERATE = "python3 tools/kiln-api-doc.py include/kiln/kiln.h -o docs/api.md"


def comment_text(lines):
    """The text of a /* ... */ comment's lines, without its markers."""
    out = []
    for i, line in enumerate(lines):
        s = line.rstrip()
        if i == 0:
            s = re.sub(r"^\s*/\*!?", "", s)
        else:
            s = re.sub(r"^\s*\*( |$)", "", s)
        if s.endswith("*/"):
            s = s[:-2].rstrip()
        if i > 0 and s.lstrip().startswith("*-"):
            s = s.lstrip()[1:]
        out.append(s)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def dedent(lines):
    width = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
    return [s[width:] for s in lines]


def anchor(name):
    return re.sub(r"[^a-z0-9_ -]", "", name.lower()).replace(" ", "-")


class Manual:
    def __init__(self):
        self.intro = []
        self.sections = []  # (title, [parts]); a part is ("prose", lines) or ("entry", ...)

    def part(self, part):
        if not self.sections:
            self.sections.append(("", []))
        self.sections[-1][1].append(part)


def read_comment(src, i):
    """Lines of the comment starting at src[i], and the index after it."""
    j = i
    while "*/" not in src[j]:
        j += 1
    return src[i:j + 1], j + 1


def read_declaration(src, i):
    """The declaration from src[i] to the first blank line outside braces."""
    depth, out = 0, []
    while i < len(src):
        line = src[i]
        if not line.strip() and depth == 0:
            break
        if depth == 0 and (line.startswith("/*") and out == [] or line.startswith("/*=")):
            break
        depth += line.count("{") - line.count("}")
        out.append(line.rstrip())
        i += 1
    while out and re.match(r"#\s*(endif|ifdef|ifndef|if|else)\b", out[-1]):
        out.pop()
    return out, i


def parse(src):
    man = Manual()
    i = 0
    # The opening comment is the introduction.
    while not src[i].startswith("/*"):
        i += 1
    lines, i = read_comment(src, i)
    man.intro = comment_text(lines)
    while i < len(src):
        line = src[i]
        if line.startswith("/*===="):
            title = src[i + 1].strip().lstrip("*").strip()
            man.sections.append((title, []))
            i += 3
        elif line.startswith("/*!"):
            lines, i = read_comment(src, i)
            text = comment_text(lines)
            m = re.match(r"\s*(.+?)\s+:(?:\s+(.*))?$", text[0])
            name = m.group(1) if m else text[0].strip()
            first = (m.group(2) or "") if m else ""
            body = ([first] if first else []) + dedent(text[1:]) if first else dedent(text[1:])
            decl, i = read_declaration(src, i)
            man.part(("entry", name, body, decl))
        elif line.startswith("/*") and "clang-format" not in line:
            lines, j = read_comment(src, i)
            standalone = j >= len(src) or not src[j].strip() or src[j].startswith("#")
            if standalone and man.sections:
                man.part(("prose", comment_text(lines)))
            i = j
        else:
            i += 1
    return man


def markdown_escape(s):
    """Text that Markdown shows as written: <kiln/kiln_cl.h> is no HTML tag,
    KILN_ERR_* no emphasis."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace("*", "\\*")


def prose(lines):
    """A comment's text as Markdown: paragraphs joined, lists and indented
    runs kept as a block of their own."""
    out, block = [], []

    def flush():
        if block:
            out.extend(["```text"] + dedent(block) + ["```", ""])
            block.clear()

    para = []
    for s in lines + [""]:
        listy = re.match(r"\s*(- |\d+\. )", s) or (s.startswith(" ") and block)
        if s.strip() and (listy or re.match(r"\s{2,}\S", s)):
            if para:
                out.extend([" ".join(para), ""])
                para = []
            block.append(s)
        elif s.strip():
            flush()
            para.append(markdown_escape(s.strip()))
        else:
            flush()
            if para:
                out.extend([" ".join(para), ""])
                para = []
    return out


def render(man, header_name):
    out = [
        "# The kiln API",
        "",
        "<!-- Generated from %s by tools/kiln-api-doc.py: do not edit; run" % header_name,
        "     %s -->" % REGENERATE,
        "",
        "This manual is the doc comments of `%s`, in its order." % header_name,
        "The guide to embedding kiln (a program in a page, what is stable,",
        "threads) is [embedding.md](embedding.md).",
        "",
        "## Contents",
        "",
        "- [Introduction](#introduction)",
    ]
    for title, parts in man.sections:
        names = [p[1] for p in parts if p[0] == "entry"]
        out.append("- [%s](#%s)" % (title, anchor(title)))
        if names:
            out.append("  " + ", ".join("[%s](#%s)" % (n, anchor(n)) for n in names))
    out += ["", "## Introduction", ""]
    intro, para = [], []
    for s in man.intro[1:] if man.intro and man.intro[0].startswith("kiln") else man.intro:
        intro.append(s)
    # A line alone between blank lines that starts with a capital and has no
    # full stop is one of the introduction's headings.
    chunks, cur = [], []
    for s in intro + [""]:
        if s.strip():
            cur.append(s)
        elif cur:
            chunks.append(cur)
            cur = []
    for chunk in chunks:
        if chunk == ["Introduction"]:
            continue
        if len(chunk) == 1 and not chunk[0].rstrip().endswith(".") and chunk[0][0].isupper():
            out += ["### " + chunk[0].strip(), ""]
        else:
            out += prose(chunk)
    for title, parts in man.sections:
        out += ["## " + title, ""]
        for p in parts:
            if p[0] == "prose" and p[1] and set(p[1][0]) == {"-"}:
                # A sub-banner, /*---- TITLE ----*/: a heading in the section.
                out += ["**%s**" % " ".join(t for t in p[1][1:] if set(t) != {"-"}), ""]
            elif p[0] == "prose":
                out += prose(p[1])
            else:
                _, name, body, decl = p
                out += ["### " + name, ""]
                if decl:
                    out += ["```c"] + decl + ["```", ""]
                if body:
                    out += ["```text"] + body + ["```", ""]
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    header, out, check = args[0], None, None
    if len(args) == 3 and args[1] == "-o":
        out = args[2]
    elif len(args) == 3 and args[1] == "--check":
        check = args[2]
    elif len(args) != 1:
        print("usage: kiln-api-doc.py HEADER [-o OUT | --check OUT]", file=sys.stderr)
        return 2
    with open(header) as f:
        src = f.read().split("\n")
    name = "include/kiln/" + header.rsplit("/", 1)[-1]
    text = render(parse(src), name)
    if check:
        try:
            with open(check) as f:
                old = f.read()
        except OSError as e:
            old = ""
            print("%s: %s" % (check, e.strerror))
        if old == text:
            print("%s is current with %s" % (check, name))
            return 0
        diff = list(difflib.unified_diff(old.split("\n"), text.split("\n"), check,
                                         "generated from " + name, lineterm="", n=1))
        print("\n".join(diff[:80]))
        if len(diff) > 80:
            print("... (%d more lines of difference)" % (len(diff) - 80))
        print("\n%s is not current with %s: regenerate it, from the top of the "
              "source tree, with\n  %s" % (check, name, REGENERATE))
        return 1
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
