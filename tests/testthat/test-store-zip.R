# zarr_zipstore: zip files made by the zip program, by a small zip writer
# (helper-zip.R, for the corners of the format: ZIP64, comments, prepended data,
# unsupported methods, damaged members) and by zarr-python (the fixtures).

# ---- making zip files --------------------------------------------------------

skip_without_zip_program <- function() {
  testthat::skip_if_not(nzchar(Sys.which(Sys.getenv("R_ZIPCMD", "zip"))), "no zip program")
}

# Zip a store directory "from within" (its files at the top of the zip) or
# "from the parent" (one level down, in a folder named after the directory).
zip_store <- function(dir, from = c("within", "parent"), flags = "-r9Xq", env = parent.frame()) {
  from <- match.arg(from)
  zipfile <- tempfile(fileext = ".zip")
  withr::defer(unlink(zipfile), envir = env)
  if (from == "within") {
    withr::with_dir(dir, utils::zip(zipfile, list.files(all.files = TRUE, no.. = TRUE), flags = flags))
  } else {
    withr::with_dir(dirname(dir), utils::zip(zipfile, basename(dir), flags = flags))
  }
  zipfile
}

# A store directory with a root group, a multi-chunk matrix and a 3-d array.
make_test_store <- function(env = parent.frame()) {
  dir <- file.path(tempfile(), "data.zarr")
  withr::defer(unlink(dirname(dir), recursive = TRUE), envir = env)
  dir.create(dirname(dir))
  z <- create_zarr(dir)
  as_zarr(matrix(as.numeric(1:1000), 250, 4), "m", z$root)
  g <- z$add_group("/", "g")
  as_zarr(array(1:120, c(4, 5, 6)), "a", g)
  dir
}

test_values <- list(m = matrix(as.numeric(1:1000), 250, 4), a = array(1:120, c(4, 5, 6)))

# The members of a store directory, as write_zip() takes them.
dir_members <- function(dir, prefix = "") {
  files <- sort(list.files(dir, recursive = TRUE, all.files = TRUE))
  stats::setNames(lapply(files, function(f) readBin(file.path(dir, f), "raw", file.size(file.path(dir, f)))),
                  paste0(prefix, files))
}

local_zip <- function(env = parent.frame()) {
  p <- tempfile(fileext = ".zip")
  withr::defer(unlink(p), envir = env)
  p
}

expect_test_values <- function(z) {
  expect_identical(z[["/m"]][], test_values$m)
  expect_identical(z[["/g/a"]][], test_values$a)
  expect_identical(z[["/m"]][c(3, 250, 101), c(4, 1)], test_values$m[c(3, 250, 101), c(4, 1)])
}

# ---- zip files made by the zip program --------------------------------------------

test_that("stores zipped from within or from the parent read back, deflated or stored", {
  skip_without_zip_program()
  for (format in c(3L, 2L)) for (from in c("within", "parent")) for (flags in c("-r9Xq", "-r0Xq")) {
    dir <- withr::with_options(list(zarr.format = format), make_test_store())
    info <- paste(format, from, flags)
    zf <- zip_store(dir, from, flags)
    z <- open_zarr(zf)
    st <- z$store
    expect_s3_class(st, "zarr_zipstore")
    expect_s3_class(st, "zarr_store")
    expect_true(st$read_only)
    expect_identical(st$root_in_zip, if (from == "parent") "data.zarr/" else "", info = info)
    expect_identical(st$version, zarr_localstore$new(dir, read_only = TRUE)$version, info = info)
    expect_identical(z$version, open_zarr(dir, read_only = TRUE)$version, info = info)
    expect_setequal(z$arrays, c("/m", "/g/a"))
    expect_test_values(z)
    withr::with_options(list(zarr.num_threads = 1L), expect_test_values(z))
    withr::with_options(list(zarr.num_threads = 4L), expect_test_values(z))
  }
})

test_that("a zip store lists, sizes and reads keys like the directory it came from", {
  skip_without_zip_program()
  dir <- make_test_store()
  loc <- zarr_localstore$new(dir, read_only = TRUE)
  for (flags in c("-r9Xq", "-r0Xq")) {
    st <- zarr_zipstore$new(zip_store(dir, "parent", flags))
    expect_setequal(st$list(), loc$list())
    expect_setequal(st$list_dir(""), loc$list_dir(""))
    expect_setequal(st$list_dir("g"), loc$list_dir("g"))
    expect_setequal(st$list_dir("/g/"), loc$list_dir("g"))
    expect_setequal(st$list_prefix("g/"), loc$list_prefix("g/"))
    expect_identical(st$list_dir("nope"), character())
    for (k in loc$list()) {
      expect_identical(st$get(k), loc$get(k), info = k)
      expect_identical(st$getsize(k), as.numeric(loc$getsize(k)), info = k)
      size <- loc$getsize(k)
      for (br in list(0, 1, -2, c(1, 3), c(0, size), c(2, size + 10)))
        if (size > 2) expect_identical(st$get(k, byte_range = br), loc$get(k, byte_range = br), info = k)
    }
    expect_true(st$exists("zarr.json"))
    expect_true(st$exists("g"))
    expect_true(st$exists("g/a/zarr.json"))
    expect_false(st$exists("g/zz"))
    expect_null(st$get("g/zz"))
    expect_true(is.na(st$getsize("g/zz")))
    expect_error(st$get("zarr.json", byte_range = c(5000, 6000)), class = "zarr_error_argument")
  }
})

test_that("open_zarr() takes zip paths and file:// URIs to them, read-only unless read_only = FALSE", {
  skip_without_zip_program()
  zf <- zip_store(make_test_store(), "within")
  z <- open_zarr(paste0("file://", zf))
  expect_s3_class(z$store, "zarr_zipstore")
  expect_true(z$store$read_only)
  expect_identical(z$store$root, normalizePath(zf, winslash = "/"))
  expect_identical(z$store$uri, paste0("file://", z$store$root))
  expect_identical(z$store$friendlyClassName, "Zip file store")
  expect_output(print(z$store), "Zarr zip store")
  expect_output(print(z), "Zip file store")
  expect_identical(open_zarr(z$store$uri)[["/m"]][], test_values$m)
  expect_error(open_zarr(tempfile(fileext = ".zip")), class = "zarr_error_not_found")
})

test_that("writing to a zip store is refused", {
  skip_without_zip_program()
  z <- open_zarr(zip_store(make_test_store(), "parent"))
  st <- z$store
  expect_error(st$set("x", as.raw(1)), class = "zarr_error_read_only")
  expect_error(st$set("zarr.json", as.raw(1)), class = "zarr_error_read_only")
  expect_error(st$erase("zarr.json"), class = "zarr_error_read_only")
  expect_error(st$erase_prefix("g/"), class = "zarr_error_read_only")
  expect_error(st$clear(), class = "zarr_error_read_only")
  expect_error(st$create_group("/", "h"), class = "zarr_error_read_only")
  expect_error(z$add_group("/", "h"), class = "zarr_error_read_only")
  a <- z[["/m"]]
  expect_error(a[1, 1] <- 5, class = "zarr_error_read_only")
  expect_error(a$write(matrix(0, 250, 4)), class = "zarr_error_read_only")
  expect_identical(a[], test_values$m)
})

# ---- the format's corners, with write_zip() ----------------------------------------

test_that("the R zip writer makes zip files that unzip reads", {
  skip_if_not(nzchar(Sys.which("unzip")), "no unzip program")
  mem <- list(a = charToRaw("hello"), "d/b" = as.raw(0:255), "e/empty" = raw())
  for (deflate in c(FALSE, TRUE)) for (zip64 in c(FALSE, TRUE)) {
    zf <- write_zip(local_zip(), mem, deflate = deflate, zip64 = zip64, comment = "a comment")
    expect_identical(suppressWarnings(system2("unzip", c("-tqq", shQuote(zf)))), 0L)
    out <- tempfile()
    utils::unzip(zf, exdir = out)
    expect_identical(readBin(file.path(out, "d/b"), "raw", 1000), as.raw(0:255))
    unlink(out, recursive = TRUE)
  }
})

test_that("zip files with ZIP64 records, comments, prepended data and long local extras read", {
  dir <- make_test_store()
  mem <- dir_members(dir)
  variants <- list(
    list(), list(deflate = TRUE), list(zip64 = TRUE), list(zip64 = TRUE, deflate = TRUE),
    list(comment = strrep("x", 1000)), list(comment = "PK\005\006 a fake record in the comment"),
    list(prepend = as.raw(rep(c(0x50, 0x4b, 1, 2), 100))), list(zip64 = TRUE, prepend = as.raw(1:99)),
    list(local_extra = 2000L), list(local_extra = 2000L, deflate = TRUE))
  for (v in variants) {
    zf <- do.call(write_zip, c(list(local_zip(), mem), v))
    info <- paste(deparse(v), collapse = "")
    z <- open_zarr(zf)
    expect_identical(z$store$root_in_zip, "", info = info)
    expect_identical(z[["/m"]][], test_values$m, info = info)
    expect_identical(z[["/g/a"]][], test_values$a, info = info)
    expect_identical(z$store$get("zarr.json", byte_range = c(2, 9)), mem[["zarr.json"]][3:9], info = info)
  }
  # from the parent, with a macOS resource folder next to it
  mem2 <- c(dir_members(dir, "x.zarr/"), list("__MACOSX/._x.zarr" = as.raw(1:4)))
  z <- open_zarr(write_zip(local_zip(), mem2, zip64 = TRUE))
  expect_identical(z$store$root_in_zip, "x.zarr/")
  expect_identical(z[["/g/a"]][], test_values$a)
})

test_that("the store root stays at the top unless exactly one top folder holds a store", {
  dir <- make_test_store()
  two <- c(dir_members(dir, "one.zarr/"), dir_members(dir, "two.zarr/"))
  z <- open_zarr(write_zip(local_zip(), two))
  expect_identical(z$store$root_in_zip, "")
  expect_identical(z[["/two.zarr/g/a"]][], test_values$a) # an implicit root group
  st <- zarr_zipstore$new(write_zip(local_zip(), c(dir_members(dir), dir_members(dir, "copy/"))))
  expect_identical(st$root_in_zip, "")
})

test_that("a name in the zip twice reads as its later copy", {
  mem <- list("zarr.json" = charToRaw('{"zarr_format": 3, "node_type": "group"}'),
              x = as.raw(1:3))
  zf <- local_zip()
  write_zip(zf, c(mem, list(x = as.raw(7:9))))
  st <- zarr_zipstore$new(zf)
  expect_identical(st$get("x"), as.raw(7:9))
  expect_identical(st$list(), c("x", "zarr.json"))
})

test_that("names that cannot be keys are left out, and escaping keys are refused", {
  mem <- list("zarr.json" = charToRaw('{"zarr_format": 3, "node_type": "group"}'),
              "../evil" = as.raw(1), "/abs" = as.raw(2), "a//b" = as.raw(3), ok = as.raw(4))
  st <- zarr_zipstore$new(write_zip(local_zip(), mem))
  expect_setequal(st$list(), c("zarr.json", "ok"))
  expect_error(st$get("../evil"), class = "zarr_error_key")
  expect_error(st$get("../x"), class = "zarr_error_key")
  expect_error(st$get("/abs"), class = "zarr_error_key")
  expect_error(st$exists("a/../ok"), class = "zarr_error_key")
  expect_error(st$getsize(""), class = "zarr_error_key")
  expect_identical(st$get("ok"), as.raw(4))
})

test_that("unsupported compression methods and encryption give classed errors naming the member", {
  mem <- list("zarr.json" = charToRaw('{"zarr_format": 3, "node_type": "group"}'),
              bz = as.raw(1:10), enc = as.raw(1:10))
  st <- zarr_zipstore$new(write_zip(local_zip(), mem, method = list(bz = 12L), flags = list(enc = 1L)))
  expect_error(st$get("bz"), class = "zarr_error_store", regexp = "'bz'.*method 12")
  expect_error(st$get("enc"), class = "zarr_error_store", regexp = "'enc'.*encrypted")
  expect_identical(st$get("zarr.json"), mem[["zarr.json"]])
})

test_that("bad CRCs are zarr_error_checksum, in get() and in the engine", {
  dir <- make_test_store()
  mem <- dir_members(dir)
  chunk <- open_zarr(dir)[["/m"]]$chunking$chunk_keys(matrix(c(1, 0), 1)) # rows 101-200
  expect_true(chunk %in% names(mem))
  for (deflate in c(FALSE, TRUE)) {
    zf <- write_zip(local_zip(), mem, deflate = deflate, crc = stats::setNames(list(12345), chunk))
    z <- open_zarr(zf)
    expect_error(z$store$get(chunk), class = "zarr_error_checksum")
    expect_error(z[["/m"]][], class = "zarr_error_checksum")
    expect_error(z[["/m"]][150, 1], class = "zarr_error_checksum")
    expect_identical(z[["/m"]][1:100, ], test_values$m[1:100, ]) # other chunks are fine
    expect_identical(z[["/g/a"]][], test_values$a)
    # a byte range of a stored member is not checked (that needs all of it)
    if (!deflate) expect_identical(z$store$get(chunk, byte_range = c(0, 4)), mem[[chunk]][1:4])
    if (deflate) expect_error(z$store$get(chunk, byte_range = c(0, 4)), class = "zarr_error_checksum")
  }
})

test_that("damaged member data give classed errors", {
  skip_without_zip_program()
  dir <- make_test_store()
  chunk <- open_zarr(dir)[["/m"]]$chunking$chunk_keys(matrix(c(1, 0), 1))
  chunk_bytes <- readBin(file.path(dir, chunk), "raw", 1e6)
  for (flags in c("-r0Xq", "-r9Xq")) {
    zf <- zip_store(dir, "within", flags)
    bytes <- readBin(zf, "raw", file.size(zf))
    # flip a byte in the chunk's data: stored, it is found verbatim
    at <- if (flags == "-r0Xq") grepRaw(chunk_bytes, bytes, fixed = TRUE) + 10L else {
      # deflated: into the member's data, after its local header (whose
      # name is at h and whose extra field length is just before the name)
      h <- grepRaw(charToRaw(chunk), bytes, fixed = TRUE)
      h + nchar(chunk) + as.integer(bytes[h - 2L]) + 256L * as.integer(bytes[h - 1L]) + 40L
    }
    bad <- bytes
    bad[at] <- xor(bad[at], as.raw(0xff))
    zb <- local_zip()
    writeBin(bad, zb)
    z <- open_zarr(zb)
    expect_error(z[["/m"]][], class = "zarr_error")
    if (flags == "-r0Xq") expect_error(z[["/m"]][], class = "zarr_error_checksum")
    expect_identical(z[["/g/a"]][], test_values$a)
  }
})

test_that("truncated, garbage and missing zip files give classed errors", {
  skip_without_zip_program()
  zf <- zip_store(make_test_store(), "within")
  bytes <- readBin(zf, "raw", file.size(zf))
  cut <- local_zip()
  for (keep in c(0L, 10L, 21L, length(bytes) %/% 2L, length(bytes) - 10L)) {
    writeBin(bytes[seq_len(keep)], cut)
    expect_error(zarr_zipstore$new(cut), class = "zarr_error", info = keep)
    expect_error(open_zarr(cut), class = "zarr_error", info = keep)
  }
  # the directory intact but member data missing: offsets point past the data
  writeBin(c(bytes[1:100], bytes[(length(bytes) - 3000):length(bytes)]), cut)
  # (a node whose documents are lost opens, and fails when used)
  z <- tryCatch(open_zarr(cut), zarr_error = function(e) NULL)
  if (!is.null(z)) {
    outcome <- vapply(z$arrays, function(p) {
      r <- tryCatch({
        z[[p]][]
        "read"
      }, zarr_error = function(e) "zarr_error", error = function(e) "other error")
    }, "")
    expect_true(any(outcome == "zarr_error"))
    expect_false(any(outcome == "other error"))
  }
  garbage <- local_zip()
  set.seed(1)
  writeBin(as.raw(sample(0:255, 5000, TRUE)), garbage)
  expect_error(open_zarr(garbage), class = "zarr_error_store")
  writeBin(charToRaw("not a zip file at all"), garbage)
  expect_error(open_zarr(garbage), class = "zarr_error_store")
  expect_error(zarr_zipstore$new(tempdir()), class = "zarr_error_store")
  expect_error(zarr_zipstore$new(c("a", "b")), class = "zarr_error_argument")
})

# ---- zip files written by zarr-python ----------------------------------------------

test_that("the zarr-python zip fixtures read like their directory twins", {
  skip_without_fixtures()
  base <- file.path(fixtures_dir(), "zarr-python")
  zips <- list.files(file.path(base, "zip"), pattern = "[.]zip$", recursive = TRUE, full.names = TRUE)
  expect_length(zips, 5L)
  for (zf in zips) {
    twin <- open_zarr(file.path(base, paste0(basename(dirname(zf)), ".zarr")), read_only = TRUE)
    z <- open_zarr(zf)
    expect_identical(z$store$root_in_zip, if (grepl("from_parent", zf)) "data.zarr/" else "", info = zf)
    expect_identical(z$version, twin$version, info = zf)
    expect_setequal(z$arrays, twin$arrays)
    for (p in c("/3d.chunked.i2", "/1d.contiguous.raw.i2", "/2d.chunked.ragged.i2")) {
      if (is.null(twin[[p]])) next
      expect_identical(z[[p]]$read(fill_as_na = FALSE), twin[[p]]$read(fill_as_na = FALSE), info = paste(zf, p))
    }
    keys <- z$store$list()
    expect_setequal(keys, setdiff(twin$store$list(), character()))
  }
})
