# The extension data types of the data type table (bfloat16, float8_e4m3,
# float8_e5m2, int4, uint4) against hand-checked bytes, and data types
# implemented in R through zarr_register_data_type().

# An array of one chunk written by hand: zarr.json with only the bytes codec,
# and the chunk's bytes.
hand_array <- function(dtype, chunk_bytes, fill = "NaN", endian = "little", n = NULL) {
  root <- tempfile("ext-dtype-")
  dir.create(file.path(root, "a", "c"), recursive = TRUE)
  writeLines(sprintf('{"zarr_format": 3, "node_type": "group", "attributes": {}}'), file.path(root, "zarr.json"))
  n <- n %||% length(chunk_bytes) / (if (dtype == "bfloat16") 2 else 1)
  fill_json <- if (is.character(fill)) sprintf('"%s"', fill) else format(fill)
  writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": [%d], "data_type": "%s",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [%d]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": %s, "codecs": [{"name": "bytes", "configuration": {"endian": "%s"}}],
    "attributes": {}}', n, dtype, n, fill_json, endian), file.path(root, "a", "zarr.json"))
  writeBin(as.raw(chunk_bytes), file.path(root, "a", "c", "0"))
  root
}

# the bytes of a chunk before its bytes-to-bytes codecs
zstd_or_raw <- function(raw, arr) {
  for (cd in rev(arr$codecs)) if (cd$mode == "bytes -> bytes") raw <- cd$decode(raw)
  raw
}

chunk_file <- function(root) readBin(file.path(root, "a", "c", "0"), "raw", 1e4)

test_that("bfloat16 reads and writes the bytes of the format", {
  # 1, -2, 3.140625, Inf, 2^-130 (subnormal), -0
  vals <- c(1, -2, 3.140625, Inf, 2^-130, 0)
  bits <- c(0x3f80, 0xc000, 0x4049, 0x7f80, 0x0008, 0x8000)
  le <- as.vector(rbind(bits %% 256, bits %/% 256))
  root <- hand_array("bfloat16", le)
  arr <- open_zarr(root)[["/a"]]
  expect_identical(arr$data_type$Rtype, "double")
  got <- arr$read()
  expect_identical(got[1:5], vals[1:5])
  expect_identical(1 / got[6], -Inf) # the sign of zero survives
  # big endian: the same values from swapped bytes
  root_be <- hand_array("bfloat16", as.vector(rbind(bits %/% 256, bits %% 256)), endian = "big")
  expect_identical(open_zarr(root_be)[["/a"]]$read()[1:5], vals[1:5])
  # writing: round to nearest, ties to even; NaN is the quiet NaN 0x7fc0
  arr$write(c(1, 1 + 2^-8, 1 + 3 * 2^-8, 3.140625, NaN, -Inf))
  expect_identical(chunk_file(root), as.raw(c(0x80, 0x3f, 0x80, 0x3f, 0x82, 0x3f, 0x49, 0x40, 0xc0, 0x7f, 0x80, 0xff)))
  expect_identical(arr$read(), c(1, 1, 1 + 2^-6, 3.140625, NaN, -Inf))
  # its fill value "NaN" is 0x7fc0
  expect_identical(zarr:::fill_bytes("bfloat16", NaN), as.raw(c(0xc0, 0x7f)))
  expect_identical(zarr:::fill_bytes("bfloat16", "0x3f80"), as.raw(c(0x80, 0x3f)))
})

test_that("float8_e4m3 and float8_e5m2 read and write the bytes of the formats", {
  # e4m3: bias 7, 3 mantissa bits; 240 is the largest finite value
  root <- hand_array("float8_e4m3", c(0x38, 0xc0, 0x77, 0x30, 0x01, 0x78, 0x7c))
  got <- open_zarr(root)[["/a"]]$read(fill_as_na = FALSE)
  expect_identical(got, c(1, -2, 240, 0.5, 2^-9, Inf, NaN))
  arr <- open_zarr(root)[["/a"]]
  arr$write(c(1, -2, 240, 248, 1000, 0.5 * 2^-9, 0.75 * 2^-9)) # 248: a tie, rounds to even (Inf)
  expect_identical(chunk_file(root), as.raw(c(0x38, 0xc0, 0x77, 0x78, 0x78, 0x00, 0x01)))
  expect_identical(zarr:::fill_bytes("float8_e4m3", NaN), as.raw(0x7c))
  # e5m2: bias 15, 2 mantissa bits; 57344 is the largest finite value
  root <- hand_array("float8_e5m2", c(0x3c, 0xb8, 0x7b, 0x7c, 0x01, 0x7e))
  got <- open_zarr(root)[["/a"]]$read(fill_as_na = FALSE)
  expect_identical(got, c(1, -0.5, 57344, Inf, 2^-16, NaN))
  arr <- open_zarr(root)[["/a"]]
  arr$write(c(1, -0.5, 57344, 1.1, -Inf, NaN))
  expect_identical(chunk_file(root), as.raw(c(0x3c, 0xb8, 0x7b, 0x3c, 0xfc, 0x7e)))
  expect_identical(zarr:::fill_bytes("float8_e5m2", NaN), as.raw(0x7e))
  # every one of the 256 values of each format survives a round trip; one
  # NaN pattern is R's NA (0x7e in e4m3, 0x7f in e5m2), written back as such
  # when the fill value does not stand for NA
  withr::local_options(zarr.fill_as_na = FALSE)
  for (dt in c("float8_e4m3", "float8_e5m2")) {
    root <- hand_array(dt, 0:255, fill = 0)
    arr <- open_zarr(root)[["/a"]]
    v <- arr$read(fill_as_na = FALSE)
    expect_identical(which(is.na(v) & !is.nan(v)) - 1L, if (dt == "float8_e4m3") 0x7eL else 0x7fL)
    arr$write(v)
    back <- chunk_file(root)
    nan <- is.nan(v)
    expect_identical(back[!nan], as.raw(0:255)[!nan], info = dt)
    expect_true(all(is.nan(arr$read(fill_as_na = FALSE)[nan])), info = dt)
  }
})

test_that("int4 and uint4 take the low nibble of each byte", {
  root <- hand_array("int4", c(0x07, 0x0f, 0xff, 0x78, 0x00, 0x38), fill = 0)
  arr <- open_zarr(root)[["/a"]]
  expect_identical(arr$data_type$Rtype, "integer")
  expect_identical(arr$read(fill_as_na = FALSE), c(7L, -1L, -1L, -8L, 0L, -8L))
  expect_warning(arr$write(c(-8L, 7L, -1L, 0L, 3L, NA)), class = "zarr_warning_na") # NA -> the fill value 0
  expect_identical(chunk_file(root), as.raw(c(0x08, 0x07, 0x0f, 0x00, 0x03, 0x00)))
  expect_error(arr$write(8L, list(1)), class = "zarr_error_value")
  expect_error(arr$write(-9, list(1)), class = "zarr_error_value")
  root <- hand_array("uint4", c(0xf3, 0x0f, 0x10), fill = 15)
  arr <- open_zarr(root)[["/a"]]
  expect_identical(arr$read(), c(3L, NA, 0L)) # 15 is the fill value
  expect_error(arr$write(16L, list(1)), class = "zarr_error_value")
  expect_error(arr$write(-1L, list(1)), class = "zarr_error_value")
  expect_identical(zarr_data_type$new("int4")$fill_value, -8L)
  expect_identical(zarr_data_type$new("uint4")$fill_value, 15L)
  expect_error(zarr_data_type$new("int4", 8), class = "zarr_error")
})

test_that("the extension types round-trip through chunked arrays and selections", {
  set.seed(12)
  for (dt in c("bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint4")) {
    for (kind in c("memory", "local")) {
      z <- new_test_zarr(kind)
      def <- define_array(dt, c(9, 7))
      def$chunk_shape <- c(4, 3)
      arr <- z$add_array("/", "x", def)
      x <- switch(dt,
        int4 = matrix(sample(-7:7, 63, TRUE), 9, 7),
        uint4 = matrix(sample(0:14, 63, TRUE), 9, 7),
        # values every format holds exactly
        matrix(sample(c(-4, -1.5, -0.25, 0, 0.5, 1, 2, 3, 12), 63, TRUE), 9, 7))
      x[3, 4] <- NA
      arr$write(x)
      expect_identical(arr$read(), x, info = paste(dt, kind))
      i <- sample(9, 5, TRUE)
      j <- sample(7, 4)
      expect_identical(arr$read(list(i, j)), x[i, j], info = paste(dt, kind))
      y <- x[2:5, 6:7]
      y[] <- rev(y)
      arr$write(y, list(2:5, 6:7))
      x[2:5, 6:7] <- y
      expect_identical(arr$read(), x, info = paste(dt, kind))
      expect_identical(arr$data_type$data_type, dt)
      if (kind == "local")
        expect_identical(open_zarr(z$store$root)[["/x"]]$read(), x, info = dt)
    }
  }
})

test_that("the extension types have no v2 dtype", {
  old <- options(zarr.format = 2)
  on.exit(options(old))
  z <- create_zarr()
  def <- define_array("bfloat16", 3)
  expect_error(z$add_array("/", "x", def), class = "zarr_error_unsupported")
})

test_that("a data type implemented in R reads and writes through the engine", {
  # a fixed-point number with 8 fraction bits in 2 bytes, little endian
  zarr_register_data_type("test.q8_8", 2,
    decode = function(raw, n) readBin(raw, "integer", n, size = 2, endian = "little") / 256,
    encode = function(x) writeBin(as.integer(round(x * 256)), raw(), size = 2, endian = "little"),
    fill_value = as.raw(c(0x00, 0x80)))
  on.exit(zarr_unregister_data_type("test.q8_8"))
  root <- tempfile("rdtype-")
  z <- create_zarr(root)
  def <- define_array("test.q8_8", c(5, 6))
  def$chunk_shape <- c(2, 4)
  arr <- z$add_array("/", "q", def)
  expect_identical(arr$data_type$Rtype, "double")
  expect_identical(arr$data_type$fill_value, as.raw(c(0x00, 0x80)))
  x <- matrix(seq(-7.5, by = 0.5, length.out = 30), 5, 6)
  arr$write(x)
  expect_identical(arr$read(), x)
  expect_identical(arr$read(exact_sel(arr, list(c(5, 1), c(2, 6, 2)))), x[c(5, 1), c(2, 6, 2)])
  arr$write(c(1.25, 2.5), list(3, 5:6))
  x[3, 5:6] <- c(1.25, 2.5)
  expect_identical(arr$read(), x)
  # one file per chunk: 3 x 2 of them
  expect_setequal(list.files(file.path(root, "q")), c("zarr.json", paste0("c.", rep(0:2, each = 2), ".", rep(0:1, 3))))
  # chunk c.0.0 holds x[1:2, 1:4], stored in R's order (a transpose codec)
  raw00 <- zstd_or_raw(readBin(file.path(root, "q", "c.0.0"), "raw", 100), arr)
  expect_identical(readBin(raw00, "integer", 8, size = 2, endian = "little") / 256, as.vector(x[1:2, 1:4]))
  meta <- jsonlite::fromJSON(file.path(root, "q", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$data_type, "test.q8_8")
  expect_identical(unlist(meta$fill_value), c(0L, 128L))
  # reopened from disk while the type is registered
  expect_identical(open_zarr(root)[["/q"]]$read(), x)
  # a decoder that returns the wrong number of values is a classed error
  zarr_register_data_type("test.q8_8", 2, decode = function(raw, n) 1,
                          encode = function(x) raw(0))
  expect_error(open_zarr(root)[["/q"]]$read(), class = "zarr_error_value")
  expect_error(open_zarr(root)[["/q"]]$write(1, list(1, 1)), class = "zarr_error_value")
  # without the registration the array cannot be read
  zarr_unregister_data_type("test.q8_8")
  expect_error(open_zarr(root)[["/q"]]$read(), class = "zarr_error")
  expect_error(zarr_register_data_type("float32", 4, identity, identity), class = "zarr_error_argument")
  expect_error(zarr_register_data_type("x.y", 3, identity, identity), class = "zarr_error_argument")
})
