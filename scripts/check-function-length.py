#!/usr/bin/env python3
"""The function-length check (issue 32, acceptance: "the largest function
under 100 lines outside codec interpreters").

Usage: scripts/check-function-length.py [SOURCE_DIR] [--list]
       (ctest: check_function_length, label "lint")
Measures every function defined in src/, tools/ and bench/ (*.c, *.h) and
prints  file:line: NAME is N lines (limit 99)  for each one of 100 lines or
more, exiting 1 if there is any. --list prints every function of 80 lines or
more, longest first, and exits 0.

WHAT IS MEASURED. The sources are clang-format'ed (scripts/format.sh), so a
function definition is: signature line(s) starting in column 0 and ending in
`{`, a body, and a line that is exactly `}` in column 0. A function's length
is the number of lines of its body: those between the signature's `{` and
that `}`. Struct, enum and array definitions end in `};` and are
not functions.

EXEMPT lists the codec interpreters, which are allowed to be longer: one
loop over a declaration table with a case per field type reads best as one
function (issue 32 item 3 keeps the codec as it is). Keep it minimal: a
function goes here only if it interprets a codec table.

PENDING lists functions that other changes of the issue 32 renovation split
(each was too long when this check came in, and is owned by a branch that
rewrites that file). It is temporary: each entry is to be removed when its
branch merges, and the check fails on an entry whose function is no longer
too long, so that the list only shrinks.
"""
import os
import re
import sys

LIMIT = 100  # a function of LIMIT lines or more fails

# (file, function): the codec interpreters (see above)
EXEMPT = {
    # The table-driven Kafka protocol interpreter (kproto.c): one switch over
    # the field types of kproto_msgs.h's declarations decoding one value.
    ("src/kafka/proto/kproto.c", "dec_value"),
}

# (file, function): TEMPORARY, owned by another change of issue 32 that
# rewrites the file, to be removed at merge (see above)
PENDING = set()  # empty: every branch of the renovation has merged

DIRS = ("src", "tools", "bench")
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """Yields (first line number, name, length) of each function in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    start = None  # index of the first signature line of the current definition
    opened = None  # index of the line ending in `{` that opened it
    for i, line in enumerate(lines):
        if opened is None:
            if start is None:
                # a definition starts in column 0 (continuation lines of a
                # signature are indented)
                if not line or line[0] in " \t#}/*":
                    continue
                start = i
            text = line.rstrip()
            if text.endswith("{"):
                sig = " ".join(l.strip() for l in lines[start:i + 1])
                head = sig.split("(", 1)[0]
                # a function: a parameter list, no `=` before it (an
                # initializer), not a struct/enum/union body
                if "(" in sig and "=" not in head and not re.search(r"\b(struct|enum|union)\s*\w*\s*\{$", sig):
                    opened = i
                else:
                    start = None
            elif text.endswith((";", "}", "*/")) or not text or text.startswith("#"):
                start = None
        elif line == "}":
            sig = " ".join(l.strip() for l in lines[start:opened + 1])
            m = NAME.search(sig.split("(", 1)[0] + "(")
            # the body: the lines between the signature's `{` and the `}`
            yield start + 1, m.group(1) if m else "?", i - opened - 1
            start = opened = None
        elif line.startswith("}"):
            # `};` or `} name;`: the end of an initializer or type that
            # slipped through as a definition
            start = opened = None


def main(argv):
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    found = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for fn in sorted(files):
                if fn.endswith((".c", ".h")) and not fn.endswith(".pb-c.c"):
                    p = os.path.join(dirpath, fn)
                    rel = os.path.relpath(p, root).replace(os.sep, "/")
                    for line, name, n in functions(p):
                        found.append((n, rel, line, name))
    found.sort(reverse=True)
    if listing:
        for n, rel, line, name in found:
            if n >= 80:
                tag = " (exempt)" if (rel, name) in EXEMPT else " (pending)" if (rel, name) in PENDING else ""
                print(f"{n:5} {rel}:{line}: {name}{tag}")
        return 0
    problems = []
    long = {(rel, name) for n, rel, line, name in found if n >= LIMIT}
    for n, rel, line, name in found:
        if n >= LIMIT and (rel, name) not in EXEMPT and (rel, name) not in PENDING:
            problems.append(f"{rel}:{line}: {name} is {n} lines (limit {LIMIT - 1}): split it")
    for rel, name in sorted((EXEMPT | PENDING) - long):
        problems.append(f"{rel}: {name} is listed in scripts/check-function-length.py but is "
                        f"not {LIMIT} lines or more (or is gone): delete the entry")
    for p in problems:
        print(p)
    if problems:
        print(f"check-function-length: {len(problems)} problem(s); the rules are at the top of "
              "scripts/check-function-length.py")
        return 1
    print(f"check-function-length: {len(found)} functions, the longest outside the exempt "
          f"and pending lists under {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
