# Codecs of the registry survey (issue 30): conditional and n5_default, with
# chunk bytes built from the registry's text
# (zarr-developers/zarr-extensions, codecs/<name>/README.md).

# A v3 array of one chunk whose codecs are given as JSON text.
reg_codec_array <- function(dtype, shape, chunk, codecs, fill = 0, key_encoding = NULL) {
  root <- tempfile("reg-codec-")
  dir.create(file.path(root, "a"), recursive = TRUE)
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}}', file.path(root, "zarr.json"))
  kenc <- key_encoding %||% '{"name": "default", "configuration": {"separator": "/"}}'
  writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": %s, "data_type": "%s",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": %s}},
    "chunk_key_encoding": %s, "fill_value": %s, "codecs": %s, "attributes": {}}',
    jsonlite::toJSON(shape), dtype, jsonlite::toJSON(chunk), kenc, fill, codecs),
    file.path(root, "a", "zarr.json"))
  root
}

test_that("conditional: a header bit per codec says which were applied (hand-built chunks)", {
  codecs <- '[{"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "conditional", "configuration": {"codecs": [
                 {"name": "zstd", "configuration": {"level": 3, "checksum": false}},
                 {"name": "crc32c"}]}}]'
  root <- reg_codec_array("int32", 6, 3, codecs)
  dir.create(file.path(root, "a", "c"))
  body0 <- writeBin(1:3, raw(), size = 4, endian = "little")
  body1 <- writeBin(4:6, raw(), size = 4, endian = "little")
  zstd <- zarr_codec_zstd$new(list(level = 3))
  crc <- zarr_codec_crc32c$new()
  # chunk 0: both applied (bits 0 and 1), chunk 1: only the checksum (bit 1)
  writeBin(c(as.raw(0x03), crc$encode(zstd$encode(body0))), file.path(root, "a", "c", "0"))
  writeBin(c(as.raw(0x02), crc$encode(body1)), file.path(root, "a", "c", "1"))
  a <- open_zarr(root)[["/a"]]
  expect_identical(a[], 1:6)
  # a header naming a codec the list does not have, a damaged checksum
  writeBin(c(as.raw(0x04), body1), file.path(root, "a", "c", "1"))
  expect_error(open_zarr(root)[["/a"]][4], class = "zarr_error_corrupt_chunk")
  bad <- c(as.raw(0x02), crc$encode(body1))
  bad[3] <- as.raw(0xff)
  writeBin(bad, file.path(root, "a", "c", "1"))
  expect_error(open_zarr(root)[["/a"]][4], class = "zarr_error_checksum")
  # writing: zstd is applied where it makes the chunk smaller, the checksum always
  root <- reg_codec_array("int32", 200, 100, codecs)
  a <- open_zarr(root)[["/a"]]
  a[1:100] <- rep(7L, 100)
  raw0 <- readBin(file.path(root, "a", "c", "0"), "raw", 1000)
  expect_identical(raw0[1], as.raw(0x03))
  expect_identical(zstd$decode(crc$decode(raw0[-1])), writeBin(rep(7L, 100), raw(), size = 4, endian = "little"))
  set.seed(1)
  noise <- sample(.Machine$integer.max, 100)
  a[101:200] <- noise # 400 bytes zstd cannot shrink
  raw1 <- readBin(file.path(root, "a", "c", "1"), "raw", 1000)
  expect_identical(raw1[1], as.raw(0x02))
  expect_identical(crc$decode(raw1[-1]), writeBin(noise, raw(), size = 4, endian = "little"))
  expect_identical(open_zarr(root)[["/a"]][], c(rep(7L, 100), noise))
})

test_that("conditional: header_bits, metadata, and what it may hold", {
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("float64", 100)
  b$chunk_shape <- 50
  b$remove_codec("zstd")
  b$add_codec("conditional", list(codecs = list(list(name = "numcodecs.shuffle", configuration = list(elementsize = 8L)),
                                                 list(name = "gzip", configuration = list(level = 5L))),
                                  header_bits = 16L))
  a <- z$add_array("/", "x", b)
  a[] <- c(rep(1, 50), runif(50))
  expect_identical(a[1:50], rep(1, 50))
  meta <- jsonlite::fromJSON(file.path(path, "x", "zarr.json"), simplifyVector = FALSE)
  cond <- meta$codecs[[2]]
  expect_identical(cond$name, "conditional")
  expect_identical(cond$configuration$header_bits, 16L)
  expect_identical(vapply(cond$configuration$codecs, `[[`, "", "name"), c("numcodecs.shuffle", "gzip"))
  raw0 <- readBin(file.path(path, "x", "c.0"), "raw", 1e4)
  expect_identical(raw0[1:2], as.raw(c(0x03, 0x00))) # two header bytes; both applied to the constant chunk
  # inside a shard's inner chunks too
  b2 <- define_array("int16", c(8, 8))
  b2$chunk_shape <- c(8, 8)
  b2$remove_codec("zstd")
  b2$add_codec("conditional", list(codecs = list(list(name = "zstd", configuration = list(level = 1L)))))
  b2$add_codec("sharding_indexed", list(chunk_shape = c(4, 4)))
  s <- z$add_array("/", "s", b2)
  m <- matrix(1:64, 8)
  s[] <- m
  expect_identical(open_zarr(path)[["/s"]][], m)
  expect_error(zarr:::codec_from_metadata(list(name = "conditional", configuration = list(
    codecs = list(list(name = "bytes")))), zarr_data_type$new("int8"), 4), class = "zarr_error_codec")
  expect_error(zarr:::codec_from_metadata(list(name = "conditional", configuration = list(
    codecs = list(list(name = "gzip")), header_bits = 4)), zarr_data_type$new("int8"), 4), class = "zarr_error_codec")
})

# An N5 default-mode block: header (mode 0, dimensions, extents; big endian)
# and the elements in Fortran order, big endian, as the registry's text says.
n5_block <- function(values, extents, size = 2L) {
  be16 <- function(x) as.raw(c(x %/% 256, x %% 256))
  be32 <- function(x) as.raw(c(x %/% 2^24, (x %/% 2^16) %% 256, (x %/% 256) %% 256, x %% 256))
  c(be16(0), be16(length(extents)), unlist(lapply(extents, be32)),
    writeBin(as.integer(values), raw(), size = size, endian = "big"))
}

test_that("n5_default reads N5 blocks, whole and truncated at the edge, and writes whole ones", {
  codecs <- '[{"name": "n5_default", "configuration": {"codecs": [
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "gzip", "configuration": {"level": 1}}]}}]'
  root <- reg_codec_array("int16", c(5, 3), c(4, 2), codecs, fill = 0,
                          key_encoding = '{"name": "v2", "configuration": {"separator": "/"}}')
  want <- outer(0:4, 0:2, function(i, j) 10L * i + j)
  gz <- zarr_codec_gzip$new(list(level = 1L))
  put <- function(key, block) {
    f <- file.path(root, "a", key)
    dir.create(dirname(f), showWarnings = FALSE, recursive = TRUE)
    head <- block[seq_len(4 + 4 * 2)]
    writeBin(c(head, gz$encode(block[-seq_len(4 + 4 * 2)])), f)
  }
  # the header is outside the compressed data; the elements first dimension fastest
  put("0/0", n5_block(as.vector(want[1:4, 1:2]), c(4, 2)))
  put("0/1", n5_block(as.vector(want[1:4, 3]), c(4, 1)))  # truncated (Java writers)
  put("1/0", n5_block(c(want[5, 1], 0, 0, 0, want[5, 2], 0, 0, 0), c(4, 2))) # padded (zarr-python, tensorstore)
  put("1/1", n5_block(want[5, 3], c(1, 1)))
  a <- open_zarr(root)[["/a"]]
  expect_identical(a[], want)
  # written here: whole blocks with the chunk's extents
  a[1:4, 3] <- c(-1L, -2L, -3L, -4L)
  raw <- readBin(file.path(root, "a", "0", "1"), "raw", 1000)
  expect_identical(raw[1:12], n5_block(integer(0), c(4, 2))[1:12])
  body <- gz$decode(raw[-(1:12)])
  expect_identical(readBin(body, "integer", 8, size = 2, endian = "big"), c(-1L, -2L, -3L, -4L, 0L, 0L, 0L, 0L))
  want[1:4, 3] <- -(1:4)
  expect_identical(open_zarr(root)[["/a"]][], want)
  # damaged headers
  writeBin(c(as.raw(c(0, 1)), raw[-(1:2)]), file.path(root, "a", "0", "1"))
  expect_error(open_zarr(root)[["/a"]][1, 3], class = "zarr_error_corrupt_chunk", regexp = "mode")
  writeBin(n5_block(1:10, c(5, 2)), file.path(root, "a", "0", "1"))
  expect_error(open_zarr(root)[["/a"]][1, 3], class = "zarr_error_corrupt_chunk")
})

test_that("n5_default: the registry's example array, and what it refuses", {
  cfg <- function(order = list(1, 0), endian = "big", more = NULL)
    list(codecs = c(list(list(name = "transpose", configuration = list(order = order)),
                         list(name = "bytes", configuration = list(endian = endian))), more))
  dt <- zarr_data_type$new("float32")
  cd <- zarr:::codec_from_metadata(list(name = "n5_default", configuration = cfg(more = list(list(name = "zstd",
    configuration = list(level = 0L, checksum = FALSE))))), dt, c(256, 128))
  expect_identical(cd$mode, "array -> bytes")
  expect_error(zarr:::codec_from_metadata(list(name = "n5_default", configuration = cfg(order = list(0, 1))), dt, c(4, 4)),
               class = "zarr_error_codec")
  expect_error(zarr:::codec_from_metadata(list(name = "n5_default", configuration = cfg(endian = "little")), dt, c(4, 4)),
               class = "zarr_error_codec")
  expect_error(zarr:::codec_from_metadata(list(name = "n5_default", configuration = cfg()), zarr_data_type$new("bool"), c(4, 4)),
               class = "zarr_error_codec")
  # the registry's example (codecs/n5_default/examples/zstd_array), written to and read back
  root <- reg_codec_array("float32", c(256, 128), c(256, 128), '[{"name": "n5_default", "configuration": {"codecs": [
    {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}},
    {"name": "zstd", "configuration": {"level": 0, "checksum": false}}]}}]',
    key_encoding = '{"name": "v2", "configuration": {"separator": "/"}}')
  a <- open_zarr(root)[["/a"]]
  expect_identical(a[1, 1], 0)
  m <- matrix(as.numeric(seq_len(256 * 128)), 256)
  a[] <- m
  expect_identical(open_zarr(root)[["/a"]][], m)
  raw <- readBin(file.path(root, "a", "0", "0"), "raw", 20)
  expect_identical(raw[1:12], as.raw(c(0, 0, 0, 2, 0, 0, 1, 0, 0, 0, 0, 128)))
})

test_that("sharding on a rectilinear chunk grid: shards of several shapes", {
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("int32", c(10, 7))
  b$chunk_shape <- list(c(4, 2, 4), c(6, 2))
  b$add_codec("sharding_indexed", list(chunk_shape = c(2, 2)))
  a <- z$add_array("/", "s", b)
  m <- matrix(1:70, 10)
  a[] <- m
  expect_identical(a[], m)
  expect_identical(open_zarr(path)[["/s"]][3:9, 2:7], m[3:9, 2:7])
  meta <- jsonlite::fromJSON(file.path(path, "s", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$chunk_grid$name, "rectilinear")
  expect_identical(meta$codecs[[1]]$name, "sharding_indexed")
  # shard (1, 0) is 2 x 6: 1 x 3 inner chunks of 2 x 2, its index 3 x 16 bytes + crc32c at the end
  f <- file.path(path, "s", "c.1.0")
  raw <- readBin(f, "raw", 1e5)
  idx <- raw[(length(raw) - 3 * 16 - 4 + 1):(length(raw) - 4)]
  expect_identical(zarr_codec_crc32c$new()$encode(idx), raw[(length(raw) - 3 * 16 - 4 + 1):length(raw)])
  offs <- readBin(idx, "integer", 6, size = 8, endian = "little")
  expect_identical(offs[1], 0L) # the first inner chunk starts the shard
  # a partial write into one shard, read back
  a[5:6, 3:4] <- matrix(-(1:4), 2)
  m[5:6, 3:4] <- -(1:4)
  expect_identical(open_zarr(path)[["/s"]][], m)
  # every chunk length must hold whole inner chunks
  b2 <- define_array("int32", c(10, 7))
  b2$chunk_shape <- list(c(4, 3, 3), 7)
  expect_error({
    b2$add_codec("sharding_indexed", list(chunk_shape = c(2, 7)))
    z$add_array("/", "t", b2)
  }, class = "zarr_error")
})
