# numcodecs' lzma codec (src/codec_lzma.c, liblzma): the arrays of
# ../shared/realworld that use it, stores zarr-python 2 writes with every
# format, check, preset and filter kind, and stores this package writes that
# zarr-python reads.

skip_without_codec("lzma") # a build without liblzma: test-capabilities.R

py_dump_array <- '
import zarr
emit(describe(zarr.open(sys.argv[1], mode="r")))
'

test_that("the lzma arrays of ../shared/realworld read as zarr-python and GDAL read them", {
  rw <- realworld_dir()
  for (p in c("gdal/lzma.zarr", "Rarr/compression/lzma.zarr")) {
    a <- open_zarr(file.path(rw, p))$root
    expect_identical(a$codecs[[length(a$codecs)]]$name, "numcodecs.lzma")
    skip_without_python_zarr()
    expect_matches_dump(a, run_python(py_dump_array, file.path(rw, p)), info = p)
  }
  # xz with a filter list: zarr-python 2 refuses to decode it (Python's lzma
  # takes filters only with FORMAT_RAW); GDAL and the xz stream itself say 1, 2
  a <- open_zarr(file.path(rw, "gdal/lzma_with_filters.zarr"))$root
  expect_identical(a$read(), c(1L, 2L))
  chunk <- readBin(file.path(rw, "gdal/lzma_with_filters.zarr/0"), "raw", 100)
  expect_identical(memDecompress(chunk, "xz"), as.raw(1:2))
})

test_that("arrays zarr-python writes with every lzma format, check, preset and filter read equal", {
  skip_without_python_zarr()
  dir <- withr::local_tempdir()
  code <- '
import lzma, numcodecs, zarr
g = zarr.open_group(sys.argv[1], mode="w")
cases = {
  "xz_default": dict(),
  "xz_crc32_p0": dict(check=lzma.CHECK_CRC32, preset=0),
  "xz_none_p9e": dict(check=lzma.CHECK_NONE, preset=9 | lzma.PRESET_EXTREME),
  "xz_sha256": dict(check=lzma.CHECK_SHA256, preset=3),
  "xz_crc64": dict(check=lzma.CHECK_CRC64),
  "alone_default": dict(format=lzma.FORMAT_ALONE),
  "alone_p1": dict(format=lzma.FORMAT_ALONE, preset=1),
  "alone_lzma1": dict(format=lzma.FORMAT_ALONE, filters=[dict(id=lzma.FILTER_LZMA1, dict_size=1 << 16, lc=2, pb=1)]),
  "raw_lzma2": dict(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA2, preset=1)]),
  "raw_delta": dict(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_DELTA, dist=4),
                                                    dict(id=lzma.FILTER_LZMA2, preset=9, dict_size=1 << 20, mode=lzma.MODE_FAST, nice_len=32, mf=lzma.MF_HC4, depth=8)]),
  "raw_x86": dict(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_X86, start_offset=16),
                                                  dict(id=lzma.FILTER_LZMA2)]),
  "raw_lzma1": dict(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA1, preset=6, lp=1, lc=3)]),
}
x = (np.arange(30 * 7, dtype="<i4") % 97 * 1000).reshape(30, 7)
for name, kw in cases.items():
    a = g.create_dataset(name, shape=x.shape, chunks=(8, 5), dtype="<i4", compressor=numcodecs.LZMA(**kw))
    a[...] = x
# zarr-python 2 cannot read back "alone" with filters (Python\'s lzma takes
# filters when decoding only with FORMAT_RAW): compared with x instead
out = {"arrays": {}}
for name in cases:
    if name != "alone_lzma1":
        out["arrays"]["/" + name] = describe(g[name])
emit(out)
'
  d <- run_python(code, dir)
  z <- open_zarr(dir)
  expect_length(d$arrays, 11L)
  for (nm in names(d$arrays)) expect_matches_dump(z[[nm]], d$arrays[[nm]], info = nm)
  expect_identical(z[["/alone_lzma1"]][], matrix(0:209 %% 97L * 1000L, 30, 7, byrow = TRUE))
  # the LZMA1 id (2^62 + 1) stays exact through this package's metadata
  f <- z[["/raw_lzma1"]]$codecs
  expect_identical(unclass(f[[length(f)]]$configuration$filters[[1]]$id), "4611686018427387905")
})

lzma_configs <- list(
  xz_default = list(),
  xz_crc32_p0 = list(format = 1L, check = 1L, preset = 0L),
  xz_sha256_p9e = list(format = 1L, check = 10L, preset = 9 + 2^31),
  xz_none = list(format = 1L, check = 0L, preset = 2L),
  alone = list(format = 2L, check = -1L, preset = 4L),
  raw_delta = list(format = 3L, check = -1L,
                   filters = list(list(id = 3L, dist = 4L), list(id = 33L, preset = 1L, dict_size = 65536L))),
  raw_x86 = list(format = 3L, filters = list(list(id = 4L), list(id = 33L, lc = 1L, lp = 1L, pb = 0L)))
)

test_that("lzma arrays this package writes read equal here and in zarr-python", {
  dir <- withr::local_tempdir()
  withr::local_options(zarr.format = 2L)
  z <- create_zarr(file.path(dir, "s.zarr"))
  x <- matrix(as.integer((seq_len(30 * 7) %% 97) * 1000L), 30, 7)
  for (nm in names(lzma_configs)) {
    d <- define_array("int32", dim(x))
    d$chunk_shape <- c(8, 5)
    d$portable <- TRUE
    d$remove_codec("zstd")
    d$add_codec("numcodecs.lzma", lzma_configs[[nm]])
    a <- z$add_array("/", nm, d)
    a[] <- x
    expect_identical(open_zarr(file.path(dir, "s.zarr"))[[paste0("/", nm)]][], x, info = nm)
  }
  skip_without_python_zarr()
  dump <- run_python("emit(dump(sys.argv[1]))", file.path(dir, "s.zarr"))
  for (nm in names(lzma_configs)) {
    entry <- dump$arrays[[paste0("/", nm)]]
    expect_identical(entry$compressor$id, "lzma")
    expect_matches_dump(z[[paste0("/", nm)]], entry, info = nm)
  }
})

test_that("a v3 array with numcodecs.lzma round trips", {
  dir <- withr::local_tempdir()
  d <- define_array("float64", c(100, 3))
  d$remove_codec("zstd")
  d$add_codec("numcodecs.lzma", list(format = 2L, preset = 1L))
  z <- create_zarr(file.path(dir, "v3.zarr"))
  a <- z$add_array("/", "x", d)
  v <- matrix(sin(seq_len(300)), 100, 3)
  a[] <- v
  b <- open_zarr(file.path(dir, "v3.zarr"))[["/x"]]
  expect_identical(b[], v)
  meta <- jsonlite::read_json(file.path(dir, "v3.zarr", "x", "zarr.json"))
  expect_true("numcodecs.lzma" %in% vapply(meta$codecs, `[[`, "", "name"))
})

test_that("corrupt, truncated and oversized lzma chunks are classed errors", {
  cd <- function(cfg) zarr:::zarr_codec_numcodecs$new("lzma", cfg, NULL)
  x <- as.raw(rep(1:200, 50))
  for (cfg in lzma_configs) {
    c1 <- cd(cfg)
    enc <- c1$encode(x)
    expect_identical(c1$decode(enc), x)
    expect_error(c1$decode(enc[seq_len(length(enc) %/% 2)]), "truncated", class = "zarr_error_corrupt_chunk")
    bad <- enc
    bad[length(bad) %/% 2] <- xor(bad[length(bad) %/% 2], as.raw(0x5a))
    r <- tryCatch(c1$decode(bad), zarr_error = function(e) e)
    expect_true(inherits(r, "zarr_error_corrupt_chunk") || !identical(r, x))
  }
  # an .lzma header that declares a 2 GiB dictionary is refused before anything is allocated
  alone <- cd(list(format = 2L, check = -1L, preset = 1L))
  expect_error(alone$decode(as.raw(c(0x5d, 0, 0, 0, 0x83, rep(0xff, 8), rep(0, 20)))), "more memory",
               class = "zarr_error_corrupt_chunk")
  # a bomb: 64 MiB of zeros in a few kB, read into a chunk that expects 10 bytes
  dir <- withr::local_tempdir()
  withr::local_options(zarr.format = 2L)
  z <- create_zarr(file.path(dir, "b.zarr"))
  d <- define_array("uint8", 10)
  d$remove_codec("zstd")
  d$add_codec("numcodecs.lzma", list())
  a <- z$add_array("/", "b", d)
  a[] <- 1:10
  writeBin(memCompress(raw(64 * 2^20), "xz"), file.path(dir, "b.zarr", "b", "0"))
  expect_error(open_zarr(file.path(dir, "b.zarr"))[["/b"]][], "more than the expected 10 bytes",
               class = "zarr_error_corrupt_chunk")
})

test_that("lzma configurations liblzma or numcodecs refuse are classed errors naming the problem", {
  use <- function(cfg) {
    d <- define_array("uint8", 4)
    d$remove_codec("zstd")
    d$add_codec("numcodecs.lzma", cfg)
    a <- create_zarr()$add_array("/", "x", d)
    a[] <- 1:4
  }
  expect_error(use(list(filters = list(list(id = 10L)))), "filter id 10 is not supported", class = "zarr_error_codec")
  expect_error(use(list(filters = list(list(id = 3L, lc = 1L), list(id = 33L)))), "DELTA has no option 'lc'",
               class = "zarr_error_codec")
  expect_error(use(list(preset = 1L, filters = list(list(id = 33L)))), "not both", class = "zarr_error_codec")
  expect_error(use(list(format = 3L)), "needs filters", class = "zarr_error_codec")
  expect_error(use(list(format = 2L, check = 4L)), "needs format 1", class = "zarr_error_codec")
  expect_error(use(list(check = 3L)), "check must be", class = "zarr_error_codec")
  expect_error(use(list(preset = 12L)), "preset must be", class = "zarr_error_codec")
  expect_error(use(list(format = 2L, filters = list(list(id = 33L)))), "single LZMA1", class = "zarr_error_codec")
})
