# CF decoding of hand-made arrays: the cases xarray's defaults do not write.

cf_array <- function(g, name, dtype, values, attrs = list(), dims = NULL, fill = NULL, shape = length(values)) {
  b <- define_array(dtype, shape)
  if (!is.null(fill)) b$fill_value <- fill
  if (!is.null(dims)) b$dimension_names <- dims
  a <- g$add_array(name, b)
  a$write(values)
  for (n in names(attrs)) a$set_attribute(n, attrs[[n]])
  a
}

test_that("valid_range, valid_min/max (when asked) and missing_value vectors mark NA on the packed values", {
  g <- create_zarr()$root
  a <- cf_array(g, "v", "int16", c(-5L, 0L, 50L, 100L, 101L, -999L, -998L),
                list(valid_range = c(0, 100), missing_value = c(-999, -998), scale_factor = 0.5, add_offset = 1))
  expect_identical(a[decode = list(valid_range = TRUE)], c(NA, 1, 26, 51, NA, NA, NA))
  expect_identical(a$read(decode = list(valid_range = TRUE)), c(NA, 1, 26, 51, NA, NA, NA))
  expect_identical(a[decode = FALSE], c(-5L, 0L, 50L, 100L, 101L, -999L, -998L))
  b <- cf_array(g, "w", "float64", c(-1, 0, 10, 11), list(valid_min = 0, valid_max = 10))
  withr::with_options(list(zarr.decode_valid_range = TRUE), expect_identical(b[], c(NA, 0, 10, NA)))
  expect_identical(b[c(1, 4), decode = list(valid_range = TRUE)], c(NA_real_, NA_real_))
  # _FillValue in the attributes, and a Zarr fill value that marks missing
  # values, whether the engine maps it to NA or not
  f <- cf_array(g, "f", "int32", c(1L, -9999L, 7L, 3L), list(`_FillValue` = 7, scale_factor = 2), fill = -9999L)
  expect_identical(f[], c(2, NA, NA, 6))
  expect_identical(f[fill_as_na = FALSE], c(2, NA, NA, 6))
  # a fill value of zero stays an ordinary value, decoded or not
  zf <- cf_array(g, "zf", "int16", c(0L, 2L), list(scale_factor = 10), fill = 0L)
  expect_identical(zf[], c(0, 20))
})

test_that("_Unsigned reinterprets the stored integers, before the fill value and packing", {
  g <- create_zarr()$root
  a <- cf_array(g, "u", "int8", c(-1L, -128L, 0L, 127L), list(`_Unsigned` = "true", `_FillValue` = -1), fill = 0L)
  expect_identical(a[], c(NA, 128, 0, 127))
  b <- cf_array(g, "u2", "int16", c(-1L, -2L, 5L), list(`_Unsigned` = "true", scale_factor = 2), fill = 0L)
  expect_identical(b[], c(131070, 131068, 10))
  s <- cf_array(g, "s", "uint8", c(255L, 128L, 1L), list(`_Unsigned` = "false"), fill = 0L)
  expect_identical(s[], c(-1, -128, 1))
})

test_that("arrays without CF attributes read exactly as before, decode or not", {
  g <- create_zarr()$root
  for (dt in c("int8", "int32", "uint16", "float32", "float64")) {
    a <- cf_array(g, dt, dt, c(0L, 1L, 2L), list(units = "m", long_name = "x"), shape = 3)
    expect_identical(a[], a[decode = FALSE], info = dt)
    expect_identical(a$read(), a$read(decode = FALSE), info = dt)
  }
  s <- cf_array(g, "str", "string", c("a", "b"), list(units = "days since 2000-01-01"))
  expect_identical(s[], c("a", "b"))
  a <- g[["int32"]]
  a$raw_read <- TRUE
  a$set_attribute("scale_factor", 2)
  expect_identical(a[], c(0L, 1L, 2L))
})

test_that("time units: every unit, an origin with a time and a zone offset, Date for whole days", {
  g <- create_zarr()$root
  d <- cf_array(g, "d", "int32", c(0L, 31L, NA), list(units = "days since 2000-01-01"))
  expect_identical(d[], as.Date(c("2000-01-01", "2000-02-01", NA)))
  h <- cf_array(g, "h", "float64", c(0, 1.5), list(units = "hours since 2000-01-01T06:00:00+06:00"))
  expect_identical(format(h[], "%Y-%m-%d %H:%M:%S", tz = "UTC"), c("2000-01-01 00:00:00", "2000-01-01 01:30:00"))
  m <- cf_array(g, "m", "float64", c(0, 90), list(units = "minutes since 1999-12-31 23:00 -01:30"))
  expect_identical(format(m[], "%Y-%m-%d %H:%M", tz = "UTC"), c("2000-01-01 00:30", "2000-01-01 02:00"))
  s <- cf_array(g, "s", "float64", c(0.5, 86400), list(units = "seconds since 1970-1-1 0:0:0"))
  expect_equal(as.numeric(s[]), c(0.5, 86400))
  # a half day: POSIXct, not Date
  hd <- cf_array(g, "hd", "float64", c(0, 0.5), list(units = "days since 2000-01-01"))
  expect_s3_class(hd[], "POSIXct")
  skip_if_not_installed("bit64")
  ms <- cf_array(g, "ms", "int64", bit64::as.integer64(c("1700000000123", "-86400000")),
                 list(units = "milliseconds since 1970-01-01"))
  expect_equal(as.numeric(ms[]), c(1700000000.123, -86400), tolerance = 1e-12)
  # int64 counts beyond 2^53 decoded from their exact value: whole seconds first
  ns <- cf_array(g, "ns", "int64", bit64::as.integer64("9007199254740993001"),
                 list(units = "nanoseconds since 1970-01-01"))
  expect_equal(as.numeric(ns[]) - 9007199254, 0.740993001, tolerance = 1e-6)
  bad <- cf_array(g, "bad", "float64", 1, list(units = "days since yesterday"))
  expect_error(bad[], class = "zarr_error_value", regexp = "decode = FALSE.*bad")
  expect_identical(bad[decode = FALSE], 1)
  cal <- cf_array(g, "cal", "float64", 1, list(units = "days since 2000-01-01", calendar = "mayan"))
  expect_error(cal[], class = "zarr_error_value", regexp = "unknown calendar 'mayan'")
})

test_that("calendars: julian, standard before 1582, all_leap, none; strings without CFtime", {
  skip_if_not_installed("CFtime")
  g <- create_zarr()$root
  j <- cf_array(g, "j", "float64", c(0, 59, 60), list(units = "days since 2000-01-01", calendar = "julian"))
  expect_s3_class(j[], "CFTime")
  expect_identical(j[]$as_timestamp(), c("2000-01-01", "2000-02-29", "2000-03-01"))
  st <- cf_array(g, "st", "int32", 0:5, list(units = "days since 1582-10-01", calendar = "standard"))
  expect_identical(st[]$as_timestamp(), c("1582-10-01", "1582-10-02", "1582-10-03", "1582-10-04", "1582-10-15", "1582-10-16"))
  # a standard calendar whose dates are all Gregorian: POSIXct, with the Julian origin counted right
  st2 <- cf_array(g, "st2", "int32", c(10L, 11L), list(units = "days since 1582-10-01", calendar = "gregorian"))
  expect_identical(st2[], as.Date(c("1582-10-21", "1582-10-22")))
  al <- cf_array(g, "al", "float64", c(59, 365), list(units = "days since 2001-01-01", calendar = "366_day"))
  expect_identical(al[]$as_timestamp(), c("2001-02-29", "2001-12-31"))
  # missing times in another calendar: strings (CFtime takes no NA)
  na <- cf_array(g, "na", "float64", c(0, NaN, 1), list(units = "days since 2000-02-29", calendar = "julian"))
  expect_identical(na[], c("2000-02-29T00:00:00", NA, "2000-03-01T00:00:00"))
  nn <- cf_array(g, "nn", "float64", c(1, 2), list(units = "days since 2001-01-01", calendar = "none"))
  expect_identical(nn[], c(1, 2))
  # the strings given without CFtime (and for arrays of more dimensions)
  f <- zarr:::cf_format_time
  days <- zarr:::cf_cal_days
  expect_identical(f(days(2001, 2, 30, "360_day") * 86400 + 3661, "360_day"), "2001-02-30T01:01:01")
  expect_identical(f(days(2000, 2, 29, "julian") * 86400, "julian"), "2000-02-29T00:00:00")
  expect_identical(f(c(days(1582, 10, 4, "standard"), days(1582, 10, 15, "standard")) * 86400, "standard"),
                   c("1582-10-04T00:00:00", "1582-10-15T00:00:00"))
  b <- cf_array(g, "b", "float64", c(0, 30, 29, 59), list(units = "days since 2000-01-01", calendar = "noleap"),
                shape = c(2, 2))
  expect_identical(b[], matrix(c("2000-01-01T00:00:00", "2000-01-31T00:00:00", "2000-01-30T00:00:00",
                                 "2000-03-01T00:00:00"), 2))
})

test_that("v3 dimension_names name the coordinates; sel(), isel(), datasets and as.data.frame()", {
  z <- create_zarr()
  g <- z$root
  cf_array(g, "lat", "float64", c(-10, 0, 10), dims = "lat")
  cf_array(g, "time", "int32", 0:3, list(units = "days since 2020-01-01"), dims = "time")
  v <- cf_array(g, "t2m", "int16", 1:12, list(scale_factor = 0.5, units = "degC"), dims = c("lat", "time"),
                shape = c(3, 4))
  expect_identical(v$coords()$time, as.Date("2020-01-01") + 0:3)
  # a coordinate variable is its own coordinate
  expect_identical(g[["time"]]$sel(time = c("2020-01-02", "2020-01-03"))$values, structure(as.Date(c("2020-01-02", "2020-01-03")), dim = 2L))
  # dates keep their class through [ and its drop
  expect_identical(v$coords()$time[2:3], g[["time"]][2:3])
  s <- v$isel(time = 2:3)
  expect_identical(s$values, matrix(1:12, 3)[, 2:3] * 0.5)
  expect_identical(s$coords$time, as.Date(c("2020-01-02", "2020-01-03")))
  s2 <- v$sel(lat = 4, method = "nearest", time = "2020-01-04")
  expect_identical(as.vector(s2$values), 5.5)
  expect_identical(dimnames(as.array(s2)), list(lat = "0", time = "2020-01-04"))
  df <- as.data.frame(v)
  expect_identical(df$lat, rep(c(-10, 0, 10), 4))
  expect_identical(df$time, rep(as.Date("2020-01-01") + 0:3, each = 3))
  expect_identical(df$t2m, (1:12) * 0.5)
  ds <- zarr_dataset(z)
  expect_identical(ds$data_vars, "t2m")
  expect_identical(names(ds), c("lat", "t2m", "time"))
  expect_identical(as.data.frame(ds), df)
  expect_output(print(ds), "t2m")
  expect_output(print(s2), "decoded")
})

test_that("resizing a packed array keeps its stored values; as.array() of other calendars gives strings", {
  g <- create_zarr()$root
  b <- define_array("int16", 10)
  b$chunk_shape <- 4
  a <- g$add_array("p", b)
  a$write(1:10)
  a$set_attribute("scale_factor", 0.5)
  a$resize(6) # the cut chunk is read and written back: stored values, not decoded ones
  expect_identical(a[decode = FALSE], 1:6)
  expect_identical(a[], (1:6) * 0.5)
  skip_if_not_installed("CFtime")
  t <- cf_array(g, "t", "float64", c(0, 1), list(units = "days since 2000-02-29", calendar = "all_leap"))
  expect_identical(as.array(t), array(c("2000-02-29", "2000-03-01")))
})

test_that("valid_min, valid_max and valid_range mask nothing by default, as in xarray, GDAL and terra", {
  g <- create_zarr()$root
  a <- cf_array(g, "v", "int16", c(-5L, 0L, 50L, 101L, -999L),
                list(valid_range = c(0, 100), missing_value = -999, scale_factor = 0.5, add_offset = 1))
  expect_identical(a[], c(-1.5, 1, 26, 51.5, NA))
  expect_identical(a[c(1, 4)], c(-1.5, 51.5)) # points read through read_points()
  expect_identical(as.vector(a$sel()$values), c(-1.5, 1, 26, 51.5, NA))
  expect_identical(a[decode = list(valid_range = FALSE)], c(-1.5, 1, 26, 51.5, NA))
  withr::with_options(list(zarr.decode_valid_range = TRUE), {
    expect_identical(a[], c(NA, 1, 26, NA, NA))
    expect_identical(a[decode = list(valid_range = FALSE)], c(-1.5, 1, 26, 51.5, NA))
    expect_identical(as.vector(a$sel()$values), c(NA, 1, 26, NA, NA))
  })
  # only a valid range: no decoding at all, the stored integers
  b <- cf_array(g, "b", "uint8", c(0L, 7L, 255L), list(valid_min = 1, valid_max = 254), fill = 0L)
  expect_identical(b[], c(0L, 7L, 255L))
  expect_identical(b[decode = list(valid_range = TRUE)], c(NA, 7L, NA))
  expect_error(b[decode = list(valid = TRUE)], class = "zarr_error_argument")
  expect_error(b[decode = list(valid_range = NA)], class = "zarr_error_argument")
})
