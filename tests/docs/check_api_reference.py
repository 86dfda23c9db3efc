#!/usr/bin/env python3
"""The API reference builds without a warning (ctest label "docs").

Runs doxygen with docs/api/Doxyfile, as `./run.sh docs` does, from the
repository root, writing into the build tree instead of build-docs/. Fails
on any warning, and says which symbols are undocumented (file, line and
name) and what else doxygen reported.

Before that it checks that the run means something:
- the Doxyfile fails on an undocumented symbol (WARN_IF_UNDOCUMENTED = YES,
  WARN_AS_ERROR on) and its INPUT covers every public header (every .h
  under a top-level component's include/, which CMake installs);
- a probe: doxygen with the same Doxyfile over a scratch header holding one
  documented and one undocumented function warns about exactly the
  undocumented one and fails. That proves that warnings are on and that
  the plain `//` comments reach doxygen through docs/api/doxygen_filter.py.

Without doxygen the test is skipped (exit 77), unless the environment
variable CI is set: then a missing doxygen fails it (./run.sh installs
doxygen with the test set of packages).

Usage: check_api_reference.py --source-dir DIR --output-dir DIR [--doxygen PATH]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
DOXYFILE = "docs/api/Doxyfile"
UNDOCUMENTED = re.compile(r"^(.*?):(\d+): (?:warning|error): (?:Member|Compound) (.*?) is not documented\.$")


def read_settings(path):
    """The Doxyfile's NAME = value settings, continuation lines joined."""
    settings = {}
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        settings[name.strip()] = value.strip()
    return settings


def check_settings(source_dir):
    """Problems with the Doxyfile's strictness and coverage, as lines."""
    settings = read_settings(os.path.join(source_dir, DOXYFILE))
    problems = []
    if settings.get("WARN_IF_UNDOCUMENTED") != "YES":
        problems.append("WARN_IF_UNDOCUMENTED must be YES: an undocumented public symbol must warn")
    if settings.get("WARN_AS_ERROR") not in ("YES", "FAIL_ON_WARNINGS"):
        problems.append("WARN_AS_ERROR must be YES or FAIL_ON_WARNINGS: ./run.sh docs must fail on a warning")
    inputs = [os.path.normpath(p) for p in settings.get("INPUT", "").split()]
    for component in sorted(os.listdir(source_dir)):
        include = os.path.join(source_dir, component, "include")
        if component.startswith((".", "build")) or not os.path.isdir(include):
            continue
        for root, _, files in os.walk(include):
            for name in sorted(files):
                if not name.endswith(".h"):
                    continue
                header = os.path.relpath(os.path.join(root, name), source_dir)
                if not any(header.startswith(p + os.sep) for p in inputs):
                    problems.append(f"{header} is a public header but not in the Doxyfile's INPUT")
    return problems


def run_doxygen(doxygen, source_dir, overrides):
    """Runs doxygen over the Doxyfile with `overrides` (NAME: value) applied,
    from the repository root. Returns (exit status, warnings as lines)."""
    with open(os.path.join(source_dir, DOXYFILE), encoding="utf-8") as f:
        config = f.read()
    config += "\n" + "".join(f"{name} = {value}\n" for name, value in overrides.items())
    log = overrides["WARN_LOGFILE"]
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ, PHASEKEY_VERSION=os.environ.get("PHASEKEY_VERSION", "test"))
    done = subprocess.run([doxygen, "-"], input=config, text=True, cwd=source_dir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    warnings = []
    if os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            warnings = [line.rstrip("\n") for line in f if line.strip()]
    if done.returncode != 0 and not warnings:
        warnings = [f"doxygen exited with {done.returncode}:"] + done.stdout.splitlines()
    return done.returncode, warnings


PROBE_HEADER = """\
// A header for checking the checker.
#ifndef PROBE_H_
#define PROBE_H_

namespace probe {

// Documented by this plain comment, which the filter shows to doxygen.
int Documented();

int Undocumented();

}  // namespace probe

#endif  // PROBE_H_
"""


def check_probe(doxygen, source_dir, scratch):
    """Problems with the probe run (see the module comment), as lines."""
    probe_dir = os.path.join(scratch, "probe")
    os.makedirs(probe_dir)
    with open(os.path.join(probe_dir, "probe.h"), "w", encoding="utf-8") as f:
        f.write(PROBE_HEADER)
    status, warnings = run_doxygen(doxygen, source_dir, {
        "INPUT": probe_dir,
        "OUTPUT_DIRECTORY": os.path.join(scratch, "probe-out"),
        "WARN_LOGFILE": os.path.join(scratch, "probe-warnings.log"),
    })
    undocumented = [m.group(3) for m in map(UNDOCUMENTED.match, warnings) if m]
    problems = []
    if not any("Undocumented" in name for name in undocumented):
        problems.append("the probe's undocumented function did not warn: " + repr(warnings))
    if any("Documented(" in name and "Undocumented" not in name for name in undocumented):
        problems.append("the probe's function documented by a // comment warned: the filter did not run")
    if status == 0:
        problems.append("doxygen succeeded on the probe's warning: WARN_AS_ERROR does not fail the run")
    return problems


LOCATION = re.compile(r"^(/[^:]*):(\d+):(.*)$")


def header_location(path, line, source_dir):
    """`path`:`line` of doxygen's filtered copy as the header's own place:
    the path relative to the repository, and the line one less when the
    header opens with a comment (the filter adds a `/// @file` line there;
    docs/api/doxygen_filter.py)."""
    try:
        with open(path, encoding="utf-8") as f:
            opens_with_comment = f.readline().lstrip().startswith("//")
    except OSError:
        return f"{path}:{line}"
    if opens_with_comment and line > 1:
        line -= 1
    return f"{os.path.relpath(path, source_dir)}:{line}"


def located(warning, source_dir):
    """`warning` with its file:line as the header's own."""
    m = LOCATION.match(warning)
    if not m:
        return warning
    return header_location(m.group(1), int(m.group(2)), source_dir) + ":" + m.group(3)


def report(warnings, source_dir):
    """Prints the warnings: undocumented symbols first, by file."""
    undocumented = [m for m in map(UNDOCUMENTED.match, warnings) if m]
    others = [w for w in warnings if not UNDOCUMENTED.match(w)]
    if undocumented:
        print(f"{len(undocumented)} undocumented public symbols (document each with a // comment "
              "above it that states its contract; docs/contributing.md):")
        for m in sorted(undocumented, key=lambda m: (m.group(1), int(m.group(2)))):
            print(f"  {header_location(m.group(1), int(m.group(2)), source_dir)}: {m.group(3)}")
    if others:
        print(f"{len(others)} other doxygen warnings:")
        for w in others:
            print(f"  {located(w, source_dir)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--doxygen", default="")
    args = parser.parse_args()
    source_dir = os.path.abspath(args.source_dir)

    doxygen = args.doxygen or shutil.which("doxygen")
    if not doxygen or not os.access(doxygen, os.X_OK):
        why = "doxygen is missing (Debian package doxygen; ./run.sh test installs it)"
        if os.environ.get("CI") is not None:
            print(f"FAIL: {why}; CI is set, so a missing prerequisite fails the test instead of skipping it")
            return 1
        print(f"SKIP: {why}")
        return SKIP

    problems = check_settings(source_dir)
    output_dir = os.path.abspath(args.output_dir)
    shutil.rmtree(output_dir, ignore_errors=True)
    os.makedirs(output_dir)
    with tempfile.TemporaryDirectory(dir=output_dir) as scratch:
        problems += check_probe(doxygen, source_dir, scratch)
    if problems:
        print("FAIL: the check itself would not catch an undocumented symbol:")
        for p in problems:
            print(f"  {p}")
        return 1

    status, warnings = run_doxygen(doxygen, source_dir, {
        "OUTPUT_DIRECTORY": output_dir,
        "WARN_LOGFILE": os.path.join(output_dir, "warnings.log"),
    })
    if warnings or status != 0:
        print(f"FAIL: doxygen over {DOXYFILE} (exit status {status}):")
        report(warnings, source_dir)
        return 1
    print(f"OK: the API reference ({output_dir}/html) built without a warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
