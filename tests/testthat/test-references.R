# Kerchunk references to real netCDF-4 and HDF5 files (see helper-references.R):
# values equal what h5py reads, through JSON v0, v1 and Parquet references,
# local and HTTP targets, and agree with fsspec + zarr-python.

nc_vars <- c("lat", "temp", "pres", "count", "idx")
h5_vars <- c("a", "g/b", "g/d")

# Same numbers and shape (our arrays carry dimension names; h5py's do not).
expect_values <- function(actual, expected, label = NULL) {
  expect_identical(as.numeric(actual), as.numeric(expected), label = label)
  expect_identical(unname(dim(actual)), dim(expected), label = label)
}

expect_h5_values <- function(z, dir, names) {
  for (nm in names) expect_values(z[[paste0("/", nm)]][], ref_expected(dir, nm), label = nm)
}

test_that("JSON v0 references to a netCDF-4 file read the values h5py reads", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  z <- open_zarr(file.path(dir, "refs_v0.json"))
  expect_s3_class(z$store, "zarr_refstore")
  expect_identical(z$store$version, 2L)
  expect_setequal(names(z$root$children), nc_vars)
  expect_h5_values(z, dir, nc_vars)
  temp <- z[["/temp"]]
  expect_identical(temp$data_type$data_type, "float32")
  expect_identical(temp$data_type$fill_value, -9999)
  expect_identical(unlist(temp$dimension_names), c("time", "lat", "lon"))
  expect_identical(temp$attributes$units, "degC")
  expect_identical(z$root$attributes$title, "reference store test")
  expect_identical(z[["/count"]]$data_type$data_type, "int16")
  expect_identical(z[["/idx"]]$data_type$data_type, "int32")
  # the chunk given inline (base64) reads like the others
  expect_values(z[["/count"]][5:7, 5:8], ref_expected(dir, "count")[5:7, 5:8])
  # a selection across chunks
  expect_identical(as.numeric(temp[2:9, 3, c(1, 9)]), as.numeric(ref_expected(dir, "temp")[2:9, 3, c(1, 9)]))
  # the fill value as NA by default
  withr::local_options(zarr.fill_as_na = TRUE)
  expect_true(is.na(temp[3, 4, 5]))
  expect_false(anyNA(temp[3, 4, 1:4]))
})

test_that("JSON v1 references with templates and gen read the same values", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  z <- open_zarr(paste0("reference+json://", file.path(dir, "refs_v1.json")))
  expect_h5_values(z, dir, nc_vars)
  # pres2: every chunk from a gen entry (lists, ranges, arithmetic in offsets)
  expect_identical(z[["/pres2"]][], z[["/pres"]][])
  keys <- z$store$list_prefix("pres2")
  expect_true(all(c("pres2/0.0", "pres2/3.1") %in% keys))
})

test_that("gen expands ranges and lists as a Cartesian product with arithmetic", {
  refs <- list(version = 1L, templates = list(f = "x.bin"),
               gen = list(list(key = "v/{{i}}.{{j}}", url = "{{f}}", offset = "{{i * 100 + j * 10}}",
                               length = "10", dimensions = list(i = list(start = 0, stop = 6, step = 2),
                                                                j = list(3L, 5L)))),
               refs = list(.zgroup = list(zarr_format = 2L)))
  p <- zarr:::ref_parse_doc(refs, "test")
  gen <- p$key != ".zgroup"
  expect_setequal(p$key[gen], c("v/0.3", "v/0.5", "v/2.3", "v/2.5", "v/4.3", "v/4.5"))
  o <- stats::setNames(p$offset[gen], p$key[gen])
  expect_identical(unname(o[c("v/0.3", "v/2.5", "v/4.5")]), c(30, 250, 450))
  expect_true(all(p$url[gen] == "x.bin"))
  expect_true(all(p$length[gen] == 10))
  # //, % and parentheses; a name that is neither a dimension nor a number is refused
  tab <- data.frame(i = c(7, 9))
  expect_identical(zarr:::ref_subst("{{ (i + 1) // 2 }}-{{i % 4}}", tab, "t"), c("4-3", "5-1"))
  expect_error(zarr:::ref_subst("{{ system('x') }}", tab, "t"), class = "zarr_error_unsupported")
  expect_error(zarr:::ref_subst("{{ k + 1 }}", tab, "t"), class = "zarr_error_unsupported")
})

test_that("HDF5 references: file:// targets, nested groups, big-endian, unallocated chunks", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  z <- open_zarr(file.path(dir, "refs_h5.json"))
  expect_h5_values(z, dir, h5_vars)
  expect_identical(z[["/g/b"]]$attributes$note, "big-endian")
  # chunks h5py never allocated have no reference: the fill value
  a <- z[["/a"]][]
  expect_true(all(a[13:20, ] == -1.5))
  expect_true(all(a[, 15:30] == -1.5))
  expect_false(any(a[1:12, 1:14] == -1.5))
  expect_false("a/3.3" %in% z$store$list_prefix("a"))
})

test_that("references given as a list, relative targets from `base`", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  refs <- ref_read_json(file.path(dir, "refs_v0.json"))
  s <- zarr_refstore$new(refs, base = dir)
  z <- zarr$new(s)
  expect_values(z[["/pres"]][], ref_expected(dir, "pres"))
  # byte ranges of a key are ranges of its reference
  nc <- readBin(file.path(dir, "data.nc"), "raw", file.size(file.path(dir, "data.nc")))
  r <- refs[["temp/1.1.1"]]
  whole <- nc[r[[2]] + seq_len(r[[3]])]
  expect_identical(s$get("temp/1.1.1"), whole)
  expect_identical(s$get("temp/1.1.1", byte_range = c(3, 10)), whole[4:10])
  expect_identical(s$get("temp/1.1.1", byte_range = 5), whole[-(1:5)])
  expect_identical(s$get("temp/1.1.1", byte_range = -7), utils::tail(whole, 7))
  expect_identical(s$get("temp/1.1.1", byte_range = c(0, 1e6)), whole)
  expect_identical(s$getsize("temp/1.1.1"), as.numeric(r[[3]]))
  expect_null(s$get("temp/9.9.9"))
  expect_identical(rawToChar(s$get(".zgroup")), refs[[".zgroup"]])
  expect_error(s$set("x", raw(1)), class = "zarr_error_read_only")
})

test_that("whole-file references, inline strings and JSON objects", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  refs <- ref_read_json(file.path(dir, "refs_v0.json"))
  nc <- readBin(file.path(dir, "data.nc"), "raw", file.size(file.path(dir, "data.nc")))
  tmp <- withr::local_tempdir()
  # each chunk of "pres" in a file of its own, referenced as [url]
  for (k in grep("^pres/[0-9]", names(refs), value = TRUE)) {
    r <- refs[[k]]
    f <- file.path(tmp, paste0(sub("/", "_", k), ".bin"))
    writeBin(nc[r[[2]] + seq_len(r[[3]])], f)
    refs[[k]] <- list(f)
  }
  refs[["pres/.zarray"]] <- jsonlite::parse_json(refs[["pres/.zarray"]]) # an object
  refs[["note"]] <- "plain text"
  s <- zarr_refstore$new(refs, base = dir)
  expect_values(zarr$new(s)[["/pres"]][], ref_expected(dir, "pres"))
  expect_identical(rawToChar(s$get("note")), "plain text")
  off <- ref_read_json(file.path(dir, "refs_v0.json"))[["pres/0.0"]][[2]]
  expect_identical(s$get("pres/0.0", byte_range = c(2, 6)), nc[off + 3:6])
  expect_true(is.na(s$getsize("pres/0.0")))
})

test_that("Parquet references (fsspec's layout) read the same values", {
  require_or_skip(requireNamespace("nanoparquet", quietly = TRUE), "the nanoparquet package")
  skip_if_not_installed("bit64")
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  refs <- ref_read_json(file.path(dir, "refs_v0.json"))
  pq <- file.path(withr::local_tempdir(), "refs.parq")
  # targets relative to the parquet directory: point them at the data file
  refs <- lapply(refs, function(v) if (is.list(v)) { v[[1]] <- file.path(dir, v[[1]]); v } else v)
  ref_write_parquet(refs, pq, record_size = 4L, drop = "temp/2.2.1")
  expect_true(file.exists(file.path(pq, "temp", "refs.4.parq"))) # 3 x 3 x 2 = 18 chunks, 4 per file
  z <- open_zarr(paste0("reference+parquet://", pq))
  expect_s3_class(z$store, "zarr_refstore")
  for (nm in setdiff(nc_vars, "temp")) expect_identical(as.numeric(z[[paste0("/", nm)]][]), as.numeric(ref_expected(dir, nm)))
  # the inline chunk came from the raw column; the dropped chunk is the fill value
  temp <- z[["/temp"]][]
  ex <- ref_expected(dir, "temp")
  expect_true(all(temp[9:10, 7, 6:9] == -9999))
  temp[9:10, 7, 6:9] <- ex[9:10, 7, 6:9]
  expect_values(temp, ex)
  # a directory opens as Parquet references without the prefix
  expect_values(open_zarr(pq)[["/count"]][], ref_expected(dir, "count"))
})

test_that("references whose targets are served over HTTP", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  srv <- http_server(dir)
  # relative targets of a reference file on the server resolve against its URL
  z <- open_zarr(srv$url_of("refs_v0.json"))
  expect_identical(z$store$targets, "data.nc")
  srv$reset()
  expect_values(z[["/temp"]][], ref_expected(dir, "temp"))
  log <- srv$stats()$log
  # all 18 chunks of temp lie close together in data.nc: merged into one ranged GET
  expect_identical(nrow(log), 1L)
  expect_match(log$range, "^bytes=[0-9]+-[0-9]+$")
  expect_identical(log$path, "/data.nc")
  # without merging, one request per chunk (the inline one needs none)
  withr::local_options(zarr.range_gap = 0, zarr.range_max = 1)
  srv$reset()
  expect_values(z[["/count"]][], ref_expected(dir, "count"))
  expect_identical(nrow(srv$stats()$log), 5L) # 2 x 3 chunks, one inline
  withr::local_options(zarr.range_gap = 1048576, zarr.range_max = 16777216)
  # v1 with the template pointing at the server, absolute URLs, via reference+json://
  v1 <- ref_read_json(file.path(dir, "refs_v1.json"))
  v1$templates$u <- srv$url_of("data.nc")
  f <- file.path(withr::local_tempdir(), "refs_http.json")
  ref_write_json(v1, f)
  z1 <- open_zarr(paste0("reference+json://", f))
  expect_h5_values(z1, dir, nc_vars)
  expect_values(z1[["/pres2"]][], ref_expected(dir, "pres"))
  # Parquet references on the server
  require_or_skip(requireNamespace("nanoparquet", quietly = TRUE), "the nanoparquet package")
  skip_if_not_installed("bit64")
  refs <- ref_read_json(file.path(dir, "refs_v0.json"))
  ref_write_parquet(refs, file.path(dir, "pq"), record_size = 5L)
  # relative targets resolve against the parquet directory's URL: data.nc is one level up
  zp <- open_zarr(paste0("reference+parquet://", srv$url_of("pq")))
  expect_error(zp[["/pres"]][], class = "zarr_error_store", regexp = "does not exist")
  refs <- lapply(refs, function(v) if (is.list(v)) { v[[1]] <- srv$url_of("data.nc"); v } else v)
  ref_write_parquet(refs, file.path(dir, "pq2"), record_size = 5L)
  zp <- open_zarr(paste0("reference+parquet://", srv$url_of("pq2")))
  expect_h5_values(zp, dir, nc_vars)
})

test_that("fsspec's ReferenceFileSystem with zarr-python agrees", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  for (f in c("refs_v0.json", "refs_v1.json", "refs_h5.json")) {
    names <- if (f == "refs_h5.json") h5_vars else c(nc_vars, if (f == "refs_v1.json") "pres2")
    theirs <- ref_fsspec(dir, f, names)
    z <- open_zarr(file.path(dir, f))
    for (nm in names) {
      ours <- z[[paste0("/", nm)]][]
      expect_identical(as.numeric(ours), as.numeric(theirs[[nm]]), label = paste(f, nm))
      expect_identical(as.numeric(ours), as.numeric(ref_expected(dir, if (nm == "pres2") "pres" else nm)))
    }
  }
})

test_that("broken references fail with classed errors naming the key and file", {
  dir <- ref_data()
  refs <- ref_read_json(file.path(dir, "refs_v0.json"))
  r1 <- refs
  r1[["pres/0.0"]][[1]] <- "no-such-file.nc"
  z <- zarr$new(zarr_refstore$new(r1, base = dir))
  expect_error(z[["/pres"]][], class = "zarr_error_store", regexp = "no-such-file.nc.*does not exist")
  expect_error(z[["/pres"]][], regexp = "pres/0.0")
  # bytes beyond the end of the file
  r2 <- refs
  r2[["pres/0.0"]][[2]] <- file.size(file.path(dir, "data.nc")) - 10
  z <- zarr$new(zarr_refstore$new(r2, base = dir))
  expect_error(z[["/pres"]][], class = "zarr_error_store", regexp = "has only")
  # an s3 target without a key (s3:// targets are read in test-s3.R)
  r3 <- refs
  r3[["pres/0.0"]][[1]] <- "s3://bucket"
  z <- zarr$new(zarr_refstore$new(r3, base = dir))
  expect_error(z[["/pres"]][], class = "zarr_error_store", regexp = "not an s3://bucket/key URL")
  # other readers of the same store are unaffected
  expect_identical(dim(z[["/count"]][]), c(7L, 9L))
  # malformed references
  r4 <- refs
  r4[["pres/0.0"]] <- list("data.nc", -1, 10)
  expect_error(zarr_refstore$new(r4, base = dir), class = "zarr_error_metadata")
  r5 <- refs
  r5[["../escape"]] <- "x"
  expect_error(zarr_refstore$new(r5, base = dir), class = "zarr_error_key")
  expect_error(zarr_refstore$new(list(version = 2L, refs = list())), class = "zarr_error_unsupported")
  bad <- file.path(withr::local_tempdir(), "bad.json")
  writeLines("{not json", bad)
  expect_error(open_zarr(bad), class = "zarr_error_metadata")
  expect_error(open_zarr("reference+json:///no/such/refs.json"), class = "zarr_error_not_found")
})

test_that("targets resolve to local, HTTP and public GCS sub-stores", {
  r <- zarr:::ref_resolve_target("sub/x.nc", "/data/refs")
  expect_identical(c(r$group, r$key), c("file", "data/refs/sub/x.nc"))
  r <- zarr:::ref_resolve_target("file:///data/a%20b.nc", "/elsewhere")
  expect_identical(r$key, "data/a b.nc")
  r <- zarr:::ref_resolve_target("x.nc", "https://Example.org/refs")
  expect_identical(c(r$group, r$key), c("https://example.org", "refs/x.nc"))
  r <- zarr:::ref_resolve_target("https://example.org/a%20b/x.nc?sig=1", "/data")
  expect_identical(c(r$group, r$key), c("https://example.org?sig=1", "a b/x.nc"))
  r <- zarr:::ref_resolve_target("gs://bucket/era5/x.nc", "/data")
  expect_identical(c(r$group, r$key), c("https://storage.googleapis.com", "bucket/era5/x.nc"))
  r <- zarr:::ref_resolve_target("s3://bucket/era5/x%20y.nc", "/data")
  expect_identical(c(r$group, r$key, r$error), c("s3://bucket", "era5/x y.nc", ""))
  r <- zarr:::ref_resolve_target("s3://bucket", "/data")
  expect_identical(r$group, "")
  expect_match(r$error, "not an s3://bucket/key URL")
  r <- zarr:::ref_resolve_target("memory://x", "/data")
  expect_match(r$error, "not supported")
})

test_that("a read through references answers each chunk once, merged or not", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  z <- open_zarr(file.path(dir, "refs_v0.json"))
  temp <- z[["/temp"]]
  before <- z$store$io_stats()
  expect_values(temp[], ref_expected(dir, "temp"))
  # the engine sees one answer per chunk either way
  expect_identical(unname(z$store$io_stats()[["requests"]] - before[["requests"]]), 18)
})

test_that("one array with chunks in a local file and on a web server", {
  dir <- ref_data()
  withr::local_options(zarr.fill_as_na = FALSE)
  srv <- http_server(dir)
  refs <- ref_read_json(file.path(dir, "refs_v0.json"))
  ks <- grep("^temp/[0-9]", names(refs), value = TRUE)
  for (j in seq_along(ks))
    refs[[ks[j]]][[1]] <- if (j %% 2) srv$url_of("data.nc") else file.path(dir, "data.nc")
  s <- zarr_refstore$new(refs)
  expect_length(s$targets, 3L) # data.nc (the other arrays), its absolute path, its URL
  srv$reset()
  expect_values(zarr$new(s)[["/temp"]][], ref_expected(dir, "temp"))
  expect_identical(nrow(srv$stats()$log), 1L) # the 9 chunks over HTTP in one merged request
  # a failure on one side is reported as it is, whichever side runs first
  refs[[ks[2]]][[1]] <- file.path(dir, "gone.nc")
  z <- zarr$new(zarr_refstore$new(refs))
  expect_error(z[["/temp"]][], class = "zarr_error_store", regexp = "gone.nc")
  refs[[ks[2]]][[1]] <- file.path(dir, "data.nc")
  refs[[ks[1]]][[1]] <- srv$url_of("gone.nc")
  z <- zarr$new(zarr_refstore$new(refs))
  expect_error(z[["/temp"]][], class = "zarr_error_store", regexp = "gone.nc.*does not exist")
})

test_that("references on a server may not read local files unless allowed", {
  secret <- file.path(withr::local_tempdir(), "secret.bin")
  writeBin(as.raw(1:8), secret)
  # one chunk points at a local file, by path and by file:// URL
  for (target in c(secret, paste0("file://", secret))) {
    refs <- list(version = 1L, refs = list(
      ".zgroup" = '{"zarr_format": 2}',
      "x/.zarray" = '{"zarr_format": 2, "shape": [8], "chunks": [8], "dtype": "|u1", "compressor": null, "fill_value": 0, "filters": null, "order": "C"}',
      "x/0" = list(target, 0L, 8L)))
    srv_dir <- withr::local_tempdir()
    ref_write_json(refs, file.path(srv_dir, "refs.json"))
    srv <- http_server(srv_dir)
    z <- open_zarr(srv$url_of("refs.json"))
    expect_error(z[["/x"]][], class = "zarr_error_store", regexp = "local file")
    withr::with_options(list(zarr.reference_local_targets = TRUE), {
      z <- open_zarr(srv$url_of("refs.json"))
      expect_identical(z[["/x"]][], 1:8)
    })
    # the same document read from a local file may name local files
    expect_identical(open_zarr(paste0("reference+json://", file.path(srv_dir, "refs.json")))[["/x"]][], 1:8)
  }
})
