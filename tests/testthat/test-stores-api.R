# What store methods return, the read_only argument, and what opening a
# location without a root node says.

test_that("erase(), clear() and erase_prefix() return what the manual says, invisibly", {
  # local store: TRUE when done, FALSE when there was nothing
  z <- create_zarr(local_store_path())
  z$add_array("/", "a", define_array("int32", 4))$write(1:4)
  st <- z$store
  expect_invisible(st$erase("a/c.0"))
  expect_true(st$erase("a/zarr.json"))
  expect_false(st$erase("nothing"))
  expect_invisible(st$erase_prefix("a"))
  expect_false(st$erase_prefix("nothing"))
  expect_invisible(st$clear())
  expect_true(st$clear())
  # memory store: TRUE
  m <- zarr_memorystore$new()
  m$set("k", as.raw(1))
  for (f in list(function() m$erase("k"), function() m$erase_prefix(""), function() m$clear())) {
    expect_invisible(f())
    expect_true(f())
  }
})

test_that("S3 stores return themselves, invisibly", {
  s3 <- s3_server()
  st <- s3$store("private", "ret")
  st$set("g/k", as.raw(1))
  expect_invisible(st$erase("g/k"))
  expect_identical(st$erase("g/k"), st)
  expect_invisible(st$erase_prefix("g"))
  expect_identical(st$erase_prefix("g"), st)
  expect_identical(st$clear(), st)
})

test_that("read_only is TRUE or FALSE, nothing else", {
  dir <- local_store_path()
  create_zarr(dir)
  for (bad in list("yes", NA, c(TRUE, FALSE), 1, NULL, "TRUE")) {
    info <- paste(deparse(bad), collapse = "")
    expect_error(open_zarr(dir, read_only = bad), "read_only must be TRUE or FALSE", class = "zarr_error_argument",
                 info = info)
    expect_error(zarr_localstore$new(dir, read_only = bad), class = "zarr_error_argument", info = info)
    if (!is.null(bad)) expect_error(zarr$new(dir, read_only = bad), class = "zarr_error_argument", info = info)
  }
  expect_true(open_zarr(dir, read_only = TRUE)$store$read_only)
  expect_false(open_zarr(dir, read_only = FALSE)$store$read_only)
})

test_that("a folder of folders of stores is an error naming them; a folder of stores is a group of them", {
  top <- local_store_path()
  withr::with_options(list(zarr.format = 2L), as_zarr(1:3, location = file.path(top, "proj", "b.zarr")))
  as_zarr(1:3, location = file.path(top, "proj", "a.zarr"))
  create_zarr(file.path(top, "other", "deeper", "c.zarr"))
  for (ro in c(FALSE, TRUE)) {
    err <- expect_error(open_zarr(top, read_only = ro), class = "zarr_error_not_found")
    expect_match(conditionMessage(err), top, fixed = TRUE)
    expect_match(conditionMessage(err), "'other/deeper/c.zarr', 'proj/a.zarr', 'proj/b.zarr'", fixed = TRUE)
  }
  # nothing was written there
  expect_identical(sort(list.files(top)), c("other", "proj"))
  # stores directly inside: an implicit root group whose children are the stores
  z <- open_zarr(file.path(top, "proj"))
  expect_identical(sort(names(z[["/"]]$children)), c("a.zarr", "b.zarr"))
  expect_identical(z[["/b.zarr"]][], 1:3)
})

test_that("a web server without a root says which URL", {
  skip_without_http_server()
  root <- withr::local_tempdir()
  dir.create(file.path(root, "empty.zarr"))
  srv <- http_server(root)
  url <- paste0(srv$url, "/empty.zarr")
  err <- expect_error(open_zarr(url), class = "zarr_error_not_found")
  expect_match(conditionMessage(err), sprintf("'%s' has no root group or array", url), fixed = TRUE)
})
