#!/usr/bin/env python3
"""Every C++ source of the repository follows .clang-format.

Runs `clang-format --dry-run --Werror` over each .cc and .h under the
source folders (build trees left out) and fails naming the files that
differ; `clang-format -i FILE` fixes one. Also fails on a line over the
120 columns .clang-format sets that clang-format could not break (a long
string or URL): split it by hand.

Exit 77 (skipped) without clang-format, unless CI is set: then it fails.
"""
import argparse
import os
import shutil
import subprocess
import sys

FOLDERS = ("engine", "phases", "client", "cli", "examples", "tests", "bench")
COLUMNS = 120


def sources(root):
    for top in FOLDERS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("build"))
            for name in sorted(files):
                if name.endswith((".cc", ".h")):
                    yield os.path.join(dirpath, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    tool = shutil.which("clang-format")
    if tool is None:
        print("clang-format is not installed (Debian package clang-format; ./run.sh deps)", file=sys.stderr)
        return 1 if os.environ.get("CI") else 77
    root = os.path.abspath(args.source_dir)
    files = list(sources(root))
    if not files:
        print("no sources under " + root, file=sys.stderr)
        return 1
    unformatted, long_lines = [], []
    for i in range(0, len(files), 50):
        batch = files[i:i + 50]
        run = subprocess.run([tool, "--dry-run", "--Werror", "--style=file"] + batch,
                             capture_output=True, text=True)
        if run.returncode != 0:
            for f in batch:
                one = subprocess.run([tool, "--dry-run", "--Werror", "--style=file", f],
                                     capture_output=True, text=True)
                if one.returncode != 0:
                    unformatted.append(os.path.relpath(f, root))
    for f in files:
        with open(f, encoding="utf-8") as text:
            for n, line in enumerate(text, 1):
                if len(line.rstrip("\n")) > COLUMNS:
                    long_lines.append("%s:%d (%d columns)" % (os.path.relpath(f, root), n, len(line.rstrip("\n"))))
    for f in unformatted:
        print("not formatted: %s (clang-format -i %s)" % (f, f), file=sys.stderr)
    for where in long_lines:
        print("over %d columns: %s" % (COLUMNS, where), file=sys.stderr)
    print("%d files checked, %d not formatted, %d lines too long" % (len(files), len(unformatted), len(long_lines)))
    return 1 if unformatted or long_lines else 0


if __name__ == "__main__":
    sys.exit(main())
