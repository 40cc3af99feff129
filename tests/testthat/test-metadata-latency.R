# Per-call latency work (issue 21, items 1 and 5): what the faster paths
# must still do. Timing is measured in bench/latency.R, not here.

# The text of every entry of a consolidated document, found by Python's own
# JSON decoder (raw_decode gives where each value ends), so that the check
# does not use the package's scanner: node key -> "key": value as written.
py_entry_texts <- '
path, fmt = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read().decode("utf-8")
doc = json.loads(raw)
entries = doc["metadata"] if fmt == "2" else doc["consolidated_metadata"]["metadata"]
dec = json.JSONDecoder()
out = {}
for key in entries:
    tag = json.dumps(key) + ":"
    i = raw.find(tag)
    while i >= 0 and raw[i - 1] not in " \\n\\t,{":
        i = raw.find(tag, i + 1)
    j = i + len(tag)
    while raw[j] in " \\n\\t":
        j += 1
    _, end = dec.raw_decode(raw, j)
    out[key] = raw[i:end]
emit(out)
'

entry_texts <- function(store_dir, format) {
  run_python(py_entry_texts, c(file.path(store_dir, if (format == 2L) ".zmetadata" else "zarr.json"), format))
}

test_that("v2: a change in a store zarr-python consolidated leaves the other entries as zarr-python wrote them", {
  skip_without_python_zarr()
  d <- withr::local_tempdir()
  p <- file.path(d, "c.zarr")
  run_python('
import zarr
root = zarr.open_group(zarr.DirectoryStore(sys.argv[1]), mode="w")
for g in range(3):
    grp = root.create_group("g%d" % g)
    grp.attrs["n"] = g
    for a in range(4):
        x = grp.zeros("a%d" % a, shape=(6, 4), chunks=(3, 2), dtype="<f8")
        x.attrs["long_name"] = "array %d of group %d" % (a, g)
zarr.consolidate_metadata(zarr.DirectoryStore(sys.argv[1]))
emit(True)
', p)
  before <- entry_texts(p, 2L)
  z <- open_zarr(p)
  z[["/g1/a2"]]$set_attribute("units", "m")
  d4 <- define_array("int32", c(2, 2))
  z$add_array("/g2", "new", d4)
  after <- entry_texts(p, 2L)
  touched <- c("g1/a2/.zattrs", "g2/new/.zarray", "g2/new/.zattrs", ".zattrs", ".zgroup")
  same <- setdiff(names(before), touched)
  expect_gt(length(same), 20L)
  expect_identical(after[same], before[same])
  expect_true(all(c("g1/a2/.zattrs", "g2/new/.zarray") %in% names(after)))
  # zarr-python reads the updated copy
  got <- run_python('
import zarr
g = zarr.open_consolidated(zarr.DirectoryStore(sys.argv[1]))
emit([g["g1/a2"].attrs["units"], list(g["g2/new"].shape), g["g0/a1"].attrs["long_name"]])
', p)
  expect_identical(got, list("m", list(2L, 2L), "array 1 of group 0"))
  # and this package, reopened, sees the change and everything else
  z2 <- open_zarr(p)
  expect_identical(z2[["/g1/a2"]]$attributes$units, "m")
  expect_identical(z2[["/g0/a3"]]$attributes$long_name, "array 3 of group 0")
  expect_identical(length(z2$arrays), 13L)
})

test_that("v3: a change keeps the other consolidated entries byte for byte, in whatever layout they were written", {
  skip_without_python_zarr() # (only for the independent reading of the document)
  d <- withr::local_tempdir()
  p <- file.path(d, "c.zarr")
  z <- create_zarr(p)
  for (g in 1:2) {
    z$add_group("/", paste0("g", g))
    for (a in 1:3) {
      arr <- z$add_array(paste0("/g", g), paste0("a", a), define_array("float64", c(4, 4)))
      arr$set_attribute("note", sprintf("caf\u00e9 %d, {brace} \"q\"", a))
    }
  }
  zarr_consolidate(z)
  # a document written by another tool: compact, no white space at all
  zj <- file.path(p, "zarr.json")
  writeLines(as.character(jsonlite::minify(paste(readLines(zj, encoding = "UTF-8"), collapse = "\n"))), zj, useBytes = TRUE)
  before <- entry_texts(p, 3L)
  expect_false(any(grepl("\n", before)))
  z <- open_zarr(p)
  z[["/g1/a2"]]$set_attribute("units", "m")
  after <- entry_texts(p, 3L)
  same <- setdiff(names(before), "g1/a2")
  expect_identical(after[same], before[same])
  expect_match(after[["g1/a2"]], "\"units\": \"m\"", fixed = TRUE)
  z2 <- open_zarr(p)
  expect_identical(z2[["/g1/a2"]]$attributes$units, "m")
  expect_identical(z2[["/g2/a3"]]$attributes$note, "caf\u00e9 3, {brace} \"q\"")
})

test_that("the entry scanner finds members through strings holding braces, commas and escapes", {
  spans <- zarr:::json_member_spans
  doc <- charToRaw(enc2utf8('{"x": [1, {"metadata": 2}], "metadata": {"a/.zarray": {"b": [1, 2]},\n  "caf\\u00e9": "q,}\\"{", "y": {}  }, "z": 2}'))
  sp <- spans(doc, "metadata")
  expect_identical(sp$names, c("a/.zarray", "caf\u00e9", "y"))
  expect_identical(vapply(sp$bytes, rawToChar, ""), c("\"a/.zarray\": {\"b\": [1, 2]}", "\n  \"caf\\u00e9\": \"q,}\\\"{\"", " \"y\": {}"))
  expect_identical(spans(charToRaw('{"metadata": {}}'), "metadata")$names, character())
  expect_null(spans(charToRaw('{"metadata": [1]}'), "metadata"))
  expect_null(spans(charToRaw('[1]'), "metadata"))
})

test_that("an array opened for its attributes is usable without its data type and grid; their errors still surface on use", {
  d <- withr::local_tempdir(fileext = ".zarr")
  z <- create_zarr(d)
  a <- z$add_array("/", "x", define_array("int32", c(4, 4)))
  a[] <- 1:16
  a$set_attribute("units", "m")
  f <- file.path(d, "x", "zarr.json")
  m <- jsonlite::fromJSON(f, simplifyVector = FALSE)
  names(m$codecs) <- NULL
  last <- length(m$codecs)
  expect_identical(m$codecs[[last]]$name, "zstd")
  m$codecs[[last]]$configuration$level <- 99
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null", digits = NA), f)
  b <- open_zarr(d)[["/x"]]
  expect_identical(b$attributes$units, "m")
  expect_identical(b$shape, c(4L, 4L))
  expect_error(b[1, 1], class = "zarr_error_codec")
  expect_error(b$data_type, NA) # NULL for an array that cannot be read, as before
  expect_output(print(b), "Not readable")
  # the same array with good metadata reads; a metadata change that is not
  # valid is an error at once, not when the data are used
  m$codecs[[last]]$configuration$level <- 1
  writeLines(jsonlite::toJSON(m, auto_unbox = TRUE, null = "null", digits = NA), f)
  g <- open_zarr(d)[["/x"]]
  expect_identical(g[2, 3], 10L)
  bad <- g$metadata
  bad$codecs <- list(list(name = "no_such_codec"))
  expect_error(g$metadata <- bad, class = "zarr_error")
})
