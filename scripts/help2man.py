#!/usr/bin/env python3
"""Makes the wmap man pages from the CLI's own --help text.

usage: help2man.py WMAP OUTDIR

Writes OUTDIR/wmap.1 (the command list, from `wmap --help`) and one
OUTDIR/wmap-COMMAND.1 per command (from `wmap COMMAND --help`), so the
pages say exactly what --help says. Sections of the help text ("Options:",
"Exit status:", ...) become man sections; option lines become tagged
paragraphs.
"""
import os
import re
import subprocess
import sys

ITEM = re.compile(r"^  (\S.*?)(?: {2,}(\S.*))?$")
HEADING = re.compile(r"^([A-Z][A-Za-z /-]*):\s*(.*)$")


def esc(text):
    """Escapes text for roff: backslashes, leading dots and quotes."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def help_text(wmap, args):
    out = subprocess.run([wmap] + args + ["--help"], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit("help2man: %s %s --help failed (exit %d): %s" %
                 (wmap, " ".join(args), out.returncode, out.stderr.strip()))
    return out.stdout.rstrip("\n").split("\n")


def body(lines):
    """Converts help lines after the usage block into roff sections: a
    heading ("Options:") starts a section; a line indented by two that
    starts with "-" or has a two-space gap is a tagged paragraph (an
    option, a command); other lines are text."""
    first = next((l for l in lines if l.strip()), "")
    out = [] if HEADING.match(first) else [".SH DESCRIPTION"]
    for line in lines:
        m = HEADING.match(line)
        if m:
            out.append(".SH " + esc(m.group(1).upper()))
            if m.group(2):
                out.append(esc(m.group(2)))
            continue
        if not line.strip():
            out.append(".PP")
            continue
        m = ITEM.match(line)
        if m and (m.group(2) is not None or m.group(1).startswith("-")):
            out.append(".TP")
            out.append("\\fB" + esc(m.group(1)) + "\\fR")
            if m.group(2):
                out.append(esc(m.group(2)))
            continue
        out.append(esc(line.strip()))
    return out


def usage_block(lines):
    """Splits the leading usage lines from the rest."""
    i = 0
    synopsis = []
    while i < len(lines) and lines[i].strip():
        synopsis.append(re.sub(r"^usage:\s*", "", lines[i].strip()))
        i += 1
    return synopsis, lines[i:]


def page(name, summary, version, lines, see_also):
    synopsis, rest = usage_block(lines)
    out = [
        '.TH %s 1 "" "wmap %s" "wmap manual"' % (name.upper(), version),
        ".SH NAME",
        "%s \\- %s" % (esc(name), esc(summary)),
        ".SH SYNOPSIS",
    ]
    for i, s in enumerate(synopsis):
        if i:
            out.append(".br")
        out.append(esc(s))
    out += body(rest)
    if see_also:
        out.append(".SH SEE ALSO")
        out.append(", ".join("\\fB%s\\fR(1)" % esc(s) for s in see_also))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: help2man.py WMAP OUTDIR")
    wmap, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    version = subprocess.run([wmap, "--version"], capture_output=True,
                             text=True, check=True).stdout.split()[-1]
    top = help_text(wmap, [])
    commands = []  # (name, summary)
    in_commands = False
    for line in top:
        if line.startswith("Commands:"):
            in_commands = True
            continue
        if in_commands:
            m = re.match(r"^  (\S+)(?: [A-Z][A-Z .]*)?\s{2,}(\S.*)$", line)
            if m:
                commands.append([m.group(1), m.group(2)])
            elif line.startswith("   ") and commands:
                commands[-1][1] += " " + line.strip()
            elif not line.strip():
                in_commands = False
    if not commands:
        sys.exit("help2man: no commands in `%s --help`" % wmap)
    names = ["wmap-" + c for c, _ in commands]
    with open(os.path.join(outdir, "wmap.1"), "w") as f:
        f.write(page("wmap", "portable AI runtime and workload map", version,
                     top, names))
    for cmd, summary in commands:
        with open(os.path.join(outdir, "wmap-%s.1" % cmd), "w") as f:
            f.write(page("wmap-" + cmd, summary, version,
                         help_text(wmap, [cmd]), ["wmap"]))


if __name__ == "__main__":
    main()
