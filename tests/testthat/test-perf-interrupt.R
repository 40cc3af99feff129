# A user interrupt (Ctrl-C: SIGINT) stops a read or write promptly at every
# stage: while the result's memory is pre-faulted, while chunks are decoded
# or encoded on the worker threads, while remote requests are under way. It
# surfaces as a zarr_error_interrupted that is also an R "interrupt", and a
# write stopped so leaves no torn chunk. Each case runs in a child R process
# (helper-interrupt.R); the bounds are generous (2 s) on a loaded machine.

skip_interrupts <- function() {
  skip_on_cran()
  skip_on_os("windows")
  skip_if_not_installed("processx")
}

# An interrupt that lands in R code before the call reaches C (a loaded
# machine) is R's own: try again, later in the call; a call that ended
# before the interrupt came (an idle machine): try again, sooner.
interrupt_in_c <- function(setup, call, delay, ...) {
  d <- delay
  for (k in 1:4) {
    res <- interrupt_child(setup, call, d, ...)
    if (identical(res$class, "finished")) d <- d / 3
    else if (identical(res$class, c("interrupt", "condition"))) d <- d * 2
    else break
  }
  res
}

expect_interrupted <- function(res) {
  if (!"interrupt" %in% res$class) print(res[c("class", "output", "error")])
  expect_true(all(c("zarr_error_interrupted", "zarr_error", "interrupt") %in% res$class))
  expect_lt(res$latency, 2)
}

big_fill_read <- sprintf(paste(
  "z <- create_zarr(tempfile())",
  "d <- define_array('float64', c(%d, 10000)); d$chunk_shape <- c(1000, 1000)",
  "a <- z$add_array('/', 'f', d)", sep = "; "), 12000)

test_that("a read is interrupted while its result is pre-faulted, and while chunks are decoded", {
  skip_interrupts()
  # ~1 GB of fill values: pre-faulting it takes seconds here
  res <- interrupt_in_c(big_fill_read, "x <- a[]", delay = 0.3)
  expect_interrupted(res)
  # without pre-faulting: the workers copying (reversed rows, element by element)
  res <- interrupt_in_c(big_fill_read, "x <- a[rev(seq_len(12000)), ]", delay = 0.3,
                         env = c(ZARR_NO_PREFAULT = "1"))
  expect_interrupted(res)
  # R frees the result: the session goes on (a second read in the same child)
  res <- interrupt_in_c(big_fill_read, "x <- a[]", delay = 0.3,
                         after = "r <- paste(r, length(a[1:2, 1:2]) == 4L)")
  expect_true(grepl("TRUE", res$output))
})

test_that("a write is interrupted while chunks are encoded, and leaves no torn chunk", {
  skip_interrupts()
  path <- local_store_path()
  setup <- paste(sprintf("path <- '%s'", path),
                 "z <- create_zarr(path)",
                 "d <- define_array('float64', c(2000, 3000)); d$chunk_shape <- c(500, 500)",
                 "d$remove_codec('zstd'); d$add_codec('gzip', list(level = 9))",
                 "a <- z$add_array('/', 'w', d)",
                 "set.seed(1); v <- matrix(round(runif(6e6), 3), 2000, 3000)", sep = "; ")
  res <- interrupt_in_c(setup, "a[] <- v", delay = 0.6)
  expect_interrupted(res)
  set.seed(1)
  v <- matrix(round(runif(6e6), 3), 2000, 3000)
  a <- open_zarr(path)$root[["w"]]
  got <- a[] # every chunk decodes: none is torn
  expect_length(partial_files(path), 0L)
  written <- 0L
  for (i in 0:3) for (j in 0:5) {
    blk <- got[i * 500 + 1:500, j * 500 + 1:500]
    if (all(is.na(blk))) next
    expect_identical(blk, v[i * 500 + 1:500, j * 500 + 1:500])
    written <- written + 1L
  }
  expect_lt(written, 24L) # it did stop
})

test_that("a remote read is interrupted while its requests are under way", {
  skip_interrupts()
  root <- tempfile("srv")
  dir.create(root)
  on.exit(unlink(root, recursive = TRUE), add = TRUE)
  z <- create_zarr(file.path(root, "r.zarr"))
  d <- define_array("float64", c(800, 800))
  d$chunk_shape <- c(100, 100)
  z$add_array("/", "x", d)$write(matrix(as.numeric(1:640000), 800, 800))
  srv <- http_server(root)
  url <- srv$url_of("r.zarr", profile = "latency=400")
  # 64 chunks, 2 at a time, 0.4 s each: about 13 s uninterrupted
  setup <- sprintf("options(zarr.http_concurrency = 2); a <- open_zarr('%s')$root[['x']]", url)
  res <- interrupt_in_c(setup, "x <- a[]", delay = 1)
  expect_interrupted(res)
})

# A local array of `shape` doubles (gzip at `level`, chunks `chunk`) and its
# values `v`, as the setup of a child.
gzip_write_setup <- function(path, shape, chunk, level, extra = character()) {
  paste(c(sprintf("path <- '%s'", path),
          "z <- create_zarr(path)",
          sprintf("d <- define_array('float64', c(%s)); d$chunk_shape <- c(%s)", toString(shape), toString(chunk)),
          sprintf("d$remove_codec('zstd'); d$add_codec('gzip', list(level = %d))", level),
          "a <- z$add_array('/', 'w', d)",
          sprintf("set.seed(1); v <- matrix(round(runif(%.0f), 3), %d, %d)", prod(shape), shape[1], shape[2]),
          extra), collapse = "; ")
}

test_that("a write of one large gzip chunk stops within the chunk and leaves nothing behind", {
  skip_interrupts()
  path <- local_store_path()
  # 48 MB as one chunk at gzip 9: about ten seconds of one codec call
  setup <- gzip_write_setup(path, c(2000, 3000), c(2000, 3000), 9L)
  res <- interrupt_in_c(setup, "a[] <- v", delay = 0.5,
                        after = "r <- paste(r, length(a[1:2, 1:2]) == 4L)")
  expect_interrupted(res)
  expect_true(grepl("TRUE", res$output)) # the session reads the array afterwards
  expect_lt(res$ran, 5) # it stopped in the chunk, not after it
  expect_length(partial_files(path), 0L)
  expect_setequal(list.files(file.path(path, "w"), recursive = TRUE, all.files = TRUE), "zarr.json")
})

test_that("a write on one thread is interrupted between and within chunks", {
  skip_interrupts()
  path <- local_store_path()
  setup <- gzip_write_setup(path, c(2000, 3000), c(500, 500), 9L, "options(zarr.num_threads = 1)")
  res <- interrupt_in_c(setup, "a[] <- v", delay = 0.6)
  expect_interrupted(res)
  set.seed(1)
  v <- matrix(round(runif(6e6), 3), 2000, 3000)
  got <- open_zarr(path)$root[["w"]][] # every chunk decodes: none is torn
  expect_length(partial_files(path), 0L)
  kept <- !is.na(got)
  expect_identical(got[kept], v[kept])
  expect_lt(sum(kept), length(v)) # it did stop
})

test_that("integers written to a floating-point array are widened in C, and an interrupt stops that write", {
  path <- local_store_path()
  z <- create_zarr(path)
  for (dt in c("float64", "float32", "float16")) {
    a <- z$add_array("/", dt, define_array(dt, c(2e6)))
    x <- sample.int(1000L, 2e6, TRUE)
    x[c(1, 77, 2e6)] <- NA
    a[] <- x
    expect_identical(a[], as.double(x))
    l <- rep(c(TRUE, NA, FALSE), length.out = 2e6)
    a[] <- l
    expect_identical(a[], as.double(l))
    a[2:3] <- c(7L, NA)
    expect_identical(a[1:4], c(1, 7, NA, 1))
  }
  skip_interrupts()
  setup <- paste(sprintf("z <- create_zarr('%s')", local_store_path()),
                 "d <- define_array('float64', c(4000, 4000)); d$remove_codec('zstd'); d$add_codec('gzip', list(level = 5))",
                 "a <- z$add_array('/', 'w', d)",
                 "v <- matrix(sample.int(1e6, 16e6, TRUE), 4000, 4000)", sep = "; ")
  res <- interrupt_in_c(setup, "a[] <- v", delay = 0.3)
  expect_interrupted(res)
})
