# CF decoding against xarray (Debian's python3-xarray, with cftime): xarray
# writes CF datasets, then decodes them; the values, times and coordinates
# this package decodes from the same stores must equal xarray's.

cf_xarray_stores <- local({
  made <- NULL
  function() {
    if (!is.null(made)) return(made)
    skip_without_xarray()
    require_or_skip(python_has("cftime"), "python3 with cftime (python3-cftime)")
    dir <- tempfile("cfx")
    dir.create(dir)
    code <- readLines(testthat::test_path("python", "cf_xarray_stores.py"))
    made <<- list(dir = dir, dump = run_python(code, dir))
    made
  }
})

# values in C order, times as ISO strings: the form of the Python dump
cf_c_order <- function(v, shape) {
  if (inherits(v, "CFTime")) {
    s <- v$as_timestamp()
    s <- ifelse(nchar(s) == 10L, paste0(s, "T00:00:00"), s)
    if (length(shape) > 1L) s <- as.vector(aperm(array(s, shape), rev(seq_along(shape))))
    return(s)
  }
  if (length(shape) > 1L) {
    d <- dim(v)
    v <- v[aperm(array(seq_along(v), d), rev(seq_along(d)))]
  }
  if (inherits(v, "Date")) return(ifelse(is.na(v), NA_character_, paste0(format(v), "T00:00:00")))
  if (inherits(v, "POSIXct")) return(ifelse(is.na(v), NA_character_, format(v, "%Y-%m-%dT%H:%M:%S", tz = "UTC")))
  as.vector(v)
}


test_that("every variable xarray writes reads decoded as xarray decodes it", {
  st <- cf_xarray_stores()
  for (store in names(st$dump)) {
    z <- open_zarr(file.path(st$dir, paste0(store, ".zarr")), read_only = TRUE)
    for (v in names(st$dump[[store]])) {
      entry <- st$dump[[store]][[v]]
      a <- z$root[[v]]
      info <- paste(store, v)
      got <- cf_c_order(a$read(), a$shape)
      want <- cf_py(entry)
      expect_identical(is.na(got), is.na(want), info = info)
      if (is.character(want)) expect_identical(got, want, info = info)
      else expect_equal(got, want, tolerance = 1e-6, info = info) # xarray unpacks int16 in float32
      expect_identical(a$dimension_names, unlist(entry$dims), info = info)
    }
  }
})

test_that("xarray's _Unsigned bytes and missing_value decode as xarray decodes them", {
  st <- cf_xarray_stores()
  z <- open_zarr(file.path(st$dir, "unsigned.zarr"), read_only = TRUE)
  expect_identical(z[["/flags"]][], c(0, 200, 254, NA))
  expect_identical(z[["/flags"]][decode = FALSE], c(0L, -56L, -2L, NA))
  expect_identical(z[["/mv"]][], c(1.5, NA, 3, 4))
})

test_that("xarray's packed int16 with NaN, default int64 time and float32 decode to their values", {
  st <- cf_xarray_stores()
  z <- open_zarr(file.path(st$dir, "packed.zarr"), read_only = TRUE)
  temp <- z$root[["temp"]]
  d <- st$dump$packed
  # packed: the unpacked doubles; raw: the stored int16 codes
  expect_type(temp[], "double")
  expect_identical(typeof(temp[decode = FALSE]), "integer")
  expect_true(is.na(temp[2, 3, 1]))
  raw <- temp$read(decode = FALSE)
  expect_equal(temp$read(), raw * 0.01 + 285)
  withr::with_options(list(zarr.decode_cf = FALSE), expect_identical(temp[], raw))
  # time: xarray's int64 "hours since" reads as POSIXct, exactly
  tm <- z$root[["time"]]
  expect_identical(tm$data_type$data_type, "int64")
  expect_s3_class(tm[], "POSIXct")
  expect_identical(format(tm[], "%Y-%m-%d %H:%M", tz = "UTC"),
                   format(seq(as.POSIXct("2020-01-01", tz = "UTC"), by = "6 hours", length.out = 8), "%Y-%m-%d %H:%M"))
  expect_identical(as.character(z$root[["time"]][decode = FALSE]), as.character(seq(0, 42, by = 6)))
  # coordinates of each dimension, decoded
  cs <- temp$coords()
  expect_named(cs, c("time", "lat", "lon"))
  expect_identical(cs$time, tm[])
  expect_identical(cs$lat, c(50, 45, 40, 35, 30))
  expect_equal(temp$cf()$units, "K")
  expect_true(temp$cf()$packed)
  expect_false(temp$cf()$time)
})

test_that("noleap and 360_day times, 2-d coordinates and bounds as xarray has them", {
  skip_if_not_installed("CFtime")
  st <- cf_xarray_stores()
  z <- open_zarr(file.path(st$dir, "noleap.zarr"), read_only = TRUE)
  tas <- z$root[["tas"]]
  tt <- tas$coords()$time
  expect_s3_class(tt, "CFTime")
  expect_identical(tt$cal$name, "noleap")
  expect_identical(tt$as_timestamp(), sprintf("2001-%02d-01", 1:6))
  expect_null(tas$coords()$y)
  expect_identical(tas$cf()$coordinates, c("lat", "lon"))
  expect_identical(z$root[["time"]]$cf()$bounds, "time_bnds")
  ds <- zarr_dataset(z)
  expect_setequal(ds$coord_names, c("lat", "lon", "time", "time_bnds"))
  expect_identical(ds$data_vars, "tas")
  expect_equal(z$root[["lat"]][], matrix(unlist(st$dump$noleap$lat$data), 3, 4, byrow = TRUE))
  # 360-day calendar: 1999-12-30 exists, 2000-02-30 too
  d360 <- open_zarr(file.path(st$dir, "d360.zarr"), read_only = TRUE)
  t3 <- d360$root[["time"]][]
  expect_identical(t3$as_timestamp(), c("1999-12-29", "1999-12-30", "2000-01-01", "2000-01-02", "2000-01-03"))
  s <- d360$root[["v"]]$sel(time = c("1999-12-30", "2000-01-02"))
  expect_identical(as.vector(s$values), c(1, 2, 3))
  expect_identical(s$coords$time$as_timestamp(), c("1999-12-30", "2000-01-01", "2000-01-02"))
})

test_that("selection by coordinate values reads only the chunks under it", {
  withr::local_options(zarr.chunk_cache_bytes = 0) # requests counted: none served by the cache
  st <- cf_xarray_stores()
  z <- open_zarr(file.path(st$dir, "packed.zarr"), read_only = TRUE)
  temp <- z$root[["temp"]] # chunks 2 x 2 x 2 of 8 x 5 x 4
  full <- temp[]
  before <- z$store$io_stats()
  s <- temp$sel(time = c("2020-01-01 06:00", "2020-01-01 12:00"), lat = c(36, 46), lon = 10, method = "nearest")
  used <- z$store$io_stats() - before
  # 4 chunks of temp (times 2-3 lie in two chunks, lats 45 and 40 in two,
  # lon 10.3 in one) and one chunk of each coordinate array
  expect_identical(used[["requests"]], 4 + 3)
  expect_identical(s$values, full[2:3, 2:3, 2, drop = FALSE])
  expect_identical(s$index, list(time = c(2, 3), lat = c(2, 3), lon = 2))
  expect_equal(s$coords$lat, c(45, 40))
  expect_equal(s$coords$lon, 10.3)
  # ranges in either order and direction, Date and POSIXct bounds, exact values
  s2 <- temp$sel(lat = c(50, 40), time = as.POSIXct(c("2020-01-02 18:00", "2020-01-02 06:00"), tz = "UTC"))
  expect_identical(s2$index$lat, c(1, 2, 3))
  expect_identical(s2$index$time, c(6, 7, 8))
  expect_identical(temp$sel(time = as.Date("2020-01-02"))$index$time, 5)
  expect_identical(temp$sel(lon = 20.5)$index$lon, 3)
  expect_error(temp$sel(lon = 20), class = "zarr_error_index")
  expect_error(temp$sel(depth = 1), class = "zarr_error_index")
  # long format
  df <- as.data.frame(s)
  expect_named(df, c("time", "lat", "lon", "temp"))
  expect_s3_class(df$time, "POSIXct")
  expect_identical(df$temp, as.vector(full[2:3, 2:3, 2]))
  expect_identical(nrow(as.data.frame(temp)), 160L)
})

test_that("a dataset gives its variables decoded, and as.data.frame() one column per variable", {
  st <- cf_xarray_stores()
  ds <- zarr_dataset(file.path(st$dir, "packed.zarr"))
  expect_identical(sort(ds$data_vars), c("precip", "temp"))
  expect_identical(sort(ds$coord_names), c("lat", "lon", "time"))
  expect_s3_class(ds$coords()$time, "POSIXct")
  df <- as.data.frame(ds)
  expect_identical(nrow(df), 8L * 5L * 4L)
  expect_setequal(names(df), c("time", "lat", "lon", "precip", "temp"))
  temp <- ds[["temp"]][]
  expect_identical(df$temp, as.vector(temp))
  # row for time 3, lat 4, lon 2: the element [3, 4, 2]
  r <- df$time == ds$coords()$time[3] & df$lat == 35 & df$lon == 10.3
  expect_identical(df$temp[r], temp[3, 4, 2])
  dsel <- as.data.frame(ds, lat = 45, lon = c(0, 10.3))
  expect_identical(nrow(dsel), 8L * 2L)
  expect_true(all(dsel$lat == 45))
})

test_that("a CF dataset written by this package (v2, attributes set by hand) reads in xarray as here", {
  skip_without_xarray()
  require_or_skip(python_has("cftime"), "python3 with cftime (python3-cftime)")
  path <- tempfile(fileext = ".zarr")
  withr::local_options(zarr.format = 2)
  z <- create_zarr(path)
  add <- function(name, dtype, dims, shape, values, attrs = list(), fill = NULL) {
    b <- define_array(dtype, shape)
    b$chunk_shape <- pmin(shape, 3)
    b$dimension_names <- dims
    if (!is.null(fill)) b$fill_value <- fill
    a <- z$root$add_array(name, b)
    a$write(values)
    for (n in names(attrs)) a$set_attribute(n, attrs[[n]])
  }
  add("time", "int64", "time", 4, c(0, 6, 12, 30), list(units = "hours since 2000-01-01 06:00", calendar = "standard"))
  add("day", "float64", "time", 4, c(0, 58, 59, 360), list(units = "days since 1999-12-30", calendar = "360_day"))
  add("lat", "float64", "lat", 5, c(40, 30, 20, 10, 0))
  codes <- matrix(c(-32767L, 1:19), 4, 5)
  add("t", "int16", c("time", "lat"), c(4, 5), codes, list(scale_factor = 0.25, add_offset = 10, units = "K"),
      fill = -32767L)
  zarr_consolidate(z)
  py <- run_python(readLines(testthat::test_path("python", "cf_xarray_stores.py")), c(path, "read"))
  zz <- open_zarr(path, read_only = TRUE)
  for (v in names(py)) {
    a <- zz$root[[v]]
    got <- cf_c_order(a$read(), a$shape)
    want <- cf_py(py[[v]])
    if (is.character(want)) expect_identical(got, want, info = v) else expect_equal(got, want, info = v)
  }
  expect_identical(cf_py(py$day), c("1999-12-30T00:00:00", "2000-02-28T00:00:00", "2000-02-29T00:00:00", "2000-12-30T00:00:00"))
  expect_true(is.na(zz$root[["t"]][1, 1]))
})

test_that("as.data.frame() of a dataset with 2-d coordinates has the columns and values of xarray's to_dataframe()", {
  skip_without_xarray()
  dir <- withr::local_tempdir()
  py <- run_python(c(
    "import sys, json, numpy as np, xarray as xr",
    "p = sys.argv[1] + '/aux.zarr'",
    "y, x = np.arange(3), np.arange(4)",
    "lat = 40 + np.arange(12, dtype='float64').reshape(3, 4) / 10",
    "lon = -5 + np.arange(12, dtype='float64').reshape(3, 4) / 100",
    "sst = np.arange(12, dtype='float64').reshape(3, 4) * 1.5",
    "ds = xr.Dataset({'sst': (('y', 'x'), sst, {'units': 'degC'})},",
    "                coords={'y': y, 'x': x, 'nav_lat': (('y', 'x'), lat), 'nav_lon': (('y', 'x'), lon)})",
    "ds.to_zarr(p, mode='w', consolidated=True)",
    "df = xr.open_zarr(p).to_dataframe().reset_index()",
    "print(json.dumps({'columns': list(df.columns), 'rows': {c: df[c].tolist() for c in df.columns}}))"
  ), dir)
  ds <- zarr_dataset(open_zarr(file.path(dir, "aux.zarr"), read_only = TRUE))
  df <- as.data.frame(ds)
  expect_setequal(names(df), unlist(py$columns))
  # xarray's rows run the last dimension fastest, R's the first: match by (y, x)
  key_r <- paste(df$y, df$x)
  key_py <- paste(unlist(py$rows$y), unlist(py$rows$x))
  o <- match(key_py, key_r)
  expect_false(anyNA(o))
  for (col in c("nav_lat", "nav_lon", "sst")) expect_equal(df[[col]][o], unlist(py$rows[[col]]), label = col)
})
