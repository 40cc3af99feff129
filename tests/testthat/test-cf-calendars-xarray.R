# Datasets of climate models (noleap and 360_day calendars, packed variables)
# written by xarray, read here, converted to a data frame or a stars object
# and written back with as_zarr(): xarray must read back what it wrote.

cf_calendar_stores <- local({
  made <- NULL
  function() {
    if (!is.null(made)) return(made)
    skip_on_cran()
    skip_without_xarray()
    require_or_skip(python_has("cftime"), "python3 with cftime (python3-cftime)")
    dir <- tempfile("cfcal")
    dir.create(dir)
    run_python(readLines(testthat::test_path("python", "cf_calendar_roundtrip.py")), c("write", dir))
    made <<- dir
    made
  }
})

# The differences xarray finds between the store it wrote and ours
xarray_differences <- function(src, back) {
  as.character(unlist(run_python(readLines(testthat::test_path("python", "cf_calendar_roundtrip.py")), c("check", src, back))$problems))
}

test_that("as_zarr() of as.data.frame() and st_as_stars() of an xarray dataset gives xarray its dataset back", {
  dir <- cf_calendar_stores()
  out <- withr::local_tempdir()
  for (cal in c("noleap", "360_day", "standard", "proleptic_gregorian", "all_leap", "julian", "366_day")) {
    src <- file.path(dir, paste0(cal, ".zarr"))
    ds <- zarr_dataset(src)
    df <- as.data.frame(ds)
    back <- file.path(out, paste0(cal, "-df.zarr"))
    as_zarr(df, location = back)
    expect_identical(xarray_differences(src, back), character(), info = cal)
    # row subsets keep what as_zarr() needs; missing rows are missing values
    back <- file.path(out, paste0(cal, "-rows.zarr"))
    z <- as_zarr(df[-1, ], location = back)
    expect_identical(z$root[["time"]]$attributes[c("calendar", "units")],
                     list(calendar = cal, units = "days since 2000-01-01"), info = cal)
    expect_true(is.na(z$root[["pr"]][1, 1, 1]))
    if (!requireNamespace("stars", quietly = TRUE)) next
    back <- file.path(out, paste0(cal, "-stars.zarr"))
    as_zarr(stars::st_as_stars(ds), location = back)
    expect_identical(xarray_differences(src, back), character(), info = cal)
    # Zarr v3 (xarray here reads v2 only): the same, read here
    z3 <- as_zarr(stars::st_as_stars(ds), format = 3)
    expect_identical(z3$root[["pr"]]$dimension_names, c("time", "lat", "lon"))
    expect_identical(z3$root[["time"]][], ds[["time"]][], info = cal)
    expect_identical(z3$root[["time"]]$attributes$calendar, cal)
    expect_identical(z3$root[["tas"]]$attributes$long_name, "Near-Surface Air Temperature")
    expect_identical(z3$root[["tas"]]$data_type$data_type, "float32")
    expect_identical(z3$root[["pr"]][decode = FALSE], ds[["pr"]][decode = FALSE])
  }
  # 360_day dates Gregorian does not have are written as the dates they are
  z <- as_zarr(as.data.frame(zarr_dataset(file.path(dir, "360_day.zarr"))))
  expect_identical(z$root[["time"]][decode = FALSE], c(416L, 417L, 418L, 419L))
  expect_identical(z$root[["time"]][]$as_timestamp()[4], "2001-02-30")
})

test_that("as_zarr() does not pack values changed out of the packed range, nor take stored values for decoded ones", {
  dir <- cf_calendar_stores()
  ds <- zarr_dataset(file.path(dir, "noleap.zarr"))
  df <- as.data.frame(ds)
  df$pr <- df$pr * 1000 # beyond int16 at scale 0.01
  z <- as_zarr(df)
  expect_identical(z$root[["pr"]]$data_type$data_type, "float64")
  expect_null(z$root[["pr"]]$attributes$scale_factor)
  expect_equal(z$root[["pr"]][], ds[["pr"]][] * 1000)
  expect_identical(z$root[["pr"]]$attributes$long_name, "precipitation")
  # stored values (decode = FALSE) are written as plain numbers
  raw <- as.data.frame(ds[["pr"]]$sel(decode = FALSE))
  expect_null(attr(raw, "zarr_cf"))
  zr <- as_zarr(raw)
  expect_identical(zr$root[["pr"]][], ds[["pr"]][decode = FALSE])
  expect_null(zr$root[["pr"]]$attributes$scale_factor)
})

test_that("rast() takes a dataset; noleap times that are Gregorian dates become time()", {
  skip_if_not_installed("terra")
  dir <- cf_calendar_stores()
  ds <- zarr_dataset(file.path(dir, "noleap.zarr"))
  r <- terra::rast(ds)
  days <- as.Date(c("2001-02-27", "2001-02-28", "2001-03-01", "2001-03-02"))
  expect_identical(terra::nlyr(r), 8)
  expect_identical(names(r), c(paste0("pr_", days), paste0("tas_", days)))
  expect_identical(terra::time(r), rep(days, 2))
  expect_identical(terra::units(r), rep(c("mm d-1", "K"), each = 4))
  # the first row is the northernmost latitude, the last Zarr row
  expect_equal(terra::values(r)[1:5, 5], ds[["tas"]][1, 3, ])
  rt <- terra::rast(ds, vars = "tas", time = c("2001-02-28", "2001-03-01"))
  expect_identical(terra::time(rt), days[2:3])
  expect_identical(terra::time(terra::rast(ds[["tas"]])), days)
  # February 30th is no Gregorian date: the layers are named, without time()
  r360 <- terra::rast(zarr_dataset(file.path(dir, "360_day.zarr")), vars = "tas")
  expect_identical(names(r360), paste0("tas_2001-02-", 27:30))
  expect_true(all(is.na(terra::time(r360))))
})

test_that("as_zarr() puts the columns of expand.grid() data frames in xarray's order, or in that of dims", {
  g <- expand.grid(lon = c(5, 7.5), lat = c(40, 45, 50), time = as.Date("2000-01-01") + 0:1)
  g$v <- seq_len(nrow(g))
  a <- as_zarr(g)$root[["v"]]
  expect_identical(a$dimension_names, c("time", "lat", "lon"))
  expect_identical(dim(a), c(2L, 3L, 2L))
  expect_identical(a[2, 3, 1], 11L) # time 2000-01-02, lat 50, lon 5
  expect_identical(a[], aperm(array(1:12, c(2, 3, 2)), 3:1))
  # dims chooses
  b <- as_zarr(g, dims = c("lon", "lat", "time"))$root[["v"]]
  expect_identical(b$dimension_names, c("lon", "lat", "time"))
  expect_identical(b[], array(1:12, c(2, 3, 2)))
  # columns that are not recognisably x and y keep their order
  h <- expand.grid(a = 1:2, b = 1:3)
  h$v <- seq_len(6) / 2
  expect_identical(as_zarr(h)$root[["v"]]$dimension_names, c("a", "b"))
  expect_identical(as_zarr(h)$root[["v"]][], matrix(seq_len(6) / 2, 2))
})

test_that("print() of a packed variable says what reads return", {
  z <- create_zarr()
  b <- define_array("int16", c(2, 3))
  b$dimension_names <- c("time", "lat")
  b$fill_value <- -32767L
  a <- z$root$add_array("t2m", b)
  a$set_attribute("scale_factor", 0.01)
  a$set_attribute("add_offset", 285)
  a$set_attribute("_FillValue", -32767L)
  a$set_attribute("units", "K")
  expect_output(print(a), "Data type  : int16 (R: integer)", fixed = TRUE)
  expect_output(print(a), "Reads as   : double (stored * 0.01 + 285; -32767 -> NA; units K)", fixed = TRUE)
  expect_output(print(zarr_dataset(z)), "t2m          (time, lat) int16 -> double [K]", fixed = TRUE)
  withr::local_options(zarr.decode_cf = FALSE)
  expect_false(any(grepl("Reads as", capture.output(print(a)))))
  withr::local_options(zarr.decode_cf = TRUE)
  tm <- z$root$add_array("time", define_array("int32", 2))
  tm$set_attribute("units", "days since 2000-01-01")
  tm$set_attribute("calendar", "noleap")
  # (v3's default fill value of int32 marks missing values)
  expect_output(print(tm), "Reads as   : CFTime or ISO 8601 strings (-2147483648 -> NA; days since 2000-01-01, calendar noleap)",
                fixed = TRUE)
  plain <- z$root$add_array("plain", define_array("float64", 2))
  expect_false(any(grepl("Reads as", capture.output(print(plain)))))
})
