# Virtual chunks whose reference records an ETag (instead of a modification
# time): the target's current ETag (of an HTTP server or an S3 bucket) must
# still be that one, else the read fails with zarr_error_icechunk_stale.
# The repository "etag" is written by the official implementation
# (tools/icechunk/make_repos.mjs, writeEtag).

test_that("virtual chunks recording an ETag read while it holds and are stale once it changed (HTTP)", {
  ice <- icechunk_oracle()
  rep <- ice$expected$repos$etag
  main <- rep$refs[[1]]
  expect_identical(main$kind, "branch")
  # the official implementation reads the unchanged target and refuses the
  # rewritten one (its modification time set back: only the ETag differs)
  expect_null(main$nodes[["/ok"]]$error)
  expect_match(main$nodes[["/changed"]]$error, "checksum")
  for (loc in c(file.path(ice$dir, "etag"), paste0(ice$url, "/etag"))) {
    z <- open_zarr(loc)
    expect_equal(as.vector(z[["/ok"]]$read()), as.integer(unlist(main$nodes[["/ok"]]$values)), info = loc)
    e <- tryCatch(z[["/changed"]]$read(), error = identity)
    expect_s3_class(e, "zarr_error_icechunk_stale")
    expect_match(conditionMessage(e), "etag_changed[.]bin.*ETag")
  }
})

test_that("virtual chunks recording an ETag are checked against an S3 object's ETag", {
  ice <- icechunk_oracle()
  s3 <- s3_server()
  rep <- ice$expected$repos$etag
  main <- rep$refs[[1]]
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key, AWS_SECRET_ACCESS_KEY = s3$secret,
                        AWS_REGION = "us-east-1"))
  bytes <- readBin(file.path(ice$dir, "http", "etag_s3.bin"), "raw", 64)
  bucket <- s3$store("private", "icechunk-etag")
  bucket$set("etag.bin", bytes)
  loc <- file.path(ice$dir, "etag")
  # the same bytes as the http:// target of /ok, at the same offsets
  expect_equal(as.vector(open_zarr(loc)[["/vs3"]]$read()), as.integer(unlist(main$nodes[["/ok"]]$values)))
  changed <- bytes
  changed[10] <- as.raw(bitwXor(as.integer(changed[10]), 255L))
  bucket$set("etag.bin", changed)
  e <- tryCatch(open_zarr(loc)[["/vs3"]]$read(), error = identity)
  expect_s3_class(e, "zarr_error_icechunk_stale")
  expect_match(conditionMessage(e), rep$s3_etag, fixed = TRUE)
  # the target is asked for its ETag once per store, not once per chunk
  bucket$set("etag.bin", bytes)
  z <- open_zarr(loc)
  s3$reset()
  z[["/vs3"]]$read()
  log <- s3$stats()
  expect_identical(sum(grepl("etag[.]bin", log$log$path)), 2L, info = paste(log$log$range, collapse = " "))
})

test_that("virtual ranges of one file with and without a recorded condition go out in the same requests", {
  ice <- icechunk_oracle()
  rep <- ice$expected$repos$virtual_compressed
  main <- Find(function(r) r$kind == "branch" && r$name == "main", rep$refs)
  srv <- ice$server
  z <- open_zarr(file.path(ice$dir, "virtual_compressed"))
  srv$reset()
  # vmany: 16 http:// chunks of one file, every other one recording an mtime
  expect_equal(as.vector(z[["/vmany"]]$read()), as.vector(icechunk_expected_array(main$nodes[["/vmany"]])), tolerance = 0)
  log <- srv$stats()$log
  log <- log[log$path == "/http/target.bin", ]
  r <- do.call(rbind, lapply(regmatches(log$range, regexec("bytes=([0-9]+)-([0-9]+)", log$range)),
                             function(m) as.numeric(m[2:3])))
  info <- paste(log$range, collapse = " ")
  # one request for the file's Last-Modified (its first bytes), one for all the chunks
  expect_identical(nrow(r), 2L, info = info)
  r <- r[order(r[, 1]), , drop = FALSE]
  expect_true(all(utils::head(r[, 2], -1) < utils::tail(r[, 1], -1)), info = info) # no overlap
})
