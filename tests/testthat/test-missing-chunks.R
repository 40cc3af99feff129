# zarr.missing_chunks = "error": a read that needs a chunk the store does not
# hold fails with a zarr_error_missing_chunk naming the array and the key, as
# zarr-python's read_missing_chunks = False does; the default reads the fill
# value.

test_that("an absent chunk reads as the fill value, or fails when asked to", {
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("int32", c(4, 6))
  b$chunk_shape <- c(2, 3)
  b$fill_value <- -1L
  a <- z$add_array("/", "x", b)
  a[1:2, 1:3] <- matrix(1:6, 2)
  a[3:4, 4:6] <- matrix(7:12, 2)
  expect_identical(a[1, 4], NA_integer_) # the default: the fill value (marks NA)
  withr::local_options(zarr.missing_chunks = "error")
  expect_identical(a[1:2, 1:3], matrix(1:6, 2)) # chunks that exist read as before
  e <- expect_error(a[1, 4], class = "zarr_error_missing_chunk")
  expect_identical(e$array, "/x")
  expect_match(e$key, "c.0.1$")
  expect_match(conditionMessage(e), "missing", fixed = TRUE)
  expect_error(a[], class = "zarr_error_missing_chunk")
  expect_error(open_zarr(path)[["/x"]][3, 1], class = "zarr_error_missing_chunk")
  # a write to part of an absent chunk still merges with the fill value
  a[1, 4] <- 99L
  expect_identical(a[1:2, 4:6], matrix(c(99L, NA, NA, NA, NA, NA), 2))
  # the chunk cache does not hide an absent chunk
  withr::local_options(zarr.missing_chunks = "fill")
  expect_identical(a[3, 2], NA_integer_)
  withr::local_options(zarr.missing_chunks = "error")
  expect_error(a[3, 2], class = "zarr_error_missing_chunk")
})

test_that("a missing shard is an error too, and zarr_options() knows the option", {
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("float64", 8)
  b$chunk_shape <- 4
  b$add_codec("sharding_indexed", list(chunk_shape = 2))
  a <- z$add_array("/", "s", b)
  a[1:4] <- c(1, 2, 3, 4)
  withr::local_options(zarr.missing_chunks = "error")
  expect_identical(a[2:3], c(2, 3))
  expect_error(a[5], class = "zarr_error_missing_chunk")
  expect_identical(zarr_options("missing_chunks"), "error")
  withr::local_options(zarr.missing_chunks = "sometimes")
  expect_error(a[1], class = "zarr_error_argument")
})

test_that("zarr-python 2 arrays with chunks left out fail the same way", {
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numpy as np
z = zarr.open(sys.argv[1], mode="w", shape=(6,), chunks=(2,), dtype="<f8", fill_value=0)
z[0:2] = [1, 2]
z[4:6] = [5, 6]
emit(None)
', path)
  a <- open_zarr(path)[["/"]]
  expect_identical(a[], c(1, 2, 0, 0, 5, 6))
  withr::local_options(zarr.missing_chunks = "error")
  e <- expect_error(a[], class = "zarr_error_missing_chunk")
  expect_identical(e$key, "1")
})
