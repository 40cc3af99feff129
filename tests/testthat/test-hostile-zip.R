# Hostile zip files (issue 26): a zip file is untrusted input. Members whose
# names cannot be keys (docs\readme.txt, ./extra.txt, ../evil, /abs, names
# with a NUL or a byte that is not UTF-8) are never keys, so nothing reaches
# outside the store, and a writable store keeps them byte for byte when it
# rewrites the archive; an archive in which nothing was written is not
# rewritten; the central directory is indexed within zarr.max_decoded_bytes,
# and end records that claim more members than the directory can hold fail.
# Zip files are written byte by byte by write_zip() (helper-zip.R).

skip_without_unzip <- function() skip_if_not(nzchar(Sys.which("unzip")), "no unzip program")

# Members that cannot be keys, with their contents; "docs\readme.txt" is
# deflated. "nul_Xname" and "bad_Yname" get a NUL and a 0xFF byte for the
# X and Y in the zip file (R strings cannot hold them).
odd_members <- list("docs\\readme.txt" = charToRaw(strrep("backslash ", 20)), "./extra.txt" = charToRaw("dot"),
                    "../evil" = charToRaw("evil"), "/abs" = charToRaw("abs"), "a//b" = charToRaw("two slashes"),
                    "nul_Xname" = charToRaw("nul"), "bad_Yname" = charToRaw("bad"))

# Every occurrence of the bytes of `from` in `b` replaced by `to` (as long).
replace_bytes <- function(b, from, to) {
  from <- charToRaw(from)
  k <- length(from)
  at <- which(b == from[1L])
  at <- at[vapply(at, function(i) i + k - 1L <= length(b) && identical(b[i:(i + k - 1L)], from), TRUE)]
  for (i in at) b[i:(i + k - 1L)] <- to
  b
}

# A zip store at `path`: a root group and an int32 array /a of 1:4 (one
# chunk), and the odd members.
write_hostile_zip <- function(path, zip64 = FALSE) {
  src <- withr::local_tempdir()
  z <- create_zarr(file.path(src, "s"))
  a <- z$add_array("/", "a", define_array("int32", 4))
  a[] <- 1:4
  files <- sort(list.files(file.path(src, "s"), recursive = TRUE))
  mem <- stats::setNames(lapply(files, function(f) readBin(file.path(src, "s", f), "raw", 1e6)), files)
  write_zip(path, c(mem, odd_members), zip64 = zip64, method = list("docs\\readme.txt" = 8L))
  b <- readBin(path, "raw", file.size(path))
  b <- replace_bytes(b, "nul_Xname", charToRaw("nul_\001name"))
  b <- replace_bytes(b, "nul_\001name", c(charToRaw("nul_"), as.raw(0), charToRaw("name")))
  b <- replace_bytes(b, "bad_Yname", c(charToRaw("bad_"), as.raw(0xFF), charToRaw("name")))
  writeBin(b, path)
  invisible(path)
}

# The members of a zip file (no ZIP64) as its central directory lists them:
# name bytes, method, CRC-32, size and the stored (compressed) bytes, read
# here without any zip library. Named by the name bytes in hex.
zip_records <- function(path) {
  b <- readBin(path, "raw", file.size(path))
  u16 <- function(i) as.numeric(b[i]) + 256 * as.numeric(b[i + 1L])
  u32 <- function(i) u16(i) + 65536 * u16(i + 2L)
  n <- length(b)
  e <- n - 21L # no archive comment
  stopifnot(u32(e) == 0x06054b50)
  off <- u32(e + 16L) + 1
  recs <- list()
  for (k in seq_len(u16(e + 10L))) {
    nlen <- u16(off + 28)
    name <- b[off + 46 + seq_len(nlen) - 1]
    lo <- u32(off + 42) + 1
    csize <- u32(off + 20)
    data <- b[lo + 30 + u16(lo + 26) + u16(lo + 28) + seq_len(csize) - 1]
    recs[[paste(as.character(name), collapse = "")]] <-
      list(name = name, method = u16(off + 10), crc = u32(off + 16), usize = u32(off + 24), data = data)
    off <- off + 46 + nlen + u16(off + 30) + u16(off + 32)
  }
  recs
}

# The key of the chunk of /a.
chunk_key <- function(store) grep("^a/c", store$list(), value = TRUE)

odd_records <- function(recs) {
  keys <- c("zarr.json", "a/zarr.json", "a/c/0", "a/c.0")
  recs[!vapply(recs, function(r) rawToChar(r$name[r$name != as.raw(0)]) %in% keys, TRUE)]
}

file_bytes <- function(path) readBin(path, "raw", file.size(path))

test_that("members whose names cannot be keys are never keys, and nothing outside the store changes", {
  h <- hostile_dir(store = "store.zip")
  write_hostile_zip(h$store)
  before <- hostile_snapshot(h$dir, except = h$store)
  st <- zarr_zipstore$new(h$store)
  expect_length(st$list(), 3)
  expect_identical(st$list()[-1], c("a/zarr.json", "zarr.json"))
  expect_match(st$list()[1], "^a/c[./]0$") # the chunk
  expect_error(st$get("../evil"), class = "zarr_error_key")
  expect_error(st$get("./extra.txt"), class = "zarr_error_key")
  expect_error(st$get("docs\\readme.txt"), class = "zarr_error_key")
  expect_identical(hostile_touch(h$store), character())
  gc()
  expect_identical(open_zarr(h$store)[["/a"]][], 1:4)
  expect_outside_unchanged(before, h$dir, except = h$store)
  expect_identical(list.files(h$dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
})

test_that("a writable store keeps the members that are not keys byte for byte, with or without writes", {
  skip_without_unzip()
  h <- hostile_dir(store = "store.zip")
  write_hostile_zip(h$store)
  before <- hostile_snapshot(h$dir, except = h$store)
  odd0 <- odd_records(zip_records(h$store))
  expect_length(odd0, length(odd_members))
  # a write: the archive is rewritten, the odd members are in it as they were
  z <- open_zarr(h$store, read_only = FALSE)
  z[["/a"]][2] <- 20L
  z$store$close()
  expect_identical(open_zarr(h$store)[["/a"]][], c(1L, 20L, 3L, 4L))
  odd1 <- odd_records(zip_records(h$store))
  expect_identical(odd1[order(names(odd1))], odd0[order(names(odd0))])
  expect_identical(odd1[[paste(as.character(charToRaw("docs\\readme.txt")), collapse = "")]]$method, 8)
  # unzip reads them (to stdout, never to disk), and tests the whole archive
  for (nm in c("docs?readme.txt", "./extra.txt", "../evil", "/abs", "a//b")) {
    got <- system2("unzip", c("-p", shQuote(h$store), shQuote(nm)), stdout = TRUE, stderr = FALSE)
    want <- rawToChar(odd_members[[sub("?", "\\", nm, fixed = TRUE)]])
    expect_identical(paste(got, collapse = "\n"), want)
  }
  # an erase, and a store collected without close(): kept again
  z <- open_zarr(h$store, read_only = FALSE)
  chunk <- chunk_key(z$store)
  z$store$erase(chunk)
  rm(z)
  gc()
  expect_identical(zarr_zipstore$new(h$store)$list(), c("a/zarr.json", "zarr.json"))
  odd2 <- odd_records(zip_records(h$store))
  expect_identical(odd2[order(names(odd2))], odd0[order(names(odd0))])
  expect_outside_unchanged(before, h$dir, except = h$store)
  expect_identical(list.files(h$dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
})

test_that("an archive in which nothing was written or erased is not rewritten", {
  h <- hostile_dir(store = "store.zip")
  write_hostile_zip(h$store)
  Sys.setFileTime(h$store, as.POSIXct("2001-02-03 04:05:06", tz = "UTC"))
  bytes <- file_bytes(h$store)
  mtime <- file.mtime(h$store)
  # opened, read and printed, then collected
  z <- open_zarr(h$store, read_only = FALSE)
  utils::capture.output(print(z), print(z[["/a"]]))
  expect_identical(z[["/a"]][], 1:4)
  rm(z)
  gc()
  expect_identical(file.mtime(h$store), mtime)
  expect_identical(file_bytes(h$store), bytes)
  # closed explicitly
  st <- zarr_zipstore$new(h$store, read_only = FALSE)
  expect_identical(st$get(chunk_key(st)), zarr_zipstore$new(h$store)$get(chunk_key(st)))
  st$close()
  expect_true(st$read_only)
  expect_identical(st$list(), zarr_zipstore$new(h$store)$list())
  expect_identical(file.mtime(h$store), mtime)
  expect_identical(file_bytes(h$store), bytes)
  expect_identical(list.files(h$dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
  # a value written again, even with the same bytes, is a write
  st <- zarr_zipstore$new(h$store, read_only = FALSE)
  st$set("zarr.json", st$get("zarr.json"))
  st$close()
  expect_false(identical(file.mtime(h$store), mtime))
})

# The end record of a zip file (no comment) with its member counts replaced.
claim_members <- function(path, n, zip64 = FALSE) {
  b <- file_bytes(path)
  if (zip64) {
    sig <- as.raw(c(0x50, 0x4b, 0x06, 0x06))
    at <- which(vapply(seq_len(length(b) - 3L), function(i) identical(b[i:(i + 3L)], sig), TRUE))
    b[at + 24:31] <- le(n, 8)
    b[at + 32:39] <- le(n, 8)
  } else {
    e <- length(b) - 21L
    b[e + 8:9] <- le(n, 2)
    b[e + 10:11] <- le(n, 2)
  }
  writeBin(b, path)
  invisible(path)
}

test_that("end records claiming more members than the central directory can hold fail, naming the archive", {
  for (zip64 in c(FALSE, TRUE)) {
    h <- hostile_dir(store = "claims.zip")
    write_hostile_zip(h$store, zip64 = zip64)
    claim_members(h$store, if (zip64) 2^40 else 65000, zip64 = zip64)
    before <- hostile_snapshot(h$dir, except = h$store)
    bytes <- file_bytes(h$store)
    e <- expect_error(zarr_zipstore$new(h$store), class = "zarr_error_store")
    expect_match(conditionMessage(e), "claims.zip' claims", fixed = TRUE)
    expect_match(conditionMessage(e), "more than its central directory", fixed = TRUE)
    expect_error(zarr_zipstore$new(h$store, read_only = FALSE), class = "zarr_error_store")
    expect_true("zarr_error_store" %in% hostile_touch(h$store))
    gc()
    expect_identical(file_bytes(h$store), bytes)
    expect_outside_unchanged(before, h$dir, except = h$store)
    expect_identical(list.files(h$dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
  }
})

test_that("opening a zip file that claims 2^40 members takes no memory for them", {
  skip_without_proc_status()
  h <- hostile_dir(store = "claims.zip")
  write_hostile_zip(h$store, zip64 = TRUE)
  claim_members(h$store, 2^40, zip64 = TRUE)
  for (ro in c("TRUE", "FALSE")) {
    p <- hostile_peak(sprintf("zarr_zipstore$new('%s', read_only = %s)", h$store, ro))
    expect_identical(p$class, "zarr_error_store")
    expect_lt(p$mb, 256)
  }
})

test_that("a central directory whose index exceeds zarr.max_decoded_bytes fails with a classed error", {
  h <- hostile_dir(store = "many.zip")
  # 5000 empty members with 100-byte names: a 730 kB central directory
  names <- sprintf("m/%05d_%s", seq_len(5000), strrep("n", 92))
  mem <- c(list("zarr.json" = charToRaw('{"zarr_format": 3, "node_type": "group"}')),
           stats::setNames(rep(list(raw()), length(names)), names))
  write_zip(h$store, mem)
  before <- hostile_snapshot(h$dir, except = h$store)
  expect_length(zarr_zipstore$new(h$store)$list(), 5001)
  withr::local_options(list(zarr.max_decoded_bytes = 2^20))
  e <- expect_error(zarr_zipstore$new(h$store), class = "zarr_error_memory")
  expect_match(conditionMessage(e), "many.zip", fixed = TRUE)
  expect_match(conditionMessage(e), "zarr.max_decoded_bytes", fixed = TRUE)
  expect_error(open_zarr(h$store, read_only = FALSE), class = "zarr_error_memory")
  expect_true("zarr_error_memory" %in% hostile_touch(h$store))
  gc()
  expect_outside_unchanged(before, h$dir, except = h$store)
  expect_identical(list.files(h$dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
})
