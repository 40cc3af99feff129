#!/usr/bin/python3
"""The zarr-python 2 and GDAL (Python multidimensional API) side of
bench/zarr_benchmarks.R.

usage: /usr/bin/python3 bench/zb_peers.py TOOL OP STORE [options]
  TOOL   zarr | gdal
  OP     probe      can TOOL open STORE? (prints {"ok": true} or the error)
         read       open + read the whole array, --reps times after a warm-up
         chunks     read every --chunk block one by one (grid order), --reps times
         roundtrip  open + read all + write it to --out with the same chunks and
                    compressor (zarr only)
         share      one concurrent reader: wait until --start (epoch seconds),
                    read the blocks k, k + n, k + 2n, ... (--part k/n), print
                    start and end times
  --chunk N      block edge for chunks / share (default 256)
Prints one JSON document on stdout: median and minimum seconds, the peak
resident memory of one more read above what the process held before it
(VmHWM after resetting it through /proc/self/clear_refs, MB), and a
checksum of the values (sum, and for 3-d arrays a few elements) that
bench/zarr_benchmarks.R (and bench/peer.R, for GDAL) compares with its own. Whole reads include opening the array (as ours do).
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

MB = 1e6
PROBES = [(0, 0, 0), (1, 2, 3), (300, 17, 255), (1023, 1023, 255), (700, 511, 128)]


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return float(line.split()[1])
    return float("nan")


def reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def checksum(x):
    if x.dtype.kind == "f":
        return {"sum": float(x.sum(dtype=np.float64)), "probes": []}
    probes = [int(x[tuple(min(p[d], x.shape[d] - 1) for d in range(3))]) for p in PROBES] if x.ndim == 3 else []
    return {"sum": int(x.sum(dtype=np.int64)), "probes": probes}


def open_zarr(path):
    import zarr
    return zarr.open_array(path, mode="r")


def open_gdal(path):
    from osgeo import gdal
    gdal.UseExceptions()
    ds = gdal.OpenEx(path, gdal.OF_MULTIDIM_RASTER)
    rg = ds.GetRootGroup()
    return ds, rg.OpenMDArray(rg.GetMDArrayNames()[0])


class Tool:
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.arr = None

    def open(self):
        if self.name == "zarr":
            self.arr = open_zarr(self.path)
            self.shape = self.arr.shape
        else:
            self.ds, self.arr = open_gdal(self.path)
            self.shape = tuple(d.GetSize() for d in self.arr.GetDimensions())

    def read_all(self):
        self.open()
        return self.arr[:] if self.name == "zarr" else self.arr.ReadAsArray()

    def block(self, start, count):
        if self.name == "zarr":
            return self.arr[tuple(slice(s, s + c) for s, c in zip(start, count))]
        return self.arr.ReadAsArray(array_start_idx=list(start), count=list(count))


def blocks(shape, edge):
    grid = [range(0, n, edge) for n in shape]
    return [((i, j, k), tuple(min(edge, n - s) for n, s in zip(shape, (i, j, k))))
            for i in grid[0] for j in grid[1] for k in grid[2]]


def timed(fn, reps):
    fn()
    ts, cs = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return {"s": statistics.median(ts), "min_s": min(ts), "cpu_s": statistics.median(cs), "reps": reps}


def peak_mb(fn):
    before = status_kb("VmRSS")
    ok = reset_hwm()
    out = fn()
    hwm = status_kb("VmHWM")
    return out, ((hwm - before) * 1024 / MB if ok else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool", choices=["zarr", "gdal"])
    ap.add_argument("op", choices=["probe", "read", "chunks", "roundtrip", "share"])
    ap.add_argument("store")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--out", default=None)
    ap.add_argument("--part", default="0/1")
    ap.add_argument("--start", type=float, default=0)
    a = ap.parse_args()
    t = Tool(a.tool, a.store)
    res = {"tool": a.tool, "op": a.op}
    try:
        if a.op == "probe":
            t.open()
            t.block((0, 0, 0), (1, 1, 1))
            res["ok"] = True
        elif a.op == "read":
            res.update(timed(t.read_all, a.reps))
            x, res["peak_mb"] = peak_mb(t.read_all)
            res["check"] = checksum(x)
        elif a.op == "chunks":
            # opened again for every pass: GDAL keeps decoded chunks of an open array
            t.open()
            bl = blocks(t.shape, a.chunk)

            def one_pass():
                t.open()
                for s, c in bl:
                    t.block(s, c)
            res.update(timed(one_pass, a.reps))
            res["n"] = len(bl)
        elif a.op == "roundtrip":
            import zarr
            src = open_zarr(a.store)
            n = [0]

            def rt():
                x = open_zarr(a.store)[:]
                n[0] += 1
                out = zarr.open_array(f"{a.out}-{n[0]}", mode="w", shape=x.shape, chunks=src.chunks,
                                      dtype=src.dtype, compressor=src.compressor, order=src.order)
                out[:] = x
            res.update(timed(rt, a.reps))
        elif a.op == "share":
            k, n = (int(v) for v in a.part.split("/"))
            t.open()
            bl = blocks(t.shape, a.chunk)[k::n]
            while time.time() < a.start:
                time.sleep(0.002)
            t0 = time.time()
            for s, c in bl:
                t.block(s, c)
            res.update({"t0": t0, "t1": time.time(), "n": len(bl)})
    except Exception as e:  # reported, not raised: the R side prints n/a with the reason
        res["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    sys.exit(main())
