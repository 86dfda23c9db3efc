#!/usr/bin/env python3
"""docs/scaling.md's table of named queries matches sql/queries (ctest label "docs").

Citus is not packaged for Debian 12, so the distributed layout is checked on
paper: docs/scaling.md holds a table of every named query of
sql/queries/*.sql and the shards it touches, between the lines
    <!-- query-shards: tests/docs/check_query_shards.py -->
    <!-- /query-shards -->
This script renders that table from the SQL files and fails when the page
holds anything else (--write rewrites it). Per query:
- its tables (phasekey.* names that are tables or views of the migrations);
- where it runs: a statement on a table distributed by bucket
  (idempotency_keys, its views key_rows and key_rows_v2, staged_jobs, inbox_events) stays on
  one bucket's shard when each of its WHERE clauses after a bucketed
  table's name has `bucket = $n` (the outer one of a batch UPDATE or
  DELETE included; a clause that filters only a CTE's rows is not one) or,
  for an INSERT, it
  writes the bucket column; otherwise it spans every bucket. A statement on
  other tables only runs on the node that holds them; one on no table runs
  where the session is.
- for a query that spans buckets, its reason, taken from the list of
  tests/unit/single_shard_queries_test.cc (kAcrossBuckets). The two must
  agree: a query this script finds spanning buckets without a reason there,
  or a reason there for a query that stays on one bucket, fails the check.

Before that it proves it can fail: the same rendering over a copy of the
queries with one bucket predicate removed must differ.

Usage: check_query_shards.py --source-dir DIR [--write]
"""
import argparse
import glob
import os
import re
import sys

DOC = "docs/scaling.md"
BEGIN = "<!-- query-shards: tests/docs/check_query_shards.py -->"
END = "<!-- /query-shards -->"
LIST = "tests/unit/single_shard_queries_test.cc"

BUCKETED = ["idempotency_keys", "key_rows", "key_rows_v2", "staged_jobs", "inbox_events", "data_keys", "key_audit_counted"]
# Where the tables that are not distributed by bucket live (docs/scaling.md,
# "The Citus layout").
PLACEMENT = {
    "deployment": "reference table: a copy on every node",
    "schema_migrations": "the coordinator only",
    "operator_audit": "the coordinator only",
    "key_encryption_keys": "reference table: a copy on every node",
    "flow_masks": "reference table: a copy on every node",
}


def named_queries(source_dir):
    """[(file, name, text)] of every named query, in file and file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(source_dir, "sql", "queries", "*.sql"))):
        name, lines = None, []
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"-- name: (\w+)", line)
                if m:
                    if name:
                        out.append((os.path.basename(path), name, "".join(lines)))
                    name, lines = m.group(1), []
                elif name:
                    lines.append(line)
        if name:
            out.append((os.path.basename(path), name, "".join(lines)))
    return out


def relations(source_dir):
    """Names of the tables and views created in schema phasekey (by the
    migrations, or by the migrator's own bootstrap query)."""
    names = set()
    for path in glob.glob(os.path.join(source_dir, "sql", "*", "*.sql")):
        with open(path, encoding="utf-8") as f:
            names.update(re.findall(r"CREATE (?:TABLE|VIEW) (?:IF NOT EXISTS )?phasekey\.(\w+)", f.read()))
    return names


def bare(sql):
    """The statement without comments and aggregate FILTER (WHERE ...)."""
    sql = re.sub(r"--[^\n]*", "", sql)
    return re.sub(r"FILTER\s*\(\s*WHERE", "FILTER (", sql, flags=re.I)


def bucket_scope(sql):
    """'one' or the reason the statement leaves one bucket's shard."""
    insert = re.search(r"INSERT\s+INTO\s+phasekey\.(idempotency_keys|staged_jobs|inbox_events|data_keys)\s*\(([^)]*)\)",
                       sql, re.I)
    if insert:
        return "one" if "bucket" in insert.group(2) else "an INSERT without the bucket"
    clauses = re.split(r"\bWHERE\b", sql, flags=re.I)
    if len(clauses) < 2:
        return "no WHERE clause"
    # A WHERE clause must name the bucket when a bucketed table is named
    # since the WHERE before it; one that filters only a CTE's rows or none
    # (a claim's gate) selects within rows already chosen.
    named = re.compile(r"phasekey\.(" + "|".join(BUCKETED + ["key_regeneration_pairs"]) + r")\b")
    for i, clause in enumerate(clauses[1:], 1):
        if not named.search(clauses[i - 1]):
            continue
        if not re.search(r"\bbucket\s*=\s*\$[0-9]+", clause):
            return f"WHERE clause {i} has no bucket = $n"
    return "one"


def across_buckets(source_dir):
    """{name: reason} from the C++ test's kAcrossBuckets."""
    with open(os.path.join(source_dir, LIST), encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"kAcrossBuckets = \{(.*?)\n\};", text, re.S)
    if not block:
        sys.exit(f"check_query_shards: no kAcrossBuckets list in {LIST}")
    return dict(re.findall(r'\{"(\w+)",\s*"([^"]*)"\}', block.group(1)))


def render(queries, rels, reasons):
    """(table text, problems)."""
    rows, problems = [], []
    for file, name, text in queries:
        sql = bare(text)
        tables = sorted(set(t for t in re.findall(r"phasekey\.(\w+)", sql) if t in rels))
        bucketed = [t for t in tables if t in BUCKETED]
        if bucketed:
            scope = bucket_scope(sql)
            if scope == "one":
                where = "one bucket's shard"
                if name in reasons:
                    problems.append(f"{name} stays on one bucket but {LIST} lists it as spanning buckets")
            elif name in reasons:
                where = f"every shard: {reasons[name]}"
            else:
                where = f"every shard ({scope})"
                problems.append(f"{name} spans buckets ({scope}) and {LIST} does not list it with a reason")
            others = [PLACEMENT.get(t, "?") for t in tables if t not in BUCKETED]
            if others:
                where += "; joins a table not distributed by bucket"
        elif tables:
            where = "; ".join(sorted(set(PLACEMENT.get(t, f"unplaced table {t}") for t in tables)))
            problems += [f"{name}: table phasekey.{t} has no placement in this script" for t in tables
                         if t not in PLACEMENT]
        else:
            where = "no table: the node the session is on"
        cell = ", ".join(f"`{t}`" for t in tables) or "none"
        rows.append(f"| `{name}` | {file} | {cell} | {where} |")
    for name in reasons:
        if name not in [q[1] for q in queries]:
            problems.append(f"{LIST} lists {name}, which is not a named query")
    head = "| query | file | tables | shards it touches |\n|---|---|---|---|\n"
    return head + "\n".join(rows) + "\n", problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    queries = named_queries(args.source_dir)
    rels = relations(args.source_dir)
    reasons = across_buckets(args.source_dir)
    if len(queries) < 40 or "idempotency_keys" not in rels or len(reasons) < 5:
        sys.exit(f"check_query_shards: read too little ({len(queries)} queries, {len(rels)} relations, "
                 f"{len(reasons)} listed exceptions): the parsing is broken")

    table, problems = render(queries, rels, reasons)
    # The check can fail: KeyGet without its bucket predicate renders
    # differently and is reported.
    broken = [(f, n, t.replace("bucket = $3 AND", "") if n == "KeyGet" else t) for f, n, t in queries]
    broken_table, broken_problems = render(broken, rels, reasons)
    if broken_table == table or not any("KeyGet" in p for p in broken_problems):
        sys.exit("check_query_shards: a KeyGet without `bucket = $3` went unnoticed: the check cannot fail")

    path = os.path.join(args.source_dir, DOC)
    with open(path, encoding="utf-8") as f:
        page = f.read()
    begin, end = page.find(BEGIN), page.find(END)
    if begin < 0 or end < begin:
        sys.exit(f"check_query_shards: {DOC} lacks the lines {BEGIN} ... {END}")
    current = page[begin + len(BEGIN):end]
    wanted = "\n" + table
    if args.write and current != wanted:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page[:begin + len(BEGIN)] + wanted + page[end:])
        print(f"check_query_shards: rewrote the table in {DOC}")
        current = wanted
    failed = False
    for p in problems:
        print(f"check_query_shards: {p}", file=sys.stderr)
        failed = True
    if current != wanted:
        print(f"check_query_shards: the table in {DOC} is not what sql/queries renders; run\n"
              f"  tests/docs/check_query_shards.py --source-dir . --write\nwanted:\n{table}", file=sys.stderr)
        failed = True
    if failed:
        return 1
    print(f"check_query_shards: {len(queries)} named queries, table up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
