"""zarr-python 2's side of bench/latency.R: one row per run.

usage: python3 bench/latency.py ROW WORKDIR REPS MIN_TIME
Prints {"wall": s, "cpu": s} (median seconds per call over REPS repetitions,
each looping the operation for at least MIN_TIME seconds) on the last line.
"""
import json, os, shutil, statistics, sys, time

import numpy as np
import zarr
from numcodecs import Zstd

row, workdir, reps, min_time = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
I, J = 122, 44  # bench/latency.R reads [123, 45] (1-based)
p = lambda *a: os.path.join(workdir, *a)


def make_tree(path):
    root = zarr.open_group(zarr.DirectoryStore(path, dimension_separator="."), mode="w")
    for gi in range(1, 21):
        g = root.create_group("g%d" % gi)
        for ai in range(1, 26):
            g.create("a%d" % ai, shape=(100, 100), chunks=(10, 10), dtype="<f8", compressor=Zstd(level=1),
                     fill_value=np.nan, order="F", dimension_separator=".")


def create(n):
    d = p("py-new-%d.zarr" % n)
    make_tree(d)
    shutil.rmtree(d)


state = {}


def set_attr(n):
    # the node looked up by path each time in a store opened once; the
    # consolidated copy rebuilt, as zarr-python 2 users keep it up to date
    if "g" not in state:
        state["store"] = zarr.DirectoryStore(p("tree_py.zarr"))
        state["g"] = zarr.open_group(state["store"], mode="r+")  # (open_consolidated is read-only)
    state["g"]["g10/a13"].attrs["bench"] = n
    zarr.consolidate_metadata(state["store"])


def set_attr_open(n):
    store = zarr.DirectoryStore(p("tree_py.zarr"))
    zarr.open_group(store, mode="r+")["g10/a13"].attrs["bench"] = n
    zarr.consolidate_metadata(store)


def sel_3x3(n):
    if "a" not in state:
        state["a"] = zarr.open(p("small.zarr"), mode="r")
    return state["a"][0:3, 0:3]


def sel_3x3_raw(n):
    if "a_raw" not in state:
        state["a_raw"] = zarr.open(p("small_raw.zarr"), mode="r")["a"]
    return state["a_raw"][0:3, 0:3]


ops = {
    "open_one_root": lambda n: zarr.open(p("root_array.zarr"), mode="r")[I, J],
    "open_one_group": lambda n: zarr.open(p("group.zarr"), mode="r")["a"][I, J],
    "open_node": lambda n: zarr.open(p("group.zarr"), mode="r")["a"],
    "sel_3x3": sel_3x3,
    "sel_3x3_raw": sel_3x3_raw,
    "create_500": create,
    "set_attr": set_attr,
    "set_attr_open": set_attr_open,
}

def timed_reads(later, k=500):
    """[I, J] of arrays opened beforehand (not timed): their first read, or a later one."""
    wall, cpu = [], []
    for _ in range(reps):
        arrs = [zarr.open(p("group.zarr"), mode="r")["a"] for _ in range(k)]
        if later:
            for a in arrs:
                a[I, J]
        t, c = time.perf_counter(), time.process_time()
        for a in arrs:
            a[I, J]
        wall.append((time.perf_counter() - t) / k)
        cpu.append((time.process_time() - c) / k)
    print(json.dumps({"wall": statistics.median(wall), "cpu": statistics.median(cpu)}))
    sys.exit(0)


if row in ("first_read", "later_read"):
    timed_reads(row == "later_read")
fn = ops[row]
fn(0)
t0, k = time.perf_counter(), 0
while time.perf_counter() - t0 < min_time / 4:
    k += 1
    fn(k)
calls = max(1, int(-(-k * min_time // max(1e-9, time.perf_counter() - t0))))
wall, cpu, n = [], [], 1000
for r in range(reps):
    t, c = time.perf_counter(), time.process_time()
    for j in range(calls):
        fn(n)
        n += 1
    wall.append((time.perf_counter() - t) / calls)
    cpu.append((time.process_time() - c) / calls)
print(json.dumps({"wall": statistics.median(wall), "cpu": statistics.median(cpu)}))
