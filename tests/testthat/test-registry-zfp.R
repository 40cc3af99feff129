# The zfp codec (zarr-extensions codecs/zarrs.zfp): chunks are zfp streams
# without zfp's header, written and read by the zfp library (libzfp). The
# independent check is the `zfp` command-line tool of the same library
# (Debian's libzfp-dev ships it as /usr/bin/zfp): it decodes the chunks
# written here, and chunks it writes decode here, byte for byte.

skip_without_zfp_cli <- function() {
  skip_on_cran()
  if (!nzchar(Sys.which("zfp"))) skip("the zfp command-line tool is not installed")
}

# A v3 array of one chunk (shape = chunk shape) whose only codec is zfp.
zfp_array <- function(dtype, shape, config, name = "zfp") {
  root <- tempfile("zfp-")
  dir.create(file.path(root, "a"), recursive = TRUE)
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}}', file.path(root, "zarr.json"))
  meta <- list(zarr_format = 3L, node_type = "array", shape = as.list(shape), data_type = dtype,
               chunk_grid = list(name = "regular", configuration = list(chunk_shape = as.list(shape))),
               chunk_key_encoding = list(name = "default", configuration = list(separator = "/")),
               fill_value = 0L, codecs = list(list(name = name, configuration = config)),
               attributes = setNames(list(), character()))
  writeLines(jsonlite::toJSON(meta, auto_unbox = TRUE, digits = NA), file.path(root, "a", "zarr.json"))
  root
}

zfp_chunk_path <- function(root, shape) {
  if (!length(shape)) return(file.path(root, "a", "c"))
  do.call(file.path, c(list(root, "a", "c"), as.list(rep("0", length(shape)))))
}

# The elements in C order (the chunk's last dimension fastest), as raw bytes.
zfp_raw <- function(x, dtype) {
  v <- if (is.null(dim(x)) || length(dim(x)) == 1L) as.vector(x) else as.vector(aperm(x))
  switch(dtype,
    float32 = writeBin(as.double(v), raw(), size = 4L, endian = "little"),
    float64 = writeBin(as.double(v), raw(), size = 8L, endian = "little"),
    int32 = writeBin(as.integer(v), raw(), size = 4L, endian = "little"),
    int64 = { # small values: low word, then the sign in the high word
      w <- as.integer(v)
      writeBin(as.vector(rbind(w, ifelse(w < 0L, -1L, 0L))), raw(), size = 4L, endian = "little")
    })
}

zfp_from_raw <- function(r, dtype, shape) {
  n <- prod(shape)
  v <- switch(dtype,
    float32 = readBin(r, "double", n, size = 4L, endian = "little"),
    float64 = readBin(r, "double", n, size = 8L, endian = "little"),
    int32 = readBin(r, "integer", n, size = 4L, endian = "little"),
    int64 = readBin(r, "integer", 2L * n, size = 4L, endian = "little")[c(TRUE, FALSE)])
  if (length(shape) == 1L) return(v)
  aperm(array(v, rev(shape)))
}

zfp_cli_mode <- function(config) {
  switch(config$mode,
    reversible = "-R",
    fixed_rate = c("-r", config$rate),
    fixed_precision = c("-p", config$precision),
    fixed_accuracy = c("-a", config$tolerance),
    expert = c("-c", config$minbits, config$maxbits, config$maxprec, config$minexp))
}

# zfp's dimension flags: nx is the fastest dimension, the chunk's last
zfp_cli_dims <- function(shape) c(sprintf("-%d", length(shape)), rev(shape))
zfp_cli_type <- function(dtype) c("-t", switch(dtype, float32 = "f32", float64 = "f64", int32 = "i32", int64 = "i64"))

zfp_cli <- function(...) {
  out <- suppressWarnings(system2("zfp", c("-q", ...), stdout = TRUE, stderr = TRUE))
  if (!is.null(attr(out, "status"))) stop("zfp failed: ", paste(out, collapse = "\n"))
  invisible(out)
}

# int64 arrays read as integer64 (bit64) or double: compare as integers
as_int_array <- function(v) if (is.null(dim(v))) as.integer(v) else array(as.integer(v), dim(v))

zfp_test_values <- function(dtype, shape) {
  n <- prod(shape)
  set.seed(n)
  v <- if (dtype %in% c("int32", "int64")) as.integer(round(sin(seq_len(n) / 3) * 1e6 + sample(-50:50, n, TRUE)))
       else sin(seq_len(n) / 5) * 100 + rnorm(n)
  if (dtype == "float32") v <- readBin(writeBin(v, raw(), size = 4L), "double", n, size = 4L)
  if (length(shape) == 1L) v else array(v, shape)
}

test_that("zfp's reversible mode round-trips every supported type exactly, in 1 to 4 dimensions", {
  skip_without_codec("zfp")
  shapes <- list(13, c(6, 9), c(5, 4, 7), c(3, 5, 2, 6))
  for (dtype in c("float32", "float64", "int32", "int64")) {
    for (shape in shapes) {
      root <- zfp_array(dtype, shape, list(mode = "reversible"))
      a <- open_zarr(root)[["/a"]]
      x <- zfp_test_values(dtype, shape)
      a[] <- x
      got <- open_zarr(root)[["/a"]][]
      if (dtype == "int64") got <- as_int_array(got)
      expect_equal(got, x, tolerance = 0, info = paste(dtype, paste(shape, collapse = "x")))
    }
  }
  # int32 values across the whole range survive too
  root <- zfp_array("int32", 8, list(mode = "reversible"))
  a <- open_zarr(root)[["/a"]]
  x <- c(.Machine$integer.max, -.Machine$integer.max, 0L, 1L, -1L, 123456789L, -987654321L, 42L)
  a[] <- x
  expect_identical(open_zarr(root)[["/a"]][], x)
})

test_that("zfp's fixed_accuracy mode stays within its tolerance; fixed_rate writes its number of bits", {
  skip_without_codec("zfp")
  for (dtype in c("float32", "float64")) {
    for (shape in list(50, c(9, 11), c(6, 5, 7))) {
      for (tol in c(1e-1, 1e-3)) {
        root <- zfp_array(dtype, shape, list(mode = "fixed_accuracy", tolerance = tol))
        a <- open_zarr(root)[["/a"]]
        x <- zfp_test_values(dtype, shape)
        a[] <- x
        err <- max(abs(open_zarr(root)[["/a"]][] - x))
        expect_lte(err, tol)
        expect_gt(err, 0) # lossy indeed
      }
    }
  }
  # fixed rate: 4^d values a block, rate bits a value (the stream is padded
  # to whole words of the library's bit stream: 1 to 8 bytes)
  for (shape in list(50, c(9, 11), c(6, 5, 7))) {
    d <- length(shape)
    root <- zfp_array("float64", shape, list(mode = "fixed_rate", rate = 12))
    a <- open_zarr(root)[["/a"]]
    x <- zfp_test_values("float64", shape)
    a[] <- x
    blocks <- prod(ceiling(shape / 4))
    size <- file.size(zfp_chunk_path(root, shape))
    expect_gte(size, ceiling(blocks * 4^d * 12 / 8))
    expect_lte(size, ceiling(blocks * 4^d * 12 / 64) * 8)
    expect_lt(max(abs(a[] - x)), 1) # 12 bits a value: close, not exact
  }
})

test_that("the zfp command-line tool decodes our chunks and writes chunks we decode, in every mode", {
  skip_without_codec("zfp")
  skip_without_zfp_cli()
  cases <- list(
    list("float64", c(7, 10), list(mode = "reversible")),
    list("float32", 29, list(mode = "fixed_rate", rate = 10)),
    list("float64", c(4, 5, 6), list(mode = "fixed_precision", precision = 24L)),
    list("float32", c(3, 4, 5, 6), list(mode = "fixed_accuracy", tolerance = 0.01)),
    list("float64", c(8, 9), list(mode = "expert", minbits = 16L, maxbits = 600L, maxprec = 40L, minexp = -30L)),
    list("int32", c(6, 6), list(mode = "reversible")),
    list("int32", c(5, 9), list(mode = "fixed_rate", rate = 20)),
    list("int64", c(5, 3, 4), list(mode = "reversible")),
    list("int64", 40, list(mode = "fixed_precision", precision = 40L)))
  for (cs in cases) {
    dtype <- cs[[1]]; shape <- cs[[2]]; cfg <- cs[[3]]
    info <- paste(dtype, paste(shape, collapse = "x"), cfg$mode)
    x <- zfp_test_values(dtype, shape)
    flags <- c(zfp_cli_type(dtype), zfp_cli_dims(shape), zfp_cli_mode(cfg))
    raw_in <- tempfile(); zf <- tempfile(); raw_out <- tempfile()
    writeBin(zfp_raw(x, dtype), raw_in)

    # ours -> the CLI: the same stream the CLI writes, and the same values decoded
    root <- zfp_array(dtype, shape, cfg)
    a <- open_zarr(root)[["/a"]]
    a[] <- x
    ours <- readBin(zfp_chunk_path(root, shape), "raw", 1e7)
    zfp_cli("-i", raw_in, "-z", zf, flags)
    theirs <- readBin(zf, "raw", 1e7)
    expect_identical(ours, theirs, info = info)
    zfp_cli("-z", zfp_chunk_path(root, shape), "-o", raw_out, flags)
    cli_values <- zfp_from_raw(readBin(raw_out, "raw", 1e7), dtype, shape)
    got <- open_zarr(root)[["/a"]][]
    if (dtype == "int64") got <- as_int_array(got)
    expect_equal(got, cli_values, tolerance = 0, info = info)

    # the CLI -> ours: its stream as the chunk of a fresh array
    root2 <- zfp_array(dtype, shape, cfg)
    dir.create(dirname(zfp_chunk_path(root2, shape)), recursive = TRUE, showWarnings = FALSE)
    file.copy(zf, zfp_chunk_path(root2, shape))
    got2 <- open_zarr(root2)[["/a"]][]
    if (dtype == "int64") got2 <- as_int_array(got2)
    expect_equal(got2, cli_values, tolerance = 0, info = info)
    if (cfg$mode == "reversible") expect_equal(got2, x, tolerance = 0, info = info)
  }
})

test_that("zfp refuses chunks of more than 4 dimensions; zarrs.zfp drops those of length 1; 0-d is one element", {
  skip_without_codec("zfp")
  shape <- c(1, 6, 1, 5, 1)
  x <- zfp_test_values("float64", shape)
  expect_error(open_zarr(zfp_array("float64", shape, list(mode = "reversible")))[["/a"]][],
               class = "zarr_error_codec")
  root <- zfp_array("float64", shape, list(mode = "reversible"), name = "zarrs.zfp")
  a <- open_zarr(root)[["/a"]]
  a[] <- x
  expect_identical(open_zarr(root)[["/a"]][], x)
  expect_identical(a$metadata$codecs[[1]]$name, "zarrs.zfp")
  # the stream is that of the 6 x 5 field
  root2 <- zfp_array("float64", c(6, 5), list(mode = "reversible"))
  b <- open_zarr(root2)[["/a"]]
  b[] <- array(x, c(6, 5))
  expect_identical(readBin(zfp_chunk_path(root, shape), "raw", 1e6), readBin(zfp_chunk_path(root2, c(6, 5)), "raw", 1e6))
  # 1-4 dimensions keep their dimensions of length 1, under either name
  root3 <- zfp_array("float64", c(6, 1, 5), list(mode = "reversible"), name = "zarrs.zfp")
  d <- open_zarr(root3)[["/a"]]
  d[] <- array(x, c(6, 1, 5))
  expect_false(identical(readBin(zfp_chunk_path(root3, c(6, 1, 5)), "raw", 1e6),
                         readBin(zfp_chunk_path(root2, c(6, 5)), "raw", 1e6)))
  expect_identical(open_zarr(root3)[["/a"]][], array(x, c(6, 1, 5)))
  expect_error(open_zarr(zfp_array("float64", c(2, 2, 2, 2, 2), list(mode = "reversible"), name = "zarrs.zfp"))[["/a"]][],
               class = "zarr_error_codec")

  # a zero-dimensional array: a 1-d field of one element
  root0 <- zfp_array("float64", integer(0), list(mode = "reversible"))
  s0 <- open_zarr(root0)[["/a"]]
  s0[] <- 2.75
  expect_identical(open_zarr(root0)[["/a"]][], 2.75)
  if (nzchar(Sys.which("zfp")) && !identical(Sys.getenv("NOT_CRAN"), "")) {
    raw_in <- tempfile(); zf <- tempfile()
    writeBin(2.75, raw_in, size = 8L, endian = "little")
    zfp_cli("-i", raw_in, "-z", zf, "-t", "f64", "-1", "1", "-R")
    expect_identical(readBin(zfp_chunk_path(root0, integer(0)), "raw", 100), readBin(zf, "raw", 100))
  }

  z <- create_zarr()
  def <- define_array("float32", c(20, 12))
  def$chunk_shape <- c(10, 6)
  def$add_codec("zfp", list(mode = "fixed_accuracy", tolerance = 0.05))
  def$add_codec("sharding_indexed", list(chunk_shape = c(5, 3)))
  s <- z$add_array("/", "s", def)
  m <- matrix(zfp_test_values("float32", 240), 20, 12)
  s[] <- m
  expect_lte(max(abs(s[] - m)), 0.05)
  inner <- vapply(s$metadata$codecs[[1]]$configuration$codecs, function(cd) cd$name, "")
  expect_true("zfp" %in% inner)
})

test_that("zfp configurations and chunks that do not fit are classed errors", {
  skip_without_codec("zfp")
  open_a <- function(dtype, shape, cfg) open_zarr(zfp_array(dtype, shape, cfg))[["/a"]][]
  expect_error(open_a("int16", 10, list(mode = "reversible")), class = "zarr_error_codec")
  expect_error(open_a("float64", 10, list(mode = "fast")), class = "zarr_error_codec")
  expect_error(open_a("float64", 10, list(mode = "fixed_rate")), class = "zarr_error_codec")
  expect_error(open_a("float64", 10, list(mode = "fixed_rate", rate = -1)), class = "zarr_error_codec")
  expect_error(open_a("float64", 10, list(mode = "fixed_precision", precision = 65L)), class = "zarr_error_codec")
  expect_error(open_a("int32", 10, list(mode = "fixed_accuracy", tolerance = 1)), class = "zarr_error_codec")
  expect_error(open_a("float64", 10, list(mode = "reversible", rate = 3)), class = "zarr_error_codec")
  expect_error(open_a("float64", 10, list(mode = "expert", minbits = 10L, maxbits = 5L, maxprec = 10L, minexp = 0L)),
               class = "zarr_error")

  # a truncated stream and garbage: corrupt chunks, not crashes
  root <- zfp_array("float64", c(8, 8), list(mode = "reversible"))
  a <- open_zarr(root)[["/a"]]
  a[] <- matrix(zfp_test_values("float64", 64), 8, 8)
  path <- zfp_chunk_path(root, c(8, 8))
  bytes <- readBin(path, "raw", 1e6)
  writeBin(bytes[1:16], path)
  expect_error(open_zarr(root)[["/a"]][], class = "zarr_error_corrupt_chunk")
  writeBin(as.raw(rep(0xff, 5000)), path)
  expect_error(open_zarr(root)[["/a"]][], class = "zarr_error_corrupt_chunk")
})

test_that("without libzfp the zfp codec is a classed 'not available' error", {
  if (!codec_missing("zfp")) skip("this build has libzfp (tools/check-optional.sh ZFP builds one without)")
  expect_identical(zarr_capabilities()$missing_codecs[["zfp"]], "libzfp")
  root <- zfp_array("float64", 10, list(mode = "reversible"))
  expect_error(open_zarr(root)[["/a"]][], class = "zarr_error_unsupported")
})
