# zarr_map_blocks(): per-block functions in this session and on mirai
# daemons (local processes on this machine), over local, HTTP and S3 stores;
# zarr_chunk_blocks() and region writes of whole chunks.

# Two mirai daemons for the calling test, always reset afterwards. Servers
# must be started before: the daemons inherit the environment (no_proxy,
# the S3 credentials) when they start.
local_daemons <- function(n = 2L, env = parent.frame()) {
  require_or_skip(requireNamespace("mirai", quietly = TRUE), "the mirai package")
  mirai::daemons(n)
  withr::defer(mirai::daemons(0), envir = env)
  # wait until they are connected, so that both take tasks
  deadline <- Sys.time() + 30
  while (mirai::status()$connections < n && Sys.time() < deadline) Sys.sleep(0.1)
  # a daemon that cannot start (mirai not in its library paths) would leave
  # every task waiting for ever
  if (mirai::status()$connections < n) skip("the mirai daemons did not connect within 30 s")
  invisible(n)
}

# One daemon started without R_LIBS, which is how the test suite finds the
# package (a private library): such a daemon does not see the package by
# itself. Skipped where it does anyway, and on CRAN (R CMD check runs with
# libraries of its own).
local_daemon_without_package <- function(env = parent.frame()) {
  skip_on_cran()
  withr::local_envvar(R_LIBS = NA, .local_envir = env)
  local_daemons(1, env = env)
  alone <- mirai::call_mirai(mirai::mirai(requireNamespace("zarr", quietly = TRUE)))$data
  if (!isFALSE(alone)) skip("the daemons find the package without this session's library paths")
}

map_fixture <- function(z, name = "a", shape = c(40, 30), chunk = c(8, 10)) {
  d <- define_array("float64", shape)
  d$chunk_shape <- chunk
  d$dimension_names <- c("y", "x")
  a <- z$add_array("/", name, d)
  x <- array(sin(seq_len(prod(shape))) * 100, shape)
  a$write(x)
  list(a = a, x = x)
}

test_that("zarr_chunk_blocks() splits a selection along the chunk grid", {
  z <- create_zarr()
  f <- map_fixture(z)
  b <- zarr_chunk_blocks(f$a)
  expect_equal(b$grid, c(5, 3))
  expect_equal(nrow(b$start), 15)
  expect_equal(b$start[1:6, 1], c(1, 9, 17, 25, 33, 1))
  expect_equal(b$end[15, ], c(40, 30))
  expect_true(all(b$whole))
  b <- zarr_chunk_blocks(f$a, list(5:20, NULL))
  expect_equal(unname(cbind(b$start[1:3, 1], b$end[1:3, 1])), cbind(c(5, 9, 17), c(8, 16, 20)))
  expect_equal(b$whole[1:3], c(FALSE, TRUE, FALSE))
  expect_equal(b$block[1:3, 1], c(1, 2, 3))
  # blocks of 2 x 3 chunks; edge chunks count as whole at the array's end
  b <- zarr_chunk_blocks(f$a, block_shape = c(16, 30))
  expect_equal(b$grid, c(3, 1))
  expect_equal(b$end[, 1], c(16, 32, 40))
  expect_true(all(b$whole))
  expect_error(zarr_chunk_blocks(f$a, block_shape = c(12, 30)), class = "zarr_error_argument")
  expect_error(zarr_chunk_blocks(f$a, list(c(1, 3), NULL)), class = "zarr_error_index")
  expect_error(zarr_chunk_blocks(f$a, list(1:50, NULL)), class = "zarr_error_index")
})

test_that("writes of whole chunks never read the chunks they replace", {
  z <- create_zarr(local_store_path())
  f <- map_fixture(z)
  st <- z$store
  delta <- function(expr) {
    before <- st$io_stats()
    force(expr)
    st$io_stats() - before
  }
  # 2 x 2 whole chunks, and the edge row of chunks (also whole)
  expect_equal(delta(f$a$write(matrix(2, 16, 20), list(1:16, 1:20)))[["requests"]], 0)
  expect_equal(delta(f$a$write(matrix(3, 8, 30), list(33:40, NULL)))[["requests"]], 0)
  # rows 2:17 cut the first and third rows of chunks: those 4 chunks are read
  expect_equal(delta(f$a$write(matrix(4, 16, 20), list(2:17, 1:20)))[["requests"]], 4)
  x <- f$x
  x[1:16, 1:20] <- 2
  x[33:40, ] <- 3
  x[2:17, 1:20] <- 4
  expect_identical(unname(f$a[]), x)
})

test_that("a sequential map gives each block its values, indices and names", {
  z <- create_zarr()
  f <- map_fixture(z)
  got <- zarr_map_blocks(f$a, function(v) list(idx = attr(v, "index"), block = attr(v, "block"),
                                               dn = names(dimnames(v)), sum = sum(v)))
  expect_equal(dim(got), c(5, 3))
  expect_equal(got[[2, 3]]$idx, list(y = 9:16, x = 21:30))
  expect_equal(got[[2, 3]]$block, c(2, 3))
  expect_equal(got[[2, 3]]$dn, c("y", "x"))
  expect_equal(got[[2, 3]]$sum, sum(f$x[9:16, 21:30]))
  expect_equal(zarr_map_blocks(f$a, sum, combine = `+`), sum(f$x))
  m <- zarr_map_blocks(f$a, function(v) c(sum(v), length(v)), combine = `+`)
  expect_equal(m[1] / m[2], mean(f$x))
  # extra arguments, and blocks of several chunks
  s <- zarr_map_blocks(f$a, function(v, k) k * max(v), k = 2, block_shape = c(16, 30))
  expect_equal(unlist(s), 2 * c(max(f$x[1:16, ]), max(f$x[17:32, ]), max(f$x[33:40, ])))
})

test_that("the blocks of a sharded array are its shards", {
  z <- create_zarr(local_store_path())
  x <- matrix(as.numeric(1:1600), 40, 40)
  a <- sharded_fixture(z, x)
  got <- zarr_map_blocks(a, function(v) dim(v))
  expect_equal(dim(got), c(2, 2))
  expect_true(all(vapply(got, identical, TRUE, c(20L, 20L))))
  def <- array_builder$new()
  def$data_type <- "float64"
  def$shape <- c(40, 40)
  def$chunk_shape <- c(20, 20)
  def$add_codec("sharding_indexed", list(chunk_shape = c(10, 10)))
  out <- zarr_map_blocks(a, function(v) v / 2, output = def)
  expect_identical(out[], x / 2)
})

test_that("a sequential map writes an output array created from a builder", {
  z <- create_zarr()
  f <- map_fixture(z)
  def <- array_builder$new()
  def$data_type <- "float64"
  out <- zarr_map_blocks(f$a, function(v) v * 2 + attr(v, "block")[1], output = def)
  expect_equal(out$path, "/a_map")
  expect_equal(out$chunking$chunk_shape, c(8, 10))
  expect_equal(unname(out[]), f$x * 2 + (row(f$x) - 1) %/% 8 + 1)
  # given array; list(builder, path)
  def2 <- array_builder$new()
  def2$data_type <- "int32"
  out2 <- zarr_map_blocks(f$a, function(v) round(v), output = list(def2, "/rounded"))
  expect_identical(unname(out2[]), array(as.integer(round(f$x)), dim(f$x)))
  zarr_map_blocks(f$a, function(v) -v, output = out)
  expect_equal(unname(out[]), -f$x)
  expect_error(zarr_map_blocks(f$a, function(v) 1:3, output = out), class = "zarr_error_value")
})

test_that("a failing block is a classed error naming the block", {
  z <- create_zarr()
  f <- map_fixture(z)
  e <- tryCatch(zarr_map_blocks(f$a, function(v) if (identical(attr(v, "block"), c(4, 2))) stop("no good") else 1),
                error = identity)
  expect_s3_class(e, "zarr_error_block")
  expect_match(conditionMessage(e), "block [4, 2] (elements [25:32, 11:20]) of array '/a' failed: no good",
               fixed = TRUE)
  expect_equal(e$block, c(4, 2))
  # the task's own class is kept
  e <- tryCatch(zarr_map_blocks(f$a, function(v) stop(structure(class = c("my_condition", "error", "condition"),
                                                                 list(message = "mine", call = NULL)))),
                error = identity)
  expect_s3_class(e, c("zarr_error_block", "my_condition"))
  expect_s3_class(e$parent, "my_condition")
})

test_that("two mirai daemons reduce a local array like base R", {
  path <- local_store_path()
  z <- create_zarr(path)
  f <- map_fixture(z)
  local_daemons(2)
  expect_true(mirai::daemons_set())
  got <- zarr_map_blocks(f$a, function(v) c(sum = sum(v), n = length(v), pid = Sys.getpid()))
  expect_equal(dim(got), c(5, 3))
  sums <- vapply(got, `[[`, 0, "sum")
  expect_equal(sum(sums), sum(f$x))
  expect_equal(sums[[7]], sum(f$x[9:16, 11:20])) # grid order: block [2, 2]
  pids <- unique(vapply(got, `[[`, 0, "pid"))
  expect_false(Sys.getpid() %in% pids) # run on the daemons, not here
  m <- zarr_map_blocks(f$a, function(v) c(sum(v), length(v)), combine = `+`)
  expect_equal(m[1] / m[2], mean(f$x))
  expect_equal(zarr_map_blocks(f$a, sum, combine = `+`), sum(f$x))
})

test_that("an output array written by two daemons equals the sequential result", {
  path <- local_store_path()
  z <- create_zarr(path)
  f <- map_fixture(z, shape = c(64, 50), chunk = c(8, 10))
  smooth <- function(v) {
    # a 3 x 3 mean inside each block, edges as they are
    r <- v
    n <- nrow(v)
    m <- ncol(v)
    if (n > 2 && m > 2) for (i in 2:(n - 1)) for (j in 2:(m - 1)) r[i, j] <- mean(v[(i - 1):(i + 1), (j - 1):(j + 1)])
    r
  }
  seq_out <- zarr_map_blocks(f$a, smooth, block_shape = c(16, 10), output = list(local({
    b <- array_builder$new(); b$data_type <- "float64"; b
  }), "/sequential"))
  local_daemons(2)
  par_out <- zarr_map_blocks(f$a, smooth, block_shape = c(16, 10), output = list(local({
    b <- array_builder$new(); b$data_type <- "float64"; b
  }), "/parallel"))
  expect_identical(par_out[], seq_out[])
  # another process sees the same values
  expect_identical(open_zarr(path, read_only = TRUE)[["/parallel"]][], seq_out[])
  # output chunks that straddle the blocks would be written by two tasks
  b <- array_builder$new()
  b$data_type <- "float64"
  b$shape <- c(64, 50)
  b$chunk_shape <- c(12, 10)
  expect_error(zarr_map_blocks(f$a, smooth, output = list(b, "/straddling")), class = "zarr_error_argument")
})

test_that("a failing task on a daemon is raised here with its class, and the others are cancelled", {
  path <- local_store_path()
  z <- create_zarr(path)
  f <- map_fixture(z, shape = c(80, 30), chunk = c(4, 10)) # 60 blocks
  local_daemons(2)
  t0 <- Sys.time()
  e <- tryCatch(zarr_map_blocks(f$a, function(v) {
    if (identical(attr(v, "block"), c(1, 1))) zarr:::zarr_abort("value", "bad data here")
    Sys.sleep(0.5)
    1
  }), error = identity)
  took <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
  expect_s3_class(e, c("zarr_error_block", "zarr_error_value"))
  expect_match(conditionMessage(e), "block [1, 1] (elements [1:4, 1:10]) of array '/a' failed: bad data here",
               fixed = TRUE)
  expect_lt(took, 10) # 59 tasks of 0.5 s on 2 daemons would take 15 s
  # the daemons are free again
  expect_equal(zarr_map_blocks(f$a, sum, combine = `+`), sum(f$x))
})

test_that("daemons map over a store served by the HTTP test server", {
  root <- withr::local_tempdir()
  z <- create_zarr(file.path(root, "m.zarr"))
  f <- map_fixture(z)
  srv <- http_server(root) # before the daemons: they inherit no_proxy
  local_daemons(2)
  a <- open_zarr(paste0(srv$url, "/m.zarr"))[["/a"]]
  expect_s3_class(a$store, "zarr_httpstore")
  got <- zarr_map_blocks(a, function(v) c(sum(v), length(v)), combine = `+`)
  expect_equal(got[1], sum(f$x))
  expect_equal(got[1] / got[2], mean(f$x))
  # the daemons fetched the chunks, each once (15 chunks)
  log <- srv$stats()$log
  expect_equal(sum(grepl("/a/c[./][0-9]", log$path)), 15)
})

test_that("daemons map over an S3 store and write their results there", {
  s3 <- s3_server()
  # the daemons find the endpoint and credentials in their environment
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key,
                        AWS_SECRET_ACCESS_KEY = s3$secret, AWS_REGION = "us-east-1"))
  z <- create_zarr("s3://private/mapped")
  f <- map_fixture(z)
  local_daemons(2)
  expect_equal(zarr_map_blocks(f$a, sum, combine = `+`), sum(f$x))
  def <- array_builder$new()
  def$data_type <- "float64"
  out <- zarr_map_blocks(f$a, function(v) v + 1, output = def)
  expect_equal(unname(open_zarr("s3://private/mapped", read_only = TRUE)[["/a_map"]][]), f$x + 1)
})

test_that("without daemons or with a memory store, the map runs in this session", {
  z <- create_zarr()
  f <- map_fixture(z)
  local_daemons(1)
  got <- zarr_map_blocks(f$a, function(v) Sys.getpid())
  expect_true(all(unlist(got) == Sys.getpid()))
})

test_that("an array of a single chunk in a local store maps on daemons", {
  path <- local_store_path()
  z <- create_zarr(path)
  f <- map_fixture(z, shape = c(6, 5), chunk = c(8, 10))
  local_daemons(2)
  got <- zarr_map_blocks(f$a, function(v) c(sum(v), Sys.getpid()))
  expect_length(got, 1L)
  expect_equal(got[[1]][1], sum(f$x))
  expect_false(got[[1]][2] == Sys.getpid())
  expect_equal(zarr_map_blocks(f$a, sum, combine = `+`), sum(f$x))
})

test_that("daemons that cannot find the package by themselves get this session's library paths", {
  f <- map_fixture(create_zarr(local_store_path()))
  local_daemon_without_package()
  got <- zarr_map_blocks(f$a, function(v) c(sum(v), Sys.getpid()))
  expect_equal(sum(vapply(got, `[[`, 0, 1L)), sum(f$x))
  expect_false(any(vapply(got, `[[`, 0, 2L) == Sys.getpid()))
})

test_that("a daemon that cannot load the package fails with a classed error naming what is missing", {
  f <- map_fixture(create_zarr(local_store_path()))
  local_daemon_without_package()
  # the daemon's task, given a library where the package is not
  items <- list(list(i = 1, start = c(1, 1), end = c(8, 10), block = c(1, 1)))
  payload <- serialize(list(src = zarr:::map_location(f$a, "t"), dst = NULL, fun = sum, args = list()), NULL)
  v <- mirai::call_mirai(mirai::mirai(task(items, lib, payload), task = zarr:::map_daemon_task, items = items,
                                      lib = file.path(tempdir(), "no-library-here"), payload = payload))$data
  expect_s3_class(v, "zarr_map_failure")
  e <- expect_error(zarr:::map_raise(v, "/a"), class = "zarr_error_daemon")
  expect_s3_class(e, "zarr_error_block")
  expect_match(conditionMessage(e), "cannot load the zarr package from its library paths", fixed = TRUE)
  expect_match(conditionMessage(e), "there is no package called", fixed = TRUE)
})
