#!/usr/bin/env python3
"""Lists in the docs that must name everything the code has:

- README.md's "Dependencies" section names every Debian package run.sh
  installs (PACKAGES and BENCH_PACKAGES);
- docs/upgrading.md's table of migrations has a row for every engine
  migration in sql/migrations (`| \\`NNNN\\` ...`).

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    src = ap.parse_args().source_dir
    read = lambda p: open(os.path.join(src, p), encoding="utf-8").read()
    run_sh, readme, upgrading = read("run.sh"), read("README.md"), read("docs/upgrading.md")
    versions = sorted(f[:4] for f in os.listdir(os.path.join(src, "sql/migrations")) if re.match(r"\d{4}_.*\.sql$", f))

    # The checks can fail.
    if "planted-pkg" not in missing_packages(run_sh.replace("PACKAGES=(", "PACKAGES=(planted-pkg ", 1), readme):
        sys.exit("check_doc_lists: a planted package went unnoticed")
    if "9999" not in missing_migrations(versions + ["9999"], upgrading):
        sys.exit("check_doc_lists: a planted migration went unnoticed")

    problems = ["README.md's Dependencies do not name the package %s (run.sh installs it)" % p
                for p in missing_packages(run_sh, readme)]
    problems += ["docs/upgrading.md's migration table has no row for %s" % v
                 for v in missing_migrations(versions, upgrading)]
    for p in problems:
        print("FAIL: " + p)
    if problems:
        sys.exit(1)
    print("ok: README names every package; upgrading.md has every migration (%d)" % len(versions))


if __name__ == "__main__":
    main()
