#!/usr/bin/env python3
"""kiln-doc.py man|bash KILN OUT — the man page kiln(1), or kiln's bash
completion, made at build time from the built command's own help (`kiln
help` and every command's), which is made from each command's rows
(tools/opts.h): the page and the completion know every command, option,
choice and default that the parser knows, and nothing else.

The completion completes commands and subcommands, options, the choices
of options that have them, files and folders where a value or an argument
is one, and device selectors (P:D of the devices `kiln info --list`
finds, N, vendors, types, name=) for --device. It needs bash alone, not
the bash-completion package (which loads it from its completions folder).
Standard library only."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kilnhelp import commands, entries, paragraphs, run, sections  # noqa: E402

# The selector terms of KILN_DEVICE that are words (src/device/select.c's); P:D and
# N come from the machine when completing.
SELECTORS = ["gpu", "cpu", "accelerator", "nvidia", "amd", "intel", "apple", "arm",
             "qualcomm", "imagination", "pocl", "mesa", "oclgrind", "name="]


def usage_and_summary(text):
    """The usage (its lines joined) and the summary of a help."""
    top = sections(text)["top"]
    usage, summary, seen_blank = [], [], False
    for line in top:
        if not line.strip():
            seen_blank = seen_blank or bool(usage)
        elif not seen_blank:
            usage.append(line.replace("usage: ", "", 1).strip())
        else:
            summary.append(line.strip())
    return usage, " ".join(summary)


# ---- the man page ------------------------------------------------------------

def roff(text):
    """text safe in a roff line: backslashes, and a leading . or '."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_list(out, items):
    for names, value, text in items:
        head = ", ".join("\\fB%s\\fR" % roff(n) for n in names)
        out.append(".TP\n%s%s\n%s" % (head, " \\fI%s\\fR" % roff(value) if value else "",
                                      roff(text)))


def man_command(out, path, text):
    s = sections(text)
    usage, summary = usage_and_summary(text)
    out.append(".SS %s" % roff(" ".join(["kiln"] + path)))
    for u in usage:
        out.append(".nf\n\\fB%s\\fR\n.fi" % roff(u))
    out.append(".PP\n%s" % roff(summary))
    for name in ("arguments", "options"):
        items = [e for e in entries(s.get(name, [])) if e[0] != ["-h", "--help"]]
        if items:
            out.append(".PP\n%s:" % name.capitalize())
            man_list(out, items)
    for para in paragraphs(s.get("about", [])):
        out.append(".PP\n%s" % roff(para))
    examples = [ln.strip() for ln in s.get("example", []) + s.get("examples", [])
                if ln.strip()]
    out.append(".PP\nExample%s:\n.RS\n.nf\n%s\n.fi\n.RE" % (
        "s" if len(examples) > 1 else "", "\n".join(roff(e) for e in examples)))


def man(kiln):
    every = commands(kiln)
    version = run(kiln, "--version").stdout.splitlines()[0].split()[-1]
    top = sections(every[0][1])
    _, summary = usage_and_summary(every[0][1])
    out = ['.TH KILN 1 "" "kiln %s" "User Commands"' % roff(version),
           ".SH NAME", "kiln \\- " + roff(summary.split(": ", 1)[-1].rstrip(".")),
           ".SH SYNOPSIS", ".B kiln", ".I COMMAND", "[\\fIoptions\\fR]",
           ".SH DESCRIPTION"]
    about = paragraphs(top.get("about", []))  # the last: the exit status
    for para in about[:-1]:
        out.append(".PP\n%s" % roff(para))
    out.append(".SH COMMANDS")
    out.append(".PP\nEach command's page below is its help: \\fBkiln \\fICOMMAND\\fB "
               "\\-\\-help\\fR prints the same.")
    for path, text in every[1:]:
        man_command(out, path, text)
    env = run(kiln, "help", "env").stdout.splitlines()
    out.append(".SH ENVIRONMENT")
    intro = []
    for line in env:
        if not line.startswith("  ") and line.strip():
            intro.append(line.strip())
    out.append(".PP\n%s" % roff(" ".join(intro[:-1])))
    for line in env:
        m = re.match(r"^  (\S+)\s+(.*)$", line)
        opt = re.match(r"^ {3,}option: (.*)$", line)
        if opt:
            out.append(".br\nkiln_options: %s" % roff(opt.group(1)))
        elif m:
            out.append(".TP\n.B %s\n%s" % (roff(m.group(1)), roff(m.group(2))))
    out.append(".PP\n%s" % roff(intro[-1]))
    out += [".SH EXIT STATUS", ".PP", roff(about[-1]), ".SH SEE ALSO", ".BR clinfo (1)"]
    return "\n".join(out) + "\n"


# ---- the bash completion -----------------------------------------------------

def value_kind(value):
    """What a value's name asks to complete: choices, files, folders,
    device selectors, or nothing (numbers)."""
    words = re.split(r"[|,]", value.strip("[]"))
    if len(words) > 1 and all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", w) for w in words):
        return " ".join(words)
    if value == "SEL":
        return "@sel"
    if value.strip("[]") == "DIR":
        return "@dir"
    if re.search(r"FILE|\.(npy|npz|png|json|cl|csv)$", value.strip("[]")):
        return "@file"
    return ""


def bash(kiln):
    subs, opts, values, args = {}, {}, {}, {}
    for path, text in commands(kiln):
        key = " ".join(["kiln"] + path)
        s = sections(text)
        subs[key] = " ".join(e[0][0] for e in entries(s.get("commands", [])))
        names = []
        for option_names, value, _ in entries(s.get("options", [])):
            names += option_names
            if value and not value.endswith("..."):
                for n in option_names:
                    values[key + " " + n] = value_kind(value)
        opts[key] = " ".join(names)
        # arguments that are files (X.npy, FILE.cl); the others are commands
        args[key] = "@file" if any(value_kind(e[0][0]) == "@file"
                                   for e in entries(s.get("arguments", []))) else ""

    def table(name, d):
        rows = "\n".join("  [%s]=%s" % (quote(k), quote(v)) for k, v in sorted(d.items()))
        return "declare -gA %s=(\n%s\n)" % (name, rows)

    return BASH_TEMPLATE % {
        "tables": "\n".join([table("_kiln_subs", subs), table("_kiln_opts", opts),
                             table("_kiln_values", values), table("_kiln_args", args)]),
        "selectors": " ".join(SELECTORS)}


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


BASH_TEMPLATE = r"""# bash completion for kiln -*- shell-script -*-
# Made from `kiln help` by tools/kiln-doc.py at build time: do not edit.

%(tables)s

# The device selectors: P:D and N of the devices kiln finds, and the words.
_kiln_selectors()
{
  local line p=-1 n=0 sel=()
  while IFS= read -r line; do
    if [[ $line =~ ^Platform\ \#([0-9]+) ]]; then
      p=${BASH_REMATCH[1]}
    elif [[ $line =~ Device\ \#([0-9]+) ]]; then
      sel+=("$p:${BASH_REMATCH[1]}" "$n")
      n=$((n + 1))
    fi
  done < <("${COMP_WORDS[0]}" info --list 2>/dev/null)
  printf '%%s\n' "${sel[@]}" %(selectors)s
}

_kiln()
{
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmd=kiln i w
  # the command the words name so far: kiln run conv2d, kiln help run, ...
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $cmd == "kiln help" || $cmd == "kiln help "* ]]; then
      local under=${cmd#kiln help}
      [[ " ${_kiln_subs[kiln$under]} " == *" $w "* ]] && cmd="$cmd $w"
    elif [[ " ${_kiln_subs[$cmd]} " == *" $w "* ]]; then
      cmd="$cmd $w"
    elif [[ $w == -* && -n ${_kiln_values["$cmd $w"]+set} ]]; then
      ((i++)) # an option's value
    fi
  done
  if [[ -n ${_kiln_values["$cmd $prev"]+set} && $cur != -* ]]; then
    local kind=${_kiln_values["$cmd $prev"]}
    case $kind in
    @file) compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    @dir) compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
    @sel) mapfile -t COMPREPLY < <(compgen -W "$(_kiln_selectors)" -- "$cur") ;;
    '') COMPREPLY=() ;;
    *) # choices; after a comma, more of them
      local head=
      [[ $cur == *,* ]] && head=${cur%%,*},
      mapfile -t COMPREPLY < <(compgen -P "$head" -W "$kind" -- "${cur##*,}") ;;
    esac
    return
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_kiln_opts[$cmd]}" -- "$cur")
  elif [[ $cmd == "kiln help"* ]]; then
    local under=${cmd#kiln help}
    local topics=
    [[ -z $under ]] && topics=env # kiln help env
    mapfile -t COMPREPLY < <(compgen -W "${_kiln_subs[kiln$under]} $topics" -- "$cur")
  elif [[ -n ${_kiln_subs[$cmd]} ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_kiln_subs[$cmd]}" -- "$cur")
  elif [[ ${_kiln_args[$cmd]} == @file ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}
complete -F _kiln kiln
"""


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("man", "bash"):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    text = man(sys.argv[2]) if sys.argv[1] == "man" else bash(sys.argv[2])
    with open(sys.argv[3], "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
