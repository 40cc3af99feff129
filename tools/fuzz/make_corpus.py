#!/usr/bin/env python3
"""Seed corpus for the fuzz targets, from stores written by other
implementations (../shared/fixtures) plus a few inputs made here.

usage: make_corpus.py FIXTURES_DIR OUT_DIR

OUT_DIR/<target>/ receives one file per seed, in the input format each
target documents at its top (tools/fuzz/fuzz_*.c)."""
import hashlib
import io
import json
import os
import struct
import sys
import zipfile

fixtures, out = sys.argv[1], sys.argv[2]

# fuzz_chain.c's configurations, by bytes -> bytes codec names in chain order
CHAINS = {("zstd",): 0, ("gzip",): 1, ("zlib",): 2, ("bz2",): 3, ("lz4",): 4, ("blosc",): 5,
          ("crc32c",): 6, ("zstd", "crc32c"): 7, ("shuffle", "zstd"): 8, ("delta", "zlib"): 9,
          ("fixedscaleoffset",): 10, ("bitround",): 11, ("adler32",): 12, ("fletcher32",): 13,
          ("blosc", "crc32c"): 14, ("lzma",): 22}
SIZES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
         "int64": 8, "uint64": 8, "float16": 2, "float32": 4, "float64": 8, "complex64": 8,
         "complex128": 16}
META = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


def put(target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def short(name):
    return name.split(".")[-1]


def array_info(dirpath, files):
    """(bytes->bytes codec names, decoded chunk size or 0, string kind or None)"""
    try:
        if "zarr.json" in files:
            m = json.load(open(os.path.join(dirpath, "zarr.json")))
            if m.get("node_type") != "array":
                return None
            dt = m["data_type"]
            dt = dt if isinstance(dt, str) else dt.get("name")
            names = [short(c["name"]) for c in m["codecs"]]
            if "sharding_indexed" in names:
                return None
            ab = [n for n in names if n in ("bytes", "vlen-utf8", "vlen-bytes")]
            bb = tuple(n for n in names[names.index(ab[0]) + 1:]) if ab else ()
            shape = m["chunk_grid"]["configuration"]["chunk_shape"]
            size = SIZES.get(dt, 0)
            kind = "vlen" if dt in ("string", "variable_length_bytes") else None
        elif ".zarray" in files:
            m = json.load(open(os.path.join(dirpath, ".zarray")))
            bb = tuple(short(f["id"]) for f in (m.get("filters") or []))
            if m.get("compressor"):
                bb = bb + (short(m["compressor"]["id"]),)
            dt = m["dtype"]
            shape = m["chunks"]
            size = int(dt[2:]) if isinstance(dt, str) and dt[1:2] in "iufb" and dt[2:].isdigit() else 0
            if isinstance(dt, str) and dt[1:2] == "c":
                size = int(dt[2:])
            kind = "vlen" if dt == "|O" else None
        else:
            return None
    except (ValueError, KeyError, IndexError, TypeError, OSError):
        return None
    n = 1
    for s in shape:
        n *= int(s)
    return bb, n * size, kind


chunks_seen = 0
for dirpath, dirs, files in os.walk(fixtures):
    info = array_info(dirpath, set(files))
    if info is None:
        continue
    bb, expect, kind = info
    conf = CHAINS.get(bb)
    taken = 0
    for sub, _, fs in os.walk(dirpath):
        for f in sorted(fs):
            if f in META or taken >= 4:
                continue
            p = os.path.join(sub, f)
            if os.path.getsize(p) > 65536:
                continue
            data = open(p, "rb").read()
            if conf is not None:
                put("fuzz_chain", bytes([conf]) + struct.pack("<I", expect & 0xFFFFFFFF) + data)
                taken += 1
            if kind == "vlen" and not bb:
                put("fuzz_strings", bytes([0, 0, struct.unpack("<I", data[:4])[0] & 255]) + data)
            chunks_seen += 1

# keys: every path in the fixtures, relative to its top directory
keys = []
for dirpath, dirs, files in os.walk(fixtures):
    for f in files:
        keys.append(os.path.relpath(os.path.join(dirpath, f), fixtures))
for k in sorted(keys)[:400] + ["a/c/0/0", "../x", "a/./b", "a//b", "/abs", "a\\b", "c.0.0", ""]:
    put("fuzz_keys", k.encode())

# zip archives: the fixtures' and a few made here (stored, deflated, zip64)
for dirpath, dirs, files in os.walk(fixtures):
    for f in files:
        if f.endswith(".zip") and os.path.getsize(os.path.join(dirpath, f)) < 200000:
            put("fuzz_zip", open(os.path.join(dirpath, f), "rb").read())
for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
    for force64 in (False, True):
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", compression=method) as z:
            z.writestr("zarr.json", '{"zarr_format": 3, "node_type": "group"}')
            with z.open("a/c/0", "w", force_zip64=force64) as w:
                w.write(bytes(range(256)) * 8)
        put("fuzz_zip", b.getvalue())

# strings made here: vlen-utf8 and vlen-bytes, UTF-32 (both byte orders), fixed bytes
def vlen(items):
    return struct.pack("<I", len(items)) + b"".join(struct.pack("<I", len(s)) + s for s in items)
texts = [b"", b"a", "\u00e9t\u00e9".encode(), "\U0001F600".encode(), b"abc" * 10]
put("fuzz_strings", bytes([0, 0, len(texts)]) + vlen(texts))
put("fuzz_strings", bytes([1 | 4, 0, len(texts)]) + vlen(texts))
for big, order in ((0, "<"), (8, ">")):
    cps = [0x61, 0xE9, 0x1F600, 0, 0x62, 0, 0, 0]
    put("fuzz_strings", bytes([2 | big, 4, 2]) + struct.pack(order + "8I", *cps))
put("fuzz_strings", bytes([3, 4, 3]) + b"ab\0\0cdefg\0\0\0")

# shards: geometry bytes, then bytes the target encodes and decodes
for g in (b"\x00\x00\x11", b"\x01\x15\x12\x21", b"\x02\x3b\x11\x12\x13"):
    put("fuzz_shard", g + bytes(range(64)))
    put("fuzz_shard", g + bytes(64))

# XML answers of S3 services: listings (compact and indented), an error
# document, an entity bomb that must be refused
listing = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
           '<Name>b</Name><Prefix>p/</Prefix><IsTruncated>true</IsTruncated>'
           '<Contents><Key>p/zarr.json</Key><Size>123</Size></Contents>'
           '<Contents><Key>p/a &amp; b/\u00e9</Key><Size>0</Size></Contents>'
           '<Contents><Key><![CDATA[p/c/0/0]]></Key><Size>6000000000</Size></Contents>'
           '<CommonPrefixes><Prefix>p/g/</Prefix></CommonPrefixes>'
           '<NextContinuationToken>t0k3n</NextContinuationToken></ListBucketResult>')
put("fuzz_xml", listing.encode())
put("fuzz_xml", listing.replace("><", ">\n  <").encode())
azure = ('<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://a.blob.core.windows.net/" ContainerName="c">'
         '<Prefix>p/</Prefix><MaxResults>2</MaxResults><Delimiter>/</Delimiter><Blobs>'
         '<Blob><Name>p/zarr.json</Name><Properties><Content-Length>120</Content-Length></Properties></Blob>'
         '<Blob><Name Encoded="true">p/%E2%82%AC%01</Name><Properties><Content-Length>0</Content-Length></Properties></Blob>'
         '<BlobPrefix><Name>p/a/</Name></BlobPrefix></Blobs><NextMarker>2!80!MDAwMDE2</NextMarker></EnumerationResults>')
put("fuzz_xml", azure.encode())
put("fuzz_xml", b'<?xml version="1.0"?>\n<Error>\n  <Code>NoSuchBucket</Code>\n  <Message>The bucket \xc3\xa9 &lt;x&gt;</Message>\n</Error>\n')
put("fuzz_xml", b'<!DOCTYPE l [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]><ListBucketResult><Contents><Key>&b;</Key></Contents></ListBucketResult>')

print("corpus: %d chunks from %s into %s" % (chunks_seen, fixtures, out))
for t in sorted(os.listdir(out)):
    print("  %s: %d seeds" % (t, len(os.listdir(os.path.join(out, t)))))

# lzma chunks in fuzz_chain's configurations 22-25 (xz, alone, raw with filters)
import lzma
plain = bytes(range(256)) * 8
for conf, kw in ((22, dict(format=lzma.FORMAT_XZ, preset=1)), (23, dict(format=lzma.FORMAT_ALONE, preset=1)),
                 (24, dict(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_DELTA, dist=4),
                                                            dict(id=lzma.FILTER_LZMA2, preset=1)])),
                 (25, dict(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_X86, start_offset=16),
                                                            dict(id=lzma.FILTER_LZMA1, preset=0, lc=1)]))):
    put("fuzz_chain", bytes([conf]) + struct.pack("<I", len(plain)) + lzma.compress(plain, **kw))
