#!/usr/bin/env python3
"""The house's sizes: no source file of kv/, swarm/ or cli/ over 450 lines
and no function over 80, unless it says why in a line `// size: REASON`
(a file: among its first five lines; a function: the line above it).

A function here is what the house's style makes one: a line at column 0
that is no namespace, class, struct, enum or extern block and ends with
`{`, up to the next line that starts with `}` at column 0. Lambdas and
classes' inline members count towards the function or file they are in.

    sizes_test.py SOURCE_DIR [--plant]   (--plant: check that it can fail)
"""
import os
import re
import sys
import tempfile

MAX_FILE = 450
MAX_FUNCTION = 80
FOLDERS = ("kv", "swarm", "cli")
BLOCK = re.compile(r"(namespace|struct|class|enum|union|extern|template)\b")


def opens_function(lines, i):
    """The line whose `{` opens the function whose signature begins on line
    i (its signature may wrap onto indented lines), or None."""
    line = lines[i]
    if (not line or line[0].isspace() or BLOCK.match(line) or line.startswith(("//", "#", "}"))
            or "=" in line.split("(")[0]):
        return None
    for j in range(i, min(i + 8, len(lines))):
        text = lines[j].rstrip()
        if j > i and (not text or not lines[j][0].isspace()):
            return None
        if text.endswith("{"):
            return j
        if text.endswith(";") or text.endswith("}"):
            return None
    return None


def functions(lines):
    """(first line, length, signature) of each function at column 0."""
    i = 0
    while i < len(lines):
        opened = opens_function(lines, i)
        if opened is None:
            i += 1
            continue
        end = opened + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        yield i, end - opened + 1, lines[i]
        i = end + 1


def problems(root):
    out = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                shown = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                if len(lines) > MAX_FILE and not any("// size:" in l for l in lines[:5]):
                    out.append(f"{shown}: {len(lines)} lines (at most {MAX_FILE}, or a `// size:` reason at its top)")
                if not name.endswith(".cc"):
                    continue
                for first, length, text in functions(lines):
                    if length > MAX_FUNCTION and not (first > 0 and "// size:" in lines[first - 1]):
                        out.append(f"{shown}:{first + 1}: a function of {length} lines (at most {MAX_FUNCTION}, or a "
                                   f"`// size:` reason above it): {text.strip()[:70]}")
    return out


def plant():
    """The check must be able to fail: a file and a function too long, one
    of each with its reason, and one of each just within the bounds."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "swarm", "x"))
        body = "".join(f"  int v{i} = {i};\n" for i in range(MAX_FUNCTION - 2))

        def write(name, text):
            with open(os.path.join(d, "swarm", "x", name), "w") as f:
                f.write(text)

        write("ok.cc", "namespace swarm {\n\nint fits() {\n" + body + "}\n\n}  // namespace swarm\n")
        write("long_fn.cc", "int too_long(int a,\n             int b) {\n" + body + "  return 0;\n}\n")
        write("reasoned_fn.cc", "// size: a table\nint table() {\n" + body + "  return 0;\n}\n")
        write("long_file.h", "#pragma once\n" + "// x\n" * MAX_FILE)
        write("reasoned_file.h", "// size: generated\n" + "// x\n" * MAX_FILE)
        found = problems(d)
        want = {"swarm/x/long_fn.cc:1:", "swarm/x/long_file.h:"}
        got = {p.split(" ")[0] for p in found}
        if got != want:
            print("the planted sizes were not found as planted:", *found, sep="\n  ")
            return 1
        print("the planted sizes were found:", *found, sep="\n  ")
        return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    if "--plant" in sys.argv[2:]:
        return plant()
    found = problems(sys.argv[1])
    for p in found:
        print(p)
    if found:
        print(f"{len(found)} over the house's sizes")
        return 1
    print("every file within 450 lines and every function within 80, or saying why")
    return plant()


if __name__ == "__main__":
    sys.exit(main())
