#!/usr/bin/env python3
"""lib/tests/check_rooms.py BUILDDIR -- the rooms of lib/ (lib/meson.build's
lib_rooms) enforced by the compile itself.  For each room, with the
compile command the build uses for that room's files (compile_commands.json),
a file that includes one private header of another room:
- fails to compile, with the header not found, when the room may not use
  that room;
- compiles, when it may (each header stands on its own).
The planted file lies outside the tree (its own folder is not searched for
"..." includes), so only the room's include path can find the header.
Each file is its own translation unit, but one compiler run takes all of
a room's (gcc runs its compiler proper once per file; the driver, and
ccache's, once per room); a room whose run does not give each file the
outcome expected is run again one file at a time, for the messages.
And a room's *_impl.h headers are included by no other room's files.
Exit 1 naming each breach."""
import collections
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1])
source_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

commands = {}  # room -> one compile command of its files, as an argv
with open(os.path.join(build, "compile_commands.json")) as f:
    for command in json.load(f):
        m = (re.search(r" -o lib/libgpucc_(\w+)\.a\.p/", command["command"]) or
             re.search(r" -o lib/(backend_llvm)/[^ ]*\.so\.p/[^ ]*\.c\.o", command["command"]))
        if m and m.group(1) not in commands:
            commands[m.group(1)] = (command["directory"], shlex.split(command["command"]))
headers = {room: sorted(glob.glob(os.path.join(source_root, "lib", room, "*.h")))
           for room in commands}
if len(commands) < 2 or not all(headers.values()):
    print(f"check_rooms: no rooms with headers in '{build}'s compile commands", file=sys.stderr)
    sys.exit(1)


def planted_argv(argv, planted):
    """argv, compiling the files planted only: its source and
    dependency-file arguments and ccache (which caches no -fsyntax-only
    run, and doubled each one's cost) dropped, -fsyntax-only added."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-o", "-MQ", "-MF", "-MT"):
            skip = True
        elif arg in ("-c", "-MD", "-MMD", "ccache") or arg.endswith(".c"):
            continue
        else:
            out.append(arg)
    return out + ["-fsyntax-only", "-fdiagnostics-color=never"] + planted


def outcome(stderr, planted, name):
    """From the diagnostics of a run that compiled several files: whether
    planted (one of them, including name) failed, and whether it failed by
    name's not being found.  gcc names the planted file in every
    diagnostic of its own, and in the "included from" line before those
    of a header it includes."""
    lines = [line for line in stderr.splitlines() if planted + ":" in line]
    return bool(lines), any(name in line and "fatal error" in line for line in lines)


failures, counts = [], collections.Counter()
with tempfile.TemporaryDirectory() as tmp:
    for room, (directory, argv) in sorted(commands.items()):
        may_use = set(re.findall(r"-I(?:\.\./)?lib/(\w+)$", " ".join(argv).replace(" ", "\n"),
                                 re.M))
        plants = []  # (planted file, other room, header name)
        for other, files in sorted(headers.items()):
            for header in files:
                name = os.path.basename(header)
                planted = os.path.join(tmp, f"{room}-{len(plants)}.c")
                with open(planted, "w") as f:
                    f.write(f'#include "{name}"\n')
                plants.append((planted, other, name))
        refused = sum(other not in may_use for _, other, _ in plants)
        run = subprocess.run(planted_argv(argv, [p for p, _, _ in plants]), cwd=directory,
                             capture_output=True, text=True)
        expected = (run.returncode != 0) == (refused > 0) and \
            sum("error:" in line for line in run.stderr.splitlines()) == refused
        counts["again"] += not expected
        for planted, other, name in plants:
            failed, not_found = outcome(run.stderr, planted, name)
            expected = expected and (not_found if other not in may_use else not failed)
        for planted, other, name in plants:
            allowed = other in may_use
            counts["refused" if not allowed else "allowed"] += 1
            if expected:
                continue
            alone = subprocess.run(planted_argv(argv, [planted]), cwd=directory,
                                   capture_output=True, text=True)
            if allowed and alone.returncode != 0:
                failures.append(f"lib/{room}/ may use lib/{other}/, but {name} does not "
                                f"compile there: {alone.stderr.strip().splitlines()[:1]}")
            elif not allowed and (alone.returncode == 0 or name not in alone.stderr):
                failures.append(f"lib/{room}/ includes lib/{other}/{name}, a room it may "
                                f"not use, and the compile "
                                f"{'succeeds' if alone.returncode == 0 else 'fails otherwise'}")

# Naming: a room's *_impl.h headers are its own; what it offers the rooms
# above it is in *_internal.h and its other headers.  No file of another
# room includes an *_impl.h (lib/tests/ may: unit tests reach inside).
impl_headers = {os.path.basename(h): h.split(os.sep)[-2]
                for h in glob.glob(os.path.join(source_root, "lib", "*", "*_impl.h"))}
for path in glob.glob(os.path.join(source_root, "lib", "*", "*.[ch]")):
    room = path.split(os.sep)[-2]
    if room == "tests":
        continue
    with open(path) as f:
        for name in re.findall(r'^#include "([^"]+)"', f.read(), re.M):
            owner = impl_headers.get(os.path.basename(name))
            if owner and owner != room:
                failures.append(f"lib/{room}/{os.path.basename(path)} includes lib/{owner}/{name}, "
                                f"private to its room (*_impl.h)")
                counts["impl"] += 1

for f in failures:
    print("check_rooms: " + f, file=sys.stderr)
again = f"; {counts['again']} rooms run again file by file" if counts["again"] else ""
print(f"check_rooms: {len(commands)} rooms, {counts['refused']} planted includes refused, "
      f"{counts['allowed']} allowed ones compiled{again}")
sys.exit(1 if failures else 0)
