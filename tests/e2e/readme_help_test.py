"""README and --help agree: every option a command's --help lists is in
the command's README heading (or, for zoo and probe, its section), and
every option the README gives is in --help; the exit statuses wmap --help
names are the README's.

usage: readme_help_test.py WMAP README
"""
import re
import subprocess
import sys

wmap, readme_path = sys.argv[1:3]
readme = open(readme_path).read()
COMMANDS = ["map", "bench", "compare", "comm-bench", "run", "tune",
            "conform", "backends", "zoo", "probe"]
OPTION = r"--[a-z][a-z-]*"


def help_options(cmd):
    text = subprocess.run([wmap, cmd, "--help"], capture_output=True,
                          text=True, check=True).stdout
    opts = set(re.findall(r"^\s+(?:-\w, )?(" + OPTION + ")", text, re.M))
    opts.discard("--help")
    return opts


def readme_options(cmd):
    m = re.search(r"^### `wmap " + re.escape(cmd) + r" [^`]*`", readme, re.M)
    if m:
        text = m.group(0)
    else:  # a section of its own: "## wmap zoo", "## `wmap probe`: ..."
        m = re.search(r"^## `?wmap " + re.escape(cmd) + r"\b.*?(?=^## |\Z)",
                      readme, re.M | re.S)
        if not m:
            return None
        # Its command lines only (prose may quote other commands).
        text = "\n".join(re.findall(r"^\s*(?:build/)?wmap " + re.escape(cmd) +
                                    r"\b.*$", m.group(0), re.M))
    opts = set(re.findall(OPTION, text))
    if re.search(r"\[-o FILE", text):
        opts.add("--output")
    return opts


failed = 0
for cmd in COMMANDS:
    h, r = help_options(cmd), readme_options(cmd)
    if r is None:
        print("FAIL %s: no README heading or section" % cmd)
        failed += 1
        continue
    missing, extra = sorted(h - r), sorted(r - h)
    if missing or extra:
        print("FAIL %s: --help only %s, README only %s" % (cmd, missing, extra))
        failed += 1
    else:
        print("ok   %s: %d options agree" % (cmd, len(h)))
main = subprocess.run([wmap, "--help"], capture_output=True, text=True).stdout
m = re.search(r"Exit status: (.*)", main)
statuses = re.findall(r"(\d) ([a-z][a-z -]*?)(?:,|\.|$)", m.group(1) if m else "")
for code, what in statuses:
    word = what.split()[0]
    if not re.search(r"\b%s %s" % (code, re.escape(word)), readme) and not (
            code == "3" and "exits 3" in readme):
        print("FAIL exit status %s (%s) is not in the README" % (code, what))
        failed += 1
print("ok   exit statuses %s" % ", ".join(c for c, _ in statuses)
      if statuses and not failed else "")
sys.exit(1 if failed or not statuses else 0)
