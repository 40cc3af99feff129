#!/usr/bin/python3
"""The zarr-python 2 side of bench/peer.R.

usage: /usr/bin/python3 bench/peer.py SPEC.json [--reps N] [--open-reps N]

SPEC.json (written by bench/peer.R) names the Zarr v2 stores that the R
package wrote, the W2 block positions, the W3 slice/column, where to write
and the repetitions. Every read or write is timed the same way as on the R
side: one warm-up, then `reps` timed repetitions; an operation faster than
`min_time` seconds is called k times per repetition (k from the warm-up);
the result is the median seconds per call (time.perf_counter) and the median
CPU seconds per call (time.process_time: all threads of this process).
Reads verify what they read: an MD5 of the values' bytes in column-major
(Fortran) order, which bench/peer.R compares with the same digest of what R
read. Writes write the same values (read from R's store, untimed) with the
same codecs, chunks and order, into a fresh store per call; each written
store is read back (untimed) and digested.

Prints one JSON document on stdout; progress goes to stderr.
"""

import argparse
import hashlib
import json
import os
import statistics
import sys
import time

import numpy as np
import numcodecs
import zarr
from numcodecs import Blosc, Zstd


def log(*a):
    print("peer.py:", *a, file=sys.stderr, flush=True)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return None


# numcodecs 0.11 (Debian bookworm) has no `checksum` parameter for Zstd, while
# the R package writes {"id": "zstd", "level": 1, "checksum": false} (newer
# numcodecs write the same key). `checksum: false` is the codec's default:
# accept exactly that, so that the very same stores are read by both sides.
zstd_shim = False
try:
    Zstd(level=1, checksum=False)
except TypeError:
    class ZstdChecksumFalse(Zstd):
        codec_id = "zstd"

        def __init__(self, level=1, checksum=False):
            if checksum:
                raise ValueError("this numcodecs cannot write or check zstd checksums")
            super().__init__(level=level)

    numcodecs.register_codec(ZstdChecksumFalse)
    zstd_shim = True


def digest(arrays):
    h = hashlib.md5()
    for a in arrays:
        h.update(np.asarray(a).tobytes(order="F"))
    return h.hexdigest()


def timed(fn, reps, min_time, calls=None):
    """Median seconds and CPU seconds per call of fn(i)."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn(0)  # warm-up
    w = time.perf_counter() - t0
    if calls is None:
        calls = max(1, min(1000, int(np.ceil(min_time / max(w, 1e-6)))))
    wall, cpu = [], []
    n = 1
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn(n)
            n += 1
        wall.append((time.perf_counter() - t0) / calls)
        cpu.append((time.process_time() - c0) / calls)
    return {"s": statistics.median(wall), "min_s": min(wall),
            "cpu_s": statistics.median(cpu), "reps": reps, "calls_per_rep": calls}


def dir_bytes(path):
    n = 0
    for d, _, files in os.walk(path):
        for f in files:
            n += os.path.getsize(os.path.join(d, f))
    return n


def open_array(store_path, name="a", mode="r"):
    return zarr.open_group(zarr.DirectoryStore(store_path), mode=mode)[name]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--open-reps", type=int)
    args = ap.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    reps = args.reps or spec["reps"]
    open_reps = args.open_reps or spec["open_reps"]
    min_time = spec.get("min_time", 0.05)
    only = spec.get("only") or ""
    st = spec["stores"]
    out_dir = spec["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    res = {"zarr_version": zarr.__version__, "numcodecs_version": numcodecs.__version__,
           "numpy_version": np.__version__, "python": sys.version.split()[0],
           "executable": sys.executable, "blosc_nthreads": numcodecs.blosc.get_nthreads(),
           "zstd_shim": zstd_shim, "load_start": loadavg(), "ops": {}}
    log("zarr %s, numcodecs %s, load average %s" % (zarr.__version__, numcodecs.__version__,
                                                    res["load_start"]))

    def want(op_id):
        import re
        return not only or re.search(only, op_id) is not None

    def record(op_id, r):
        res["ops"][op_id] = r
        log("%-16s %10.6f s  (cpu %10.6f)" % (op_id, r["s"], r["cpu_s"]))

    # ---- reads of whole arrays, the array opened beforehand
    for op_id, key in spec["full_reads"]:
        if not want(op_id):
            continue
        a = open_array(st[key])
        r = timed(lambda i: a[...], reps, min_time)
        r["md5"] = digest([a[...]])
        record(op_id, r)

    # ---- W2: 20 unaligned 100 x 100 blocks of W1 (1-based positions from R)
    if want("w2_blocks"):
        a = open_array(st["w1"])
        blocks = spec["w2_blocks"]

        def w2(_):
            return [a[i - 1:i + 99, j - 1:j + 99] for i, j in blocks]
        r = timed(w2, reps, min_time)
        r["md5"] = digest(w2(0))
        record("w2_blocks", r)

    # ---- W3 slice [, , k] and column [i, j, ]
    a3 = open_array(st["w3"])
    k = spec["w3_k"]
    i3, j3 = spec["w3_ij"]
    if want("w3_slice"):
        r = timed(lambda _: a3[:, :, k - 1], reps, min_time)
        r["md5"] = digest([a3[:, :, k - 1]])
        record("w3_slice", r)
    if want("w3_column"):
        r = timed(lambda _: a3[i3 - 1, j3 - 1, :], reps, min_time)
        r["md5"] = digest([a3[i3 - 1, j3 - 1, :]])
        record("w3_column", r)

    # ---- open a store and read one element: `open_reps` calls per repetition
    if want("open_one"):
        p = st[spec["open_store"]]

        def open_one(_):
            return zarr.open_group(zarr.DirectoryStore(p), mode="r")["a"][0, 0]
        r = timed(open_one, reps, min_time, calls=open_reps)
        r["value"] = float(open_one(0))
        record("open_one", r)

    # ---- writes: the same values, codecs, chunks and order, one fresh store per call
    def compressor(codec):
        if codec == "none":
            return None
        if codec == "zstd":
            return Zstd(level=1)
        if codec == "blosc":
            return Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE, blocksize=0)
        if codec == "blosc_zstd":
            return Blosc(cname="zstd", clevel=1, shuffle=Blosc.SHUFFLE, blocksize=0)
        raise ValueError(codec)

    for op_id, key, codec in spec["writes"]:
        if not want(op_id):
            continue
        src = open_array(st[key])
        x = src[...]  # F order, as R holds it
        chunks = src.chunks
        fill = src.fill_value
        paths = []

        def write(n):
            path = os.path.join(out_dir, "py-%s-%d.zarr" % (op_id, n))
            g = zarr.open_group(zarr.DirectoryStore(path, dimension_separator="."), mode="w")
            arr = g.create("a", shape=x.shape, chunks=chunks, dtype=x.dtype,
                           compressor=compressor(codec), fill_value=fill, order="F",
                           dimension_separator=".")
            arr[...] = x
            paths.append(path)
        r = timed(write, reps, min_time)
        os.sync()  # untimed, like R's sync after a write operation
        r["md5"] = digest([open_array(paths[-1])[...]])
        r["bytes"] = dir_bytes(paths[-1])
        record(op_id, r)

    # ---- metadata: 500 arrays in 20 groups of 25; time per array
    meta = spec["meta"]
    if want("meta_create"):
        def create_tree(n):
            path = os.path.join(out_dir, "py-meta-%d.zarr" % n)
            root = zarr.open_group(zarr.DirectoryStore(path, dimension_separator="."), mode="w")
            for gi in range(1, meta["groups"] + 1):
                g = root.create_group("g%d" % gi)
                for ai in range(1, meta["arrays"] + 1):
                    g.create("a%d" % ai, shape=tuple(meta["shape"]), chunks=tuple(meta["chunks"]),
                             dtype="<f8", compressor=Zstd(level=1), fill_value=np.nan, order="F",
                             dimension_separator=".")
        r = timed(create_tree, reps, min_time)
        per = meta["groups"] * meta["arrays"]
        last_tree = os.path.join(out_dir, "py-meta-%d.zarr" % (reps * r["calls_per_rep"]))
        r["arrays_found"] = sum(".zarray" in files for _, _, files in os.walk(last_tree))
        for f in ("s", "min_s", "cpu_s"):
            r[f] /= per
        r["per_rep"] = per
        record("meta_create", r)

    # ---- set an attribute in a consolidated 500-array store (R wrote it and
    # consolidated it), then consolidate again, as a zarr-python user would
    if want("meta_set_attr"):
        path = st["meta500_py"]
        store = zarr.DirectoryStore(path)
        root = zarr.open_group(store, mode="r+")
        node = root[meta["node"]]
        last = {"v": None}

        def set_attr(n):
            node.attrs["bench"] = n
            zarr.consolidate_metadata(store)
            last["v"] = n
        r = timed(set_attr, reps, min_time)
        with open(os.path.join(path, ".zmetadata")) as f:
            zm = json.load(f)
        got = zm["metadata"].get(meta["node"] + "/.zattrs", {}).get("bench")
        r["consolidated_ok"] = got == last["v"]
        record("meta_set_attr", r)

    res["load_end"] = loadavg()
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
