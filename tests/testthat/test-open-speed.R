# Arrays keep a validated codec chain and build codec objects when asked;
# what they build and write is what the metadata says.

test_that("an opened array builds its codec objects on request", {
  d <- withr::local_tempdir(fileext = ".zarr")
  as_zarr(matrix(as.numeric(1:400), 20, 20), location = d)
  a <- open_zarr(d)[["/"]]
  expect_equal(a[3, 4], 63)
  cds <- a$codecs
  expect_true(all(vapply(cds, function(cd) inherits(cd, "zarr_codec"), TRUE)))
  expect_equal(vapply(cds, function(cd) cd$name, ""),
               vapply(a$metadata$codecs, function(cd) cd$name, ""))
  expect_identical(a$codecs[[1L]], cds[[1L]]) # built once
  expect_equal(vapply(a$chunking$codecs, function(cd) cd$name, ""), vapply(cds, function(cd) cd$name, ""))
  expect_output(print(a), "zstd\\(1\\)")
})

test_that("a bad codec configuration is still an error when the array is opened", {
  d <- withr::local_tempdir(fileext = ".zarr")
  as_zarr(matrix(1:4, 2, 2), location = d)
  f <- file.path(d, "zarr.json")
  m <- jsonlite::fromJSON(f, simplifyVector = FALSE)
  m$codecs[[length(m$codecs)]]$configuration$level <- 99
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null"), f)
  expect_error(open_zarr(d)[["/"]][1, 1], class = "zarr_error_codec")
  m$codecs[[length(m$codecs)]]$configuration$level <- 1
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null"), f)
  expect_equal(open_zarr(d)[["/"]][2, 2], 4L)
})

test_that("arrays made from one metadata list do not share their data type", {
  d <- withr::local_tempdir(fileext = ".zarr")
  z <- create_zarr(d)
  def <- define_array("float64", c(10, 10))
  st <- z$store
  m <- st$create_array("/", "x", def)
  a1 <- zarr_array$new("x", m, z$root, st)
  a2 <- zarr_array$new("x", m, z$root, st)
  expect_false(identical(a1$data_type, a2$data_type))
  expect_equal(a1$data_type$data_type, "float64")
  expect_equal(a2$shape, c(10L, 10L))
})

test_that("many arrays alike are created with the metadata they were defined with", {
  d <- withr::local_tempdir(fileext = ".zarr")
  z <- create_zarr(d)
  def <- define_array("int32", c(30, 20))
  def$chunk_shape <- c(10, 10)
  for (g in 1:3) z$add_group("/", paste0("g", g))
  for (g in 1:3) for (k in 1:4) z$add_array(paste0("/g", g), paste0("a", k), def)
  z2 <- open_zarr(d)
  a <- z2[["/g3/a4"]]
  expect_equal(a$shape, c(30L, 20L))
  expect_equal(a$chunking$chunk_shape, c(10, 10))
  expect_equal(vapply(a$codecs, function(cd) cd$name, ""), c("transpose", "bytes", "zstd"))
  a[1:2, 3] <- 7:8
  expect_equal(open_zarr(d)[["/g3/a4"]][1:2, 3], 7:8)
})

test_that("codecs describe themselves for the engine through public methods", {
  zs <- zarr_codec_zstd$new(list(level = 5))
  expect_equal(zs$engine_spec(), list(name = "zstd", level = 5L, checksum = FALSE))
  expect_false(zs$elementwise)
  so <- zarr_codec_scale_offset$new("float64", list(scale = 2, offset = 1))
  expect_true(so$elementwise)
  expect_equal(so$engine_spec(big = TRUE)$name, "scale_offset")
})

test_that("array_builder tells which parts were set", {
  b <- array_builder$new()
  expect_false(b$is_set("shape"))
  expect_false(b$is_set("format"))
  b$data_type <- "int16"
  b$shape <- c(5, 5)
  expect_true(b$is_set("shape"))
  expect_false(b$is_set("chunk_shape"))
  b$chunk_shape <- c(5, 1)
  expect_true(b$is_set("chunk_shape"))
  b$format <- 2
  expect_true(b$is_set("format"))
})

test_that("small reads of integer runs read what base R reads", {
  x <- matrix(as.numeric(1:1200), 40, 30)
  a <- as_zarr(x)[["/"]]
  for (k in 1:20) {
    i <- sample.int(31, 1L); j <- sample.int(21, 1L)
    expect_equal(a[i:(i + 9), j:(j + 9)], x[i:(i + 9), j:(j + 9)])
  }
  expect_equal(a[40L, 30L], x[40, 30])
  expect_equal(a[c(3L, 2L), 1:2], x[c(3, 2), 1:2])
  expect_equal(a[c(1L, NA_integer_)[1L], 1L], x[1, 1])
  expect_error(a[39:41, 1L], class = "zarr_error_index")
  expect_error(a[0:2, 1L], NA)
  expect_equal(a[0:2, 1L], x[0:2, 1])
  # whole numbers that are doubles take the same path; others index as base R
  expect_identical(a[5, 7], x[5, 7])
  expect_identical(a[c(5, 6, 7), 30], x[c(5, 6, 7), 30])
  expect_identical(a[2.7, 1.2], x[2.7, 1.2])
  expect_identical(a[c(1, 1.5, 3), 2], x[c(1, 1.5, 3), 2])
  expect_identical(a[c(4, NA), 2], x[c(4, NA), 2])
  expect_identical(a[-1, 3], x[-1, 3])
  expect_identical(a[40, 30, drop = FALSE], x[40, 30, drop = FALSE])
  expect_error(a[41, 1], class = "zarr_error_index")
  expect_error(a[Inf, 1], class = "zarr_error_index")
})

test_that("an array opened again reuses its parse but keeps objects of its own", {
  d <- withr::local_tempdir(fileext = ".zarr")
  x <- matrix(as.numeric(1:600), 20, 30)
  withr::with_options(list(zarr.format = 2), as_zarr(x, location = d))
  a1 <- open_zarr(d)$root
  expect_equal(a1[3, 4], x[3, 4])
  a2 <- open_zarr(d)$root
  expect_equal(a2[5:7, 2:3], x[5:7, 2:3])
  expect_equal(a2[20, 30], 600)
  # data type, codec objects and chunk grid are the array's own
  expect_false(identical(a1$data_type, a2$data_type))
  expect_false(identical(a1$chunking, a2$chunking))
  expect_false(identical(a1$codecs[[1L]], a2$codecs[[1L]]))
  fill <- a2$data_type$fill_value
  dt1 <- a1$data_type
  dt1$fill_value <- 5
  expect_equal(a1$data_type$fill_value, 5)
  expect_identical(a2$data_type$fill_value, fill)
  expect_identical(open_zarr(d)$root$data_type$fill_value, fill)
  # the chunk cache budget of one array is not another's
  a1$chunk_cache_bytes <- 0
  expect_false(identical(a2$chunk_cache_bytes, 0))
})

test_that("an array opened again after its metadata changed reads the new metadata", {
  d <- withr::local_tempdir(fileext = ".zarr")
  as_zarr(matrix(1:12, 3, 4), location = d)
  expect_equal(open_zarr(d)$root$shape, c(3, 4))
  expect_equal(open_zarr(d)$root[3, 4], 12L)
  m <- jsonlite::fromJSON(file.path(d, "zarr.json"), simplifyVector = FALSE)
  m$fill_value <- 9
  m$shape <- list(3, 5) # a column never written: the fill value
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null"), file.path(d, "zarr.json"))
  a <- open_zarr(d)$root
  expect_equal(a$shape, c(3, 5))
  expect_equal(a$data_type$fill_value, 9L)
  expect_equal(a[, 5, fill_as_na = FALSE], c(9L, 9L, 9L))
  expect_equal(a[, 5], rep(NA_integer_, 3)) # a fill value that marks missing elements
  expect_equal(a[2, 4], 11L)
  # an error is not kept: broken, then mended
  m$codecs[[length(m$codecs)]]$configuration$level <- 99
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null"), file.path(d, "zarr.json"))
  expect_error(open_zarr(d)$root[1, 1], class = "zarr_error_codec")
  m$codecs[[length(m$codecs)]]$configuration$level <- 3
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null"), file.path(d, "zarr.json"))
  expect_equal(open_zarr(d)$root[1, 2], 4L)
})

test_that("two stores with an array at the same path each read their own", {
  d1 <- withr::local_tempdir(fileext = ".zarr")
  d2 <- withr::local_tempdir(fileext = ".zarr")
  as_zarr(matrix(as.numeric(1:4), 2, 2), location = d1)
  as_zarr(array(1:8, c(2, 2, 2)), location = d2)
  for (k in 1:2) {
    expect_identical(open_zarr(d1)$root[2, 2], 4)
    expect_identical(open_zarr(d2)$root[2, 2, 2], 8L)
  }
})

test_that("arrays opened again see a data type registered or unregistered since", {
  d <- withr::local_tempdir(fileext = ".zarr")
  reg <- function() zarr_register_data_type("test.q8_8", 2,
    decode = function(raw, n) readBin(raw, "integer", n, size = 2, endian = "little") / 256,
    encode = function(x) writeBin(as.integer(round(x * 256)), raw(), size = 2, endian = "little"))
  reg()
  withr::defer(zarr_unregister_data_type("test.q8_8"))
  z <- create_zarr(d)
  z$add_array("/", "q", define_array("test.q8_8", 4))$write(c(1.5, -2.25, 0, 100))
  expect_equal(open_zarr(d)[["/q"]][2], -2.25)
  zarr_unregister_data_type("test.q8_8")
  expect_error(open_zarr(d)[["/q"]][2], class = "zarr_error_data_type")
  reg()
  expect_equal(open_zarr(d)[["/q"]][4], 100)
})
