# An Icechunk store reads an array's manifests when that array's chunks are
# first needed: opening the repository, listing its hierarchy and reading
# metadata and attributes fetch none.

ice_manifest_paths <- function(srv) {
  log <- srv$stats()$log
  unique(log$path[grepl("/manifests/", log$path)])
}

test_that("manifests are fetched when an array's chunks are first read, not when the repository opens", {
  ice <- icechunk_oracle()
  rep <- ice$expected$repos$v2
  main <- Find(function(r) r$kind == "branch" && r$name == "main", rep$refs)
  srv <- ice$server
  srv$reset()
  z <- open_zarr(paste0(ice$url, "/v2"))
  expect_setequal(z$arrays, names(Filter(function(n) identical(n$type, "array"), main$nodes)))
  expect_setequal(z$groups, names(Filter(function(n) identical(n$type, "group"), main$nodes)))
  a <- z[["/float64"]]
  expect_equal(a$attributes %||% list(), main$nodes[["/float64"]]$attributes %||% list())
  expect_identical(as.integer(a$shape), as.integer(unlist(main$nodes[["/float64"]]$shape)))
  expect_length(ice_manifest_paths(srv), 0L)
  # reading: that array's manifest (one), and no other
  expect_equal(as.vector(a$read()), as.vector(icechunk_expected_array(main$nodes[["/float64"]])), tolerance = 0)
  got <- ice_manifest_paths(srv)
  expect_length(got, 1L)
  # a second read, and a read of an array of the same manifest, fetch no more
  a$read()
  expect_identical(ice_manifest_paths(srv), got)
  # an array split over several manifests fetches those
  sp <- z[["/split"]]
  expect_equal(as.vector(sp$read()), as.vector(icechunk_expected_array(main$nodes[["/split"]])), tolerance = 0)
  expect_gt(length(ice_manifest_paths(srv)), 2L)
  # requests counted before the manifests were read are kept
  expect_gt(z$store$io_stats()[["requests"]], 0)
})

test_that("listing an array's chunk keys reads its manifests (and only its)", {
  ice <- icechunk_oracle()
  st <- zarr_icechunkstore$new(file.path(ice$dir, "v2"))
  expect_false(any(grepl("^float64/c", st$list_prefix("grp/"))))
  expect_true(length(st$list_prefix("float64/")) > 1L)
  expect_true("c" %in% st$list_dir("float64/"))
  expect_true(st$exists("uint16/c/0"))
  expect_false(is.null(st$get("uint16/c/0")))
  all <- st$list_prefix("")
  expect_true(any(grepl("^split/c/", all)))
})

test_that("open_zarr() recognises a repository over HTTP in few requests, and plain stores take no more", {
  ice <- icechunk_oracle()
  srv <- ice$server
  opened <- function(loc) {
    srv$reset()
    z <- open_zarr(paste0(ice$url, "/", loc))
    list(z = z, log = srv$stats()$log)
  }
  # spec 2: zarr.json (absent), .zmetadata with repo in one round trip, the snapshot
  v2 <- opened("v2")
  expect_s3_class(v2$z$store, "zarr_icechunkstore")
  expect_identical(nrow(v2$log), 4L, info = paste(v2$log$path, collapse = " "))
  expect_identical(sum(v2$log$path == "/v2/repo"), 1L)
  # spec 1: the v2 probes, then main's ref (read once) and the snapshot
  v1 <- opened("v1")
  expect_s3_class(v1$z$store, "zarr_icechunkstore")
  expect_identical(nrow(v1$log), 7L, info = paste(v1$log$path, collapse = " "))
  expect_identical(sum(v1$log$path == "/v1/refs/branch.main/ref.json"), 1L)
  # a plain v3 store: its zarr.json only
  plain <- file.path(ice$dir, "plain-lazy.zarr")
  as_zarr(array(1:6, c(2, 3)), location = plain)
  p <- opened("plain-lazy.zarr")
  expect_identical(p$log$path, "/plain-lazy.zarr/zarr.json")
  expect_identical(as.vector(p$z[["/"]]$read()), 1:6)
})

test_that("open_zarr() recognises a repository in S3 without listing its folders", {
  ice <- icechunk_oracle()
  s3 <- s3_server()
  for (name in c("v1", "v2")) s3_upload_dir(s3$store("private", paste0("lazy/", name)), file.path(ice$dir, name))
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key, AWS_SECRET_ACCESS_KEY = s3$secret,
                        AWS_REGION = "us-east-1"))
  for (name in c("v1", "v2")) {
    s3$reset()
    z <- open_zarr(paste0("s3://private/lazy/", name))
    expect_s3_class(z$store, "zarr_icechunkstore")
    log <- s3$stats()$log
    info <- paste(name, paste(log$path, collapse = " "))
    # the store's version probes, the root metadata, the repository's object(s), the snapshot: no listing
    expect_lte(nrow(log), if (name == "v1") 10L else 9L)
    expect_false(any(grepl("list-type", log$query)), info = info)
    expect_false(any(grepl("/manifests/", log$path)), info = info)
    expect_identical(sum(grepl("/(repo|refs/branch[.]main/ref[.]json)$", log$path) & log$status == 200), 1L, info = info)
  }
})
