# The per-call work of a read (issue 27): options read in one C call, the
# CF encoding kept per array, plain runs recognised in C. Whatever is kept
# between calls must follow changes made between them.

bit64_or_double <- function(x) if (requireNamespace("bit64", quietly = TRUE)) bit64::as.integer64(x) else x

local_small_array <- function(env = parent.frame()) {
  path <- withr::local_tempfile(fileext = ".zarr", .local_envir = env)
  d <- define_array("float64", c(6, 5))
  d$chunk_shape <- c(3, 5)
  a <- create_zarr(path)$add_array("/", "a", d)
  a[1:3, ] <- matrix(as.double(1:15), 3, 5) # the second chunk is never written
  list(path = path, a = a)
}

test_that("options changed between reads of one array take effect", {
  s <- local_small_array()
  a <- s$a
  withr::local_options(zarr.missing_chunks = NULL)
  expect_identical(a[4, 1], NaN)
  expect_identical(a[4, 1, fill_as_na = TRUE], NaN)
  withr::local_options(zarr.fill_as_na = FALSE)
  expect_identical(a[4:5, 2], c(NaN, NaN))
  withr::local_options(zarr.missing_chunks = "error")
  expect_error(a[4, 1], class = "zarr_error")
  expect_identical(a[1:2, 1], c(1, 2)) # a written chunk still reads
  withr::local_options(zarr.missing_chunks = "bad")
  expect_error(a[1, 1], class = "zarr_error_argument")
  withr::local_options(zarr.missing_chunks = "fill", zarr.num_threads = "two")
  expect_identical(a[1, 1], 1) # a count R coerces: no error, as before
  withr::local_options(zarr.num_threads = 2L, zarr.range_gap = -1)
  expect_error(a[1, 1], "zarr.range_gap", class = "zarr_error_argument")
  withr::local_options(zarr.range_gap = 10L) # integers: coerced in R
  expect_identical(a[1:3, 2], c(4, 5, 6))
})

test_that("plain runs and scalar indices read what base R gives", {
  s <- local_small_array()
  a <- s$a
  m <- matrix(as.double(1:15), 3, 5)
  expect_identical(a[2:3, 4], m[2:3, 4])
  expect_identical(a[2, 4], m[2, 4])
  expect_identical(a[c(2, 3), c(4, 5)], m[2:3, 4:5])
  expect_identical(a[2L:3L, 4L:5L, drop = FALSE], m[2:3, 4:5, drop = FALSE])
  expect_identical(a[1.9, 2], m[1, 2]) # truncated, as base R does
  expect_identical(a[c(3, 2), 1], m[c(3, 2), 1])
  expect_identical(a[c(1, NA), 1], c(1, NA))
  expect_identical(a[-1, 5][1:2], m[-1, 5])
  expect_error(a[3:7, 1], class = "zarr_error_index")
  expect_identical(a[0:2, 1], m[0:2, 1])
  expect_identical(a[bit64_or_double(2), 1], m[2, 1])
})

test_that("the CF encoding follows attributes and options changed between reads", {
  s <- local_small_array()
  a <- s$a
  expect_identical(a[1, 1:2], c(1, 4))
  a$set_attribute("scale_factor", 10)
  expect_identical(a[1, 1:2], c(10, 40))
  expect_identical(a[1, 1:2, decode = FALSE], c(1, 4))
  withr::with_options(list(zarr.decode_cf = FALSE), expect_identical(a[1, 1:2], c(1, 4)))
  a$set_attribute("add_offset", 1)
  expect_identical(a[1, 1:2], c(11, 41))
  a$set_attribute("valid_max", 2)
  expect_identical(a[1, 1:2], c(11, 41))
  withr::with_options(list(zarr.decode_valid_range = TRUE), expect_identical(a[1, 1:2], c(11, NA)))
  expect_identical(a[1, 1:2, decode = list(valid_range = TRUE)], c(11, NA))
  expect_error(a[1, 1, decode = list(nonsense = 1)], class = "zarr_error_argument")
  a$delete_attribute("scale_factor")
  a$delete_attribute("add_offset")
  a$delete_attribute("valid_max")
  expect_identical(a[1, 1:2], c(1, 4))
  expect_error(a[1, 1, decode = list(nonsense = 1)], class = "zarr_error_argument")
  # the same store opened again sees the attributes as written
  b <- open_zarr(s$path)[["/a"]]
  expect_identical(b[1, 1:2], c(1, 4))
})

test_that("dimnames and progress options are read on every call", {
  s <- local_small_array()
  a <- s$a
  a$dimension_names <- c("y", "x")
  withr::local_options(zarr.dimnames = FALSE)
  expect_null(dimnames(a[1:2, 1:2]))
  withr::local_options(zarr.dimnames = TRUE)
  expect_identical(names(dimnames(a[1:2, 1:2])), c("y", "x"))
  skip_if_not_installed("cli")
  withr::local_options(zarr.progress = TRUE, zarr.progress_after = 0, zarr.progress_min_bytes = 1e9,
                       cli.dynamic = FALSE, cli.progress_show_after = 0)
  before <- zarr:::progress_state$reports
  invisible(a[1:3, 1:5])
  expect_identical(zarr:::progress_state$reports, before) # below the threshold: no bar
  withr::local_options(zarr.progress_min_bytes = 0)
  capture.output(invisible(a[1:3, 1:5]), type = "message")
  expect_gt(zarr:::progress_state$reports, before)
})

test_that("the first read of a freshly opened array reads what later ones do", {
  s <- local_small_array()
  for (k in 1:3) {
    b <- open_zarr(s$path)[["/a"]]
    expect_identical(b[2, 3], 8)
    expect_identical(b[2, 3], 8)
    expect_identical(b$chunking$chunk_shape, c(3, 5))
  }
})

test_that("`[` goes through read() of a class derived from zarr_array that has its own", {
  shifted <- R6::R6Class("shifted_array", inherit = zarr_array, cloneable = FALSE,
    public = list(read = function(...) super$read(...) + 1000))
  dom <- R6::R6Class("shifted_domain", inherit = zarr_domain, cloneable = FALSE,
    public = list(
      initialize = function() super$initialize("test-shifted"),
      build = function(name, metadata, parent) {
        if (identical(metadata$node_type, "array")) shifted$new(name, metadata, parent) else FALSE
      }))
  zarr_register_domain(dom$new())
  on.exit(zarr_unregister_domain("test-shifted"))
  s <- local_small_array()
  b <- open_zarr(s$path)[["/a"]]
  expect_s3_class(b, "shifted_array")
  expect_identical(b[1:2, 1], c(1001, 1002))
  expect_identical(b[1:2, 1], c(1001, 1002))
  expect_identical(b[2, 3], 1008)
})
