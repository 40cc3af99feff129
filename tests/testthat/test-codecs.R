# Codecs: configuration through the array builder, what ends up in the
# metadata and in the chunks, and round trips through every compressor.

codec_names <- function(x) vapply(x$codecs, function(cd) cd$name, "")

le_int32 <- function(v) writeBin(as.integer(v), raw(), size = 4, endian = "little")

test_that("the default chain is transpose -> bytes -> zstd, without transpose for 1-d and portable", {
  def <- define_array("int32", c(6, 4))
  expect_identical(def$codec_info$name, c("transpose", "bytes", "zstd"))
  expect_identical(def$codec_info$mode, c("array -> array", "array -> bytes", "bytes -> bytes"))
  expect_false(def$portable)
  def$portable <- TRUE
  expect_identical(def$codec_info$name, c("bytes", "zstd"))
  def$portable <- FALSE
  expect_identical(def$codec_info$name, c("transpose", "bytes", "zstd"))
  expect_identical(define_array("int32", 10)$codec_info$name, c("bytes", "zstd"))
  meta <- define_array("int32", c(6, 4, 2))$metadata()
  expect_equal(unlist(meta$codecs[[1]]$configuration$order), c(2, 1, 0))
  expect_error(def$portable <- NA, class = "zarr_error_argument")
})

test_that("add_codec() and remove_codec() edit the chain", {
  def <- define_array("int32", c(6, 4))
  def$add_codec("gzip", list(level = 5))
  expect_identical(def$codec_info$name, c("transpose", "bytes", "zstd", "gzip"))
  def$remove_codec("zstd")
  expect_identical(def$codec_info$name, c("transpose", "bytes", "gzip"))
  def$add_codec("crc32c", NULL)
  expect_identical(def$codec_info$name, c("transpose", "bytes", "gzip", "crc32c"))
  def$add_codec("zstd", list(level = 2), .position = 3)
  expect_identical(def$codec_info$name, c("transpose", "bytes", "zstd", "gzip", "crc32c"))
  def$remove_codec("transpose")
  expect_true(def$portable)
  expect_identical(def$codec_info$name, c("bytes", "zstd", "gzip", "crc32c"))
  # removing a codec that is not there changes nothing
  def$remove_codec("blosc")
  expect_identical(def$codec_info$name, c("bytes", "zstd", "gzip", "crc32c"))
  expect_true(def$is_valid())
})

test_that("codecs that do not fit are refused with a classed error, the builder unchanged", {
  def <- define_array("int32", c(6, 4))
  expect_warning(def$remove_codec("bytes"), class = "zarr_warning_codec")
  # adding "bytes" reconfigures the one bytes codec instead of adding a second
  def$add_codec("bytes", list(endian = "big"))
  expect_identical(def$codec_info$name, c("transpose", "bytes", "zstd"))
  expect_identical(def$metadata()$codecs[[2]]$configuration$endian, "big")
  expect_error(def$add_codec("bytes", list(endian = "middle")), class = "zarr_error_codec")
  expect_error(def$add_codec("gzip", list(level = 3), .position = 1), class = "zarr_error_codec")
  expect_error(def$add_codec("crc32c", NULL, .position = 2), class = "zarr_error_codec")
  expect_error(def$add_codec("gzip", list(level = 10)), class = "zarr_error_codec", regexp = "level")
  expect_error(def$add_codec("zstd", list(level = 23)), class = "zarr_error_codec")
  expect_error(def$add_codec("blosc", list(cname = "snappy")), class = "zarr_error_codec", regexp = "cname")
  expect_error(def$add_codec("blosc", list(shuffle = "sideways")), class = "zarr_error_codec")
  expect_error(def$add_codec("blosc", list(clevel = 11)), class = "zarr_error_codec")
  expect_identical(def$codec_info$name, c("transpose", "bytes", "zstd"))
  expect_error(def$add_codec("lzma"), class = "zarr_error_codec")
})

test_that("gzip compresses chunks with the configured level", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    def <- define_array("int32", c(6, 4))
    def$remove_codec("zstd")
    def$add_codec("gzip", list(level = 5))
    arr <- z$add_array("/", "gz", def)
    x <- matrix(1:24, 6)
    arr$write(x)
    expect_identical(arr$read(), x)
    chunk <- z$store$get("gz/c.0.0")
    expect_identical(chunk[1:2], as.raw(c(0x1f, 0x8b))) # gzip magic
    expect_identical(memDecompress(chunk, "gzip"), le_int32(1:24))
    meta <- jsonlite::parse_json(rawToChar(z$store$get("gz/zarr.json")))
    expect_identical(meta$codecs[[3]], list(name = "gzip", configuration = list(level = 5L)))
    expect_identical(arr$codecs[[3]]$level, 5L)
  }
})

test_that("zstd compresses chunks with the configured level and checksum", {
  z <- create_zarr()
  for (checksum in c(FALSE, TRUE)) {
    def <- define_array("float64", 50)
    def$remove_codec("zstd")
    def$add_codec("zstd", list(level = 7, checksum = checksum))
    name <- paste0("z", checksum)
    arr <- z$add_array("/", name, def)
    x <- seq(-1, 1, length.out = 50)
    arr$write(x)
    expect_identical(arr$read(), x)
    chunk <- z$store$get(paste0(name, "/c.0"))
    expect_identical(chunk[1:4], as.raw(c(0x28, 0xb5, 0x2f, 0xfd))) # zstd magic
    # frame header descriptor: bit 2 is the content checksum flag
    expect_identical(bitwAnd(as.integer(chunk[5]), 4L) != 0L, checksum)
    meta <- z$store$get_metadata(name)
    expect_identical(meta$codecs[[2]]$configuration$level, 7L)
    expect_identical(meta$codecs[[2]]$configuration$checksum, checksum)
  }
  expect_identical(z[["/zTRUE"]]$codecs[[2]]$configuration$checksum, TRUE)
})

test_that("blosc round-trips with every compressor and shuffle", {
  skip_without_codec("blosc")
  path <- local_store_path()
  z <- create_zarr(path)
  cnames <- c("blosclz", "lz4", "lz4hc", "zstd", "zlib")
  shuffles <- c("noshuffle", "shuffle", "bitshuffle")
  xf <- matrix(c(seq(-1000, 1000, length.out = 300), rep(3.25, 300)), 20, 30)
  xi <- matrix(c(seq_len(300), rep(-7L, 300)), 20, 30)
  for (cn in cnames) for (sh in shuffles) {
    for (dt in c("float64", "int16")) {
      x <- if (dt == "float64") xf else xi
      def <- define_array(dt, dim(x))
      def$chunk_shape <- c(7, 11)
      def$remove_codec("zstd")
      def$add_codec("blosc", list(cname = cn, clevel = 5, shuffle = sh))
      name <- paste(dt, cn, sh, sep = "_")
      arr <- z$add_array("/", name, def)
      arr$write(x)
      expect_identical(arr$read(), x, info = name)
      expect_identical(arr[c(20, 1), 12:30], x[c(20, 1), 12:30], info = name)
    }
  }
  z2 <- open_zarr(path, read_only = TRUE)
  for (cn in cnames) for (sh in shuffles) {
    name <- paste("float64", cn, sh, sep = "_")
    arr <- z2[[paste0("/", name)]]
    expect_identical(arr$read(), xf, info = name)
    bl <- arr$codecs[[3]]
    expect_s3_class(bl, "zarr_codec_blosc")
    expect_identical(bl$cname, cn)
    expect_identical(bl$shuffle, sh)
    expect_identical(bl$clevel, 5L)
    expect_identical(bl$typesize, 8L)
    meta <- jsonlite::read_json(file.path(path, name, "zarr.json"))
    expect_identical(meta$codecs[[3]]$configuration$cname, cn)
    expect_identical(meta$codecs[[3]]$configuration$shuffle, sh)
    expect_identical(meta$codecs[[3]]$configuration$typesize, 8L)
  }
  expect_identical(z2[["/int16_lz4_shuffle"]]$codecs[[3]]$typesize, 2L)
})

test_that("crc32c appends a CRC-32C checksum", {
  crc <- zarr_codec_crc32c$new()
  # the standard check value of CRC-32C is 0xE3069283, stored little endian
  enc <- crc$encode(charToRaw("123456789"))
  expect_identical(enc, c(charToRaw("123456789"), as.raw(c(0x83, 0x92, 0x06, 0xe3))))
  expect_identical(crc$decode(enc), charToRaw("123456789"))
  z <- create_zarr()
  def <- define_array("int16", 50)
  def$remove_codec("zstd")
  def$add_codec("crc32c")
  arr <- z$add_array("/", "c", def)
  arr$write(1:50)
  expect_identical(arr$read(), 1:50)
  chunk <- z$store$get("c/c.0")
  expect_length(chunk, 104L)
  expect_identical(chunk[1:100], writeBin(1:50, raw(), size = 2, endian = "little"))
  expect_identical(crc$encode(chunk[1:100]), chunk)
  expect_identical(z$store$get_metadata("c")$codecs[[2]]$name, "crc32c")
})

test_that("gzip + crc32c and zstd + crc32c chains round-trip", {
  z <- create_zarr()
  x <- array(as.numeric(1:120), c(4, 5, 6))
  for (comp in setdiff(c("gzip", "zstd", "blosc"), if (codec_missing("blosc")) "blosc")) {
    def <- define_array("float64", dim(x))
    def$chunk_shape <- c(3, 3, 3)
    def$remove_codec("zstd")
    def$add_codec(comp, NULL)
    def$add_codec("crc32c")
    arr <- z$add_array("/", comp, def)
    arr$write(x)
    expect_identical(arr$read(), x, info = comp)
    expect_identical(codec_names(arr), c("transpose", "bytes", comp, "crc32c"))
  }
})

test_that("the bytes codec writes big endian when configured through a metadata template", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    meta <- define_array("int32", c(3, 2))$metadata()
    meta$codecs <- meta$codecs[1:2] # transpose, bytes: no compression
    meta$codecs[[2]]$configuration$endian <- "big"
    def <- array_builder$new(meta)
    expect_identical(def$codecs[[2]]$endian, "big")
    arr <- z$add_array("/", "be", def)
    expect_identical(arr$codecs[[2]]$endian, "big")
    x <- matrix(1:6, 3)
    arr$write(x)
    expect_identical(arr$read(), x)
    expect_identical(z$store$get("be/c.0.0"), writeBin(1:6, raw(), size = 4, endian = "big"))
    # other types, with compression
    for (dt in c("int16", "uint32", "float32", "float64", "complex128", "int64")) {
      m <- define_array(dt, c(5, 4))$metadata()
      m$codecs[[2]]$configuration$endian <- "big"
      a <- z$add_array("/", paste0("be_", dt), m)
      v <- dtype_array(dt, c(5, 4))
      a$write(v)
      expect_same_values(a$read(), v)
    }
    a <- z$add_array("/", "be_f64_raw", list(
      zarr_format = 3L, node_type = "array", shape = list(3), data_type = "float64",
      chunk_grid = list(name = "regular", configuration = list(chunk_shape = list(3))),
      fill_value = "NaN", codecs = list(list(name = "bytes", configuration = list(endian = "big"))),
      attributes = structure(list(), names = character())))
    a$write(c(1.5, -2, 1e300))
    expect_identical(z$store$get("be_f64_raw/c.0"), writeBin(c(1.5, -2, 1e300), raw(), endian = "big"))
    expect_identical(a$read(), c(1.5, -2, 1e300))
    if (kind == "local") {
      z2 <- open_zarr(z$store$root)
      expect_identical(z2[["/be"]]$read(), x)
      expect_identical(z2[["/be_f64_raw"]]$read(), c(1.5, -2, 1e300))
    }
  }
})

test_that("little endian is the default and one-byte types carry no endianness", {
  meta <- define_array("int32", 4)$metadata()
  expect_identical(meta$codecs[[1]], list(name = "bytes", configuration = list(endian = "little")))
  meta <- define_array("uint8", 4)$metadata()
  expect_identical(meta$codecs[[1]], list(name = "bytes"))
  z <- create_zarr()
  def <- define_array("int32", 3)
  def$remove_codec("zstd")
  z$add_array("/", "le", def)$write(c(1L, 256L, -1L))
  expect_identical(z$store$get("le/c.0"), as.raw(c(1, 0, 0, 0, 0, 1, 0, 0, 255, 255, 255, 255)))
  expect_error(zarr_codec_bytes$new("int32", 3, list(endian = "middle")), class = "zarr_error_codec")
})

test_that("a transpose with any permutation reads back the same R array", {
  z <- create_zarr()
  x <- array(1:60, c(3, 4, 5))
  perms <- list(c(0, 1, 2), c(2, 1, 0), c(1, 2, 0), c(2, 0, 1), c(0, 2, 1))
  for (k in seq_along(perms)) {
    def <- define_array("int32", dim(x))
    def$chunk_shape <- c(2, 3, 2)
    meta <- def$metadata()
    meta$codecs[[1]]$configuration$order <- as.list(as.integer(perms[[k]]))
    arr <- z$add_array("/", paste0("t", k), meta)
    arr$write(x)
    expect_identical(arr$read(), x, info = paste(perms[[k]], collapse = ","))
    expect_identical(arr[3:1, c(4, 1), -2], x[3:1, c(4, 1), -2])
    expect_identical(arr$codecs[[1]]$order, as.integer(perms[[k]]))
  }
  tc <- zarr_codec_transpose$new(3, list(order = c(1, 2, 0)))
  expect_identical(tc$decode(tc$encode(x)), x)
  expect_identical(dim(tc$encode(x)), c(4L, 5L, 3L))
  expect_error(zarr_codec_transpose$new(3, list(order = c(0, 0, 1))), class = "zarr_error_codec")
})

test_that("codec objects encode and decode on their own", {
  payload <- as.raw(rep(0:9, 50))
  gz <- zarr_codec_gzip$new(list(level = 9))
  expect_identical(gz$decode(gz$encode(payload)), payload)
  expect_lt(length(gz$encode(payload)), length(payload))
  zs <- zarr_codec_zstd$new(list(level = 5, checksum = TRUE))
  expect_identical(zs$decode(zs$encode(payload)), payload)
  bl <- zarr_codec_blosc$new("float64", list(cname = "zlib", clevel = 9, shuffle = "bitshuffle"))
  dbl <- writeBin(as.numeric(1:100), raw())
  if (!codec_missing("blosc")) expect_identical(bl$decode(bl$encode(dbl)), dbl)
  expect_identical(bl$configuration$typesize, 8L)
  expect_error(gz$encode("text"), class = "zarr_error_codec")
  expect_error(zarr_codec_gzip$new(list(level = -1)), class = "zarr_error_codec")
  expect_error(gz$decode(as.raw(1:20)), class = "zarr_error")
  expect_output(print(gz), "gzip")
  expect_output(print(zs), "checksum")
  expect_output(print(bl), "bitshuffle")
})

test_that("blosc defaults depend on the element size", {
  expect_identical(zarr_codec_blosc$new("float64", list())$shuffle, "shuffle")
  expect_identical(zarr_codec_blosc$new("uint8", list())$shuffle, "bitshuffle")
  expect_identical(zarr_codec_blosc$new("int32", list(shuffle = 2))$shuffle, "bitshuffle")
  expect_identical(zarr_codec_blosc$new("int32", list())$typesize, 4L)
})

test_that("the codecs of an existing array cannot be changed", {
  arr <- as_zarr(1:3)[["/"]]
  expect_error(arr$codecs <- list(), class = "zarr_error_read_only")
  expect_identical(codec_names(arr), c("bytes", "zstd"))
})
