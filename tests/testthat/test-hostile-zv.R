# Hostile Zarr Vectors stores (issue 26, defect 6 and the amplification
# bounds): a fragment index, a manifest or a link record of a few bytes can
# name billions of rows. Whatever a blob makes the reader allocate is bounded
# by the rows its chunk holds or by the parse budget (option
# zarr.max_decoded_bytes), checked before allocating; every refusal is a
# zarr_error_zv naming the blob; files beside the store stay as they were.

zvh_u32 <- function(x) {
  x <- as.numeric(x)
  writeBin(as.integer(ifelse(x >= 2^31, x - 2^32, x)), raw(), size = 4L, endian = "little")
}
# little-endian int64 of whole numbers below 2^63 (exact up to 2^53, and
# powers of two beyond)
zvh_i64 <- function(x) {
  x <- as.numeric(x)
  lo <- x %% 2^32
  hi <- (x - lo) / 2^32
  as.vector(rbind(matrix(zvh_u32(lo), 4L), matrix(zvh_u32(hi), 4L)))
}
# A fragment index of range fragments only: (start, count) each.
zvh_frag <- function(start, count) {
  F <- length(start)
  bm <- raw(((F + 7L) %/% 8L + 7L) %/% 8L * 8L)
  for (i in seq_len(F) - 1L) bm[i %/% 8L + 1L] <- bm[i %/% 8L + 1L] | as.raw(bitwShiftL(1L, i %% 8L))
  c(charToRaw("GFVZ"), as.raw(c(1, 0, 0, 0)), zvh_u32(F), zvh_u32(F), bm, zvh_i64(rbind(start, count)), zvh_u32(0))
}

# A small store: 20 vertices in two chunks ("0.0.0", "1.0.0"), a chain of
# links (one across the chunks), two objects, attributes.
zvh_store <- function(h) {
  set.seed(26)
  v <- cbind(c(runif(10, 0, 9), runif(10, 11, 19)), runif(20, 0, 9), runif(20, 0, 9))
  write_zarr_vectors(h$store, v, chunk_shape = c(10, 100, 100), links = cbind(1:19, 2:20), objects = rep(0:1, 10),
                     attributes = data.frame(w = seq(0.5, 10, 0.5)), object_attributes = data.frame(s = c(1, 2)),
                     levels = 1L)
  invisible(h$store)
}

# Replace the blob `path` (a 1-D uint8 array) of the store by `bytes`.
zvh_put_blob <- function(store, path, bytes) {
  unlink(file.path(store, path), recursive = TRUE)
  zarr:::zv_write_blob(open_zarr(store, read_only = FALSE)$root$get_node(dirname(path)), basename(path), bytes)
}
# Change the attributes of the node at `path` in its zarr.json, as a hostile
# writer would (NULL removes one).
zvh_set_attributes <- function(store, path, ...) {
  f <- file.path(store, path, "zarr.json")
  j <- jsonlite::read_json(f)
  for (nm in names(list(...))) j$attributes[[nm]] <- list(...)[[nm]]
  writeLines(jsonlite::toJSON(j, auto_unbox = TRUE, digits = NA, null = "null"), f)
}
# Make the blob array at `path` declare `n` bytes (its chunk unchanged).
zvh_declare_bytes <- function(store, path, n) {
  f <- file.path(store, path, "zarr.json")
  j <- jsonlite::read_json(f)
  j$shape <- list(n)
  j$chunk_grid$configuration$chunk_shape <- list(n)
  writeLines(jsonlite::toJSON(j, auto_unbox = TRUE, digits = NA, null = "null"), f)
}

# The ZV read methods, on the store opened read-only and writable: the class
# of what each signalled ("ok" when nothing). A condition of no zarr class
# fails the test.
zvh_reads <- function(store) {
  out <- character()
  for (ro in c(TRUE, FALSE)) {
    zv <- open_zarr(store, read_only = ro)$root
    d <- length(unlist(zv$info$chunk_shape))
    key <- paste(rep("0", d), collapse = ".")
    calls <- list(
      read_box = function() zv$read_box(rep(0, d), rep(100, d)),
      read_chunk = function() zv$read_chunk(key),
      read_objects = function() zv$read_objects(c(0, 1)),
      read_level = function() zv$read_level(),
      fragments = function() zv$fragments(key),
      link_fragments = function() zv$fragments(key, links = TRUE),
      manifests = function() zv$manifests(c(0, 1)),
      cross_chunk_links = function() zv$cross_chunk_links(),
      object_attributes = function() zv$object_attributes(),
      print = function() utils::capture.output(print(zv))
    )
    for (nm in names(calls)) {
      got <- withCallingHandlers(tryCatch({
        calls[[nm]]()
        "ok"
      }, error = function(e) {
        if (!inherits(e, "zarr_error")) stop(sprintf("%s: not a zarr error: %s", nm, conditionMessage(e)))
        class(e)[1L]
      }), warning = function(w) {
        if (!any(startsWith(class(w), "zarr_"))) stop(sprintf("%s: not a zarr warning: %s", nm, conditionMessage(w)))
        invokeRestart("muffleWarning")
      })
      out[paste0(nm, if (ro) "" else "_rw")] <- got
    }
  }
  out
}

# Everything a user does with the store, its files beside it unchanged.
zvh_touch_all <- function(h) {
  before <- hostile_snapshot(h$dir, except = h$store)
  seen <- hostile_touch(h$store)
  got <- zvh_reads(h$store)
  expect_outside_unchanged(before, h$dir, except = h$store)
  list(touch = seen, reads = got)
}

test_that("the 44-byte fragment index of one range of 2^28 rows is refused before it is expanded (defect 6)", {
  skip_without_proc_status()
  h <- hostile_dir()
  zvh_store(h)
  blob <- zvh_frag(0, 2^28)
  expect_length(blob, 44L)
  zvh_put_blob(h$store, "0/vertex_fragments/0.0.0", blob)
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$fragments("0.0.0"), class = "zarr_error_zv", regexp = "beyond the 10 rows.*0/vertex_fragments/0.0.0")
  expect_error(zv$read_objects(0), class = "zarr_error_zv", regexp = "vertex_fragments/0.0.0")
  # before the fix, fragments() allocated 4.3 GB for its 2^28 rows
  for (call in c("fragments('0.0.0')", "read_objects(0)")) {
    p <- hostile_peak(sprintf("zv <- open_zarr('%s', read_only = TRUE)$root; zv$%s", h$store, call))
    expect_identical(p$class, "zarr_error_zv")
    expect_lt(p$mb, 256)
  }
  r <- zvh_touch_all(h)
  expect_identical(unname(r$reads[c("fragments", "read_objects", "fragments_rw", "read_objects_rw")]), rep("zarr_error_zv", 4L))
  expect_identical(unname(r$reads[c("read_level", "read_box", "read_chunk", "manifests")]), rep("ok", 4L))
})

test_that("a fragment index within its chunk's declared rows is held to the parse budget", {
  h <- hostile_dir()
  zvh_store(h)
  # the vertex blob declares 2^24 bytes (2^24 / 12 rows), which it does not
  # hold; its fragment index names 2^20 of them (16 MB once expanded)
  zvh_put_blob(h$store, "0/vertex_fragments/0.0.0", zvh_frag(0, 2^20))
  zvh_declare_bytes(h$store, "0/vertices/0.0.0", 2^24)
  withr::local_options(list(zarr.max_decoded_bytes = 2^20))
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$fragments("0.0.0"), class = "zarr_error_zv",
               regexp = "1048576 rows would take \\d+ bytes, more than the budget of 1048576 .*0/vertex_fragments/0.0.0")
  expect_error(zv$read_level(), class = "zarr_error_zv", regexp = "declare 16777\\d+ bytes, more than the budget")
  r <- zvh_touch_all(h)
  expect_true(all(r$reads[c("fragments", "read_level", "read_box", "read_chunk", "read_objects")] == "zarr_error_zv"))
  expect_error(zarr:::zv_frag(zvh_frag(0, 2^16), NA, "f"), class = "zarr_error_zv", regexp = "budget of 1048576")
  expect_identical(zarr:::zv_frag(zvh_frag(c(0, 5), c(2^10, 3)), NA, "f")$rows, c(seq(0, 2^10 - 1), 5, 6, 7))
  # the default budget: 1 GiB
  withr::local_options(list(zarr.max_decoded_bytes = NULL))
  expect_error(zarr:::zv_frag(zvh_frag(0, 2^26), NA, "f"), class = "zarr_error_zv", regexp = "budget of 1073741824")
})

test_that("ranges whose counts add up past 2^64 are refused, not wrapped to 0 rows", {
  skip_without_proc_status()
  h <- hostile_dir()
  zvh_store(h)
  # a fragment index for a chunk without vertices: no row bound but the budget
  zvh_put_blob(h$store, "0/vertex_fragments/5.0.0", zvh_frag(rep(0, 4), rep(2^62, 4)))
  # before the fix the sum wrapped to 0 and the rows were written past a
  # 1-row buffer (a segfault): in a separate process first
  p <- hostile_peak(sprintf("zv <- open_zarr('%s', read_only = TRUE)$root; zv$fragments('5.0.0')", h$store), timeout = 60)
  expect_identical(p$class, "zarr_error_zv")
  expect_lt(p$mb, 256)
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$fragments("5.0.0"), class = "zarr_error_zv", regexp = "more rows than can be held")
  r <- zvh_touch_all(h)
  expect_true(all(r$reads %in% c("ok", "zarr_error_zv")))
})

test_that("a manifest block naming 2^32 - 1 fragments, or 2^32 - 1 blocks, is a zarr_error_zv", {
  skip_without_proc_status()
  h <- hostile_dir()
  zvh_store(h)
  # object 0: one block in chunk (0, 0, 0), mode 1, fragments 0 .. 2^32 - 2
  block <- c(zvh_u32(1), zvh_i64(c(0, 0, 0)), as.raw(1), zvh_i64(c(0, 2^32 - 1)))
  zvh_put_blob(h$store, "0/object_index/data", block)
  zvh_put_blob(h$store, "0/object_index/offsets", zvh_i64(0))
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_identical(zv$manifests(0)$count, 2^32 - 1)
  expect_error(zv$read_objects(0), class = "zarr_error_zv", regexp = "beyond its 2 .*0/object_index")
  # before the fix the fragment numbers were made first: 32 GB
  p <- hostile_peak(sprintf("zv <- open_zarr('%s', read_only = TRUE)$root; zv$read_objects(0)", h$store))
  expect_identical(p$class, "zarr_error_zv")
  expect_lt(p$mb, 256)
  r <- zvh_touch_all(h)
  expect_identical(unname(r$reads["read_objects"]), "zarr_error_zv")
  # a block count of 2^32 - 1 in four bytes
  zvh_put_blob(h$store, "0/object_index/data", c(zvh_u32(2^32 - 1), zvh_i64(c(0, 0, 0))))
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$manifests(0), class = "zarr_error_zv", regexp = "ends inside block 0 of 4294967295")
  p <- hostile_peak(sprintf("zv <- open_zarr('%s', read_only = TRUE)$root; zv$read_objects(0)", h$store))
  expect_identical(p$class, "zarr_error_zv")
  expect_lt(p$mb, 256)
  r <- zvh_touch_all(h)
  expect_true(all(r$reads[c("manifests", "read_objects")] == "zarr_error_zv"))
})

test_that("manifests and the rows a manifest selects are held to the parse budget", {
  h <- hostile_dir()
  zvh_store(h)
  # 40000 blocks of one fragment each: 1.3 MB of manifest
  nb <- 40000
  one <- c(zvh_i64(c(0, 0, 0)), as.raw(0), zvh_i64(0))
  zvh_put_blob(h$store, "0/object_index/data", c(zvh_u32(nb), rep(one, nb)))
  zvh_put_blob(h$store, "0/object_index/offsets", zvh_i64(0))
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_identical(length(zv$manifests(0)$object), as.integer(nb))
  # fragment 0 of chunk 0.0.0 holds 5 rows, named 40000 times
  expect_identical(nrow(zv$read_objects(0)$vertices), as.integer(5 * nb))
  withr::local_options(list(zarr.max_decoded_bytes = 2^20))
  expect_error(zv$manifests(0), class = "zarr_error_zv", regexp = "manifests of 40000 blocks would take .* budget of 1048576.*object_index")
  # the manifests fit, the rows they name do not
  zvh_put_blob(h$store, "0/object_index/data", c(zvh_u32(4000), rep(one, 4000)))
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$read_objects(0), class = "zarr_error_zv", regexp = "name \\d+ vertex rows, more than the budget")
  r <- zvh_touch_all(h)
  expect_true(all(r$reads %in% c("ok", "zarr_error_zv")))
  expect_identical(unname(r$reads["read_objects"]), "zarr_error_zv")
})

test_that("link records that claim huge counts or widths are zarr_error_zv", {
  h <- hostile_dir()
  zvh_store(h)
  zvh_set_attributes(h$store, "0/cross_chunk_links/0", num_links = 2^40)
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$cross_chunk_links(), class = "zarr_error_zv", regexp = "num_links")
  expect_error(zv$read_level(), class = "zarr_error_zv", regexp = "num_links")
  r <- zvh_touch_all(h)
  expect_true(all(r$reads[c("read_level", "read_box", "read_chunk", "read_objects", "cross_chunk_links")] == "zarr_error_zv"))
  zvh_set_attributes(h$store, "0/cross_chunk_links/0", num_links = 1L, link_width = 2^31)
  zvh_set_attributes(h$store, "0/links/0", link_width = 2^31, num_links = 2^50)
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$cross_chunk_links(), class = "zarr_error_zv", regexp = "link_width")
  expect_error(zv$read_level(), class = "zarr_error_zv", regexp = "link_width")
  r <- zvh_touch_all(h)
  expect_true(all(r$reads[c("read_level", "read_box", "read_chunk", "read_objects", "cross_chunk_links")] == "zarr_error_zv"))
})

test_that("rows that widen as they decode, and blobs that declare more than they hold, are held to the budget", {
  h <- hostile_dir()
  zvh_store(h)
  # 200 kB of int8 attribute rows decode to 1.6 MB of doubles
  zvh_set_attributes(h$store, "0/vertex_attributes/w", dtype = "int8")
  zvh_put_blob(h$store, "0/vertex_attributes/w/0.0.0", raw(2e5))
  withr::with_options(list(zarr.max_decoded_bytes = 2^20), {
    zv <- open_zarr(h$store, read_only = TRUE)$root
    expect_error(zv$read_chunk("0.0.0"), class = "zarr_error_zv", regexp = "200000 rows of 1 columns would take 1600000 bytes")
  })
  # a vertex blob declaring 4 MB (its chunk holds 120 bytes)
  zvh_declare_bytes(h$store, "0/vertices/1.0.0", 2^22)
  withr::local_options(list(zarr.max_decoded_bytes = 2^20))
  zv <- open_zarr(h$store, read_only = TRUE)$root
  expect_error(zv$read_level(), class = "zarr_error_zv", regexp = "declare 41944\\d+ bytes, more than the budget")
  r <- zvh_touch_all(h)
  expect_true(all(r$reads[c("read_level", "read_box", "read_objects")] == "zarr_error_zv"))
})

test_that("dictionary-encoded attributes with codes outside their categories, or bad categories, are zarr_error_zv", {
  h <- hostile_dir()
  p <- h$store
  v <- cbind(c(1, 2, 3), c(1, 2, 3))
  write_zarr_vectors(p, v, c(10, 10), attributes = data.frame(f = factor(c("a", "b", "a"))), levels = 1L)
  expect_identical(open_zarr(p)$root$read_level()$vertices$f, factor(c("a", "b", "a")))
  zvh_put_blob(p, "0/vertex_attributes/f/0.0", zvh_u32(c(0, 7, 1)))
  expect_error(open_zarr(p)$root$read_level(), class = "zarr_error_zv", regexp = "outside its 2 categories")
  zvh_put_blob(p, "0/vertex_attributes/f/0.0", zvh_u32(c(0, 2^32 - 1, 1))) # -1 without a _FillValue
  expect_error(open_zarr(p)$root$read_level(), class = "zarr_error_zv", regexp = "outside")
  zvh_set_attributes(p, "0/vertex_attributes/f", `_FillValue` = -1L)
  expect_identical(open_zarr(p)$root$read_level()$vertices$f, factor(c("a", NA, "b")))
  zvh_set_attributes(p, "0/vertex_attributes/f", categories = list("a", "a"))
  expect_error(open_zarr(p)$root$read_level(), class = "zarr_error_zv", regexp = "distinct")
  zvh_set_attributes(p, "0/vertex_attributes/f", categories = list(list(x = 1), "b"))
  expect_error(open_zarr(p)$root$read_level(), class = "zarr_error_zv", regexp = "distinct")
  zvh_set_attributes(p, "0/vertex_attributes/f", categories = "oops", `_FillValue` = NULL)
  r <- zvh_touch_all(h)
  expect_true(all(r$reads %in% c("ok", "zarr_error_zv")))
  expect_identical(unname(r$reads["read_level"]), "zarr_error_zv")
})
