#!/usr/bin/env python3
"""The monitoring files phasekey ships are sound and match the docs.

- deploy/prometheus/phasekey-alerts.yml passes `promtool check rules`, and
  docs/operations.md's alert table lists the same alerts with the same
  expressions and `for` durations, in the same order;
- deploy/grafana/phasekey-dashboard.json is a dashboard Grafana imports
  (valid JSON, a title and uid, unique panel ids, every panel on the grid,
  every target on the ${DS_PROMETHEUS} data source), and every panel's
  query parses as PromQL (promtool checks them as recording rules);
- every phasekey_* metric the rules and the dashboard name is one the
  engine exports (the list in engine/include/phasekey/metrics.h).

First it shows that promtool refuses a rule file with a broken expression,
so a checker that accepts everything fails. With CI set, a missing promtool
fails instead of skipping (exit 77).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def promtool_accepts(rules):
    """True when `promtool check rules` accepts a file of these groups."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump({"groups": rules}, f)
        path = f.name
    try:
        r = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
        return r.returncode == 0
    finally:
        os.unlink(path)


def exported_metrics(source_dir):
    header = open(os.path.join(source_dir, "engine/include/phasekey/metrics.h")).read()
    return set(re.findall(r"^//\s+(phasekey_[a-z0-9_]+)", header, re.M))


def metric_names(expr):
    names = set()
    for name in re.findall(r"phasekey_[a-z0-9_]+", expr):
        for suffix in ("_bucket", "_count", "_sum"):
            if name.endswith(suffix) and name[: -len(suffix)].endswith("_seconds"):
                name = name[: -len(suffix)]
        names.add(name)
    return names


def doc_alert_rows(source_dir):
    text = open(os.path.join(source_dir, "docs/operations.md")).read()
    start = text.index("| alert | expression | for | why |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows.append((cells[0], cells[1].strip("`"), cells[2]))
    return rows


def check_alerts(source_dir, known):
    path = os.path.join(source_dir, "deploy/prometheus/phasekey-alerts.yml")
    r = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True)
    if r.returncode != 0:
        fail("promtool check rules " + path + ":\n" + r.stdout + r.stderr)
    rules = [rule for group in yaml.safe_load(open(path))["groups"] for rule in group["rules"]]
    from_file = [(rule["alert"], rule["expr"], rule.get("for", "—")) for rule in rules]
    from_docs = doc_alert_rows(source_dir)
    if from_file != from_docs:
        for a, b in zip(from_file + [None] * len(from_docs), from_docs + [None] * len(from_file)):
            if a != b:
                fail("docs/operations.md's alert table and phasekey-alerts.yml differ first at:\n  file: %s\n  docs: %s"
                     % (a, b))
    for rule in rules:
        unknown = metric_names(rule["expr"]) - known
        if unknown:
            fail("alert %s names metrics the engine does not export: %s" % (rule["alert"], sorted(unknown)))
    print("ok: %d alert rules pass promtool and match docs/operations.md" % len(rules))


def check_dashboard(source_dir, known):
    path = os.path.join(source_dir, "deploy/grafana/phasekey-dashboard.json")
    try:
        dash = json.load(open(path))
    except ValueError as e:
        fail("%s is not JSON: %s" % (path, e))
    for field in ("title", "uid", "panels", "schemaVersion"):
        if field not in dash:
            fail("the dashboard has no " + field)
    ids = [p.get("id") for p in dash["panels"]]
    if len(set(ids)) != len(ids) or None in ids:
        fail("panel ids must be present and unique: %s" % ids)
    records = []
    for p in dash["panels"]:
        grid = p.get("gridPos", {})
        if not all(k in grid for k in ("x", "y", "w", "h")) or grid["x"] + grid["w"] > 24:
            fail("panel %r is not on the 24-column grid: %s" % (p.get("title"), grid))
        if not p.get("targets"):
            fail("panel %r has no query" % p.get("title"))
        for t in p["targets"]:
            if t.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
                fail("panel %r: a target not on ${DS_PROMETHEUS}" % p.get("title"))
            unknown = metric_names(t["expr"]) - known
            if unknown:
                fail("panel %r names metrics the engine does not export: %s" % (p.get("title"), sorted(unknown)))
            records.append({"record": "phasekey:dashboard:panel%d_%s" % (p["id"], t["refId"]), "expr": t["expr"]})
    if not promtool_accepts([{"name": "dashboard", "rules": records}]):
        fail("a dashboard query is not valid PromQL (above)")
    print("ok: the dashboard's %d panels and %d queries are valid" % (len(ids), len(records)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    if shutil.which("promtool") is None:
        if os.environ.get("CI"):
            fail("promtool is not installed (Debian package prometheus)")
        print("SKIP: promtool is not installed")
        sys.exit(77)
    if promtool_accepts([{"name": "planted", "rules": [{"record": "x:y", "expr": "rate(phasekey_commits_total[5m]"}]}]):
        fail("promtool accepted a broken expression: the check cannot fail")
    known = exported_metrics(args.source_dir)
    if len(known) < 10:
        fail("found only %d metrics in metrics.h's list" % len(known))
    check_alerts(args.source_dir, known)
    check_dashboard(args.source_dir, known)


if __name__ == "__main__":
    main()
