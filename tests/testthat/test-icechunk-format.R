# Icechunk objects parsed in C (src/flatbuf.c, src/icechunk.c) and the store
# built on them, on two small repositories written by the official
# implementation (@earthmover/icechunk 2.2.2 with zarrita 0.7.5; see
# tools/icechunk of the test oracle): tests/testthat/icechunk/v1 and v2 hold
# the objects of the main branch's head (and the snapshots of its history),
# with the chunk objects of the large arrays left out. The values below are
# what the official implementation read back from them.

ice_dir <- function(v) test_path("icechunk", v)
ice_raw <- function(v, key) {
  p <- file.path(ice_dir(v), key)
  readBin(p, "raw", file.size(p))
}
ice_first <- function(v, dir) sort(list.files(file.path(ice_dir(v), dir)))[1]

ice_want <- list(
  v1 = list(head = "DJDTKHR0WFKK7QA1KRNG",
            history = c("DJDTKHR0WFKK7QA1KRNG", "H9QZEFDBEVSNBZKA1QQ0", "TF3XENM2FKV0MMN7Z0KG", "1CECHNKREP0F1RSTCMT0"),
            fill = c(-80, 86, -37, 42, 42, 42, -12, -4, -15, 42, 42, 42, 58, 69, 36, rep(42, 21)),
            int32 = c(1704852748, 797774388, -1438156479, 1262442864, 1163073519, -785788660, 1023489462, 83372752,
                      1440124520, -44, 800, 551, -1708223335, -625131135, 306779088, 900596641, -781, 780, -809,
                      1194654844, 363380539, 337246679, 1708602794, 1631376649, -1745924622, -1476381532,
                      -310338148, -2065786510, 1712097339, -1973787683, -1298498188, 615737339, -146279092,
                      1889545168, -343000733)),
  v2 = list(head = "ZDP6C2RY2P7P1WJDESR0",
            history = c("ZDP6C2RY2P7P1WJDESR0", "83RCX599AHSWB0EG77B0", "DTGFX98P0WXMP2XDCMK0", "1CECHNKREP0F1RSTCMT0"),
            fill = c(3, -43, 63, 42, 42, 42, 28, 12, -2, 42, 42, 42, 95, -73, 95, rep(42, 21)),
            int32 = c(-329417892, 1725166105, -932601942, -1185646870, -597223514, 614614554, 1901148334, 2117999231,
                      -179958599, -474, 216, -506, -1438676581, -1110690977, -1743135482, -278270263, -453, -902,
                      -553, 1273006138, 244357315, 821287097, -1547730385, 1440651273, 897744965, -976101216,
                      -1033833660, 1788341293, -1032032721, 1991969933, 1791375293, -326396885, 262984735,
                      1304144329, -1689916653))
)

test_that("small repositories of spec 1 and 2 read as the official implementation read them", {
  for (v in c("v1", "v2")) {
    w <- ice_want[[v]]
    z <- open_zarr(ice_dir(v))
    expect_s3_class(z$store, "zarr_icechunkstore")
    expect_identical(z$store$spec_version, if (v == "v1") 1L else 2L)
    expect_identical(z$store$snapshot_id, w$head)
    expect_identical(z[["/fill"]]$read(fill_as_na = FALSE), matrix(as.integer(w$fill), 6, 6, byrow = TRUE))
    expect_identical(z[["/grp/int32"]][], matrix(as.integer(w$int32), 5, 7, byrow = TRUE))
    # a partial read across chunks
    expect_identical(z[["/grp/int32"]][2:4, 3:5], matrix(as.integer(w$int32), 5, 7, byrow = TRUE)[2:4, 3:5])
    expect_identical(z[["/grp"]]$attributes$unicode, "Zürich ✓")
    expect_identical(z$root$attributes$spec, if (v == "v1") 1L else 2L)
    h <- z$store$history()
    expect_identical(h$snapshot_id, w$history)
    expect_identical(h$message[4], "Repository initialized")
    expect_identical(attr(h$time, "tzone"), "UTC")
    expect_identical(icechunk_history(ice_dir(v))$snapshot_id, w$history)
    # spec 2 keeps every ref in the repo object; spec 1 has a file per ref
    # (only main's was copied)
    expect_identical(z$store$branches(), if (v == "v1") "main" else c("dev", "main"))
    expect_identical(z$store$tags(), if (v == "v1") character() else "v1")
    # the same snapshot by id, in lower case with Crockford's look-alikes
    z2 <- open_zarr(ice_dir(v), snapshot = tolower(chartr("10", "lo", w$head)))
    expect_identical(z2$store$snapshot_id, w$head)
    # a chunk object left out of the copy: an Icechunk error naming it, at read time
    e <- expect_error(z[["/sharded"]][1, 1], class = "zarr_error_icechunk")
    expect_match(conditionMessage(e), "chunks/[0-9A-Z]{20}")
  }
})

test_that("Icechunk stores refuse writes and unknown refs", {
  st <- zarr_icechunkstore$new(ice_dir("v2"))
  expect_true(st$read_only)
  expect_error(st$set("a/zarr.json", charToRaw("{}")), class = "zarr_error_read_only")
  expect_error(st$erase("fill/zarr.json"), class = "zarr_error_read_only")
  expect_error(zarr_icechunkstore$new(ice_dir("v2"), branch = "nope"), class = "zarr_error_not_found")
  # a ref to a snapshot whose object is gone (not copied): an Icechunk error naming it
  e <- expect_error(zarr_icechunkstore$new(ice_dir("v2"), branch = "dev"), class = "zarr_error_icechunk")
  expect_match(e$key, "^snapshots/")
  expect_error(zarr_icechunkstore$new(ice_dir("v1"), tag = "v9"), class = "zarr_error_not_found")
  expect_error(zarr_icechunkstore$new(ice_dir("v1"), branch = "a/b"), class = "zarr_error_not_found")
  expect_error(zarr_icechunkstore$new(ice_dir("v2"), snapshot = "not-an-id"), class = "zarr_error_not_found")
  expect_error(zarr_icechunkstore$new(ice_dir("v2"), branch = "main", tag = "v1"), class = "zarr_error_argument")
  expect_error(zarr_icechunkstore$new(test_path("icechunk")), class = "zarr_error_not_found")
})

test_that("object ids are Crockford base 32 (the spec's example: the initial snapshot)", {
  for (v in c("v1", "v2")) {
    s <- .Call(ffi_icechunk_snapshot, ice_raw(v, "snapshots/1CECHNKREP0F1RSTCMT0"), "s", max_decoded_bytes())
    expect_identical(s$id, "1CECHNKREP0F1RSTCMT0")
    expect_identical(s$nodes$path, character()) # the empty repository
    expect_identical(s$spec_version, if (v == "v1") 1L else 2L)
    expect_match(s$implementation, "^ic-")
  }
  r <- .Call(ffi_icechunk_repo, ice_raw("v2", "repo"), "repo", max_decoded_bytes())
  expect_true(all(nchar(r$snapshots$id) == 20L))
  expect_identical(r$branches$name, c("dev", "main"))
  expect_identical(r$snapshots$id[r$branches$snapshot[2]], ice_want$v2$head)
})

# Corrupt copies of real objects: every one is a zarr_error_icechunk naming
# the object, never a crash or an R error of another class.
test_that("malformed objects are zarr_error_icechunk naming the key", {
  snap <- ice_raw("v2", paste0("snapshots/", ice_want$v2$head))
  man <- ice_raw("v2", paste0("manifests/", ice_first("v2", "manifests")))
  bad <- function(x, parser = ffi_icechunk_snapshot, pattern = NULL) {
    e <- expect_error(.Call(parser, x, "snapshots/XYZ", max_decoded_bytes()), class = "zarr_error_icechunk")
    expect_identical(e$key, "snapshots/XYZ")
    if (!is.null(pattern)) expect_match(conditionMessage(e), pattern)
  }
  bad(raw(), pattern = "too short")
  bad(snap[1:38], pattern = "too short")
  m <- snap
  m[4] <- as.raw(0)
  bad(m, pattern = "magic")
  m <- snap
  m[37] <- as.raw(3)
  bad(m, pattern = "spec version 3")
  m <- snap
  m[39] <- as.raw(7)
  bad(m, pattern = "compression 7")
  bad(man, pattern = "expected a snapshot") # a manifest is not a snapshot
  bad(snap, ffi_icechunk_manifest, "expected a manifest")
  bad(snap, ffi_icechunk_repo, "expected a repo info")
  bad(snap[1:(length(snap) %/% 2)], pattern = "zstd")
  bad(c(snap[1:39], as.raw(sample(0:255, 200, TRUE))), pattern = "zstd")
  # uncompressed payloads (compression byte 0) exercise the flatbuffer reader
  plain <- function(payload, type = 1L) {
    h <- snap[1:39]
    h[38] <- as.raw(type)
    h[39] <- as.raw(0)
    c(h, payload)
  }
  le32 <- function(x) writeBin(as.integer(x), raw(), size = 4L, endian = "little")
  bad(plain(raw(4)), pattern = "too few")
  bad(plain(c(le32(0x7ffffff0), raw(8))), pattern = "out of bounds")
  # a root table whose vtable lies before the buffer
  bad(plain(c(le32(4), le32(1000), raw(8))), pattern = "out of bounds")
  # a valid table without the required fields
  vt <- as.raw(c(4, 0, 4, 0))     # a vtable of 4 bytes for a table of 4 bytes: no fields
  buf <- c(le32(8), vt, le32(4))   # root table at 8, its vtable 4 bytes before it
  bad(plain(buf), pattern = "required field 'Snapshot.id'")
  bad(plain(buf, 2L), ffi_icechunk_manifest, "required field 'Manifest.arrays'")
  bad(plain(buf, 6L), ffi_icechunk_repo, "required field 'Repo.snapshots'")
  # truncations of a real snapshot and manifest: an error, never a crash
  for (cut in unique(round(seq(40, length(snap) - 1, length.out = 25))))
    expect_error(.Call(ffi_icechunk_snapshot, snap[1:cut], "s", max_decoded_bytes()), class = "zarr_error_icechunk")
  for (cut in unique(round(seq(40, length(man) - 1, length.out = 25))))
    expect_error(.Call(ffi_icechunk_manifest, man[1:cut], "m", max_decoded_bytes()), class = "zarr_error_icechunk")
})

test_that("random flatbuffer payloads never crash the parsers", {
  snap <- ice_raw("v2", paste0("snapshots/", ice_want$v2$head))
  set.seed(20261126)
  for (type in c(1L, 2L, 6L)) {
    parser <- switch(as.character(type), "1" = ffi_icechunk_snapshot, "2" = ffi_icechunk_manifest, "6" = ffi_icechunk_repo)
    for (i in 1:200) {
      h <- snap[1:39]
      h[38] <- as.raw(type)
      h[39] <- as.raw(0)
      n <- sample(8:300, 1)
      payload <- as.raw(sample(0:255, n, TRUE))
      payload[1:4] <- writeBin(sample(0:(n - 1), 1), raw(), size = 4L, endian = "little")
      r <- tryCatch(.Call(parser, c(h, payload), "x", max_decoded_bytes()), zarr_error_icechunk = function(e) "refused")
      expect_true(identical(r, "refused") || is.list(r))
    }
  }
})

test_that("open_zarr() finds a repository and its refs; the root needs no zarr.json", {
  z <- open_zarr(paste0("file://", normalizePath(ice_dir("v1"))), branch = "main")
  expect_identical(z$store$snapshot_id, ice_want$v1$head)
  expect_setequal(z$arrays, c("/fill", "/float64", "/grp/int32", "/sharded", "/split", "/uint16"))
  expect_true(nzchar(paste(capture.output(print(z$store)), collapse = "\n")))
  # another process (map_blocks daemons, DelayedArray seeds) opens the same snapshot
  again <- reopen_store(store_reopen_spec(open_zarr(ice_dir("v2"))$store))
  expect_s3_class(again, "zarr_icechunkstore")
  expect_identical(again$snapshot_id, ice_want$v2$head)
  # a missing manifest: the repository opens, the arrays that need it fail when read
  tmp <- withr::local_tempdir()
  file.copy(ice_dir("v2"), tmp, recursive = TRUE)
  path <- file.path(tmp, "v2")
  unlink(file.path(path, "manifests"), recursive = TRUE)
  z <- open_zarr(path)
  expect_identical(z[["/grp"]]$attributes$unicode, "Zürich ✓")
  e <- expect_error(z[["/grp/int32"]][], class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "manifests/")
  # a truncated snapshot: opening fails, naming it
  p <- file.path(path, "snapshots", ice_want$v2$head)
  writeBin(readBin(p, "raw", 100), p)
  e <- expect_error(open_zarr(path), class = "zarr_error_icechunk")
  expect_identical(e$key, paste0("snapshots/", ice_want$v2$head))
  # a truncated repo object
  writeBin(readBin(file.path(path, "repo"), "raw", 60), file.path(path, "repo"))
  expect_error(icechunk_history(path), class = "zarr_error_icechunk")
})

test_that("a repository on a web server reads the same (spec 1 refs by name, no listing)", {
  srv <- http_server(test_path("icechunk"))
  for (v in c("v1", "v2")) {
    w <- ice_want[[v]]
    z <- open_zarr(paste0(srv$url, "/", v))
    expect_s3_class(z$store, "zarr_icechunkstore")
    expect_identical(z$store$snapshot_id, w$head)
    expect_identical(z[["/grp/int32"]][], matrix(as.integer(w$int32), 5, 7, byrow = TRUE))
    expect_identical(z$store$history()$snapshot_id, w$history)
    expect_error(z[["/sharded"]][1, 1], class = "zarr_error_icechunk")
    expect_identical(open_zarr(paste0(srv$url, "/", v), branch = "main")$store$snapshot_id, w$head)
  }
  expect_identical(zarr_icechunkstore$new(paste0(srv$url, "/v2"))$branches(), c("dev", "main"))
  expect_error(open_zarr(paste0(srv$url, "/v2"), tag = "nope"), class = "zarr_error_not_found")
})
