"""Test data for the reference store: netCDF-4 and HDF5 files, their Kerchunk
references (written here from h5py's chunk information) and the values h5py
reads.

usage:
  python3 kerchunk_refs.py make OUTDIR
      writes OUTDIR/data.nc (netCDF4), OUTDIR/data.h5 (h5py), the references
      refs_v0.json (JSON version 0, relative targets, one chunk inline),
      refs_v1.json (version 1: templates and gen), refs_h5.json (HDF5 file,
      absolute file:// targets) and expected.json (values h5py reads, C order).
  python3 kerchunk_refs.py bench OUTDIR NT
      writes OUTDIR/bench.nc (t2m: NT x 181 x 360 float32) and refs_bench.json
      for bench/references.R.
  python3 kerchunk_refs.py fsspec REFS.json VAR...
      reads VARs through fsspec's ReferenceFileSystem and zarr-python; prints
      JSON {var: {"shape": [...], "values": [...]}} (C order).
"""
import base64
import json
import math
import os
import sys
from collections.abc import Mapping

import numpy as np


def fill_json(v):
    if v is None:
        return None
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    return v


def values_json(a):
    out = []
    for v in np.asarray(a).ravel(order="C").tolist():
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            out.append(str(v))
        else:
            out.append(v)
    return out


def array_refs(ds, name, url, dims, attrs):
    """The references of one h5py dataset: metadata and one entry per chunk."""
    refs = {}
    filters = None
    compressor = None
    if ds.chunks is not None:
        if ds.shuffle:
            filters = [{"id": "shuffle", "elementsize": ds.dtype.itemsize}]
        if ds.compression == "gzip":
            compressor = {"id": "zlib", "level": int(ds.compression_opts)}
        elif ds.compression is not None:
            raise SystemExit("unsupported compression " + str(ds.compression))
        chunks = list(ds.chunks)
    else:
        chunks = list(ds.shape)
    zarray = {
        "zarr_format": 2, "shape": list(ds.shape), "chunks": chunks, "dtype": ds.dtype.str,
        "compressor": compressor, "filters": filters, "fill_value": fill_json(ds.fillvalue),
        "order": "C",
    }
    refs[name + "/.zarray"] = json.dumps(zarray)
    za = dict(attrs)
    za["_ARRAY_DIMENSIONS"] = dims
    refs[name + "/.zattrs"] = json.dumps(za)
    chunk_refs = {}
    if ds.chunks is None:
        key = ".".join("0" for _ in ds.shape) or "0"
        chunk_refs[name + "/" + key] = [url, int(ds.id.get_offset()), int(ds.id.get_storage_size())]
    else:
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            assert info.filter_mask == 0
            key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, ds.chunks))
            chunk_refs[name + "/" + key] = [url, int(info.byte_offset), int(info.size)]
    return refs, chunk_refs


def make(out):
    import h5py
    import netCDF4

    os.makedirs(out, exist_ok=True)
    nc_path = os.path.join(out, "data.nc")
    rng = np.random.default_rng(42)
    with netCDF4.Dataset(nc_path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", 10)
        nc.createDimension("lat", 7)
        nc.createDimension("lon", 9)
        lat = nc.createVariable("lat", "f8", ("lat",))  # contiguous
        lat[:] = np.linspace(-60, 60, 7)
        lat.units = "degrees_north"
        t = nc.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                              shuffle=True, chunksizes=(4, 3, 5), fill_value=np.float32(-9999))
        t[:] = (rng.normal(15, 8, (10, 7, 9))).astype("f4")
        t[2, 3, 4] = np.float32(-9999)
        t.units = "degC"
        t.long_name = "air temperature"
        p = nc.createVariable("pres", "f8", ("time", "lat"), zlib=True, complevel=6, shuffle=True,
                              chunksizes=(3, 4))
        p[:] = rng.uniform(900, 1050, (10, 7))
        c = nc.createVariable("count", "i2", ("lat", "lon"), zlib=True, complevel=1, shuffle=False,
                              chunksizes=(4, 4), fill_value=np.int16(-1))
        c[:] = rng.integers(-300, 30000, (7, 9)).astype("i2")
        ix = nc.createVariable("idx", "i4", ("time",), zlib=True, shuffle=True, chunksizes=(4,))
        ix[:] = np.arange(10, dtype="i4") * 100000 - 7
        nc.title = "reference store test"

    h5_path = os.path.join(out, "data.h5")
    with h5py.File(h5_path, "w") as f:
        a = f.create_dataset("a", shape=(20, 30), dtype="f4", chunks=(6, 7), compression="gzip",
                             compression_opts=5, shuffle=True, fillvalue=np.float32(-1.5))
        a[0:12, 0:14] = rng.normal(0, 1, (12, 14)).astype("f4")  # other chunks stay unallocated
        g = f.create_group("g")
        b = g.create_dataset("b", data=(np.arange(60).reshape(5, 12) * 1000 - 30000).astype(">i4"),
                             chunks=(2, 5), compression="gzip", compression_opts=9)
        b.attrs["note"] = "big-endian"
        g.create_dataset("d", data=rng.uniform(-1, 1, (40,)).astype("<f8"), chunks=(16,),
                         compression="gzip", shuffle=True)

    expected = {}
    # netCDF file: v0 (relative targets, one chunk inline) and v1 (templates, gen)
    v0 = {".zgroup": json.dumps({"zarr_format": 2}),
          ".zattrs": json.dumps({"title": "reference store test"})}
    all_chunks = {}
    with h5py.File(nc_path, "r") as f, netCDF4.Dataset(nc_path, "r") as nc:
        for name in ["lat", "temp", "pres", "count", "idx"]:
            var = nc.variables[name]
            attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in var.__dict__.items()
                     if k != "_FillValue"}
            meta, chunks = array_refs(f[name], name, "data.nc", list(var.dimensions), attrs)
            v0.update(meta)
            v0.update(chunks)
            all_chunks[name] = chunks
            expected[name] = {"shape": list(f[name].shape), "values": values_json(f[name][...]),
                              "dtype": f[name].dtype.str}
    # one chunk inline (base64), as kerchunk does for small chunks
    k = "count/1.1"
    url, off, size = v0[k]
    with open(nc_path, "rb") as fh:
        fh.seek(off)
        v0[k] = "base64:" + base64.b64encode(fh.read(size)).decode("ascii")
    with open(os.path.join(out, "refs_v0.json"), "w") as fh:
        json.dump(v0, fh)

    # v1: templates for the URL; idx's chunks from a gen entry when they are
    # evenly spaced, otherwise listed; the rest as refs
    v1 = {"version": 1, "templates": {"u": "data.nc"}, "gen": [], "refs": {}}
    for key, val in v0.items():
        if isinstance(val, list):
            v1["refs"][key] = ["{{u}}", val[1], val[2]]
        else:
            v1["refs"][key] = json.loads(val) if key.endswith((".zarray", ".zattrs", ".zgroup")) else val
    # a gen entry: the chunks of "pres" as a copy "pres2" in their order in the file
    pres = sorted(all_chunks["pres"].items(), key=lambda kv: kv[0])
    v1["refs"]["pres2/.zarray"] = v1["refs"]["pres/.zarray"]
    v1["refs"]["pres2/.zattrs"] = v1["refs"]["pres/.zattrs"]
    gen_offsets = [r[1] for _, r in pres]
    gen_sizes = [r[2] for _, r in pres]
    v1["templates"]["offs"] = " ".join(str(o) for o in gen_offsets)
    # gen with explicit lists: key pres2/{{i}}.{{j}}; offsets from a table file
    # cannot be templated, so list one gen entry per chunk row with step ranges
    nj = 2
    for i in range(4):
        for j in range(nj):
            key = "pres/%d.%d" % (i, j)
            if key not in all_chunks["pres"]:
                continue
            _, off, size = all_chunks["pres"][key]
            v1["gen"].append({"key": "pres2/{{a}}.{{b}}", "url": "{{u}}", "offset": "{{%d + 0 * a}}" % off,
                              "length": str(size), "dimensions": {"a": [i], "b": {"start": j, "stop": j + 1}}})
    del v1["templates"]["offs"]
    with open(os.path.join(out, "refs_v1.json"), "w") as fh:
        json.dump(v1, fh)

    # the HDF5 file: absolute file:// targets, nested group
    h5 = {".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2}}
    absurl = "file://" + os.path.abspath(h5_path)
    with h5py.File(h5_path, "r") as f:
        for name in ["a", "g/b", "g/d"]:
            ds = f[name]
            dims = ["%s_dim%d" % (name.replace("/", "_"), d) for d in range(ds.ndim)]
            attrs = {k: (v.item() if hasattr(v, "item") else (v.decode() if isinstance(v, bytes) else v))
                     for k, v in ds.attrs.items()}
            meta, chunks = array_refs(ds, name, absurl, dims, attrs)
            for mk, mv in meta.items():
                h5[mk] = json.loads(mv)
            h5.update(chunks)
            expected[name] = {"shape": list(ds.shape), "values": values_json(ds[...]), "dtype": ds.dtype.str}
    with open(os.path.join(out, "refs_h5.json"), "w") as fh:
        json.dump(h5, fh)
    with open(os.path.join(out, "expected.json"), "w") as fh:
        json.dump(expected, fh)


def make_bench(out, nt):
    """bench/references.R: one netCDF-4 variable t2m (nt x 181 x 360 float32,
    one zlib + shuffle chunk per time step) and its JSON v0 references."""
    import h5py
    import netCDF4

    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "bench.nc")
    rng = np.random.default_rng(1)
    lat = np.linspace(-90, 90, 181)
    lon = np.arange(360)
    base = (288 - 30 * np.abs(np.sin(np.radians(lat)))[:, None] + 0 * lon[None, :]).astype("f4")
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", nt)
        nc.createDimension("lat", 181)
        nc.createDimension("lon", 360)
        v = nc.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                              shuffle=True, chunksizes=(1, 181, 360))
        for t in range(nt):
            v[t] = base + np.round(rng.normal(0, 2, (181, 360)), 2).astype("f4")
        v.units = "K"
    refs = {".zgroup": json.dumps({"zarr_format": 2})}
    with h5py.File(path, "r") as f:
        meta, chunks = array_refs(f["t2m"], "t2m", "bench.nc", ["time", "lat", "lon"], {"units": "K"})
    refs.update(meta)
    refs.update(chunks)
    with open(os.path.join(out, "refs_bench.json"), "w") as fh:
        json.dump(refs, fh)


def read_fsspec(refs_path, names):
    import fsspec
    import zarr

    with open(refs_path) as fh:
        refs = json.load(fh)
    # fsspec 2022.11 takes inline values as strings only: JSON objects
    # (metadata documents, which newer versions accept) become their text
    table = refs["refs"] if refs.get("version") == 1 else refs
    for k, v in list(table.items()):
        if isinstance(v, dict):
            table[k] = json.dumps(v)
    fs = fsspec.filesystem("reference", fo=refs)

    # fs.get_mapper("") is what users write; but fsspec 2022.11's batched
    # getitems raises KeyError for keys without a reference (chunks HDF5
    # never allocated) instead of omitting them, so go key by key
    class Refs(Mapping):
        def __getitem__(self, key):
            try:
                return fs.cat_file(key)
            except (KeyError, FileNotFoundError):
                raise KeyError(key)

        def __iter__(self):
            return iter(fs.references)

        def __len__(self):
            return len(fs.references)

    root = zarr.open(zarr.storage.KVStore(Refs()), mode="r")
    out = {}
    for name in names:
        a = root[name][...]
        out[name] = {"shape": list(a.shape), "values": values_json(a)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "bench":
        make_bench(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "fsspec":
        read_fsspec(sys.argv[2], sys.argv[3:])
    else:
        raise SystemExit(__doc__)
