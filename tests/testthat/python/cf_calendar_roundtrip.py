# CF datasets with the calendars of climate models, written by xarray, and
# the comparison of what R writes back with them, as xarray reads both.
#   write DIR: DIR/<calendar>.zarr for CF calendars; prints {"ok": true}
#   check SRC BACK: prints {"problems": [...]}, empty when xr.open_zarr(BACK)
#     equals xr.open_zarr(SRC): values, decoded times (cftime objects of the
#     same calendar), dimensions, attributes of the dataset, its variables
#     and coordinates
import sys, json
import numpy as np, xarray as xr

def make(calendar, out):
    # 3 times that are dates of every calendar here except the third of
    # 360_day (February 30th)
    start = "2001-02-27"
    times = xr.cftime_range(start, periods=4, freq="D", calendar=calendar) if calendar != "standard" \
        else np.array(["2001-02-27", "2001-02-28", "2001-03-01", "2001-03-02"], dtype="datetime64[ns]")
    lat = np.array([40.0, 42.5, 45.0])
    lon = np.array([5.0, 7.5, 10.0, 12.5, 15.0])
    rng = np.random.default_rng(5)
    tas = (270 + 20 * rng.random((4, 3, 5))).astype("float32")
    pr = np.round(rng.random((4, 3, 5)) * 10, 2)
    pr[1, 2, 3] = np.nan
    ds = xr.Dataset(
        {"tas": (("time", "lat", "lon"), tas,
                 {"units": "K", "long_name": "Near-Surface Air Temperature", "standard_name": "air_temperature",
                  "cell_methods": "time: mean"}),
         "pr": (("time", "lat", "lon"), pr, {"units": "mm d-1", "long_name": "precipitation"})},
        coords={"time": ("time", times, {"standard_name": "time", "axis": "T"}),
                "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude", "axis": "Y"}),
                "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude", "axis": "X"})},
        attrs={"title": "calendar " + calendar, "Conventions": "CF-1.8", "institution": "nowhere"})
    enc = {"time": {"units": "days since 2000-01-01", "calendar": calendar, "dtype": "int32"},
           "pr": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 0.0, "_FillValue": -32767}}
    ds.to_zarr(out, mode="w", consolidated=True, encoding=enc)

def check(src, back):
    a = xr.open_zarr(src)
    b = xr.open_zarr(back)
    problems = []
    if dict(a.attrs) != dict(b.attrs):
        problems.append("dataset attrs %s != %s" % (dict(a.attrs), dict(b.attrs)))
    for v in a.variables:
        if v not in b.variables:
            problems.append("missing " + v)
            continue
        x, y = a[v], b[v]
        if x.dims != y.dims:
            problems.append("%s dims %s != %s" % (v, x.dims, y.dims))
            continue
        xv, yv = x.values, y.values
        if xv.dtype.kind == "O" or yv.dtype.kind == "O":
            # cftime objects: the same dates of the same calendar
            if [type(t).__name__ for t in xv.ravel()] != [type(t).__name__ for t in yv.ravel()]:
                problems.append("%s classes %s != %s" % (v, type(xv.ravel()[0]).__name__, type(yv.ravel()[0]).__name__))
            if [t.isoformat() for t in xv.ravel()] != [t.isoformat() for t in yv.ravel()]:
                problems.append("%s times %s != %s" % (v, xv.ravel(), yv.ravel()))
        elif not np.array_equal(xv, yv, equal_nan=xv.dtype.kind == "f"):
            problems.append("%s values differ: %s vs %s" % (v, xv.ravel()[:5], yv.ravel()[:5]))
        if x.dtype != y.dtype:
            problems.append("%s dtype %s != %s" % (v, x.dtype, y.dtype))
        if dict(x.attrs) != dict(y.attrs):
            problems.append("%s attrs %s != %s" % (v, dict(x.attrs), dict(y.attrs)))
        for k in ("units", "calendar"):
            if v == "time" and x.encoding.get(k) != y.encoding.get(k):
                problems.append("time %s %s != %s" % (k, x.encoding.get(k), y.encoding.get(k)))
    sys.stdout.write(json.dumps({"problems": problems}))

if sys.argv[1] == "write":
    for cal in ("noleap", "360_day", "standard", "proleptic_gregorian", "all_leap", "julian", "366_day"):
        make(cal, sys.argv[2] + "/" + cal + ".zarr")
    sys.stdout.write(json.dumps({"ok": True}))
else:
    check(sys.argv[2], sys.argv[3])
