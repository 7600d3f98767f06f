#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Markdown a user reads first points only at files that are in the repository: every
# relative link, and every `backquoted/path` whose first directory is one of the repository's
# (from the file's own directory or from the top), must name a file git tracks. A <name>, a *, a [ch] or
# one of the words NAME, N, DIR, FILE, PATH in a path is a wildcard that must match a tracked file;
# a path git ignores (bench/out/, build/) is output, not checked. Image links of doc/guide.md may
# point at bench/results/ or doc/images/ (the images are moving there). DOCS="FILE..." checks
# other files (paths from the top). A `NAME.md` must be a tracked file's name, and a backquoted
# absolute path must be a system one (/etc, /run, /sys...), not a file on the author's machine.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

docs=${DOCS:-README.md doc/guide.md bench/README.md bench/RESULTS.md bench/NOTES.md}
# a dist tree unpacked inside a checkout (make distcheck) is no checkout of its own
[[ $(git -C "$top_srcdir" rev-parse --show-toplevel 2> /dev/null) == "$(cd "$top_srcdir" && pwd -P)" ]] ||
        skip "$top_srcdir is not the top of a git checkout: this check compares links with git ls-files"
make_tmpdir tmp
git -C "$top_srcdir" ls-files > "$tmp/files" || fail "git ls-files in $top_srcdir"

# The check must be able to fail: a link, a backquoted path, a wildcard, a document's name and
# a path on the author's machine that name nothing in the tree.
mkdir -p "$tmp/self/doc"
# shellcheck disable=SC2016 # backquotes as Markdown writes them
printf '[x](nothing-here.md) `src/no-such-file.c` `bench/results/<case>-nope.png` `nope.md` `/work/x`\n' \
        > "$tmp/self/doc/bad.md"

# check.py ROOT FILELIST DOC...: prints "DOC:LINE: REF" for each reference that names no tracked
# file; exit 1 if there was one.
cat > "$tmp/check.py" <<'EOF'
import fnmatch, os, re, subprocess, sys

root, filelist, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
files = set(open(filelist, encoding="utf-8").read().split("\n")) - {""}
dirs = {os.path.dirname(f) for f in files}
for d in list(dirs):
    while d:
        d = os.path.dirname(d)
        dirs.add(d)
tops = {p.split("/")[0] for p in files | dirs if p}
basenames = {os.path.basename(f) for f in files}
SYSTEM_TOPS = {"bin", "boot", "dev", "etc", "home", "lib", "media", "mnt", "opt", "proc", "root",
               "run", "sbin", "srv", "sys", "tmp", "usr", "var"}


def ignored(path):
    return subprocess.run(["git", "-C", root, "check-ignore", "-q", "--no-index", path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def exists(path):
    """path (from the top, normalised) is a tracked file or directory, or a pattern (*, [ch],
    <name>, NAME) that matches one."""
    if path in files or path in dirs:
        return True
    pat = re.sub(r"<[^<>/]*>|\b(?:NAME|N|DIR|FILE|PATH)\b", "*", path)
    return ("*" in pat or "[" in pat) and any(fnmatch.fnmatchcase(f, pat) for f in files | dirs)


def norm(base, ref):
    p = os.path.normpath(os.path.join(base, ref))
    return None if p.startswith("..") else p


missing = 0
for doc in docs:
    path = os.path.join(root, doc)
    if not os.path.exists(path):
        continue
    base = os.path.dirname(doc)
    text = open(path, encoding="utf-8").read()
    # fenced blocks are commands and output, not references; keep the line numbers
    text = re.sub(r"(?ms)^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text)
    refs = []
    for m in re.finditer(r"(!?)\[[^\]]*\]\(([^)\s]+)\)", text):
        refs.append((m.start(), "link", m.group(2), m.group(1) == "!"))
    for m in re.finditer(r"`([^`\s]+)`", text):
        refs.append((m.start(), "code", m.group(1), False))
    for pos, kind, ref, image in refs:
        line = text.count("\n", 0, pos) + 1
        if kind == "link":
            if re.match(r"^[a-z][a-z0-9+.-]*:", ref) or ref.startswith("#"):
                continue
            ref = ref.split("#")[0]
            cands = [norm(base, ref)]
            if image and doc == "doc/guide.md":
                name = os.path.basename(ref)
                cands += ["bench/results/" + name, "doc/images/" + name]
        else:
            ref = ref.rstrip(".,;:")
            if re.search(r"[$={}()|:@]", ref) or ref.startswith(("~", "-")):
                continue
            if ref.startswith("/"):
                # a file on the system wbtuned runs on, or one on the author's machine
                if ref.split("/")[1] not in SYSTEM_TOPS:
                    print("%s:%d: %s (outside the repository and the system)" % (doc, line, ref))
                    missing += 1
                continue
            if "/" not in ref:
                # another document named by its file name: HACKING.md, RESULTS.md
                if re.match(r"^[\w.+-]+\.md$", ref) and ref not in basenames:
                    print("%s:%d: %s" % (doc, line, ref))
                    missing += 1
                continue
            first = ref.split("/")[0]
            cands = []
            if first == ".." or (base and os.path.join(base, first) in dirs):
                cands.append(norm(base, ref))       # from the file's own directory
            if first in tops:
                cands.append(os.path.normpath(ref))  # from the top
            if not cands:
                continue
        cands = [c for c in cands if c]
        if any(exists(c) for c in cands):
            continue
        if kind == "code" and all(ignored(c) for c in cands):
            continue
        print("%s:%d: %s" % (doc, line, ref))
        missing += 1
sys.exit(1 if missing else 0)
EOF

"$PYTHON3" "$tmp/check.py" "$tmp/self" "$tmp/files" doc/bad.md > "$tmp/self.out" 2>&1 &&
        fail "the check found nothing wrong in a file with five dangling references"
[[ $(grep -c '^doc/bad.md:1: ' "$tmp/self.out") == 5 ]] ||
        { cat "$tmp/self.out"; fail "the check did not name each of the five dangling references"; }
ok "a dangling link, backquoted path, wildcard, document name and outside path are each named"

# shellcheck disable=SC2086 # docs is a list
"$PYTHON3" "$tmp/check.py" "$top_srcdir" "$tmp/files" $docs > "$tmp/out" 2>&1 ||
        { sed 's/^/  /' "$tmp/out"; fail "$(grep -c . "$tmp/out") references name no file in the repository"; }
ok "every relative link and repository path in $docs names a tracked file"
