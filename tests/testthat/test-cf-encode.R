# CF encoding on write: the inverse of decoding, so that a decoded read
# written back stores the same codes.

enc_array <- function(g, name, dtype, shape, attrs = list(), fill = NULL, dims = NULL) {
  b <- define_array(dtype, shape)
  if (!is.null(fill)) b$fill_value <- fill
  if (!is.null(dims)) b$dimension_names <- dims
  a <- g$add_array(name, b)
  for (n in names(attrs)) a$set_attribute(n, attrs[[n]])
  a
}

test_that("packed values are encoded as xarray does: rounded codes, NA as _FillValue", {
  g <- create_zarr()$root
  a <- enc_array(g, "t", "int16", c(2, 3), list(scale_factor = 0.01, add_offset = 273.15, `_FillValue` = -32767))
  v <- matrix(c(273.15, 280.004, NA, 250.126, NaN, 300), 2)
  a$write(v)
  expect_identical(a[decode = FALSE], matrix(c(0L, 685L, -32767L, -2302L, -32767L, 2685L), 2))
  expect_equal(a[], matrix(c(273.15, 280.00, NA, 250.13, NA, 300), 2), tolerance = 1e-12)
  # `[<-` encodes too, and a decoded read written back stores the same codes
  a[1, 2] <- 260
  expect_identical(a[1, 2, decode = FALSE], -1315L)
  raw <- a[decode = FALSE]
  a[] <- a[]
  expect_identical(a[decode = FALSE], raw)
  a$write(a$read())
  expect_identical(a[decode = FALSE], raw)
  # encode = FALSE (and the option, and raw_read) write stored values
  a[1, 1, encode = FALSE] <- 5L
  expect_identical(a[1, 1, decode = FALSE], 5L)
  a$write(matrix(1:6, 2), encode = FALSE)
  expect_identical(a[decode = FALSE], matrix(1:6, 2))
  withr::with_options(list(zarr.decode_cf = FALSE), a[2, 3] <- 9L)
  expect_identical(a[2, 3, decode = FALSE], 9L)
  a$raw_read <- TRUE
  a[2, 2] <- 7L
  a$raw_read <- FALSE
  expect_identical(a[2, 2, decode = FALSE], 7L)
})

test_that("_Unsigned, missing_value and a Zarr fill value that marks missing values", {
  g <- create_zarr()$root
  u <- enc_array(g, "u", "int8", 4, list(`_Unsigned` = "true", `_FillValue` = -1), fill = 0L)
  u$write(c(NA, 128, 0, 200))
  expect_identical(u[decode = FALSE], c(-1L, -128L, 0L, -56L))
  expect_identical(u[], c(NA, 128, 0, 200))
  m <- enc_array(g, "m", "int16", 3, list(missing_value = c(-999, -998), scale_factor = 2), fill = 0L)
  m[] <- c(4, NA, 7)
  expect_identical(m[decode = FALSE], c(2L, -999L, 4L))
  # without _FillValue, the array's own fill value (a missing-value marker) is the marker
  f <- enc_array(g, "f", "int32", 3, list(scale_factor = 0.5), fill = -9999L)
  f[] <- c(1, NA, 2)
  expect_identical(f[decode = FALSE, fill_as_na = FALSE], c(2L, -9999L, 4L))
  expect_identical(f[], c(1, NA, 2))
  # arrays without CF attributes are written as before
  p <- enc_array(g, "p", "float64", 2, list(units = "m"))
  p[] <- c(1.5, NA)
  expect_identical(p[decode = FALSE], c(1.5, NA))
})

test_that("times are encoded to their units and calendar", {
  g <- create_zarr()$root
  d <- enc_array(g, "d", "int32", 3, list(units = "days since 2000-01-01"))
  d[] <- as.Date(c("2000-01-01", "2000-02-01", NA))
  expect_identical(d[decode = FALSE][1:2], c(0L, 31L))
  expect_identical(d[], as.Date(c("2000-01-01", "2000-02-01", NA)))
  h <- enc_array(g, "h", "int64", 2, list(units = "hours since 2000-01-01T06:00:00"))
  t <- as.POSIXct(c("2000-01-01 06:00", "2000-01-03 12:00"), tz = "UTC")
  h$write(t)
  expect_equal(as.numeric(h[decode = FALSE]), c(0, 54))
  expect_identical(h[], t)
  # a time zone offset in the units
  z <- enc_array(g, "z", "float64", 1, list(units = "minutes since 2000-01-01 00:00:00+01:00"))
  z[] <- as.POSIXct("2000-01-01 00:00", tz = "UTC")
  expect_identical(z[decode = FALSE], 60)
  # other calendars: strings in that calendar, and CFTime objects
  n <- enc_array(g, "n", "int32", 3, list(units = "days since 2000-01-01", calendar = "360_day"))
  n[] <- c("2000-01-01", "2000-02-30", "2001-01-01")
  expect_identical(n[decode = FALSE], c(0L, 59L, 360L))
  skip_if_not_installed("CFtime")
  back <- n[]
  n[] <- c(9L, 9L, 9L) # plain numbers are offsets
  expect_identical(n[decode = FALSE], c(9L, 9L, 9L))
  n[] <- back
  expect_identical(n[decode = FALSE], c(0L, 59L, 360L))
  expect_error(n[] <- c("2000-01-01", "soon", NA), class = "zarr_error_value")
})
