# cmd/tests/image_spec.py -- what formats/image.md ("The index") says the
# index member of an image holds, computed in Python from the manifest's
# bytes alone, for format_conformance.sh's checks and the hostile images of
# testdata/hostile/make_hostile_images.py.
import hashlib
import json
import struct

PART_EXTENSION = {"ptx": ".ptx", "cubin": ".cubin", "hsaco": ".hsaco", "bitcode": ".bc"}


def pad(n):
    return -(-n // 512) * 512


def entry_spans(man):
    """Each entry object of the manifest's bytes: (parsed, start, length)."""
    text, decoder, out = man.decode(), json.JSONDecoder(), []
    pos = text.index("[", text.index('"entries"')) + 1
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return out
        obj, end = decoder.raw_decode(text, pos)
        out.append((obj, len(text[:pos].encode()), len(text[pos:end].encode())))
        pos = end


def fanout(firsts):
    return b"".join(struct.pack(">I", sum(1 for f in firsts if f <= b)) for b in range(256))


def index_member(man, format_size, payload_sizes):
    """The index of an image whose format member has format_size bytes, whose
    manifest member holds man and whose payload members are payload_sizes
    ({name: size}); and where each payload's header is when every header is
    one block ({name: offset})."""
    spans = entry_spans(man)
    size = index_size(spans)
    at = 512 + pad(format_size) + 512 + pad(size) + 512 + pad(len(man))
    where = {}
    for name in sorted(payload_sizes):
        where[name], at = at, at + 512 + pad(payload_sizes[name])
    return index_bytes(spans, len(man), where), where


def index_size(spans):
    entries = [e for e, _, _ in spans]
    kernels = {(k["name"], i) for i, e in enumerate(entries) for k in e["kernels"]}
    return 2080 + 48 * len(entries) + 8 * sum(len(e["payloads"]) for e in entries) + \
        40 * len(kernels)


def index_bytes(spans, manifest_size, where):
    """The index whose records are spans ((entry, start, length), in key
    order) over a manifest of manifest_size bytes, each payload's header at
    where[member name]."""
    entries = [e for e, _, _ in spans]
    refs_n = sum(len(e["payloads"]) for e in entries)
    kernels = sorted({(hashlib.sha256(k["name"].encode()).digest(), i)
                      for i, e in enumerate(entries) for k in e["kernels"]})
    records, refs = b"", b""
    for e, start, length in spans:
        records += bytes.fromhex(e["key"]) + struct.pack(">IIII", start, length, len(refs) // 8,
                                                         len(e["payloads"]))
        for p in e["payloads"]:
            refs += struct.pack(">Q", where["payloads/" + p["sha256"] + PART_EXTENSION[p["part"]]])
    index = (b"GPUCCIX1" + struct.pack(">IIIIQ", len(entries), refs_n, len(kernels), 0,
                                       manifest_size) +
             fanout([bytes.fromhex(e["key"])[0] for e in entries]) + records + refs +
             fanout([h[0] for h, _ in kernels]) +
             b"".join(h + struct.pack(">II", i, 0) for h, i in kernels))
    assert len(index) == index_size(spans)
    return index
