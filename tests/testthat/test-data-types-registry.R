# The rest of the registry's data types (issue 30): int2/uint2, the float8
# variants, float6, float4, the complex_* types, `bytes`, the raw bits types
# r8, r16, ... and "NaT" as a datetime fill value. Expected bytes are worked
# out from the registry's text (zarr-developers/zarr-extensions,
# data-types/<name>/README.md): bit layout, bias, which codes are NaN and
# infinity.

# A v3 array of one chunk written by hand (the bytes codec only).
reg_hand_array <- function(dtype, chunk_bytes, n, fill = 0, codecs = '[{"name": "bytes"}]') {
  root <- tempfile("reg-dtype-")
  dir.create(file.path(root, "a", "c"), recursive = TRUE)
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}}', file.path(root, "zarr.json"))
  fill_json <- if (is.character(fill)) sprintf('"%s"', fill) else jsonlite::toJSON(fill, auto_unbox = TRUE)
  writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": [%d], "data_type": "%s",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [%d]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": %s, "codecs": %s, "attributes": {}}', n, dtype, n, fill_json, codecs),
    file.path(root, "a", "zarr.json"))
  writeBin(as.raw(chunk_bytes), file.path(root, "a", "c", "0"))
  root
}

reg_chunk <- function(root) readBin(file.path(root, "a", "c", "0"), "raw", 1e4)

# Every value of a one-byte format from its bit fields, as the registry
# defines them (IEEE-style subnormals at exponent 0).
mini_value <- function(code, eb, mb, bias, signed = TRUE) {
  s <- if (signed) bitwAnd(bitwShiftR(code, eb + mb), 1L) else 0L
  e <- bitwAnd(bitwShiftR(code, mb), bitwShiftL(1L, eb) - 1L)
  m <- bitwAnd(code, bitwShiftL(1L, mb) - 1L)
  v <- ifelse(e == 0, m * 2^(1 - bias - mb), (m + 2^mb) * 2^(e - bias - mb))
  ifelse(s == 1, -v, v)
}

test_that("int2 and uint2 use the two low bits of a byte", {
  root <- reg_hand_array("int2", c(0x00, 0x01, 0x02, 0x03, 0xfd, 0x7e), 6)
  expect_identical(open_zarr(root)[["/a"]][], c(0L, 1L, -2L, -1L, 1L, -2L)) # upper bits ignored
  a <- open_zarr(root)[["/a"]]
  a[] <- c(-2L, -1L, 0L, 1L, 1L, 0L)
  expect_identical(reg_chunk(root), as.raw(c(0x02, 0x03, 0x00, 0x01, 0x01, 0x00))) # upper bits zero
  expect_error(a[1] <- 2L, class = "zarr_error")
  root <- reg_hand_array("uint2", c(0x00, 0x01, 0x02, 0x03, 0xff), 5, fill = 3)
  expect_identical(open_zarr(root)[["/a"]]$read(fill_as_na = FALSE), c(0L, 1L, 2L, 3L, 3L))
  expect_identical(zarr_data_type$new("int2")$fill_value, -2L)
  expect_identical(zarr_data_type$new("uint2")$fill_value, 3L)
  expect_error(zarr_data_type$new("uint2", 4), class = "zarr_error")
  # packbits keeps two bits per element (the registry's packbits table)
  root <- reg_hand_array("uint2", c(0xe4, 0x01), 5,
                         codecs = '[{"name": "packbits"}]')
  expect_identical(open_zarr(root)[["/a"]]$read(fill_as_na = FALSE), c(0L, 1L, 2L, 3L, 1L))
})

test_that("the float8, float6 and float4 formats decode every code as the registry defines them", {
  fmts <- list(
    float8_e3m4 = list(eb = 3, mb = 4, bias = 3, nan = 0x78, inf = 0x70),
    float8_e4m3fnuz = list(eb = 4, mb = 3, bias = 8, nan = 0x80),
    float8_e4m3b11fnuz = list(eb = 4, mb = 3, bias = 11, nan = 0x80),
    float8_e5m2fnuz = list(eb = 5, mb = 2, bias = 16, nan = 0x80),
    float6_e2m3fn = list(eb = 2, mb = 3, bias = 1, bits = 6),
    float6_e3m2fn = list(eb = 3, mb = 2, bias = 3, bits = 6),
    float4_e2m1fn = list(eb = 2, mb = 1, bias = 1, bits = 4))
  withr::local_options(zarr.fill_as_na = FALSE)
  for (dt in names(fmts)) {
    f <- fmts[[dt]]
    ncode <- 2L^(f$bits %||% 8L)
    codes <- 0:(ncode - 1L)
    want <- mini_value(codes, f$eb, f$mb, f$bias)
    if (dt == "float8_e3m4") { # IEEE: the top exponent holds infinities and NaNs
      top <- bitwAnd(bitwShiftR(codes, 4), 7L) == 7L
      want[top] <- ifelse(bitwAnd(codes[top], 15L) == 0L, ifelse(codes[top] >= 128, -Inf, Inf), NaN)
    }
    if (!is.null(f$nan) && f$nan == 0x80) want[codes == 0x80] <- NaN
    root <- reg_hand_array(dt, codes, ncode)
    got <- open_zarr(root)[["/a"]][]
    ok <- !is.nan(want)
    expect_identical(got[ok], want[ok], info = dt)
    expect_true(all(is.na(got[!ok])), info = dt) # NaN (0x7f of e3m4: R's NA)
    # upper bits beyond the format's width are ignored
    if (ncode < 256L) {
      root2 <- reg_hand_array(dt, codes + ncode, ncode)
      expect_identical(open_zarr(root2)[["/a"]][], got, info = dt)
    }
    # every finite value is written back as its own code (the first of +0/-0
    # pairs aside, which the sign of zero keeps apart)
    a <- open_zarr(root)[["/a"]]
    a[] <- got
    back <- as.integer(reg_chunk(root))
    expect_identical(back[ok], codes[ok], info = dt)
  }
  # the registry's NaN codes
  expect_identical(zarr:::fill_bytes("float8_e3m4", NaN), as.raw(0x78))
  for (dt in c("float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz"))
    expect_identical(zarr:::fill_bytes(dt, NaN), as.raw(0x80), info = dt)
  expect_identical(zarr:::fill_bytes("float8_e8m0fnu", NaN), as.raw(0xff))
  # formats without a NaN refuse one, and their default fill value is 0
  for (dt in c("float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")) {
    expect_error(zarr_data_type$new(dt, NaN), class = "zarr_error", info = dt)
    expect_identical(zarr_data_type$new(dt)$fill_value, 0, info = dt)
  }
})

test_that("writing rounds to nearest even and handles the formats' limits", {
  root <- reg_hand_array("float4_e2m1fn", rep(0, 8), 8)
  a <- open_zarr(root)[["/a"]]
  # e2m1 values: 0 0.5 1 1.5 2 3 4 6; 2.5 ties to 2 (even code), 5 ties to 4
  a[] <- c(0.25, 0.75, 1.25, 2.5, 5, -6, 6.9, -0.1)
  expect_identical(reg_chunk(root), as.raw(c(0x00, 0x02, 0x02, 0x04, 0x06, 0x0f, 0x07, 0x08)))
  expect_error(a[1] <- 7, class = "zarr_error") # beyond 6 + 1: no infinity, no NaN
  expect_error(a[1] <- NaN, class = "zarr_error")
  # fnuz: overflow and NaN give 0x80; no negative zero
  root <- reg_hand_array("float8_e4m3fnuz", rep(0, 5), 5)
  a <- open_zarr(root)[["/a"]]
  a[] <- c(240, 1e6, NaN, -0, -1)
  expect_identical(reg_chunk(root), as.raw(c(0x7f, 0x80, 0x80, 0x00, 0xc0))) # bias 8: 1 is 0x40
  # e3m4: IEEE; 15.5 is the largest finite value, beyond it infinity
  root <- reg_hand_array("float8_e3m4", rep(0, 4), 4)
  a <- open_zarr(root)[["/a"]]
  a[] <- c(15.5, 100, -Inf, 1)
  expect_identical(reg_chunk(root), as.raw(c(0x6f, 0x70, 0xf0, 0x30)))
  # e8m0fnu: powers of two 2^(e - 127); NaN 0xff; no zero, no sign
  root <- reg_hand_array("float8_e8m0fnu", c(127, 128, 0, 254, 255), 5, fill = "NaN")
  got <- open_zarr(root)[["/a"]]$read(fill_as_na = FALSE)
  expect_identical(got[1:4], c(1, 2, 2^-127, 2^127))
  expect_true(is.nan(got[5]))
  a <- open_zarr(root)[["/a"]]
  a[] <- c(1, 3, 0.3, -2, 0)
  expect_identical(reg_chunk(root), as.raw(c(0x7f, 0x80, 0x7d, 0xff, 0xff)))
})

test_that("NA keeps a NaN of its own where the format has spare NaNs", {
  root <- reg_hand_array("float8_e3m4", rep(0, 3), 3, fill = "NaN")
  a <- open_zarr(root)[["/a"]]
  a[] <- c(NA, NaN, 1)
  expect_identical(reg_chunk(root), as.raw(c(0x7f, 0x78, 0x30)))
  got <- a[]
  expect_true(is.na(got[1]) && !is.nan(got[1]))
  expect_true(is.nan(got[2]))
  # formats without NaN store NA as the fill value
  root <- reg_hand_array("float6_e2m3fn", rep(0, 2), 2, fill = 1)
  a <- open_zarr(root)[["/a"]]
  a[] <- c(NA, 2)
  expect_identical(reg_chunk(root), as.raw(c(0x08, 0x10)))
  expect_identical(a[], c(NA, 2))
})

test_that("complex_* types hold two components, real part first", {
  root <- reg_hand_array("complex_float32", writeBin(c(1.5, -2, 0, 4), raw(), size = 4, endian = "little"), 2,
                         fill = list(0, 0))
  expect_identical(open_zarr(root)[["/a"]][], complex(real = c(1.5, 0), imaginary = c(-2, 4)))
  root <- reg_hand_array("complex_float64", writeBin(c(1.5, -2), raw(), size = 8, endian = "little"), 1,
                         fill = list(0, 0))
  a <- open_zarr(root)[["/a"]]
  expect_identical(a[], complex(real = 1.5, imaginary = -2))
  a[] <- 3 - 1i
  expect_identical(reg_chunk(root), writeBin(c(3, -1), raw(), size = 8, endian = "little"))
  # complex_float16: 0x3c00 is 1, 0xc000 is -2; big endian swaps each half
  root <- reg_hand_array("complex_float16", c(0x00, 0x3c, 0x00, 0xc0), 1, fill = list(0, 0),
                         codecs = '[{"name": "bytes", "configuration": {"endian": "little"}}]')
  expect_identical(open_zarr(root)[["/a"]][], complex(real = 1, imaginary = -2))
  root <- reg_hand_array("complex_float16", c(0x3c, 0x00, 0xc0, 0x00), 1, fill = list(0, 0),
                         codecs = '[{"name": "bytes", "configuration": {"endian": "big"}}]')
  expect_identical(open_zarr(root)[["/a"]][], complex(real = 1, imaginary = -2))
  # bfloat16 parts: 0x3f80 is 1
  root <- reg_hand_array("complex_bfloat16", c(0x80, 0x3f, 0x80, 0xbf), 1, fill = list(0, 0))
  expect_identical(open_zarr(root)[["/a"]][], complex(real = 1, imaginary = -1))
  # one byte per part: e4m3 (0x38 = 1), e5m2 (0x3c = 1), float4 (0x2 = 1, 0xb = -1.5)
  for (x in list(list("complex_float8_e4m3", c(0x38, 0xc0), 1 - 2i),
                 list("complex_float8_e5m2", c(0x3c, 0xb8), 1 - 0.5i),
                 list("complex_float8_e4m3fnuz", c(0x40, 0xc0), 1 - 1i),
                 list("complex_float8_e8m0fnu", c(0x7f, 0x80), 1 + 2i),
                 list("complex_float6_e3m2fn", c(0x0c, 0x2c), 1 - 1i),
                 list("complex_float4_e2m1fn", c(0x02, 0x0b), 1 - 1.5i))) {
    root <- reg_hand_array(x[[1]], x[[2]], 1, fill = list(1, 1))
    a <- open_zarr(root)[["/a"]]
    expect_identical(a[], x[[3]], info = x[[1]])
    a[] <- x[[3]]
    expect_identical(reg_chunk(root), as.raw(x[[2]]), info = x[[1]])
  }
  # arrays made here
  z <- create_zarr()
  a <- z$add_array("/", "c", define_array("complex_float8_e4m3b11fnuz", 3))
  a[] <- c(1 + 1i, -0.5 + 2i, 0i)
  expect_identical(a[], c(1 + 1i, -0.5 + 2i, 0i))
  expect_identical(zarr_data_type$new("complex_float4_e2m1fn")$fill_value, list(0, 0))
})

test_that("bytes is variable-length bytes with a fill value of bytes", {
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("bytes", 4)
  b$fill_value <- as.raw(c(1, 2, 3))
  a <- z$add_array("/", "b", b)
  vals <- list(as.raw(c(0, 255)), raw(0), charToRaw("abc"), as.raw(7))
  a[] <- vals
  expect_identical(open_zarr(path)[["/b"]][], vals)
  meta <- jsonlite::fromJSON(file.path(path, "b", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$data_type, "bytes")
  expect_identical(unlist(meta$fill_value), c(1L, 2L, 3L)) # the array form
  expect_identical(meta$codecs[[1]]$name, "vlen-bytes")
  # the base64 form reads as the same bytes
  expect_identical(zarr_data_type$new("bytes", "AQID")$fill_value, as.raw(1:3))
  expect_identical(zarr_data_type$new("bytes", list(1, 2, 3))$fill_value, as.raw(1:3))
  expect_error(zarr_data_type$new("bytes", "not base64!"), class = "zarr_error_fill_value")
  expect_error(zarr_data_type$new("bytes", list(1, 256)), class = "zarr_error_fill_value")
  # a missing chunk reads as the fill value
  a2 <- z$add_array("/", "c", b)
  expect_identical(a2[1], list(as.raw(1:3)))
})

test_that("\"NaT\" is the fill value of datetime64 and timedelta64 (v3 and v2)", {
  for (dt in c("numpy.datetime64", "numpy.timedelta64")) {
    root <- tempfile("nat-")
    dir.create(file.path(root, "a"), recursive = TRUE)
    writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}}', file.path(root, "zarr.json"))
    writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type":
      {"name": "%s", "configuration": {"unit": "s", "scale_factor": 1}},
      "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
      "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
      "fill_value": "NaT", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
      "attributes": {}}', dt), file.path(root, "a", "zarr.json"))
    a <- open_zarr(root)[["/a"]]
    expect_identical(a$data_type$fill_value, "-9223372036854775808", info = dt)
    expect_true(all(is.na(a[])), info = dt)
  }
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numpy as np
z = zarr.open(sys.argv[1], mode="w", shape=(3,), chunks=(2,), dtype="M8[s]", fill_value=np.datetime64("NaT"))
z[0] = np.datetime64("2020-01-01T00:00:00")
emit(None)
', path)
  a <- open_zarr(path)[["/"]]
  got <- a[]
  expect_identical(format(got[1], tz = "UTC"), "2020-01-01")
  expect_true(all(is.na(got[2:3])))
})

test_that("raw bits r8, r16, r24, ... read and write as lists of raw vectors", {
  root <- reg_hand_array("r24", as.raw(1:9), 3, fill = list(0, 0, 0))
  a <- open_zarr(root)[["/a"]]
  expect_identical(a$data_type$size, 3L)
  expect_identical(a[], list(as.raw(1:3), as.raw(4:6), as.raw(7:9)))
  a[2] <- list(as.raw(c(0xaa, 0xbb, 0xcc)))
  expect_identical(reg_chunk(root), as.raw(c(1:3, 0xaa, 0xbb, 0xcc, 7:9)))
  expect_error(a[1] <- list(as.raw(1:2)), class = "zarr_error_value")
  # made here, with a fill value; v3 keeps it as byte values
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("r16", c(2, 2))
  b$fill_value <- as.raw(c(0xde, 0xad))
  a <- z$add_array("/", "r", b)
  a[1, 2] <- list(as.raw(c(1, 2)))
  got <- open_zarr(path)[["/r"]][]
  expect_identical(dim(got), c(2L, 2L))
  expect_identical(got[[1, 2]], as.raw(c(1, 2)))
  expect_identical(got[[2, 1]], as.raw(c(0xde, 0xad)))
  meta <- jsonlite::fromJSON(file.path(path, "r", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$data_type, "r16")
  expect_identical(unlist(meta$fill_value), c(222L, 173L))
  expect_error(zarr_data_type$new("r12"), class = "zarr_error_data_type")
  expect_error(zarr_data_type$new("r16", list(1)), class = "zarr_error_fill_value")
})

test_that("numpy void (|V) arrays of zarr-python 2 read as raw bits, and back", {
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numpy as np
z = zarr.open(sys.argv[1], mode="w", shape=(3,), chunks=(2,), dtype="V3", fill_value=None)
z[0] = np.void(b"abc")
emit(None)
', path)
  a <- open_zarr(path)[["/"]]
  expect_identical(a$data_type$data_type, "r24")
  expect_identical(a[], list(charToRaw("abc"), raw(3), raw(3)))
  a[3] <- list(charToRaw("xyz"))
  got <- run_python('
import zarr
z = zarr.open(sys.argv[1], mode="r")
emit({"v": [list(bytes(x)) for x in z[:]], "d": str(z.dtype)})
', path)
  expect_identical(lapply(got$v, function(v) as.raw(unlist(v))), list(charToRaw("abc"), raw(3), charToRaw("xyz")))
  expect_identical(got$d, "|V3")
})

test_that("packbits stores int4, uint4 and float4_e2m1fn in 4 bits each, low bits first", {
  # The registry's packbits text: int4, uint4 and float4_e2m1fn take 4 bits,
  # element i is bits [4i, 4i + 4) of the sequence, byte j is bits
  # [8j, 8j + 8), and the sequence is padded with zero bits.
  withr::local_options(zarr.fill_as_na = FALSE)
  root <- reg_hand_array("int4", c(0x00, 0x00, 0x00), 5, codecs = '[{"name": "packbits"}]')
  a <- open_zarr(root)[["/a"]]
  a[] <- c(1L, -1L, 7L, -8L, 3L) # nibbles 0x1, 0xf, 0x7, 0x8, 0x3
  expect_identical(reg_chunk(root), as.raw(c(0xf1, 0x87, 0x03)))
  expect_identical(open_zarr(root)[["/a"]][], c(1L, -1L, 7L, -8L, 3L))

  root <- reg_hand_array("uint4", c(0x00, 0x00, 0x00), 5,
                         codecs = '[{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}]')
  a <- open_zarr(root)[["/a"]]
  a[] <- c(15L, 0L, 9L, 6L, 12L)
  expect_identical(reg_chunk(root), as.raw(c(0x04, 0x0f, 0x69, 0x0c))) # 4 padding bits
  expect_identical(open_zarr(root)[["/a"]][], c(15L, 0L, 9L, 6L, 12L))

  # float4_e2m1fn: 1.0 is 0b0010, -6.0 is 0b1111, 0.5 is 0b0001
  root <- reg_hand_array("float4_e2m1fn", c(0x00, 0x00), 3, codecs = '[{"name": "packbits"}]')
  a <- open_zarr(root)[["/a"]]
  a[] <- c(1, -6, 0.5)
  expect_identical(reg_chunk(root), as.raw(c(0xf2, 0x01)))
  expect_identical(open_zarr(root)[["/a"]][], c(1, -6, 0.5))
})
