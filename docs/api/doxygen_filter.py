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
- doxygen's special characters in comment text (a backslash, <) are
  escaped outside `code spans`;
- a comment after a closing brace or a preprocessor line (`}  // namespace
  phasekey`, `#endif  // PHASEKEY_STATUS_H_`) is dropped.
A warning's line number past the opening comment is one more than the
header's (the added `/// @file` line).
Usage (by doxygen): doxygen_filter.py FILE; writes the filtered copy to stdout.
"""
import re
import sys

WHOLE = re.compile(r"^(\s*)//(?!/)(.*)$")
TRAILING = re.compile(r"^(.*?[^\s/].*?)(\s+)//(?!/)(.*)$")


def escape(text):
    """Comment text with doxygen's special characters escaped outside
    `code spans`: a backslash (\\u0041 in a comment is no command) and <
    (<phase> is no HTML tag)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("\\", "\\\\").replace("<", "\\<")
    return "`".join(parts)


def code_part_is_plain(code):
    """True when `code` holds no string literal that could hide a //."""
    return '"' not in code and "'" not in code


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
        t = TRAILING.match(line)
        if t and code_part_is_plain(t.group(1)):
            code = t.group(1)
            if code.strip().startswith("#") or code.strip().startswith("}"):
                out.append(code)
            else:
                out.append(f"{code}{t.group(2)}///<{escape(t.group(3))}")
            continue
        out.append(line)
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    # The @file line is one extra line: doxygen's line numbers after the
    # file's opening comment are one more than the header's.
    text = "\n".join(filter_lines(lines))
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
