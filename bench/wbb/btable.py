# SPDX-License-Identifier: GPL-2.0-or-later
"""The backlog_seconds table (bench/backlog-table.sh): the rows of each family's report, one run per
value, side by side. Usage: btable.py DIR LABEL... (DIR/LABEL/FAMILY/*.md, the first LABEL the kernel
alone, the others the daemon with that backlog_seconds)."""
import glob
import os
import sys

FAMILIES = ["transitions", "first-seconds", "slowfast"]
SKIP_SECTIONS = ("Knob writes", "Checks", "Plots")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(path):
    """(section, header cells, rows of cells) of each table in a wbbench report with a 'tuning' column."""
    section, out, lines = "", [], open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        elif line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header, rows = cells(line), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            if "tuning" in header and not section.startswith(SKIP_SECTIONS):
                out.append((section, header, rows))
            continue
        i += 1
    return out


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: btable.py DIR KERNEL-LABEL [LABEL...]\n")
        return 2
    top, labels = argv[1], argv[2:]
    print("# backlog_seconds: what it trades\n")
    print("Each value is one run of each family with the daemon's `backlog_seconds` set to it "
          "(bench/backlog-table.sh); the kernel alone ran once beside them. Rows are copied from "
          "each run's own report (medians over its repeats); see those reports for the columns.\n")
    for fam in FAMILIES:
        merged = {}     # (section, header) -> [(label, row)]
        order = []
        for n, label in enumerate(labels):
            for path in sorted(glob.glob(os.path.join(top, label, fam, "*.md"))):
                for section, header, rows in tables(path):
                    key = (section, tuple(header))
                    if key not in merged:
                        merged[key] = []
                        order.append(key)
                    t = header.index("tuning")
                    want = "kernel" if n == 0 else "wbtuned"
                    for r in rows:
                        if len(r) == len(header) and r[t] == want:
                            merged[key].append((label, r))
        for key in order:
            section, header = key
            if not merged[key]:
                continue
            print("## %s: %s\n" % (fam, section))
            print("| backlog_seconds | " + " | ".join(header) + " |")
            print("|" + "---|" * (len(header) + 1))
            first = 0 if header[0] == "tuning" else 1
            for label, r in sorted(merged[key], key=lambda lr: (lr[1][:first], labels.index(lr[0]))):
                print("| %s | %s |" % ("–" if label == labels[0] else label, " | ".join(r)))
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
