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
                   list(name = "packbits", configuration = list(padding_encoding = "none", first_bit = 0L, last_bit = 3L)))
  expect_error(zarr_codec_packbits$new("int8", list(first_bit = 5L, last_bit = 3L)), class = "zarr_error_codec")
  expect_error(zarr_codec_packbits$new("complex64"), class = "zarr_error_codec")
})
