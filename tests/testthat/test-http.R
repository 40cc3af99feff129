# Reading stores over HTTP from a real server on 127.0.0.1
# (tools/testserver/server.js, see helper-http.R): the conformance fixtures,
# stores written here, failures that the client must ride out (latency, 5xx,
# Retry-After, truncated bodies, servers that ignore or garble ranges) and
# those it must report (permanent failures, hangs), what goes over the wire
# (keep-alive, GET only, signed-URL queries, sharded reads that move only what
# they need) and the zarr_httpstore class.
#
# One server serves the whole file. Its root holds data.zarr (written below
# by the package) and `fixtures`, a link to ../shared/fixtures. Each test that
# looks at the server's statistics resets them first. No test measures speed
# (bench/remote.R does); the only clocks read are lower bounds (a Retry-After
# must be waited for) and one generous upper bound (a hanging server must not
# hang the client).

http_env <- new.env()

# UTF-8 file names need a UTF-8 locale (C.UTF-8 will do).
utf8_locale <- isTRUE(l10n_info()[["UTF-8"]])

# The file's server and data, made on first use: data.zarr holds
#   /plain    float64 60 x 50, chunks 10 x 10 (30 chunk files), fill value -1
#   /sharded  float64 400 x 400, one shard of 20 x 20 inner chunks, no compression
#   /many     int32 200 x 200, chunks 10 x 10 (400 chunk files)
#   /one      float64 5 x 4 in one chunk
#   /grüße/数据 a  int32 1:10, chunks of 5 (UTF-8 and space in the names;
#             only in a UTF-8 locale)
http_fixture <- function() {
  if (!is.null(http_env$srv) && http_env$srv$process$is_alive()) return(http_env)
  skip_without_http_server()
  root <- tempfile("zarr-http-")
  dir.create(root)
  withr::defer(unlink(root, recursive = TRUE), envir = testthat::teardown_env())
  if (nzchar(fixtures_dir())) file.symlink(fixtures_dir(), file.path(root, "fixtures"))
  path <- file.path(root, "data.zarr")
  z <- create_zarr(path)
  withr::with_seed(20261124, {
    x_plain <- matrix(stats::runif(60 * 50), 60, 50)
    x_shard <- matrix(stats::rnorm(400 * 400), 400, 400)
  })
  d <- define_array("float64", dim(x_plain))
  d$chunk_shape <- c(10, 10)
  d$fill_value <- -1
  z$add_array("/", "plain", d)$write(x_plain)
  d <- define_array("float64", dim(x_shard))
  d$chunk_shape <- c(400, 400)
  d$remove_codec("zstd")   # inner chunks of exactly 20 x 20 x 8 = 3200 bytes
  d$add_codec("sharding_indexed", list(chunk_shape = c(20, 20)))
  z$add_array("/", "sharded", d)$write(x_shard)
  x_many <- matrix(seq_len(200 * 200), 200, 200)
  d <- define_array("int32", dim(x_many))
  d$chunk_shape <- c(10, 10)
  z$add_array("/", "many", d)$write(x_many)
  x_one <- matrix(as.double(1:20) / 4, 5, 4)
  z$add_array("/", "one", define_array("float64", dim(x_one)))$write(x_one)
  if (utf8_locale) {
    z$add_group("/", "grüße")
    d <- define_array("int32", 10)
    d$chunk_shape <- 5
    z$add_array("/grüße", "数据 a", d)$write(1:10)
  }
  http_env$root <- root
  http_env$path <- path
  http_env$x <- list(plain = x_plain, sharded = x_shard, many = x_many, one = x_one)
  http_env$srv <- http_server(root, env = testthat::teardown_env())
  http_env
}

# The server with fresh statistics.
fresh_server <- function() {
  srv <- http_fixture()$srv
  srv$reset()
  srv
}

# The local file of a key of data.zarr, and its bytes.
local_key <- function(key) file.path(http_env$path, key)
local_bytes <- function(key) readBin(local_key(key), "raw", file.size(local_key(key)))

# Requests the package should never make: other methods than GET, listings
# of directories (paths ending in "/"), malformed requests.
expect_clean_requests <- function(st, info = NULL) {
  expect_identical(names(st$methods), if (st$requests > 0) "GET" else character(), info = info)
  expect_false(any(grepl("/$", st$log$path)), info = info)
  expect_false(any(st$log$status %in% c(400, 405, 416)), info = info)
}

# ------------------------------------------------------------------ fixtures

# Every store of expected.json but the zip files, opened by URL.
http_fixture_stores <- unique(vapply(fixture_entries, function(e) e[["store"]], ""))
http_fixture_stores <- http_fixture_stores[!grepl("[.]zip$", http_fixture_stores)]

for (store in http_fixture_stores) local({
  st <- store
  test_that(paste("fixture over HTTP:", st), {
    skip_without_fixtures()
    srv <- fresh_server()
    opener <- fixture_opener(function(s) open_zarr(srv$url_of(file.path("fixtures", s))))
    # A store whose root has no metadata (an implicit group) cannot be
    # listed over HTTP: its arrays open by their own URLs.
    fixture_array <- function(e) {
      tryCatch(opener(e), zarr_error_not_found = function(err)
        open_zarr(srv$url_of(file.path("fixtures", e[["store"]], sub("^/", "", e[["array"]]))))$root)
    }
    for (key in names(fixture_entries)) {
      e <- fixture_entries[[key]]
      if (identical(e[["store"]], st)) check_fixture_entry(key, e, fixture_array)
    }
    expect_clean_requests(srv$stats(), info = st)
  })
})

test_that("all the non-zip stores of expected.json are read over HTTP", {
  skip_without_fixtures()
  expect_gt(length(http_fixture_stores), 60L)
  expect_false(any(grepl("[.]zip$", http_fixture_stores)))
})

# ------------------------------------------------------------------ reading

test_that("a store written by the package reads the same over HTTP as from disk", {
  srv <- fresh_server()
  z <- open_zarr(srv$url_of("data.zarr"))
  x <- http_env$x
  expect_identical(z[["/plain"]][, ], x$plain)
  expect_identical(z[["/plain"]]$read(), x$plain)
  expect_identical(z[["/sharded"]][, ], x$sharded)
  expect_identical(z[["/many"]][, ], x$many)
  expect_identical(z[["/one"]][, ], x$one)
  expect_identical(z[["/plain"]][7:23, c(1, 50, 11)], x$plain[7:23, c(1, 50, 11)])
  expect_identical(z[["/sharded"]][390:400, 15:45], x$sharded[390:400, 15:45])
  loc <- open_zarr(http_env$path, read_only = TRUE)
  expect_identical(z[["/sharded"]][101:180, 3:7], loc[["/sharded"]][101:180, 3:7])
  expect_clean_requests(srv$stats())
})

test_that("names with spaces and UTF-8 names are read over HTTP", {
  srv <- fresh_server()
  if (utf8_locale) {
    z <- open_zarr(srv$url_of("data.zarr"))
    expect_identical(z[["/grüße/数据 a"]][], 1:10)
    expect_identical(z[["/grüße/数据 a"]][c(4, 9)], c(4L, 9L))
    log <- srv$stats()$log
    expect_true(all(c("/data.zarr/grüße/数据 a/zarr.json", "/data.zarr/grüße/数据 a/c.0",
                      "/data.zarr/grüße/数据 a/c.1") %in% log$path[log$status == 200]))
  }
  skip_without_fixtures()
  for (v in c("v2", "v3")) {
    srv$reset()
    z <- open_zarr(srv$url_of(sprintf("fixtures/zarr-python/%s.zarr", v)))
    g <- z[["/my group with spaces"]]
    expect_s3_class(g, "zarr_group")
    expect_identical(g$name, "my group with spaces")
    log <- srv$stats()$log
    sp <- grepl("/my group with spaces/", log$path, fixed = TRUE)
    expect_true(all(log$status[sp] == 200), info = v)
    # v2.zarr has consolidated metadata (.zmetadata), v3.zarr has not: there
    # the group's own zarr.json is fetched
    if (v == "v3")
      expect_true("/fixtures/zarr-python/v3.zarr/my group with spaces/zarr.json" %in% log$path[sp])
  }
})

test_that("reads ride out latency, 5xx failures, truncated bodies and bad ranges", {
  local_fast_retries(5L)
  x <- http_fixture()$x
  # profile -> the fault that must have happened in the log
  profiles <- c("latency=20" = NA, "fail=3" = "fail", "fail=4,status=500" = "fail",
                "fail=5,status=429" = "fail", "truncate=3" = "truncate", "norange=1" = NA,
                "badrange=2" = "badrange", "latency=3,fail=4,truncate=5,badrange=3" = "fail")
  for (p in names(profiles)) {
    srv <- fresh_server()
    z <- open_zarr(srv$url_of("data.zarr", profile = p))
    expect_identical(z[["/plain"]][, ], x$plain, info = p)
    expect_identical(z[["/sharded"]][, ], x$sharded, info = p)
    expect_identical(z[["/sharded"]][41:60, c(1:20, 381:400)], x$sharded[41:60, c(1:20, 381:400)], info = p)
    expect_identical(z[["/many"]][150:200, 1:31], x$many[150:200, 1:31], info = p)
    st <- srv$stats()
    expect_clean_requests(st, info = p)
    if (!is.na(profiles[[p]])) expect_true(profiles[[p]] %in% st$log$fault, info = p)
    if (p == "norange=1") {
      # the server answered range requests with whole files, and that was fine
      expect_true(any(!is.na(st$log$range) & st$log$status == 200), info = p)
    }
  }
})

test_that("a Retry-After is waited for", {
  withr::local_options(list(zarr.http_retries = 4L, zarr.http_backoff = 0.001, zarr.http_backoff_max = 5))
  srv <- fresh_server()
  x <- http_fixture()$x
  # every 2nd request fails with Retry-After: 1; at least the metadata of
  # /one or its chunk fails once
  t0 <- proc.time()[["elapsed"]]
  z <- open_zarr(srv$url_of("data.zarr", profile = "fail=2,retryafter=1"))
  v <- z[["/one"]][, ]
  elapsed <- proc.time()[["elapsed"]] - t0
  expect_identical(v, x$one)
  expect_gte(elapsed, 1)
  log <- srv$stats()$log
  failed <- which(log$fault %in% "fail")
  expect_gte(length(failed), 1L)
  for (i in failed) {
    again <- which(seq_len(nrow(log)) > i & log$path == log$path[i] &
                     (log$range == log$range[i] | (is.na(log$range) & is.na(log$range[i]))))
    expect_gte(length(again), 1L)
    if (length(again)) expect_gte(log$time[again[1]] - log$time[i], 990)
  }
})

test_that("a server that always fails gives a zarr_error_http naming the URL, the status and the attempts", {
  local_fast_retries(2L)
  srv <- fresh_server()
  u <- srv$url_of("data.zarr", profile = "fail=1")
  err <- expect_error(open_zarr(u), class = "zarr_error_http")
  expect_s3_class(err, "zarr_error")
  msg <- conditionMessage(err)
  expect_match(msg, u, fixed = TRUE)
  expect_match(msg, "503", fixed = TRUE)
  expect_match(msg, "after 3 attempts", fixed = TRUE)
  # a failing chunk, once the metadata is there: 500 three times, then the error
  srv$reset()
  z <- open_zarr(srv$url_of("data.zarr", profile = "only=plain.c.0.0%24,fail=1,status=500"))
  a <- z[["/plain"]]
  err <- expect_error(a[1:10, 1:10], class = "zarr_error_http")
  msg <- conditionMessage(err)
  expect_match(msg, "plain/c.0.0", fixed = TRUE)
  expect_match(msg, "500", fixed = TRUE)
  expect_match(msg, "after 3 attempts", fixed = TRUE)
  log <- srv$stats()$log
  expect_identical(sum(grepl("/plain/c.0.0$", log$path)), 3L)
  expect_true(all(log$status[grepl("/plain/c.0.0$", log$path)] == 500))
  # the other chunks still read
  expect_identical(a[11:60, ], http_env$x$plain[11:60, ])
  withr::local_options(list(zarr.http_retries = 0L))
  srv$reset()
  err <- expect_error(a[1:10, 1:10], class = "zarr_error_http")
  expect_match(conditionMessage(err), "after 1 attempt", fixed = TRUE)
  expect_equal(srv$stats()$requests, 1)
})

test_that("a server that never answers gives a zarr_error_http in bounded time", {
  withr::local_options(list(zarr.http_retries = 1L, zarr.http_backoff = 0.001, zarr.http_backoff_max = 0.01,
                            zarr.http_low_speed_time = 1, zarr.http_connect_timeout = 2))
  srv <- fresh_server()
  z <- open_zarr(srv$url_of("data.zarr", profile = "only=plain.c.0.0%24,hang=1"))
  a <- z[["/plain"]]
  t0 <- proc.time()[["elapsed"]]
  err <- expect_error(a[1:10, 1:10], class = "zarr_error_http")
  expect_lt(proc.time()[["elapsed"]] - t0, 30)
  expect_match(conditionMessage(err), "plain/c.0.0", fixed = TRUE)
  expect_true("hang" %in% srv$stats()$log$fault)
  # and a hanging metadata request at open
  err <- expect_error(open_zarr(srv$url_of("data.zarr", profile = "hang=1")), class = "zarr_error_http")
  expect_match(conditionMessage(err), "hang=1/data.zarr", fixed = TRUE)
})

test_that("a refused connection fails at once with a zarr_error_http naming the URL", {
  # the default retries and backoff: a refused connection is not retried
  withr::local_options(list(zarr.http_retries = NULL, zarr.http_backoff = NULL))
  url <- "http://127.0.0.1:1/refused.zarr" # nothing listens on port 1
  t0 <- proc.time()[["elapsed"]]
  err <- expect_error(open_zarr(url), class = "zarr_error_http")
  expect_lt(proc.time()[["elapsed"]] - t0, 1)
  expect_match(conditionMessage(err), "connection refused", fixed = TRUE)
  expect_match(conditionMessage(err), "127.0.0.1:1/refused.zarr", fixed = TRUE)
  expect_match(conditionMessage(err), "after 1 attempt", fixed = TRUE)
})

test_that("a missing chunk reads as the fill value, a missing store is zarr_error_not_found", {
  local_fast_retries(2L)
  srv <- fresh_server()
  x <- http_fixture()$x$plain
  z <- open_zarr(srv$url_of("data.zarr", profile = "notfound=plain.c.0.0%24"))
  a <- z[["/plain"]]
  want <- x
  want[1:10, 1:10] <- NA
  expect_identical(a[, ], want)
  want[1:10, 1:10] <- -1
  expect_identical(a$read(fill_as_na = FALSE), want)
  log <- srv$stats()$log
  k <- grepl("/plain/c.0.0$", log$path)
  expect_identical(sum(k), 2L)          # once per read: a 404 is not retried
  expect_true(all(log$status[k] == 404))
  # no chunk at all: fill values everywhere
  z <- open_zarr(srv$url_of("data.zarr", profile = "notfound=plain.c"))
  expect_true(all(is.na(z[["/plain"]][, ])))
  expect_identical(z[["/plain"]]$read(fill_as_na = FALSE), matrix(-1, 60, 50))
  # metadata that does not exist
  expect_error(open_zarr(srv$url_of("no-such-store.zarr")), class = "zarr_error_not_found")
  expect_error(open_zarr(srv$url_of("data.zarr", profile = "notfound=zarr.json%24")),
               class = "zarr_error_not_found")
  expect_error(open_zarr(paste0(srv$url, "/data.zarr/plain/c.0.0/nothing")), class = "zarr_error_not_found")
  expect_clean_requests(srv$stats())
})

# ------------------------------------------------------------------ on the wire

test_that("reading many chunks reuses connections (keep-alive)", {
  withr::local_options(list(zarr.http_concurrency = 4L))
  srv <- fresh_server()
  z <- open_zarr(srv$url_of("data.zarr"))
  expect_identical(z[["/many"]][, ], http_env$x$many)
  st <- srv$stats()
  expect_gte(st$requests, 400)
  expect_lte(st$connections, 8)
  expect_equal(sum(st$log$status == 200), st$requests)
})

test_that("only GET requests of files are made: no HEAD, no directory listing", {
  srv <- fresh_server()
  z <- open_zarr(srv$url_of("data.zarr"))
  for (p in c("/plain", "/sharded", "/many", "/one", if (utf8_locale) "/grüße/数据 a")) invisible(z[[p]]$read())
  st <- srv$stats()
  expect_identical(names(st$methods), "GET")
  expect_equal(st$methods[["GET"]], st$requests)
  # every path asked for is a key of the store (or a metadata key it may lack)
  paths <- sub("^/data.zarr/", "", st$log$path)
  meta <- grepl("(^|/)(zarr.json|[.]zgroup|[.]zarray|[.]zattrs|[.]zmetadata)$", paths)
  expect_true(all(file.exists(local_key(paths[!meta]))))
  expect_clean_requests(st)
})

test_that("a signed-URL query string is kept on every request", {
  withr::local_options(zarr.chunk_cache_bytes = 0) # requests counted: none served by the cache
  srv <- fresh_server()
  q <- "sig=abc&exp=1"
  z <- open_zarr(paste0(srv$url_of("data.zarr"), "?", q))
  expect_identical(z[["/plain"]][, ], http_env$x$plain)
  expect_identical(z[["/sharded"]][1:50, 1:50], http_env$x$sharded[1:50, 1:50])
  st <- zarr_httpstore$new(paste0(srv$url_of("data.zarr"), "?", q))
  expect_identical(st$get("one/zarr.json"), local_bytes("one/zarr.json"))
  log <- srv$stats()$log
  expect_gt(nrow(log), 30L)
  expect_identical(unique(log$query), q)
  expect_false(any(grepl("?", log$path, fixed = TRUE)))
})

test_that("a sharded read of one inner chunk moves only the index and that chunk", {
  withr::local_options(zarr.chunk_cache_bytes = 0) # requests counted: none served by the cache
  srv <- fresh_server()
  a <- open_zarr(srv$url_of("data.zarr"))[["/sharded"]]
  srv$reset()
  v <- a[1:20, 1:20]
  st <- srv$stats()
  expect_equal(st$requests, 2)
  expect_lt(st$bytes, 12000)             # index 400 x 16 + 4 bytes, chunk 20 x 20 x 8
  expect_true(all(st$log$status == 206))
  expect_true(all(!is.na(st$log$range)))
  expect_identical(v, http_env$x$sharded[1:20, 1:20])
  expect_identical(v, open_zarr(http_env$path, read_only = TRUE)[["/sharded"]][1:20, 1:20])
  # one more inner chunk: the index is not fetched again, or fetched once
  srv$reset()
  expect_identical(a[381:400, 381:400], http_env$x$sharded[381:400, 381:400])
  st <- srv$stats()
  expect_lte(st$requests, 2)
  expect_lt(st$bytes, 12000)
})

# ------------------------------------------------------------------ zarr_httpstore

test_that("zarr_httpstore gets keys, knows which exist and refuses writes", {
  srv <- fresh_server()
  st <- zarr_httpstore$new(srv$url_of("data.zarr"))
  expect_s3_class(st, "zarr_store")
  expect_true(st$read_only)
  for (k in c("zarr.json", "plain/zarr.json", "plain/c.0.0", "sharded/c.0.0", if (utf8_locale) "grüße/数据 a/c.1")) {
    v <- st$get(k)
    expect_type(v, "raw")
    expect_identical(v, local_bytes(k), info = k)
  }
  expect_null(st$get("plain/c.9.9"))
  expect_null(st$get("nothing/here.json"))
  expect_true(st$exists("zarr.json"))
  expect_true(st$exists("plain/zarr.json"))
  expect_true(st$exists("plain/c.5.4"))
  expect_false(st$exists("plain/c.6.0"))
  expect_false(st$exists("nope.json"))
  expect_error(st$set("k", as.raw(1:3)), class = "zarr_error_read_only")
  expect_error(st$set_if_not_exists("k", as.raw(1:3)), class = "zarr_error_read_only")
  expect_error(st$erase("plain/c.0.0"), class = "zarr_error_read_only")
  expect_error(st$erase_prefix("plain/"), class = "zarr_error_read_only")
  expect_error(st$create_group("/", "g"), class = "zarr_error_read_only")
  expect_error(st$create_array("/", "b", define_array("int32", 3)), class = "zarr_error_read_only")
  # nothing was written, and no other method than GET was used
  expect_identical(st$get("plain/c.0.0"), local_bytes("plain/c.0.0"))
  expect_false(file.exists(local_key("k")))
  expect_clean_requests(srv$stats())
  # read-only through the zarr object too
  z <- open_zarr(srv$url_of("data.zarr"))
  expect_error(z[["/one"]]$write(matrix(0, 5, 4)), class = "zarr_error_read_only")
  expect_error(z$add_group("/", "g"), class = "zarr_error_read_only")
})

test_that("zarr_httpstore lists the children of a store with consolidated metadata", {
  skip_without_fixtures()
  srv <- fresh_server()
  for (s in c("zarr-python/v2.zarr", "zarr-python/v3.zarr/consolidated")) {
    st <- zarr_httpstore$new(srv$url_of(file.path("fixtures", s)))
    local <- file.path(fixtures_dir(), s)
    kids <- basename(list.dirs(local, recursive = FALSE))
    expect_gt(length(kids), 2L)
    got <- st$list_dir("")
    expect_true(all(kids %in% got), info = s)
    expect_false(any(grepl("/", got, fixed = TRUE)), info = s)
  }
  expect_clean_requests(srv$stats())
})
