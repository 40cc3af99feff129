# Interoperability with real clients from Debian: zarr-python 2 and numcodecs
# (python3-zarr), xarray (python3-xarray) and GDAL (python3-gdal). Each
# direction: the client writes a store that this package reads, and reads a
# store that this package writes. Zarr v2 only: these versions know no final
# Zarr v3 (zarr-python 2 and GDAL 3.6 implement drafts of it).
# The tests skip when the clients are absent, and fail instead under
# ZARR_REQUIRE_INTEROP=true (CI). helper-python.R runs the scripts.

# ---------------------------------------------------------------- R -> zarr-python

# A v2 store written by this package with most of what it can write.
write_r_v2_store <- function(path) {
  withr::local_options(zarr.format = 2L)
  z <- create_zarr(path)
  z$root$set_attribute("title", "caf\u00e9 \u65e5\u672c \U0001F600")
  z$root$set_attribute("numbers", c(1.5, 2))
  z$root$set_attribute("big", bit64::as.integer64("9007199254740993"))
  dtypes <- c("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64", "complex64", "complex128")
  compressors <- list(list("zstd", list(level = 1L)), list("gzip", list(level = 5L)),
                      list("blosc", list(cname = "lz4", clevel = 5L, shuffle = "shuffle")),
                      list("blosc", list(cname = "zstd", clevel = 3L, shuffle = "bitshuffle")),
                      list("blosc", list(cname = "blosclz", clevel = 1L, shuffle = "noshuffle")),
                      NULL, list("numcodecs.lz4", list(acceleration = 1L)),
                      list("numcodecs.bz2", list(level = 9L)), list("numcodecs.zlib", list(level = 3L)))
  g <- z$add_group("/", "types")
  for (i in seq_along(dtypes)) {
    dt <- dtypes[i]
    d <- define_array(dt, c(5, 7))
    d$chunk_shape <- c(2, 3)
    d$portable <- i %% 2 == 0 # C order; else F order (transpose)
    d$remove_codec("zstd")
    cp <- compressors[[(i - 1) %% length(compressors) + 1]]
    if (!is.null(cp)) d$add_codec(cp[[1]], cp[[2]])
    a <- g$add_array(dt, d)
    a[] <- dtype_array(dt, c(5, 7))
  }
  # strings of the three kinds, with NA (written as the fill value "") and non-ASCII text
  s <- z$add_array("/", "vlen", define_array("string", 6))
  s[1:5] <- c("a", "\u00e9t\u00e9", NA, "", "\U0001F600") # NA: the default fill value "NA"
  u <- z$add_array("/", "utf32", define_array(list(name = "fixed_length_utf32", configuration = list(length_bytes = 12L)), 4))
  u[] <- c("abc", "\u00e9", "", "xyz")
  b <- z$add_array("/", "bytes", define_array(list(name = "null_terminated_bytes", configuration = list(length_bytes = 4L)), 3))
  b[] <- c("ab", "wxyz", "")
  # fill values: partly written arrays, 64-bit extremes, NaT
  f <- define_array("int16", 10)
  f$chunk_shape <- 3
  f$fill_value <- 7L
  fa <- z$add_array("/", "fill_int16", f)
  fa[1:2] <- c(1L, 2L)
  z$add_array("/", "fill_uint64", define_array("uint64", 4)) # never written
  fd <- z$add_array("/", "fill_float64", define_array("float64", 5))
  fd[2] <- 2.5
  z$add_array("/", "fill_nat", define_array(list(name = "numpy.datetime64", configuration = list(unit = "s", scale_factor = 1L)), 3))
  t <- z$add_array("/", "times", define_array(list(name = "numpy.datetime64", configuration = list(unit = "s", scale_factor = 1L)), 2))
  t[] <- as.POSIXct(c(0, 1.7e9), origin = "1970-01-01", tz = "UTC")
  # filters
  dl <- define_array("int32", 20)
  dl$portable <- TRUE
  dl$add_codec("numcodecs.delta", list(dtype = "<i4"), .position = 1)
  da <- z$add_array("/", "delta", dl)
  da[] <- cumsum(1:20)
  fo <- define_array("float64", 6)
  fo$add_codec("numcodecs.fixedscaleoffset", list(dtype = "<f8", astype = "<i4", scale = 100, offset = 1), .position = 1)
  fa <- z$add_array("/", "fixedscaleoffset", fo)
  fa[] <- c(1, 1.25, 2.5, -3, 0.01, 100)
  qu <- define_array("float64", 5)
  qu$add_codec("numcodecs.quantize", list(digits = 2L, dtype = "<f8"), .position = 1)
  qa <- z$add_array("/", "quantize", qu)
  qa[] <- c(pi, -exp(1), 0, 1e-3, 100.123456)
  as <- define_array("float64", 4)
  as$add_codec("numcodecs.astype", list(encode_dtype = "<f4", decode_dtype = "<f8"), .position = 1)
  aa <- z$add_array("/", "astype", as)
  aa[] <- c(0.5, -1.25, 3e6, 1 / 3)
  sh <- define_array("int32", 8)
  sh$add_codec("numcodecs.shuffle", list(elementsize = 4L), .position = 2)
  sa <- z$add_array("/", "shuffle", sh)
  sa[] <- 1:8 * 1000L
  # groups, attributes and dimension names
  deep <- z$add_group("/", "g1")$add_group("g2")
  deep$set_attribute("note", "\u00fcber")
  arr <- deep$add_array("temperature", define_array("float32", c(3, 4)))
  arr$dimension_names <- c("y", "x")
  arr$set_attribute("units", "\u00b0C")
  arr[] <- matrix(c(-1.5, 0, 21.25, 3, 4, 5, 6, 7, 8, 9, 10, 11), 3)
  zarr_consolidate(z)
  z
}

test_that("zarr-python 2 reads the v2 stores this package writes", {
  skip_without_python_zarr()
  skip_if_not_installed("bit64")
  p <- local_store_path()
  z <- write_r_v2_store(p)
  z$root$set_attribute("after", "consolidation \u00e9") # reaches .zmetadata too
  res <- run_python('
d = {"plain": dump(sys.argv[1]), "consolidated": dump(sys.argv[1], consolidated=True)}
import zarr
d["version"] = zarr.__version__
emit(d)', p)
  for (how in c("plain", "consolidated")) {
    d <- res[[how]]
    expect_identical(sort(names(d$arrays)), sort(z$arrays), info = how)
    for (path in z$arrays) expect_matches_dump(z[[path]], d$arrays[[path]], info = paste(how, path))
    root <- d$groups[["/"]]
    expect_identical(root$title, "caf\u00e9 \u65e5\u672c \U0001F600", info = how)
    expect_identical(root$after, "consolidation \u00e9", info = how)
    expect_identical(as.character(root$big), "9007199254740993", info = how)
    expect_identical(d$groups[["/g1/g2"]]$note, "\u00fcber", info = how)
    tmp <- d$arrays[["/g1/g2/temperature"]]
    expect_identical(tmp$attrs$units, "\u00b0C", info = how)
    expect_identical(unlist(tmp$attrs[["_ARRAY_DIMENSIONS"]]), c("y", "x"), info = how)
  }
  d <- res$plain$arrays
  # orders, compressors and filters as zarr-python sees them
  expect_identical(d[["/types/int8"]]$order, "C")
  expect_identical(d[["/types/bool"]]$order, "F")
  expect_identical(d[["/types/bool"]]$compressor, list(id = "zstd", level = 1L))
  expect_identical(d[["/types/int8"]]$compressor$id, "gzip")
  expect_identical(d[["/types/int16"]]$compressor$shuffle, 1L)
  expect_identical(d[["/types/int32"]]$compressor$shuffle, 2L)
  expect_identical(d[["/types/int64"]]$compressor$shuffle, 0L)
  expect_null(d[["/types/uint8"]]$compressor)
  expect_identical(d[["/types/uint16"]]$compressor$id, "lz4")
  expect_identical(d[["/types/uint32"]]$compressor$id, "bz2")
  expect_identical(d[["/types/uint64"]]$compressor$id, "zlib")
  expect_identical(d[["/delta"]]$filters[[1]]$id, "delta")
  # numpy's own quantize: round(x * 2^7) / 2^7 for 2 digits
  expect_identical(unlist(d[["/quantize"]]$data), round(c(pi, -exp(1), 0, 1e-3, 100.123456) * 128) / 128)
  expect_identical(d[["/quantize"]]$filters[[1]]$id, "quantize")
  expect_identical(unlist(d[["/astype"]]$data), c(0.5, -1.25, 3e6, py_f32(1 / 3)))
  expect_identical(d[["/astype"]]$filters[[1]][c("id", "encode_dtype", "decode_dtype")],
                   list(id = "astype", encode_dtype = "<f4", decode_dtype = "<f8"))
  expect_equal(unlist(d[["/fixedscaleoffset"]]$data), c(1, 1.25, 2.5, -3, 0.01, 100), tolerance = 1e-12)
  # fill values, exactly
  expect_identical(d[["/fill_int16"]]$data[3:10], as.list(rep("7", 8)))
  expect_identical(d[["/fill_uint64"]]$fill_value, "18446744073709551615")
  expect_identical(unlist(d[["/fill_uint64"]]$data), rep("18446744073709551615", 4))
  expect_identical(d[["/fill_float64"]]$data[[1]], "NaN")
  expect_identical(d[["/fill_nat"]]$fill_value, "-9223372036854775808")
  expect_identical(unlist(d[["/times"]]$data), c("0", "1700000000"))
  # NA was written as the default fill value "NA"
  expect_identical(d[["/vlen"]]$fill_value, "NA")
  expect_identical(unlist(d[["/vlen"]]$data[1:5]), c("a", "\u00e9t\u00e9", "NA", "", "\U0001F600"))
  expect_identical(unlist(d[["/utf32"]]$data), c("abc", "\u00e9", "", "xyz"))
  expect_identical(unlist(d[["/bytes"]]$data), c("ab", "wxyz", ""))
})

# ---------------------------------------------------------------- zarr-python -> R

python_writer <- '
import zarr, numcodecs
from numcodecs import Blosc, Zstd, GZip, Zlib, BZ2, LZ4, Delta, FixedScaleOffset, Quantize, AsType, Shuffle
path = sys.argv[1]
root = zarr.open_group(path, mode="w")
root.attrs["title"] = "caf\u00e9 \u65e5\u672c \U0001F600"
root.attrs["nested"] = {"a": [1, 2, 3], "b": None, "big": 18446744073709551615}
rng = np.random.default_rng(42)
comps = [Blosc(cname="lz4", clevel=5, shuffle=Blosc.AUTOSHUFFLE), Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE),
         Blosc(cname="blosclz", shuffle=Blosc.NOSHUFFLE), Zstd(level=3), GZip(level=4), Zlib(level=2), BZ2(level=5), LZ4(), None]
types = ["|b1", "|i1", "<i2", ">i4", "<i8", "|u1", "<u2", ">u4", "<u8", "<f4", ">f8", "<c8", "<c16"]
g = root.create_group("types")
for i, t in enumerate(types):
    dt = np.dtype(t)
    if dt.kind == "b":
        v = rng.integers(0, 2, (5, 7)).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -10**6), min(info.max, 10**6), (5, 7), endpoint=True).astype(dt)
        v[0, 0] = info.max if dt.itemsize < 8 or dt.kind == "i" else 2**63 - 1
        if dt.kind == "i": v[0, 1] = info.min + 1
    elif dt.kind == "f":
        v = rng.standard_normal((5, 7)).astype(dt); v[1, 1] = np.nan; v[1, 2] = np.inf
    else:
        v = (rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7))).astype(dt)
    a = g.create(t.replace("|", "").replace("<", "le_").replace(">", "be_"), shape=(5, 7), chunks=(2, 3), dtype=dt,
                 compressor=comps[i % len(comps)], order="CF"[i % 2], fill_value=None if i % 3 == 0 else 0)
    a[...] = v
# strings: vlen-utf8 (fill None and 0), json2, fixed unicode and bytes
s = root.create("vlen_fill_none", shape=6, chunks=4, dtype=object, object_codec=numcodecs.VLenUTF8(), fill_value=None)
s[0:3] = ["a", "\u00e9t\u00e9", "\U0001F600"]
s = root.create("vlen_fill_0", shape=6, chunks=2, dtype=object, object_codec=numcodecs.VLenUTF8(), fill_value=0)
s[0:3] = ["x", "", "z"]
s = root.create("json2", shape=(3, 4), chunks=(2, 2), dtype=object, object_codec=numcodecs.JSON(), fill_value=None)
s[...] = np.array([["a", "b", "c", "d"], ["e", "\u00e9", "g", "h"], ["i", "j", "k", "l"]], dtype=object)
root.array("unicode", np.array(["abc", "\u00e9t\u00e9", ""], dtype="<U5"), chunks=2)
root.array("unicode_be", np.array(["abc", "xy"], dtype=">U3"), chunks=2)
root.array("bytes", np.array([b"ab", b"wxyz", b""], dtype="|S4"), chunks=2)
root.array("times", np.array(["1970-01-01T00:00:00", "2023-11-14T22:13:20"], dtype="datetime64[s]"), chunks=1)
root.array("days", np.array(["1970-01-02", "2000-01-01"], dtype="datetime64[D]"), chunks=1)
# filters
root.array("delta", np.arange(100, dtype="<i4") * 3, chunks=30, filters=[Delta(dtype="<i4", astype="<i2")])
root.array("fixedscaleoffset", np.linspace(0, 1, 11), chunks=5,
           filters=[FixedScaleOffset(offset=0, scale=10, dtype="<f8", astype="u1")])
root.array("quantize", np.linspace(-1, 1, 9, dtype="<f8") * np.pi, chunks=4, filters=[Quantize(digits=2, dtype="<f8")])
root.array("quantize_f4", np.linspace(-1, 1, 9).astype("<f4") * np.float32(np.pi), chunks=4,
           filters=[Quantize(digits=3, dtype="<f4", astype="<f4")])
root.array("astype", np.linspace(-3, 3, 13, dtype="<f8"), chunks=5, filters=[AsType(encode_dtype="<f4", decode_dtype="<f8")])
root.array("astype_int", np.arange(-5, 6, dtype="<i8"), chunks=4, filters=[AsType(encode_dtype="<i2", decode_dtype="<i8")])
root.array("shuffle", np.arange(50, dtype="<f8"), chunks=20, filters=[Shuffle(elementsize=8)])
# fill values and partial writes
a = root.create("fill_partial", shape=(6, 6), chunks=(4, 4), dtype="<f8", fill_value=-9.5)
a[0:2, 0:2] = 1.0
root.create("fill_uint64", shape=3, chunks=2, dtype="<u8", fill_value=18446744073709551615)
root.create("fill_nat", shape=3, chunks=2, dtype="<M8[ns]", fill_value=np.datetime64("NaT"))
# nested slash-separated chunk keys, groups and attributes
deep = root.create_group("g1").create_group("g2")
deep.attrs["note"] = "\u00fcber"
a = deep.array("nested", np.arange(24, dtype="<i2").reshape(2, 3, 4), chunks=(1, 2, 2), dimension_separator="/")
a.attrs["_ARRAY_DIMENSIONS"] = ["t", "y", "x"]
a.attrs["units"] = "\u00b0C"
zarr.consolidate_metadata(path)
emit(dump(path))
'

test_that("this package reads the v2 stores zarr-python 2 writes", {
  skip_without_python_zarr()
  skip_if_not_installed("bit64")
  p <- local_store_path()
  d <- run_python(python_writer, p)
  z <- open_zarr(p, read_only = TRUE)
  expect_identical(sort(z$arrays), sort(names(d$arrays)))
  for (path in names(d$arrays)) expect_matches_dump(z[[path]], d$arrays[[path]], info = path)
  # the same through consolidated metadata only: hide the per-node documents
  p2 <- local_store_path()
  dir.create(p2)
  file.copy(list.files(p, full.names = TRUE, all.files = TRUE, no.. = TRUE), p2, recursive = TRUE)
  meta <- list.files(p2, pattern = "^[.]z(array|group|attrs)$", recursive = TRUE, all.files = TRUE, full.names = TRUE)
  file.remove(meta[dirname(meta) != p2])
  z2 <- open_zarr(p2, read_only = TRUE)
  expect_identical(sort(z2$arrays), sort(names(d$arrays)))
  for (path in c("/json2", "/types/le_i8", "/g1/g2/nested", "/quantize"))
    expect_matches_dump(z2[[path]], d$arrays[[path]], info = paste("consolidated", path))
  # attributes, dimension names, fill values
  expect_identical(z$root$attributes$title, "caf\u00e9 \u65e5\u672c \U0001F600")
  expect_identical(z$root$attributes$nested$big, "18446744073709551615")
  expect_identical(z[["/g1/g2"]]$attributes$note, "\u00fcber")
  expect_identical(z[["/g1/g2/nested"]]$dimension_names, c("t", "y", "x"))
  expect_identical(z[["/g1/g2/nested"]]$attributes$units, "\u00b0C")
  expect_identical(z[["/fill_uint64"]]$data_type$fill_value, "18446744073709551615")
  expect_identical(z[["/fill_partial"]][5:6, 5], c(NA_real_, NA_real_))
  # a fill value of 0 ("") marks nothing as missing
  expect_identical(z[["/vlen_fill_0"]][], c("x", "", "z", "", "", ""))
  expect_identical(z[["/vlen_fill_none"]]$read(fill_as_na = FALSE)[1:3], c("a", "\u00e9t\u00e9", "\U0001F600"))
  expect_true(all(is.na(z[["/fill_nat"]][])))
  expect_identical(z[["/json2"]][2, ], c("e", "\u00e9", "g", "h"))
  # blosc with numcodecs' automatic shuffle (-1)
  expect_identical(d$arrays[["/types/b1"]]$compressor$shuffle, -1L)
})

test_that("zarr-python 2 reads arrays this package writes into its stores, and metadata saved again", {
  skip_without_python_zarr()
  skip_if_not_installed("bit64")
  p <- local_store_path()
  run_python(python_writer, p)
  z <- open_zarr(p)
  z[["/types/le_i8"]][1, ] <- bit64::as.integer64(-(1:7))
  z[["/json2"]][3, 4] <- "\u00e9\u00e9"
  z[["/vlen_fill_0"]][6] <- "six"
  z[["/fill_uint64"]]$set_attribute("saved", "again")
  z[["/fill_nat"]]$set_attribute("saved", "again")
  z$root$set_attribute("title", "new \u00e9")
  d <- run_python('emit({"plain": dump(sys.argv[1]), "consolidated": dump(sys.argv[1], consolidated=True)})', p)
  for (how in c("plain", "consolidated")) {
    a <- d[[how]]$arrays
    expect_identical(unlist(a[["/types/le_i8"]]$data[1:7]), as.character(-(1:7)), info = how)
    expect_identical(a[["/json2"]]$data[[12]], "\u00e9\u00e9", info = how)
    expect_identical(a[["/vlen_fill_0"]]$data[[6]], "six", info = how)
    expect_identical(a[["/fill_uint64"]]$fill_value, "18446744073709551615", info = how)
    expect_identical(a[["/fill_nat"]]$fill_value, "-9223372036854775808", info = how)
    expect_identical(a[["/fill_nat"]]$attrs$saved, "again", info = how)
    expect_identical(d[[how]]$groups[["/"]]$title, "new \u00e9", info = how)
  }
})

# ---------------------------------------------------------------- xarray

test_that("xarray reads stores this package writes, with dimension names and coordinates", {
  skip_without_xarray()
  withr::local_options(zarr.format = 2L)
  p <- local_store_path()
  z <- create_zarr(p)
  z$root$set_attribute("title", "Temp\u00e9rature")
  lat <- z$add_array("/", "lat", define_array("float64", 3))
  lat$dimension_names <- "lat"
  lat[] <- c(-10, 0, 10)
  lon <- z$add_array("/", "lon", define_array("float64", 4))
  lon$dimension_names <- "lon"
  lon[] <- c(0, 90, 180, 270)
  d <- define_array("float32", c(3, 4))
  tas <- z$add_array("/", "tas", d)
  tas$dimension_names <- c("lat", "lon")
  tas$set_attribute("units", "K")
  x <- matrix(c(250, 260.5, NA, 270, 271, 272, 273, 274, 275, 276, 277, 278), 3)
  tas[] <- x
  nm <- z$add_array("/", "station", define_array("string", 4))
  nm$dimension_names <- "lon"
  nm[] <- c("a", "\u00e9", "c", "d")
  zarr_consolidate(z)
  res <- run_python('
import xarray as xr
out = {}
for consolidated in (True, False):
    ds = xr.open_zarr(sys.argv[1], consolidated=consolidated)
    out[str(consolidated)] = {
        "dims": {k: int(v) for k, v in ds.dims.items()},
        "tas_dims": list(ds["tas"].dims), "station_dims": list(ds["station"].dims),
        "coords": sorted(ds.coords), "title": ds.attrs["title"], "units": ds["tas"].attrs["units"],
        "tas": [val(x, "f") for x in ds["tas"].values.reshape(-1).tolist()],
        "lat": ds["lat"].values.tolist(), "station": [str(s) for s in ds["station"].values.tolist()]}
emit(out)', p)
  for (how in c("True", "False")) {
    r <- res[[how]]
    expect_identical(r$dims, list(lat = 3L, lon = 4L), info = how)
    expect_identical(unlist(r$tas_dims), c("lat", "lon"), info = how)
    expect_identical(unlist(r$station_dims), "lon", info = how)
    expect_identical(unlist(r$coords), c("lat", "lon"), info = how)
    expect_identical(r$title, "Temp\u00e9rature", info = how)
    expect_identical(r$units, "K", info = how)
    # NA was written as the fill value NaN, which xarray shows as NaN
    expect_identical(json_numbers(r$tas), as.vector(t(ifelse(is.na(x), NaN, x))), info = how)
    expect_identical(unlist(r$lat), c(-10, 0, 10), info = how)
    expect_identical(unlist(r$station), c("a", "\u00e9", "c", "d"), info = how)
  }
})

test_that("this package reads stores xarray writes", {
  skip_without_xarray()
  p <- local_store_path()
  d <- run_python('
import xarray as xr, pandas as pd
rng = np.random.default_rng(1)
ds = xr.Dataset(
    {"temperature": (("time", "lat", "lon"), rng.standard_normal((4, 3, 5)).astype("f4")),
     "count": (("lat", "lon"), np.arange(15, dtype="i4").reshape(3, 5)),
     "name": (("lat",), np.array(["north", "\u00e9quateur", "south"], dtype=object))},
    coords={"time": pd.date_range("2000-01-01", periods=4), "lat": [10.0, 0.0, -10.0],
            "lon": np.arange(5) * 72.0},
    attrs={"title": "caf\u00e9", "history": "made by xarray"})
ds["temperature"].attrs["units"] = "\u00b0C"
ds["temperature"][0, 0, 0] = np.nan
ds.to_zarr(sys.argv[1], consolidated=True, mode="w",
           encoding={"temperature": {"chunks": (2, 3, 5)}, "count": {"_FillValue": -1}})
emit(dump(sys.argv[1], consolidated=True))', p)
  z <- open_zarr(p, read_only = TRUE)
  expect_identical(sort(z$arrays), sort(names(d$arrays)))
  for (path in names(d$arrays)) expect_matches_dump(z[[path]], d$arrays[[path]], info = path)
  tmp <- z[["/temperature"]]
  expect_identical(tmp$dimension_names, c("time", "lat", "lon"))
  expect_identical(tmp$attributes$units, "\u00b0C")
  expect_true(is.na(tmp[1, 1, 1]))
  expect_identical(z[["/count"]]$dimension_names, c("lat", "lon"))
  expect_identical(z[["/count"]][2, ], 5:9)
  expect_identical(z[["/name"]][], c("north", "\u00e9quateur", "south"))
  expect_identical(z$root$attributes$title, "caf\u00e9")
  # xarray's CF encoding of time: integers with units in the attributes,
  # decoded to dates (test-cf-xarray.R has the rest of CF decoding)
  expect_match(z[["/time"]]$attributes$units, "^days since 2000-01-01")
  expect_identical(as.numeric(z[["/time"]][decode = FALSE]), c(0, 1, 2, 3))
  expect_identical(z[["/time"]][], as.Date("2000-01-01") + 0:3)
})

# ---------------------------------------------------------------- GDAL

test_that("this package reads v2 stores GDAL writes (shuffle names, filters, compressors)", {
  skip_without_gdal()
  p <- local_store_path()
  d <- run_python('
from osgeo import gdal
gdal.UseExceptions()
drv = gdal.GetDriverByName("ZARR")
ds = drv.CreateMultiDimensional(sys.argv[1], options=["FORMAT=ZARR_V2"])
rg = ds.GetRootGroup()
rg.CreateAttribute("title", [], gdal.ExtendedDataType.CreateString()).Write("caf\u00e9")
dy = rg.CreateDimension("y", None, None, 5)
dx = rg.CreateDimension("x", None, None, 6)
v = np.arange(30, dtype="<i2").reshape(5, 6) - 7
opts = {"blosc_bit": ["COMPRESS=BLOSC", "BLOSC_SHUFFLE=BIT"], "blosc_byte": ["COMPRESS=BLOSC", "BLOSC_SHUFFLE=BYTE"],
        "blosc_none": ["COMPRESS=BLOSC", "BLOSC_SHUFFLE=NONE", "BLOSC_CNAME=zstd"],
        "blosc_2": ["COMPRESS=BLOSC", "BLOSC_SHUFFLE=2"], "zlib": ["COMPRESS=ZLIB"], "gzip": ["COMPRESS=GZIP"],
        "zstd": ["COMPRESS=ZSTD"], "lz4": ["COMPRESS=LZ4"], "delta": ["FILTER=DELTA", "DELTA_DTYPE=<i2"],
        "fortran": ["CHUNK_MEMORY_LAYOUT=F", "COMPRESS=GZIP"], "slash": ["DIM_SEPARATOR=/"]}
for name, o in opts.items():
    a = rg.CreateMDArray(name, [dy, dx], gdal.ExtendedDataType.Create(gdal.GDT_Int16), o + ["BLOCKSIZE=2,4"])
    a.Write(v)
f = rg.CreateMDArray("float", [dy, dx], gdal.ExtendedDataType.Create(gdal.GDT_Float64), ["BLOCKSIZE=3,3"])
f.SetNoDataValueDouble(-99.0)
f.Write(np.where(v > 0, v / 4.0, -99.0))
del a, f, dy, dx, rg, ds # closes the dataset: GDAL writes the metadata then
with open(os.path.join(sys.argv[1], "blosc_bit", ".zarray")) as fh:
    shuffle = json.load(fh)["compressor"]["shuffle"]
emit({"dump": dump(sys.argv[1]), "shuffle": shuffle})', p)
  expect_identical(d$shuffle, "BIT") # GDAL writes the shuffle as a name
  z <- open_zarr(p, read_only = TRUE)
  arrays <- d$dump$arrays
  expect_identical(sort(z$arrays), sort(names(arrays)))
  want <- matrix(0:29 - 7L, 5, byrow = TRUE)
  for (path in names(arrays)) {
    expect_matches_dump(z[[path]], arrays[[path]], info = path)
    if (path != "/float") expect_identical(z[[path]][], want, info = path)
  }
  expect_identical(z$root$attributes$title, "caf\u00e9")
  expect_identical(z[["/float"]][1, ], rep(NA_real_, 6)) # the nodata value is the fill value
  expect_identical(z[["/float"]][5, ], c(4.25, 4.5, 4.75, 5, 5.25, 5.5))
})

test_that("GDAL reads v2 stores this package writes", {
  skip_without_gdal()
  withr::local_options(zarr.format = 2L)
  p <- local_store_path()
  z <- create_zarr(p)
  z$root$set_attribute("title", "caf\u00e9")
  x <- matrix(c(1:11, NA), 3)
  specs <- list(zstd = NULL, gzip = list("gzip", list(level = 5L)),
                blosc = list("blosc", list(cname = "lz4", clevel = 5L, shuffle = "shuffle")),
                bitshuffle = list("blosc", list(cname = "zstd", clevel = 1L, shuffle = "bitshuffle")))
  for (nm in names(specs)) for (portable in c(TRUE, FALSE)) {
    d <- define_array("int32", c(3, 4))
    d$chunk_shape <- c(2, 3)
    d$portable <- portable
    if (!is.null(specs[[nm]])) {
      d$remove_codec("zstd")
      d$add_codec(specs[[nm]][[1]], specs[[nm]][[2]])
    }
    a <- z$add_array("/", paste0(nm, if (portable) "_C" else "_F"), d)
    a$dimension_names <- c("y", "x")
    a[] <- x
  }
  f <- z$add_array("/", "float", define_array("float64", 5))
  f[] <- c(0.5, NA, -2, 1e300, 3)
  zarr_consolidate(z)
  res <- run_python('
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.OpenEx(sys.argv[1], gdal.OF_MULTIDIM_RASTER)
rg = ds.GetRootGroup()
out = {"title": rg.GetAttribute("title").Read(), "arrays": {}}
for name in rg.GetMDArrayNames():
    a = rg.OpenMDArray(name)
    v = a.ReadAsArray()
    out["arrays"][name] = {"dims": [d.GetName() for d in a.GetDimensions()], "shape": list(v.shape),
                           "data": [val(x, "f") for x in v.astype("f8").reshape(-1).tolist()],
                           "nodata": val(a.GetNoDataValueAsDouble(), "f")}
emit(out)', p)
  expect_identical(res$title, "caf\u00e9")
  int32_na <- -2147483648 # the default fill value of int32, R's NA
  for (nm in setdiff(z$arrays, "/float")) {
    r <- res$arrays[[sub("^/", "", nm)]]
    expect_identical(unlist(r$dims), c("y", "x"), info = nm)
    expect_identical(json_numbers(r$data), as.numeric(t(ifelse(is.na(x), int32_na, x))), info = nm)
    expect_identical(r$nodata, int32_na, info = nm)
  }
  expect_identical(json_numbers(res$arrays$float$data), c(0.5, NaN, -2, 1e300, 3))
})
