# The S3 store against a real S3-compatible server on 127.0.0.1 (s3rver
# behind tools/s3server/proxy.js, which checks Signature Version 4 as S3
# does: see helper-s3.R), and the gs:// route through the HTTP test server.

s3_env <- new.env()

# One server for the file (started on first use, stopped at the end).
s3_fixture <- function() {
  if (!is.null(s3_env$s3) && s3_env$s3$process$is_alive()) return(s3_env$s3)
  s3_env$s3 <- s3_server(env = testthat::teardown_env())
  s3_env$s3
}

test_that("the verifying proxy reproduces AWS's published Signature Version 4 examples", {
  skip_without_s3_server()
  script <- file.path(dirname(s3server_script()), "selftest.js")
  out <- processx::run("node", script, error_on_status = FALSE)
  expect_identical(out$status, 0L)
  lines <- strsplit(trimws(out$stdout), "\n")[[1]]
  expect_identical(lines, c("ok GET Object (range)", "ok GET Bucket lifecycle",
                            "ok GET Bucket (list objects)", "ok PUT Object"))
})

test_that("requests signed by the package are accepted; a wrong secret is refused with SignatureDoesNotMatch", {
  s3 <- s3_fixture()
  local_s3_fast()
  st <- s3$store("private", "signing")
  st$set("a/b c", as.raw(1:20))
  expect_identical(st$get("a/b c"), as.raw(1:20))
  expect_identical(st$get("a/b c", byte_range = c(3, 7)), as.raw(4:7))
  expect_identical(st$get("a/b c", byte_range = -3), as.raw(18:20))
  bad <- zarr_s3store$new("private", "signing", endpoint = s3$endpoint, access_key = s3$key,
                          secret_key = "not-the-secret")
  err <- expect_error(bad$get("a/b c"), class = "zarr_error_s3")
  expect_s3_class(err, "zarr_error_http")
  expect_s3_class(err, "zarr_error")
  expect_identical(err$s3_code, "SignatureDoesNotMatch")
  expect_match(err$s3_message, "signature")
  expect_identical(err$status, 403L)
  expect_match(conditionMessage(err), "SignatureDoesNotMatch.*signing/a/b%20c")
  err <- expect_error(bad$set("x", as.raw(1)), class = "zarr_error_s3")
  expect_identical(err$s3_code, "SignatureDoesNotMatch")
  err <- expect_error(bad$list_prefix(""), class = "zarr_error_s3")
  expect_identical(err$s3_code, "SignatureDoesNotMatch")
  unknown <- zarr_s3store$new("private", "signing", endpoint = s3$endpoint, access_key = "AKIDNOBODY",
                              secret_key = s3$secret)
  expect_identical(expect_error(unknown$get("a/b c"), class = "zarr_error_s3")$s3_code, "InvalidAccessKeyId")
  # the proxy saw the signed requests with the payload hash S3 requires
  log <- s3$stats()$log
  expect_true(all(c("GET", "PUT") %in% log$method))
})

test_that("session tokens are sent and signed", {
  s3 <- s3_fixture()
  local_s3_fast()
  st <- zarr_s3store$new("private", "token", endpoint = s3$endpoint, access_key = s3$token_key,
                         secret_key = s3$token_secret, session_token = s3$token)
  st$set("k", charToRaw("temporary"))
  expect_identical(rawToChar(st$get("k")), "temporary")
  no_token <- zarr_s3store$new("private", "token", endpoint = s3$endpoint, access_key = s3$token_key,
                               secret_key = s3$token_secret)
  expect_identical(expect_error(no_token$get("k"), class = "zarr_error_s3")$s3_code, "InvalidToken")
})

# ------------------------------------------------------------------ fixtures

s3_fixture_stores <- c("zarr-python/v2.zarr", "zarr-python/v3.zarr", "zarrs/sharded_array_write_read.zarr",
                       "zarrs/hierarchy.zarr", "zarr-python/compat/cities_v3.zarr",
                       "conformance-suite/int64.zarr", "zarr-python/v2-float32/array_blosc_F.zarr")

test_that("fixture stores uploaded to S3 read as expected.json says", {
  skip_without_fixtures()
  s3 <- s3_fixture()
  n <- 0L
  for (st in s3_fixture_stores) {
    prefix <- paste0("fixtures/", st)
    s3_upload_dir(s3$store("private", prefix), file.path(fixtures_dir(), st))
    opener <- fixture_opener(function(s) {
      zarr$new(s3$store("private", paste0("fixtures/", s), read_only = TRUE))
    })
    for (key in names(fixture_entries)) {
      e <- fixture_entries[[key]]
      if (identical(e[["store"]], st)) {
        check_fixture_entry(key, e, opener)
        n <- n + 1L
      }
    }
  }
  expect_gt(n, 15L)
  # ranged GETs: the sharded fixture reads shard indexes by range
  log <- s3$stats()$log
  expect_true(any(!is.na(log$range) & grepl("sharded_array_write_read", log$path)))
})

test_that("open_zarr('s3://...') finds the endpoint and credentials in the environment and lists the hierarchy", {
  skip_without_fixtures()
  s3 <- s3_fixture()
  st <- "zarr-python/v3.zarr"
  s3_upload_dir(s3$store("private", paste0("env/", st)), file.path(fixtures_dir(), st))
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key,
                        AWS_SECRET_ACCESS_KEY = s3$secret))
  z <- open_zarr(paste0("s3://private/env/", st))
  expect_s3_class(z$store, "zarr_s3store")
  expect_identical(z$store$credentials$source, "environment")
  expect_identical(z$store$root, "s3://private/env/zarr-python/v3.zarr")
  loc <- open_zarr(file.path(fixtures_dir(), st), read_only = TRUE)
  expect_identical(sort(z$store$list_dir("")), sort(loc$store$list_dir("")))
  for (path in c("/", "/my group with spaces")) {
    expect_identical(sort(names(z[[path]]$children)), sort(names(loc[[path]]$children)), info = path)
  }
})

# ------------------------------------------------------------------ writes

test_that("arrays of several types are written and partially rewritten, v3 and v2, plain and sharded", {
  s3 <- s3_fixture()
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key,
                        AWS_SECRET_ACCESS_KEY = s3$secret))
  for (fmt in c(3L, 2L)) {
    withr::local_options(zarr.format = fmt)
    z <- create_zarr(sprintf("s3://private/written_v%d.zarr", fmt))
    loc <- create_zarr(local_store_path())
    expect_identical(z$store$version, fmt)
    for (dt in c("bool", "int8", "uint16", "int32", "int64", "float32", "float64", "complex128")) {
      x <- dtype_array(dt, c(7, 9))
      for (sharded in if (fmt == 3L) c(FALSE, TRUE) else FALSE) {
        name <- sprintf("%s_v%d%s", dt, fmt, if (sharded) "_sharded" else "")
        d <- define_array(dt, dim(x))
        d$format <- fmt
        d$chunk_shape <- if (sharded) c(4, 6) else c(3, 4)
        if (sharded) d$add_codec("sharding_indexed", list(chunk_shape = c(2, 3)))
        for (target in list(z, loc)) target$add_array("/", name, d)$write(x)
        a <- zarr$new(z$store)[[paste0("/", name)]]
        expect_same_values(a[, ], x)
        # a partial write touches some chunks only
        y <- x[2:5, 4:8]
        y[] <- rev(y)
        a[2:5, 4:8] <- y
        la <- loc[[paste0("/", name)]]
        la[2:5, 4:8] <- y
        expect_same_values(zarr$new(z$store)[[paste0("/", name)]][, ], loc[[paste0("/", name)]][, ])
        # the same chunks (the local store separates with ".", S3 with "/")
        expect_identical(length(z$store$list_prefix(paste0(name, "/"))),
                         length(loc$store$list_prefix(paste0(name, "/"))), info = name)
      }
    }
  }
  expect_error(create_zarr("s3://private/written_v3.zarr"), class = "zarr_error_exists")
  # strings, and as_zarr() to an s3:// location
  s <- matrix(c("a", "bé", "", "数据", "x y", "z"), 2)
  z2 <- as_zarr(s, location = "s3://private/as_zarr.zarr")
  expect_identical(open_zarr("s3://private/as_zarr.zarr")[["/"]][, ], as_zarr(s)[["/"]][, ]) # as in memory
  expect_identical(open_zarr("s3://private/as_zarr.zarr")[["/"]]$read(fill_as_na = FALSE), s)
  expect_s3_class(z2$store, "zarr_s3store")
  # the hierarchy is found by listing, without consolidated metadata
  z3 <- open_zarr("s3://private/written_v3.zarr")
  expect_true(all(c("int8_v3", "float64_v3_sharded") %in% names(z3[["/"]]$children)))
  z2 <- open_zarr("s3://private/written_v2.zarr")
  expect_identical(z2$store$version, 2L)
  expect_true(all(c("int8_v2", "complex128_v2") %in% names(z2[["/"]]$children)))
})

test_that("values above the multipart threshold go up in parts and read back", {
  s3 <- s3_fixture()
  withr::local_options(zarr.s3_multipart_size = 5 * 2^20)
  st <- s3$store("private", "multipart")
  s3$reset()
  set.seed(3)
  v <- as.raw(sample.int(256, 12.5 * 2^20, replace = TRUE) - 1L)
  st$set("big", v)
  log <- s3$stats()$log
  expect_identical(sum(log$method == "POST" & log$query == "uploads="), 1L)
  parts <- log[log$method == "PUT" & grepl("^partNumber=", log$query), ]
  expect_identical(sort(sub("&.*", "", parts$query)), paste0("partNumber=", 1:3))
  expect_identical(sum(log$method == "POST" & grepl("^uploadId=", log$query)), 1L)
  expect_identical(st$get("big"), v)
  expect_identical(st$getsize("big"), length(v) * 1)
  expect_identical(st$get("big", byte_range = c(5 * 2^20 - 2, 5 * 2^20 + 2)), v[(5 * 2^20 - 1):(5 * 2^20 + 2)])
  # an array whose one chunk is above the threshold
  x <- array(as.double(seq_len(2^20 * 0.8)), c(1024, 819))
  d <- define_array("float64", dim(x))
  d$chunk_shape <- dim(x)
  d$remove_codec("zstd")
  st$create_group("/", "")
  z <- zarr$new(st)
  z$add_array("/", "one_chunk", d)$write(x)
  expect_identical(zarr$new(s3$store("private", "multipart"))[["/one_chunk"]][, ], x)
})

test_that("listing follows continuation tokens past 1000 keys; erase_prefix and erase delete", {
  s3 <- s3_fixture()
  st <- s3$store("private", "many")
  st$create_group("/", "")
  z <- zarr$new(st)
  d <- define_array("int32", 1100)
  d$chunk_shape <- 1
  a <- z$add_array("/", "a", d)
  a$write(seq_len(1100))
  s3$reset()
  keys <- st$list_prefix("a/")
  expect_length(keys, 1101L)
  expect_true(all(c("a/zarr.json", "a/c/0", "a/c/1099") %in% keys))
  log <- s3$stats()$log
  lists <- log[log$method == "GET" & grepl("list-type=2", log$query), ]
  expect_identical(nrow(lists), 2L)
  expect_identical(sum(grepl("continuation-token=", lists$query)), 1L)
  expect_identical(zarr$new(s3$store("private", "many"))[["/a"]][], seq_len(1100))
  # a chunk that is not there is the fill value
  st$erase("a/c/5")
  st$erase("a/c/5") # absent keys are fine
  expect_null(st$get("a/c/5"))
  v <- zarr$new(st)[["/a"]][1:10]
  expect_identical(v, c(1:5, NA, 7:10))
  # erase_prefix removes all of it; the group stays
  st$erase_prefix("a")
  expect_identical(st$list_prefix("a/"), character())
  expect_identical(st$list_prefix(""), "zarr.json")
  expect_true(st$is_group("/"))
})

# ------------------------------------------------------------------ faults

test_that("a missing bucket is NoSuchBucket; a missing store is zarr_error_not_found", {
  s3 <- s3_fixture()
  local_s3_fast()
  st <- s3$store("no-such-bucket")
  err <- expect_error(st$list_dir(""), class = "zarr_error_s3")
  expect_identical(err$s3_code, "NoSuchBucket")
  expect_identical(err$status, 404L)
  expect_identical(expect_error(st$get("zarr.json"), class = "zarr_error_s3")$s3_code, "NoSuchBucket")
  expect_identical(expect_error(st$set("k", as.raw(1)), class = "zarr_error_s3")$s3_code, "NoSuchBucket")
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key,
                        AWS_SECRET_ACCESS_KEY = s3$secret))
  expect_identical(expect_error(open_zarr("s3://no-such-bucket/x.zarr"), class = "zarr_error_s3")$s3_code,
                   "NoSuchBucket")
  expect_error(open_zarr("s3://private/nothing/here.zarr"), class = "zarr_error_not_found")
})

test_that("public buckets read anonymously; anonymous writes and private reads are refused", {
  s3 <- s3_fixture()
  local_s3_fast()
  up <- s3$store("public", "open.zarr")
  up$create_group("/", "")
  z <- zarr$new(up)
  d <- define_array("float64", c(6, 5))
  d$chunk_shape <- c(3, 5)
  d$fill_value <- -7
  x <- matrix(as.double(1:30), 6, 5)
  z$add_array("/", "x", d)$write(x)
  anon <- zarr_s3store$new("public", "open.zarr", endpoint = s3$endpoint, anonymous = TRUE)
  expect_identical(anon$credentials$source, "anonymous")
  expect_identical(zarr$new(anon)[["/x"]][, ], x)
  # with nothing configured at all, requests are anonymous too
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint))
  za <- open_zarr("s3://public/open.zarr")
  expect_identical(za$store$credentials$source, "anonymous")
  expect_identical(za[["/x"]][, ], x)
  s3$reset()
  log0 <- s3$stats()
  expect_identical(za[["/x"]][2:4, ], x[2:4, ])
  expect_true(all(s3$stats()$log$status %in% c(200L, 206L)))
  # a missing chunk is the fill value (404 here)
  up$erase("x/c/1/0")
  expect_identical(za[["/x"]][4:6, 1], rep(NA_real_, 3))
  expect_identical(za[["/x"]]$read(fill_as_na = FALSE)[4:6, 1], c(-7, -7, -7))
  err <- expect_error(anon$set("y", as.raw(1)), class = "zarr_error_s3")
  expect_identical(err$s3_code, "AccessDenied")
  # anonymous reads of a private bucket: keys read as absent (S3 hides them
  # with 403), listing says AccessDenied
  priv <- zarr_s3store$new("private", "signing", endpoint = s3$endpoint, anonymous = TRUE)
  expect_null(priv$get("a/b c"))
  expect_identical(expect_error(priv$list_dir(""), class = "zarr_error_s3")$s3_code, "AccessDenied")
  expect_identical(expect_error(open_zarr("s3://private/written_v3.zarr"), class = "zarr_error_s3")$s3_code,
                   "AccessDenied")
})

test_that("read-only S3 stores refuse writes", {
  s3 <- s3_fixture()
  st <- s3$store("private", "ro", read_only = TRUE)
  expect_error(st$set("k", as.raw(1)), class = "zarr_error_read_only")
  expect_error(st$erase("k"), class = "zarr_error_read_only")
})

# ------------------------------------------------------------------ configuration

test_that("credentials, region and endpoint come from arguments, environment, then ~/.aws files", {
  home <- withr::local_tempdir()
  dir.create(file.path(home, ".aws"))
  writeLines(c("[default]", "aws_access_key_id = AKIDFILE", "aws_secret_access_key = secretfile",
               "", "[other]", "aws_access_key_id=AKIDOTHER", "aws_secret_access_key=secretother",
               "aws_session_token = tokother  ; a comment"),
             file.path(home, ".aws", "credentials"))
  writeLines(c("# config", "[default]", "region = eu-west-3", "", "[profile other]", "region=ap-south-1",
               "endpoint_url = http://127.0.0.1:1"),
             file.path(home, ".aws", "config"))
  withr::local_envvar(c(HOME = home, AWS_ACCESS_KEY_ID = NA, AWS_SECRET_ACCESS_KEY = NA, AWS_SESSION_TOKEN = NA,
                        AWS_PROFILE = NA, AWS_DEFAULT_PROFILE = NA, AWS_REGION = NA, AWS_DEFAULT_REGION = NA,
                        AWS_ENDPOINT_URL = NA, AWS_ENDPOINT_URL_S3 = NA, AWS_SHARED_CREDENTIALS_FILE = NA,
                        AWS_CONFIG_FILE = NA))
  cfg <- zarr:::s3_config()
  expect_identical(cfg[c("source", "access_key", "secret_key", "region")],
                   list(source = "profile default", access_key = "AKIDFILE", secret_key = "secretfile",
                        region = "eu-west-3"))
  expect_null(cfg$endpoint)
  cfg <- zarr:::s3_config(profile = "other")
  expect_identical(cfg[c("source", "access_key", "session_token", "region", "endpoint")],
                   list(source = "profile other", access_key = "AKIDOTHER", session_token = "tokother",
                        region = "ap-south-1", endpoint = "http://127.0.0.1:1"))
  withr::local_envvar(c(AWS_ACCESS_KEY_ID = "AKIDENV", AWS_SECRET_ACCESS_KEY = "secretenv", AWS_REGION = "us-west-2",
                        AWS_ENDPOINT_URL = "http://127.0.0.1:2", AWS_ENDPOINT_URL_S3 = "http://127.0.0.1:3"))
  cfg <- zarr:::s3_config()
  expect_identical(cfg[c("source", "access_key", "region", "endpoint")],
                   list(source = "environment", access_key = "AKIDENV", region = "us-west-2",
                        endpoint = "http://127.0.0.1:3"))
  cfg <- zarr:::s3_config(access_key = "AKIDARG", secret_key = "s", region = "sa-east-1")
  expect_identical(cfg[c("source", "access_key", "region")],
                   list(source = "arguments", access_key = "AKIDARG", region = "sa-east-1"))
  expect_identical(zarr:::s3_config(anonymous = TRUE)$source, "anonymous")
  expect_error(zarr:::s3_config(profile = "missing"), class = "zarr_error_argument")
  expect_error(zarr:::s3_config(access_key = "AKIDARG"), class = "zarr_error_argument")
  withr::local_envvar(c(AWS_ACCESS_KEY_ID = NA, AWS_SECRET_ACCESS_KEY = NA, AWS_ENDPOINT_URL = NA,
                        AWS_ENDPOINT_URL_S3 = NA, AWS_REGION = NA, HOME = withr::local_tempdir()))
  cfg <- zarr:::s3_config()
  expect_identical(cfg[c("source", "region", "anonymous")],
                   list(source = "anonymous", region = "us-east-1", anonymous = TRUE))
})

test_that("bucket URLs: virtual-hosted on AWS, path-style with a custom endpoint unless told otherwise", {
  withr::local_envvar(c(AWS_ACCESS_KEY_ID = NA, AWS_SECRET_ACCESS_KEY = NA, AWS_ENDPOINT_URL = NA,
                        AWS_ENDPOINT_URL_S3 = NA, AWS_REGION = NA, AWS_DEFAULT_REGION = NA, AWS_PROFILE = NA,
                        HOME = withr::local_tempdir()))
  # nothing is fetched from these hosts: the port is closed
  local_s3_fast()
  withr::local_options(zarr.http_connect_timeout = 2, zarr.http_retries = 0L)
  mk <- function(...) tryCatch(zarr_s3store$new(...), zarr_error = function(e) NULL)
  aws <- zarr:::s3_config(region = "eu-central-1")
  expect_identical(aws$endpoint, NULL)
  st <- mk("b", "p/q.zarr", endpoint = "http://127.0.0.1:1")
  expect_identical(st$url, "http://127.0.0.1:1/b/p/q.zarr")
  expect_identical(st$root, "s3://b/p/q.zarr")
  st <- mk("b", "", endpoint = "http://127.0.0.1:1/", path_style = FALSE)
  expect_identical(st$url, "http://b.127.0.0.1:1")
  expect_identical(zarr:::s3_parse_url("s3://bkt/a/b.zarr/"), list(bucket = "bkt", prefix = "a/b.zarr"))
  expect_identical(zarr:::s3_parse_url("s3://bkt"), list(bucket = "bkt", prefix = ""))
  expect_identical(zarr:::s3_query(list(prefix = "a b/é", `list-type` = "2", `continuation-token` = "x+/=")),
                   "continuation-token=x%2B%2F%3D&list-type=2&prefix=a%20b%2F%C3%A9")
})

# ------------------------------------------------------------------ GCS

test_that("gs:// locations read through the public GCS endpoint (here: the HTTP test server)", {
  withr::local_envvar(c(STORAGE_EMULATOR_HOST = NA))
  expect_identical(zarr:::gcs_url("gs://bucket/path/to/x.zarr/"), "https://storage.googleapis.com/bucket/path/to/x.zarr")
  skip_without_fixtures()
  root <- withr::local_tempdir()
  file.symlink(fixtures_dir(), file.path(root, "fixtures"))
  srv <- http_server(root)
  withr::local_envvar(c(STORAGE_EMULATOR_HOST = srv$url))
  z <- open_zarr("gs://fixtures/zarr-python/v3-float32/array_zstd.zarr")
  expect_s3_class(z$store, "zarr_httpstore")
  expect_identical(z$store$root, paste0(srv$url, "/fixtures/zarr-python/v3-float32/array_zstd.zarr"))
  loc <- open_zarr(file.path(fixtures_dir(), "zarr-python/v3-float32/array_zstd.zarr"), read_only = TRUE)
  expect_identical(z$root[], loc$root[])
})

test_that("Kerchunk references read byte ranges of objects in S3", {
  s3 <- s3_fixture()
  local_s3_fast()
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key,
                        AWS_SECRET_ACCESS_KEY = s3$secret))
  st <- s3$store("private", "")
  vals <- c(10:17, -3L, 0L)
  # an edge chunk is stored whole: 12 elements for 10
  st$set("refs/data.bin", c(as.raw(c(9, 9)), writeBin(c(vals, 0L, 0L), raw(), size = 4, endian = "little")))
  refs <- list(
    ".zgroup" = list(zarr_format = 2L),
    "x/.zarray" = list(zarr_format = 2L, shape = list(10L), chunks = list(4L), dtype = "<i4",
                       compressor = NULL, filters = NULL, fill_value = 0L, order = "C"),
    "x/0" = list("s3://private/refs/data.bin", 2L, 16L),
    "x/1" = list("s3://private/refs/data.bin", 18L, 16L),
    "x/2" = list("s3://private/refs/data.bin", 34L, 16L))
  z <- zarr$new(zarr_refstore$new(refs))
  expect_identical(z[["/x"]]$read(fill_as_na = FALSE), vals)
  # a reference to an object that is not there is a classed error naming it
  refs[["x/1"]] <- list("s3://private/refs/nothing.bin", 0L, 16L)
  z <- zarr$new(zarr_refstore$new(refs))
  expect_error(z[["/x"]]$read(), class = "zarr_error")
})
