# Converters to stars and terra, and datasets written for xarray: against
# stars::read_ncdf() and terra reading the same data as netCDF-4, and
# xarray reading what R writes.

# The same CF dataset written by xarray as Zarr (grid.zarr) and netCDF-4 (grid.nc)
cf_convert_stores <- local({
  made <- NULL
  function() {
    if (!is.null(made)) return(made)
    skip_without_xarray()
    require_or_skip(python_has("netCDF4"), "python3 with netCDF4 (python3-netcdf4)")
    dir <- tempfile("cfc")
    dir.create(dir)
    run_python(readLines(testthat::test_path("python", "cf_convert_stores.py")), dir)
    made <<- dir
    made
  }
})

# xarray's decoding of a store, as the cf helper's script dumps it
xarray_dump <- function(path) {
  require_or_skip(python_has("cftime"), "python3 with cftime (python3-cftime)")
  run_python(readLines(testthat::test_path("python", "cf_xarray_stores.py")), c(path, "read"))
}

# A small grid made here: v(time, lat, lon), latitudes increasing
small_grid <- function(lat = c(10, 20, 30)) {
  z <- create_zarr()
  add <- function(name, dtype, shape, dims, values, attrs = list()) {
    b <- define_array(dtype, shape)
    b$dimension_names <- dims
    a <- z$root$add_array(name, b)
    for (k in names(attrs)) a$set_attribute(k, attrs[[k]])
    a$write(values)
    a
  }
  add("time", "int32", 2, "time", as.Date(c("2000-01-01", "2000-01-02")), list(units = "days since 2000-01-01"))
  add("lat", "float64", 3, "lat", lat, list(units = "degrees_north"))
  add("lon", "float64", 4, "lon", c(100, 101, 102, 103), list(units = "degrees_east"))
  v <- array(seq_len(24) / 2, c(2, 3, 4))
  add("v", "int16", c(2, 3, 4), c("time", "lat", "lon"), v,
      list(scale_factor = 0.5, add_offset = 0, `_FillValue` = -1, units = "m"))
  list(z = z, v = v)
}

test_that("st_as_stars() puts x, y, then time, with coordinates, units and values", {
  skip_if_not_installed("stars")
  g <- small_grid()
  a <- g$z$root[["v"]]
  s <- stars::st_as_stars(a)
  d <- stars::st_dimensions(s)
  expect_identical(names(d), c("lon", "lat", "time"))
  expect_equal(as.vector(units::drop_units(s[[1]])), as.vector(aperm(g$v, 3:1)))
  expect_equal(d$lon$offset, 99.5)
  expect_equal(d$lon$delta, 1)
  expect_equal(d$lat$offset, 5)
  expect_equal(d$lat$delta, 10)
  expect_identical(stars::st_get_dimension_values(s, "time"), as.Date(c("2000-01-01", "2000-01-02")))
  expect_identical(as.character(units::deparse_unit(s[[1]])), "m")
  # a selection by coordinates first; a zarr_cf_data; a dataset
  s2 <- stars::st_as_stars(a, lat = c(15, 30), time = "2000-01-02")
  expect_identical(dim(s2), c(lon = 4L, lat = 2L, time = 1L))
  expect_equal(as.vector(units::drop_units(s2[[1]])), as.vector(aperm(g$v[2, 2:3, , drop = FALSE], 3:1)))
  expect_identical(dim(stars::st_as_stars(a$isel(lon = 2))), c(lon = 1L, lat = 3L, time = 2L))
  sd <- stars::st_as_stars(zarr_dataset(g$z))
  expect_identical(names(sd), "v")
  expect_equal(as.vector(units::drop_units(sd[[1]])), as.vector(aperm(g$v, 3:1)))
})

test_that("rast() is north up, with extent, layers, time and units", {
  skip_if_not_installed("terra")
  g <- small_grid()
  r <- terra::rast(g$z$root[["v"]])
  expect_equal(dim(r), c(3, 4, 2))
  expect_equal(as.vector(terra::ext(r)), c(xmin = 99.5, xmax = 103.5, ymin = 5, ymax = 35))
  expect_identical(terra::time(r), as.Date(c("2000-01-01", "2000-01-02")))
  expect_identical(names(r), c("v_2000-01-01", "v_2000-01-02"))
  # the first row is the northernmost latitude (30), the last Zarr row
  expect_equal(terra::values(r)[1:4, 1], g$v[1, 3, ])
  expect_equal(terra::values(r)[9:12, 2], g$v[2, 1, ])
  expect_identical(terra::units(r), c("m", "m"))
  r2 <- terra::rast(g$z$root[["v"]]$sel(time = "2000-01-02"))
  expect_equal(dim(r2), c(3, 4, 1))
  # 2-d, without coordinate arrays (the last Zarr dimension is x, the first
  # row stays on top, as an image), and longitudes decreasing
  m <- create_zarr()$root$add_array("m", define_array("float64", c(2, 3)))
  m$write(matrix(1:6, 2))
  rm <- terra::rast(m)
  expect_equal(dim(rm), c(2, 3, 1))
  expect_equal(terra::values(rm)[, 1], c(1, 3, 5, 2, 4, 6))
  w <- small_grid()
  w$z$root[["lon"]]$write(c(103, 102, 101, 100))
  rw <- terra::rast(w$z$root[["v"]])
  expect_equal(terra::values(rw)[1:4, 1], rev(g$v[1, 3, ]))
  expect_error(terra::rast(create_zarr()$root$add_array("one", define_array("float64", 3))), class = "zarr_error_value")
  # irregular coordinates are refused
  h <- small_grid(lat = c(10, 20, 35))
  expect_error(terra::rast(h$z$root[["v"]]), class = "zarr_error_value")
})

test_that("as_zarr() of a data frame of a grid and of a stars object writes a dataset that reads back", {
  g <- small_grid()
  ds <- zarr_dataset(g$z)
  df <- as.data.frame(ds)
  z <- as_zarr(df)
  back <- zarr_dataset(z)
  expect_setequal(back$data_vars, "v")
  expect_identical(back[["v"]]$dimension_names, c("time", "lat", "lon"))
  expect_equal(back[["v"]][], ds[["v"]][])
  expect_identical(back[["time"]][], ds[["time"]][])
  # the source's time units, its packing and its other attributes
  expect_identical(back[["time"]]$attributes$units, "days since 2000-01-01")
  expect_identical(back[["v"]]$data_type$data_type, "int16")
  expect_identical(back[["v"]]$attributes$scale_factor, 0.5)
  expect_identical(back[["lat"]]$attributes$units, "degrees_north")
  # a data frame made here has no source: times in days from the first
  df0 <- df
  attr(df0, "zarr_cf") <- NULL
  expect_identical(as_zarr(df0)$root[["time"]]$attributes$units, "days since 2000-01-01 00:00:00")
  # packing, and a Zarr v2 store with _ARRAY_DIMENSIONS
  dir <- withr::local_tempdir()
  z2 <- as_zarr(df, location = file.path(dir, "p.zarr"), pack = list(v = list(scale_factor = 0.5, dtype = "int8")))
  expect_identical(z2$root[["v"]]$data_type$data_type, "int8")
  expect_identical(z2$root[["v"]][decode = FALSE], ds[["v"]][decode = FALSE])
  expect_true(file.exists(file.path(dir, "p.zarr", ".zmetadata")))
  expect_identical(jsonlite::fromJSON(file.path(dir, "p.zarr", "v", ".zattrs"))$`_ARRAY_DIMENSIONS`,
                   c("time", "lat", "lon"))
  # rows missing from the grid read NA
  z3 <- as_zarr(df[-5, ])
  expect_true(is.na(z3$root[["v"]][][df$time[5] == ds[["time"]][], df$lat[5] == c(10, 20, 30), df$lon[5] == 100:103]))
  expect_error(as_zarr(rbind(df, df)), class = "zarr_error_value")
  skip_if_not_installed("stars")
  s <- stars::st_as_stars(ds)
  zs <- as_zarr(s, format = 3)
  expect_equal(zarr_dataset(zs)[["v"]][], ds[["v"]][])
  expect_identical(zs$root[["v"]]$dimension_names, c("time", "lat", "lon"))
  expect_identical(zs$root[["v"]]$attributes$units, "m")
  expect_identical(zs$root[["time"]][], ds[["time"]][])
  expect_identical(zs$root[["lat"]][], ds[["lat"]][])
})

test_that("st_as_stars() of xarray's Zarr store equals stars::read_ncdf() of the same netCDF-4 data", {
  skip_if_not_installed("stars")
  skip_if_not_installed("ncmeta")
  dir <- cf_convert_stores()
  ours <- stars::st_as_stars(zarr_dataset(file.path(dir, "grid.zarr")))
  nc <- suppressWarnings(suppressMessages(stars::read_ncdf(file.path(dir, "grid.nc"), var = "temp")))
  expect_identical(dim(ours), dim(nc))
  expect_identical(names(stars::st_dimensions(ours)), names(stars::st_dimensions(nc)))
  expect_equal(as.vector(units::drop_units(ours[[1]])), as.vector(units::drop_units(nc[[1]])), tolerance = 1e-9)
  expect_identical(as.character(units::deparse_unit(ours[[1]])), as.character(units::deparse_unit(nc[[1]])))
  for (d in c("lon", "lat")) {
    expect_equal(stars::st_dimensions(ours)[[d]]$offset, stars::st_dimensions(nc)[[d]]$offset, info = d)
    expect_equal(stars::st_dimensions(ours)[[d]]$delta, stars::st_dimensions(nc)[[d]]$delta, info = d)
    expect_equal(stars::st_get_dimension_values(ours, d), stars::st_get_dimension_values(nc, d), info = d)
  }
  expect_equal(as.POSIXct(stars::st_get_dimension_values(ours, "time")),
               stars::st_get_dimension_values(nc, "time"), ignore_attr = TRUE)
  # the CRS of the grid_mapping variable (read_ncdf() builds none from these attributes)
  expect_identical(sf::st_crs(ours)$epsg, 4326L)
})

test_that("rast() of xarray's Zarr store equals terra's reading of the same netCDF-4 data", {
  skip_if_not_installed("terra")
  dir <- cf_convert_stores()
  ours <- terra::rast(zarr_dataset(file.path(dir, "grid.zarr"))[["temp"]])
  nc <- terra::rast(file.path(dir, "grid.nc"))
  expect_identical(dim(ours), dim(nc))
  expect_equal(as.vector(terra::ext(ours)), as.vector(terra::ext(nc)))
  expect_equal(terra::res(ours), terra::res(nc))
  expect_equal(unname(terra::values(ours)), unname(terra::values(nc)), tolerance = 1e-6)
  expect_identical(terra::time(ours), terra::time(nc))
  expect_identical(terra::units(ours), terra::units(nc))
  expect_identical(terra::crs(ours, describe = TRUE)$code, terra::crs(nc, describe = TRUE)$code)
})

test_that("xarray reads what as_zarr() writes from stars and data frames as the data it came from", {
  skip_if_not_installed("stars")
  dir <- cf_convert_stores()
  ref <- xarray_dump(file.path(dir, "grid.zarr"))
  ds <- zarr_dataset(file.path(dir, "grid.zarr"))
  out <- withr::local_tempdir()
  as_zarr(stars::st_as_stars(ds), location = file.path(out, "s.zarr"),
          pack = list(temp = list(scale_factor = 0.01, add_offset = 285, dtype = "int16")))
  as_zarr(as.data.frame(ds), location = file.path(out, "d.zarr"))
  as_zarr(stars::st_as_stars(ds), location = file.path(out, "s3.zarr"), chunks = c(2, 3, 4))
  for (st in c("s", "d", "s3")) {
    got <- xarray_dump(file.path(out, paste0(st, ".zarr")))
    for (v in c("temp", "time", "lat", "lon")) {
      expect_identical(got[[v]]$dims, ref[[v]]$dims, info = paste(st, v))
      if (v == "time") expect_identical(got[[v]]$data, ref[[v]]$data, info = st)
      else expect_equal(cf_py(got[[v]]), cf_py(ref[[v]]), tolerance = 1e-6, info = paste(st, v))
    }
    # packed int16 (given, or as the source was) unpacks to float32 in xarray
    expect_identical(got$temp$dtype, "<f4", info = st)
  }
})

test_that("terra's rast() finds its zarr_array method when DelayedArray registered the class too", {
  skip_if_not_installed("terra")
  skip_if_not_installed("DelayedArray")
  loadNamespace("DelayedArray") # registers zarr_array for DelayedArray's S4 methods
  loadNamespace("terra")
  m <- methods::selectMethod(terra::rast, "zarr_array", optional = TRUE)
  expect_false(is.null(m))
  expect_identical(methods::extends("zarr_array", "zarr_object"), TRUE)
})
