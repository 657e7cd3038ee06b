#!/usr/bin/env python3
"""lib/tests/check_layers.py BUILDDIR LIBGPUCC_SO -- the layers docs/design.md describes,
checked on what the build compiled.  The include table (lib/meson.build's
lib_rooms) stops a room from including another's private headers; this
checks the calls, which may also go through the public API: no room of
lib/ calls into a room whose headers it may not include (the -I options
its files were compiled with, from compile_commands.json), no circle
between the files of libgpucc and formats/ (file A calls a function file B
defines, and B, by way of others or not, calls back into A), nothing in
formats/ that calls into lib/, and nothing in cmd/ that calls a function
libgpucc.so does not export.  And libgpucc reads its environment in one
file (docs/design.md): no object built from lib/ (its compile worker and
backend module included, the tests not) or formats/ but lib/base/config.c's
calls getenv or secure_getenv, and none but config.c's and
lib/base/process.c's (which hands it to a child unread) uses environ.
Reads the symbols of the object files with nm; exit 1 naming each breach
and the functions that make it."""
import collections
import glob
import json
import os
import re
import subprocess
import sys

build = sys.argv[1]
objects = {}  # file name -> (object file, "formats" or its room of lib/)
for o in glob.glob(build + "/lib/libgpucc_*.a.p/*.o"):
    room = os.path.basename(os.path.dirname(o))[len("libgpucc_"):-len(".a.p")]
    objects[os.path.basename(o)[len(room) + 1:-len(".c.o")]] = (o, room)
for o in glob.glob(build + "/formats/libgpucc_formats.a.p/*.o"):
    objects[os.path.basename(o)[:-len(".c.o")]] = (o, "formats")
if not objects:
    print(f"check_layers: no object files of libgpucc under '{build}'", file=sys.stderr)
    sys.exit(1)


def nm_symbols(paths):
    """{path: (defined, undefined)} of object files, from one nm (a process
    costs ~0.1 s: it loads binutils' plugins)."""
    out = subprocess.run(["nm", "-A"] + paths, capture_output=True, text=True, check=True).stdout
    table = {p: (set(), set()) for p in paths}
    for line in out.splitlines():
        path, _, rest = line.rpartition(":")
        fields = rest.split()
        if path not in table:
            continue
        if len(fields) == 3 and fields[1] in "TDBRV":
            table[path][0].add(fields[2])
        elif len(fields) == 2 and fields[0] == "U":
            table[path][1].add(fields[1])
    return table


defined, used = {}, collections.defaultdict(set)
table = nm_symbols([path for path, _ in objects.values()])
for name, (path, _) in objects.items():
    for symbol in table[path][0]:
        defined[symbol] = name
    used[name] |= table[path][1]

calls = collections.defaultdict(set)   # file -> files it calls into
why = collections.defaultdict(set)     # (file, file) -> symbols
for name, symbols in used.items():
    for symbol in symbols:
        owner = defined.get(symbol)
        if owner and owner != name:
            calls[name].add(owner)
            why[(name, owner)].add(symbol)

# The rooms each room may use: the lib/ROOM directories on the include
# path of its library's files.
may_use = collections.defaultdict(set)
with open(os.path.join(build, "compile_commands.json")) as f:
    for command in json.load(f):
        m = re.search(r" -o lib/libgpucc_(\w+)\.a\.p/", command["command"])
        if m:
            may_use[m.group(1)] |= set(re.findall(r"-I(?:\.\./)?lib/(\w+)(?=\s|$)",
                                                  command["command"]))

failures = []
for (a, b), symbols in sorted(why.items()):
    room_a, room_b = objects[a][1], objects[b][1]
    if room_a == "formats" and room_b != "formats":
        failures.append(f"formats/{a}.c calls into lib/{room_b}/{b}.c: {', '.join(sorted(symbols))}")
    elif room_a not in ("formats", room_b) and room_b != "formats" and room_b not in may_use[room_a]:
        failures.append(f"lib/{room_a}/{a}.c calls into lib/{room_b}/{b}.c, a room it may not "
                        f"use: {', '.join(sorted(symbols))}")

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

# The command links the static library (cmd/meson.build), where nothing
# stops it calling a hidden function: it may call only what libgpucc.so
# exports (the public API), besides what its own files define.
cmd_dir = build + "/cmd/gpucc.p"
cmd_objects = [os.path.join(cmd_dir, f) for f in  # (glob would skip .._formats_escape.c.o)
               (os.listdir(cmd_dir) if os.path.isdir(cmd_dir) else []) if f.endswith(".o")]
cmd_defined, cmd_used = set(), set()
for d, u in (nm_symbols(cmd_objects) if cmd_objects else {}).values():
    cmd_defined |= d
    cmd_used |= u
if not cmd_used:
    failures.append(f"no objects of the gpucc command under '{build}'")
else:
    out = subprocess.run(["nm", "-D", "--defined-only", sys.argv[2]], capture_output=True,
                         text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    hidden = sorted(s for s in cmd_used - cmd_defined
                    if s.startswith("gpucc_") and s not in exported)
    if hidden:
        failures.append("cmd/ calls functions libgpucc.so does not export: " + ", ".join(hidden))

# The environment: every object compiled from lib/ or formats/ (but their
# tests/), whichever program or library it went into, by its source file
# (compile_commands.json), against the one file that may read it.
readers = {"getenv": {"lib/base/config.c"}, "secure_getenv": {"lib/base/config.c"},
           "__secure_getenv": {"lib/base/config.c"},
           "environ": {"lib/base/config.c", "lib/base/process.c"},
           "__environ": {"lib/base/config.c", "lib/base/process.c"}}
source_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sources = {}  # object file -> its source, relative to the source root
with open(os.path.join(build, "compile_commands.json")) as f:
    for command in json.load(f):
        source = os.path.relpath(os.path.join(command["directory"], command["file"]), source_root)
        if (source.startswith(("lib/", "formats/")) and
                not source.startswith(("lib/tests/", "formats/tests/")) and command.get("output")):
            sources[os.path.join(command["directory"], command["output"])] = source
environment_objects = [o for o in sources if os.path.exists(o)]
if not any(s.startswith("lib/backend_llvm/") for s in map(sources.get, environment_objects)):
    failures.append(f"no objects of lib/backend_llvm under '{build}'")
for path, (_, undefined) in sorted(nm_symbols(environment_objects).items()):
    for symbol in sorted(undefined & readers.keys()):
        if sources[path] not in readers[symbol]:
            failures.append(f"{sources[path]} reads the environment ({symbol}), which only "
                            f"{' and '.join(sorted(readers[symbol]))} may "
                            f"({os.path.relpath(path, build)})")

for component in circles:
    links = [f"{a} -> {b} ({', '.join(sorted(why[(a, b)])[:3])})"
             for a in component for b in component if (a, b) in why]
    failures.append("circle: " + ", ".join(component) + ": " + "; ".join(links))

for f in failures:
    print("check_layers: " + f, file=sys.stderr)
print(f"check_layers: {len(objects)} files in {len(set(r for _, r in objects.values()))} rooms, "
      f"{sum(len(v) for v in calls.values())} calls between them, {len(circles)} circles; "
      f"{len(environment_objects)} objects of lib/ and formats/ checked for environment reads")
sys.exit(1 if failures else 0)
