#!/usr/bin/python3
"""The zarr-python 2 side of bench/peer.R.

usage: /usr/bin/python3 bench/peer.py SPEC.json [--reps N] [--open-reps N] [--serve]

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

Batch (default): times every operation and prints one JSON document on
stdout; progress goes to stderr. --serve: opens the arrays, then answers
one JSON command per line on stdin (see serve()), so that bench/peer.R can
interleave its repetitions with zarr-python's in the same run.
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


def build_ops(spec):
    """op id -> (fn(n): one call, check(): dict of verification fields, per:
    operations in one call). Arrays are opened here, before any timing."""
    st = spec["stores"]
    out_dir = spec["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    ops = {}

    # ---- reads of whole arrays, the array opened beforehand
    for op_id, key in spec["full_reads"]:
        a = open_array(st[key])
        ops[op_id] = (lambda n, a=a: a[...], lambda a=a: {"md5": digest([a[...]])}, 1)

    # ---- W2: 20 unaligned 100 x 100 blocks of W1 (1-based positions from R)
    a1 = open_array(st["w1"])
    blocks = spec["w2_blocks"]

    def w2(_):
        return [a1[i - 1:i + 99, j - 1:j + 99] for i, j in blocks]
    ops["w2_blocks"] = (w2, lambda: {"md5": digest(w2(0))}, 1)

    # ---- W3 slice [, , k] and column [i, j, ]
    a3 = open_array(st["w3"])
    k = spec["w3_k"]
    i3, j3 = spec["w3_ij"]
    ops["w3_slice"] = (lambda n: a3[:, :, k - 1], lambda: {"md5": digest([a3[:, :, k - 1]])}, 1)
    ops["w3_column"] = (lambda n: a3[i3 - 1, j3 - 1, :], lambda: {"md5": digest([a3[i3 - 1, j3 - 1, :]])}, 1)

    # ---- open a store and read one element
    p_open = st[spec["open_store"]]

    def open_one(_):
        return zarr.open_group(zarr.DirectoryStore(p_open), mode="r")["a"][0, 0]
    ops["open_one"] = (open_one, lambda: {"value": float(open_one(0))}, 1)

    # ---- writes: the same values, codecs, chunks and order, one fresh store per call
    for op_id, key, codec in spec["writes"]:
        state = {"x": None, "last": None}

        def write(n, op_id=op_id, key=key, codec=codec, state=state):
            if state["x"] is None:  # on the warm-up call, before any timing
                src = open_array(st[key])
                state.update(x=src[...], chunks=src.chunks, fill=src.fill_value)
            x = state["x"]
            path = os.path.join(out_dir, "py-%s-%d.zarr" % (op_id, n))
            g = zarr.open_group(zarr.DirectoryStore(path, dimension_separator="."), mode="w")
            arr = g.create("a", shape=x.shape, chunks=state["chunks"], dtype=x.dtype,
                           compressor=compressor(codec), fill_value=state["fill"], order="F",
                           dimension_separator=".")
            arr[...] = x
            state["last"] = path

        def check(state=state):
            os.sync()  # untimed, like R's sync after a write operation
            state["x"] = None
            return {"md5": digest([open_array(state["last"])[...]]), "bytes": dir_bytes(state["last"])}
        ops[op_id] = (write, check, 1)

    # ---- metadata: 500 arrays in 20 groups of 25; time per array
    meta = spec["meta"]
    per = meta["groups"] * meta["arrays"]
    last_tree = {"path": None}

    def create_tree(n):
        path = os.path.join(out_dir, "py-meta-%d.zarr" % n)
        root = zarr.open_group(zarr.DirectoryStore(path, dimension_separator="."), mode="w")
        for gi in range(1, meta["groups"] + 1):
            g = root.create_group("g%d" % gi)
            for ai in range(1, meta["arrays"] + 1):
                g.create("a%d" % ai, shape=tuple(meta["shape"]), chunks=tuple(meta["chunks"]),
                         dtype="<f8", compressor=Zstd(level=1), fill_value=np.nan, order="F",
                         dimension_separator=".")
        last_tree["path"] = path
    ops["meta_create"] = (create_tree, lambda: {"arrays_found": sum(
        ".zarray" in files for _, _, files in os.walk(last_tree["path"]))}, per)

    # ---- set an attribute in a consolidated 500-array store (R wrote it and
    # consolidated it), then consolidate again, as a zarr-python user would.
    # Opened on first use: the store is made while R times its side.
    sa = {"node": None, "last": None}

    def set_attr(n):
        if sa["node"] is None:
            sa["store"] = zarr.DirectoryStore(st["meta500_py"])
            sa["node"] = zarr.open_group(sa["store"], mode="r+")[meta["node"]]
        sa["node"].attrs["bench"] = n
        zarr.consolidate_metadata(sa["store"])
        sa["last"] = n

    def set_attr_check():
        with open(os.path.join(st["meta500_py"], ".zmetadata")) as f:
            zm = json.load(f)
        got = zm["metadata"].get(meta["node"] + "/.zattrs", {}).get("bench")
        return {"consolidated_ok": got == sa["last"]}
    ops["meta_set_attr"] = (set_attr, set_attr_check, 1)
    return ops


def info():
    return {"zarr_version": zarr.__version__, "numcodecs_version": numcodecs.__version__,
            "numpy_version": np.__version__, "python": sys.version.split()[0],
            "executable": sys.executable, "blosc_nthreads": numcodecs.blosc.get_nthreads(),
            "zstd_shim": zstd_shim, "load": loadavg()}


def one_rep(fn, calls, first):
    t0, c0 = time.perf_counter(), time.process_time()
    for n in range(first, first + calls):
        fn(n)
    return {"s": (time.perf_counter() - t0) / calls, "cpu_s": (time.process_time() - c0) / calls}


def serve(ops):
    """One JSON command a line on stdin, one JSON answer a line on stdout:
    {"cmd": "info"}; {"cmd": "rep", "id": ID, "calls": K, "first": N} (K calls
    numbered from N: N = 0 is the warm-up); {"cmd": "check", "id": ID}."""
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        try:
            if cmd["cmd"] == "info":
                ans = info()
            elif cmd["cmd"] == "rep":
                fn, _, per = ops[cmd["id"]]
                ans = one_rep(fn, cmd["calls"], cmd["first"])
                ans = {"rep_s": ans["s"] * cmd["calls"], "s": ans["s"] / per, "cpu_s": ans["cpu_s"] / per}
            elif cmd["cmd"] == "check":
                ans = ops[cmd["id"]][1]()
            else:
                raise ValueError("unknown command %r" % cmd["cmd"])
        except Exception as e:  # report, keep serving
            ans = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--open-reps", type=int)
    ap.add_argument("--serve", action="store_true",
                    help="answer commands on stdin (bench/peer.R interleaves its repetitions)")
    args = ap.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    log("zarr %s, numcodecs %s, load average %s" % (zarr.__version__, numcodecs.__version__, loadavg()))
    ops = build_ops(spec)
    if args.serve:
        serve(ops)
        return
    # batch: every operation in turn, one JSON document at the end
    reps = args.reps or spec["reps"]
    open_reps = args.open_reps or spec["open_reps"]
    min_time = spec.get("min_time", 0.05)
    only = spec.get("only") or ""
    res = info()
    res["load_start"] = res.pop("load")
    res["ops"] = {}
    import re
    for op_id, (fn, check, per) in ops.items():
        if only and not re.search(only, op_id):
            continue
        r = timed(fn, reps, min_time, calls=open_reps if op_id == "open_one" else None)
        for f in ("s", "min_s", "cpu_s"):
            r[f] /= per
        r.update(check())
        res["ops"][op_id] = r
        log("%-16s %10.6f s  (cpu %10.6f)" % (op_id, r["s"], r["cpu_s"]))
    res["load_end"] = loadavg()
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
