# Issue 28 item 5: the other edges.

test_that("add_codec() that cannot apply a codec is an error, the builder unchanged", {
  d <- define_array("int32", c(6, 4))
  before <- d$codec_info$name
  expect_error(d$add_codec("gzip", list(level = 3), .position = 1), class = "zarr_error_codec",
               regexp = "gzip")
  expect_error(d$add_codec("zstd", list(level = 23)), class = "zarr_error_codec")
  expect_identical(d$codec_info$name, before)
})

test_that("an HTTP store without consolidated metadata prints its URL and no false 'Arrays : 0'", {
  skip_without_http_server()
  root <- tempfile("zarr-edges-")
  dir.create(root)
  on.exit(unlink(root, recursive = TRUE), add = TRUE)
  z <- create_zarr(file.path(root, "s.zarr"))
  z$add_array("/", "a", define_array("int32", 4))$write(1:4)
  srv <- http_server(root)
  url <- srv$url_of("s.zarr")
  out <- withr::with_options(list(cli.num_colors = 1), capture.output(print(suppressMessages(open_zarr(url)))))
  expect_true(any(grepl(url, out, fixed = TRUE)))
  expect_false(any(grepl("Arrays *: *0", out)))
  expect_true(any(grepl("Arrays *: *unknown", out)))
  # the array is still reachable by its path
  expect_identical(suppressMessages(open_zarr(url))[["/a"]]$read(), 1:4)
  # secrets in the location are not printed
  secret <- sub("://", "://user:hunter2@", url, fixed = TRUE)
  out <- capture.output(print(suppressMessages(open_zarr(secret))))
  expect_false(any(grepl("hunter2", out, fixed = TRUE)))
  expect_true(any(grepl("***", out, fixed = TRUE)))
})

test_that("a memory store still prints its counts", {
  z <- create_zarr()
  z$add_array("/", "a", define_array("int32", 4))
  out <- capture.output(print(z))
  expect_true(any(grepl("Arrays *: *1", out)))
})

test_that("zarr_delayed() on an AnnData sparse group points to read_anndata()", {
  skip_if_not_installed("DelayedArray")
  path <- tempfile(fileext = ".zarr")
  on.exit(unlink(path, recursive = TRUE), add = TRUE)
  z <- create_zarr(path)
  z$add_group("/", "X")
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": [2, 3]}}',
             file.path(path, "X", "zarr.json"))
  z <- open_zarr(path, read_only = TRUE)
  expect_error(zarr_delayed(z, "/X"), class = "zarr_error_argument", regexp = "read_anndata\\(\\)")
  expect_error(zarr_delayed(path, "X"), regexp = "csr_matrix")
  # a plain group is still "no array there"
  z2 <- create_zarr()
  z2$add_group("/", "g")
  expect_error(zarr_delayed(z2, "/g"), class = "zarr_error_not_found")
})

test_that("set_attributes() sets several attributes at once, checking every name first", {
  path <- tempfile(fileext = ".zarr")
  on.exit(unlink(path, recursive = TRUE), add = TRUE)
  z <- create_zarr(path)
  a <- z$add_array("/", "a", define_array("int32", 3))
  a$set_attributes(list(units = "m", long_name = "depth", standard_name = "depth", valid = c(0, 10)))
  back <- open_zarr(path, read_only = TRUE)[["/a"]]$attributes
  expect_identical(back$units, "m")
  expect_identical(back$long_name, "depth")
  expect_identical(back$standard_name, "depth")
  expect_equal(unlist(back$valid), c(0, 10))
  # a bad name anywhere: nothing is set
  expect_error(a$set_attributes(list(title = "x", `bad name` = 1)), class = "zarr_error_argument")
  expect_null(a$attributes$title)
  expect_error(a$set_attributes(list(1, 2)), class = "zarr_error_argument")
  # set_attribute() is unchanged, paths included
  a$set_attribute("meta/x", 1L)
  expect_identical(a$attributes$meta$x, 1L)
  expect_error(a$set_attribute(c("a", "b"), 1), class = "zarr_error_argument")
  expect_error(open_zarr(path, read_only = TRUE)[["/a"]]$set_attributes(list(u = 1)), class = "zarr_error_read_only")
})

test_that("a group of an HTTP store that cannot list prints its children as unknown, not as none", {
  skip_without_http_server()
  root <- tempfile("zarr-edges-")
  dir.create(root)
  on.exit(unlink(root, recursive = TRUE), add = TRUE)
  z <- create_zarr(file.path(root, "s.zarr"))
  g <- z$add_group("/", "g")
  g$add_array("a", define_array("int32", 4))$write(1:4)
  srv <- http_server(root)
  h <- open_zarr(srv$url_of("s.zarr"))
  out <- capture.output(print(h[["/g"]]))
  expect_false(any(grepl("0 group\\(s\\), 0 array\\(s\\)$", out)))
  expect_true(any(grepl("unknown (the store cannot list keys; 0 group(s), 0 array(s) opened by path)", out, fixed = TRUE)))
  expect_identical(h[["/g/a"]]$read(), 1:4)
  out <- capture.output(print(h[["/g"]]))
  expect_true(any(grepl("0 group(s), 1 array(s) opened by path", out, fixed = TRUE)))
  # a store that lists still counts
  out <- capture.output(print(z[["/g"]]))
  expect_true(any(grepl("Children *: *0 group\\(s\\), 1 array\\(s\\)$", out)))
})

test_that("a node subclass must declare its private fields, as the extending vignette says", {
  make <- function(priv) R6::R6Class("edge_array", inherit = zarr_array, cloneable = FALSE,
    private = priv,
    public = list(remember = function() {
      private$.cache <- self$shape
      invisible(self)
    }))
  z <- create_zarr()
  a <- z$add_array("/", "a", define_array("int32", 4))
  undeclared <- make(list())$new("a", a$metadata, z$root, z$store)
  expect_error(undeclared$remember(), "locked")
  declared <- make(list(.cache = NULL))$new("a", a$metadata, z$root, z$store)
  expect_identical(declared$remember()$.__enclos_env__$private$.cache, 4L)
})
