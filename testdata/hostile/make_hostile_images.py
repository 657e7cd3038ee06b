#!/usr/bin/env python3
"""testdata/hostile/make_hostile_images.py -- make hostile image fixtures.

usage: make_hostile_images.py GOOD.gpucc OUTDIR [CASE...]

An image is untrusted input (docs/design.md, invariant 5).  Each function below
marked @case builds one hostile image from a good, uncompressed one (the
example package, packed by the test): its docstring says what is hostile
about it.  Nothing binary is kept in git; tar headers and zstd frames are
written here by hand, so that a case can lie in ways no archiver would.

For every case OUTDIR gets <case>.gpucc (an uncompressed tar) and/or
<case>.zst.gpucc (the same tar in a zstd frame, or as case() says), and one line in
OUTDIR/cases.tsv:

    FILE <TAB> STAGE <TAB> DEFECT

STAGE says which readers meet the defect (cmd/tests/hostile_images.sh):
  open     opening the image (format member or manifest): every command;
  first    reading the first payload in archive order: every reader of
           payloads (verify, cat of that payload, extract, merge, delta,
           cache import);
  payloads building the payload list from the manifest: `gpucc stats`, and
           what "first" says;
  all      reading all payloads: the same but cat of the first payload;
  write    checking entries as they are written (verify, merge, delta,
           cache import);
  whole    checking that an input holds all it lists, to its end-of-archive
           marker, though no payload of it may be read (verify, merge,
           delta, cache import: gpucc_image_check_whole);
  index    lookups through the index (`gpucc show` and `gpucc cat` of an
           uncompressed image), and `gpucc verify`, which compares the
           index with the manifest;
  verify   only a complete walk of the archive (`gpucc verify`).
DEFECT is a basic regular expression the one-line error must match.

The good image holds exactly the format member, the index, the manifest
and two payloads, as formats/image.md describes.  Cases other than the
index's are made of it as a format 1.0 image, without the index (which
readers read as they always have): they are about the other members.
"""
import fcntl
import hashlib
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "cmd", "tests"))
import image_spec  # noqa: E402 (found through the path above)

BLOCK = 512
CASES = []


def case(stage, defect, variants=("plain", "zstd")):
    """Register a case: which stage meets it, the error it must give, and
    which variants make sense: uncompressed "plain", "zstd" (one frame),
    "zstd-nested" (a frame in a frame), "zstd-cli" (the zstd command, for
    big cases), "zstd-twice" (the frame twice) and "zstd-junk" (the frame,
    then bytes that are not zstd)."""
    def register(fn):
        CASES.append((fn, stage, defect, variants))
        return fn
    return register


# ---- tar, by hand ---------------------------------------------------------

class Run:
    """count copies of one byte, written without holding them in memory
    (and as zstd RLE blocks when compressed)."""
    def __init__(self, byte, count):
        self.byte, self.count = byte, count


def octal(value, width):
    """A NUL-terminated octal field of width bytes."""
    return b"%0*o\0" % (width - 1, value)


def header(name, size, kind=b"0", linkname=b"", size_field=None, prefix=b"", mode=0o644):
    """One ustar header block; size_field, when given, is the raw 12 bytes
    of the size field (to lie, overflow or go negative)."""
    name = name.encode("utf-8", "surrogateescape") if isinstance(name, str) else name
    linkname = linkname.encode() if isinstance(linkname, str) else linkname
    h = bytearray(BLOCK)
    h[0:len(name[:100])] = name[:100]
    h[100:108] = octal(mode, 8)
    h[108:116] = octal(0, 8)
    h[116:124] = octal(0, 8)
    h[124:136] = size_field if size_field is not None else octal(size, 12)
    h[136:148] = octal(0, 12)
    h[148:156] = b" " * 8
    h[156:157] = kind
    h[157:157 + len(linkname)] = linkname
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[329:337] = octal(0, 8)
    h[337:345] = octal(0, 8)
    h[345:345 + len(prefix)] = prefix
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def padding(size):
    return b"\0" * (-size % BLOCK)


def member(name, data, **fields):
    """A member: header, data, padding to the block."""
    return [header(name, len(data), **fields), data, padding(len(data))]


def pax(records):
    """A pax extended header ('x') carrying records {key: bytes value}."""
    body = b""
    for key, value in records.items():
        line = b" " + key.encode() + b"=" + value + b"\n"
        length = len(line) + 1
        while len(str(length)) + len(line) != length:
            length += 1
        body += str(length).encode() + line
    return member("PaxHeaders/x", body, kind=b"x")


END = [b"\0" * (2 * BLOCK)]


# ---- zstd, by hand: raw and RLE blocks only --------------------------------

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_BLOCK = 128 * 1024


def zstd_block(kind, size, content, last=False):
    """One block: 3-byte little-endian header (last, type, size), content."""
    value = int(last) | kind << 1 | size << 3
    return value.to_bytes(3, "little") + content


def zstd_frame(pieces, window_log=17):
    """A zstd frame holding pieces (bytes or Run) in raw and RLE blocks; no
    content size, no checksum.  Yields the frame in parts."""
    exponent = window_log - 10
    yield ZSTD_MAGIC + bytes([0x00, exponent << 3])
    pending = b""
    for piece in pieces:
        if isinstance(piece, Run):
            if pending:
                yield from raw_blocks(pending)
                pending = b""
            left = piece.count
            while left:
                n = min(left, ZSTD_BLOCK)
                yield zstd_block(1, n, bytes([piece.byte]))
                left -= n
        else:
            pending += piece
            if len(pending) >= ZSTD_BLOCK:
                yield from raw_blocks(pending)
                pending = b""
    yield from raw_blocks(pending)
    yield zstd_block(0, 0, b"", last=True)


def raw_blocks(data):
    for at in range(0, len(data), ZSTD_BLOCK):
        chunk = data[at:at + ZSTD_BLOCK]
        yield zstd_block(0, len(chunk), chunk)


def plain(pieces):
    """The pieces as bytes (Runs expanded: only for small ones)."""
    for piece in pieces:
        yield bytes([piece.byte]) * piece.count if isinstance(piece, Run) else piece


# ---- the good image -------------------------------------------------------

class Good:
    """The good image, taken apart: format and manifest data, payloads in
    archive order as (name, data), and the manifest as JSON."""
    def __init__(self, path):
        with tarfile.open(path, "r:") as tar:
            items = [(i.name, tar.extractfile(i).read()) for i in tar.getmembers()]
        assert [n for n, _ in items[:3]] == ["GPUCC-IMAGE", "manifest.idx", "manifest.json"], \
            "not a v1.1 image"
        self.index = items[1][1]
        self.format, self.manifest = b"gpucc-image 1\n", items[2][1]
        self.payloads = items[3:]
        assert len(self.payloads) == 2, "the good image needs exactly two payloads"
        self.json = json.loads(self.manifest)

    def head(self, manifest=None):
        """Format and manifest members (with another manifest's bytes)."""
        return (member("GPUCC-IMAGE", self.format) +
                member("manifest.json", self.manifest if manifest is None else manifest))

    def indexed(self, index=None, manifest=None):
        """A whole format 1.1 image: with the index (or other bytes), and
        the manifest (or other bytes)."""
        return (member("GPUCC-IMAGE", b"gpucc-image 1.1\n") +
                member("manifest.idx", self.index if index is None else index) +
                member("manifest.json", self.manifest if manifest is None else manifest) +
                self.body() + END)

    def body(self, payloads=None):
        out = []
        for name, data in self.payloads if payloads is None else payloads:
            out += member(name, data)
        return out

    def image(self, manifest=None, payloads=None, after_head=(), at_end=()):
        """A whole image: head, extra members after it, payloads, extra
        members after them, end marker."""
        return self.head(manifest) + list(after_head) + self.body(payloads) + list(at_end) + END

    def with_manifest_text(self, old, new):
        """The image with the first old in the manifest's text replaced by
        new (for defects JSON libraries cannot write)."""
        assert old in self.manifest, old
        return self.image(manifest=self.manifest.replace(old, new, 1))

    def manifest_with(self, change):
        """The manifest with change(json) applied, written compactly."""
        doc = json.loads(self.manifest)
        change(doc)
        return manifest_bytes(doc)


def manifest_bytes(doc):
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogateescape")


def first_payload(good):
    return good.payloads[0]


def digest_of(member_name):
    """The hex digest in a payload member's name."""
    return member_name.split("/")[1].split(".")[0]


def lying_first_payload(good, size):
    """The manifest with the first payload's entry listing instead a
    payload of size bytes named by the digest 0...0, and that name."""
    digest = "0" * 64
    first_digest = digest_of(first_payload(good)[0])
    def change(doc):
        for e in doc["entries"]:
            if any(p["sha256"] == first_digest for p in e["payloads"]):
                e["payloads"] = [{"part": "ptx", "sha256": digest, "size": size}]
    return good.manifest_with(change), "payloads/%s.ptx" % digest


# ---- container and compression ------------------------------------------------

@case("open", "not a gpucc image", variants=("zstd",))
def garbage_in_zstd(good):
    """A valid zstd frame whose content is 64 KiB of random bytes, not a tar."""
    return [random.Random(6).randbytes(65536)]


@case("open", "not a gpucc image", variants=("zstd",))
def empty_zstd(good):
    """A valid zstd frame with no content at all."""
    return []


@case("open", "refused.*expand.*GPUCC_IMAGE_LIMITS", variants=("zstd",))
def bomb_manifest(good):
    """A 100 MiB manifest (under the manifest limit) of JSON whitespace,
    held in a few KiB of RLE blocks: 32,768 times its compressed size."""
    size = 100 << 20
    return (member("GPUCC-IMAGE", good.format) + [header("manifest.json", size)] +
            [b"{", Run(0x20, size - 2), b"}", padding(size)] + END)


@case("first", "refused.*expand.*GPUCC_IMAGE_LIMITS", variants=("zstd",))
def bomb_payload(good):
    """The entry of the first payload lists instead a 16 GiB payload, whose
    member (first in archive order) is 16 GiB of zeros in 512 KiB of RLE
    blocks; the other payload follows it, so reaching that one means
    expanding the bomb too."""
    size = 16 << 30
    manifest, name = lying_first_payload(good, size)
    return (good.head(manifest) + [header(name, size), Run(0, size)] +
            good.body(good.payloads[1:]) + END)


@case("open", "window\\|memory\\|not a gpucc image", variants=("zstd",))
def huge_window(good):
    """A zstd frame that asks for a 2 GiB window (a decoder that honours it
    allocates that much) around an otherwise good image."""
    return ("window", 31, good.image())


# ---- member kinds ---------------------------------------------------------------

@case("first", "is a link, not a file")
def hardlink_member(good):
    """The first payload is a hard link to manifest.json."""
    name, _ = first_payload(good)
    return good.image(payloads=good.payloads[1:],
                      after_head=[header(name, 0, kind=b"1", linkname="manifest.json")])


@case("first", "is not a regular file")
def chardev_member(good):
    """A character device (/dev/null's numbers) named like the first payload."""
    name, _ = first_payload(good)
    return good.image(payloads=good.payloads[1:], after_head=[header(name, 0, kind=b"3")])


@case("first", "is not a regular file")
def blockdev_member(good):
    """A block device named like the first payload."""
    name, _ = first_payload(good)
    return good.image(payloads=good.payloads[1:], after_head=[header(name, 0, kind=b"4")])


@case("first", "is not a regular file")
def fifo_member(good):
    """A FIFO named like the first payload."""
    name, _ = first_payload(good)
    return good.image(payloads=good.payloads[1:], after_head=[header(name, 0, kind=b"6")])


@case("first", "is not a regular file")
def directory_member(good):
    """A directory member 'payloads/' between the manifest and the payloads."""
    return good.image(after_head=[header("payloads/", 0, kind=b"5", mode=0o755)])


@case("open", "is a link, not a file")
def symlink_manifest(good):
    """manifest.json is a symbolic link to /etc/passwd."""
    return (member("GPUCC-IMAGE", good.format) +
            [header("manifest.json", 0, kind=b"2", linkname="/etc/passwd")] + good.body() + END)


@case("first", "is a link, not a file")
def symlink_dotdot(good):
    """A symbolic link 'payloads/up' to '../../..' before the payloads, as
    a tar extractor would follow it when writing the next member."""
    return good.image(after_head=[header("payloads/up", 0, kind=b"2", linkname="../../..")])


@case("first", "is sparse, not a regular file")
def gnu_sparse_member(good):
    """An old GNU sparse member (typeflag 'S', "ustar  " magic) in place of
    the first payload: 512 stored bytes whose sparse map makes it 1 GiB of
    mostly holes, which a tar reader hands out as zeros."""
    size = 1 << 30
    manifest, name = lying_first_payload(good, size)
    h = bytearray(header(name, BLOCK, kind=b"S"))
    h[257:265] = b"ustar  \0"
    h[329:345] = bytes(16)
    h[386:398] = octal(size - BLOCK, 12)  # sparse[0].offset
    h[398:410] = octal(BLOCK, 12)         # sparse[0].numbytes
    h[483:495] = octal(size, 12)          # realsize
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return (good.head(manifest) + [bytes(h), b"\0" * BLOCK] + good.body(good.payloads[1:]) +
            END)


@case("first", "is sparse, not a regular file")
def pax_sparse_member(good):
    """A pax GNU.sparse.* (format 0.0) header over the first payload's
    member: 512 stored bytes presented as 1 GiB."""
    size = 1 << 30
    manifest, name = lying_first_payload(good, size)
    records = {"GNU.sparse.size": b"%d" % size, "GNU.sparse.numblocks": b"1",
               "GNU.sparse.offset": b"%d" % (size - BLOCK), "GNU.sparse.numbytes": b"512"}
    return (good.head(manifest) + pax(records) + member(name, b"\0" * BLOCK) +
            good.body(good.payloads[1:]) + END)


@case("open", "compressed more than once", variants=("zstd-nested",))
def nested_zstd(good):
    """A zstd frame holding a zstd frame holding a good image: each layer
    would cost a reader another decoder window."""
    return good.image()


# Format members that are not exactly "gpucc-image 1\n": (case, defect,
# the member's bytes, what is hostile about it).
BAD_FORMATS = [
    ("format_version_wraps", "image format version 4294967297 is not supported",
     b"gpucc-image 4294967297\n", "Format version 2^32 + 1, which a 32-bit parse reads as 1."),
    ("format_version_negative", "bad format member", b"gpucc-image -4294967295\n",
     "Format version -4294967295, which scanf's %u reads as 1."),
    ("format_version_plus", "bad format member", b"gpucc-image +01\n", "Format version '+01'."),
    ("format_no_space", "bad format member", b"gpucc-image1\n",
     "'gpucc-image1': no space before the version."),
    ("format_trailing_text", "bad format member", b"gpucc-image 1\nthis is version 2 really",
     "Text after the newline of 'gpucc-image 1\\n'."),
]


def bad_format_case(name, defect, text, doc):
    def make(good):
        return member("GPUCC-IMAGE", text) + good.image()[3:]
    make.__name__, make.__doc__ = name, doc
    case("open", defect)(make)


for bad_format in BAD_FORMATS:
    bad_format_case(*bad_format)


@case("whole", "ends before its last member's end marker")
def no_end_marker(good):
    """The archive stops after the last payload's data: no end-of-archive
    blocks (a cut copy that happens to end on a member's end)."""
    return good.image()[:-1]


# ---- after the end-of-archive marker -----------------------------------------------
# Only zero bytes (tar's record padding) may follow the marker; a tar reader
# stops at the marker, so only verify sees what follows (formats/image.md).

AFTER_END = "data after the end of the archive, at offset [0-9]"


@case("verify", AFTER_END)
def data_after_end(good):
    """Text after the end-of-archive marker: the rest of another file
    written over a longer one, or appended by mistake."""
    return good.image() + [b"this is not padding\n"]


@case("verify", AFTER_END)
def image_after_end(good):
    """Two images concatenated (`cat a.gpucc b.gpucc`): a tar reader sees
    the first only, and its entries would pass for the whole file."""
    return good.image() + good.image()


@case("verify", AFTER_END)
def data_in_end_marker(good):
    """One zero block, then a block of junk where the marker's second zero
    block belongs (one zero block ends an archive for tar readers)."""
    return good.image()[:-1] + [b"\0" * BLOCK, b"x" * BLOCK]


@case("verify", AFTER_END, variants=("zstd-twice",))
def frame_after_frame(good):
    """A second zstd frame holding a second image after the first frame
    (two compressed images concatenated): zstd decompresses concatenated
    frames as one stream, so the second image follows the first's marker."""
    return good.image()


@case("open", "not a gpucc image\\|damaged data after the end", variants=("zstd-junk",))
def junk_after_frame(good):
    """Bytes after the zstd frame that are not a zstd frame (the image is
    small enough that opening it already decompresses to its end)."""
    return good.image()


# ---- names ------------------------------------------------------------------------

@case("first", "has an unsafe path")
def pax_path_dotdot(good):
    """A pax 'path' record '../../escaped.ptx' that overrides the first
    payload's (good) ustar name."""
    name, data = first_payload(good)
    return good.image(payloads=good.payloads[1:],
                      after_head=pax({"path": b"../../escaped.ptx"}) + member(name, data))


@case("first", "has an unsafe path")
def pax_path_absolute(good):
    """A pax 'path' record '/tmp/gpucc-hostile-escaped' over a good name."""
    name, data = first_payload(good)
    return good.image(payloads=good.payloads[1:],
                      after_head=pax({"path": b"/tmp/gpucc-hostile-escaped"}) + member(name, data))


@case("first", "is not listed in the manifest\\|has no such member")
def pax_path_override(good):
    """A pax 'path' record that renames the first payload to another,
    harmless-looking name: the pax name is the member's name."""
    name, data = first_payload(good)
    return good.image(payloads=good.payloads[1:],
                      after_head=pax({"path": b"payloads/renamed.ptx"}) + member(name, data))


@case("first", "member 'payloads/[0-9A-F]*\\.[a-z]*' is not listed in the manifest")
def uppercase_member_name(good):
    """The first payload's member named with its digest in uppercase hex:
    the same bytes, but member names spell digests in lowercase only."""
    (name, data), rest = good.payloads[0], good.payloads[1:]
    stem, extension = name[len("payloads/"):].rsplit(".", 1)
    return good.image(payloads=[("payloads/" + stem.upper() + "." + extension, data)] + rest)


@case("first", "'payloads/\\\\xff\\\\xfe.ptx' is not listed")
def non_utf8_name(good):
    """A member named b'payloads/\\xff\\xfe.ptx' (not UTF-8) after the manifest."""
    return good.image(after_head=member(b"payloads/\xff\xfe.ptx", b"x"))


@case("first", "is not listed in the manifest\\|has an unsafe path\\|has no name")
def non_utf8_pax_path(good):
    """A pax 'path' record that is not UTF-8 (pax requires UTF-8)."""
    name, data = first_payload(good)
    return good.image(payloads=good.payloads[1:],
                      after_head=pax({"path": b"payloads/\xc3\x28.ptx"}) + member(name, data))


@case("first", "'payloads/evil\\\\x0aname.ptx' is not listed")
def newline_name(good):
    """A member whose name holds a newline (to split an error message)."""
    return good.image(after_head=member("payloads/evil\nname.ptx", b"x"))


@case("first", "'payloads/\\\\x1b\\[2J\\\\x1b\\[31mred.ptx' is not listed")
def control_char_name(good):
    """A member whose name holds terminal escape sequences."""
    return good.image(after_head=member("payloads/\x1b[2J\x1b[31mred.ptx", b"x"))


@case("first", "is not listed in the manifest")
def long_name(good):
    """A 250-byte name in the ustar prefix and name fields."""
    prefix, name = b"payloads/" + b"p" * 140, b"n" * 99 + b"x"
    return good.image(after_head=[header(name, 1, prefix=prefix), b"x", padding(1)])


@case("first", "is not listed in the manifest")
def long_pax_name(good):
    """A 5,000-byte name in a pax 'path' record."""
    return good.image(after_head=pax({"path": b"payloads/" + b"n" * 5000}) + member("x", b"x"))


@case("first", "has no name")
def empty_name(good):
    """A member with an empty name."""
    return good.image(after_head=member("", b"x"))


@case("first", "has an unsafe path")
def dotdot_only(good):
    """A member named '..' exactly."""
    return good.image(after_head=member("..", b"x"))


# ---- duplicates -----------------------------------------------------------------

@case("open", "member 'GPUCC-IMAGE' appears more than once\\|second member is 'GPUCC-IMAGE'")
def duplicate_format(good):
    """The format member twice before the manifest."""
    return member("GPUCC-IMAGE", good.format) + good.image()


@case("first", "member 'manifest.json' appears more than once")
def duplicate_manifest(good):
    """A second manifest.json, listing nothing, after the first."""
    empty = b'{"format":"gpucc-image","version":1,"entries":[\n]}\n'
    return good.image(after_head=member("manifest.json", empty))


@case("verify", "member 'payloads/[0-9a-f]*\\.[a-z]*' appears more than once")
def duplicate_payload_same(good):
    """The last payload twice, byte for byte, at the end."""
    return good.image(at_end=member(*good.payloads[-1]))


@case("verify", "member 'payloads/[0-9a-f]*\\.[a-z]*' appears more than once")
def duplicate_payload_different(good):
    """The last payload again at the end, with other bytes (an extractor
    that lets the last copy win would write those)."""
    name, data = good.payloads[-1]
    return good.image(at_end=member(name, b"X" * len(data)))


@case("all", "member 'payloads/[0-9a-f]*\\.[a-z]*' appears more than once")
def duplicate_payload_first(good):
    """The first payload twice in a row, the second copy with other bytes."""
    name, data = first_payload(good)
    return good.image(payloads=[(name, data), (name, b"X" * len(data))] + good.payloads[1:])


# ---- the manifest against the members -----------------------------------------------

@case("first", "its size differs from the manifest's")
def size_disagrees(good):
    """The manifest lists the first payload one byte longer than it is."""
    digest = digest_of(first_payload(good)[0])
    def change(doc):
        for e in doc["entries"]:
            for p in e["payloads"]:
                if p["sha256"] == digest:
                    p["size"] += 1
    return good.image(manifest=good.manifest_with(change))


@case("payloads", "listed with two sizes\\|is listed with [0-9]* bytes, but\\|not among the image's payloads")
def payload_two_sizes(good):
    """Two entries list one payload (same digest and kind) with two sizes."""
    def change(doc):
        a, b = doc["entries"]
        extra = dict(a["payloads"][0])
        extra["size"] += 7
        b["payloads"] = sorted(b["payloads"] + [extra], key=lambda p: PART_ORDER[p["part"]])
    return good.image(manifest=good.manifest_with(change))


PART_ORDER = {"ptx": 0, "cubin": 1, "hsaco": 2, "bitcode": 3}


@case("first", "has no such member\\|is not listed in the manifest")
def members_swapped(good):
    """The two payloads in the wrong order."""
    return good.image(payloads=good.payloads[::-1])


@case("write", "key [0-9a-f]* does not match the entry's key components")
def key_disagrees(good):
    """An entry's module_sha256 changed, so its key no longer follows from
    its components (entries stay sorted)."""
    def change(doc):
        doc["entries"][0]["module_sha256"] = "f" * 64
    return good.image(manifest=good.manifest_with(change))


# ---- sizes that lie -----------------------------------------------------------------

@case("first", "its size differs from the manifest's\\|truncated")
def header_size_past_end(good):
    """The first payload's header claims 1 TiB, far more than the file."""
    name, data = first_payload(good)
    return good.head() + [header(name, 1 << 40), data, padding(len(data))] + good.body(good.payloads[1:]) + END


@case("open", "manifest.json.*limit.*GPUCC_IMAGE_LIMITS")
def manifest_size_lie(good):
    """The manifest's header claims 1.5 GiB; the file holds a few KiB."""
    return (member("GPUCC-IMAGE", good.format) + [header("manifest.json", 3 << 29), good.manifest,
            padding(len(good.manifest))] + good.body() + END)


@case("open", "truncated")
def manifest_size_lie_small(good):
    """The manifest's header claims 100 MiB (under the limit); the file holds a
    few KiB, so a reader that allocates what headers claim allocates 100 MiB."""
    return (member("GPUCC-IMAGE", good.format) + [header("manifest.json", 100 << 20), good.manifest,
            padding(len(good.manifest))] + good.body() + END)


@case("first", "[Nn]egative\\|damaged\\|absurd\\|size differs")
def negative_size(good):
    """The first payload's size field in base-256, negative (-1)."""
    name, data = first_payload(good)
    field = b"\xff" * 12
    return good.head() + [header(name, 0, size_field=field), data, padding(len(data))] + good.body(good.payloads[1:]) + END


@case("first", "damaged\\|absurd\\|size differs\\|truncated")
def base256_overflow(good):
    """The first payload's size field in base-256: 2^88 - 1, more than any
    64-bit count."""
    name, data = first_payload(good)
    field = b"\x80" + b"\xff" * 11
    return good.head() + [header(name, 0, size_field=field), data, padding(len(data))] + good.body(good.payloads[1:]) + END


@case("first", "damaged\\|size differs\\|truncated\\|not listed")
def size_field_garbage(good):
    """The first payload's size field holds letters."""
    name, data = first_payload(good)
    return good.head() + [header(name, 0, size_field=b"1x3zzzzzzzz\0"), data, padding(len(data))] + good.body(good.payloads[1:]) + END


@case("open", "manifest.json.*limit.*GPUCC_IMAGE_LIMITS")
def manifest_absurd_size(good):
    """A manifest header that claims 8 GiB - 1 (the largest octal size)."""
    return (member("GPUCC-IMAGE", good.format) + [header("manifest.json", 0, size_field=b"77777777777\0")]
            + [good.manifest, padding(len(good.manifest))] + END)


@case("open", "not a gpucc image")
def format_member_huge(good):
    """The format member claims 1 GiB."""
    return [header("GPUCC-IMAGE", 1 << 30), good.format, padding(len(good.format))] + good.head()[3:] + END


# ---- JSON -----------------------------------------------------------------------------

@case("open", "nesting too deep")
def json_deep(good):
    """A manifest of 100,000 nested arrays."""
    return good.image(manifest=b"[" * 100000 + b"]" * 100000)


@case("open", "nesting too deep")
def json_deep_in_entry(good):
    """100,000 nested objects in an unknown field of an entry (skipped
    values are parsed too)."""
    deep = b'{"a":' * 100000 + b"1" + b"}" * 100000
    return good.with_manifest_text(b'{"key"', b'{"x":' + deep + b',"key"')


@case("open", "string of [0-9]* bytes.*longer than")
def json_huge_string(good):
    """A module name of 8 MiB."""
    def change(doc):
        doc["entries"][0]["module"] = "m" * (8 << 20)
    return good.image(manifest=good.manifest_with(change))


@case("open", "not a sane byte count")
def json_huge_number(good):
    """A payload size of 400 digits."""
    return good.with_manifest_text(b'"size":', b'"size":' + b"9" * 400)


@case("open", "not a sane byte count")
def json_exponent_number(good):
    """A payload size written as 1e999999."""
    return good.with_manifest_text(b'"size":', b'"size":1e999999,"x":')


@case("open", "not UTF-8")
def json_non_utf8(good):
    """A module name that is not UTF-8 (JSON must be)."""
    return good.with_manifest_text(b'"module":"', b'"module":"\xff\xfe')


@case("open", "control character")
def json_control_chars(good):
    """A kernel name holding a newline and a terminal escape (escaped in JSON)."""
    return good.with_manifest_text(b'{"name":"', b'{"name":"a\\nb\\u001b[2J')


@case("open", "u0000")
def json_nul(good):
    """A module name with an escaped NUL that would cut it short in C."""
    return good.with_manifest_text(b'"module":"', b'"module":"evil\\u0000')


@case("open", "'key' appears twice")
def json_duplicate_field(good):
    """An entry with two 'key' members (parsers disagree on which wins)."""
    return good.with_manifest_text(b'{"key":', b'{"key":"' + b"0" * 64 + b'","key":')


@case("open", "entry 0: 'key' is not 64 lowercase hex digits")
def json_uppercase_key(good):
    """The first entry's key in uppercase hex: the same bytes spelt
    another way (a digest has one spelling, so a set of entries one
    manifest)."""
    key = good.json["entries"][0]["key"].encode()
    return good.with_manifest_text(key, key.upper())


@case("open", "not valid JSON")
def json_bom(good):
    """A UTF-8 byte-order mark before the manifest (not JSON)."""
    return good.image(manifest=b"\xef\xbb\xbf" + good.manifest)


@case("open", "manifest.json.*limit.*GPUCC_IMAGE_LIMITS", variants=("zstd-cli",))
def many_entries(good):
    """2,000,000 tiny (valid, sorted) entries: a 660 MB manifest that
    compresses to a few MB."""
    proto = dict(good.json["entries"][0])
    proto.update(module="m", kernels=[], externals=[], payloads=[], options={})
    proto["toolchain"] = {"gpucc": "0", "llvm": "0", "device_libs": []}
    proto["key"] = "0" * 64
    before, after = json.dumps(proto, separators=(",", ":")).encode().split(b"0" * 64)
    first, last = b'{"format":"gpucc-image","version":1,"entries":[\n', b"\n]}\n"
    count = 2000000
    size = len(first) + count * (len(before) + 64 + len(after)) + (count - 1) * 2 + len(last)
    low_digits = [b"%04x" % low for low in range(1 << 16)]

    def text():
        """The manifest in parts of 65,536 entries whose keys share their
        first 60 digits (one join each: a format per entry would take
        seconds), streamed: whole, it would take 660 MB of memory."""
        yield first
        for high in range(0, count, 1 << 16):
            shared = before + b"%060x" % (high >> 16)
            lows = low_digits[:min(1 << 16, count - high)]
            yield (b",\n" if high else b"") + shared + (after + b",\n" + shared).join(lows) + after
        yield last
    # An iterator, not a list: the one variant reads it once.
    return itertools.chain(member("GPUCC-IMAGE", good.format),
                           [header("manifest.json", size)], text(), [padding(size)], END)


@case("first", "is not listed in the manifest", variants=("zstd-cli",))
def many_members(good):
    """2,000,000 empty members between the manifest and the payloads."""
    return itertools.chain(good.head(), numbered_headers("payloads/t", 2000000), good.body(), END)


def numbered_headers(stem, count):
    """count empty-member headers named stem0000000, stem0000001, ...: one
    template, with only the digits and the checksum redone, 10,000 headers
    (the same first three digits) in one join (a header() call each would
    take half a minute)."""
    template = header(stem + "0" * 7, 0)
    at = len(stem)
    base = sum(template[:148]) + 8 * ord(" ") + sum(template[156:]) - 7 * ord("0")
    pre, mid, post = template[:at], template[at + 7:148], template[156:]
    # Per last four digits: those digits and what follows them up to the
    # checksum, and what they add to it.
    low_parts = [b"%04d" % low + mid for low in range(10000)]
    low_sums = [sum(b"%04d" % low) for low in range(10000)]
    checksums = {}
    for high in range(0, count, 10000):
        high_digits = b"%03d" % (high // 10000)
        high_sum = base + sum(high_digits)
        n = min(10000, count - high)
        fields = []
        for low_part, low_sum in zip(low_parts[:n], low_sums[:n]):
            checksum = high_sum + low_sum
            field = checksums.get(checksum)
            if field is None:
                field = checksums[checksum] = b"%06o\0 " % checksum
            fields.append(low_part + field)
        yield pre + high_digits + (post + pre + high_digits).join(fields) + post


# ---- the index (formats/image.md, "The index") -------------------------------------
# Compressed images are read without their index, so their index defects are
# verify's alone.

INDEX_RECORDS = 32 + 1024
INDEX_RECORD = 48
INDEX_DISAGREES = "member 'manifest.idx': it disagrees with the manifest"
# A lookup takes an entry only from a line of its own, and an indexed
# image's manifest is laid out one entry per line.
NO_LINE = "points to no line of the manifest's entries"
NOT_LAID_OUT = "not laid out one entry per line"
OFF_LINES = "\\(%s\\|%s\\)" % (NO_LINE, NOT_LAID_OUT)


def index_defect(lookup):
    """What show and cat say (lookup), or what verify does: the index is
    not the one the manifest gives."""
    return "\\(%s\\|%s\\)" % (lookup, INDEX_DISAGREES)


def u32(data, at):
    return int.from_bytes(data[at:at + 4], "big")


def put32(data, at, value):
    data[at:at + 4] = value.to_bytes(4, "big")


def index_parts(good):
    """The good index as a bytearray, the record of the entry that holds
    the first payload (show and cat look it up), and the other one."""
    index = bytearray(good.index)
    assert u32(index, 8) == 2, "the good image needs two entries"
    digest = digest_of(first_payload(good)[0])
    keys = [e["key"] for e in good.json["entries"]]
    looked_up = next(i for i, e in enumerate(good.json["entries"])
                     if any(p["sha256"] == digest for p in e["payloads"]))
    at = lambda i: INDEX_RECORDS + i * INDEX_RECORD
    assert [bytes(index[at(i):at(i) + 32]).hex() for i in (0, 1)] == keys
    return index, at(looked_up), at(1 - looked_up)


def with_fanout_of_records(index):
    """The key fan-out recomputed from the records as they now are."""
    firsts = [index[INDEX_RECORDS + i * INDEX_RECORD] for i in range(2)]
    for b in range(256):
        put32(index, 32 + 4 * b, sum(1 for f in firsts if f <= b))
    return index


@case("index", index_defect("corrupt index: "), variants=("plain",))
def index_records_swapped(good):
    """The two entry records in each other's place: out of key order, and
    each outside its fan-out bucket."""
    index, mine, other = index_parts(good)
    assert index[mine] != index[other], "the keys share a first byte"
    index[mine:mine + INDEX_RECORD], index[other:other + INDEX_RECORD] = \
        index[other:other + INDEX_RECORD], index[mine:mine + INDEX_RECORD]
    return good.indexed(index=bytes(index))


@case("index", index_defect("corrupt index: an entry's range lies outside the manifest"),
      variants=("plain",))
def index_range_past_manifest(good):
    """The looked-up entry's object said to lie past the manifest's end."""
    index, mine, _ = index_parts(good)
    put32(index, mine + 32, len(good.manifest) - 4)
    return good.indexed(index=bytes(index))


@case("index", index_defect("corrupt index: the record of key [0-9a-f]* points to the "
                            "entry of key"),
      variants=("plain",))
def index_points_into_other_entry(good):
    """The looked-up entry's record gives the other entry's object."""
    index, mine, other = index_parts(good)
    index[mine + 32:mine + 40] = index[other + 32:other + 40]
    return good.indexed(index=bytes(index))


@case("index", index_defect(NO_LINE), variants=("plain",))
def index_points_mid_object(good):
    """The looked-up entry's range starts inside its object: on no line of
    its own."""
    index, mine, _ = index_parts(good)
    put32(index, mine + 32, u32(index, mine + 32) + 1)
    put32(index, mine + 36, u32(index, mine + 36) - 1)
    return good.indexed(index=bytes(index))


@case("index", index_defect("corrupt index: records are not in strictly increasing key order"),
      variants=("plain",))
def index_duplicate_keys(good):
    """Both records carry the looked-up key, the fan-out agreeing."""
    index, mine, other = index_parts(good)
    index[other:other + 32] = index[mine:mine + 32]
    return good.indexed(index=bytes(with_fanout_of_records(index)))


@case("index", index_defect("corrupt index: the fan-out's last value is not the record count"),
      variants=("plain",))
def index_fanout_short(good):
    """The fan-out's last value one short of the entry count."""
    index, _, _ = index_parts(good)
    put32(index, 32 + 4 * 255, 1)
    return good.indexed(index=bytes(index))


@case("index", index_defect("corrupt index: the fan-out decreases"), variants=("plain",))
def index_fanout_decreases(good):
    """The fan-out before the looked-up key's bucket holds both entries,
    its own none."""
    index, mine, _ = index_parts(good)
    first = index[mine]
    assert 0 < first < 255, "the key's bucket has no neighbour"
    for b in range(first):
        put32(index, 32 + 4 * b, 2)
    put32(index, 32 + 4 * first, 0)
    return good.indexed(index=bytes(index))


@case("index", index_defect("corrupt index: bad magic number"), variants=("plain",))
def index_bad_magic(good):
    """The index's magic number is not GPUCCIX1."""
    index, _, _ = index_parts(good)
    index[0:8] = b"GPUCCIX0"
    return good.indexed(index=bytes(index))


@case("index", index_defect("corrupt index: its size does not match its record counts"),
      variants=("plain",))
def index_counts_lie(good):
    """The index claims a third entry record it does not hold."""
    index, _, _ = index_parts(good)
    put32(index, 8, 3)
    return good.indexed(index=bytes(index))


@case("verify", INDEX_DISAGREES)
def index_payload_elsewhere(good):
    """The looked-up entry's payload reference gives the other payload's
    header: the reader finds the member through the manifest instead."""
    index, mine, other = index_parts(good)
    refs = INDEX_RECORDS + 2 * INDEX_RECORD
    mine_ref, other_ref = u32(index, mine + 40), u32(index, other + 40)
    index[refs + 8 * mine_ref:refs + 8 * mine_ref + 8] = \
        index[refs + 8 * other_ref:refs + 8 * other_ref + 8]
    return good.indexed(index=bytes(index))


@case("verify", INDEX_DISAGREES)
def index_kernel_elsewhere(good):
    """Every kernel record names the other entry: selection by kernel
    checks what it finds, and verify refuses the index."""
    index, _, _ = index_parts(good)
    refs = INDEX_RECORDS + 2 * INDEX_RECORD + 8 * u32(index, 12)
    kernels = refs + 1024
    for k in range(u32(index, 16)):
        at = kernels + 40 * k + 32
        put32(index, at, 1 - u32(index, at))
    return good.indexed(index=bytes(index))


@case("verify", "corrupt index: bad magic number", variants=("zstd",))
def index_bad_magic_compressed(good):
    """A compressed image whose index has a bad magic number: read without
    the index, so only verify meets it."""
    index, _, _ = index_parts(good)
    index[0:8] = b"GPUCCIX0"
    return good.indexed(index=bytes(index))


@case("open", OFF_LINES, variants=("plain",))
def index_of_other_manifest(good):
    """The manifest's text changed, its size not (a space before its first
    entry, a newline less at its end), but not its index: every range is
    off by one, on no line of its own, and the manifest is not laid out
    one entry per line."""
    assert good.manifest.endswith(b"\n]}\n")
    manifest = good.manifest.replace(b"[\n{", b"[\n {", 1)[:-4] + b"]}\n"
    return good.indexed(manifest=manifest)


# ---- the index bound to the manifest's lines (formats/image.md, "The index")
# A lookup takes an entry only from a line of its own in the manifest; an
# indexed image's manifest is laid out one entry per line.

LAYOUT_HEAD = b'{"format":"gpucc-image","version":1,"entries":['


def entry_text(e):
    return json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode()


def hidden_in_other(good, opening, closing, payload_after_end):
    """An image whose manifest lists only the other entry, the looked-up
    one's object held in a field "x" of it the schema does not name
    (opening, the object, closing), its index pointing there; the looked-up
    entry's payload after the end-of-archive marker, or listed nowhere
    before it. What tar -t, list and devices --image show is the other
    entry; a lookup of the looked-up key must not serve the hidden one."""
    _, mine, _ = index_parts(good)
    mine_key = good.index[mine:mine + 32].hex()
    entries = good.json["entries"]
    hidden = next(e for e in entries if e["key"] == mine_key)
    other = next(e for e in entries if e["key"] != mine_key)
    hidden_text = entry_text(hidden)
    other_text = entry_text(other)[:-1] + b',"x":' + opening + hidden_text + closing + b"}"
    man = LAYOUT_HEAD + b"\n" + other_text + b"\n]}\n"
    start_other = len(LAYOUT_HEAD) + 1
    start_hidden = start_other + other_text.index(hidden_text)
    spans = sorted([(other, start_other, len(other_text)),
                    (hidden, start_hidden, len(hidden_text))], key=lambda s: s[0]["key"])
    names = dict(good.payloads)
    other_names = {"payloads/%s%s" % (p["sha256"], image_spec.PART_EXTENSION[p["part"]])
                   for p in other["payloads"]}
    hidden_names = sorted(n for n in names if n not in other_names)
    size = image_spec.index_size(spans)
    at = 512 + image_spec.pad(16) + 512 + image_spec.pad(size) + 512 + image_spec.pad(len(man))
    where = {}
    for name in sorted(other_names):
        where[name], at = at, at + 512 + image_spec.pad(len(names[name]))
    if payload_after_end:
        at += 2 * BLOCK
    for name in hidden_names:
        where[name], at = at, at + 512 + image_spec.pad(len(names[name]))
    index = image_spec.index_bytes(spans, len(man), where)
    listed = [(n, names[n]) for n in sorted(other_names)]
    hidden_members = [(n, names[n]) for n in hidden_names]
    out = (member("GPUCC-IMAGE", b"gpucc-image 1.1\n") + member("manifest.idx", index) +
           member("manifest.json", man) + good.body(listed))
    if payload_after_end:
        return out + END + good.body(hidden_members) + END
    return out + good.body(hidden_members) + END


@case("index", index_defect(NO_LINE), variants=("plain",))
def index_entry_in_ignored_field(good):
    """The looked-up entry held in a field of the other, on its line, its
    payload after the end-of-archive marker: tar -t, list and extract see
    only the other entry."""
    return hidden_in_other(good, b"", b"", True)


@case("open", OFF_LINES, variants=("plain",))
def index_entry_on_line_in_field(good):
    """The looked-up entry held in an array in a field of the other, on a
    line of its own (which the layout refuses), its payload a member
    that no listed entry names."""
    return hidden_in_other(good, b"[\n", b"\n]", False)


@case("open", OFF_LINES, variants=("plain",))
def manifest_entry_across_lines(good):
    """A newline inside the looked-up entry's object, the index computed
    for that manifest: valid JSON, but not the layout."""
    _, mine, _ = index_parts(good)
    at = good.manifest.index(b'"key":"%s"' % good.index[mine:mine + 32].hex().encode())
    man = good.manifest[:at] + b"\n" + good.manifest[at:]
    return indexed_with_manifest(good, man)


@case("open", OFF_LINES)
def manifest_pretty_printed(good):
    """The manifest as json.dumps indents it, the index computed for it."""
    return indexed_with_manifest(good, json.dumps(good.json, indent=1).encode() + b"\n")


def indexed_with_manifest(good, man):
    index, _ = image_spec.index_member(man, 16, {n: len(d) for n, d in good.payloads})
    return good.indexed(index=index, manifest=man)


@case("open", "second member is 'manifest.json', expected 'manifest.idx'")
def index_missing(good):
    """Format 1.1, but no index member."""
    return (member("GPUCC-IMAGE", b"gpucc-image 1.1\n") + member("manifest.json", good.manifest) +
            good.body() + END)


@case("open", "image format version 1.2 is not supported")
def index_minor_unknown(good):
    """Format 1.2, which this gpucc does not read."""
    return (member("GPUCC-IMAGE", b"gpucc-image 1.2\n") + member("manifest.idx", good.index) +
            member("manifest.json", good.manifest) + good.body() + END)


# ---- writing -------------------------------------------------------------------

def write(path, chunks):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
    os.replace(tmp, path)


def main():
    good_path, out = sys.argv[1], sys.argv[2]
    wanted = set(sys.argv[3:])
    os.makedirs(out, exist_ok=True)
    good = Good(good_path)
    zstd_cli = shutil.which("zstd")
    lines = []
    for fn, stage, defect, variants in CASES:
        name = fn.__name__.replace("_", "-")
        if wanted and name not in wanted:
            continue
        pieces = fn(good)
        window = 17
        # A case may return ("window", LOG, pieces): a zstd frame that asks
        # for a 2^LOG-byte window.
        if isinstance(pieces, tuple):
            _, window, pieces = pieces
        for variant in variants:
            if variant == "plain":
                file = name + ".gpucc"
                write(os.path.join(out, file), plain(pieces))
            elif variant == "zstd":
                file = name + ".zst.gpucc"
                write(os.path.join(out, file), zstd_frame(pieces, window))
            elif variant == "zstd-twice":
                file = name + ".zst.gpucc"
                frame = b"".join(zstd_frame(pieces, window))
                write(os.path.join(out, file), [frame, frame])
            elif variant == "zstd-junk":
                file = name + ".zst.gpucc"
                write(os.path.join(out, file), list(zstd_frame(pieces, window)) + [b"junk\n"])
            elif variant == "zstd-nested":
                file = name + ".zst.zst.gpucc"
                inner = b"".join(zstd_frame(pieces, window))
                write(os.path.join(out, file), zstd_frame([inner], window))
            else:  # real compression, for cases too big to write raw
                if not zstd_cli:
                    print("make_hostile_images: no zstd command, skipping %s" % name,
                          file=sys.stderr)
                    continue
                file = name + ".zst.gpucc"
                with open(os.path.join(out, file), "wb") as f:
                    p = subprocess.Popen([zstd_cli, "-q", "-1", "-c"], stdin=subprocess.PIPE, stdout=f)
                    try:  # a GB through the pipe: 1 MiB at a time, not 64 KiB
                        fcntl.fcntl(p.stdin, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
                    except OSError:
                        pass
                    for chunk in plain(pieces):
                        p.stdin.write(chunk)
                    p.stdin.close()
                    if p.wait() != 0:
                        sys.exit("make_hostile_images: zstd failed on %s" % name)
            lines.append("%s\t%s\t%s\n" % (file, stage, defect))
    with open(os.path.join(out, "cases.tsv"), "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()
