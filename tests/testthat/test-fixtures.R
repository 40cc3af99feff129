# Conformance: every array listed in ../shared/fixtures/expected.json (Zarr
# data written by zarr-python, zarrs, the R-CF package, ...) must read back with
# the shape and values that a reference reader (or the generating script) saw.
# The comparison, and the lists of pending entries and deviations, are in
# helper-fixtures.R (test-http.R reads the same stores over HTTP).

# The zip files hold byte-identical copies of v2.zarr and v3.zarr ("from
# parent": one level down, in data.zarr/, which the zip store takes as its
# root). One test per zip file checks the entries of its directory twin; they
# are pending while the twin is.
zip_copies <- c("zarr-python/zip/v2/data.zipped_from_parent.zarr.zip" = "zarr-python/v2.zarr",
                "zarr-python/zip/v2/data.zipped_from_within.zarr.zip" = "zarr-python/v2.zarr",
                "zarr-python/zip/v3/data.uncompressed.zarr.zip" = "zarr-python/v3.zarr",
                "zarr-python/zip/v3/data.zipped_from_parent.zarr.zip" = "zarr-python/v3.zarr",
                "zarr-python/zip/v3/data.zipped_from_within.zarr.zip" = "zarr-python/v3.zarr")

test_that("the conformance fixtures are there", {
  skip_without_fixtures()
  expect_gt(length(fixture_entries), 0L)
  expect_setequal(intersect(c(fixture_pending, fixture_deviations), names(fixture_entries)),
                  c(fixture_pending, fixture_deviations))
  expect_equal(length(fixture_entries), 140L)
  expect_length(intersect(fixture_pending, fixture_deviations), 0L)
  expect_false(anyDuplicated(fixture_pending) > 0)
})

# Each store is opened once, from its directory or zip file.
fixture_array <- fixture_opener(function(store)
  open_zarr(file.path(fixtures_dir(), store), read_only = TRUE))
check_entry <- function(key, e) check_fixture_entry(key, e, fixture_array)

for (key in names(fixture_entries)) local({
  e <- fixture_entries[[key]]
  test_that(paste("fixture", key), {
    skip_without_fixtures()
    check_entry(key, e)
  })
})

for (zip in names(zip_copies)) local({
  test_that(paste("fixture", zip), {
    skip_without_fixtures()
    for (twin in grep(paste0("^", zip_copies[[zip]], "/"), names(fixture_entries), value = TRUE)) {
      e <- fixture_entries[[twin]]
      e$store <- zip
      e$twin <- twin
      check_entry(paste0(zip, e$array), e)
    }
  })
})
