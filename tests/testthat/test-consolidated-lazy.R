# A v2 store's .zmetadata: each node's documents are made v3 metadata when
# the node is opened (R/consolidated.R, consolidated_meta()), not all at
# once when the store is.

test_that("nodes of a v2 consolidated store open from their documents, one not understood hides only itself", {
  p <- file.path(withr::local_tempdir(), "c.zarr")
  withr::local_options(zarr.format = 2)
  z <- create_zarr(p)
  d <- define_array("int32", c(4, 3))
  z$add_array("/", "a", d)$write(matrix(1:12, 4))
  z$add_group("/", "g")
  z$add_array("/g", "b", d)$write(matrix(12:1, 4))
  zarr_consolidate(z)
  zm <- file.path(p, ".zmetadata")
  doc <- jsonlite::read_json(zm)
  doc$metadata[["g/b/.zarray"]]$dtype <- "<x9" # no such type
  writeLines(jsonlite::toJSON(doc, auto_unbox = TRUE, pretty = TRUE, digits = NA), zm)
  z2 <- open_zarr(p)
  expect_identical(z2[["/a"]][, ], matrix(1:12, 4))
  expect_setequal(names(z2[["/g"]]$children), "b")
  expect_error(z2[["/g/b"]][1, 1], class = "zarr_error")
  # a change rewrites only its own entry: the one not understood keeps its bytes
  z2[["/a"]]$set_attribute("k", 1L)
  back <- jsonlite::read_json(zm)
  expect_identical(back$metadata[["g/b/.zarray"]]$dtype, "<x9")
  expect_identical(back$metadata[["a/.zattrs"]]$k, 1L)
  z3 <- open_zarr(p)
  expect_identical(z3[["/a"]]$attributes$k, 1L)
  expect_identical(z3[["/a"]][, ], matrix(1:12, 4))
  expect_error(z3[["/g/b"]][1, 1], class = "zarr_error")
})

test_that("the members of a consolidated document are found in C as the R scan finds them", {
  docs <- c('{"metadata": {"a/.zarray": {"x": [1, {"y": 2}]},\n  "b/.zattrs": {} ,"c": {"s": "a,}b\\"{"}  \n }, "z": 1}',
            '{"metadata": {}}', '{"metadata": {"a": 1}}', '{"m": {"metadata": {"x": {}}}}',
            '{"metadata": {"a": {}, "a": {}}}', '{"metadata": {"a": {}', '[1,2]', '',
            '{"metadata": {"x": {}, "y": [1,2], "z": "w"}}', '{"metadata" : {"a": {"b": 1}}\n}',
            '{"metadata": {"\u00e9": {"q": 1}}}', # decoded by the R scan
            '{"metadata": {"a":{"b":"\\\\"}}}')
  for (d in docs) {
    raw <- charToRaw(enc2utf8(d))
    for (path in list("metadata", c("m", "metadata"), character())) {
      r_scan <- tryCatch(json_member_spans_r(raw, path), error = function(e) "error")
      c_scan <- tryCatch(json_member_spans(raw, path), error = function(e) "error")
      if (!identical(r_scan, "error")) expect_identical(c_scan, r_scan, info = d)
    }
  }
  sp <- json_member_spans(charToRaw('{"metadata": {"a/.zarray": {"x": 1},\n  "b": [1, 2] }}'), "metadata")
  expect_identical(sp$names, c("a/.zarray", "b"))
  expect_identical(lapply(sp$bytes, rawToChar), list('"a/.zarray": {"x": 1}', '\n  "b": [1, 2]'))
  expect_null(json_member_spans(charToRaw('{"metadata": {"a": {}'), "metadata"))
  # a string never closed: no object (every entry is then written anew)
  expect_null(json_member_spans(charToRaw('{"metadata": {"a": "unterminated}}'), "metadata"))
})
