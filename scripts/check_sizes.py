#!/usr/bin/env python3
"""Lists the C++ files over a line limit and the function bodies over a line limit.

  scripts/check_sizes.py [PATH...]   (default: src tools apps include)

Files: every .h, .cc and .cpp with more than --file-lines lines (600). Functions: every body of
more than --function-lines lines (120), counted from the first line of the definition (template
line included) to its closing brace: functions and member functions defined at namespace scope,
member functions defined inside class bodies, and TEST / TEST_F / TEST_P bodies. A lambda counts
toward the function that holds it. Comments, string and character literals (raw strings too) and
preprocessor lines are blanked before braces are matched. The brace matching is a heuristic, not
a C++ parser: it follows this code base's formatting (clang-format).

Prints one line per finding (path:first-last, lines, name) and exits with 1 if there is any.
"""
import argparse
import os
import re
import sys

SUFFIXES = (".h", ".cc", ".cpp")
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
                 "alignof", "static_assert", "requires", "noexcept"}
TEST_MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST"}


def blank(text):
    """text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True  # Only whitespace since the last newline.
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or
                                                          text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = i + 1 if not m else (n if end < 0 else end + len(m.group(1)) + 2)
            if not m:
                out.append(c)
                i += 1
                line_start = False
                continue
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # Not 1'000.
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        elif c == "#" and line_start:
            j = i
            while True:
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            j = k
        else:
            out.append(c)
            if c == "\n":
                line_start = True
            elif not c.isspace():
                line_start = False
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        line_start = False
        i = j
    return "".join(out)


def classify(head):
    """What the text before a '{' at namespace or class scope opens: ("scope", _) for a namespace,
    class, struct, union or enum; ("function", name); or None (an initializer, ...)."""
    h = " ".join(head.split())
    h = re.sub(r"^((public|private|protected)\s*:\s*)+", "", h)
    if not h:
        return None
    if h.startswith("namespace") or h.startswith('extern "C"'):
        return ("scope", h)
    if re.search(r"\b(class|struct|union|enum)\b", h) and not re.search(r"\)\s*[\w\s&:<>,*-]*$", h):
        return ("scope", h)
    if "(" not in h or h.endswith("="):
        return None
    if h.startswith("["):  # A lambda.
        return None
    m = re.match(r"^(.*?)(operator\s*\S+?|[~\w:]+(?:<[^()]*>)?)\s*\(", h)
    if not m:
        return None
    name = m.group(2)
    if name.split("::")[-1] in NOT_FUNCTIONS:
        return None
    if name in TEST_MACROS:
        args = re.search(r"\(([^()]*)\)", h)
        name = f"{name}({args.group(1) if args else ''})"
    # A braced member initializer in a constructor's init list: `: a_(x), b_{y}`.
    if re.search(r"\)\s*:[^:]", h) and re.search(r"[\w>]$", h) and \
            not re.search(r"\b(const|override|final|noexcept|mutable)$", h):
        return ("init", name)
    return ("function", name)


def long_functions(path, limit):
    """(first line, last line, name) of each function body in path longer than limit lines."""
    with open(path, encoding="utf-8", errors="replace") as f:
        s = blank(f.read())
    found = []
    stack = []  # (kind, name, first line)
    head_start = 0
    for i, c in enumerate(s):
        at_scope = not stack or stack[-1][0] == "scope"
        if c == ";":
            if at_scope:
                head_start = i + 1
        elif c == "{":
            kind, name = "block", None
            if at_scope:
                r = classify(s[head_start:i])
                if r:
                    kind, name = r
            start = head_start
            head = s[head_start:i]
            skipped = re.match(r"\s*((public|private|protected)\s*:\s*)*", head)
            start += skipped.end() if skipped else 0
            stack.append((kind, name, s.count("\n", 0, start) + 1))
            if kind != "init":
                head_start = i + 1
        elif c == "}" and stack:
            kind, name, first = stack.pop()
            if kind == "init":
                continue
            if kind == "function":
                last = s.count("\n", 0, i) + 1
                if last - first + 1 > limit:
                    found.append((first, last, name))
            if not stack or stack[-1][0] == "scope":
                head_start = i + 1
    return found


def sources(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    yield os.path.join(root, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", default=["src", "tools", "apps", "include"])
    ap.add_argument("--file-lines", type=int, default=600)
    ap.add_argument("--function-lines", type=int, default=120)
    args = ap.parse_args()
    bad = 0
    for path in sources(args.paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = sum(1 for _ in f)
        if lines > args.file_lines:
            print(f"{path}\t{lines} lines\t(file)")
            bad += 1
        for first, last, name in long_functions(path, args.function_lines):
            print(f"{path}:{first}-{last}\t{last - first + 1} lines\t{name}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
