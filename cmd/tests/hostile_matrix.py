#!/usr/bin/env python3
# cmd/tests/hostile_matrix.py -- the matrix of cmd/tests/hostile_images.sh:
# every command that reads images, on every hostile image of cases.tsv,
# each run checked as that script's header says.  One process runs the
# ~1,700 commands, so that the checks (the tree outside res/, peak memory,
# the one-line error) cost no processes of their own.
#
#   hostile_matrix.py GPUCC CASES KEY PART MAX_RSS_KB MAX_AS
#
# Run in the test's directory (in/, res/, t/).  MAX_RSS_KB and MAX_AS of 0
# leave memory unwatched (sanitizer builds).  Prints "CASES PEAK_KB PEAK_CMD"
# on its last line; any failed check ends it with exit 1 and the reason.
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys

GPUCC, CASES, KEY, PART = sys.argv[1:5]
MAX_RSS_KB, MAX_AS = int(sys.argv[5]), int(sys.argv[6])
SKIP = {"./res", "./t", "./out", "./err"}


def fail(message):
    sys.exit("FAIL: " + message)


def bre(pattern):
    """A grep basic regular expression (with GNU's \\|) as a Python one."""
    out, i, in_bracket = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if in_bracket:
            out.append(c)
            in_bracket = c != "]" or out[-2] in "[^"
        elif c == "\\" and i + 1 < len(pattern):
            n = pattern[i + 1]
            out.append(n if n in "|(){}" else "\\" + n)
            i += 1
        elif c in "|(){}+?":
            out.append("\\" + c)
        else:
            out.append(c)
            in_bracket = c == "["
        i += 1
    return re.compile("".join(out))


def outside():
    """Names, kinds, sizes, times and link targets of the tree but res/."""
    seen = []
    for top, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
        for name in dirs + files:
            path = os.path.join(top, name)
            if path in SKIP:
                continue
            st = os.lstat(path)
            link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
            seen.append((path, st.st_mode, st.st_size, st.st_mtime_ns, link))
    return sorted(seen)


# Each command's address space is bounded by this process's limit, which
# it inherits: set here, once, rather than in each child before its exec
# (a preexec_fn makes subprocess fork this process and run Python in the
# child, where without one it uses vfork: that doubled the matrix's CPU
# time).  This process stays far below the bound.
if MAX_AS:
    resource.setrlimit(resource.RLIMIT_AS, (MAX_AS, MAX_AS))
peak = (0, "")
tree = outside()


def run(name, want, file, defect, argv):
    """Run argv with a fresh res/ and check it as the script's header says."""
    global peak
    shutil.rmtree("res", ignore_errors=True)
    os.mkdir("res")
    with open("out", "wb") as out, open("err", "wb") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    shown = " ".join(argv[1:])
    stderr = open("err", "rb").read().decode("utf-8", "replace")
    if code != want:
        fail(f"'{shown}' exited {code}, not {want}: {stderr[:2000]}")
    if outside() != tree:
        fail(f"'{shown}' changed files outside res/")
    if MAX_RSS_KB:
        if usage.ru_maxrss > MAX_RSS_KB:
            fail(f"'{shown}' peaked at {usage.ru_maxrss} KiB, over {MAX_RSS_KB}")
        peak = max(peak, (usage.ru_maxrss, shown))
    if want == 0:
        return
    if stderr.count("\n") != 1:
        fail(f"'{shown}': stderr is not one line: {stderr[:2000]}")
    if not bre(f"^gpucc {name}: .*'{file}'").search(stderr) or not bre(defect).search(stderr):
        fail(f"'{shown}': '{defect}' not found in: {stderr}")
    if os.path.getsize("out"):
        fail(f"'{shown}' failed but wrote on stdout")
    for top, _, files in os.walk("res"):
        for f in files:
            path = os.path.join(top, f)
            if not path.startswith("res/cache/"):
                fail(f"'{shown}' failed but left: {path}")
            if "/tmp/" in path:
                fail(f"'{shown}' left a temporary file: {path}")
            if path.endswith(".gpucc") and subprocess.call([GPUCC, "verify", "-q", path]):
                fail(f"'{shown}' left an unverified cache entry {path}")


def code(cmd, stage):
    """The exit code of each command for a defect met at STAGE (cases.tsv):
    stats reads the manifest and builds the payload list from it, so it
    fails at "open" and "payloads" and nowhere else; "payloads" is
    otherwise "first"."""
    if stage == "open" or (stage, cmd) == ("payloads", "stats"):
        return 3
    if cmd == "stats":
        return 0
    if stage == "payloads":
        return code(cmd, "first")
    if cmd == "verify":
        return 3
    if stage == "index" and cmd in ("show", "cat"):
        return 3
    if (stage, cmd) == ("first", "cat"):
        return 3
    if stage in ("first", "all"):
        return 3 if cmd in ("extract", "merge", "delta", "import") else 0
    if stage in ("write", "whole"):
        return 3 if cmd in ("merge", "delta", "import") else 0
    return 0


def shorter_than_listed(path):
    """Whether the uncompressed image is shorter than the members its
    manifest lists take: each a one-block header and its data padded to
    whole blocks, and one zero block (the head of these images is the
    one-block ustar members of the format member, the index when there is
    one, and the manifest)."""
    b = open(path, "rb").read()

    def pad(n):
        return (n + 511) // 512 * 512

    def size(at):
        return int(b[at + 124:at + 136].split(b"\0")[0].strip() or b"0", 8)

    at = 512 + pad(size(0))
    head = 3 * 512 + pad(size(0)) + pad(size(at))
    if b[at:at + 12] == b"manifest.idx":
        at += 512 + pad(size(at))
        head += 512 + pad(size(at))
    manifest = json.loads(b[at + 512:at + 512 + size(at)])
    payloads = {(p["sha256"], p["part"]): p["size"]
                for e in manifest["entries"] for p in e["payloads"]}
    return len(b) < head + sum(512 + pad(n) for n in payloads.values())


def base_code(path, stage):
    """The exit code of delta with the image as its BASE, for a defect met
    at STAGE.  The BASE is checked whole and nothing more: a compressed one
    is decompressed to its end-of-archive marker, which meets every defect
    of a member's header or kind ("first", "all": not a digest, which is
    "write" and "verify"'s); an uncompressed one is only measured against
    the members its manifest lists, so it fails at "first" or "all" only
    when the defect leaves it shorter than they take (a link, a device, a
    FIFO or a sparse member holds no data), and then with verify's error."""
    if stage in ("open", "payloads", "whole"):
        return 3
    if stage in ("first", "all"):
        if path.endswith(".zst.gpucc"):
            return 3
        return 3 if shorter_than_listed(path) else 0
    return 0


cases = 0
for line in open(CASES):
    base, stage, defect = line.rstrip("\n").split("\t")
    f = "in/hostile/" + base
    for name, cmd, argv in [
        ("verify", "verify", ["verify", f]),
        ("list", "list", ["list", f]),
        ("show", "show", ["show", f, KEY]),
        ("cat", "cat", ["cat", f, KEY, "--part", PART]),
        ("extract", "extract", ["extract", f, "-C", "res/x"]),
        ("merge", "merge", ["merge", f, "-o", "res/merged.gpucc"]),
        ("delta", "delta", ["delta", f, "--since", "in/empty.snap", "-o", "res/delta.gpucc"]),
        ("snapshot", "list", ["snapshot", f, "-o", "res/snap"]),
        ("cache import", "import", ["cache", "import", f, "--cache", "res/cache"]),
        ("stats", "stats", ["stats", f]),
        ("stats", "stats", ["stats", "--json", f]),
    ]:
        run(name, code(cmd, stage), f, defect, [GPUCC] + argv)
    run("delta", base_code(f, stage), f, defect,
        [GPUCC, "delta", "in/empty.gpucc", "--since", f, "-o", "res/delta.gpucc"])
    cases += 1
print(cases, peak[0], peak[1])
