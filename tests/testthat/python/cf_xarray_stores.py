import sys, json
import numpy as np, pandas as pd, xarray as xr, cftime
out = sys.argv[1]
rng = np.random.default_rng(7)

def iso(v):
    if isinstance(v, cftime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(v, np.datetime64):
        return None if np.isnat(v) else str(np.datetime_as_string(v, unit="s"))
    return None

def flat(da):
    a = da.values
    f = a.reshape(-1, order="C")
    if a.dtype.kind == "M":
        return [iso(x) for x in f]
    if a.dtype.kind == "O":
        return [iso(x) for x in f]
    return [None if (isinstance(x, float) and x != x) else (float(x) if a.dtype.kind == "f" else int(x)) for x in f.tolist()]

def dump(path):
    ds = xr.open_zarr(path, consolidated=None)
    return {n: {"dims": list(v.dims), "data": flat(v), "dtype": v.dtype.str}
            for n, v in list(ds.variables.items())}

# with "read": only dump xarray's decoding of the store at `out`
if len(sys.argv) > 2 and sys.argv[2] == "read":
    sys.stdout.write(json.dumps(dump(out)))
    sys.exit(0)

stores = {}
# 1. packed int16 with NaN, float32, xarray's default int64 time (hours), chunked, consolidated
t = pd.date_range("2020-01-01", periods=8, freq="6H")
lat = np.array([50., 45., 40., 35., 30.]); lon = np.array([0., 10.3, 20.5, 30.1])
temp = 270 + 30 * rng.random((8, 5, 4)); temp[1, 2, 0] = np.nan; temp[7, 4, 3] = np.nan
ds = xr.Dataset({"temp": (("time", "lat", "lon"), temp, {"units": "K", "long_name": "air temperature"}),
                 "precip": (("time", "lat", "lon"), rng.random((8, 5, 4)).astype("float32"), {"units": "mm"})},
                coords={"time": t, "lat": lat, "lon": lon})
ds.temp.encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 285.0, "_FillValue": -32767, "chunks": (2, 2, 2)}
ds.precip.encoding = {"chunks": (4, 5, 2)}
ds.to_zarr(out + "/packed.zarr", mode="w", consolidated=True)
stores["packed"] = dump(out + "/packed.zarr")

# 2. noleap time in days, with bounds; 2-D coordinates; not consolidated
tn = xr.cftime_range("2001-01-01", periods=6, freq="MS", calendar="noleap")
tb = np.array([[tn[i], tn[i] + pd.Timedelta(days=28)] for i in range(6)], dtype=object)
y = np.arange(3); x = np.arange(4)
lat2 = 40 + y[:, None] + 0.1 * x[None, :]
lon2 = 5 + x[None, :] + 0.2 * y[:, None]
ds2 = xr.Dataset({"tas": (("time", "y", "x"), 280 + rng.random((6, 3, 4)), {"units": "K", "coordinates": "lat lon"}),
                  "time_bnds": (("time", "nv"), tb)},
                 coords={"time": ("time", tn, {"bounds": "time_bnds"}), "lat": (("y", "x"), lat2), "lon": (("y", "x"), lon2)})
ds2.time.encoding = {"units": "days since 2000-01-01", "calendar": "noleap", "dtype": "float64"}
ds2.time_bnds.encoding = {"units": "days since 2000-01-01", "calendar": "noleap"}
ds2.to_zarr(out + "/noleap.zarr", mode="w", consolidated=False)
stores["noleap"] = dump(out + "/noleap.zarr")

# 3. 360_day in hours; 4. standard calendar: seconds, days (whole), NaT
t3 = xr.cftime_range("1999-12-29", periods=5, freq="D", calendar="360_day")
ds3 = xr.Dataset({"v": (("time",), np.arange(5.0))}, coords={"time": t3})
ds3.time.encoding = {"units": "hours since 1999-12-01 06:00:00", "calendar": "360_day"}
ds3.to_zarr(out + "/d360.zarr", mode="w", consolidated=True)
stores["d360"] = dump(out + "/d360.zarr")

t4 = pd.to_datetime(["1999-12-31 23:59:59", "2000-01-01 00:00:01", "NaT", "2024-02-29 12:00:00"])
t5 = pd.to_datetime(["1900-01-01", "1970-01-01", "2000-02-29", "2100-03-01"])
ds4 = xr.Dataset({"ts": (("n",), t4), "td": (("n",), t5), "big": (("n",), pd.to_datetime(["1677-09-22", "2262-04-11", "2000-01-01", "1850-01-01"]))})
ds4.ts.encoding = {"units": "seconds since 2000-01-01"}
ds4.td.encoding = {"units": "days since 1900-01-01", "dtype": "int32"}
ds4.big.encoding = {"units": "microseconds since 1970-01-01", "dtype": "int64"}
ds4.to_zarr(out + "/std.zarr", mode="w", consolidated=True)
stores["std"] = dump(out + "/std.zarr")
# 5. _Unsigned bytes with a fill value, missing_value with packing
ds5 = xr.Dataset({"flags": (("n",), np.array([0, 200, 254, 255], dtype="u1")),
                  "mv": (("n",), np.array([1.5, np.nan, 3.0, 4.0]))})
ds5.flags.encoding = {"dtype": "i1", "_Unsigned": "true", "_FillValue": 255}
ds5.mv.encoding = {"dtype": "int16", "scale_factor": 0.5, "missing_value": -999, "_FillValue": -999}
ds5.to_zarr(out + "/unsigned.zarr", mode="w", consolidated=True)
stores["unsigned"] = dump(out + "/unsigned.zarr")
sys.stdout.write(json.dumps(stores))
