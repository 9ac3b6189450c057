#!/usr/bin/env python3
"""Two rules of docs/ARCHITECTURE.md that the compiler does not check, checked here (CI runs it):

- no file-level import cycle in any crate: an edge A -> B when file A names something through
  module B's path (`crate::b::X`, `super::X`, `use b::...`, or a crate-root re-export of B's
  item); a strongly connected component of two or more files is a cycle;
- no function in compiler/ or runtime/ longer than 120 lines.

A heuristic reader of Rust text (comments and strings blanked, braces matched), not a parser:
good enough for this code base's style. Exit status 1 on a violation, with what and where.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["ir/src", "runtime/src", "compiler/src", "nn/src", "oracle/src", "src", "python/src",
          "fuzz/src"]
LONG_FN_DIRS = ["compiler/src", "runtime/src"]
MAX_FN_LINES = 120


def blank(src):
    """`src` with comments, strings and char literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(src)
    spaces = lambda t: re.sub(r"[^\n]", " ", t)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i) + 2
            out.append(spaces(src[i:j]))
            i = j
            continue
        raw = re.match(r'r(#*)"', src[i:i + 10])
        if raw and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = '"' + raw.group(1)
            j = src.find(end, i + len(raw.group(0))) + len(end)
            out.append(spaces(src[i:j]))
            i = j
            continue
        if src[i] == '"':
            j = i + 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(spaces(src[i:j]))
            i = j
            continue
        if src[i] == "'":
            lit = (re.match(r"'(\\.|[^\\'])'", src[i:i + 4])
                   or re.match(r"'\\u\{[0-9a-fA-F]+\}'", src[i:i + 12])
                   or re.match(r"'\\x..'", src[i:i + 6]))
            if lit:
                out.append(" " * len(lit.group(0)))
                i += len(lit.group(0))
                continue
        out.append(src[i])
        i += 1
    return "".join(out)


def rust_files(crate):
    for dirpath, _, names in os.walk(os.path.join(ROOT, crate)):
        for name in sorted(names):
            if name.endswith(".rs"):
                yield os.path.join(dirpath, name)


def long_functions(crate):
    for path in rust_files(crate):
        s = blank(open(path, encoding="utf-8").read())
        for m in re.finditer(r"\bfn\s+(\w+)", s):
            k, semi = s.find("{", m.end()), s.find(";", m.end())
            if k < 0 or 0 <= semi < k:
                continue
            depth, j = 0, k
            while True:
                depth += {"{": 1, "}": -1}.get(s[j], 0)
                if depth == 0:
                    break
                j += 1
            first, last = s.count("\n", 0, m.start()) + 1, s.count("\n", 0, j) + 1
            if last - first + 1 > MAX_FN_LINES:
                yield f"{os.path.relpath(path, ROOT)}:{first}: fn {m.group(1)} is " \
                      f"{last - first + 1} lines (at most {MAX_FN_LINES})"


def import_cycles(crate):
    mods = {}
    for path in rust_files(crate):
        rel = os.path.relpath(path, os.path.join(ROOT, crate))[:-3].split(os.sep)
        if rel[-1] in ("mod", "lib", "main"):
            rel = rel[:-1]
        mods[tuple(rel)] = path
    if () not in mods:
        return
    root_text = blank(open(mods[()], encoding="utf-8").read())
    reexported = {}
    for m in re.finditer(r"pub use (\w+)::\{([^}]*)\}", root_text):
        for name in m.group(2).split(","):
            if name.strip():
                reexported[name.strip()] = m.group(1)
    for m in re.finditer(r"pub use (\w+)::(\w+);", root_text):
        reexported[m.group(2)] = m.group(1)

    def resolve(path):
        for k in range(len(path), 0, -1):
            if tuple(path[:k]) in mods:
                return tuple(path[:k])
        if path and path[0] in reexported:
            return (reexported[path[0]],)
        return None

    edges = {m: set() for m in mods}
    for mod, path in mods.items():
        s = blank(open(path, encoding="utf-8").read())
        pattern = r"\b(crate|super|self)((?:::\w+)*)(::\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\})?"
        for m in re.finditer(pattern, s):
            segs = [x for x in m.group(2).split("::") if x]
            if m.group(1) == "crate":
                prefix = []
            elif m.group(1) == "super":
                prefix = list(mod[:-1])
                while segs and segs[0] == "super":
                    segs, prefix = segs[1:], prefix[:-1]
            else:
                prefix = list(mod)
            targets = [prefix + segs]
            if m.group(4):
                for item in re.split(r",(?![^{]*\})", m.group(4)):
                    item = item.strip().split(" as ")[0]
                    if item:
                        targets.append(prefix + segs + [x for x in item.split("::")
                                                        if x and not x.startswith("{")])
            for t in targets:
                r = resolve(t)
                if r is not None and r != mod:
                    edges[mod].add(r)
    # Tarjan's strongly connected components.
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                names = sorted("::".join(x) or "lib" for x in comp)
                inside = set(comp)
                detail = "; ".join(
                    f"{'::'.join(a) or 'lib'} -> {', '.join(sorted('::'.join(b) for b in edges[a] if b in inside))}"
                    for a in sorted(comp))
                out.append(f"{crate}: import cycle among {names}: {detail}")

    for v in mods:
        if v not in index:
            visit(v)
    yield from out


def main():
    problems = [p for c in CRATES for p in import_cycles(c)]
    problems += [p for c in LONG_FN_DIRS for p in long_functions(c)]
    for p in problems:
        print(p)
    if problems:
        print(f"code-shape: {len(problems)} problem(s) (docs/ARCHITECTURE.md, Invariants)")
        return 1
    print("code-shape: no import cycle in any crate, no function over "
          f"{MAX_FN_LINES} lines in {' or '.join(LONG_FN_DIRS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
