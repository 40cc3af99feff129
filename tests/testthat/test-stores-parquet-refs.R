# Parquet references as GDAL writes them: a row whose path has null offset
# and size is the whole file, and relative paths are taken from the .parq
# file's folder (GDAL) or, when the target is not there, from the
# references' root (fsspec).

skip_if_not_installed("nanoparquet")

# A .zmetadata and one <field>/refs.0.parq file of the given rows.
write_parq_refs <- function(dir, zarray, path, offset, size, field = "x") {
  dir.create(file.path(dir, field), recursive = TRUE)
  meta <- list(".zgroup" = list(zarr_format = 2), ".zattrs" = setNames(list(), character()))
  meta[[paste0(field, "/.zarray")]] <- zarray
  jsonlite::write_json(list(metadata = meta, record_size = length(path)), file.path(dir, ".zmetadata"),
                       auto_unbox = TRUE, null = "null")
  df <- data.frame(path = path, offset = bit64::as.integer64(offset), size = bit64::as.integer64(size))
  df$raw <- rep(list(NULL), length(path))
  nanoparquet::write_parquet(df, file.path(dir, field, "refs.0.parq"))
  dir
}

zarray_u1 <- function(shape, chunks) list(zarr_format = 2, shape = shape, chunks = chunks, compressor = NULL,
                                          dtype = "|u1", order = "C", filters = NULL, fill_value = 0)

test_that("a path with null offset and size is the whole file, found next to the .parq file", {
  dir <- withr::local_tempdir()
  write_parq_refs(dir, zarray_u1(list(4), list(2)), c("0.bin", "1.bin"), c(NA, NA), c(NA, NA))
  writeBin(as.raw(1:2), file.path(dir, "x", "0.bin"))
  writeBin(as.raw(3:4), file.path(dir, "x", "1.bin"))
  z <- open_zarr(dir)
  expect_s3_class(z$store, "zarr_refstore")
  expect_identical(z[["/x"]][], 1:4)
  expect_true(is.na(z$store$getsize("x/0")))
})

test_that("relative paths: the .parq file's folder first, then the root's", {
  dir <- withr::local_tempdir()
  write_parq_refs(dir, zarray_u1(list(6), list(2)), c("a.bin", "b.bin", "x/c.bin"), c(0, 1, 0), c(2, 2, 2))
  writeBin(as.raw(c(10, 11)), file.path(dir, "x", "a.bin"))  # next to the .parq only
  writeBin(as.raw(c(99, 99, 99)), file.path(dir, "a.bin"))   # at the root too: the .parq folder wins
  writeBin(as.raw(c(0, 20, 21)), file.path(dir, "b.bin"))    # at the root only (fsspec's way)
  writeBin(as.raw(c(30, 31)), file.path(dir, "x", "c.bin"))  # root-relative "x/c.bin"
  expect_identical(open_zarr(dir)[["/x"]][], c(10L, 11L, 20L, 21L, 30L, 31L))
  # nowhere: a missing chunk
  unlink(file.path(dir, "b.bin"))
  expect_error(open_zarr(dir)[["/x"]][], class = "zarr_error")
})

test_that("an offset without a size is refused, naming the key", {
  dir <- withr::local_tempdir()
  write_parq_refs(dir, zarray_u1(list(2), list(2)), "0.bin", 3, NA)
  expect_error(open_zarr(dir), "offset without a size.*x/0", class = "zarr_error_metadata")
})

test_that("GDAL's Parquet reference test data reads as GDAL reads it", {
  gdal <- file.path(Sys.getenv("ZARR_FIXTURES_DIR", "../../../shared/fixtures"), "..", "realworld", "gdal",
                    "kerchunk_parquet")
  skip_if_not(dir.exists(gdal), "../shared/realworld/gdal/kerchunk_parquet is not here")
  # a 0-d array whose one chunk is a whole file (path, null offset and size)
  expect_identical(open_zarr(file.path(gdal, "parquet_ref_0_dim"))[["/x"]][], 1L)
  expect_identical(open_zarr(file.path(gdal, "parquet_ref_0_dim_inline_content"))[["/x"]][], 1L)
  expect_identical(open_zarr(file.path(gdal, "parquet_ref_min"))[["/x"]][], 1L)
  # 3 x 4 in 2 x 3 chunks, record_size 3: refs.1.parq holds the fourth chunk
  ar <- open_zarr(file.path(gdal, "parquet_ref_2_dim"))[["/ar"]]
  v <- ar[, ]
  expect_identical(dim(v), c(3L, 4L))
  expect_identical(v[1, ], c(0L, 1L, 2L, 0L))
  expect_identical(v[2, ], c(3L, 4L, 5L, 3L))
  expect_identical(v[3, ], c(0L, 1L, 2L, 0L))
})

test_that("Parquet references on a web server take relative paths from the .parq folder too", {
  skip_without_http_server()
  root <- withr::local_tempdir()
  dir <- file.path(root, "refs")
  dir.create(dir)
  write_parq_refs(dir, zarray_u1(list(4), list(2)), c("a.bin", "b.bin"), c(NA, 0), c(NA, 2))
  writeBin(as.raw(c(10, 11)), file.path(dir, "x", "a.bin"))
  writeBin(as.raw(c(20, 21)), file.path(dir, "b.bin"))
  srv <- http_server(root)
  z <- open_zarr(paste0("reference+parquet://", srv$url, "/refs"))
  expect_identical(z[["/x"]][], c(10L, 11L, 20L, 21L))
})
