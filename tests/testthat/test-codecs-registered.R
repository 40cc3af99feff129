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
