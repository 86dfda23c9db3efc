#!/usr/bin/env python3
"""docs/configuration.md matches the option structs (ctest label "docs").

For each struct below, reads its fields from the header (name, type and
default initializer: `int buckets = 0;`, `std::chrono::milliseconds
lease{60000};`) and checks the page's section for it (the part under the
heading that names the struct, down to the next heading):
- every field has a table row whose first cell is the field in backticks
  (for ServiceFlags: the flag, `--lease-seconds` for lease_seconds);
- a field with an initializer has its default in that row's second cell in
  backticks, spelled as the header spells it (a string literal without its
  quotes), followed by ` ms` for std::chrono::milliseconds and ` s` for
  std::chrono::seconds;
- no row names a field the struct does not have.

Before that it proves it can fail: a copy of the page with one row removed,
and one with a default changed, must each be reported.

Usage: check_configuration.py --source-dir DIR
"""
import argparse
import os
import re
import sys

DOC = "docs/configuration.md"

# (header, struct, heading that opens its section, how a field is named in
# the table: "field" as is, "flag" as --field-with-dashes)
STRUCTS = [
    ("engine/include/phasekey/database_options.h", "DatabaseOptions", "`DatabaseOptions`", "field"),
    ("engine/include/phasekey/runner.h", "RunnerOptions", "`RunnerOptions`", "field"),
    ("engine/include/phasekey/data_protection.h", "EncryptionOptions", "`EncryptionOptions`", "field"),
    ("engine/include/phasekey/workers.h", "RedriveOptions", "`RedriveOptions`", "field"),
    ("engine/include/phasekey/workers.h", "ReaperOptions", "`ReaperOptions`", "field"),
    ("engine/include/phasekey/workers.h", "RegenerationAuditOptions", "`RegenerationAuditOptions`", "field"),
    ("engine/include/phasekey/workers.h", "EnqueuerOptions", "`EnqueuerOptions`", "field"),
    ("engine/include/phasekey/inbox.h", "InboxOptions", "`InboxOptions`", "field"),
    ("examples/ride_booking/service.h", "ServiceFlags", "The ride example's flags", "flag"),
]

UNITS = {"std::chrono::milliseconds": "ms", "std::chrono::seconds": "s"}


class Field:
    def __init__(self, name, type_, default):
        self.name, self.type, self.default = name, type_, default


def strip_comments(text):
    """The text without // and /* */ comments; string literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_at_depth0(text, sep):
    """Splits at `sep` outside (), {}, <> and string literals."""
    parts, depth, start, quote = [], 0, 0, None
    for i, c in enumerate(text):
        if quote:
            if c == quote and text[i - 1] != "\\":
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "({<":
            depth += 1
        elif c in ")}>":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def struct_body(text, struct):
    m = re.search(r"\bstruct\s+%s\s*\{" % re.escape(struct), text)
    if not m:
        raise ValueError("struct %s not found" % struct)
    depth, i = 1, m.end()
    while depth:
        if i >= len(text):
            raise ValueError("struct %s: no closing brace" % struct)
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


DECLARATOR = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*(?:\{(?P<brace>.*)\}|=\s*(?P<eq>.+))?$", re.S)


def parse_fields(header_text, struct):
    """The struct's data members, in order. Raises on what it cannot read,
    so a field is never skipped silently."""
    fields = []
    for stmt in split_at_depth0(struct_body(strip_comments(header_text), struct), ";"):
        stmt = " ".join(stmt.split())
        if not stmt:
            continue
        if re.match(r"^[\w:<>]+\s+\w+\([^)]*\)\s*(const\s*)?\{.*\}$", stmt, re.S):
            continue  # an inline member function (EncryptionOptions::enabled), not an option
        if re.match(r"(static|using|friend|enum|struct|class|template)\b", stmt):
            raise ValueError("struct %s: cannot check `%s`" % (struct, stmt))
        pieces = [p.strip() for p in split_at_depth0(stmt, ",")]
        # The type is what precedes the first declarator's name.
        m = re.match(r"^(?P<type>.*?[\w>:&*])\s+(?P<decl>[A-Za-z_]\w*\s*(?:\{.*\}|=.+)?)$", pieces[0], re.S)
        if not m or "(" in m.group("decl"):
            raise ValueError("struct %s: cannot read the field `%s`" % (struct, stmt))
        type_ = m.group("type")
        for decl in [m.group("decl")] + pieces[1:]:
            d = DECLARATOR.match(decl)
            if not d:
                raise ValueError("struct %s: cannot read the declarator `%s`" % (struct, decl))
            default = d.group("brace") if d.group("brace") is not None else d.group("eq")
            if default is not None:
                default = default.strip()
                if default == "":
                    default = None  # `{}`: value-initialized, described in words
                elif re.fullmatch(r'"[^"]*"', default):
                    default = default[1:-1]
            fields.append(Field(d.group("name"), type_, default))
    if not fields:
        raise ValueError("struct %s: no fields found" % struct)
    return fields


def section(doc, heading_marker):
    """The lines under the first heading containing `heading_marker`, down
    to the next heading."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#") and heading_marker in line:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("#")), len(lines))
            return lines[i + 1:end]
    return None


def table_rows(lines, naming):
    """{name: [cells]} of the table rows whose first cell starts with a
    backticked name (a flag for naming "flag")."""
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.match(r"`([^`]+)`", cells[0])
        if not m or (naming == "flag") != m.group(1).startswith("--"):
            continue
        rows[m.group(1)] = cells
    return rows


def doc_name(field, naming):
    return "--" + field.name.replace("_", "-") if naming == "flag" else field.name


def check(doc, structs_fields):
    """Every mismatch between `doc` and the fields, as messages."""
    errors = []
    for (header, struct, marker, naming), fields in structs_fields:
        lines = section(doc, marker)
        if lines is None:
            errors.append("%s: no heading with %s (for %s in %s)" % (DOC, marker, struct, header))
            continue
        rows = table_rows(lines, naming)
        names = set()
        for f in fields:
            name = doc_name(f, naming)
            names.add(name)
            where = "%s %s::%s (%s)" % (DOC, struct, f.name, header)
            row = rows.get(name)
            if row is None:
                errors.append("%s: no row `%s` under %s" % (where, name, marker))
                continue
            if f.default is None:
                continue
            if len(row) < 2:
                errors.append("%s: the row has no default column" % where)
                continue
            want = "`%s`" % f.default
            unit = UNITS.get(f.type)
            pattern = re.escape(want) + (r"\s+%s\b" % unit if unit else "")
            if not re.search(pattern, row[1]):
                errors.append("%s: default is %s%s in the header, the page says: %s"
                              % (where, want, " " + unit if unit else "", row[1]))
        for name in sorted(set(rows) - names):
            errors.append("%s: row `%s` under %s names no field of %s" % (DOC, name, marker, struct))
    return errors


def self_test(doc, structs_fields):
    """The check reports a removed row and a changed default, or it proves
    nothing. Returns a reason when it does not."""
    (_, _, marker, naming), fields = structs_fields[0]
    f = next(f for f in fields if f.default is not None)
    row_start = "| `%s` |" % doc_name(f, naming)
    lines = doc.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith(row_start)]
    if not at:
        return "self-test: no row starting with %s" % row_start
    without = "\n".join(lines[:at[0]] + lines[at[0] + 1:])
    changed_line = lines[at[0]].replace("`%s`" % f.default, "`%s9`" % f.default, 1)
    changed = "\n".join(lines[:at[0]] + [changed_line] + lines[at[0] + 1:])
    for what, text in (("a removed row", without), ("a changed default", changed)):
        if not any(f.name in e for e in check(text, structs_fields)):
            return "self-test: %s (%s) was not reported" % (what, f.name)
    return None


def environment_variables(source_dir):
    """Every variable the code reads: getenv("X") in the sources, ${X:-...} in run.sh."""
    names = set()
    for top in ("engine", "phases", "client", "cli", "examples"):
        for root, _, files in os.walk(os.path.join(source_dir, top)):
            for name in files:
                if name.endswith((".cc", ".h")):
                    with open(os.path.join(root, name), encoding="utf-8") as f:
                        names.update(re.findall(r'getenv\("([A-Z_0-9]+)"\)', f.read()))
    with open(os.path.join(source_dir, "run.sh"), encoding="utf-8") as f:
        names.update(re.findall(r"\$\{([A-Z_][A-Z_0-9]*):-", f.read()))
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    structs_fields = []
    try:
        for spec in STRUCTS:
            with open(os.path.join(args.source_dir, spec[0]), encoding="utf-8") as f:
                structs_fields.append((spec, parse_fields(f.read(), spec[1])))
    except (OSError, ValueError) as e:
        print("check_configuration: %s" % e, file=sys.stderr)
        return 1
    with open(os.path.join(args.source_dir, DOC), encoding="utf-8") as f:
        doc = f.read()
    problem = self_test(doc, structs_fields)
    if problem:
        print("check_configuration: %s" % problem, file=sys.stderr)
        return 1
    errors = check(doc, structs_fields)
    for e in errors:
        print(e, file=sys.stderr)
    count = sum(len(fields) for _, fields in structs_fields)
    if errors:
        print("check_configuration: %d problem(s); fix %s or the header" % (len(errors), DOC), file=sys.stderr)
        return 1
    variables = environment_variables(args.source_dir)
    missing = sorted(v for v in variables if "| `%s` |" % v not in doc)
    if len(variables) < 5 or missing:
        print("check_configuration: environment variables read by the code but without a row in %s: %s "
              "(%d found)" % (DOC, ", ".join(missing) or "-", len(variables)), file=sys.stderr)
        return 1
    print("check_configuration: %d fields of %d structs and %d environment variables match %s"
          % (count, len(STRUCTS), len(variables), DOC))
    return 0


if __name__ == "__main__":
    sys.exit(main())
