# Zarr v3: an unknown top-level field may be skipped only when it is an object
# marked "must_understand": false.

write_v3_array_doc <- function(extra) {
  dir <- withr::local_tempdir(.local_envir = parent.frame())
  z <- as_zarr(array(1:6, c(2, 3)), name = "a", location = dir)
  key <- file.path(dir, "a", "zarr.json")
  m <- jsonlite::read_json(key)
  m <- c(m, extra)
  jsonlite::write_json(m, key, auto_unbox = TRUE, null = "null")
  dir
}

test_that("a field marked must_understand false is skipped", {
  dir <- write_v3_array_doc(list(my_ext = list(must_understand = FALSE, note = "x")))
  a <- open_zarr(dir, read_only = TRUE)[["/a"]]
  expect_equal(a[, ], array(1:6, c(2, 3)))
})

test_that("an unknown field that must be understood refuses the array, not its group", {
  for (extra in list(list(my_ext = list(must_understand = TRUE)), list(my_ext = list(a = 1)),
                     list(my_ext = "plain"))) {
    dir <- write_v3_array_doc(extra)
    z <- open_zarr(dir, read_only = TRUE)
    expect_true("a" %in% names(z$root$children))
    err <- expect_error(z[["/a"]][, ], class = "zarr_error_metadata")
    expect_match(conditionMessage(err), "my_ext")
  }
})

test_that("a group with an unknown field that must be understood is refused", {
  dir <- withr::local_tempdir()
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}, "future": {"must_understand": true}}',
             file.path(dir, "zarr.json"))
  expect_error(open_zarr(dir, read_only = TRUE), class = "zarr_error_metadata")
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {"a": 1}, "future": {"must_understand": false}}',
             file.path(dir, "zarr.json"))
  expect_equal(open_zarr(dir, read_only = TRUE)$root$attributes$a, 1)
})
