# Hostile journals (issue 26): the journal of an interrupted resize or
# promote (<array>/__zarr_journal.json, R/resize.R) is store content. Keys
# it names outside its array (../, absolute paths, backslashes, another
# array, a folder linked to elsewhere) are never erased or written: the
# array opens with a warning of class zarr_warning_journal, and no file
# inside or outside the store changes. Every key from store content is
# refused by the C store layer itself (src/store.c, src/store_local.c).

# A store with arrays "a" and "b" (8 x 8, chunks 4 x 4, "/" chunk keys);
# with `marked`, "a" carries the pending marker, so that opening the store
# writable acts on its journal (`journal`: fields over a well-formed one).
journal_store <- function(h, journal = list(), marked = TRUE, link = NULL) {
  z <- create_zarr(h$store)
  d <- define_array("int32", c(8, 8))
  d$chunk_shape <- c(4, 4)
  m <- d$metadata()
  m$chunk_key_encoding <- list(name = "default", configuration = list(separator = "/"))
  z$add_array("/", "a", m)$write(matrix(1:64, 8))
  z$add_array("/", "b", m)$write(matrix(101:164, 8))
  doc <- file.path(h$store, "a", "zarr.json")
  clean <- paste(readLines(doc, warn = FALSE), collapse = "\n")
  j <- list(format = 1L, operation = "resize", old_shape = I(c(8, 8)), new_shape = I(c(8, 8)),
            metadata = clean, from = I("a/c/0/0"), to = I("a/c/1/1"), staging = I("a/__zarr_stage.1"),
            erase = I("a/c/0/1"), trim = FALSE, clip = I(integer()), had = I(c(8, 8)), undo_clip = I(integer()))
  j[names(journal)] <- journal
  writeLines(jsonlite::toJSON(j, auto_unbox = TRUE, digits = NA), file.path(h$store, "a", "__zarr_journal.json"))
  file.copy(file.path(h$store, "a", "c", "0", "0"), file.path(h$store, "a", "__zarr_stage.1"))
  if (marked) {
    md <- jsonlite::fromJSON(doc, simplifyVector = FALSE)
    md$zarr_r_pending_move <- list(must_understand = TRUE, journal = "__zarr_journal.json")
    writeLines(jsonlite::toJSON(md, auto_unbox = TRUE, digits = NA, null = "null"), doc)
  }
  if (!is.null(link)) {
    unlink(file.path(h$store, "a", link), recursive = TRUE)
    file.symlink(h$outside, file.path(h$store, "a", link))
  }
  invisible(h)
}

# Opened read-only and writable, walked, read and printed: the journal is
# refused with its warning, and nothing inside or outside the store changed.
expect_journal_refused <- function(h, info) {
  outside <- hostile_snapshot(h$dir, except = h$store)
  inside <- hostile_snapshot(h$store)
  seen <- hostile_touch(h$store)
  expect_true("zarr_warning_journal" %in% seen, info = info)
  expect_outside_unchanged(outside, h$dir, except = h$store)
  expect_identical(hostile_snapshot(h$store), inside, info = info)
  # the array that was not in the journal reads as it was
  expect_identical(open_zarr(h$store, read_only = TRUE)[["/b"]][, ], matrix(101:164, 8), info = info)
}

test_that("journal keys outside the array are refused, and nothing changes inside or outside the store", {
  skip_on_os("windows")
  bad <- list(
    erase_sibling = list(erase = I("../victim.txt")),
    erase_up_twice = list(erase = I("a/../../outside/victim.txt")),
    erase_outside = list(erase = I("../outside/victim.txt")),
    erase_absolute = list(erase = NA), # filled in below: the victim's absolute path
    erase_backslash = list(erase = I("a\\..\\..\\outside\\victim.txt")),
    erase_other_array = list(erase = I("b/c/0/0")),
    erase_metadata = list(erase = I("a/zarr.json")),
    erase_empty_segment = list(erase = I("a//c/0/0")),
    to_outside = list(to = I("../outside/new.txt")),
    to_other_array = list(to = I("b/c/1/1")),
    from_outside = list(from = I("../outside/victim.txt")),
    staging_outside = list(staging = I("../victim.txt")),
    staging_other_array = list(staging = I("b/__zarr_stage.1")),
    staging_dot = list(staging = I("a/./__zarr_stage.1")),
    not_a_list = list(erase = "a/c/0/1", from = list(list("a/c/0/0"))),
    bad_clip = list(clip = I(7L)),
    bad_metadata = list(metadata = "{\"node_type\": \"group\"}")
  )
  # the well-formed journal these are made from is acted on
  h <- hostile_dir()
  journal_store(h)
  outside <- hostile_snapshot(h$dir, except = h$store)
  # (read-only: refused until a writable opening finishes it)
  expect_identical(hostile_touch(h$store), "zarr_error_interrupted")
  expect_outside_unchanged(outside, h$dir, except = h$store)
  expect_false(file.exists(file.path(h$store, "a", "c", "0", "1")))
  want <- matrix(1:64, 8)
  want[5:8, 5:8] <- want[1:4, 1:4]
  want[1:4, 5:8] <- NA
  expect_identical(open_zarr(h$store, read_only = TRUE)[["/a"]][, ], want)
  expect_false(any(file.exists(file.path(h$store, "a", c("__zarr_stage.1", "__zarr_journal.json")))))
  for (nm in names(bad)) {
    h <- hostile_dir()
    fields <- bad[[nm]]
    if (nm == "erase_absolute") fields$erase <- I(file.path(h$outside, "victim.txt"))
    journal_store(h, fields)
    expect_journal_refused(h, nm)
  }
})

test_that("a folder of the array linked to outside the store is never written or erased through", {
  skip_on_os("windows")
  h <- hostile_dir()
  # a/c is a link to outside/: keys through it that are not chunk keys
  journal_store(h, list(erase = I("a/c/sub/victim.bin")), link = "c")
  expect_journal_refused(h, "not a chunk key")
  # chunk keys of "a" that the store refuses: outside/0/0 looks like a chunk
  h <- hostile_dir()
  dir.create(file.path(h$outside, "0"))
  writeBin(as.raw(0:15), file.path(h$outside, "0", "0"))
  journal_store(h, list(erase = I(c("a/c/0/0", "a/c/0/1")), staging = I("a/__zarr_stage.1")), link = "c")
  expect_journal_refused(h, "through the link")
  # and the C store layer itself refuses such a key, naming it
  st <- zarr_localstore$new(h$store)
  e <- expect_error(.Call(zarr:::ffi_store_erase, st$io_spec(), "a/c/0/0"), class = "zarr_error_key")
  expect_identical(e$key, "a/c/0/0")
  expect_match(conditionMessage(e), "outside the store")
  expect_error(st$set("a/c/9/9", as.raw(1:4)), class = "zarr_error_key")
  expect_error(st$erase("a/c/0/0"), class = "zarr_error_key")
  expect_true(file.exists(file.path(h$outside, "0", "0")))
  expect_false(file.exists(file.path(h$outside, "9")))
})

test_that("an unmarked array's hostile journal is refused by its next resize, which changes nothing outside", {
  skip_on_os("windows")
  h <- hostile_dir()
  journal_store(h, list(erase = I("../victim.txt"), to = I("../outside/new.txt")), marked = FALSE)
  outside <- hostile_snapshot(h$dir, except = h$store)
  expect_length(setdiff(hostile_touch(h$store), "zarr_warning_journal"), 0L) # not even read when opened
  a <- open_zarr(h$store)[["/a"]]
  expect_warning(a$resize(c(4, 8)), class = "zarr_warning_journal")
  expect_identical(a[, ], matrix(1:64, 8)[1:4, ])
  expect_identical(open_zarr(h$store, read_only = TRUE)[["/a"]][, ], matrix(1:64, 8)[1:4, ])
  expect_outside_unchanged(outside, h$dir, except = h$store)
})

test_that("the C store layer refuses unsafe keys in every kind of store: reads, writes, erases and copies", {
  h <- hostile_dir()
  z <- create_zarr(h$store)
  z$add_array("/", "a", define_array("int32", c(4, 4)))$write(matrix(1:16, 4))
  mem <- zarr_memorystore$new()
  mem$set("x", as.raw(1:3))
  stores <- list(local = zarr_localstore$new(h$store), memory = mem)
  # read-only kinds: references, a zip file, a web server (refused before any request)
  zp <- file.path(h$dir, "s.zip")
  zs <- zarr_zipstore$new(zp, read_only = FALSE)
  zs$create_group("/", "", 3L)
  zs$close()
  readers <- list(ref = zarr_refstore$new(list(.zgroup = "{\"zarr_format\":2}"))$io_spec(),
                  zip = zarr_zipstore$new(zp)$io_spec(),
                  http = .Call(zarr:::ffi_store_http, "http://127.0.0.1:9", "", zarr:::http_options()))
  keys <- c("../victim.txt", "a/../../outside/victim.txt", "/etc/passwd", "a\\b", "a//b", "./a", "a/.", "")
  outside <- hostile_snapshot(h$dir, except = h$store)
  for (nm in names(readers)) for (k in keys) {
    e <- expect_error(.Call(zarr:::ffi_store_get, readers[[nm]], k, NULL), class = "zarr_error_key", info = paste(nm, k))
    expect_identical(e$key, k)
  }
  for (nm in names(stores)) {
    io <- stores[[nm]]$io_spec()
    for (k in keys) {
      info <- paste(nm, k)
      e <- expect_error(.Call(zarr:::ffi_store_get, io, k, NULL), class = "zarr_error_key", info = info)
      expect_identical(e$key, k, info = info)
      expect_error(.Call(zarr:::ffi_store_get_keys, io, c("zarr.json", k), 1L), class = "zarr_error_key", info = info)
      expect_error(.Call(zarr:::ffi_store_set, io, k, as.raw(1)), class = "zarr_error_key", info = info)
      expect_error(.Call(zarr:::ffi_store_set, io, k, NULL), class = "zarr_error_key", info = info)
      expect_error(.Call(zarr:::ffi_store_erase, io, k), class = "zarr_error_key", info = info)
      expect_error(.Call(zarr:::ffi_store_copy, io, io, "zarr.json", k, 1L), class = "zarr_error_key", info = info)
      expect_error(.Call(zarr:::ffi_store_copy, io, io, k, "y", 1L), class = "zarr_error_key", info = info)
    }
    # a batch with one bad key changes nothing: the good keys before it stay
    if (nm == "memory") {
      expect_error(.Call(zarr:::ffi_store_erase, io, c("x", "../victim.txt")), class = "zarr_error_key")
      expect_identical(mem$get("x"), as.raw(1:3))
    }
  }
  expect_true(file.exists(file.path(h$store, "zarr.json")))
  expect_outside_unchanged(outside, h$dir, except = h$store)
})

# Opening read-only, reading and printing never writes or deletes a file,
# even where a writable opening would finish an interrupted change.
test_that("a read-only open never changes a file of the store; a writable one finishes a trusted journal", {
  skip_on_os("windows")
  h <- hostile_dir()
  z <- create_zarr(h$store)
  d <- define_array("int32", c(8, 8))
  d$chunk_shape <- c(4, 4)
  m <- d$metadata()
  m$chunk_key_encoding <- list(name = "default", configuration = list(separator = "/"))
  a <- z$add_array("/", "a", m)
  a$write(matrix(1:64, 8))
  z$add_array("/", "v", define_array("float64", c(3, 5)))$write(matrix(as.numeric(1:15), 3))
  zarr_consolidate(z)
  a <- open_zarr(h$store)[["/a"]]
  # the promote stops dead after its commit (as a killed process would)
  # (testthat 3.1.6 has no with_mocked_bindings())
  ns <- asNamespace("zarr")
  finish <- ns$finish_structure
  unlockBinding("finish_structure", ns)
  assign("finish_structure", function(...) stop("killed"), envir = ns)
  expect_error(a$promote(1, 2), "killed")
  assign("finish_structure", finish, envir = ns)
  lockBinding("finish_structure", ns)
  expect_true(file.exists(file.path(h$store, "a", "__zarr_journal.json")))
  expect_true(file.exists(file.path(h$store, "a", "__zarr_stage.1")))
  files <- function() {
    f <- list.files(h$store, recursive = TRUE, all.files = TRUE, include.dirs = TRUE)
    list(f, hostile_snapshot(h$store), file.mtime(file.path(h$store, f)))
  }
  before <- files()
  seen <- character()
  for (i in 1:2) {
    zz <- open_zarr(h$store, read_only = TRUE)
    capture.output(print(zz), print(zz[["/v"]]), print(zz[["/a"]]), str(zz))
    expect_identical(zz[["/v"]][, ], matrix(as.numeric(1:15), 3))
    expect_error(zz[["/a"]][, , ], class = "zarr_error_interrupted")
    expect_identical(files(), before)
  }
  # a writable opening acts on the (trusted) journal: the promote is finished
  zz <- open_zarr(h$store)
  want <- array(NA_integer_, c(2, 8, 8))
  want[1, , ] <- matrix(1:64, 8)
  expect_identical(zz[["/a"]]$read(), want)
  expect_false(any(grepl("__zarr_", zarr_localstore$new(h$store, read_only = TRUE)$list_prefix(""))))
  # a clean store opened writable, read and printed changes nothing either
  before <- files()
  zz <- open_zarr(h$store)
  capture.output(print(zz), print(zz[["/a"]]), str(zz))
  zz[["/a"]][, , ]
  zz[["/v"]][2, ]
  expect_identical(files(), before)
})

test_that("a journal's parse is bounded by zarr.max_decoded_bytes, and opening it takes little memory", {
  skip_on_os("windows")
  h <- hostile_dir()
  # 200 000 empty arrays: 600 kB of text, some 13 MB parsed
  journal_store(h, list(erase = I(rep(list(list()), 2e5))))
  withr::local_options(zarr.max_decoded_bytes = 2^23)
  outside <- hostile_snapshot(h$dir, except = h$store)
  inside <- hostile_snapshot(h$store)
  expect_warning(a <- open_zarr(h$store)[["/a"]], "zarr.max_decoded_bytes", class = "zarr_warning_journal")
  expect_error(a[, ], class = "zarr_error_interrupted")
  expect_identical(hostile_snapshot(h$store), inside)
  expect_outside_unchanged(outside, h$dir, except = h$store)
  # with the default budget, a journal of 1.5 MB of tiny values is parsed, and refused
  skip_on_cran()
  skip_without_proc_status()
  h <- hostile_dir()
  journal_store(h, list(erase = I(rep(list(list()), 5e5))))
  r <- hostile_peak(paste(sprintf("w <- tryCatch({open_zarr('%s')[['/a']]; NULL}, warning = function(w) w)", h$store),
                           "stop(structure(class = c(class(w)[1L], 'error', 'condition'), list(message = '', call = NULL)))",
                           sep = "; "))
  expect_identical(r$class, "zarr_warning_journal")
  expect_lt(r$mb, 256)
})
