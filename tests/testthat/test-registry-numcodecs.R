# The numcodecs codecs of the registry survey (issue 30) in Zarr v2 metadata:
# crc32, jenkins_lookup3, packbits, categorize, vlen-array. Each is written by
# numcodecs 0.11 / zarr-python 2 and read here, and written here and read by
# them; jenkins_lookup3 (numcodecs 0.12 and later) is checked against the
# hash values numcodecs publishes for lookup3.

# A v2 array written here: its builder gets `codecs` after the bytes codec.
v2_array_here <- function(path, dtype, shape, chunk, codecs = list(), fill = NULL) {
  old <- options(zarr.format = 2L)
  on.exit(options(old))
  z <- create_zarr(path)
  b <- define_array(dtype, shape)
  b$format <- 2L
  b$chunk_shape <- chunk
  b$portable <- TRUE
  if (!is.null(fill)) b$fill_value <- fill
  b$remove_codec("zstd")
  for (cd in codecs) b$add_codec(cd[[1L]], cd[[2L]])
  z$add_array("/", "a", b)
}

test_that("numcodecs crc32 reads from and writes for zarr-python 2", {
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numcodecs, numpy as np
z = zarr.open(sys.argv[1], mode="w", shape=(10,), chunks=(4,), dtype="<i4", compressor=numcodecs.CRC32(), fill_value=-1)
z[:] = np.arange(10) * 3
emit(None)
', path)
  a <- open_zarr(path)[["/"]]
  expect_identical(a[], seq(0L, 27L, by = 3L))
  # the stored chunk: the crc32 of the elements, little endian, then the elements
  raw0 <- readBin(file.path(path, "0"), "raw", 100)
  expect_length(raw0, 20L)
  expect_identical(raw0[5:20], writeBin(c(0L, 3L, 6L, 9L), raw(), size = 4, endian = "little"))
  # a damaged chunk is refused
  bad <- raw0
  bad[10] <- as.raw(0xff)
  writeBin(bad, file.path(path, "0"))
  expect_error(open_zarr(path)[["/"]][1:2], class = "zarr_error_checksum")

  path2 <- local_store_path()
  a2 <- v2_array_here(path2, "int16", 7, 3, list(list("numcodecs.crc32", list())))
  a2[] <- c(-3L, 1L, 4L, 1L, 5L, 9L, 2L)
  got <- run_python('
import zarr
z = zarr.open(sys.argv[1], mode="r")
emit({"v": [int(x) for x in z[:]], "c": z.compressor.get_config()})
', file.path(path2, "a"))
  expect_identical(unlist(got$v), c(-3L, 1L, 4L, 1L, 5L, 9L, 2L))
  expect_identical(got$c$id, "crc32")
})

test_that("numcodecs packbits (bool, most significant bit first) reads from and writes for zarr-python 2", {
  skip_without_python_zarr()
  path <- local_store_path()
  bits <- c(TRUE, FALSE, FALSE, TRUE, TRUE, TRUE, FALSE, TRUE, FALSE, FALSE, FALSE, TRUE, TRUE)
  run_python('
import zarr, numcodecs, numpy as np, json
z = zarr.open(sys.argv[1], mode="w", shape=(13,), chunks=(10,), dtype=bool,
              filters=[numcodecs.PackBits()], compressor=numcodecs.Zlib(level=1), fill_value=False)
z[:] = np.array(json.loads(sys.argv[2]), dtype=bool)
emit(None)
', c(path, jsonlite::toJSON(bits)))
  expect_identical(open_zarr(path)[["/"]][], bits)

  path2 <- local_store_path()
  a2 <- v2_array_here(path2, "bool", 13, 10, list(list("numcodecs.packbits", list())), fill = FALSE)
  a2[] <- bits
  # 10 elements: 6 padding bits, then 1001 1101 and 00 (numpy.packbits order)
  expect_identical(readBin(file.path(path2, "a", "0"), "raw", 10), as.raw(c(0x06, 0x9d, 0x00)))
  # packbits as a filter before a compressor, and as the compressor itself
  path3 <- local_store_path()
  a3 <- v2_array_here(path3, "bool", 13, 10, list(list("numcodecs.packbits", list()),
                                                  list("numcodecs.zlib", list(level = 1L))), fill = FALSE)
  a3[] <- bits
  got <- run_python('
import zarr
out = {}
for p in sys.argv[1:]:
    z = zarr.open(p, mode="r")
    out[os.path.basename(os.path.dirname(p))] = {"v": [bool(x) for x in z[:]],
        "f": [f.codec_id for f in (z.filters or [])], "c": z.compressor.codec_id}
emit(out)
', c(file.path(path2, "a"), file.path(path3, "a")))
  expect_identical(unlist(got[[basename(path2)]]$v), bits)
  expect_identical(got[[basename(path2)]]$c, "packbits")
  expect_identical(unlist(got[[basename(path3)]]$v), bits)
  expect_identical(unlist(got[[basename(path3)]]$f), "packbits")
  expect_identical(got[[basename(path3)]]$c, "zlib")
})

test_that("jenkins_lookup3 gives lookup3's published hashes and numcodecs' chunk layout", {
  h <- function(text, initval = 0, prefix = NULL) {
    spec <- list(name = "jenkins_lookup3", initval = initval,
                 prefix = zarr:::jenkins_prefix_hex(prefix))
    enc <- .Call(zarr:::ffi_codec_encode, spec, charToRaw(text))
    n <- length(enc)
    expect_identical(enc[seq_len(n - 4L)], charToRaw(text)) # the data, then the hash
    sum(as.numeric(enc[(n - 3L):n]) * 256^(0:3))
  }
  # the values numcodecs' tests (and lookup3.c's driver) give for hashlittle()
  expect_identical(h(""), as.numeric(0xDEADBEEF))
  expect_identical(h("", 0xDEADBEEF), as.numeric(0xBD5B7DDE))
  expect_identical(h("Four score and seven years ago"), as.numeric(0x17770551))
  expect_identical(h("Four score and seven years ago", 1), as.numeric(0xCD628161))
  expect_identical(h("jenkins"), 202276345)
  # a prefix is hashed as if it came before the data, at every split
  text <- "Four score and seven years ago"
  for (k in c(1L, 5L, 12L, 13L, 24L, 29L)) {
    pre <- as.integer(charToRaw(substr(text, 1L, k)))
    expect_identical(h(substring(text, k + 1L), prefix = pre), as.numeric(0x17770551), info = k)
  }
  # through an array (v3 name numcodecs.jenkins_lookup3), and a damaged chunk
  path <- local_store_path()
  z <- create_zarr(path)
  b <- define_array("float64", 6)
  b$chunk_shape <- 6
  b$add_codec("numcodecs.jenkins_lookup3", list(initval = 7))
  a <- z$add_array("/", "a", b)
  a[] <- c(1.5, -2, 0, 3, NaN, 1e300)
  expect_identical(open_zarr(path)[["/a"]][], c(1.5, -2, 0, 3, NaN, 1e300))
  f <- list.files(file.path(path, "a"), recursive = TRUE, full.names = TRUE)
  f <- f[!grepl("zarr.json$", f)]
  raw0 <- readBin(f, "raw", 1000)
  raw0[3] <- xor(raw0[3], as.raw(1)) # inside the zstd frame the hash covers
  writeBin(raw0, f)
  expect_error(open_zarr(path)[["/a"]][], class = "zarr_error_checksum")
  expect_error(zarr:::jenkins_prefix_hex(list(1, 300)), class = "zarr_error_codec")
})

test_that("jenkins_lookup3 in a v2 document reads as numcodecs 0.12 writes it", {
  path <- local_store_path()
  dir.create(path)
  vals <- c(10L, 20L, 30L)
  body <- writeBin(vals, raw(), size = 4, endian = "little")
  spec <- list(name = "jenkins_lookup3", initval = 0, prefix = "")
  writeBin(.Call(zarr:::ffi_codec_encode, spec, body), file.path(path, "0"))
  writeLines('{"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<i4", "fill_value": 0,
    "order": "C", "filters": null, "compressor": {"id": "jenkins_lookup3", "initval": 0, "prefix": null}}',
    file.path(path, ".zarray"))
  expect_identical(open_zarr(path)[["/"]][], vals)
})

test_that("numcodecs categorize (object and <U arrays) reads from and writes for zarr-python 2", {
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numcodecs, numpy as np, warnings
warnings.simplefilter("ignore")
data = np.array(["female", "male", "female", "other", "male"], dtype=object)
z = zarr.open(os.path.join(sys.argv[1], "o"), mode="w", shape=(5,), chunks=(3,), dtype=object,
              filters=[numcodecs.Categorize(labels=["female", "male"], dtype=object)], compressor=None)
z[:] = data
z = zarr.open(os.path.join(sys.argv[1], "u"), mode="w", shape=(5,), chunks=(3,), dtype="<U6",
              filters=[numcodecs.Categorize(labels=["female", "male"], dtype="<U6", astype="<u2")],
              compressor=numcodecs.Zlib())
z[:] = data.astype("<U6")
emit(None)
', path)
  z <- open_zarr(path)
  expect_identical(z[["/o"]][], c("female", "male", "female", "", "male")) # no label: "", as numcodecs
  expect_identical(z[["/u"]][], c("female", "male", "female", "", "male"))
  # the stored codes: one byte per element, 1-based
  expect_identical(readBin(file.path(path, "o", "0"), "raw", 10), as.raw(c(1, 2, 1)))
  # written here: codes for zarr-python to read, in place and in a new array
  z[["/o"]][4:5] <- c("male", "female")
  z[["/u"]][1] <- "male"
  old <- options(zarr.format = 2L)
  z2 <- create_zarr(file.path(path, "new"))
  options(old)
  b <- define_array("string", 4)
  b$format <- 2L
  b$chunk_shape <- 4
  b$add_codec("categorize", list(labels = list("x", "y", "z"), dtype = "|O", astype = "|u1"))
  a <- z2$add_array("/", "c", b)
  a[] <- c("z", "x", "y", "q")
  got <- run_python('
import zarr, warnings
warnings.simplefilter("ignore")
out = []
for p in sys.argv[1:]:
    z = zarr.open(p, mode="r")
    out.append([None if v is None else str(v) for v in z[:]])
emit(out)
', c(file.path(path, "o"), file.path(path, "u"), file.path(path, "new", "c")))
  expect_identical(unlist(got[[1]]), c("female", "male", "female", "male", "female"))
  expect_identical(unlist(got[[2]]), c("male", "male", "female", "", "male"))
  expect_identical(unlist(got[[3]]), c("z", "x", "y", "")) # a value without a label
  expect_error(zarr:::categorize_type("|u1", 300), class = "zarr_error_codec")
})

test_that("numcodecs vlen-array reads from and writes for zarr-python 2", {
  skip_without_python_zarr()
  path <- local_store_path()
  run_python('
import zarr, numcodecs, numpy as np
z = zarr.open(os.path.join(sys.argv[1], "i"), mode="w", shape=(4,), chunks=(3,), dtype=object,
              object_codec=numcodecs.VLenArray("<i4"))
z[0] = np.array([1, 2, 3]); z[1] = np.array([], dtype="<i4"); z[2] = np.array([-5]); z[3] = np.array([7, 8])
z = zarr.open(os.path.join(sys.argv[1], "f"), mode="w", shape=(2, 2), chunks=(1, 2), dtype=object,
              object_codec=numcodecs.VLenArray(">f8"))
z[0, 0] = np.array([1.5]); z[0, 1] = np.array([2.5, -1]); z[1, 0] = np.array([]); z[1, 1] = np.array([1e300])
emit(None)
', path)
  z <- open_zarr(path)
  expect_identical(z[["/i"]][], list(1:3, integer(0), -5L, 7:8))
  f <- z[["/f"]][]
  expect_identical(dim(f), c(2L, 2L))
  expect_identical(f[[1, 2]], c(2.5, -1))
  expect_identical(f[[2, 2]], 1e300)
  z[["/i"]][2] <- list(c(10L, 11L))
  old <- options(zarr.format = 2L)
  z2 <- create_zarr(file.path(path, "new"))
  options(old)
  b <- define_array("vlen_array", 3)
  b$format <- 2L
  b$chunk_shape <- 2
  b$add_codec("vlen-array", list(dtype = "<u2"))
  a <- z2$add_array("/", "v", b)
  a[] <- list(c(1L, 65535L), integer(0), 42L)
  expect_identical(a[], list(c(1L, 65535L), integer(0), 42L))
  got <- run_python('
import zarr
out = []
for p in sys.argv[1:]:
    z = zarr.open(p, mode="r")
    out.append({"v": [[int(x) for x in v] for v in z[:]], "f": z.filters[0].get_config()})
emit(out)
', c(file.path(path, "i"), file.path(path, "new", "v")))
  expect_identical(lapply(got[[1]]$v, function(v) as.integer(unlist(v))), list(1:3, 10:11, -5L, 7:8))
  expect_identical(lapply(got[[2]]$v, function(v) as.integer(unlist(v))), list(c(1L, 65535L), integer(0), 42L))
  expect_identical(got[[2]]$f$dtype, "<u2")
  expect_error(zarr:::vlen_array_type("<c16"), class = "zarr_error_codec")
})
