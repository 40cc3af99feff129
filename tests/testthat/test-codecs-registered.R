# Codecs of the Zarr extensions registry (packbits, bitround, scale_offset,
# cast_value), the codec table's one set of defaults, and codecs written in R
# (register_zarr_codec()). Bytes are checked by hand against the
# specifications in github.com/zarr-developers/zarr-extensions, or against
# that repository's sample data.

# A v3 array whose codecs are `codecs`, written from `data` and read back;
# returns the stored chunk bytes and what reading gives.
reg_roundtrip <- function(dtype, data, codecs, fill = 0, chunk = length(data)) {
  path <- local_store_path(parent.frame())
  z <- create_zarr(path)
  meta <- list(zarr_format = 3L, node_type = "array", shape = list(length(data)), data_type = dtype,
               chunk_grid = list(name = "regular", configuration = list(chunk_shape = list(chunk))),
               chunk_key_encoding = list(name = "default", configuration = list(separator = "/")),
               fill_value = fill, codecs = codecs)
  dir.create(file.path(path, "a"))
  writeLines(zarr:::json_write(meta), file.path(path, "a", "zarr.json"))
  a <- open_zarr(path)[["/a"]]
  a[] <- data
  f <- file.path(path, "a", "c", "0")
  list(bytes = readBin(f, "raw", file.size(f)), read = open_zarr(path)[["/a"]][])
}

test_that("numcodecs filters run in their encoding order (two filters, zarr-python 2)", {
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numpy as np, numcodecs
a = zarr.open(sys.argv[1], mode="w", shape=(10,), chunks=(10,), dtype="f8", compressor=None,
              filters=[numcodecs.FixedScaleOffset(offset=100, scale=10, dtype="f8", astype="i4"),
                       numcodecs.Delta(dtype="i4", astype="i2")])
a[:] = np.arange(10) * 1.5 + 100
emit(None)
', path)
  a <- open_zarr(path)[["/"]]
  expect_equal(a[], seq(0, 9) * 1.5 + 100)
  a[] <- rev(seq(0, 9) * 1.5 + 100)
  got <- run_python('
import zarr
emit([float(x) for x in zarr.open(sys.argv[1], mode="r")[:]])
', path)
  expect_equal(unlist(got), rev(seq(0, 9) * 1.5 + 100))
})

test_that("C codecs take every configuration key from R's one table of defaults", {
  expect_error(.Call(zarr:::ffi_codec_encode, list(name = "gzip"), as.raw(1:10)),
               class = "zarr_error_codec", regexp = "lacks 'level'")
  expect_identical(zarr:::codec_defaults$gzip$level, zarr_codec_gzip$new()$level)
  expect_identical(zarr:::codec_defaults$zstd$level, zarr_codec_zstd$new()$level)
  b <- zarr_codec_blosc$new("float64")
  expect_identical(c(b$cname, b$clevel), c(zarr:::codec_defaults$blosc$cname, as.character(zarr:::codec_defaults$blosc$clevel)))
  # a v2 document without a level reads as the same default
  expect_identical(zarr:::v2_codec(list(id = "gzip"))$configuration$level, zarr:::codec_defaults$gzip$level)
})

test_that("add_codec('packbits') takes the place of the bytes codec", {
  def <- define_array("bool", 20)
  def$add_codec("packbits")
  expect_identical(def$codec_info$name, c("packbits", "zstd"))
  a <- create_zarr()$add_array("/", "flags", def)
  x <- rep(c(TRUE, FALSE, FALSE), length.out = 20)
  a[] <- x
  expect_identical(a[], x)
})

test_that("packbits packs bits least significant first, with its padding byte (hand-checked)", {
  bits <- c(TRUE, FALSE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, TRUE, TRUE)
  r <- reg_roundtrip("bool", bits, list(list(name = "packbits")), fill = FALSE)
  expect_identical(r$bytes, as.raw(c(0x0D, 0x03)))
  expect_identical(r$read, bits)
  r <- reg_roundtrip("bool", bits, list(list(name = "packbits", configuration = list(padding_encoding = "first_byte"))),
                     fill = FALSE)
  expect_identical(r$bytes, as.raw(c(0x06, 0x0D, 0x03)))
  expect_identical(r$read, bits)
  r <- reg_roundtrip("bool", bits, list(list(name = "packbits", configuration = list(padding_encoding = "last_byte")),
                                        list(name = "crc32c")), fill = FALSE)
  expect_identical(r$bytes[1:3], as.raw(c(0x0D, 0x03, 0x06)))
  expect_identical(r$read, bits)
  # 4-bit signed integers: bits 0..3 of int8, sign-extended when read
  r <- reg_roundtrip("int8", c(-8L, -1L, 0L, 7L, 3L),
                     list(list(name = "packbits", configuration = list(first_bit = 0L, last_bit = 3L))),
                     fill = 5L)
  expect_identical(r$bytes, as.raw(c(0xF8, 0x70, 0x03)))
  expect_identical(r$read, c(-8L, -1L, 0L, 7L, 3L))
  # bits 4..11 of uint16: the rest reads as zero
  r <- reg_roundtrip("uint16", c(0x0ABC, 0x1230),
                     list(list(name = "packbits", configuration = list(first_bit = 4L, last_bit = 11L))))
  expect_identical(r$bytes, as.raw(c(0xAB, 0x23)))
  expect_identical(r$read, c(0x0AB0L, 0x0230L))
  # full-width types are the little-endian bytes; with a compressor after it
  r <- reg_roundtrip("float64", c(1.5, -2, NaN), list(list(name = "packbits"), list(name = "zstd", configuration = list(level = 3L))))
  expect_identical(r$read, c(1.5, -2, NaN))
  # the codec object runs the same C path
  cd <- zarr_codec_packbits$new("int8", list(first_bit = 0L, last_bit = 3L))
  expect_identical(cd$encode(as.raw(c(0xF8, 0xFF, 0, 7, 3))), as.raw(c(0xF8, 0x70, 0x03)))
  expect_identical(cd$decode(as.raw(c(0xF8, 0x70, 0x03))), as.raw(c(0xF8, 0xFF, 0, 7, 3, 0)))
  expect_identical(cd$metadata_fragment(),
                   list(name = "packbits", configuration = list(last_bit = 3L)))
  expect_identical(zarr_codec_packbits$new("bool")$metadata_fragment(), list(name = "packbits"))
  expect_error(zarr_codec_packbits$new("int8", list(first_bit = 5L, last_bit = 3L)), class = "zarr_error_codec")
  expect_error(zarr_codec_packbits$new("complex64"), class = "zarr_error_codec")
})

test_that("bitround under its registered name matches the registry's sample data", {
  # zarr-extensions codecs/bitround/sample_data, keepbits 3: uint8 and float32
  u8 <- c(0L, 1L, 10L, 11L, 100L, 123L, 200L, 208L, 209L, 255L)
  r <- reg_roundtrip("uint8", u8, list(list(name = "bitround", configuration = list(keepbits = 3L)),
                                       list(name = "bytes")), fill = 300 - 300)
  expect_identical(r$bytes, as.raw(c(0x00, 0x01, 0x0a, 0x0c, 0x60, 0x80, 0xc0, 0xc0, 0xe0, 0xe0)))
  f32 <- c(0, 0.1, 1.2, 12.3, 123.4, 1234.5, NaN, Inf, -Inf)
  r <- reg_roundtrip("float32", f32, list(list(name = "bitround", configuration = list(keepbits = 3L)),
                                          list(name = "bytes", configuration = list(endian = "little"))),
                     fill = 7)
  expect_identical(r$bytes, as.raw(c(0, 0, 0, 0, 0, 0, 0xd0, 0x3d, 0, 0, 0xa0, 0x3f, 0, 0, 0x40, 0x41,
                                     0, 0, 0xf0, 0x42, 0, 0, 0xa0, 0x44, 0, 0, 0xc0, 0x7f,
                                     0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff)))
  expect_equal(r$read, c(0, 0.1015625, 1.25, 12, 120, 1280, NaN, Inf, -Inf))
  # big-endian bytes codec after it: the same values, bytes reversed
  r2 <- reg_roundtrip("float32", f32, list(list(name = "bitround", configuration = list(keepbits = 3L)),
                                           list(name = "bytes", configuration = list(endian = "big"))), fill = 7)
  expect_identical(r2$bytes[5:8], as.raw(c(0x3d, 0xd0, 0, 0)))
  expect_identical(r2$read, r$read)
  # signed integers round their magnitude
  cd <- zarr_codec_bitround$new("int16", list(keepbits = 2L))
  expect_identical(readBin(cd$encode(writeBin(c(-7L, 7L, 100L), raw(), size = 2L, endian = "little")),
                           "integer", n = 3L, size = 2L, endian = "little"), c(-8L, 8L, 96L))
  expect_error(zarr_codec_bitround$new("float32", list()), class = "zarr_error_codec")
})

test_that("scale_offset and cast_value store floats as small integers (spec examples, hand-checked)", {
  codecs <- list(list(name = "scale_offset", configuration = list(offset = -10, scale = 0.1)),
                 list(name = "cast_value", configuration = list(
                   data_type = "uint8", rounding = "nearest-even",
                   scalar_map = list(encode = list(list("NaN", 0L)), decode = list(list(0L, "NaN"))))),
                 list(name = "bytes"))
  r <- reg_roundtrip("float64", c(NaN, 0, 2540, 5), codecs, fill = "NaN")
  expect_identical(r$bytes, as.raw(c(0x00, 0x01, 0xff, 0x02)))
  expect_equal(r$read, c(NaN, 0, 2540, 10))
  # uint16 range reduction: offset 1000, then uint8; big-endian bytes make no difference
  codecs <- list(list(name = "scale_offset", configuration = list(offset = 1000L)),
                 list(name = "cast_value", configuration = list(data_type = "uint8")),
                 list(name = "bytes", configuration = list(endian = "big")), list(name = "crc32c"))
  r <- reg_roundtrip("uint16", c(1000L, 1001L, 1255L), codecs, fill = 1000L)
  expect_identical(r$bytes[1:3], as.raw(c(0, 1, 255)))
  expect_identical(r$read, c(NA, 1001L, 1255L)) # 1000 is the fill value: NA in R
  # scale_offset alone keeps the type: float64 (x - 5) * 0.1
  r <- reg_roundtrip("float64", c(15, 5), list(list(name = "scale_offset", configuration = list(offset = 5, scale = 0.1)),
                                               list(name = "bytes")), fill = 1)
  expect_identical(readBin(r$bytes, "double", n = 2L), c(1, 0))
  expect_equal(r$read, c(15, 5))
  expect_identical(zarr_codec_cast_value$new("int16", list(data_type = "int8"))$data_type, "int8")
})

test_that("cast_value refuses, clamps or wraps values beyond the target (hand-checked)", {
  enc16 <- function(x) writeBin(as.integer(x), raw(), size = 2L, endian = "little")
  cd <- zarr_codec_cast_value$new("int16", list(data_type = "int8"))
  expect_identical(cd$encode(enc16(c(-5, 100))), as.raw(c(0xfb, 0x64)))
  expect_error(cd$encode(enc16(300)), class = "zarr_error_value", regexp = "out of the range")
  cd <- zarr_codec_cast_value$new("int16", list(data_type = "int8", out_of_range = "clamp"))
  expect_identical(cd$encode(enc16(c(300, -300))), as.raw(c(0x7f, 0x80)))
  cd <- zarr_codec_cast_value$new("int16", list(data_type = "int8", out_of_range = "wrap"))
  expect_identical(cd$encode(enc16(c(300, -129))), as.raw(c(44, 127)))
  f64 <- function(x) writeBin(as.double(x), raw(), size = 8L, endian = "little")
  cd <- zarr_codec_cast_value$new("float64", list(data_type = "int8", rounding = "towards-zero"))
  expect_identical(cd$encode(f64(c(2.7, -2.7))), as.raw(c(2, 0xfe)))
  cd <- zarr_codec_cast_value$new("float64", list(data_type = "int8"))
  expect_identical(cd$encode(f64(c(2.5, 3.5, -2.5))), as.raw(c(2, 4, 0xfe))) # ties to even
  expect_error(cd$encode(f64(NaN)), class = "zarr_error_value", regexp = "scalar_map")
  expect_identical(readBin(cd$decode(as.raw(c(0xfe, 5))), "double", n = 2L), c(-2, 5))
  expect_error(zarr_codec_cast_value$new("float64", list(data_type = "float32", out_of_range = "wrap")),
               class = "zarr_error_codec")
  expect_error(zarr_codec_cast_value$new("float64", list(data_type = "uint8", colour = 1)),
               class = "zarr_error_codec")
})

test_that("a codec written in R round-trips through a real store (register_zarr_codec)", {
  calls <- 0L
  xor_bytes <- function(data, configuration) {
    calls <<- calls + 1L
    xor(data, as.raw(configuration$key))
  }
  register_zarr_codec("test.xor", xor_bytes, xor_bytes)
  path <- local_store_path()
  z <- create_zarr(path)
  def <- define_array("int32", 40)
  def$chunk_shape <- 10
  def$remove_codec("zstd")
  def$add_codec("test.xor", list(key = 42L))
  def$add_codec("crc32c")
  withr::local_options(zarr.num_threads = 4L) # a chain with an R codec runs on the R thread
  a <- z$add_array("/", "x", def)
  a[] <- 1:40
  expect_identical(calls, 4L)
  # hand-checked: the little-endian int32 bytes xor 42, then the crc32c
  f <- file.path(path, "x", "c.0")
  stored <- readBin(f, "raw", file.size(f))
  expect_identical(stored[1:8], xor(as.raw(c(1, 0, 0, 0, 2, 0, 0, 0)), as.raw(42)))
  expect_length(stored, 44L)
  b <- open_zarr(path)[["/x"]]
  expect_identical(b[], 1:40)
  expect_identical(b[c(3, 25)], c(3L, 25L))
  meta <- jsonlite::fromJSON(file.path(path, "x", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$codecs[[2]], list(name = "test.xor", configuration = list(key = 42L)))
  # the codec object runs the same C path as the engine
  cd <- b$codecs[[2]]
  expect_identical(cd$encode(as.raw(1:3)), xor(as.raw(1:3), as.raw(42)))
  # an error in the R function is a classed error naming the codec
  register_zarr_codec("test.xor", xor_bytes, function(data, configuration) stop("no key here"))
  expect_error(open_zarr(path)[["/x"]][], class = "zarr_error_corrupt_chunk", regexp = "no key here")
  register_zarr_codec("test.xor", function(data, configuration) "text", xor_bytes)
  expect_error(open_zarr(path)[["/x"]][1] <- 5L, class = "zarr_error_codec", regexp = "raw vector")
  expect_error(register_zarr_codec("gzip", xor_bytes, xor_bytes), class = "zarr_error_argument")
})

test_that("reshape keeps the elements' C order (hand-checked) and checks its shape", {
  m <- matrix(1:12, 3, 4) # a 3 x 4 array in one chunk
  reg_roundtrip_2d <- function(codecs) {
    path <- local_store_path(parent.frame())
    z <- create_zarr(path)
    meta <- list(zarr_format = 3L, node_type = "array", shape = list(3L, 4L), data_type = "int16",
                 chunk_grid = list(name = "regular", configuration = list(chunk_shape = list(3L, 4L))),
                 chunk_key_encoding = list(name = "default", configuration = list(separator = "/")),
                 fill_value = 0L, codecs = codecs)
    dir.create(file.path(path, "a"))
    writeLines(zarr:::json_write(meta), file.path(path, "a", "zarr.json"))
    a <- open_zarr(path)[["/a"]]
    a[] <- m
    f <- file.path(path, "a", "c", "0", "0")
    list(bytes = readBin(f, "raw", file.size(f)), read = open_zarr(path)[["/a"]][])
  }
  ref <- reg_roundtrip_2d(list(list(name = "bytes")))
  # C order of the 3 x 4 array: row by row
  expect_identical(readBin(ref$bytes, "integer", n = 12L, size = 2L), as.integer(t(m)))
  for (shape in list(list(list(0L, 1L)), list(-1L), list(2L, 6L), list(list(0L), list(1L)), list(3L, 2L, 2L))) {
    r <- reg_roundtrip_2d(list(list(name = "reshape", configuration = list(shape = shape)),
                               list(name = "bytes"), list(name = "gzip", configuration = list(level = 1L))))
    expect_identical(r$read, m)
    r <- reg_roundtrip_2d(list(list(name = "reshape", configuration = list(shape = shape)), list(name = "bytes")))
    expect_identical(r$bytes, ref$bytes)
  }
  cd <- zarr_codec_reshape$new(c(3, 4), list(shape = list(-1L, 2L)))
  expect_identical(cd$output_shape, c(6, 2))
  expect_error(zarr_codec_reshape$new(c(3, 4), list(shape = list(5L, -1L))), class = "zarr_error_codec")
  expect_error(zarr_codec_reshape$new(c(3, 4), list(shape = list(list(1L), list(0L)))), class = "zarr_error_codec")
  expect_error(zarr_codec_reshape$new(c(3, 4), list(shape = list(2L, list(1L)))), class = "zarr_error_codec")
  expect_error(reg_roundtrip_2d(list(list(name = "reshape", configuration = list(shape = list(12L))),
                                     list(name = "transpose", configuration = list(order = list(0L))),
                                     list(name = "bytes"))), class = "zarr_error_unsupported")
})

test_that("cast_value refuses a fill value it cannot cast", {
  d <- define_array("float64", 10) # fill value NaN
  expect_error(d$add_codec("cast_value", list(data_type = "int16"), .position = 1), "scalar_map",
               class = "zarr_error_codec")
  expect_error(zarr_codec_cast_value$new(zarr_data_type$new("float64", "NaN"), list(data_type = "uint8")),
               class = "zarr_error_codec", regexp = "fill value")
  expect_s3_class(zarr_codec_cast_value$new(zarr_data_type$new("float64", "NaN"),
                                            list(data_type = "uint8", scalar_map = list(encode = list(list("NaN", 0L))))),
                  "zarr_codec_cast_value")
})

test_that("nested sharding is written and read back (hand-checked bytes)", {
  path <- local_store_path()
  z <- create_zarr(path)
  le <- list(name = "bytes", configuration = list(endian = "little"))
  inner <- list(name = "sharding_indexed", configuration = list(
    chunk_shape = list(2L, 2L), codecs = list(le, list(name = "gzip", configuration = list(level = 1L))),
    index_codecs = list(le, list(name = "crc32c")), index_location = "end"))
  d <- define_array("int32", c(8, 8))
  d$portable <- TRUE # C order, no transpose
  d$chunk_shape <- c(8, 8)
  d$remove_codec("zstd")
  suppressWarnings(d$remove_codec("bytes")) # the sharding codec takes its place
  d$add_codec("sharding_indexed", list(chunk_shape = list(4L, 4L), codecs = list(inner),
                                       index_codecs = list(le, list(name = "crc32c")), index_location = "start"))
  a <- z$add_array("/", "n", d)
  m <- matrix(1:64, 8, 8)
  m[5:8, 1:4] <- NA # inner shard (1, 0) holds only the fill value
  a[] <- m
  expect_identical(open_zarr(path)[["/n"]][], m)
  expect_identical(open_zarr(path)[["/n"]][6:7, 3:6], m[6:7, 3:6])
  f <- file.path(path, "n", "c.0.0")
  b <- readBin(f, "raw", file.size(f))
  u32 <- function(r) readBin(r, "integer", n = length(r) / 4L, size = 4L, endian = "little")
  outer <- matrix(u32(b[1:64]), 4) # (offset lo, hi, length lo, hi) per inner shard, C order
  expect_identical(outer[, 3], rep(-1L, 4)) # absent: 2^64 - 1
  expect_identical(outer[1, 1], 68L) # after the 64-byte index and its crc32c
  s <- b[outer[1, 1] + seq_len(outer[3, 1])] # inner shard (0, 0), its index at the end
  ii <- matrix(u32(s[length(s) - 67:4]), 4)
  first <- s[ii[1, 1] + seq_len(ii[3, 1])]
  # innermost chunk (0, 0): rows 1-2, columns 1-2 of m in C order
  expect_identical(u32(memDecompress(first, type = "gzip")), c(1L, 9L, 2L, 10L))
})

test_that("a codec written in R works in Zarr v2 too (as the compressor)", {
  rev_bytes <- function(data, configuration) rev(data)
  register_zarr_codec("test.reverse", rev_bytes, rev_bytes)
  withr::local_options(zarr.format = 2L)
  path <- local_store_path()
  z <- create_zarr(path)
  d <- define_array("int16", 6)
  d$remove_codec("zstd")
  d$add_codec("test.reverse")
  a <- z$add_array("/", "r", d)
  a[] <- 1:6
  doc <- jsonlite::fromJSON(file.path(path, "r", ".zarray"), simplifyVector = FALSE)
  expect_identical(doc$compressor$id, "test.reverse")
  f <- file.path(path, "r", "0")
  expect_identical(readBin(f, "raw", 12L), rev(writeBin(1:6, raw(), size = 2L, endian = "little")))
  expect_identical(open_zarr(path)[["/r"]][], 1:6)
})
