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
