# Regression tests for the defects of the "Hardening" issue (R side): each
# test failed before its fix. The numbers are the issue's item numbers.

read_text <- function(...) paste(readLines(file.path(...), warn = FALSE), collapse = "\n")

local_v2 <- function(env = parent.frame()) {
  withr::local_options(zarr.format = 2L, .local_envir = env)
  p <- local_store_path(env)
  list(path = p, z = create_zarr(p))
}

test_that("3: a v2 root attribute set after zarr_consolidate() reaches .zmetadata", {
  s <- local_v2()
  s$z$add_group("/", "g")
  zarr_consolidate(s$z)
  s$z$root$set_attribute("title", "after")
  zm <- jsonlite::fromJSON(file.path(s$path, ".zmetadata"), simplifyVector = FALSE)
  expect_identical(zm$metadata[[".zattrs"]], list(title = "after"))
  # and after reopening, from the store itself
  z2 <- open_zarr(s$path)
  z2$root$set_attribute("n", 2L)
  zm <- jsonlite::fromJSON(file.path(s$path, ".zmetadata"), simplifyVector = FALSE)
  expect_identical(zm$metadata[[".zattrs"]], list(title = "after", n = 2L))
  z2$root$delete_attributes("title")
  zm <- jsonlite::fromJSON(file.path(s$path, ".zmetadata"), simplifyVector = FALSE)
  expect_identical(zm$metadata[[".zattrs"]], list(n = 2L))
})

test_that("4: 64-bit integers in metadata round-trip exactly when saved again and consolidated", {
  s <- local_v2()
  s$z$add_array("/", "u", define_array("uint64", 4))
  ns <- list(name = "numpy.datetime64", configuration = list(unit = "ns", scale_factor = 1L))
  s$z$add_array("/", "t", define_array(ns, 3))
  z2 <- open_zarr(s$path)
  z2[["/u"]]$set_attribute("x", 1L)
  z2[["/t"]]$set_attribute("x", 1L)
  zarr_consolidate(z2)
  expect_match(read_text(s$path, "u", ".zarray"), "\"fill_value\": 18446744073709551615,", fixed = TRUE)
  expect_match(read_text(s$path, "t", ".zarray"), "\"fill_value\": -9223372036854775808,", fixed = TRUE)
  zm <- read_text(s$path, ".zmetadata")
  expect_match(zm, "\"fill_value\": 18446744073709551615,", fixed = TRUE)
  expect_match(zm, "\"fill_value\": -9223372036854775808,", fixed = TRUE)
  expect_no_match(zm, "e+", fixed = TRUE)
  # integers of any size in attributes, in v3 too
  z <- create_zarr()
  z$root$set_attribute("big", 1)
  doc <- '{"zarr_format": 3, "node_type": "group", "attributes": {"a": 18446744073709551615, "b": [-9223372036854775808, 9007199254740993, 12], "c": "12345678901234567890"}}'
  z$store$set("zarr.json", charToRaw(doc))
  z3 <- zarr$new(z$store)
  expect_identical(z3$root$attributes$a, "18446744073709551615")
  z3$root$set_attribute("d", 1L)
  txt <- rawToChar(z$store$get("zarr.json"))
  expect_match(txt, "\"a\": 18446744073709551615,", fixed = TRUE)
  expect_match(txt, "\"b\": [-9223372036854775808, 9007199254740993, 12]", fixed = TRUE)
  expect_match(txt, "\"c\": \"12345678901234567890\"", fixed = TRUE)
  # whole doubles up to 2^53 are written as integers
  z3$root$set_attribute("e", c(1e15, 2^53))
  expect_match(rawToChar(z$store$get("zarr.json")), "\"e\": [1000000000000000, 9007199254740992]", fixed = TRUE)
})

test_that("5: v2 zstd metadata carries no default checksum key", {
  s <- local_v2()
  s$z$add_array("/", "x", define_array("int16", 10))
  comp <- jsonlite::fromJSON(file.path(s$path, "x", ".zarray"), simplifyVector = FALSE)$compressor
  expect_identical(comp, list(id = "zstd", level = 1L))
  d <- define_array("int16", 10)
  d$remove_codec("zstd")
  d$add_codec("zstd", list(level = 3L, checksum = TRUE))
  a <- s$z$add_array("/", "y", d)
  comp <- jsonlite::fromJSON(file.path(s$path, "y", ".zarray"), simplifyVector = FALSE)$compressor
  expect_identical(comp, list(id = "zstd", level = 3L, checksum = TRUE))
  a[] <- 1:10
  expect_identical(open_zarr(s$path)[["/y"]][], 1:10)
})

test_that("6: non-ASCII text in metadata is written as \\u escapes and read back", {
  for (fmt in 2:3) {
    withr::local_options(zarr.format = fmt)
    p <- local_store_path()
    z <- create_zarr(p)
    txt <- paste0("caf\u00e9 \u65e5\u672c \U0001F600 tab\there ", intToUtf8(1L))
    z$root$set_attribute("title", txt)
    a <- z$add_array("/", "a", define_array("int8", 2))
    a$dimension_names <- "\u00e9t\u00e9"
    files <- list.files(p, recursive = TRUE, all.files = TRUE)
    files <- files[basename(files) %in% c("zarr.json", ".zattrs", ".zarray", ".zgroup")]
    for (f in files) {
      bytes <- readBin(file.path(p, f), "raw", 1e6)
      expect_true(all(bytes < as.raw(0x80)), info = f)
    }
    root_doc <- read_text(p, if (fmt == 3) "zarr.json" else ".zattrs")
    expect_match(root_doc, "\"title\": \"caf\\u00e9 \\u65e5\\u672c \\ud83d\\ude00 tab\\there \\u0001\"", fixed = TRUE)
    z2 <- open_zarr(p)
    expect_identical(z2$root$attributes$title, txt)
    expect_identical(z2[["/a"]]$dimension_names, "\u00e9t\u00e9")
  }
})

# A writable copy of a shared fixture store.
fixture_copy <- function(rel, env = parent.frame()) {
  skip_without_fixtures()
  src <- file.path(fixtures_dir(), rel)
  p <- local_store_path(env)
  dir.create(p)
  file.copy(list.files(src, full.names = TRUE, all.files = TRUE, no.. = TRUE), p, recursive = TRUE)
  Sys.chmod(list.files(p, full.names = TRUE, recursive = TRUE, all.files = TRUE, include.dirs = TRUE),
            "755", use_umask = FALSE)
  p
}

test_that("7: a v2 |O string array with fill value 0 reads stored and missing elements as \"\"", {
  skip_without_fixtures()
  z <- open_zarr(file.path(fixtures_dir(), "zarr-python/compat/str_v2_fv_0.zarr"), read_only = TRUE)
  a <- z[["/"]]
  # "" was written explicitly at [3:4]; [5] is in a chunk never written. A
  # fill value of 0 ("") marks nothing as missing.
  expect_identical(a$read(), c("a", "bb", "", "", ""))
  expect_identical(a$read(fill_as_na = FALSE), c("a", "bb", "", "", ""))
  expect_identical(a[4:5], c("", ""))
  # a fill value of null means none: nothing is NA
  z <- open_zarr(file.path(fixtures_dir(), "zarr-python/compat/str_v2_fv_null.zarr"), read_only = TRUE)
  expect_identical(z[["/"]]$read(), c("a", "bb", "", "", ""))
})

test_that("13: NA in a character vector is written as the fill value and read back as NA", {
  for (fmt in 2:3) {
    withr::local_options(zarr.format = fmt)
    z <- create_zarr()
    d <- define_array("string", 5)
    d$fill_value <- "missing"
    a <- z$add_array("/", "s", d)
    a[1:4] <- c("a", NA, "missing", "")
    expect_identical(a[], c("a", NA, NA, "", NA))
    expect_identical(a$read(fill_as_na = FALSE), c("a", "missing", "missing", "", "missing"))
    # the default fill value of a string array, "NA", keeps NA apart from ""
    b <- z$add_array("/", "t", define_array("string", c(2, 2)))
    expect_silent(b[, ] <- matrix(c("x", NA, "", "y"), 2))
    expect_identical(b$read(fill_as_na = FALSE), matrix(c("x", "NA", "", "y"), 2))
    expect_identical(b[, ], matrix(c("x", NA, "", "y"), 2))
    # a fixed-width type's default fill value "" marks nothing as missing
    u <- z$add_array("/", "u", define_array(list(name = "fixed_length_utf32", configuration = list(length_bytes = 8L)), 3))
    expect_warning(u[] <- c("ab", NA, "c"), class = "zarr_warning_na")
    expect_identical(u[], c("ab", "", "c"))
    expect_identical(u$read(fill_as_na = FALSE), c("ab", "", "c"))
  }
})

test_that("10: v2 json2 arrays are written in the numcodecs JSON format and read back", {
  p <- fixture_copy("zarr-python/v2.zarr")
  z <- open_zarr(p)
  a <- z[["/1d.contiguous.json2.O"]]
  expect_identical(a[], c("foo", "bar", "baz", "qux"))
  a[2:3] <- c("\u00e9", "z")
  expect_identical(rawToChar(readBin(file.path(p, "1d.contiguous.json2.O", "0"), "raw", 100)),
                   "[\"foo\",\"\\u00e9\",\"z\",\"qux\",\"|O\",[4]]")
  expect_identical(open_zarr(p)[["/1d.contiguous.json2.O"]][], c("foo", "\u00e9", "z", "qux"))
  # saving the metadata again keeps the json2 filter and its configuration
  a$set_attribute("k", 1L)
  f <- jsonlite::fromJSON(file.path(p, "1d.contiguous.json2.O", ".zarray"), simplifyVector = FALSE)$filters
  expect_identical(f[[1]]$id, "json2")
  expect_identical(f[[1]]$separators, list(",", ":"))
  # a new 2-d json2 array with a compressor: nested lists in C order
  d <- define_array("string", c(3, 5))
  d$chunk_shape <- c(2, 2)
  d$portable <- TRUE
  d$add_codec("json2")
  expect_identical(d$codec_info$name, c("json2", "zstd"))
  b <- z$add_array("/", "j2", d)
  x <- matrix(letters[1:15], 3)
  b[] <- x
  expect_identical(open_zarr(p)[["/j2"]][], x)
  raw <- readBin(file.path(p, "j2", "1.2"), "raw", 1000)
  expect_identical(rawToChar(zarr_codec_zstd$new()$decode(raw)), "[[\"o\",\"NA\"],[\"NA\",\"NA\"],\"|O\",[2,2]]")
  b[3, 5] <- NA # stored as the default fill value "NA"
  expect_identical(b$read(fill_as_na = FALSE)[3, ], c("c", "f", "i", "l", "NA"))
  expect_identical(b[2:3, 4:5], matrix(c("k", "l", "n", NA), 2))
  expect_identical(jsonlite::fromJSON(file.path(p, "j2", ".zarray"), simplifyVector = FALSE)$filters,
                   list(list(id = "json2")))
})

test_that("15: the array -> bytes codec of a string array cannot be removed", {
  d <- define_array("string", 4)
  expect_warning(d$remove_codec("vlen-utf8"), class = "zarr_warning_codec")
  expect_identical(d$codec_info$name, c("vlen-utf8", "zstd"))
  expect_true(d$is_valid())
  d$remove_codec("zstd")
  expect_identical(d$codec_info$name, "vlen-utf8")
  d$remove_codec("gzip") # not there: nothing happens
  expect_identical(d$codec_info$name, "vlen-utf8")
})

test_that("20: print() of string arrays works, the shared fixtures included", {
  z <- create_zarr()
  a <- z$add_array("/", "s", define_array("string", 3))
  a[] <- c("x", "yy", "zzz")
  out <- capture.output(print(a))
  expect_match(out, "^Stored     : [0-9]+ B", all = FALSE)
  skip_without_fixtures()
  for (rel in c("zarr-python/compat/str_v2_fv_0.zarr", "zarr-python/compat/cities_v3.zarr")) {
    zz <- open_zarr(file.path(fixtures_dir(), rel), read_only = TRUE)
    for (path in zz$arrays) expect_output(print(zz[[path]]), "Data type  : string", info = rel)
  }
  zz <- open_zarr(file.path(fixtures_dir(), "zarr-python/v2.zarr"), read_only = TRUE)
  for (path in zz$arrays) expect_output(print(zz[[path]]), "Shape", info = path)
})

open_zarr_or_same <- function(z, kind) if (kind == "local") open_zarr(z$store$root) else z

test_that("8: zarr_group$delete() with a path deletes that node, not a namesake at the top", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    z$add_group("/", "a")
    z$add_array("/a", "x", define_array("int8", 2))
    top <- z$add_array("/", "x", define_array("int8", 2))
    top[] <- 1:2
    z$root$delete("a/x")
    expect_null(z[["/a/x"]])
    expect_identical(z[["/x"]][], 1:2)
    expect_identical(sort(z$arrays), "/x")
    z$add_array("/a", "y", define_array("int8", 2))
    z[["/a"]]$delete("/a/y") # an absolute path to a direct child
    expect_null(z[["/a/y"]])
    expect_error(z$root$delete("a/nothing"), class = "zarr_error_not_found")
    expect_error(z$root$delete("nothing"), class = "zarr_error_not_found")
    expect_identical(open_zarr_or_same(z, kind)$arrays, "/x")
  }
})

test_that("9: zarr_localstore$erase() of a non-empty group refuses before removing anything", {
  p <- local_store_path()
  z <- create_zarr(p)
  g <- z$add_group("/", "g")
  g$set_attribute("keep", "me")
  z$add_array("/g", "x", define_array("int8", 2))
  expect_error(z$store$erase("g"), class = "zarr_error_not_empty")
  expect_true(file.exists(file.path(p, "g", "zarr.json")))
  expect_identical(open_zarr(p)[["/g"]]$attributes$keep, "me")
  withr::local_options(zarr.format = 2L)
  p2 <- local_store_path()
  z2 <- create_zarr(p2)
  g2 <- z2$add_group("/", "g")
  g2$set_attribute("keep", "me")
  z2$add_array("/g", "x", define_array("int8", 2))
  expect_error(z2$store$erase("g"), class = "zarr_error_not_empty")
  expect_true(all(file.exists(file.path(p2, "g", c(".zgroup", ".zattrs")))))
  expect_identical(open_zarr(p2)[["/g"]]$attributes$keep, "me")
  # an empty group goes
  z2$add_group("/", "e")
  expect_true(z2$store$erase("e"))
  expect_false(dir.exists(file.path(p2, "e")))
})

test_that("15: memory store clear(), base store methods, deep clones", {
  m <- zarr_memorystore$new()
  m$create_group("/", "")
  m$set("a/c.0", as.raw(1:3))
  expect_true(m$clear())
  expect_identical(m$keys, character())
  base <- zarr_store$new()
  expect_error(base$exists("a"), class = "zarr_error_not_implemented")
  expect_error(base$get("a"), class = "zarr_error_not_implemented")
  expect_error(base$list_dir(""), class = "zarr_error_not_implemented")
  expect_error(base$list_prefix(""), class = "zarr_error_not_implemented")
  z <- create_zarr()
  a <- z$add_array("/", "a", define_array("int32", 3))
  a[] <- 1:3
  z2 <- z$clone(deep = TRUE)
  expect_false(identical(z2$root, z$root))
  expect_identical(z2$arrays, "/a")
  expect_identical(z2[["/a"]][], 1:3)
  z2[["/a"]][1] <- 9L # the store is shared
  expect_identical(a[], c(9L, 2:3))
})

test_that("15: configure's failure message lists the required and the optional libraries", {
  src <- file.path(testthat::test_path(), "..", "..", "configure")
  skip_if(!file.exists(src), "the configure script is not available (installed tests)")
  txt <- readLines(src)
  req <- grep("Required build dependencies", txt, fixed = TRUE)
  opt <- grep("Optional (their codecs are left out", txt, fixed = TRUE)
  expect_length(req, 1L)
  expect_length(opt, 1L)
  for (p in c("libzstd-dev", "zlib1g-dev", "libcurl4-openssl-dev", "libssl-dev"))
    expect_match(txt[req + 1L], p, fixed = TRUE)
  for (p in c("libzstd-devel", "zlib-devel", "libcurl-devel", "openssl-devel"))
    expect_match(txt[req + 2L], p, fixed = TRUE)
  for (p in c("libblosc-dev", "liblz4-dev", "libbz2-dev", "liblzma-dev", "libxml2-dev"))
    expect_match(txt[opt + 1L], p, fixed = TRUE)
  for (p in c("blosc-devel", "lz4-devel", "bzip2-devel", "xz-devel", "libxml2-devel"))
    expect_match(txt[opt + 2L], p, fixed = TRUE)
  for (p in c("c-blosc", "lz4", "xz")) expect_match(txt[opt + 3L], p, fixed = TRUE)
})

test_that("24: z[[path]][i] <- v writes without an error; nodes cannot be replaced", {
  z <- create_zarr()
  g <- z$add_group("/", "g")
  a <- z$add_array("/g", "a", define_array("int32", c(2, 3)))
  z[["/g/a"]][1, 2] <- 5L
  g[["a"]][2, 3] <- 7L
  z$root[["g/a"]][1, 1] <- 1L
  expect_identical(a[], matrix(c(1L, NA, 5L, NA, NA, 7L), 2))
  expect_error(z[["/g/a"]] <- 1, class = "zarr_error_argument")
  expect_error(g[["a"]] <- z[["/g"]], class = "zarr_error_argument")
})

test_that("24: print() of a group with a 20 MB attribute is quick and short", {
  z <- create_zarr()
  big <- strrep("ab\u00e9", 7e6)
  z$root$.__enclos_env__$private$.metadata$attributes <- list(big = big, nested = list(a = big, n = 1:3))
  t0 <- proc.time()[["elapsed"]]
  out <- capture.output(print(z$root))
  expect_lt(proc.time()[["elapsed"]] - t0, 10)
  expect_true(all(nchar(out) < 200))
  expect_match(out, "^  big    : (ab\u00e9)+a?b?\\.\\.\\.$", all = FALSE)
  expect_match(out, "^  nested : \\{\"a\":\"ab", all = FALSE)
})

# A v2 store with a good array and an array whose .zarray is `bad`.
v2_store_with <- function(bad, env = parent.frame()) {
  p <- local_store_path(env)
  dir.create(file.path(p, "good"), recursive = TRUE)
  dir.create(file.path(p, "bad"))
  writeLines('{"zarr_format": 2}', file.path(p, ".zgroup"))
  writeLines('{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}',
             file.path(p, "good", ".zarray"))
  writeBin(as.raw(c(1, 0, 2, 0)), file.path(p, "good", "0"))
  writeLines(bad, file.path(p, "bad", ".zarray"))
  p
}

v2_zarray <- function(compressor = "null", filters = "null", dtype = "\"<i2\"", fill = "0") {
  sprintf('{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": %s, "compressor": %s, "fill_value": %s, "order": "C", "filters": %s}',
          dtype, compressor, fill, filters)
}

test_that("1: blosc shuffle -1 and GDAL's shuffle names are read; blosc chunks decode", {
  blosc <- zarr_codec_blosc$new("int16", list(cname = "lz4", clevel = 5L, shuffle = "bitshuffle"))
  chunk <- blosc$encode(writeBin(c(1L, -2L, 300L, 4L), raw(), size = 2L))
  for (sh in c("-1", "0", "1", "2", "\"BIT\"", "\"NONE\"", "\"BYTE\"", "\"2\"", "\"SHUFFLE\"", "\"AUTOSHUFFLE\"")) {
    p <- v2_store_with(v2_zarray(sprintf('{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": %s, "blocksize": 0}', sh)))
    writeBin(chunk, file.path(p, "bad", "0"))
    z <- open_zarr(p)
    expect_identical(z$arrays, c("/bad", "/good"), info = sh)
    expect_identical(z[["/bad"]][], c(1L, -2L, 300L, 4L), info = sh)
    z[["/bad"]][2] <- 7L # written with the shuffle the metadata asks for
    expect_identical(open_zarr(p)[["/bad"]][], c(1L, 7L, 300L, 4L), info = sh)
  }
  # -1 is byte shuffle for multi-byte elements, bit shuffle for bytes
  expect_identical(zarr_codec_blosc$new("int16", list(shuffle = -1L))$shuffle, "shuffle")
  expect_identical(zarr_codec_blosc$new("uint8", list(shuffle = -1L))$shuffle, "bitshuffle")
  expect_error(zarr_codec_blosc$new("int16", list(shuffle = "sideways")), class = "zarr_error_codec")
})

test_that("1, 21: one array's bad v2 metadata fails only when that array is used", {
  cases <- list(
    shuffle = v2_zarray('{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": "SIDEWAYS", "blocksize": 0}'),
    compressor_string = v2_zarray('"zlib"'),
    filter_number = v2_zarray(filters = "[3]"),
    filter_id_number = v2_zarray(filters = '[{"id": 3}]'),
    seven = "7",
    array = "[1, 2]",
    long_id = v2_zarray(sprintf('{"id": "%s"}', strrep("x", 10000))),
    empty_id = v2_zarray('{"id": ""}'),
    unknown_codec = v2_zarray('{"id": "nosuchcodec"}'),
    bad_base64 = v2_zarray(dtype = "\"|S3\"", fill = "\"!!!\""),
    shape_string = '{"zarr_format": 2, "shape": "4", "chunks": [4], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}',
    chunks_zero = '{"zarr_format": 2, "shape": [4], "chunks": [0], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}',
    order = '{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "X", "filters": null}',
    dtype_number = v2_zarray(dtype = "8"),
    malformed = '{"zarr_format": 2, "shape": [4'
  )
  for (n in names(cases)) {
    p <- v2_store_with(cases[[n]])
    z <- open_zarr(p)
    expect_identical(z$arrays, c("/bad", "/good"), info = n)
    expect_identical(z[["/good"]][], 1:2, info = n)
    expect_error(z[["/bad"]][], class = "zarr_error", info = n)
    err <- tryCatch(z[["/bad"]]$read(), error = function(e) e)
    expect_true(inherits(err, "zarr_error_metadata") || inherits(err, "zarr_error_codec") ||
                  inherits(err, "zarr_error_data_type"), info = n)
    expect_lt(nchar(conditionMessage(err)), 1000)
    expect_output(print(z), "good  int16 [2]", fixed = TRUE, info = n)
    expect_output(print(z[["/bad"]]), "Not readable", info = n)
    # consolidated metadata: the same
    zm <- sprintf('{"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}, "good/.zarray": %s, "bad/.zarray": %s}}',
                  paste(readLines(file.path(p, "good", ".zarray")), collapse = ""), cases[[n]])
    if (n != "malformed") {
      writeLines(zm, file.path(p, ".zmetadata"))
      z <- open_zarr(p)
      expect_identical(z$arrays, c("/bad", "/good"), info = paste(n, "consolidated"))
      expect_identical(z[["/good"]][], 1:2, info = paste(n, "consolidated"))
      expect_error(z[["/bad"]][], class = "zarr_error", info = paste(n, "consolidated"))
    }
  }
})

test_that("21: v3 metadata of the wrong JSON type fails only for that array, with a metadata error", {
  good <- list(zarr_format = 3L, node_type = "array", shape = list(2L), data_type = "int16",
               chunk_grid = list(name = "regular", configuration = list(chunk_shape = list(2L))),
               chunk_key_encoding = list(name = "default", configuration = list(separator = "/")),
               fill_value = 0L, codecs = list(list(name = "bytes", configuration = list(endian = "little"))),
               attributes = setNames(list(), character()))
  mutate <- function(f) { m <- good; f(m) }
  cases <- list(
    key_encoding_string = mutate(function(m) { m$chunk_key_encoding <- "default"; m }),
    separator_number = mutate(function(m) { m$chunk_key_encoding$configuration$separator <- 1L; m }),
    empty_codec_name = mutate(function(m) { m$codecs[[1]]$name <- ""; m }),
    codec_name_number = mutate(function(m) { m$codecs[[1]]$name <- 5L; m }),
    codec_number = mutate(function(m) { m$codecs <- list(5L); m }),
    long_codec_name = mutate(function(m) { m$codecs[[2]] <- list(name = strrep("z", 10000)); m }),
    codec_config_string = mutate(function(m) { m$codecs[[1]]$configuration <- "little"; m }),
    sharding_shape = mutate(function(m) {
      m$codecs <- list(list(name = "sharding_indexed", configuration = list(chunk_shape = list("a"),
        codecs = list(list(name = "bytes")), index_codecs = list(list(name = "bytes")))))
      m
    }),
    sharding_codecs = mutate(function(m) {
      m$codecs <- list(list(name = "sharding_indexed", configuration = list(chunk_shape = list(1L), codecs = "bytes")))
      m
    }),
    shape_strings = mutate(function(m) { m$shape <- list("2"); m }),
    shape_negative = mutate(function(m) { m$shape <- list(-2L); m }),
    chunk_grid_string = mutate(function(m) { m$chunk_grid <- "regular"; m }),
    chunk_shape_missing = mutate(function(m) { m$chunk_grid$configuration <- setNames(list(), character()); m }),
    data_type_number = mutate(function(m) { m$data_type <- 16L; m }),
    data_type_object = mutate(function(m) { m$data_type <- list(name = list("int16")); m }),
    dimension_names = mutate(function(m) { m$dimension_names <- list(1L); m }),
    dimension_names_length = mutate(function(m) { m$dimension_names <- list("a", "b"); m }),
    attributes_array = mutate(function(m) { m$attributes <- list(1L, 2L); m }),
    zarr_format = mutate(function(m) { m$zarr_format <- "3"; m })
  )
  for (n in names(cases)) {
    z <- create_zarr()
    a <- z$add_array("/", "good", define_array("int16", 2))
    a[] <- 1:2
    z$store$set("bad/zarr.json", charToRaw(zarr:::json_write(cases[[n]])))
    z2 <- zarr$new(z$store)
    expect_identical(z2$arrays, c("/bad", "/good"), info = n)
    expect_identical(z2[["/good"]][], 1:2, info = n)
    err <- tryCatch(z2[["/bad"]]$read(), error = function(e) e)
    expect_s3_class(err, "zarr_error")
    expect_false(inherits(err, "zarr_error_internal"), info = n)
    expect_true(inherits(err, "zarr_error_metadata") || inherits(err, "zarr_error_codec"), info = n)
    expect_lt(nchar(conditionMessage(err)), 1000)
  }
  # node_type is matched exactly, not by partial matching
  z <- create_zarr()
  z$add_group("/", "g")
  z$store$set("x/zarr.json", charToRaw('{"zarr_format": 3, "node_typeX": "group", "attributes": {}}'))
  z2 <- zarr$new(z$store)
  expect_identical(z2$groups, c("/", "/g", "/x")[c(TRUE, TRUE, FALSE)])
  expect_error(z2[["/x"]][], class = "zarr_error_metadata")
  expect_error(z2$store$get_metadata("x"), class = "zarr_error_metadata", regexp = "node_type")
  expect_error(zarr:::parse_array_metadata(list(node_typeX = "array")), class = "zarr_error_metadata")
})

test_that("2: numcodecs quantize and astype filters decode and encode as numcodecs does", {
  for (fmt in 2:3) {
    withr::local_options(zarr.format = fmt)
    z <- create_zarr()
    q <- define_array("float64", 5)
    q$add_codec("numcodecs.quantize", list(digits = 2L, dtype = "<f8"), .position = 1)
    qa <- z$add_array("/", "q", q)
    x <- c(pi, -exp(1), 0, 1e-3, 100.123456)
    qa[] <- x
    expect_identical(qa[], round(x * 128) / 128) # 2 digits keep 7 bits: 2^7 = 128
    q4 <- define_array("float32", 3)
    q4$add_codec("numcodecs.quantize", list(digits = 1L, dtype = "<f4", astype = "<f4"), .position = 1)
    q4a <- z$add_array("/", "q4", q4)
    q4a[] <- c(1.23, -7.77, 0.5)
    expect_identical(q4a[], round(py_f32(c(1.23, -7.77, 0.5)) * 16) / 16)
    a <- define_array("float64", 4)
    a$add_codec("numcodecs.astype", list(encode_dtype = "<f4", decode_dtype = "<f8"), .position = 1)
    a$remove_codec("zstd")
    aa <- z$add_array("/", "a", a)
    aa[] <- c(0.5, -1.25, 3e6, 1 / 3)
    expect_identical(aa[], c(0.5, -1.25, 3e6, py_f32(1 / 3)))
    key <- if (fmt == 2) "a/0" else "a/c.0"
    expect_length(z$store$get(key), 16L) # stored as float32
    expect_identical(readBin(z$store$get(key), "double", size = 4L, n = 4L), c(0.5, -1.25, 3e6, py_f32(1 / 3)))
    i <- define_array("int64", 5)
    i$add_codec("numcodecs.astype", list(encode_dtype = "<i2", decode_dtype = "<i8"), .position = 1)
    i$remove_codec("zstd")
    ia <- z$add_array("/", "i", i)
    ia[] <- bit64::as.integer64(c(-5, 0, 7, 32767, -32768))
    expect_identical(as.character(ia[]), c("-5", "0", "7", "32767", "-32768"))
    expect_length(z$store$get(if (fmt == 2) "i/0" else "i/c.0"), 10L)
  }
  # a chunk stored by numcodecs' AsType(encode_dtype="<i2", decode_dtype="<f8")
  z <- create_zarr()
  d <- define_array("float64", 3)
  d$add_codec("numcodecs.astype", list(encode_dtype = "<i2", decode_dtype = "<f8"), .position = 1)
  d$remove_codec("zstd")
  arr <- z$add_array("/", "x", d)
  z$store$set("x/c.0", writeBin(c(-3L, 0L, 300L), raw(), size = 2L))
  expect_identical(arr[], c(-3, 0, 300))
  expect_error({
    bad <- define_array("int32", 3)
    bad$add_codec("numcodecs.quantize", list(digits = 2L, dtype = "<i4"), .position = 1)
    ba <- z$add_array("/", "bad", bad)
    ba[] <- 1:3
  }, class = "zarr_error_codec", regexp = "floating point")
})

test_that("12: the bytes and transpose codec objects give the bytes the engine writes", {
  x <- array(as.numeric(1:60), c(3, 4, 5))
  chains <- list(r_order = NULL, c_order = "portable",
                 custom = list(name = "transpose", configuration = list(order = list(1L, 2L, 0L))))
  for (n in names(chains)) {
    z <- create_zarr()
    d <- define_array("float64", dim(x))
    d$chunk_shape <- dim(x) # one chunk
    d$remove_codec("zstd")
    if (identical(chains[[n]], "portable")) d$portable <- TRUE
    if (is.list(chains[[n]])) {
      d$portable <- TRUE
      d$add_codec("transpose", chains[[n]]$configuration, .position = 1)
    }
    a <- z$add_array("/", "a", d)
    a[] <- x
    stored <- z$store$get("a/c.0.0.0")
    codecs <- a$codecs
    enc <- x
    for (cd in codecs) enc <- cd$encode(enc)
    expect_identical(enc, stored, info = n)
    dec <- stored
    for (cd in rev(codecs)) dec <- cd$decode(dec)
    expect_identical(dec, x, info = n)
  }
  # the bytes codec on its own writes C order, as the Zarr specification says
  b <- zarr_codec_bytes$new("int16", c(2, 3))
  m <- matrix(1:6, 2)
  expect_identical(b$encode(m), writeBin(as.vector(t(m)), raw(), size = 2L))
  expect_identical(b$decode(b$encode(m)), m)
  big <- zarr_codec_bytes$new("int16", c(2, 3), list(endian = "big"))
  expect_identical(big$encode(m), writeBin(as.vector(t(m)), raw(), size = 2L, endian = "big"))
  # int64
  b64 <- zarr_codec_bytes$new("int64", c(2, 2))
  v <- bit64::as.integer64(matrix(c("1", "-2", "3", "9007199254740993"), 2))
  expect_identical(as.character(b64$decode(b64$encode(v))), as.character(v))
})
