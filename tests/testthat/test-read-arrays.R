# zarr_read_arrays(): many single-chunk arrays that share data type and
# codecs read in one engine call, against reading each array on its own.

ra_array <- function(g, name, dtype, shape, chunk = shape, codecs = NULL, fill = NULL) {
  def <- define_array(dtype, shape)
  def$chunk_shape <- chunk
  for (cd in codecs) def$add_codec(cd$name, cd$configuration)
  if (!is.null(fill)) def$fill_value <- fill
  g$add_array("/", name, def)
}

# the elements of an array in C order (what zarr_read_arrays() returns)
c_order <- function(x) if (is.null(dim(x))) x else as.vector(aperm(x, rev(seq_along(dim(x)))))

test_that("uint8 arrays of different lengths come back as their bytes, absent paths as NULL", {
  set.seed(3)
  z <- create_zarr(withr::local_tempfile(fileext = ".zarr"))
  blosc <- list(list(name = "blosc", configuration = list(cname = "zstd", clevel = 5L, shuffle = "shuffle", typesize = 4L)))
  lens <- c(1000, 1, 70000, 12)
  want <- list()
  for (i in seq_along(lens)) {
    a <- ra_array(z, paste0("b", i), "uint8", lens[i], codecs = blosc)
    a[] <- sample.int(256L, lens[i], TRUE) - 1L
    want[[i]] <- a$read_bytes()
  }
  got <- zarr:::zarr_read_arrays(z$root, c("b1", "b2", "nothing", "b3", "b4"), rtype = "raw")
  expect_identical(got[-3], want)
  expect_null(got[[3]])
  # on several threads and on one
  got1 <- withr::with_options(list(zarr.num_threads = 1L),
                              zarr:::zarr_read_arrays(z$root, c("b3", "b1"), rtype = "raw"))
  expect_identical(got1, want[c(3, 1)])
  expect_identical(zarr:::zarr_read_arrays(z$root, character()), list())
  expect_identical(zarr:::zarr_read_arrays(z$root, "none"), list(NULL))
})

test_that("n-d arrays smaller than their one chunk, big endian, a missing chunk, NA fill", {
  set.seed(4)
  z <- create_zarr(withr::local_tempfile(fileext = ".zarr"))
  big <- list(list(name = "bytes", configuration = list(endian = "big")), list(name = "gzip", configuration = list(level = 1L)))
  shapes <- list(c(3, 4), c(5, 2), c(1, 1))
  want <- list()
  for (i in seq_along(shapes)) {
    a <- ra_array(z, paste0("m", i), "int32", shapes[[i]], chunk = c(5, 4), codecs = big, fill = 7L)
    x <- array(sample(-1000:1000, prod(shapes[[i]])), shapes[[i]])
    a[] <- x
    want[[i]] <- c_order(a[])
  }
  ra_array(z, "m4", "int32", c(2, 3), chunk = c(5, 4), codecs = big, fill = 7L) # never written
  got <- zarr:::zarr_read_arrays(z$root, paste0("m", 1:4))
  expect_identical(got[1:3], want)
  expect_identical(got[[4]], c_order(z[["/m4"]][])) # the fill value, as a read of the array gives it
  expect_identical(withr::with_options(list(zarr.fill_as_na = FALSE), zarr:::zarr_read_arrays(z$root, "m4"))[[1]], rep(7L, 6))
  # float64 whose NaN fill reads as NA where the option says so
  for (i in 1:2) {
    a <- ra_array(z, paste0("f", i), "float64", 4, chunk = 6)
    if (i == 1) a[] <- c(1.5, NA, -2, 1e300)
  }
  got <- zarr:::zarr_read_arrays(z$root, c("f1", "f2"))
  expect_identical(got[[1]], z[["/f1"]][])
  expect_identical(got[[2]], z[["/f2"]][])
})

test_that("arrays that differ in more than their shape, or hold several chunks, are refused", {
  z <- create_zarr(withr::local_tempfile(fileext = ".zarr"))
  ra_array(z, "a", "uint8", 10)
  ra_array(z, "b", "uint8", 10, codecs = list(list(name = "gzip", configuration = list(level = 1L))))
  ra_array(z, "c", "int16", 10)
  ra_array(z, "d", "uint8", 10, chunk = 4)
  z$root$add_group("g")
  expect_error(zarr:::zarr_read_arrays(z$root, c("a", "b"), rtype = "raw"), class = "zarr_error_metadata")
  expect_error(zarr:::zarr_read_arrays(z$root, c("a", "c")), class = "zarr_error_metadata")
  expect_error(zarr:::zarr_read_arrays(z$root, c("a", "d"), rtype = "raw"), class = "zarr_error_value")
  expect_error(zarr:::zarr_read_arrays(z$root, "g"), class = "zarr_error_metadata")
  expect_error(zarr:::zarr_read_arrays(z$root, "c", rtype = "raw"), class = "zarr_error_value")
})

test_that("a corrupt chunk is an error naming its key", {
  d <- withr::local_tempfile(fileext = ".zarr")
  z <- create_zarr(d)
  for (nm in c("a", "b")) {
    a <- ra_array(z, nm, "uint8", 100)
    a[] <- 1:100
  }
  ck <- setdiff(list.files(file.path(d, "b"), recursive = TRUE), "zarr.json")
  writeBin(as.raw(1:9), file.path(d, "b", ck))
  err <- expect_error(zarr:::zarr_read_arrays(open_zarr(d)$root, c("a", "b"), rtype = "raw"), class = "zarr_error")
  expect_match(conditionMessage(err), paste0("b/", ck), fixed = TRUE)
})

test_that("arrays in a zip store and behind an HTTP server read the same", {
  skip_if_not(nzchar(Sys.which(Sys.getenv("R_ZIPCMD", "zip"))), "no zip program")
  d <- withr::local_tempfile(fileext = ".zarr")
  z <- create_zarr(d)
  set.seed(5)
  want <- lapply(1:5, function(i) {
    a <- ra_array(z, paste0("x", i), "float32", 50 * i)
    a[] <- runif(50 * i)
    a[]
  })
  zf <- withr::local_tempfile(fileext = ".zip")
  withr::with_dir(d, utils::zip(zf, list.files(all.files = TRUE, recursive = TRUE), flags = "-r9Xq"))
  zz <- open_zarr(zf)
  expect_identical(zarr:::zarr_read_arrays(zz$root, paste0("x", 1:5)), want)
  # HTTP: the store's get_many fetches every document and chunk
  srv <- http_server(d)
  zh <- open_zarr(srv$url_of())
  expect_identical(zarr:::zarr_read_arrays(zh$root, c(paste0("x", 1:5), "nothing")), c(want, list(NULL)))
})
