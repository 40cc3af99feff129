# zlib and libbz2 count bytes in 32-bit unsigned ints: chunks over 4 GiB go
# through them in pieces (1 GiB). The piece size is lowered here so that the
# piecewise paths run on small chunks; ZARR_TEST_HUGE=true also runs a real
# 4.5 GiB chunk.

local_codec_piece <- function(n, env = parent.frame()) {
  old <- .Call(zarr:::ffi_codec_piece, n)
  withr::defer(.Call(zarr:::ffi_codec_piece, old), envir = env)
}

piece_codecs <- function() Filter(Negate(is.null), list(
  gzip = zarr_codec_gzip$new(list(level = 5)),
  zlib = zarr:::zarr_codec_numcodecs$new("zlib", list(level = 1), NULL),
  bz2 = if (!codec_missing("bz2")) zarr:::zarr_codec_numcodecs$new("bz2", list(level = 9), NULL),
  adler32 = zarr:::zarr_codec_numcodecs$new("adler32", list(), NULL)
))

test_that("gzip, zlib, bz2 and adler32 encode and decode the same in small pieces as in one", {
  set.seed(42)
  x <- as.raw(c(sample(0:255, 60000, replace = TRUE), rep(7L, 50000), 0:255))
  whole <- lapply(piece_codecs(), function(cd) cd$encode(x))
  for (piece in c(1, 7, 4096)) {
    local_codec_piece(piece)
    for (nm in names(whole)) {
      cd <- piece_codecs()[[nm]]
      enc <- cd$encode(x)
      info <- sprintf("%s, pieces of %d", nm, piece)
      expect_identical(cd$decode(enc), x, info = info)
      expect_identical(cd$decode(whole[[nm]]), x, info = info)
      if (nm == "adler32") expect_identical(enc, whole[[nm]], info = info)
    }
  }
  # the pieces make streams that other zlib/libbz2 readers take whole
  local_codec_piece(7)
  cds <- piece_codecs()
  expect_identical(memDecompress(cds$gzip$encode(x), "gzip"), x)
  if (!is.null(cds$bz2)) expect_identical(memDecompress(cds$bz2$encode(x), "bzip2"), x)
  expect_identical(.Call(zarr:::ffi_codec_piece, NULL), 7)
  expect_error(.Call(zarr:::ffi_codec_piece, 0), class = "zarr_error_value")
})

test_that("a 4.5 GiB chunk goes through gzip whole (ZARR_TEST_HUGE=true)", {
  skip_if_not(identical(Sys.getenv("ZARR_TEST_HUGE"), "true"), "ZARR_TEST_HUGE is not true")
  n <- 4.5 * 2^30
  x <- rep_len(as.raw(0:250), n)
  cd <- zarr_codec_gzip$new(list(level = 1))
  enc <- cd$encode(x)
  expect_lt(length(enc), n / 10)
  y <- cd$decode(enc)
  rm(enc)
  expect_identical(length(y), length(x))
  expect_identical(y[c(1, 2^32 - 1, 2^32, 2^32 + 1, n)], x[c(1, 2^32 - 1, 2^32, 2^32 + 1, n)])
  expect_true(identical(y, x))
})
