# Metadata of early Zarr v3 drafts that GDAL and zarrita.py wrote.

test_that("an array without 'codecs' reads as little-endian bytes (GDAL's v3 drafts)", {
  d <- realworld_dir("gdal/v3/test_deprecated_no_codecs.zr3")
  z <- open_zarr(d, read_only = TRUE)
  expect_identical(z[["/ar"]][], c(1L, 2L))
  x <- open_zarr(realworld_dir("gdal/byte_cf1.zr3"), read_only = TRUE)
  expect_identical(dim(x[["/Band1"]]), c(20L, 20L))
  expect_equal(x[["/x"]][1:3], c(440750, 440810, 440870))
})

test_that("transpose order \"F\" and \"C\" (zarrita.py) read like the permutations", {
  d <- realworld_dir("neuroglancer/from_zarrita.zarr")
  f <- open_zarr(file.path(d, "3d.chunked.mixed.i2.F"), read_only = TRUE)$root
  c <- open_zarr(file.path(d, "3d.chunked.mixed.i2.C"), read_only = TRUE)$root
  expect_identical(f[], c[])
  expect_identical(f[, , 1], matrix(c(0L, 9L, 18L, 3L, 12L, 21L, 6L, 15L, 24L), 3))
  # the same on an array this package writes: "F" reverses the dimensions
  m <- array(1:24, 2:4)
  z <- as_zarr(m, codecs = list(zarr_codec_transpose$new(3L, list(order = "F")), zarr_codec_bytes$new()))
  expect_identical(z$root[], m)
})
