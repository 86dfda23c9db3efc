#!/usr/bin/env python3
"""Lists in the docs that must name everything the code has:

- README.md's "Dependencies" section names every Debian package run.sh
  installs (PACKAGES and BENCH_PACKAGES);
- docs/upgrading.md's table of migrations has a row for every engine
  migration in sql/migrations (`| \\`NNNN\\` ...`);
- every path of the repository that the docs, README.md or a comment of a
  tracked source, script or CMake file names (engine/..., tests/..., a file
  beside the one that names it, ...) exists: a file renamed or removed leaves
  no reference behind (#include lines are include paths, not checked here:
  the compiler checks them);
- every environment variable the programs read (a string literal
  "PHASEKEY_...", "FAKE_GATEWAY_..." or "RIDE_BOOKING_..." outside tests/: only variable names
  are spelled so) or run.sh reads has a row in
  docs/configuration.md's tables (`| \\`NAME\\` |`);
- every list of the key states (`active|finished|dead...`, in docs and
  comments) names every state of phasekey.key_state (0001_baseline.sql).

Each check first runs on a planted omission and must report it, so a
checker that finds nothing fails.

Usage: check_doc_lists.py --source-dir DIR
"""
import argparse
import os
import re
import sys


def bash_array(text, name):
    m = re.search(r"^%s=\((.*?)\)" % name, text, re.S | re.M)
    if not m:
        sys.exit("check_doc_lists: no %s=( ... ) in run.sh" % name)
    body = "\n".join(line.split("#", 1)[0] for line in m.group(1).splitlines())
    return body.split()


def missing_packages(run_sh, readme):
    start = readme.find("## Dependencies")
    end = readme.find("\n## ", start + 1)
    if start < 0:
        return ["(README.md has no Dependencies section)"]
    named = set(re.findall(r"`([a-z0-9][a-z0-9.+-]*)`", readme[start:end]))
    wanted = bash_array(run_sh, "PACKAGES") + bash_array(run_sh, "BENCH_PACKAGES")
    return [p for p in wanted if p not in named]


def missing_migrations(versions, upgrading):
    rows = set(re.findall(r"^\| `(\d{4})`", upgrading, re.M))
    return [v for v in versions if v not in rows]


PATH = re.compile(r"(?<![\w/.*-])((?:engine|phases|client|cli|net|sql|tests|examples|bench|deploy|docs)/"
                  r"[A-Za-z0-9_./-]*\.(?:cc|h|sh|py|sql|md|txt|json|jsonl|yml|in|cmake|mjs|png|svg))\b")
SOURCE_SUFFIXES = ("CMakeLists.txt", ".cc", ".h", ".sh", ".py", ".sql", ".cmake", ".in")
# Paths that name a generated file (the build tree's) or, in a test, a
# made-up one, not one of the repository's.
NOT_FILES = {"sql/queries.h", "engine/src/x.cc"}
# Where a relative path may also start: the include roots, and the folder a
# page's listings come from.
INCLUDE_ROOTS = ["engine/src", "engine/include", "net/src", "phases/include", "client/include", "tests",
                 "tests/support"]
PAGE_ROOTS = {"docs/tutorial.md": ["examples/tutorial"]}
# Migrations are never edited once released (their checksums are recorded),
# so their comments keep the names of their time; this checker itself shows
# patterns.
UNCHECKED = re.compile(r"(^|/)sql/(migrations/)?\d{4}_[^/]*\.sql$|^tests/docs/check_doc_lists\.py$")


def tracked_files(src):
    out = []
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d == "build" or d.startswith("build-"))]
        out += [os.path.relpath(os.path.join(root, f), src) for f in files]
    return out


def dangling_paths(src, files, exists):
    """(path, where) for each named path that does not exist, relative to the
    root or to the naming file's folder or one of its parents."""
    out = []
    for f in files:
        text = open(os.path.join(src, f), encoding="utf-8", errors="replace").read()
        for n, line in enumerate(text.split("\n"), 1):
            if line.lstrip().startswith("#include"):
                continue
            for m in PATH.finditer(line):
                path = m.group(1)
                if path in NOT_FILES:
                    continue
                bases, d = [""] + INCLUDE_ROOTS + PAGE_ROOTS.get(f, []), os.path.dirname(f)
                while d:
                    bases.append(d)
                    d = os.path.dirname(d)
                if not any(exists(os.path.normpath(os.path.join(b, path))) for b in bases):
                    out.append((path, "%s:%d" % (f, n)))
    return out


STATE_LIST = re.compile(r"\bactive\\?\|finished\\?\|dead(?:\\?\|[a-z_]+)*")


def incomplete_state_lists(files_text, states):
    out = []
    for f, text in files_text:
        for n, line in enumerate(text.split("\n"), 1):
            for m in STATE_LIST.finditer(line):
                named = set(re.split(r"\\?\|", m.group(0)))
                lacking = [s for s in states if s not in named]
                if lacking:
                    out.append("%s:%d lists the key states as %s without %s" % (f, n, m.group(0), ", ".join(lacking)))
    return out


PROGRAM_DIRS = ("engine/", "cli/", "phases/", "client/", "net/", "examples/")
GETENV = re.compile(r'"((?:PHASEKEY|FAKE_GATEWAY|RIDE_BOOKING)_[A-Z0-9_]+)"')  # a name the programs look up, as a literal


def undocumented_variables(texts, run_sh, configuration):
    read = set()
    for f, text in texts:
        if f.startswith(PROGRAM_DIRS):
            read.update(GETENV.findall(text))
    read.update(re.findall(r"\$\{?(PHASEKEY_[A-Z0-9_]+)", run_sh))
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", configuration, re.M))
    return sorted(read - rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    src = ap.parse_args().source_dir
    read = lambda p: open(os.path.join(src, p), encoding="utf-8").read()
    run_sh, readme, upgrading = read("run.sh"), read("README.md"), read("docs/upgrading.md")
    versions = sorted(f[:4] for f in os.listdir(os.path.join(src, "sql/migrations")) if re.match(r"\d{4}_.*\.sql$", f))

    every = tracked_files(src)
    named_in = ["README.md"] + ["docs/" + f for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md")]
    named_in += [f for f in every if f.endswith(SOURCE_SUFFIXES) and not UNCHECKED.search(f)]
    exists = lambda p: os.path.exists(os.path.join(src, p))
    baseline = read("sql/migrations/0001_baseline.sql")
    m = re.search(r"CREATE TYPE phasekey\.key_state AS ENUM \(([\s\S]*?)\n\);", baseline)
    if not m:
        sys.exit("check_doc_lists: no phasekey.key_state enum in 0001_baseline.sql")
    states = re.findall(r"^\s*'([a-z_]+)'", m.group(1), re.M)
    texts = [(f, read(f)) for f in named_in]

    # The checks can fail.
    if not dangling_paths(src, ["README.md"], lambda p: exists(p) and p != "docs/tutorial.md"):
        sys.exit("check_doc_lists: a planted missing path went unnoticed")
    configuration = read("docs/configuration.md")
    if "PHASEKEY_PLANTED" not in undocumented_variables([("engine/x.cc", 'getenv("PHASEKEY_PLANTED")')], "",
                                                        configuration):
        sys.exit("check_doc_lists: a planted environment variable went unnoticed")
    if not incomplete_state_lists([("planted", "--state active|finished|dead")], states):
        sys.exit("check_doc_lists: a planted incomplete state list went unnoticed")
    if "planted-pkg" not in missing_packages(run_sh.replace("PACKAGES=(", "PACKAGES=(planted-pkg ", 1), readme):
        sys.exit("check_doc_lists: a planted package went unnoticed")
    if "9999" not in missing_migrations(versions + ["9999"], upgrading):
        sys.exit("check_doc_lists: a planted migration went unnoticed")

    problems = ["README.md's Dependencies do not name the package %s (run.sh installs it)" % p
                for p in missing_packages(run_sh, readme)]
    problems += ["docs/upgrading.md's migration table has no row for %s" % v
                 for v in missing_migrations(versions, upgrading)]
    problems += ["%s names %s, which does not exist" % (where, path)
                 for path, where in dangling_paths(src, named_in, exists)]
    problems += incomplete_state_lists(texts, states)
    problems += ["docs/configuration.md has no row for the environment variable %s, which is read" % v
                 for v in undocumented_variables(texts, run_sh, configuration)]
    for p in problems:
        print("FAIL: " + p)
    if problems:
        sys.exit(1)
    print("ok: README names every package; upgrading.md has every migration (%d); every named path exists (%d files "
          "read); every list of key states is whole (%s)" % (len(versions), len(named_in), ", ".join(states)))


if __name__ == "__main__":
    main()
