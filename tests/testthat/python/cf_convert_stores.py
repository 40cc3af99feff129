# The same CF dataset as Zarr (xarray) and as netCDF-4 (xarray's netCDF4
# engine): packed int16 temperature with NaN on a regular lat/lon grid
# (latitudes decreasing, as most climate grids), daily times, a grid_mapping
# variable with crs_wkt. Prints {"ok": true}.
import sys, json
import numpy as np, pandas as pd, xarray as xr
out = sys.argv[1]
rng = np.random.default_rng(11)
t = pd.date_range("2021-03-01", periods=4, freq="D")
lat = 52.5 - 2.5 * np.arange(6)        # 6 values, decreasing
lon = np.arange(-10.0, 6.0, 2.0)          # 8 values
temp = 270 + 30 * rng.random((4, 6, 8)); temp[2, 1, 3] = np.nan
wkt = ('GEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,298.257223563,'
       'LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]],'
       'CS[ellipsoidal,2],AXIS["geodetic latitude (Lat)",north,ORDER[1],ANGLEUNIT["degree",0.0174532925199433]],'
       'AXIS["geodetic longitude (Lon)",east,ORDER[2],ANGLEUNIT["degree",0.0174532925199433]],ID["EPSG",4326]]')
ds = xr.Dataset({"temp": (("time", "lat", "lon"), temp, {"units": "K", "long_name": "air temperature",
                                                          "grid_mapping": "crs"}),
                 "crs": ((), np.int32(0), {"grid_mapping_name": "latitude_longitude", "crs_wkt": wkt,
                                          "spatial_ref": wkt})},
                coords={"time": t, "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
                        "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"})})
enc = {"temp": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 285.0, "_FillValue": -32767},
       "time": {"units": "days since 2021-01-01", "dtype": "int32"}}
ds.to_zarr(out + "/grid.zarr", mode="w", consolidated=True, encoding=enc)
ds.to_netcdf(out + "/grid.nc", engine="netcdf4", encoding=enc)
sys.stdout.write(json.dumps({"ok": True}))
