# Seeded mutation test: bytes of chunks, shards, metadata documents and zip
# archives are flipped, cut short and extended; every read must then either
# return the right values or raise a zarr_error, never an unclassed error or
# a crash. Where nothing can tell a changed byte from a real one (no checksum:
# an uncompressed chunk, a digit of the shape), a read may return other
# values, but of the right type and length.

adv_arrays <- function() {
  list(
    zstd = list(dtype = "int32", codecs = list()),
    gzip = list(dtype = "float64", codecs = list(list("gzip", list(level = 1L)))),
    blosc = list(dtype = "int16", codecs = list(list("blosc", list(cname = "lz4", shuffle = "shuffle")))),
    bz2 = list(dtype = "int32", codecs = list(list("numcodecs.bz2", list(level = 1L)))),
    lz4 = list(dtype = "uint8", codecs = list(list("numcodecs.lz4", list()))),
    crc = list(dtype = "int32", codecs = list(list("zstd", list(level = 1L)), list("crc32c", NULL)),
               checked = TRUE),
    none = list(dtype = "float32", codecs = list()),
    shard = list(dtype = "int32", codecs = list(list("crc32c", NULL)), shard = 4, checked = TRUE),
    string = list(dtype = "string", codecs = list()),
    utf32 = list(dtype = list(name = "fixed_length_utf32", configuration = list(length_bytes = 12)),
                 codecs = list())
  )
}

adv_values <- function(dtype, n) {
  name <- if (is.list(dtype)) dtype$name else dtype
  switch(name,
    int32 = seq_len(n) * 7L - 20L,
    int16 = seq_len(n) - 5L,
    uint8 = seq_len(n) %% 200L,
    float64 = seq_len(n) / 3,
    float32 = seq_len(n) / 4,
    string = paste0("s", seq_len(n), strrep("\u00e9", seq_len(n) %% 3)),
    fixed_length_utf32 = paste0("u", seq_len(n) %% 10))
}

# Write each array of adv_arrays() (8 elements, chunks of 4) into a local
# store; returns the path and the expected values.
adv_store <- function(path, version = 3L) {
  withr::local_options(zarr.format = version)
  z <- create_zarr(path)
  want <- list()
  for (nm in names(adv_arrays())) {
    spec <- adv_arrays()[[nm]]
    if (version == 2L && (!is.null(spec$shard) || nm %in% c("crc", "utf32"))) next
    def <- define_array(spec$dtype, 8)
    def$chunk_shape <- if (is.null(spec$shard)) 4 else 8
    if (length(spec$codecs) || nm == "none") def$remove_codec("zstd")
    for (cd in spec$codecs) {
      if (nm == "shard" && cd[[1]] == "crc32c") next
      def$add_codec(cd[[1]], cd[[2]])
    }
    if (nm == "shard") {
      def$add_codec("crc32c")
      def$add_codec("sharding_indexed", list(chunk_shape = spec$shard))
    }
    v <- adv_values(spec$dtype, 8)
    z$add_array("/", nm, def)$write(v)
    want[[nm]] <- v
  }
  want
}

adv_mutate <- function(b, how) {
  n <- length(b)
  switch(how,
    flip = { if (n) { i <- sample.int(n, 1); b[i] <- xor(b[i], as.raw(bitwShiftL(1L, sample(0:7, 1)))) }; b },
    flip3 = { if (n) for (i in sample.int(n, min(3, n))) b[i] <- as.raw(sample(0:255, 1)); b },
    truncate = if (n) b[seq_len(sample.int(n, 1) - 1L)] else b,
    extend = c(b, as.raw(sample(0:255, sample(1:16, 1), replace = TRUE))),
    nul = if (n) { i <- sample.int(n, 1); b[i] <- as.raw(0); b } else b,
    empty = raw(0))
}

# Read array `nm` of the store at `path`; check the outcome.
adv_check <- function(path, nm, want, exact, info) {
  res <- tryCatch(open_zarr(path, read_only = TRUE)[[paste0("/", nm)]][],
                  error = identity)
  if (inherits(res, "error")) {
    expect_s3_class(res, "zarr_error")
    if (!inherits(res, "zarr_error")) print(c(info, conditionMessage(res)))
  } else if (exact) {
    expect_identical(res, want, info = info)
  } else {
    expect_identical(typeof(res), typeof(want), info = info)
    expect_identical(length(res), length(want), info = info)
  }
}

test_that("mutated chunks, shards and metadata give the right values or a zarr_error", {
  set.seed(20261124)
  for (version in c(3L, 2L)) {
    path <- local_store_path()
    want <- adv_store(path, version)
    for (nm in names(want)) {
      files <- list.files(file.path(path, nm), recursive = TRUE, all.files = TRUE, full.names = TRUE)
      meta <- files[basename(files) %in% c("zarr.json", ".zarray", ".zattrs")]
      chunks <- setdiff(files, meta)
      checked <- isTRUE(adv_arrays()[[nm]]$checked)
      for (f in c(meta, chunks)) {
        orig <- readBin(f, "raw", file.size(f))
        is_meta <- f %in% meta
        for (how in c("flip", "flip", "flip3", "truncate", "truncate", "extend", "nul", "empty")) {
          writeBin(adv_mutate(orig, how), f)
          # an unchecked chunk or a metadata document may change into other valid bytes
          exact <- !is_meta && checked && how != "empty"
          adv_check(path, nm, want[[nm]], exact, sprintf("v%d %s %s %s", version, nm, basename(f), how))
        }
        writeBin(orig, f)
      }
      expect_identical(open_zarr(path, read_only = TRUE)[[paste0("/", nm)]][], want[[nm]])
    }
  }
})

test_that("mutated zip stores give the right values or a zarr_error", {
  skip_if_not(nzchar(Sys.which(Sys.getenv("R_ZIPCMD", "zip"))), "no zip program")
  set.seed(424242)
  dir <- local_store_path()
  want <- adv_store(dir, 3L)
  zipfile <- tempfile(fileext = ".zip")
  withr::defer(unlink(zipfile))
  withr::with_dir(dir, utils::zip(zipfile, list.files(all.files = TRUE, recursive = TRUE), flags = "-r9Xq"))
  orig <- readBin(zipfile, "raw", file.size(zipfile))
  arrays <- c("crc", "shard", "string", "gzip")
  for (k in 1:60) {
    how <- sample(c("flip", "flip", "flip3", "truncate", "extend", "nul"), 1)
    writeBin(adv_mutate(orig, how), zipfile)
    nm <- arrays[(k %% length(arrays)) + 1]
    # every member carries a CRC-32, but a flipped name or size can hide a chunk
    adv_check(zipfile, nm, want[[nm]], FALSE, sprintf("zip %s %s", nm, how))
  }
  writeBin(orig, zipfile)
  for (nm in arrays) expect_identical(open_zarr(zipfile)[[paste0("/", nm)]][], want[[nm]])
})
