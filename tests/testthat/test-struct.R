# The `struct` data type (zarr-extensions data-types/struct, and its legacy
# name "structured") and Zarr v2 structured (numpy record) dtypes: arrays of
# records read as data.frames, written from data.frames; checked against
# zarr-python 2 (numpy structured arrays) and GDAL's compound stores.

struct_type <- function(...) list(name = "struct", configuration = list(fields = list(...)))
field <- function(name, type, shape = NULL) c(list(name = name, data_type = type), if (!is.null(shape)) list(shape = shape))
fixed_bytes <- function(n) list(name = "null_terminated_bytes", configuration = list(length_bytes = n))
fixed_utf32 <- function(n) list(name = "fixed_length_utf32", configuration = list(length_bytes = 4 * n))

sample_type <- struct_type(
  field("id", "int32"), field("flag", "uint8"), field("v", "float64"),
  field("p", struct_type(field("x", "float32"), field("y", "int16"))),
  field("z", "complex64"), field("big", "uint64"),
  field("s", fixed_bytes(5)), field("u", fixed_utf32(3)))

sample_frame <- function() {
  df <- data.frame(id = c(1L, -2L, NA, 2147483647L, 5L), flag = c(0L, 1L, 2L, 255L, 7L),
                   v = c(1.5, NA, -2, Inf, 1e300))
  df$p <- data.frame(x = c(1, 2.5, -3, 4, NaN), y = c(-1L, -32768L, 3L, 32767L, 0L))
  df$z <- complex(real = 1:5, imaginary = -(1:5))
  df$big <- c(0, 1, 2^40, 2^53, 7)
  df$s <- c("a", "bb", "", "ccccc", "\u00e9")
  df$u <- c("\u03b1", "xyz", "", "abc", "\U0001F600")
  df
}

new_struct_array <- function(p, fmt, type, shape, chunks, endian = "little", fill = NULL, name = "t", compress = TRUE) {
  withr::local_options(zarr.format = fmt)
  z <- create_zarr(p)
  d <- define_array(type, shape)
  d$chunk_shape <- chunks
  d$add_codec("bytes", list(endian = endian))
  if (!compress) d$remove_codec("zstd")
  if (!is.null(fill)) d$fill_value <- fill
  z$add_array("/", name, d)
}

test_that("struct arrays round trip as data.frames, v2 and v3, both byte orders", {
  skip_if_not_installed("withr")
  df <- sample_frame()
  for (fmt in 2:3) for (endian in c("little", "big")) {
    info <- paste0("v", fmt, " ", endian)
    p <- local_store_path()
    fill <- list(id = -1L, flag = 9L, v = 0.25, p = list(x = 1, y = 2L), z = 3 + 4i, big = 11, s = "f", u = "\u00fc")
    a <- new_struct_array(p, fmt, sample_type, 7, 3, endian, fill)
    a$write(df)
    x <- a$read()
    expect_s3_class(x, "data.frame")
    expect_identical(names(x), names(df), info = info)
    expect_equal(x[1:5, c("id", "flag", "v", "z", "s", "u")], df[, c("id", "flag", "v", "z", "s", "u")], info = info,
                 ignore_attr = "row.names")
    expect_equal(x$p$x[1:5], df$p$x, info = info)
    expect_identical(x$p$y[1:5], df$p$y, info = info)
    expect_identical(as.character(x$big[1:5]), c("0", "1", "1099511627776", "9007199254740992", "7"), info = info)
    # elements never written read as the fill value, field by field
    expect_identical(x$id[6:7], c(-1L, -1L), info = info)
    expect_identical(x$p$y[6:7], c(2L, 2L), info = info)
    expect_identical(x$s[7], "f", info = info)
    expect_identical(x$u[7], "\u00fc", info = info)
    expect_identical(x$z[6], 3 + 4i, info = info)
    # reopened from its metadata
    b <- open_zarr(p)[["/t"]]
    expect_identical(b$read(), x, info = info)
    expect_identical(b$data_type$fill_value$p$y, 2L, info = info)
  }
})

test_that("the v3 metadata of a struct follows zarr-extensions (fields, per-field fill object, bytes endian)", {
  skip_if_not_installed("withr")
  p <- local_store_path()
  a <- new_struct_array(p, 3, struct_type(field("x", "float32"), field("n", struct_type(field("k", "int8")))), 4, 4, "big",
                        list(x = "NaN", n = list(k = -3L)), compress = FALSE)
  m <- jsonlite::fromJSON(file.path(p, "t", "zarr.json"), simplifyVector = FALSE)
  expect_identical(m$data_type$name, "struct")
  expect_identical(m$data_type$configuration$fields[[1]], list(name = "x", data_type = "float32"))
  expect_identical(m$data_type$configuration$fields[[2]]$data_type$name, "struct")
  expect_identical(m$fill_value, list(x = "NaN", n = list(k = -3L)))
  expect_identical(m$codecs, list(list(name = "bytes", configuration = list(endian = "big"))))
  x <- a$read()
  expect_true(all(is.nan(x$x)))
  expect_identical(x$n$k, rep(-3L, 4))
  # packed records, big endian: 4 + 1 bytes, no padding
  df4 <- data.frame(x = rep(1, 4))
  df4$n <- data.frame(k = rep(2L, 4))
  a$write(df4)
  expect_identical(readBin(file.path(p, "t", "c.0"), "raw", 100), rep(as.raw(c(0x3f, 0x80, 0, 0, 2)), 4))
})

test_that("the legacy 'structured' name and tuple fields read as struct", {
  p <- local_store_path()
  dir.create(file.path(p, "c"), recursive = TRUE)
  writeLines('{"zarr_format": 3, "node_type": "array", "shape": [2],
    "data_type": {"name": "structured", "configuration": {"fields": [["a", "int16"], ["b", "uint8"]]}},
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": "AQAC",
    "codecs": [{"name": "bytes"}], "attributes": {}}', file.path(p, "zarr.json"))
  a <- open_zarr(p)[["/"]]
  expect_identical(a$read(), data.frame(a = c(1L, 1L), b = c(2L, 2L)))
  writeBin(as.raw(c(0xff, 0xff, 7, 3, 0, 9)), file.path(p, "c", "0"))
  expect_identical(a$read(), data.frame(a = c(-1L, 3L), b = c(7L, 9L)))
  # base64 record bytes follow the bytes codec's byte order
  m <- paste(readLines(file.path(p, "zarr.json")), collapse = "\n")
  writeLines(sub('[{]"name": "bytes"[}]', '{"name": "bytes", "configuration": {"endian": "big"}}', m), file.path(p, "zarr.json"))
  a <- open_zarr(p)[["/"]]
  expect_identical(a$data_type$fill_value, list(a = 256L, b = 2L))
  expect_identical(a$read(), data.frame(a = c(-1L, 3L * 256L), b = c(7L, 9L))) # 03 00 big endian
  expect_output(print(a), "a = 256, b = 2", fixed = TRUE)
})

test_that("n-d struct arrays read as one row per element in R's order; x[i, j] selects", {
  skip_if_not_installed("withr")
  p <- local_store_path()
  type <- struct_type(field("i", "int32"), field("m", "float64", shape = list(2)))
  a <- new_struct_array(p, 2, type, c(3, 4), c(2, 3), "big", list(i = -1L, m = c(0.5, 2)))
  df <- data.frame(i = 1:6)
  df$m <- cbind(1:6 / 2, -(1:6))
  a$write(df, selection = list(NULL, 1:2))
  x <- a$read()
  expect_identical(attr(x, "zarr_shape"), c(3, 4))
  expect_identical(x$i, c(1:6, rep(-1L, 6)))
  expect_identical(x$m[1:6, ], df$m)
  expect_identical(x$m[7, ], c(0.5, 2))
  y <- a[2:3, 2]
  expect_identical(y$i, 5:6)
  expect_identical(y$m, df$m[5:6, ])
  expect_identical(a[1, c(1, 3)]$i, c(1L, -1L))
  # replacement by index: records recycle by rows
  a[1, 3:4] <- df[6, ]
  expect_identical(a[1, 3:4]$i, c(6L, 6L))
  a[2:3, 3:4] <- df[1:2, ]
  expect_identical(a[, 3:4]$i, c(6L, 1L, 2L, 6L, 1L, 2L))
  expect_identical(a[2, 4]$m, df$m[1, , drop = FALSE])
  expect_error(a[2:3, 3:4] <- df[1:3, ], class = "zarr_error_value")
  expect_error(a$write(df[1:5, ], selection = list(NULL, 1:2)), class = "zarr_error_value")
  expect_error(a$write(data.frame(j = 1:6), selection = list(NULL, 1:2)), class = "zarr_error_value")
  expect_error(a$write(data.frame(i = 1:6, m = 1:6), selection = list(NULL, 1:2)), class = "zarr_error_value")
})

test_that("sharded struct arrays read (records of an int16 array relabelled)", {
  skip_if_not_installed("withr")
  p <- local_store_path()
  withr::local_options(zarr.format = 3)
  z <- create_zarr(p)
  d <- define_array("int16", 10)
  d$chunk_shape <- 12
  d$fill_value <- 0L
  d$add_codec("bytes", list(endian = "big"))
  d$add_codec("sharding_indexed", list(chunk_shape = 4))
  a <- z$add_array("/", "s", d)
  a$write(c(1:6 * 256L + 1:6, 0L, 0L, 0L, 0L)) # big endian: a = 1:6, b = 1:6; one inner chunk missing
  m <- jsonlite::fromJSON(file.path(p, "s", "zarr.json"), simplifyVector = FALSE)
  m$data_type <- struct_type(field("a", "uint8"), field("b", "int8"))
  m$fill_value <- list(a = 9L, b = -9L)
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE), file.path(p, "s", "zarr.json"))
  x <- open_zarr(p)[["/s"]]$read()
  expect_identical(x$a, c(1:6, 0L, 0L, 9L, 9L))
  expect_identical(x$b, c(1:6, 0L, 0L, -9L, -9L))
  # writing sharded record arrays is refused by the engine, as for strings
  expect_error(open_zarr(p)[["/s"]]$write(x), class = "zarr_error")
})

# ---------------------------------------------------------------- zarr-python 2

py_records <- '
import zarr, numpy as np
def col(x):
    if x.dtype.names:
        return {n: col(x[n]) for n in x.dtype.names}
    if x.dtype.kind == "S":
        return [v.decode("utf-8") for v in x.tolist()]
    if x.dtype.kind == "c":
        return [[float(v.real), float(v.imag)] for v in x.tolist()]
    if x.dtype.kind == "f":
        return [[val(float(e), "f") for e in v] if isinstance(v, list) else val(float(v), "f") for v in x.tolist()]
    return x.tolist()
def records(a):
    x = a[...].flatten(order="F")   # R order
    return {"dtype": str(a.dtype), "fill": None if a.fill_value is None else str(a.fill_value), "cols": col(x)}
'

expect_frame_matches <- function(x, cols, info = NULL) {
  for (nm in names(cols)) {
    v <- x[[nm]]
    want <- cols[[nm]]
    if (is.data.frame(v)) { expect_frame_matches(v, want, info = paste(info, nm)); next }
    if (is.complex(v)) { expect_equal(cbind(Re(v), Im(v)), do.call(rbind, lapply(want, unlist)), info = paste(info, nm), ignore_attr = TRUE); next }
    if (is.matrix(v)) { expect_equal(unclass(v), do.call(rbind, lapply(want, function(r) as.numeric(unlist(r)))), info = paste(info, nm), ignore_attr = TRUE); next }
    w <- unlist(lapply(want, function(e) if (is.null(e)) NA else e))
    if (is.character(w) && is.numeric(v)) w <- suppressWarnings(as.numeric(ifelse(w == "NaN", NaN, w)))
    if (is.double(v)) w <- as.numeric(w)
    if (is.integer(v)) v <- ifelse(is.na(v), -2^31, v) # R's NA is int32's smallest value
    expect_equal(v, w, info = paste(info, nm))
  }
}

test_that("zarr-python 2 reads the v2 structured arrays this package writes", {
  skip_without_python_zarr()
  skip_if_not_installed("withr")
  df <- sample_frame()
  df$big <- NULL
  type <- sample_type
  type$configuration$fields[[6]] <- NULL
  type$configuration$fields[[length(type$configuration$fields) + 1L]] <- field("m", "int16", shape = list(3))
  df$m <- matrix(c(1:15), 5, 3)
  for (endian in c("little", "big")) {
    p <- local_store_path()
    a <- new_struct_array(p, 2, type, c(2, 4), c(2, 3), endian,
                          list(id = 7L, flag = 1L, v = -1, p = list(x = 0, y = 0L), z = 0i, s = "q", u = "r", m = c(1L, 2L, 3L)))
    a$write(df[1:4, ], selection = list(NULL, 1:2))
    x <- a$read()
    res <- run_python(paste0(py_records, 'emit(records(zarr.open(sys.argv[1], mode="r")))'), file.path(p, "t"))
    expect_match(res$dtype, if (endian == "big") ">i4" else "<i4", fixed = TRUE)
    expect_frame_matches(x, res$cols, info = endian)
    expect_identical(x$s[8], "q")
  }
})

test_that("this package reads the v2 structured arrays zarr-python 2 writes, fill values included", {
  skip_without_python_zarr()
  p <- local_store_path()
  res <- run_python(paste0(py_records, '
root = zarr.open_group(sys.argv[1], mode="w")
out = {}
for name, dt, order in [("le", [("a", "<i4"), ("b", "<f8", (2,)), ("c", "S4"), ("n", [("x", "<u2"), ("y", "i1")])], "C"),
                        ("be", [("a", ">i4"), ("b", ">f8", (2,)), ("c", ">U3"), ("n", [("x", ">u2"), ("y", "i1")])], "F")]:
    fill = np.zeros((), dtype=dt)
    fill["a"] = -5; fill["b"] = [1.5, -2]; fill["c"] = "zz"; fill["n"]["x"] = 65535; fill["n"]["y"] = -128
    a = root.create_dataset(name, shape=(3, 5), chunks=(2, 2), dtype=dt, fill_value=fill.tobytes(), order=order,
                            compressor=zarr.Blosc(cname="lz4", shuffle=1))
    v = np.zeros((2, 3), dtype=dt)
    v["a"] = np.arange(6).reshape(2, 3); v["b"][..., 0] = 0.25; v["b"][..., 1] = np.arange(6).reshape(2, 3) * 3
    v["c"] = "ab"; v["n"]["x"] = 1000; v["n"]["y"] = np.arange(6).reshape(2, 3) - 3
    a[1:3, 0:3] = v
    out[name] = records(a)
emit(out)'), p)
  for (nm in c("le", "be")) {
    a <- open_zarr(p)[[paste0("/", nm)]]
    x <- a$read()
    expect_identical(attr(x, "zarr_shape"), c(3, 5))
    expect_frame_matches(x, res[[nm]]$cols, info = nm)
    expect_identical(a$data_type$fill_value$n$x, 65535L)
    expect_identical(x$c[1], "zz")
  }
})

test_that("GDAL's compound stores read as zarr-python 2 reads them", {
  skip_without_python_zarr()
  fx <- fixtures_dir()
  root <- file.path(if (nzchar(fx)) dirname(fx) else "../../../shared", "realworld", "gdal")
  skip_if_not(dir.exists(file.path(root, "compound_complex.zarr")), "../shared/realworld/gdal is not here")
  for (nm in c("compound_well_aligned", "compound_not_aligned", "compound_complex")) {
    p <- file.path(root, paste0(nm, ".zarr"))
    res <- run_python(paste0(py_records, 'emit(records(zarr.open(sys.argv[1], mode="r")))'), p)
    x <- open_zarr(p, read_only = TRUE)[["/"]]$read()
    expect_frame_matches(x, res$cols, info = nm)
  }
  x <- open_zarr(file.path(root, "compound_complex.zarr"), read_only = TRUE)[["/"]]$read()
  # chunk 1 is missing: the fill value's record
  expect_identical(x$b$b3, c(1000L, 65534L))
  expect_identical(x$c, c("AAA", "ZZ"))
})

# ---------------------------------------------------------------- hostile metadata

test_that("invalid struct definitions are classed errors", {
  bad <- list(
    struct_type(),
    struct_type(field("a", "int32"), field("a", "uint8")),
    struct_type(field("a", "string")),
    struct_type(field("a", "no.such.type")),
    struct_type(field("", "int8")),
    struct_type(field("a", fixed_bytes(-1))),
    struct_type(field("a", "int8", shape = list(0))),
    struct_type(field("a", struct_type()))
  )
  for (ty in bad) expect_error(define_array(ty, 3), class = "zarr_error_data_type")
  d <- define_array(struct_type(field("a", "int8"), field("b", "float32")), 3)
  expect_error(d$fill_value <- list(a = 1L), class = "zarr_error_fill_value")
  expect_error(d$fill_value <- list(a = 1L, b = 2, c = 3), class = "zarr_error_fill_value")
  expect_error(d$fill_value <- list(a = 1000L, b = 2), class = "zarr_error")
  expect_error(d$fill_value <- "AAAA", class = "zarr_error_fill_value") # 3 bytes, a record has 5
})

test_that("hostile v2 structured metadata and chunks are classed errors", {
  p <- local_store_path()
  dir.create(p)
  put <- function(dtype, fill = "null", chunk = NULL) {
    writeLines(sprintf('{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": %s, "fill_value": %s,
      "order": "C", "compressor": null, "filters": null}', dtype, fill), file.path(p, ".zarray"))
    unlink(file.path(p, "0"))
    if (!is.null(chunk)) writeBin(chunk, file.path(p, "0"))
    open_zarr(p, read_only = TRUE)[["/"]]
  }
  expect_error(put('[["a", "<i4"], ["a", "<f8"]]')$read(), class = "zarr_error")
  expect_error(put('[["a", "<q9"]]')$read(), class = "zarr_error")
  expect_error(put('[["a", "<i4"], ["b", ">i4"]]')$read(), class = "zarr_error") # mixed byte orders
  expect_error(put('[["a"]]')$read(), class = "zarr_error")
  expect_error(put('[]')$read(), class = "zarr_error")
  expect_error(put('[["a", "<i2"]]', '"AAAA"'), class = "zarr_error_metadata") # 3 bytes for a 2-byte record
  expect_error(put('[["a", "<i2"]]', '"%%%%"'), class = "zarr_error_metadata")
  a <- put('[["a", "<i2"], ["b", "|u1"]]', chunk = as.raw(1:5)) # 5 bytes, 6 expected
  expect_error(a$read(), class = "zarr_error_corrupt_chunk")
  a <- put('[["a", "<i2"], ["b", "|S2"]]', chunk = as.raw(c(1, 0, 0xff, 0xfe, 2, 0, 0x41, 0)))
  expect_error(a$read(), class = "zarr_error_value") # not UTF-8 text
  a <- put('[["a", "<i2"], ["b", "|u1"]]', '"AQAC"', chunk = as.raw(c(1, 0, 2, 3, 0, 4)))
  expect_identical(a$read(), data.frame(a = c(1L, 3L), b = c(2L, 4L)))
})
