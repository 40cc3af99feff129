# Hostile servers (issue 19, defects 7 and 8): against the local HTTP test
# server (tools/testserver/server.js), every remote body is bounded, bytes
# are taken as the server sends them, signed requests never follow a
# redirect, and credentials never follow one to another host.
#
# "Another host" is localhost where the store is on 127.0.0.1: the same
# server, reached under a different host name, which is what libcurl
# compares.

hostile_env <- new.env()

# A server whose root holds:
#   bomb.gz       a gzip file of 20 MB of zeros (about 20 kB)
#   big.bin       4 MB of bytes
#   gz.zarr       a v3 array /a (int32 100 x 100, chunks 50 x 50, gzip codec)
#   bkt/s/blob    an object of the bucket "bkt" under the prefix "s"
hostile_server <- function(env = parent.frame()) {
  skip_without_http_server()
  dir <- withr::local_tempdir(.local_envir = env)
  con <- gzfile(file.path(dir, "bomb.gz"), "wb")
  for (i in 1:20) writeBin(raw(1e6), con)
  close(con)
  set.seed(19)
  writeBin(as.raw(sample(0:255, 4e6, TRUE)), file.path(dir, "big.bin"))
  z <- create_zarr(file.path(dir, "gz.zarr"))
  x <- matrix(seq_len(1e4), 100, 100)
  d <- define_array("int32", c(100, 100))
  d$chunk_shape <- c(50, 50)
  d$remove_codec("zstd")
  d$add_codec("gzip")
  z$add_array("/", "a", d)$write(x)
  dir.create(file.path(dir, "bkt", "s"), recursive = TRUE)
  writeBin(charToRaw("hello"), file.path(dir, "bkt", "s", "blob"))
  srv <- http_server(dir, env = env)
  list(srv = srv, dir = dir, x = x)
}

file_bytes <- function(path) readBin(path, "raw", file.size(path))

test_that("a Content-Encoding is never decoded: a gzip bomb arrives as its 20 kB", {
  local_fast_retries(1L)
  h <- hostile_server()
  st <- zarr_httpstore$new(h$srv$url_of("", profile = "encoding=gzip"))
  v <- st$get("bomb.gz")
  expect_identical(v, file_bytes(file.path(h$dir, "bomb.gz")))
  expect_lt(length(v), 1e6)
  log <- h$srv$stats()$log
  expect_true("encoding" %in% log$fault)
  expect_true(all(is.na(log$acceptencoding))) # no Accept-Encoding asks for a coding
  # no Accept-Encoding was asked for, and chunks whose bytes the server
  # labels gzip are decoded once, by their codec
  z <- open_zarr(h$srv$url_of("gz.zarr", profile = "encoding=gzip"))
  expect_identical(z[["/a"]][, ], h$x)
  # a range of the bomb is that range of the stored bytes
  expect_identical(st$get("bomb.gz", byte_range = c(10, 30)), file_bytes(file.path(h$dir, "bomb.gz"))[11:30])
})

test_that("a body of unknown length stops at zarr.max_body_bytes with a zarr_error_http naming the URL", {
  local_fast_retries(3L)
  withr::local_options(list(zarr.max_body_bytes = 1e6))
  h <- hostile_server()
  st <- zarr_httpstore$new(h$srv$url_of(""))
  h$srv$default("only=big%5C.bin,endless=0")
  t0 <- proc.time()[["elapsed"]]
  err <- expect_error(st$get("big.bin"), class = "zarr_error_http")
  expect_lt(proc.time()[["elapsed"]] - t0, 20)
  expect_match(conditionMessage(err), "zarr.max_body_bytes", fixed = TRUE)
  expect_match(conditionMessage(err), paste0(h$srv$url, "/big.bin"), fixed = TRUE)
  expect_match(conditionMessage(err), "after 1 attempt", fixed = TRUE) # the same body again would not help
  log <- h$srv$stats()$log
  expect_identical(sum(endsWith(log$path, "/big.bin")), 1L)
  # a Content-Length above the limit is refused at once
  h$srv$reset()
  h$srv$default("only=big%5C.bin,endless=100000000000")
  err <- expect_error(st$get("big.bin"), class = "zarr_error_http")
  expect_match(conditionMessage(err), "zarr.max_body_bytes", fixed = TRUE)
  # a whole value below the limit is fine; above it, not even a real file
  h$srv$default(NULL)
  withr::local_options(list(zarr.max_body_bytes = 5e6))
  expect_identical(st$get("big.bin"), file_bytes(file.path(h$dir, "big.bin")))
  withr::local_options(list(zarr.max_body_bytes = 1e6))
  expect_error(st$get("big.bin"), class = "zarr_error_http")
  # ranges are bounded by what they ask for, not by the option
  expect_identical(st$get("big.bin", byte_range = c(0, 2e6)), file_bytes(file.path(h$dir, "big.bin"))[1:2e6])
  expect_error(zarr_options(max_body_bytes = 0))
})

test_that("a 206 body longer or shorter than the range asked for is an error, after retries", {
  local_fast_retries(2L)
  h <- hostile_server()
  want <- file_bytes(file.path(h$dir, "big.bin"))
  for (p in c("overlong=1000", "short=10")) {
    st <- zarr_httpstore$new(h$srv$url_of("", profile = p))
    h$srv$reset()
    err <- expect_error(st$get("big.bin", byte_range = c(100, 50100)), class = "zarr_error_http", info = p)
    expect_match(conditionMessage(err), "range bytes=100-50099", fixed = TRUE, info = p)
    expect_match(conditionMessage(err), if (p == "short=10") "promised" else "longer than the 50000 bytes",
                 fixed = TRUE, info = p)
    expect_match(conditionMessage(err), "after 3 attempts", fixed = TRUE, info = p)
    expect_equal(sum(h$srv$stats()$log$path == sprintf("/%s/big.bin", p)), 3)
  }
  # an over-long answer to a suffix range too
  st <- zarr_httpstore$new(h$srv$url_of("", profile = "overlong=5"))
  expect_error(st$get("big.bin", byte_range = -100), class = "zarr_error_http")
})

test_that("a server that ignores Range: the range is cut out of the whole value as it arrives", {
  withr::local_options(list(zarr.max_body_bytes = 1e6)) # less than the whole value: only the range is kept
  h <- hostile_server()
  want <- file_bytes(file.path(h$dir, "big.bin"))
  st <- zarr_httpstore$new(h$srv$url_of("", profile = "norange=1"))
  expect_identical(st$get("big.bin", byte_range = c(1000, 1100)), want[1001:1100])
  expect_identical(st$get("big.bin", byte_range = 3999990), want[3999991:4e6])
  expect_identical(st$get("big.bin", byte_range = -7), want[(4e6 - 6):4e6])
  expect_identical(st$get("big.bin", byte_range = c(4e6 - 3, 5e6)), want[(4e6 - 2):4e6])
  log <- h$srv$stats()$log
  expect_true(all(log$status[log$path == "/norange=1/big.bin"] == 200))
  # the whole of an array read that way is right too
  z <- open_zarr(h$srv$url_of("gz.zarr", profile = "norange=1"))
  expect_identical(z[["/a"]][3:70, 90:100], h$x[3:70, 90:100])
})

test_that("redirects: followed to another host without the URL's password, never to other schemes", {
  local_fast_retries(1L)
  h <- hostile_server()
  port <- h$srv$port
  to <- utils::URLencode(sprintf("http://localhost:%d", port), reserved = TRUE)
  u <- sprintf("http://alice:s3cr3t-pw@127.0.0.1:%d/redirect=%s/gz.zarr", port, to)
  z <- open_zarr(u)
  expect_identical(z[["/a"]][, ], h$x)
  log <- h$srv$stats()$log
  first <- startsWith(log$host, "127.0.0.1")
  expect_true(any(first) && any(!first))
  expect_true(all(log$auth[first]))          # the password went to its own host
  expect_false(any(log$auth[!first]))        # and not to the other one
  expect_true(all(startsWith(log$host[!first], "localhost")))
  # other schemes are refused, whatever the server says
  for (target in c("file:///etc", "ftp://127.0.0.1:1", "gopher://127.0.0.1:1")) {
    u <- h$srv$url_of("", profile = paste0("redirect=", utils::URLencode(target, reserved = TRUE)))
    err <- expect_error(zarr_httpstore$new(u), class = "zarr_error_http", info = target)
    expect_match(conditionMessage(err), "not supported or disabled", fixed = TRUE, info = target)
  }
})

test_that("signed S3 requests never follow a redirect: a classed error names the redacted URL", {
  local_fast_retries(2L)
  h <- hostile_server()
  port <- h$srv$port
  st <- zarr_s3store$new("bkt", "s", endpoint = h$srv$url, access_key = "AKIDHOSTILE",
                         secret_key = "hostile/Secret+Key", session_token = "HOSTILE-SESSION-TOKEN",
                         read_only = TRUE)
  expect_identical(st$get("blob"), charToRaw("hello")) # the server serves it at bkt/s/blob
  h$srv$reset()
  h$srv$default(paste0("redirect=", utils::URLencode(sprintf("http://localhost:%d", port), reserved = TRUE)))
  err <- expect_error(st$get("blob"), class = "zarr_error_http")
  msg <- conditionMessage(err)
  expect_match(msg, "HTTP 302", fixed = TRUE)
  expect_match(msg, "does not follow redirects", fixed = TRUE)
  expect_match(msg, sprintf("%s/bkt/s/blob", h$srv$url), fixed = TRUE)
  expect_match(msg, "after 1 attempt", fixed = TRUE)
  for (secret in c("hostile/Secret+Key", "HOSTILE-SESSION-TOKEN")) expect_false(grepl(secret, msg, fixed = TRUE))
  log <- h$srv$stats()$log
  expect_identical(nrow(log), 1L)            # nothing went to localhost
  expect_true(startsWith(log$host, "127.0.0.1"))
  expect_true(log$amztoken && log$auth)      # what would have followed
  # a listing is a signed request too
  expect_error(st$list_prefix(""), class = "zarr_error_http")
  expect_false(any(startsWith(h$srv$stats()$log$host, "localhost")))
  # an anonymous store carries no credentials: it may follow
  h$srv$default(NULL)
  anon <- zarr_s3store$new("bkt", "s", endpoint = h$srv$url, anonymous = TRUE, read_only = TRUE)
  h$srv$reset()
  h$srv$default(paste0("redirect=", utils::URLencode(sprintf("http://localhost:%d", port), reserved = TRUE)))
  expect_error(anon$get("blob"), class = "zarr_error_http") # localhost is redirected again, and again ...
  log <- h$srv$stats()$log
  expect_true(any(startsWith(log$host, "localhost")))
  expect_false(any(log$amztoken | log$auth))
})

test_that("an HTTP array prints its stored size as unknown (not 0 B), without a request", {
  h <- hostile_server()
  a <- open_zarr(h$srv$url_of("gz.zarr"))[["/a"]]
  h$srv$reset()
  msgs <- character()
  out <- utils::capture.output(withCallingHandlers(print(a), message = function(m) {
    msgs <<- c(msgs, conditionMessage(m))
    invokeRestart("muffleMessage")
  }))
  out <- c(out, unlist(strsplit(msgs, "\n")))
  expect_true(any(grepl("^Stored\\s*:\\s*unknown", trimws(gsub("\u00a0", " ", out)))))
  expect_false(any(grepl("0 B", out, fixed = TRUE)))
  expect_equal(h$srv$stats()$requests, 0)
})
