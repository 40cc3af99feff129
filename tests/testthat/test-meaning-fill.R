# No false NA (issue 17, item 1): a fill value equal to the data type's zero
# (0, -0, 0+0i, false, "", empty bytes; 0 for datetime64) is the "nothing
# written" default of zarr-python, zarrs, tensorstore and zarrita, so it reads
# as itself. Sentinel fill values (this package's defaults, -9999, netCDF's
# 9.97e36, NaT) keep mapping to NA, both ways; NaN stays apart from NA.

numeric_dtypes <- c("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64", "complex64", "complex128")

# R values of a data type from plain numbers (the type the package reads back).
as_dtype_values <- function(v, dtype) {
  switch(dtype,
    bool = as.logical(v),
    int8 = , int16 = , int32 = , uint8 = , uint16 = as.integer(v),
    int64 = , uint64 = bit64::as.integer64(v),
    complex64 = , complex128 = as.complex(v),
    as.double(v))
}

# zarr-python 2 (Debian) writes every data type with its default fill value
# (0, false, ""), real zeros at [1, 3, 5], and a chunk it never writes.
test_that("arrays zarr-python 2 writes with its default fill value read their zeros as zeros", {
  skip_without_python_zarr()
  p <- local_store_path()
  res <- run_python('
import zarr, numcodecs
root = zarr.open_group(sys.argv[1], mode="w")
out = {}
for dt in ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16"]:
    a = root.create(dt.strip("<|"), shape=10, chunks=4, dtype=dt)  # fill_value: zarr-python default
    a[0:6] = (np.arange(6) % 2).astype(dt)
    out[dt.strip("<|")] = val(a.fill_value, a.dtype.kind)
s = root.create("vlen", shape=10, chunks=4, dtype=object, object_codec=numcodecs.VLenUTF8())
s[0:6] = ["", "a", "", "b", "", "c"]
u = root.create("fixed_u", shape=10, chunks=4, dtype="<U3")
u[0:6] = ["", "a", "", "b", "", "c"]
b = root.create("fixed_s", shape=10, chunks=4, dtype="|S3")
b[0:6] = [b"", b"a", b"", b"b", b"", b"c"]
rng = np.random.default_rng(1)
x = rng.integers(0, 3, size=(300, 200)).astype("<f8")
f = root.array("many_zeros", x, chunks=(64, 64))
n = root.create("fill_none", shape=10, chunks=4, dtype="<f8", fill_value=None)
n[0:6] = np.arange(6) % 2
out["sum"] = float(x.sum())
out["zeros"] = int((x == 0).sum())
out["vlen_fill"] = s.fill_value
emit(out)
', p)
  z <- open_zarr(p, read_only = TRUE)
  for (dt in c("b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16")) {
    dtype <- z[[paste0("/", dt)]]$data_type$data_type
    want <- as_dtype_values(c(0, 1, 0, 1, 0, 1, 0, 0, 0, 0), dtype)
    expect_identical(z[[paste0("/", dt)]][], want, info = dt)
    expect_identical(z[[paste0("/", dt)]]$read(fill_as_na = TRUE), want, info = dt)
    expect_equal(sum(as.numeric(z[[paste0("/", dt)]][])), 3, info = dt)
  }
  expect_identical(res$vlen_fill, 0L)
  chars <- c("", "a", "", "b", "", "c", "", "", "", "")
  expect_identical(z[["/vlen"]][], chars)
  expect_identical(z[["/fixed_u"]][], chars)
  expect_identical(z[["/fixed_s"]][], chars)
  x <- z[["/many_zeros"]][]
  expect_false(anyNA(x))
  expect_identical(sum(x == 0), as.integer(res$zeros))
  expect_equal(sum(x), res$sum)
  expect_identical(z[["/fill_none"]][], c(0, 1, 0, 1, 0, 1, 0, 0, 0, 0))
})

test_that("a sentinel fill value written by zarr-python reads as NA, NaN stays NaN", {
  skip_without_python_zarr()
  p <- local_store_path()
  run_python('
import zarr
root = zarr.open_group(sys.argv[1], mode="w")
a = root.create("sentinel", shape=6, chunks=4, dtype="<i2", fill_value=-9999)
a[0:3] = [0, -9999, 5]
f = root.create("nan", shape=5, chunks=4, dtype="<f4", fill_value=float("nan"))
f[0:3] = [0, float("nan"), 2]
emit({})
', p)
  z <- open_zarr(p, read_only = TRUE)
  expect_identical(z[["/sentinel"]][], c(0L, NA, 5L, NA, NA, NA))
  expect_identical(z[["/sentinel"]][fill_as_na = FALSE], c(0L, -9999L, 5L, -9999L, -9999L, -9999L))
  expect_identical(z[["/nan"]][], c(0, NaN, 2, NaN, NaN))
})

test_that("arrays zarrita writes with fill value 0 read their zeros as zeros (v3 and v2)", {
  skip_without_zarrita()
  p <- local_store_path()
  types <- c("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
  for (fmt in 2:3) {
    q <- file.path(p, fmt)
    arrays <- lapply(types, function(dt) {
      data <- if (dt == "bool") c(FALSE, TRUE, NA, TRUE, FALSE, NA, NA) else c("0", "1", NA, "2", "0", NA, NA)
      list(path = paste0("/", dt), shape = I(7L), chunk_shape = I(3L), data_type = dt,
           fill_value = if (dt == "bool") FALSE else 0L, data = I(data))
    })
    f <- tempfile(fileext = ".json")
    writeLines(jsonlite::toJSON(list(store = q, zarr_format = fmt, arrays = arrays),
                                auto_unbox = TRUE, na = "null", null = "null"), f)
    run_node("write.mjs", f)
    unlink(f)
    z <- open_zarr(q, read_only = TRUE)
    for (dt in types) {
      # null in zarrita's data is the fill value
      want <- as_dtype_values(c(0, 1, 0, 2, 0, 0, 0), dt)
      if (dt == "bool") want <- c(FALSE, TRUE, FALSE, TRUE, FALSE, FALSE, FALSE)
      expect_identical(z[[paste0("/", dt)]][], want, info = paste(fmt, dt))
    }
  }
})

test_that("the package's default fill values still map NA both ways, and zeros stay zeros", {
  z <- create_zarr()
  for (dt in numeric_dtypes) {
    a <- z$add_array("/", dt, define_array(dt, 5))
    v <- as_dtype_values(c(1, NA, 0, 2, NA), dt)
    expect_silent(a[] <- v)
    expect_identical(a[], v, info = dt)
    # (uint64's default fill value 2^64 - 1 is beyond integer64)
    if (dt != "uint64") expect_identical(a$read(fill_as_na = FALSE)[c(1, 3, 4)], v[c(1, 3, 4)], info = dt)
  }
  # bool holds no NA: FALSE, as documented
  b <- z$add_array("/", "bool", define_array("bool", 3))
  b[] <- c(TRUE, NA, FALSE)
  expect_identical(b[], c(TRUE, FALSE, FALSE))
  # NaT for datetime64
  t <- z$add_array("/", "t", define_array(list(name = "numpy.datetime64", configuration = list(unit = "s", scale_factor = 1L)), 3))
  tv <- as.POSIXct(c(0, NA, 86400), origin = "1970-01-01", tz = "UTC")
  t[] <- tv
  expect_equal(as.numeric(t[]), as.numeric(tv))
})

test_that("a fill value of zero reads as itself for every data type, written by this package too", {
  z <- create_zarr()
  for (dt in c(numeric_dtypes, "bool")) {
    d <- define_array(dt, 6)
    d$chunk_shape <- 2
    d$fill_value <- if (dt == "bool") FALSE else if (grepl("complex", dt)) 0+0i else 0
    a <- z$add_array("/", dt, d)
    a[1:3] <- as_dtype_values(c(0, 1, 0), dt)
    want <- as_dtype_values(c(0, 1, 0, 0, 0, 0), dt)
    expect_identical(a[], want, info = dt)
    expect_identical(a$read(), want, info = dt)
    expect_identical(a[fill_as_na = TRUE], want, info = dt)
  }
  # -0.0 and 0+0i are zeros too
  d <- define_array("float64", 3)
  d$fill_value <- -0
  a <- z$add_array("/", "negzero", d)
  a[1] <- 5
  expect_identical(a[], c(5, 0, 0))
  # strings and bytes: "" and empty bytes
  s <- z$add_array("/", "s", define_array("string", 3))
  s[] <- c("a", "", "b")
  expect_identical(s[], c("a", "", "b"))
  expect_identical(as_zarr(c("a", ""))$root[], c("a", ""))
  vb <- z$add_array("/", "vb", define_array("variable_length_bytes", 2))
  vb[] <- list(as.raw(1:2), raw())
  expect_identical(vb[], list(as.raw(1:2), raw()))
  # datetime64 with fill value 0: the epoch is an ordinary time
  d <- define_array(list(name = "numpy.datetime64", configuration = list(unit = "s", scale_factor = 1L)), 3)
  d$fill_value <- 0
  t <- z$add_array("/", "t0", d)
  t[1] <- as.POSIXct(60, origin = "1970-01-01", tz = "UTC")
  expect_equal(as.numeric(t[]), c(60, 0, 0))
})

test_that("NA written where the fill value is zero: NaN bits for floating point, the fill value with a warning otherwise", {
  z <- create_zarr()
  for (dt in c("float32", "float64", "complex128")) {
    d <- define_array(dt, 3)
    d$fill_value <- if (grepl("complex", dt)) 0+0i else 0
    a <- z$add_array("/", dt, d)
    expect_silent(a[] <- as_dtype_values(c(1, NA, 0), dt))
    expect_identical(a[], as_dtype_values(c(1, NA, 0), dt), info = dt)
  }
  for (dt in c("int16", "uint8", "int64")) {
    d <- define_array(dt, 3)
    d$fill_value <- 0
    a <- z$add_array("/", dt, d)
    expect_warning(a[] <- as_dtype_values(c(1, NA, 0), dt), class = "zarr_warning_na")
    expect_identical(a[], as_dtype_values(c(1, 0, 0), dt), info = dt)
  }
  d <- define_array("string", 2)
  d$fill_value <- ""
  s <- z$add_array("/", "s", d)
  expect_warning(s[] <- c("a", NA), "fill value \"\"", class = "zarr_warning_na")
  expect_identical(s[], c("a", ""))
  # the default fill value of a string array is "NA", which keeps NA
  s2 <- z$add_array("/", "s2", define_array("string", 3))
  expect_identical(s2$data_type$fill_value, "NA")
  expect_silent(s2[] <- c("a", NA, ""))
  expect_identical(s2[], c("a", NA, ""))
})

test_that("a non-zero fill value marks missing values: per call, by option and by raw_read", {
  z <- create_zarr()
  d <- define_array("int32", c(2, 3))
  d$fill_value <- -9999L
  a <- z$add_array("/", "a", d)
  a[1, ] <- c(0L, NA, 7L)
  na_view <- matrix(c(0L, NA, NA, NA, 7L, NA), 2)
  raw_view <- matrix(c(0L, -9999L, -9999L, -9999L, 7L, -9999L), 2)
  expect_identical(a[], na_view)
  expect_identical(a$read(), na_view)
  expect_identical(a$read(fill_as_na = FALSE), raw_view)
  expect_identical(a[, , fill_as_na = FALSE], raw_view)
  expect_identical(a[1, 2:3, fill_as_na = FALSE], c(-9999L, 7L))
  expect_identical(a[1, 2:3], c(NA, 7L))
  expect_identical(a[3, fill_as_na = FALSE], -9999L) # one index: column-major position
  expect_identical(a[3], NA_integer_)
  withr::with_options(list(zarr.fill_as_na = FALSE), {
    expect_identical(a[], raw_view)
    expect_identical(a$read(), raw_view)
    expect_identical(a[1, 2, fill_as_na = TRUE], NA_integer_)
  })
  a$raw_read <- TRUE
  expect_identical(a[], raw_view)
  # a string fill value other than ""
  d <- define_array("string", 3)
  d$fill_value <- "NA"
  s <- z$add_array("/", "s", d)
  s[1:2] <- c("", NA)
  expect_identical(s[], c("", NA, NA))
  expect_identical(s[fill_as_na = FALSE], c("", "NA", "NA"))
  # a float fill value such as netCDF's default
  d <- define_array("float32", 3)
  d$fill_value <- 9.969209968386869e36
  f <- z$add_array("/", "f", d)
  f[1:2] <- c(0, NA)
  expect_identical(f[], c(0, NA, NA))
})

test_that("the bytes codec follows the same rule", {
  zero <- zarr_codec_bytes$new(zarr_data_type$new("int16", 0), 3)
  expect_identical(zero$decode(zero$encode(c(0L, 1L, 2L))), c(0L, 1L, 2L))
  sentinel <- zarr_codec_bytes$new(zarr_data_type$new("int16", -9999), 3)
  expect_identical(sentinel$decode(sentinel$encode(c(0L, NA, 2L))), c(0L, NA, 2L))
  f <- zarr_codec_bytes$new(zarr_data_type$new("float64", 0), 2)
  expect_identical(f$decode(f$encode(c(0, NA))), c(0, NA))
})

test_that("$read() takes c(from, to) as a range, [ indexes as base R does", {
  a <- as_zarr(as.numeric(1:10))$root
  expect_identical(a$read(list(c(2, 7))), as.numeric(2:7))
  expect_identical(a$read(c(7, 2)), as.numeric(2:7))
  expect_identical(a[c(2, 7)], c(2, 7))
  expect_identical(a$read(list(c(2, 7, 3))), c(2, 7, 3))
  expect_identical(a$read(list(-1)), as.numeric(2:10))
})
