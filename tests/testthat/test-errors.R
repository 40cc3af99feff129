# Failures are classed conditions (inheriting "zarr_error") whose message
# names the array and/or store key, and failed writes change nothing.

# A 10 x 10 int32 array of 2 x 2 chunks (5 x 5 each) holding 1:100.
err_array <- function(kind, codecs = NULL, env = parent.frame()) {
  z <- new_test_zarr(kind, env)
  def <- define_array("int32", c(10, 10))
  def$chunk_shape <- c(5, 5)
  if (!is.null(codecs)) {
    def$remove_codec("zstd")
    for (cd in codecs) def$add_codec(cd$name, cd$configuration)
  }
  arr <- z$add_array("/", "arr", def)
  arr$write(matrix(1:100, 10))
  arr
}

# Replace the value of a key, in either kind of store, bypassing the store
# API for local stores (as an outside process or disk fault would).
poke <- function(store, key, value) {
  if (inherits(store, "zarr_localstore")) writeBin(value, file.path(store$root, key))
  else store$set(key, value)
}

expect_zarr_condition <- function(cnd, kind) {
  expect_s3_class(cnd, "zarr_error")
  expect_s3_class(cnd, paste0("zarr_error_", kind))
  expect_s3_class(cnd, "error")
}

# Open the store at path and read its array "/arr": the condition raised,
# whether opening or reading raises it (an array whose metadata this package
# cannot use may still be listed in its group, failing only when used).
open_and_read <- function(path) {
  tryCatch({
    open_zarr(path)[["/arr"]]$read()
    NULL
  }, error = identity)
}

test_that("garbage in a chunk is a corrupt_chunk error naming the array and key", {
  for (kind in c("memory", "local")) {
    arr <- err_array(kind)
    store <- arr$store
    good <- store$get("arr/c.0.0")
    poke(store, "arr/c.0.0", as.raw(c(0:255, 1:50)))
    cnd <- tryCatch(arr$read(), error = identity)
    expect_zarr_condition(cnd, "corrupt_chunk")
    expect_match(conditionMessage(cnd), "array '/arr'", fixed = TRUE)
    expect_match(conditionMessage(cnd), "key 'arr/c.0.0'", fixed = TRUE)
    expect_error(arr[1, 1], class = "zarr_error_corrupt_chunk")
    # other chunks are still readable
    expect_identical(arr[6:10, 6:10], matrix(1:100, 10)[6:10, 6:10])
    poke(store, "arr/c.0.0", good)
    expect_identical(arr$read(), matrix(1:100, 10))
  }
})

test_that("a truncated chunk is a corrupt_chunk error", {
  for (kind in c("memory", "local")) {
    for (codecs in list(NULL, list(list(name = "gzip", configuration = list(level = 5))),
                        list(list(name = "blosc", configuration = list(cname = "lz4"))), list())) {
      arr <- err_array(kind, codecs)
      good <- arr$store$get("arr/c.1.0")
      poke(arr$store, "arr/c.1.0", good[seq_len(length(good) - 5L)])
      label <- paste(kind, paste(vapply(arr$codecs, function(cd) cd$name, ""), collapse = "+"))
      expect_error(arr$read(), class = "zarr_error_corrupt_chunk", regexp = "arr/c.1.0", info = label)
      poke(arr$store, "arr/c.1.0", good)
      expect_identical(arr$read(), matrix(1:100, 10), info = label)
    }
  }
})

test_that("an empty chunk file is a corrupt_chunk error", {
  arr <- err_array("local")
  poke(arr$store, "arr/c.0.1", raw(0))
  expect_error(arr$read(), class = "zarr_error_corrupt_chunk", regexp = "arr/c.0.1")
})

test_that("a chunk that decodes to the wrong size is a corrupt_chunk error", {
  for (kind in c("memory", "local")) {
    arr <- err_array(kind)
    zstd <- arr$codecs[[3]]
    expect_s3_class(zstd, "zarr_codec_zstd")
    frame <- zstd$encode(as.raw(1:10)) # a valid zstd frame of 10 bytes; the chunk needs 100
    expect_identical(zstd$decode(frame), as.raw(1:10))
    poke(arr$store, "arr/c.1.1", frame)
    expect_error(arr$read(), class = "zarr_error_corrupt_chunk", regexp = "10 bytes, expected 100")
    expect_error(arr[10, 10], class = "zarr_error_corrupt_chunk", regexp = "key 'arr/c.1.1'")
    too_long <- zstd$encode(as.raw(rep(1:10, 20)))
    poke(arr$store, "arr/c.1.1", too_long)
    expect_error(arr$read(), class = "zarr_error_corrupt_chunk", regexp = "expected 100")
  }
  # without compression
  arr <- err_array("memory", codecs = list())
  arr$store$set("arr/c.0.0", as.raw(1:30))
  expect_error(arr$read(), class = "zarr_error_corrupt_chunk", regexp = "30 bytes, expected 100")
})

test_that("a crc32c mismatch is a checksum error", {
  for (kind in c("memory", "local")) {
    arr <- err_array(kind, codecs = list(list(name = "crc32c", configuration = NULL)))
    good <- arr$store$get("arr/c.0.1")
    expect_length(good, 104L)
    # flip a byte of the data
    bad <- good
    bad[7] <- xor(bad[7], as.raw(0x01))
    poke(arr$store, "arr/c.0.1", bad)
    cnd <- tryCatch(arr$read(), error = identity)
    expect_zarr_condition(cnd, "checksum")
    expect_match(conditionMessage(cnd), "crc32c")
    expect_match(conditionMessage(cnd), "array '/arr', key 'arr/c.0.1'", fixed = TRUE)
    # flip a byte of the checksum itself
    bad <- good
    bad[104] <- xor(bad[104], as.raw(0x80))
    poke(arr$store, "arr/c.0.1", bad)
    expect_error(arr$read(), class = "zarr_error_checksum")
    poke(arr$store, "arr/c.0.1", good)
    expect_identical(arr$read(), matrix(1:100, 10))
  }
})

test_that("a zstd content checksum mismatch is detected", {
  arr <- err_array("memory", codecs = list(list(name = "zstd", configuration = list(level = 3, checksum = TRUE))))
  good <- arr$store$get("arr/c.0.0")
  bad <- good
  bad[length(bad)] <- xor(bad[length(bad)], as.raw(0x01))
  arr$store$set("arr/c.0.0", bad)
  expect_error(arr$read(), class = "zarr_error_corrupt_chunk", regexp = "checksum")
})

test_that("a missing chunk reads as the fill value, not an error", {
  for (kind in c("memory", "local")) {
    arr <- err_array(kind)
    arr$store$erase("arr/c.1.1")
    expected <- matrix(1:100, 10)
    expected[6:10, 6:10] <- NA
    expect_identical(arr$read(), expected)
  }
})

test_that("malformed zarr.json is a metadata error naming the key", {
  path <- local_store_path()
  z <- create_zarr(path)
  z$add_array("/", "arr", define_array("int32", 3))$write(1:3)
  meta_file <- file.path(path, "arr", "zarr.json")
  good <- readLines(meta_file)
  writeLines("{ \"zarr_format\": 3, \"node_type\": ", meta_file)
  cnd <- open_and_read(path)
  expect_zarr_condition(cnd, "metadata")
  expect_match(conditionMessage(cnd), "key 'arr/zarr.json'", fixed = TRUE)
  # one node's bad metadata hides only that node: the hierarchy still opens
  expect_identical(open_zarr(path)$arrays, "/arr")
  expect_error(open_zarr(path)[["/arr"]][], class = "zarr_error_metadata")
  # valid JSON, but not node metadata
  writeLines("[1, 2, 3]", meta_file)
  expect_zarr_condition(open_and_read(path), "metadata")
  writeLines("{\"zarr_format\": 3}", meta_file)
  cnd <- open_and_read(path)
  expect_zarr_condition(cnd, "metadata")
  expect_match(conditionMessage(cnd), "node_type")
  # an array without a shape
  meta <- jsonlite::parse_json(paste(good, collapse = "\n"))
  meta$shape <- NULL
  jsonlite::write_json(meta, meta_file, auto_unbox = TRUE)
  cnd <- open_and_read(path)
  expect_zarr_condition(cnd, "metadata")
  expect_match(conditionMessage(cnd), "array '/arr'", fixed = TRUE)
  writeLines(good, meta_file)
  expect_identical(open_zarr(path)[["/arr"]]$read(), 1:3)
  # the root document
  writeLines("{{", file.path(path, "zarr.json"))
  expect_error(open_zarr(path), class = "zarr_error_metadata", regexp = "key 'zarr.json'")
})

test_that("an unknown codec is a codec error", {
  path <- local_store_path()
  z <- create_zarr(path)
  z$add_array("/", "arr", define_array("int32", 3))
  meta_file <- file.path(path, "arr", "zarr.json")
  meta <- jsonlite::read_json(meta_file)
  meta$codecs[[2]]$name <- "no_such_codec"
  jsonlite::write_json(meta, meta_file, auto_unbox = TRUE, pretty = TRUE)
  cnd <- open_and_read(path)
  expect_zarr_condition(cnd, "codec")
  expect_match(conditionMessage(cnd), "no_such_codec")
  expect_match(conditionMessage(cnd), "array '/arr'", fixed = TRUE)
  def <- define_array("int32", 3)
  expect_error(def$add_codec("no_such_codec"), class = "zarr_error_codec", regexp = "no_such_codec")
})

test_that("an unknown data type is a data_type error", {
  path <- local_store_path()
  z <- create_zarr(path)
  z$add_array("/", "arr", define_array("int32", 3))
  meta_file <- file.path(path, "arr", "zarr.json")
  meta <- jsonlite::read_json(meta_file)
  meta$data_type <- "float128"
  jsonlite::write_json(meta, meta_file, auto_unbox = TRUE)
  cnd <- open_and_read(path)
  expect_zarr_condition(cnd, "data_type")
  expect_match(conditionMessage(cnd), "float128")
  expect_match(conditionMessage(cnd), "array '/arr'", fixed = TRUE)
  expect_error(define_array("float128", 3), class = "zarr_error_data_type", regexp = "float128")
  expect_error(define_array("int128", 3), class = "zarr_error_data_type")
})

test_that("invalid node names are node_name errors", {
  z <- create_zarr()
  g <- z$add_group("/", "g")
  for (nm in c("", "a/b", "..", ".", "...", "__x", "__")) {
    expect_error(z$add_group("/", nm), class = "zarr_error_node_name", info = nm)
    expect_error(z$add_array("/", nm, define_array("int32", 2)), class = "zarr_error_node_name", info = nm)
    expect_error(g$add_group(nm), class = "zarr_error_node_name", info = nm)
  }
  expect_error(z$add_group("/", NA_character_), class = "zarr_error_node_name")
  expect_error(z$add_group("/", c("a", "b")), class = "zarr_error_node_name")
  expect_error(z$add_group("/", "a\nb"), class = "zarr_error_node_name")
  # nothing was created
  expect_identical(z$groups, c("/", "/g"))
  expect_identical(z$arrays, character(0))
  # these are fine
  expect_s3_class(z$add_group("/", "a b"), "zarr_group")
  expect_s3_class(z$add_group("/", "_x"), "zarr_group")
  expect_s3_class(z$add_group("/", ".hidden"), "zarr_group")
})

test_that("adding a node that exists, or below a missing group, is an error", {
  z <- create_zarr()
  z$add_group("/", "g")
  z$add_array("/", "a", define_array("int32", 2))
  expect_error(z$add_group("/", "g"), class = "zarr_error_exists")
  expect_error(z$add_group("/", "a"), class = "zarr_error_exists")
  expect_error(z$add_array("/", "g", define_array("int32", 2)), class = "zarr_error_exists")
  expect_error(z$add_group("/nope", "x"), class = "zarr_error_not_found")
  expect_error(z$add_group("/a", "x"), class = "zarr_error_not_found")
})

test_that("keys that escape the store are key errors", {
  path <- local_store_path()
  z <- create_zarr(path)
  st <- z$store
  bad_keys <- c("../x", "/etc/passwd", "a/../../x", "a/./b", "a//b", "..", "")
  for (k in bad_keys) {
    expect_error(st$get(k), class = "zarr_error_key", info = k)
    expect_error(st$set(k, as.raw(1)), class = "zarr_error_key", info = k)
    expect_error(st$exists(k), class = "zarr_error_key", info = k)
    expect_error(st$getsize(k), class = "zarr_error_key", info = k)
  }
  expect_error(st$erase("../x"), class = "zarr_error_key")
  expect_false(file.exists(file.path(dirname(path), "x")))
  ms <- zarr_memorystore$new()
  for (k in bad_keys) expect_error(ms$set(k, as.raw(1)), class = "zarr_error_key", info = k)
  expect_length(ms$keys, 0L)
})

test_that("writing to a read-only store is a read_only error and changes nothing", {
  path <- local_store_path()
  z <- create_zarr(path)
  arr <- z$add_array("/", "arr", define_array("int32", c(4, 4)))
  x <- matrix(1:16, 4)
  arr$write(x)
  z$add_group("/", "g")
  before <- list.files(path, recursive = TRUE, all.files = TRUE)

  ro <- open_zarr(path, read_only = TRUE)
  expect_true(ro$store$read_only)
  a <- ro[["/arr"]]
  expect_identical(a$read(), x)
  cnd <- tryCatch(a$write(matrix(0L, 4, 4)), error = identity)
  expect_zarr_condition(cnd, "read_only")
  expect_match(conditionMessage(cnd), "array '/arr'", fixed = TRUE)
  expect_error(a[1, 1] <- 0L, class = "zarr_error_read_only")
  expect_error(a$write(0L, selection = list(2, 2)), class = "zarr_error_read_only")
  expect_error(ro$add_group("/", "h"), class = "zarr_error_read_only")
  expect_error(ro$add_array("/", "b", define_array("int32", 2)), class = "zarr_error_read_only")
  expect_error(ro$delete_array("/arr"), class = "zarr_error_read_only")
  expect_error(ro$delete_group("/g"), class = "zarr_error_read_only")
  expect_error(ro$store$set("arr/c.0.0", as.raw(1)), class = "zarr_error_read_only")
  expect_error(ro$store$erase("arr/c.0.0"), class = "zarr_error_read_only")
  expect_error(ro$store$erase_prefix("arr"), class = "zarr_error_read_only")
  expect_error(ro$store$clear(), class = "zarr_error_read_only")
  expect_error(ro$store$set_metadata("g", list(zarr_format = 3L, node_type = "group")), class = "zarr_error_read_only")

  expect_identical(list.files(path, recursive = TRUE, all.files = TRUE), before)
  expect_identical(open_zarr(path)[["/arr"]]$read(), x)
  expect_identical(open_zarr(path)$groups, c("/", "/g"))
})

# The values that must be rejected, per data type, with the position of the
# bad value in a 10-element write that spans both chunks of the array.
test_that("data of the wrong type, shape or range is a value error and nothing is written", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    cases <- list(
      list(dt = "int32", bad = list(c(letters[1:10]), c(1:9, 1.5), c(1:9, 3e9), c(1:9, -3e9), c(1:9, Inf),
                                    complex(real = 1:10), list(1, 2))),
      list(dt = "uint8", bad = list(c(1:9, 300L), c(1:9, -1L), c(1:9, 256), c(0, 2.5, 1:8))),
      list(dt = "int8", bad = list(c(1:9, 128L), c(-129L, 1:9))),
      list(dt = "int16", bad = list(c(1:9, 32768L))),
      list(dt = "uint16", bad = list(c(1:9, 65536L), c(1:9, -1L))),
      list(dt = "uint32", bad = list(c(1:9, 4294967296), c(1:9, -1))),
      list(dt = "float64", bad = list(letters[1:10], c(1 + 1i, 1:9))),
      list(dt = "bool", bad = list(letters[1:10])),
      list(dt = "int64", bad = list(letters[1:10])),
      list(dt = "uint64", bad = list(c(1:9, -1), bit64::as.integer64(c(1:9, -1))))
    )
    for (cs in cases) {
      def <- define_array(cs$dt, 10)
      def$chunk_shape <- 5
      arr <- z$add_array("/", paste0("v_", cs$dt), def)
      good <- dtype_values(cs$dt, 10)
      arr$write(good)
      for (bad in cs$bad) {
        label <- paste(kind, cs$dt, paste(format(unlist(bad)), collapse = ","))
        cnd <- tryCatch(arr$write(bad), error = identity)
        expect_zarr_condition(cnd, "value")
        expect_match(conditionMessage(cnd), sprintf("array '/v_%s'", cs$dt), fixed = TRUE, info = label)
        expect_error(arr[1:10] <- bad, class = "zarr_error_value", info = label)
        expect_same_values(arr$read(), good)
      }
    }
    if (kind == "local") expect_length(partial_files(z$store$root), 0L)
  }
})

test_that("doubles that do not fit int64 are rejected like for the other integer types", {
  arr <- create_zarr()$add_array("/", "i", define_array("int64", 3))
  good <- bit64::as.integer64(1:3)
  arr$write(good)
  expect_error(arr$write(c(1, 2, 0.5)), class = "zarr_error_value", regexp = "int64")
  expect_identical(as.character(arr$read()), c("1", "2", "3"))
  expect_error(arr$write(c(1, 2, 1e19)), class = "zarr_error_value", regexp = "int64")
  expect_identical(as.character(arr$read()), c("1", "2", "3"))
})

test_that("out-of-range messages say that nothing was written", {
  arr <- create_zarr()$add_array("/", "u", define_array("uint8", 3))
  arr$write(1:3)
  expect_error(arr$write(c(1, 300, 2)), class = "zarr_error_value", regexp = "nothing was written")
  expect_error(arr[2] <- 300, class = "zarr_error_value", regexp = "uint8")
  expect_identical(arr$read(), 1:3)
  arr32 <- create_zarr()$add_array("/", "i", define_array("int32", 3))
  arr32$write(1:3)
  expect_error(arr32[2] <- 1.5, class = "zarr_error_value", regexp = "int32")
  expect_identical(arr32$read(), 1:3)
})

test_that("data of the wrong shape is a value error and nothing is written", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    def <- define_array("int32", c(4, 5))
    def$chunk_shape <- c(3, 3)
    arr <- z$add_array("/", "m", def)
    x <- matrix(1:20, 4)
    arr$write(x)
    expect_error(arr$write(1:21), class = "zarr_error_value")
    expect_error(arr$write(1:19), class = "zarr_error_value", regexp = "dimension")
    expect_error(arr$write(matrix(0L, 5, 5)), class = "zarr_error_value", regexp = "does not fit")
    expect_error(arr$write(array(0L, c(2, 2, 2))), class = "zarr_error_value")
    expect_error(arr[1:2, 1:2] <- 1:3, class = "zarr_error_value", regexp = "3 value")
    expect_error(arr$write(1:5, selection = list(1:2, 1:2)), class = "zarr_error_value")
    expect_identical(arr$read(), x)
    v <- z$add_array("/", "v", define_array("int32", 5))
    v$write(1:5)
    expect_error(v$write(1:6), class = "zarr_error_value", regexp = "array '/v'")
    expect_identical(v$read(), 1:5)
    s <- z$add_array("/", "s", define_array("int32", integer(0)))
    s$write(1L)
    expect_error(s$write(1:2), class = "zarr_error_value", regexp = "0-d")
    expect_identical(s$read(), 1L)
  }
})

test_that("factors are rejected rather than written as their codes", {
  arr <- create_zarr()$add_array("/", "i", define_array("int32", 3))
  arr$write(1:3)
  expect_error(arr$write(factor(c("x", "y", "z"))), class = "zarr_error_value", regexp = "factor")
  expect_error(arr[1] <- factor("b"), class = "zarr_error_value")
  expect_identical(arr$read(), 1:3)
})

test_that("a write that fails on a corrupt chunk leaves the other chunks unchanged", {
  for (kind in c("memory", "local")) {
    arr <- err_array(kind)
    good <- arr$store$get("arr/c.1.1")
    poke(arr$store, "arr/c.1.1", as.raw(1:7))
    expect_error(arr[4:7, 4:7] <- matrix(0L, 4, 4), class = "zarr_error_corrupt_chunk")
    poke(arr$store, "arr/c.1.1", good)
    expect_identical(arr$read(), matrix(1:100, 10), info = kind)
  }
})

test_that("add_array() with invalid metadata fails and writes nothing to the store", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    meta <- define_array("int32", c(2, 3))$metadata()
    meta$codecs[[1]]$configuration$order <- list(0L, 0L)
    expect_error(z$add_array("/", "tbad", meta), class = "zarr_error_codec", regexp = "array '/tbad'")
    meta <- define_array("int32", 3)$metadata()
    meta$codecs[[2]]$name <- "no_such_codec"
    expect_error(z$add_array("/", "cbad", meta), class = "zarr_error_codec")
    expect_false(z$store$exists("tbad/zarr.json"))
    expect_false(z$store$exists("cbad/zarr.json"))
    reopened <- if (kind == "local") open_zarr(z$store$root) else zarr$new(z$store)
    expect_identical(reopened$arrays, character(0))
  }
})

test_that("opening and creating stores in the wrong place are classed errors", {
  expect_error(open_zarr(tempfile()), class = "zarr_error_not_found")
  expect_error(open_zarr(1), class = "zarr_error_argument")
  expect_error(open_zarr(c("a", "b")), class = "zarr_error_argument")
  withr::with_options(list(zarr.http_retries = 0),   # nothing listens on port 1
    expect_error(open_zarr("http://127.0.0.1:1/x.zarr"), class = "zarr_error_http"))
  dir <- local_store_path()
  dir.create(dir)
  writeLines("hello", file.path(dir, "notes.txt"))
  expect_error(open_zarr(dir), class = "zarr_error")
  expect_error(create_zarr(dir), class = "zarr_error_exists")
  expect_error(as_zarr(1:3, location = dir), class = "zarr_error_exists")
  expect_error(zarr_localstore$new(file.path(dir, "notes.txt")), class = "zarr_error_store")
  expect_identical(list.files(dir), "notes.txt")
  expect_error(as_zarr(list("a", 1)), class = "zarr_error_value")
  expect_error(as_zarr(list(1, 2)), class = "zarr_error_value")
  expect_error(as_zarr(1:3, location = create_zarr()$root), class = "zarr_error_argument")
})

test_that("read-only fields cannot be assigned", {
  arr <- as_zarr(1:3)[["/"]]
  expect_error(arr$shape <- 5, class = "zarr_error_read_only")
  expect_error(arr$data_type <- "int8", class = "zarr_error_read_only")
  expect_error(arr$name <- "x", class = "zarr_error_read_only")
  expect_error(arr$codecs <- list(), class = "zarr_error_read_only")
  expect_identical(arr$read(), 1:3)
})
