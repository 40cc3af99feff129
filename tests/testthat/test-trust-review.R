# Defects found by the review of issue 19's areas (data loss, secrets, wrong
# results, hostile input), one regression test each.

test_that("a DelayedArray seed of an HTTP array with secrets shows none (show(), path())", {
  skip_if_not_installed("DelayedArray")
  skip_without_http_server()
  dir <- withr::local_tempdir()
  z <- create_zarr(file.path(dir, "s.zarr"))
  d <- define_array("int32", c(4, 4))
  d$chunk_shape <- c(2, 2)
  z$add_array("/", "a", d)$write(matrix(1:16, 4))
  srv <- http_server(dir)
  url <- paste0(sub("^http://", "http://alice:PW-SECRET@", srv$url_of("s.zarr")), "?X-Amz-Signature=SIG-SECRET")
  x <- zarr_delayed(open_zarr(url)[["/a"]])
  shown <- c(utils::capture.output(methods::show(x@seed)), DelayedArray::path(x@seed), DelayedArray::path(x))
  expect_false(any(grepl("PW-SECRET|SIG-SECRET", shown)))
  expect_true(any(grepl("***", shown, fixed = TRUE)))
  # the seed still reads through the real URL
  expect_identical(as.matrix(x), matrix(1:16, 4))
})
