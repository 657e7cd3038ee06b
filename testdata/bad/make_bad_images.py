#!/usr/bin/env python3
"""testdata/bad/make_bad_images.py -- make the bad-input image fixtures.

usage: make_bad_images.py GOOD.gpucc OUTDIR

Binary fixtures are not kept in git: each is made at test time from a good,
uncompressed image (the example package packed by the test itself) by one
small, named mutation below, so that a reviewer reads what is wrong with it
here rather than in a hex dump.  Images are POSIX tar (formats/image.md):
member 1 is GPUCC-IMAGE ("gpucc-image 1\\n"), member 2 manifest.json, then
one member per distinct payload, payloads/<sha256><ext>.  The good image
must hold at least two payloads.

Every fixture must make `gpucc verify` exit 3 with a one-line message that
names the file and the defect; cmd/tests/cli_bad_input.sh asserts that.
"""
import copy
import io
import os
import random
import sys
import tarfile


def members(good):
    """(TarInfo, bytes) for every member of the good image, in order."""
    with tarfile.open(good, "r:") as tar:
        return [(info, tar.extractfile(info).read() if info.isfile() else b"")
                for info in tar.getmembers()]


def write_tar(path, items):
    """Write items ((TarInfo, bytes), ...) as a pax tar, in that order."""
    with tarfile.open(path, "w:", format=tarfile.PAX_FORMAT) as tar:
        for info, data in items:
            info = copy.copy(info)
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def like(template, name, data=b"", kind=tarfile.REGTYPE, linkname=""):
    """A new member with template's owner, mode and time."""
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = template.mode, template.mtime
    info.uid, info.gid, info.uname, info.gname = 0, 0, "", ""
    info.type, info.linkname, info.size = kind, linkname, len(data)
    return info, data


def main():
    good, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    items = members(good)
    # Damage is made to a format 1.0 image, without the index of 1.1
    # (formats/image.md): the cases are about the other members.
    if len(items) > 1 and items[1][0].name == "manifest.idx":
        items = [(items[0][0], b"gpucc-image 1\n")] + items[2:]
    assert [i.name for i, _ in items[:2]] == ["GPUCC-IMAGE", "manifest.json"], \
        "not a v1 gpucc image"
    payloads = items[2:]
    assert len(payloads) >= 2, "the good image needs two payloads"
    head, first, last = items[:2], payloads[0], payloads[-1]
    path = lambda name: os.path.join(out, name)

    # empty: a zero-byte file.
    open(path("empty.gpucc"), "wb").close()

    # random: 8 KiB of (seeded, so reproducible) random bytes.
    with open(path("random.gpucc"), "wb") as f:
        f.write(random.Random(20240101).randbytes(8192))

    # truncated: the good image cut 100 bytes into its last payload's data.
    with tarfile.open(good, "r:") as tar:
        cut = tar.getmember(last[0].name).offset_data + 100
    with open(good, "rb") as f:
        data = f.read(cut)
    with open(path("truncated.gpucc"), "wb") as f:
        f.write(data)

    # wrong-version: format member and manifest both say version 2.
    fmt_info, _ = items[0]
    man_info, manifest = items[1]
    write_tar(path("wrong-version.gpucc"),
              [(fmt_info, b"gpucc-image 2\n"),
               (man_info, manifest.replace(b'"version":1', b'"version":2', 1))] + payloads)

    # bad-manifest: the manifest member is not JSON.
    write_tar(path("bad-manifest.gpucc"), [items[0], (man_info, b"{not json\n")] + payloads)

    # digest-mismatch: one byte of the first payload flipped, size unchanged.
    info, data = first
    flipped = bytes([data[0] ^ 0x01]) + data[1:]
    write_tar(path("digest-mismatch.gpucc"), head + [(info, flipped)] + payloads[1:])

    # missing-member: the last payload left out; the manifest still lists it.
    write_tar(path("missing-member.gpucc"), head + payloads[:-1])

    # extra-member: an unlisted regular file after the payloads.
    write_tar(path("extra-member.gpucc"),
              items + [like(fmt_info, "payloads/extra.txt", b"not listed\n")])

    # The unsafe members below come right after the manifest, where every
    # reader that goes on to a payload meets them (cat, extract), not only
    # verify.
    # dotdot-member: a member whose path climbs out with '..'.
    write_tar(path("dotdot-member.gpucc"),
              head + [like(fmt_info, "payloads/../../escaped.ptx", b"escape\n")] + payloads)

    # absolute-member: a member with an absolute path.
    write_tar(path("absolute-member.gpucc"),
              head + [like(fmt_info, "/tmp/gpucc-escaped.ptx", b"escape\n")] + payloads)

    # symlink-member: the first payload replaced by a symbolic link of the
    # same name, pointing outside.
    info, _ = first
    write_tar(path("symlink-member.gpucc"),
              head + [like(info, info.name, kind=tarfile.SYMTYPE, linkname="/etc/passwd")]
              + payloads[1:])


if __name__ == "__main__":
    main()
