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
            fill = as.raw(c(0, 0, 0, 0)), fill_marks_missing = FALSE,
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
  str <- function(fill, kind = "vlen-utf8") hc_spec(4, 4, dtype = "string", strkind = kind, rtype = "character",
                                                   stored_size = 8, fill = fill)
  expect_classed(hc_keys(str(as.raw(c(0x61, 0, 0x62)))), "metadata") # a NUL R cannot hold
  expect_classed(hc_keys(str(as.raw(0xff))), "metadata")                # not UTF-8
  expect_identical(hc_keys(str(as.raw(c(0x61, 0, 0)), "bytes")), "x/c/0") # NUL padding is fine
  expect_identical(hc_keys(str(charToRaw("a"), "utf32")), "x/c/0")
  odd <- str(charToRaw("a"), "utf32")
  odd$stored_size <- 6 # not whole UTF-32 code units
  expect_classed(hc_keys(odd), "metadata")
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

# A codec's flat description for the single-codec entry points: every key
# the C side requires, from the package's one table of defaults.
hc_flat <- function(name, ...) {
  d <- zarr:::codec_defaults[[name]] %||% list()
  if (name == "blosc") d <- c(d, list(shuffle = 0L, typesize = 1L))
  c(list(name = name), utils::modifyList(d, list(...)))
}

test_that("decoders stop at the chunk's expected size (decompression bombs)", {
  zeros <- raw(64e6)
  zstd <- .Call(zarr:::ffi_codec_encode, hc_flat("zstd", level = 1L), zeros)
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
                                             hc_flat("blosc", cname = "zstd", clevel = 1L), zeros))
  )
  rm(zeros)
  # the stream decodes as expected when nothing bounds it
  expect_identical(length(.Call(zarr:::ffi_codec_decode, hc_flat("zstd"), zstd_nosize, NULL)), 64000000L)
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
    expect_error(.Call(zarr:::ffi_codec_decode, hc_flat(sub("numcodecs[.]", "", codec$name),
                                                       cname = "zstd"), b$bytes, 80),
                 class = "zarr_error_corrupt_chunk", info = nm)
  }
  # with no expected size (a string chunk), a header cannot claim more than its bytes can hold
  u32 <- function(v) writeBin(as.integer(v), raw(), size = 4, endian = "little")
  liar <- c(as.raw(c(2, 1, 1, 1)), u32(1e9), u32(65536), u32(48), as.raw(1:32))
  expect_error(.Call(zarr:::ffi_codec_decode, hc_flat("blosc"), liar, NULL),
               class = "zarr_error_corrupt_chunk", regexp = "can hold")
  liar <- .Call(zarr:::ffi_codec_encode, hc_flat("zstd", level = 1L), as.raw(1:100))
  expect_identical(liar[5], as.raw(0x20)) # single segment, a 1-byte content size: 100
  liar <- c(liar[1:4], as.raw(0xa0), u32(2e9), liar[-(1:6)]) # a 4-byte content size: 2e9
  expect_error(.Call(zarr:::ffi_codec_decode, hc_flat("zstd"), liar, NULL),
               class = "zarr_error_corrupt_chunk", regexp = "can hold")
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

# A local store with one string array "arr" (no compression) holding x;
# returns the path.
hc_string_store <- function(dtype, x, env = parent.frame()) {
  path <- local_store_path(env)
  z <- create_zarr(path)
  dt <- if (dtype == "string") dtype else list(name = dtype, configuration = list(length_bytes = 8))
  def <- define_array(dt, length(x))
  def$chunk_shape <- length(x)
  def$remove_codec("zstd")
  z$add_array("/", "arr", def)$write(x)
  path
}

hc_vlen <- function(items) {
  u32 <- function(v) writeBin(as.integer(v), raw(), size = 4, endian = "little")
  c(u32(length(items)), unlist(lapply(items, function(b) c(u32(length(b)), b))))
}

hc_utf32 <- function(cps) writeBin(as.integer(cps), raw(), size = 4, endian = "little")

test_that("strings R cannot hold are classed errors, and invalid UTF-8 never comes back as UTF-8", {
  path <- hc_string_store("string", c("ab", "c"))
  f <- hc_chunk_file(path)
  read <- function() tryCatch(open_zarr(path)[["/arr"]]$read(), error = identity)
  writeBin(hc_vlen(list(charToRaw("ok"), as.raw(c(0x61, 0, 0x62)))), f)
  cnd <- read()
  expect_s3_class(cnd, "zarr_error_value")
  expect_match(conditionMessage(cnd), "NUL")
  expect_match(conditionMessage(cnd), "key 'arr/", fixed = TRUE)
  bad <- list(latin1 = as.raw(c(0xff, 0xfe, 0x41)), overlong = as.raw(c(0xc0, 0xaf)),
              overlong3 = as.raw(c(0xe0, 0x80, 0xaf)), surrogate = as.raw(c(0xed, 0xa0, 0x80)),
              beyond = as.raw(c(0xf4, 0x90, 0x80, 0x80)), cut = as.raw(c(0x61, 0xe2, 0x82)))
  for (nm in names(bad)) {
    writeBin(hc_vlen(list(charToRaw("ok"), bad[[nm]])), f)
    cnd <- read()
    expect_s3_class(cnd, "zarr_error_corrupt_chunk")
    expect_match(conditionMessage(cnd), "UTF-8", info = nm)
  }
  # valid multi-byte text still reads, marked as UTF-8
  txt <- c("\u00e9t\u00e9", "\U0001F600 \u4e2d")
  writeBin(hc_vlen(lapply(txt, function(s) charToRaw(enc2utf8(s)))), f)
  got <- read()
  expect_identical(got, enc2utf8(txt))
  expect_identical(Encoding(got), c("UTF-8", "UTF-8"))

  # fixed-length UTF-32: U+0000 inside, a surrogate, beyond U+10FFFF
  path <- hc_string_store("fixed_length_utf32", c("ab", "c"))
  f <- hc_chunk_file(path)
  # two code points per element; trailing U+0000 is padding
  writeBin(hc_utf32(c(0x61, 0, 0x63, 0x64)), f)
  expect_identical(read(), c("a", "cd"))
  writeBin(hc_utf32(c(0, 0x61, 0x63, 0)), f)
  expect_s3_class(read(), "zarr_error_value")
  writeBin(hc_utf32(c(0xD800, 0, 0x63, 0)), f)
  expect_s3_class(read(), "zarr_error_corrupt_chunk")
  writeBin(hc_utf32(c(0x110000, 0, 0x63, 0)), f)
  expect_s3_class(read(), "zarr_error_corrupt_chunk")
  writeBin(hc_utf32(c(0x1F600, 0x61, 0x63, 0)), f)
  expect_identical(read(), c("\U0001F600a", "c"))

  # null-terminated bytes: an inner NUL, bytes that are not UTF-8
  path <- hc_string_store("null_terminated_bytes", c("ab", "c"))
  f <- hc_chunk_file(path)
  writeBin(c(charToRaw("a"), as.raw(0), charToRaw("b"), raw(5), charToRaw("c"), raw(7)), f)
  expect_s3_class(read(), "zarr_error_value")
  writeBin(c(as.raw(c(0xff, 0xfe)), raw(6), charToRaw("c"), raw(7)), f)
  expect_s3_class(read(), "zarr_error_value")
  writeBin(c(charToRaw("ab"), raw(6), charToRaw("c"), raw(7)), f)
  expect_identical(read(), c("ab", "c"))
})

test_that("a string chunk that fails to convert leaks nothing", {
  skip_if_not(file.exists("/proc/self/status"))
  # AddressSanitizer's quarantine holds freed memory: resident size grows
  skip_if(grepl("asan", Sys.getenv("LD_PRELOAD")), "resident memory means little under AddressSanitizer")
  n <- 50000
  path <- hc_string_store("string", rep("x", n))
  items <- rep(list(charToRaw("abcdefghijklmnopqrstuvwxyz0123456789")), n)
  items[[n]] <- as.raw(c(0x61, 0, 0x62))
  writeBin(hc_vlen(items), hc_chunk_file(path))
  arr <- open_zarr(path)[["/arr"]]
  rss <- function() {
    gc()
    s <- readLines("/proc/self/status")
    as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep("^VmRSS", s, value = TRUE)))
  }
  for (i in 1:3) try(arr$read(), silent = TRUE)
  before <- rss()
  for (i in 1:20) expect_error(arr$read(), class = "zarr_error_value")
  expect_lt(rss() - before, 40000) # kB; 20 leaked decodes would be ~100 MB; allocator noise stays below
})

test_that("text that is not valid UTF-8 is refused when written", {
  z <- create_zarr()
  arr <- z$add_array("/", "s", define_array("string", 2))
  x <- c("ok", rawToChar(as.raw(c(0x61, 0xff))))
  Encoding(x) <- "UTF-8"
  expect_error(arr$write(x), class = "zarr_error_value", regexp = "UTF-8")
  b <- rawToChar(as.raw(c(0x61, 0xe9)))
  Encoding(b) <- "bytes"
  expect_error(arr$write(c("a", b)), class = "zarr_error_value")
  arr$write(c("\u00e9", "b"))
  expect_identical(arr[], c("\u00e9", "b"))
})

test_that("a NUL byte in any metadata document is a metadata error naming the key", {
  nul_into <- function(file) {
    b <- readBin(file, "raw", file.size(file))
    writeBin(c(b[1:3], as.raw(0), b[-(1:3)]), file)
  }
  path <- local_store_path()
  z <- create_zarr(path)
  z$add_group("/", "g")
  z$add_array("/g", "arr", define_array("int32", 3))$write(1:3)
  f <- file.path(path, "g", "arr", "zarr.json")
  good <- readBin(f, "raw", file.size(f))
  nul_into(f)
  cnd <- tryCatch(open_zarr(path)[["/g/arr"]]$read(), error = identity)
  expect_s3_class(cnd, "zarr_error_metadata")
  expect_match(conditionMessage(cnd), "key 'g/arr/zarr.json'", fixed = TRUE)
  expect_match(conditionMessage(cnd), "NUL")
  writeBin(good, f)
  nul_into(file.path(path, "zarr.json"))
  expect_error(open_zarr(path), class = "zarr_error_metadata", regexp = "key 'zarr.json'")

  # Zarr v2: .zarray, .zattrs, .zgroup and .zmetadata
  withr::local_options(zarr.format = 2L)
  for (doc in c(".zarray", ".zattrs", ".zgroup", ".zmetadata")) {
    path <- local_store_path()
    z <- create_zarr(path)
    a <- z$add_array("/", "arr", define_array("int32", 3))
    a$write(1:3)
    a$set_attribute("x", 1)
    if (doc == ".zmetadata") zarr_consolidate(z)
    f <- if (doc %in% c(".zarray", ".zattrs")) file.path(path, "arr", doc) else file.path(path, doc)
    expect_true(file.exists(f), info = doc)
    nul_into(f)
    cnd <- tryCatch({
      zz <- open_zarr(path)
      zz[["/arr"]]$read()
      zz[["/arr"]]$attributes
    }, error = identity)
    if (doc == ".zmetadata") { # an unusable consolidated copy: the store itself is read
      expect_identical(open_zarr(path)[["/arr"]]$read(), 1:3)
      next
    }
    expect_s3_class(cnd, "zarr_error_metadata")
    expect_match(conditionMessage(cnd), doc, fixed = TRUE, info = doc)
  }
})

test_that("a read too large for R says what it would allocate, classed", {
  z <- create_zarr()
  def <- define_array("int32", 1e15)
  def$chunk_shape <- 1e6
  a <- z$add_array("/", "a", def)
  cnd <- tryCatch(a[], error = identity)
  expect_s3_class(cnd, "zarr_error_memory")
  expect_match(conditionMessage(cnd), "1,000,000,000,000,000 element(s) (4000.0 TB)", fixed = TRUE)
  expect_match(conditionMessage(cnd), "array '/a'", fixed = TRUE)
  def <- define_array("float64", c(2^32, 2^32))
  def$chunk_shape <- c(1024, 1024)
  expect_error(z$add_array("/", "b0", def), class = "zarr_error_metadata", regexp = "2^63", fixed = TRUE)
  def <- define_array("float64", c(2^26, 2^27))
  def$chunk_shape <- c(1024, 1024)
  b <- z$add_array("/", "b", def)
  expect_error(b[, ], class = "zarr_error_memory", regexp = "more than an R vector can")
  def <- define_array("uint8", c(2^31, 2))
  def$chunk_shape <- c(2^20, 2)
  d <- z$add_array("/", "d", def)
  expect_error(d[, ], class = "zarr_error_value", regexp = "2147483648 x 2")
  expect_identical(d[1:2, 1:2], matrix(NA_integer_, 2, 2))
  expect_identical(a[c(1, 1e15)], c(NA_integer_, NA_integer_))
})

test_that("a result the process cannot allocate is a classed memory error naming the array", {
  skip_on_cran()
  skip_on_os("windows")
  skip_if(Sys.which("bash") == "", "no bash")
  skip_if(!isTRUE(zarr:::machine_memory() > 4e9), "less than 4 GB of memory: refused before the allocation")
  skip_if(grepl("asan", Sys.getenv("LD_PRELOAD")), "AddressSanitizer cannot start under ulimit -v")
  # 3.2 GB of doubles under a 2 GB address-space limit: the engine's probe of
  # the result's memory fails (no condition handler wraps the read)
  script <- tempfile(fileext = ".R")
  writeLines(c("suppressMessages(library(zarr))", "z <- create_zarr()",
               "def <- define_array('float64', c(20000, 20000)); def$chunk_shape <- c(1000, 1000)",
               "a <- z$add_array('/', 'a', def)",
               "r <- tryCatch(a[, ], zarr_error_memory = function(e) conditionMessage(e))",
               "cat(r, sep = '\\n')",
               # a compact result (its elements outside R's heap) too
               "def <- define_array('uint16', c(40000, 40000)); def$chunk_shape <- c(1000, 1000)",
               "b <- z$add_array('/', 'b', def)",
               "r <- tryCatch(b[, ], zarr_error_memory = function(e) conditionMessage(e))",
               "cat(r, sep = '\\n')"), script)
  out <- suppressWarnings(system2("bash", c("-c", shQuote(sprintf("ulimit -v 2000000; '%s' '%s'",
                                   file.path(R.home("bin"), "Rscript"), script))), stdout = TRUE, stderr = TRUE))
  expect_match(paste(out, collapse = " "), "cannot allocate the result of 400,000,000 element(s) (3.2 GB)", fixed = TRUE)
  expect_match(paste(out, collapse = " "), "'/a'", fixed = TRUE)
  expect_match(paste(out, collapse = " "), "cannot allocate the result of 1,600,000,000 element(s)", fixed = TRUE)
  expect_match(paste(out, collapse = " "), "'/b'", fixed = TRUE)
})

test_that("a directory that is not a store is refused at once, without scanning it", {
  t0 <- proc.time()[["elapsed"]]
  # "/" itself is only a non-store while nothing left a store directly in /tmp
  # (which the scan two levels down would find, rightly)
  if (!length(Sys.glob(c("/tmp/*/zarr.json", "/tmp/*/.zgroup", "/tmp/*/.zarray", "/tmp/*/.zmetadata"))))
    expect_error(open_zarr("/", read_only = TRUE), class = "zarr_error_store")
  expect_error(open_zarr("/usr", read_only = TRUE), class = "zarr_error_store")
  expect_error(open_zarr("/etc", read_only = TRUE), class = "zarr_error_store")
  expect_lt(proc.time()[["elapsed"]] - t0, 20)
  # a symbolic link loop is not followed
  dir <- local_store_path()
  dir.create(file.path(dir, "a"), recursive = TRUE)
  file.symlink(dir, file.path(dir, "a", "loop"))
  writeLines("x", file.path(dir, "notes.txt"))
  expect_error(open_zarr(dir), class = "zarr_error_store")
  # an implicit root: metadata one or two levels down is still a store
  dir <- local_store_path()
  z <- create_zarr(dir)
  z$add_group("/", "g")
  z$add_array("/g", "arr", define_array("int32", 2))$write(1:2)
  unlink(file.path(dir, "zarr.json"))
  expect_identical(open_zarr(dir)[["/g/arr"]][], 1:2)
  # an empty directory is a new store
  dir <- local_store_path()
  dir.create(dir)
  expect_s3_class(create_zarr(dir), "zarr")
})

test_that("a metadata document that is a FIFO is refused, not waited on", {
  skip_on_os("windows")
  skip_if(Sys.which("mkfifo") == "", "no mkfifo")
  path <- hc_store()
  meta <- file.path(path, "arr", "zarr.json")
  unlink(meta)
  system2("mkfifo", meta)
  t0 <- proc.time()[["elapsed"]]
  cnd <- tryCatch(open_zarr(path)[["/arr"]]$read(), error = identity)
  expect_s3_class(cnd, "zarr_error_io")
  expect_match(conditionMessage(cnd), "not a regular file")
  expect_lt(proc.time()[["elapsed"]] - t0, 10)
  # a device
  expect_error(.Call(zarr:::ffi_file_read, "/dev/zero", NULL), class = "zarr_error_io")
  expect_null(.Call(zarr:::ffi_file_read, file.path(path, "arr"), NULL)) # a directory: no value
})

test_that("a chunk that is a FIFO is refused, not waited on", {
  skip_on_os("windows")
  skip_if(Sys.which("mkfifo") == "" || Sys.which("timeout") == "", "no mkfifo or timeout")
  # engine reads go through store_local.c's file_read(), which opens files
  # with open_regular() (src/fileio.c)
  path <- hc_store()
  chunk <- hc_chunk_file(path)
  unlink(chunk)
  system2("mkfifo", chunk)
  script <- tempfile(fileext = ".R")
  writeLines(c("library(zarr)",
               sprintf("r <- tryCatch(open_zarr('%s')[['/arr']]$read(), zarr_error_io = function(e) 'io')", path),
               "cat(identical(r, 'io'))"), script)
  out <- suppressWarnings(system2("timeout", c("20", file.path(R.home("bin"), "Rscript"), script),
                                  stdout = TRUE, stderr = TRUE))
  expect_identical(tail(out, 1), "TRUE")
})

test_that("24: bytes after a vlen chunk's last item or after a gzip stream are corrupt chunks", {
  path <- hc_string_store("string", c("ab", "c"))
  f <- hc_chunk_file(path)
  good <- readBin(f, "raw", file.size(f))
  writeBin(c(good, as.raw(c(1, 2, 3))), f)
  expect_error(open_zarr(path)[["/arr"]]$read(), class = "zarr_error_corrupt_chunk")
  writeBin(good, f)
  expect_identical(open_zarr(path)[["/arr"]]$read(), c("ab", "c"))
  gz <- .Call(zarr:::ffi_codec_encode, hc_flat("gzip", level = 5L), as.raw(1:100))
  expect_identical(.Call(zarr:::ffi_codec_decode, hc_flat("gzip"), gz, 100), as.raw(1:100))
  expect_error(.Call(zarr:::ffi_codec_decode, hc_flat("gzip"), c(gz, as.raw(7)), 100),
               class = "zarr_error_corrupt_chunk")
})
