# Hostile or extreme input reaching the C core: limits checked when an array
# is defined or opened, overflow-free counts, bounded decoders, strings that
# R cannot hold, and files that are not regular files. Every failure is a
# classed zarr_error, never a crash, a hang or a base R error.

# A local store with one int32 array "arr" of 4 elements; returns its path.
hc_store <- function(env = parent.frame(), codec = NULL, dtype = "int32", values = 1:4) {
  path <- local_store_path(env)
  z <- create_zarr(path)
  def <- define_array(dtype, length(values))
  def$chunk_shape <- length(values)
  if (!is.null(codec)) {
    def$remove_codec("zstd")
    def$add_codec(codec$name, codec$configuration)
  }
  z$add_array("/", "arr", def)$write(values)
  path
}

hc_edit_meta <- function(path, f) {
  file <- file.path(path, "arr", "zarr.json")
  meta <- jsonlite::read_json(file)
  jsonlite::write_json(f(meta), file, auto_unbox = TRUE, digits = NA)
}

hc_read <- function(path) tryCatch(open_zarr(path)[["/arr"]]$read(), error = identity)

expect_classed <- function(cnd, kind = NULL) {
  expect_s3_class(cnd, "zarr_error")
  if (!is.null(kind)) expect_s3_class(cnd, paste0("zarr_error_", kind))
}

# The engine's description of an array, as chunk_grid_regular builds it.
hc_spec <- function(.shape, .chunk, ...) {
  s <- list(name = "/x", shape = as.numeric(.shape), chunk_shape = as.numeric(.chunk),
            dtype = "int32", strkind = NA_character_, stored_size = 0, rtype = "integer",
            fill = as.raw(c(0, 0, 0, 0)), fill_is_nan = FALSE,
            codecs = list(list(name = "bytes", endian = "little")),
            key_prefix = "x/", key_sep = "/", key_v2 = FALSE)
  o <- list(...)
  s[names(o)] <- o
  s
}

hc_keys <- function(spec) {
  tryCatch(.Call(zarr:::ffi_chunk_keys, spec, matrix(0, 1, length(spec$shape))),
           error = identity)
}

test_that("the rank and codec-count limits are checked when an array is defined", {
  z <- create_zarr()
  expect_error(z$add_array("/", "a", define_array("int32", rep(1, 33))),
               class = "zarr_error_metadata", regexp = "33 dimensions")
  expect_s3_class(z$add_array("/", "b", define_array("int32", rep(1, 32))), "zarr_array")
  def <- define_array("int32", 4)
  for (i in 1:16) def$add_codec("crc32c")
  expect_error(z$add_array("/", "c", def), class = "zarr_error_metadata", regexp = "codecs")
  # and when opened from a store
  path <- hc_store()
  hc_edit_meta(path, function(m) {
    m$shape <- as.list(rep(1, 33))
    m$chunk_grid$configuration$chunk_shape <- as.list(rep(1, 33))
    m
  })
  expect_classed(hc_read(path), "metadata")
})

test_that("every error of the C description parser is classed", {
  expect_classed(hc_keys(hc_spec(rep(1, 33), rep(1, 33))), "metadata")
  expect_classed(hc_keys(hc_spec(4, 4, shape = "4")), "metadata")
  expect_classed(hc_keys(hc_spec(4, 0)), "metadata")
  expect_classed(hc_keys(hc_spec(4, c(2, 2))), "metadata")
  expect_classed(hc_keys(hc_spec(-1, 4)), "metadata")
  expect_classed(hc_keys(hc_spec(2^63, 4)), "metadata")
  expect_classed(hc_keys(hc_spec(4, 4, dtype = "float128")), "codec")
  expect_classed(hc_keys(hc_spec(4, 4, rtype = "nothing")), "value")
  expect_classed(hc_keys(hc_spec(4, 4, fill = as.raw(0))), "value")
  expect_classed(hc_keys(hc_spec(4, 4, codecs = list(list(name = "zstd")))), "codec")
  expect_classed(hc_keys(hc_spec(4, 4, codecs = list(list(name = "bytes"), list(name = "nope")))), "codec")
  many <- c(list(list(name = "bytes")), rep(list(list(name = "crc32c")), 17))
  expect_classed(hc_keys(hc_spec(4, 4, codecs = many)), "codec")
  tr <- list(list(name = "transpose", order = c(0, 0)), list(name = "bytes"))
  expect_classed(hc_keys(hc_spec(c(4, 4), c(2, 2), codecs = tr)), "codec")
  tr[[1]]$order <- c(5, 0)
  expect_classed(hc_keys(hc_spec(c(4, 4), c(2, 2), codecs = tr)), "codec")
  sh <- list(list(name = "sharding_indexed", chunk_shape = 0, codecs = list(list(name = "bytes")),
                  index_codecs = list(list(name = "bytes"))))
  expect_classed(hc_keys(hc_spec(4, 4, codecs = sh)), "codec")
  sh[[1]]$chunk_shape <- 3
  expect_classed(hc_keys(hc_spec(4, 4, codecs = sh)), "codec")
  expect_classed(hc_keys(hc_spec(4, 4, dtype = "string", strkind = "other", rtype = "character")), "codec")
  # a valid description still works
  expect_identical(hc_keys(hc_spec(4, 4)), "x/c/0")
  # no C source outside errors.c raises an unclassed error
  src <- system.file(package = "zarr")
  skip_if_not(dir.exists(file.path(test_path("..", ".."), "src")), "no package sources")
  files <- setdiff(list.files(file.path(test_path("..", ".."), "src"), "[.]c$", full.names = TRUE),
                   file.path(test_path("..", ".."), "src", "errors.c"))
  hits <- unlist(lapply(files, function(f) grep("Rf_error\\(|[^_[:alnum:]]error\\(", readLines(f), value = TRUE)))
  expect_identical(hits, character())
})

test_that("shape and chunk products that overflow 64 bits are refused when parsed", {
  # a full read used to allocate 16 elements and write far past them
  path <- hc_store()
  hc_edit_meta(path, function(m) {
    m$shape <- list(16777232, 1099510579201)
    m$chunk_grid$configuration$chunk_shape <- list(1, 1)
    m
  })
  cnd <- hc_read(path)
  expect_classed(cnd, "metadata")
  expect_match(conditionMessage(cnd), "2^63", fixed = TRUE)
  # chunk element counts that wrap
  hc_edit_meta(path, function(m) {
    m$shape <- list(4, 4)
    m$chunk_grid$configuration$chunk_shape <- list(4294967296, 4294967297)
    m
  })
  expect_classed(hc_read(path), "metadata")
  # the C parser checks the same on its own
  expect_classed(hc_keys(hc_spec(c(16777232, 1099510579201), c(1, 1))), "metadata")
  expect_classed(hc_keys(hc_spec(c(4, 4), c(2^32, 2^32 + 1))), "metadata")
  expect_classed(hc_keys(hc_spec(c(2^62, 2^62), c(1, 1))), "metadata")
  expect_classed(hc_keys(hc_spec(2^62, 2^51)), "metadata") # 2^51 int32 elements: 8 PB
  # a shard whose inner grid overflows
  sh <- list(list(name = "sharding_indexed", chunk_shape = c(1, 1), codecs = list(list(name = "bytes")),
                  index_codecs = list(list(name = "bytes"))))
  expect_classed(hc_keys(hc_spec(c(2^40, 2^40), c(2^40, 2^40), codecs = sh)), "metadata")
  # large but representable: fine to define (a sparse array), refused only when read whole
  z <- create_zarr()
  def <- define_array("int32", c(2^40, 2^20))
  def$chunk_shape <- c(1024, 1024)
  a <- z$add_array("/", "big", def)
  expect_identical(a[1:2, 1:2], matrix(NA_integer_, 2, 2))
})

# The file of the one chunk of array "arr".
hc_chunk_file <- function(path) {
  f <- setdiff(list.files(file.path(path, "arr"), recursive = TRUE), "zarr.json")
  stopifnot(length(f) == 1L)
  file.path(path, "arr", f)
}

# Peak resident memory of this process (kB), reset first where Linux allows.
hc_peak_reset <- function() {
  gc()
  ok <- tryCatch({ cat("5", file = "/proc/self/clear_refs"); TRUE }, error = function(e) FALSE,
                 warning = function(w) FALSE)
  ok && file.exists("/proc/self/status")
}
hc_peak <- function() {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep("^VmHWM", s, value = TRUE)))
}

test_that("decoders stop at the chunk's expected size (decompression bombs)", {
  zeros <- raw(64e6)
  zstd <- .Call(zarr:::ffi_codec_encode, list(name = "zstd", level = 1L), zeros)
  expect_identical(zstd[5], as.raw(0x80)) # a 4-byte content size, then a window descriptor
  zstd_nosize <- c(zstd[1:4], as.raw(0), zstd[6], zstd[-(1:10)])
  bombs <- list(
    zstd = list(codec = list(name = "zstd", configuration = list(level = 1L)), bytes = zstd),
    zstd_nosize = list(codec = list(name = "zstd", configuration = list(level = 1L)), bytes = zstd_nosize),
    gzip = list(codec = list(name = "gzip", configuration = list(level = 1L)),
                bytes = memCompress(zeros, "gzip")),
    bz2 = list(codec = NULL, bytes = memCompress(zeros, "bzip2")),
    lz4 = list(codec = NULL, bytes = c(as.raw(c(0, 0x24, 0xf4, 0x00)), as.raw(0))),
    blosc = list(codec = NULL, bytes = .Call(zarr:::ffi_codec_encode,
                                             list(name = "blosc", cname = "zstd", clevel = 1L,
                                                  shuffle = 0L, typesize = 1L), zeros))
  )
  rm(zeros)
  # the stream decodes as expected when nothing bounds it
  expect_identical(length(.Call(zarr:::ffi_codec_decode, list(name = "zstd"), zstd_nosize, NULL)), 64000000L)
  for (nm in names(bombs)) {
    b <- bombs[[nm]]
    codec <- b$codec %||% list(name = sub("_.*", "", nm), configuration = NULL)
    if (nm == "bz2") codec <- list(name = "numcodecs.bz2", configuration = list(level = 1L))
    if (nm == "lz4") codec <- list(name = "numcodecs.lz4", configuration = list())
    if (nm == "blosc") codec <- list(name = "blosc", configuration = list(cname = "zstd"))
    path <- local_store_path()
    z <- create_zarr(path)
    def <- define_array("int32", 20)
    def$chunk_shape <- 20
    def$remove_codec("zstd")
    def$add_codec(codec$name, codec$configuration)
    z$add_array("/", "arr", def)$write(1:20)
    writeBin(b$bytes, hc_chunk_file(path))
    measured <- hc_peak_reset()
    before <- if (measured) hc_peak() else 0
    cnd <- tryCatch(open_zarr(path)[["/arr"]]$read(), error = identity)
    expect_s3_class(cnd, "zarr_error_corrupt_chunk")
    expect_match(conditionMessage(cnd), "80", info = nm)
    if (measured) expect_lt(hc_peak() - before, 20000) # kB, far below the 64 MB the data holds
    # the single-codec objects are bounded by the size they are given
    expect_error(.Call(zarr:::ffi_codec_decode, list(name = sub("numcodecs[.]", "", codec$name),
                                                     cname = "zstd"), b$bytes, 80),
                 class = "zarr_error_corrupt_chunk", info = nm)
  }
  # an intermediate stage of a chain is bounded too: zstd inside gzip
  path <- local_store_path()
  z <- create_zarr(path)
  def <- define_array("int32", 20)
  def$chunk_shape <- 20
  def$add_codec("gzip", list(level = 1L))
  z$add_array("/", "arr", def)$write(1:20)
  writeBin(memCompress(zstd, "gzip"), hc_chunk_file(path))
  measured <- hc_peak_reset()
  before <- if (measured) hc_peak() else 0
  expect_error(open_zarr(path)[["/arr"]]$read(), class = "zarr_error_corrupt_chunk")
  if (measured) expect_lt(hc_peak() - before, 20000)
  # and inside a shard: one inner chunk of 20 int32 that is a zstd bomb
  path <- local_store_path()
  z <- create_zarr(path)
  def <- define_array("int32", 20)
  def$chunk_shape <- 20
  def$add_codec("sharding_indexed", list(chunk_shape = 20))
  z$add_array("/", "arr", def)$write(1:20)
  u64 <- function(v) writeBin(c(as.integer(v %% 2^32), as.integer(v %/% 2^32)), raw(), size = 4, endian = "little")
  index <- c(u64(0), u64(length(zstd_nosize)))
  crc <- writeBin(as.integer(.Call(zarr:::ffi_crc32c, index) - if (.Call(zarr:::ffi_crc32c, index) >= 2^31) 2^32 else 0),
                  raw(), size = 4, endian = "little")
  writeBin(c(zstd_nosize, index, crc), hc_chunk_file(path))
  measured <- hc_peak_reset()
  before <- if (measured) hc_peak() else 0
  expect_error(open_zarr(path)[["/arr"]]$read(), class = "zarr_error_corrupt_chunk", regexp = "80")
  if (measured) expect_lt(hc_peak() - before, 20000)
})
