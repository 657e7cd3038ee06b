#!/usr/bin/env python3
"""lib/tests/check_layers.py BUILDDIR -- the layers docs/design.md describes,
checked on what the build compiled: no circle between the files of
libgpucc and formats/ (file A calls a function file B defines, and B, by way
of others or not, calls back into A), and nothing in formats/ that calls
into lib/.  Reads the symbols of the object files with nm; exit 1 naming
each circle and the functions that close it."""
import collections
import glob
import os
import subprocess
import sys

build = sys.argv[1]
objects = {}
for pattern, layer in ((build + "/lib/libgpucc.so.*.p/*.o", "lib"),
                       (build + "/formats/libgpucc_formats.a.p/*.o", "formats")):
    for o in glob.glob(pattern):
        name = os.path.basename(o)[:-len(".c.o")]
        objects[name] = (o, layer)
if not objects:
    print(f"check_layers: no object files of libgpucc under '{build}'", file=sys.stderr)
    sys.exit(1)

defined, used = {}, collections.defaultdict(set)
for name, (path, _) in objects.items():
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "TDBRV":
            defined[fields[2]] = name
        elif len(fields) == 2 and fields[0] == "U":
            used[name].add(fields[1])

calls = collections.defaultdict(set)   # file -> files it calls into
why = collections.defaultdict(set)     # (file, file) -> symbols
for name, symbols in used.items():
    for symbol in symbols:
        owner = defined.get(symbol)
        if owner and owner != name:
            calls[name].add(owner)
            why[(name, owner)].add(symbol)

failures = []
for (a, b), symbols in sorted(why.items()):
    if objects[a][1] == "formats" and objects[b][1] == "lib":
        failures.append(f"formats/{a}.c calls into lib/{b}.c: {', '.join(sorted(symbols))}")

# Strongly connected components (Tarjan, iterative).
index, low, on_stack, stack, circles, counter = {}, {}, set(), [], [], 0
for root in sorted(objects):
    if root in index:
        continue
    work = [(root, iter(sorted(calls[root])))]
    index[root] = low[root] = counter; counter += 1
    stack.append(root); on_stack.add(root)
    while work:
        node, edges = work[-1]
        pushed = False
        for nxt in edges:
            if nxt not in index:
                index[nxt] = low[nxt] = counter; counter += 1
                stack.append(nxt); on_stack.add(nxt)
                work.append((nxt, iter(sorted(calls[nxt]))))
                pushed = True
                break
            if nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if pushed:
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop(); on_stack.discard(member); component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

for component in circles:
    links = [f"{a} -> {b} ({', '.join(sorted(why[(a, b)])[:3])})"
             for a in component for b in component if (a, b) in why]
    failures.append("circle: " + ", ".join(component) + ": " + "; ".join(links))

for f in failures:
    print("check_layers: " + f, file=sys.stderr)
print(f"check_layers: {len(objects)} files, {sum(len(v) for v in calls.values())} "
      f"calls between them, {len(circles)} circles")
sys.exit(1 if failures else 0)
