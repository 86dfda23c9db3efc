#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for phasekey's public headers (docs/api/Doxyfile).

The headers document their contracts in plain `//` comments, leveldb style,
and stay that way. Doxygen reads only `///`, so this filter hands it a copy
in which:
- the comment block that opens the file (before the include guard) becomes
  the file's description (`/// @file`);
- a whole-line `//` comment becomes `///`, documenting what follows it;
- a `//` comment after a declaration on the same line becomes `///<`,
  documenting that declaration (an enumerator, a member);
- a comment above a declaration of several members (`std::string a, b;`)
  documents each of them: the comment and the line are made a member group
  (`///@{` opening the comment's first line, `///@}` closing the
  declaration's), whose documentation doxygen gives to every member
  (DISTRIBUTE_GROUP_DOC in the Doxyfile);
- doxygen's special characters in comment text (a backslash, <) are
  escaped outside `code spans`;
- a comment after a closing brace or a preprocessor line (`}  // namespace
  phasekey`, `#endif  // PHASEKEY_STATUS_H_`) is dropped, and so is a
  linter's `// NOLINT` after a declaration (an instruction to a tool, not
  documentation; the declaration's comment goes above it).
A warning's line number past the opening comment is one more than the
header's (the added `/// @file` line); no other line is added.
Usage (by doxygen): doxygen_filter.py FILE; writes the filtered copy to stdout.
"""
import re
import sys

WHOLE = re.compile(r"^(\s*)//(?!/)(.*)$")
# What comes before a trailing comment: the code, then the blanks.
TRAILING = re.compile(r"^(.*?)(\s+)$")
# A plain declaration: type and names, no initializer, call or body.
DECLARATION = re.compile(r"^\s*[A-Za-z_][\w:<>, *&]*;\s*$")


def escape(text):
    """Comment text with doxygen's special characters escaped outside
    `code spans`: a backslash (\\u0041 in a comment is no command) and <
    (<phase> is no HTML tag)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("\\", "\\\\").replace("<", "\\<")
    return "`".join(parts)


def code_end(line):
    """The index of the `//` that starts a comment after code on `line`
    (outside string and character literals), or None: no such comment, or
    a raw string literal, which this scanner does not follow."""
    if 'R"' in line:
        return None
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif line.startswith("//", i):
            return i if line[:i].strip() and not line.startswith("///", i) else None
        i += 1
    return None


def split_trailing(line):
    """(code, blanks, comment text) for a line with a `//` comment after
    code, else None."""
    end = code_end(line)
    if end is None:
        return None
    t = TRAILING.match(line[:end])
    if t is None or not t.group(2):
        return None
    return t.group(1), t.group(2), line[end + 2 :]


def declares_several(line):
    """True when `line` declares several variables at once (`int a, b;`):
    a plain declaration with a comma outside template brackets."""
    if not DECLARATION.match(line):
        return False
    depth = 0
    for c in line:
        depth += (c == "<") - (c == ">")
        if c == "," and depth == 0:
            return True
    return False


def group_comments_of_multi_declarations(out):
    """Wraps each comment block that documents a declaration of several
    members, with that declaration, in a member group (see the module
    comment)."""
    result = []
    block_start = None  # index in `result` of the current comment block
    for line in out:
        stripped = line.strip()
        is_comment = stripped.startswith("///") and not stripped.startswith("///<")
        if is_comment and block_start is None:
            block_start = len(result)
        if not is_comment:
            if block_start is not None and declares_several(line):
                result[block_start] = result[block_start].replace("///", "///@{", 1)
                result.append(line + "  ///@}")
                block_start = None
                continue
            block_start = None
        result.append(line)
    return result


def filter_lines(lines):
    out = []
    in_header = True  # the file's opening comment block
    for line in lines:
        m = WHOLE.match(line)
        if in_header:
            if m:
                prefix = "/// @file\n/// " if not out else "/// "
                out.append(prefix + escape(m.group(2).lstrip()) if m.group(2).strip() else "///")
                continue
            in_header = False
        if m:
            out.append(f"{m.group(1)}///{escape(m.group(2))}")
            continue
        t = split_trailing(line)
        if t:
            code, blanks, comment = t
            if code.strip().startswith(("#", "}")) or comment.lstrip().startswith("NOLINT"):
                out.append(code)
            else:
                out.append(f"{code}{blanks}///<{escape(comment)}")
            continue
        out.append(line)
    return group_comments_of_multi_declarations(out)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    # The @file line is one extra line: doxygen's line numbers after the
    # file's opening comment are one more than the header's.
    text = "\n".join(filter_lines(lines))
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
