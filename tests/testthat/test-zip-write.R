# Writing zip stores (zarr_zipstore with read_only = FALSE, create_zarr() and
# as_zarr() with a ".zip" location; src/zip_write.c): round trips, the
# archives checked by `unzip -t` and read by zarr-python 2's ZipStore, ZIP64,
# and writers that fail or are killed.

skip_without_unzip <- function() skip_if_not(nzchar(Sys.which("unzip")), "no unzip program")

unzip_test <- function(zf) {
  out <- suppressWarnings(system2("unzip", c("-tq", shQuote(zf)), stdout = TRUE, stderr = TRUE))
  expect_null(attr(out, "status"))
  expect_match(paste(out, collapse = "\n"), "No errors detected")
}

py_zip_dump <- '
store = zarr.ZipStore(sys.argv[1], mode="r")
out = {"arrays": {}, "groups": {}}
root = zarr.open_group(store, mode="r")
def walk(g, prefix):
    out["groups"][prefix or "/"] = dict(g.attrs)
    for name, a in g.arrays():
        out["arrays"][prefix + "/" + name] = describe(a)
    for name, sub in g.groups():
        walk(sub, prefix + "/" + name)
walk(root, "")
import zipfile
with zipfile.ZipFile(sys.argv[1]) as zf:
    out["bad"] = zf.testzip()
    out["n"] = len(zf.infolist())
emit(out)
'
py_zip_dump <- paste0("import zarr\n", py_zip_dump)

# a v2 or v3 hierarchy with a group, attributes, a sharded (v3) array and strings
write_hierarchy <- function(z, v3 = TRUE) {
  z$root$set_attribute("title", "zip \u00e9")
  g <- z$add_group("/", "g")
  g$set_attribute("n", 3L)
  d <- define_array("float64", c(30, 20))
  d$chunk_shape <- c(7, 6)
  m <- z$add_array("/", "m", d)
  m[] <- matrix(seq_len(600) / 7, 30, 20)
  a <- g$add_array("a", define_array("int16", c(4, 5, 6)))
  a[] <- array(1:120, c(4, 5, 6))
  s <- z$add_array("/", "s", define_array("string", 5))
  s[] <- c("a", "bb", "\u00e9t\u00e9", "", "z")
  if (v3) {
    ds <- define_array("int32", c(40, 40))
    ds$chunk_shape <- c(20, 20)
    ds$add_codec("sharding_indexed", list(chunk_shape = c(5, 5)))
    sh <- z$add_array("/", "sharded", ds)
    sh[] <- matrix(1:1600, 40, 40)
  }
  invisible(z)
}

expect_hierarchy <- function(z, v3 = TRUE) {
  expect_identical(z$root$attributes$title, "zip \u00e9")
  expect_identical(z[["/m"]][], matrix(seq_len(600) / 7, 30, 20))
  expect_identical(z[["/g/a"]][], array(1:120, c(4, 5, 6)))
  expect_identical(z[["/s"]][], c("a", "bb", "\u00e9t\u00e9", "", "z"))
  if (v3) expect_identical(z[["/sharded"]][], matrix(1:1600, 40, 40))
}

test_that("v3 and v2 hierarchies written to zip files read back equal, stored and deflated", {
  skip_without_unzip()
  dir <- withr::local_tempdir()
  for (fmt in 2:3) for (comp in c("stored", "deflate")) {
    withr::local_options(zarr.format = fmt)
    zf <- file.path(dir, sprintf("h%d-%s.zip", fmt, comp))
    st <- zarr_zipstore$new(zf, read_only = FALSE, compression = comp)
    expect_false(st$read_only)
    expect_output(print(st), "writable")
    st$create_group("/", "")
    z <- zarr$new(st)
    write_hierarchy(z, fmt == 3)
    expect_hierarchy(z, fmt == 3) # reads while writing come from the staging folder
    expect_false(file.exists(zf))
    st$close()
    expect_true(st$read_only)
    expect_hierarchy(z, fmt == 3) # now from the zip file
    expect_identical(list.files(dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
    unzip_test(zf)
    expect_hierarchy(open_zarr(zf), fmt == 3)
    expect_identical(open_zarr(zf)$version, fmt)
    # deflated members are smaller than stored ones
    if (comp == "deflate") expect_lt(file.size(zf), file.size(file.path(dir, sprintf("h%d-stored.zip", fmt))))
  }
})

test_that("zarr-python 2 reads the v2 zip files this package writes, stored and deflated", {
  skip_without_python_zarr()
  dir <- withr::local_tempdir()
  withr::local_options(zarr.format = 2L)
  for (comp in c("stored", "deflate")) {
    zf <- file.path(dir, paste0(comp, ".zip"))
    st <- zarr_zipstore$new(zf, read_only = FALSE, compression = comp)
    st$create_group("/", "")
    z <- write_hierarchy(zarr$new(st), FALSE)
    st$close()
    d <- run_python(py_zip_dump, zf)
    expect_null(d$bad)
    expect_identical(d$groups[["/"]]$title, "zip \u00e9")
    expect_identical(d$groups[["/g"]]$n, 3L)
    for (nm in c("/m", "/g/a", "/s")) expect_matches_dump(z[[nm]], d$arrays[[nm]], info = nm)
  }
})

test_that("as_zarr() and create_zarr() write zip files; an existing path is refused", {
  skip_without_unzip()
  dir <- withr::local_tempdir()
  zf <- file.path(dir, "x.zip")
  x <- array(as.numeric(1:240), c(6, 8, 5))
  z <- as_zarr(x, location = zf)
  expect_true(file.exists(zf)) # closed before as_zarr() returns
  expect_true(z$store$read_only)
  expect_identical(open_zarr(zf)$root[], x)
  unzip_test(zf)
  expect_error(as_zarr(x, location = zf), class = "zarr_error_exists")
  expect_error(create_zarr(zf), class = "zarr_error_exists")
  z2 <- as_zarr(x, name = "v", location = file.path(dir, "named.zip"))
  expect_identical(open_zarr(file.path(dir, "named.zip"))[["/v"]][], x)
  z3 <- create_zarr(file.path(dir, "c.zip"))
  y <- z3$add_array("/", "y", define_array("int32", 3))
  y[] <- 7:9
  z3$store$close()
  z3$store$close() # a second close does nothing
  expect_identical(open_zarr(file.path(dir, "c.zip"))[["/y"]][], 7:9)
  # an error half-way through as_zarr(): no zip file, no staging folder left
  expect_error(as_zarr(x, name = "bad/../name", location = file.path(dir, "err.zip")))
  expect_false(file.exists(file.path(dir, "err.zip")))
  expect_identical(list.files(dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
})

test_that("an existing zip opened for writing keeps its members; the last value of a key wins", {
  skip_without_unzip()
  dir <- withr::local_tempdir()
  zf <- file.path(dir, "e.zip")
  z <- create_zarr(zf)
  write_hierarchy(z)
  z$store$close()
  z <- open_zarr(zf, read_only = FALSE)
  expect_false(z$store$read_only)
  expect_hierarchy(z) # the members were copied into the staging folder
  z[["/m"]][1, 1] <- -1
  z[["/m"]][1, 1] <- -2 # written twice
  z$store$set("extra/key", as.raw(1:3))
  z$store$set("extra/key", as.raw(4:6))
  z$delete_array("/s")
  z$add_group("/", "new")
  z$store$close()
  unzip_test(zf)
  z2 <- open_zarr(zf)
  want <- matrix(seq_len(600) / 7, 30, 20)
  want[1, 1] <- -2
  expect_identical(z2[["/m"]][], want)
  expect_identical(z2$store$get("extra/key"), as.raw(4:6))
  expect_null(z2$store$get("s/zarr.json"))
  expect_identical(z2[["/sharded"]][], matrix(1:1600, 40, 40))
  expect_s3_class(z2[["/new"]], "zarr_group")
  # names are unique in the archive
  names <- suppressWarnings(system2("unzip", c("-Z1", shQuote(zf)), stdout = TRUE))
  expect_false(anyDuplicated(names) > 0)
  # opening for writing what is not there, or not a Zarr store, changes nothing
  expect_error(open_zarr(file.path(dir, "none.zip"), read_only = FALSE), class = "zarr_error_not_found")
  other <- file.path(dir, "other.zip")
  st <- zarr_zipstore$new(other, read_only = FALSE)
  st$set("folder/readme.txt", charToRaw("not zarr"))
  st$close()
  other_bytes <- readBin(other, "raw", file.size(other))
  expect_error(open_zarr(other, read_only = FALSE), class = "zarr_error")
  gc()
  expect_identical(readBin(other, "raw", file.size(other)), other_bytes)
  expect_false(file.exists(file.path(dir, "none.zip")))
  expect_identical(list.files(dir, all.files = TRUE, no.. = TRUE, pattern = "staging|partial"), character())
  # discard(): the zip file stays as it was
  before <- readBin(zf, "raw", file.size(zf))
  z3 <- open_zarr(zf, read_only = FALSE)
  z3[["/m"]][] <- 0
  z3$store$discard()
  expect_identical(readBin(zf, "raw", file.size(zf)), before)
  expect_error(z3[["/m"]][1, 1], class = "zarr_error_store")
})

test_that("a zip store zipped from the parent folder keeps its layout when rewritten", {
  skip_if_not(nzchar(Sys.which("zip")), "no zip program")
  dir <- withr::local_tempdir()
  src <- file.path(dir, "data.zarr")
  z <- create_zarr(src)
  a <- z$add_array("/", "a", define_array("int32", 4))
  a[] <- 1:4
  zf <- file.path(dir, "p.zip")
  withr::with_dir(dir, utils::zip(zf, "data.zarr", flags = "-rq"))
  z <- open_zarr(zf, read_only = FALSE)
  expect_identical(z$store$root_in_zip, "data.zarr/")
  z[["/a"]][2] <- 20L
  z$store$close()
  z2 <- open_zarr(zf)
  expect_identical(z2$store$root_in_zip, "data.zarr/")
  expect_identical(z2[["/a"]][], c(1L, 20L, 3L, 4L))
})

test_that("more than 65535 members make a ZIP64 archive that unzip, zarr-python and this package read", {
  skip_on_cran()
  skip_without_unzip()
  dir <- withr::local_tempdir()
  zf <- file.path(dir, "many.zip")
  withr::local_options(zarr.format = 2L)
  n <- 70000L
  d <- define_array("uint8", n)
  d$chunk_shape <- 1
  d$remove_codec("zstd")
  z <- create_zarr(zf)
  a <- z$add_array("/", "tiny", d)
  x <- as.integer(seq_len(n) %% 250L + 1L)
  a[] <- x
  z$store$close()
  raw <- readBin(zf, "raw", file.size(zf))
  # the zip64 end of central directory record and its locator are there
  tail <- utils::tail(raw, 200)
  expect_true(length(grepRaw(as.raw(c(0x50, 0x4b, 0x06, 0x06)), tail)) > 0)
  expect_true(length(grepRaw(as.raw(c(0x50, 0x4b, 0x06, 0x07)), tail)) > 0)
  unzip_test(zf)
  expect_identical(open_zarr(zf)[["/tiny"]][], x)
  skip_without_python_zarr()
  d <- run_python('
import zarr, zipfile
with zipfile.ZipFile(sys.argv[1]) as zf:
    n = len(zf.infolist())
a = zarr.open_group(zarr.ZipStore(sys.argv[1], mode="r"), mode="r")["tiny"]
emit({"n": n, "sum": int(a[...].astype("i8").sum()), "last": int(a[-1])})
', zf)
  expect_identical(d$n, n + 2L)
  expect_identical(d$sum, sum(x))
  expect_identical(d$last, x[n])
})

test_that("a zip member past 4 GiB is written with ZIP64 sizes and offsets (ZARR_TEST_HUGE=true)", {
  skip_if_not(identical(Sys.getenv("ZARR_TEST_HUGE"), "true"), "set ZARR_TEST_HUGE=true for the 4 GiB test")
  skip_without_unzip()
  dir <- withr::local_tempdir()
  zf <- file.path(dir, "huge.zip")
  st <- zarr_zipstore$new(zf, read_only = FALSE)
  st$create_group("/", "")
  st$set("small", as.raw(1:5))
  # a sparse 4 GiB + 1 MiB value made in the staging folder (cheap in memory and
  # disk); the zip writer streams it, and "z_after" lands past 4 GiB
  big <- 2^32 + 2^20
  con <- file(file.path(st$.__enclos_env__$private$.staging, "big"), "wb")
  seek(con, big - 3)
  writeBin(as.raw(7:9), con)
  close(con)
  st$set("z_after", as.raw(42))
  st$close()
  expect_gt(file.size(zf), 2^32)
  unzip_test(zf)
  expect_equal(st$getsize("big"), big)
  expect_identical(st$get("big", byte_range = c(big - 4, big)), as.raw(c(0, 7:9)))
  expect_identical(st$get("z_after"), as.raw(42))
  expect_identical(st$get("small"), as.raw(1:5))
})

test_that("a writer killed before or while it writes the zip leaves the previous zip file intact", {
  skip_on_cran()
  skip_on_os("windows")
  skip_if_not_installed("processx")
  dir <- withr::local_tempdir()
  zf <- file.path(dir, "k.zip")
  z <- create_zarr(zf)
  a <- z$add_array("/", "a", define_array("int32", 10))
  a[] <- 1:10
  z$store$close()
  before <- readBin(zf, "raw", file.size(zf))
  rscript <- file.path(R.home("bin"), "Rscript")
  script <- tempfile(fileext = ".R")
  # the writer adds ~100 MB of incompressible data, then closes (writes the zip)
  writeLines(c(
    "library(zarr)",
    sprintf("z <- open_zarr('%s', read_only = FALSE)", zf),
    "d <- define_array('float64', 12e6); d$chunk_shape <- 1e6; d$remove_codec('zstd')",
    "z[['/a']][] <- 11:20",
    "b <- z$add_array('/', 'big', d)",
    "b[] <- stats::runif(12e6)",
    "cat('closing\\n')",
    "z$store$close()",
    "cat('closed\\n')"), script)
  env <- c("current", R_LIBS = paste(.libPaths(), collapse = ":"))
  killed_writing <- 0L
  # a loaded machine shifts when the zip is written: more delays, until two kills landed while writing
  for (delay in c(0, 0.02, 0.1, 0.3, 0.8, 0.05, 0.2, 0.5, 1.2)) {
    if (killed_writing >= 2L) break
    p <- processx::process$new(rscript, script, stdout = "|", stderr = NULL, env = env)
    deadline <- Sys.time() + 60
    out <- ""
    while (p$is_alive() && !grepl("closing", out) && Sys.time() < deadline) {
      p$poll_io(10)
      out <- paste0(out, p$read_output())
    }
    Sys.sleep(delay)
    partial <- file.path(dir, sprintf(".k.zip.%d.partial", p$get_pid()))
    if (p$is_alive()) {
      writing <- file.exists(partial)
      p$kill()
      killed_writing <- killed_writing + writing
    }
    p$wait()
    now <- readBin(zf, "raw", file.size(zf))
    if (!identical(now, before)) {
      # the writer renamed its new zip into place before it died: whole
      zz <- open_zarr(zf)
      expect_identical(zz[["/a"]][], 11:20)
      expect_equal(length(zz[["/big"]][]), 12e6)
      unzip_test(zf)
      before <- now
    } # else: the previous zip file, byte for byte
    expect_true(open_zarr(zf)[["/a"]][1] %in% c(1L, 11L))
  }
  expect_gte(killed_writing, 1L)
  # the staging folders and partial files of killed writers may stay; the zip reads
  unlink(list.files(dir, pattern = "staging|partial", all.files = TRUE, full.names = TRUE), recursive = TRUE)
})
