# Bare NaN, Infinity and -Infinity are not JSON, but Python's json module
# writes them, and so do zarr-python and xarray in attributes
# ("_FillValue": NaN): they are read as the numbers NaN, Inf and -Inf.

test_that("bare NaN and Infinity in .zattrs and zarr.json are read as numbers", {
  p <- local_store_path()
  z <- withr::with_options(list(zarr.format = 2L), create_zarr(p))
  a <- z$add_array("/", "a", define_array("float64", c(3)))
  a[] <- c(1, NaN, 3)
  writeLines('{"_FillValue": NaN, "valid_range": [-Infinity, Infinity], "note": "NaN Infinity",
              "nested": {"x": [1, NaN]}}', file.path(p, "a", ".zattrs"))
  at <- open_zarr(p)[["/a"]]$attributes
  expect_identical(at[["_FillValue"]], NaN)
  expect_identical(at[["valid_range"]], c(-Inf, Inf))
  expect_identical(at[["note"]], "NaN Infinity") # inside strings: text
  expect_identical(at[["nested"]][["x"]], c(1, NaN))
  expect_identical(open_zarr(p)[["/a"]][], c(1, NaN, 3))

  p3 <- local_store_path()
  z3 <- create_zarr(p3)
  z3$add_array("/", "b", define_array("int32", c(2)))
  f <- file.path(p3, "b", "zarr.json")
  txt <- paste(readLines(f), collapse = "\n")
  writeLines(sub('"attributes": \\{\\}', '"attributes": {"lo": -Infinity, "m": NaN}', txt), f)
  expect_true(grepl("-Infinity", paste(readLines(f), collapse = "")))
  b <- open_zarr(p3)[["/b"]]
  expect_identical(b$attributes[["lo"]], -Inf)
  expect_identical(b$attributes[["m"]], NaN)
})

test_that("malformed spellings stay malformed", {
  expect_error(zarr:::json_parse('{"a": NaNa}'), class = "zarr_error_metadata")
  expect_error(zarr:::json_parse('{"a": nan}'), class = "zarr_error_metadata")
  expect_error(zarr:::json_parse('{"a": +Infinity}'), class = "zarr_error_metadata")
  expect_error(zarr:::json_parse('[1 NaN]'), class = "zarr_error_metadata")
  expect_identical(zarr:::json_parse('["NaN", "-Infinity", NaN]'), list("NaN", "-Infinity", NaN))
  # with large integers in the same document
  x <- zarr:::json_parse('{"big": 123456789012345678901, "n": -Infinity, "s": "Infinity 12345678901234567890"}')
  expect_identical(as.character(x$big), "123456789012345678901")
  expect_identical(x$n, -Inf)
  expect_identical(x$s, "Infinity 12345678901234567890")
})

test_that("a store written by xarray with non-finite attributes opens and reads, consolidated or not", {
  skip_without_xarray()
  p <- local_store_path()
  run_python('
import xarray as xr
ds = xr.Dataset({"t": (("x", "y"), np.array([[1.5, np.nan], [3.0, 4.0]]))}, coords={"x": [10.0, 20.0]})
ds["t"].attrs["valid_max"] = float("inf")
ds["t"].attrs["valid_min"] = float("-inf")
ds["t"].attrs["missing"] = float("nan")
ds.to_zarr(sys.argv[1], consolidated=True)
print("{}")
', p)
  expect_true(grepl("Infinity", paste(readLines(file.path(p, "t", ".zattrs"), warn = FALSE), collapse = "")))
  for (consolidated in c(TRUE, FALSE)) {
    if (!consolidated) unlink(file.path(p, ".zmetadata"))
    t <- open_zarr(p)[["/t"]]
    expect_identical(t[], matrix(c(1.5, 3, NaN, 4), 2, 2))
    expect_identical(t$attributes[["valid_max"]], Inf)
    expect_identical(t$attributes[["valid_min"]], -Inf)
    expect_identical(t$attributes[["missing"]], NaN)
  }
})

test_that("zarr-python's _FillValue: NaN attribute opens", {
  skip_without_python_zarr()
  p <- local_store_path()
  run_python('
import zarr
a = zarr.open(sys.argv[1], mode="w", shape=(4,), chunks=(2,), dtype="f4", fill_value=float("nan"))
a[:] = [1, 2, np.nan, 4]
a.attrs["_FillValue"] = float("nan")
print("{}")
', p)
  expect_true(any(grepl("NaN", readLines(file.path(p, ".zattrs"), warn = FALSE))))
  a <- open_zarr(p)[["/"]]
  expect_identical(a$attributes[["_FillValue"]], NaN)
  expect_identical(a[], c(1, 2, NaN, 4))
})
