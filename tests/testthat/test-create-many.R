# Creating many arrays (issue 27): one builder reused in a loop, the checks
# a create makes once, and add_arrays() with a consolidated copy written
# once per batch.

zarr_doc <- function(root, node, v2) {
  f <- file.path(root, node, if (v2) ".zarray" else "zarr.json")
  jsonlite::fromJSON(f, simplifyVector = FALSE)
}

for (fmt in 2:3) test_that(sprintf("v%d: a builder reused in a loop writes each array as a builder of its own would, and follows its changes", fmt), {
  withr::local_options(zarr.format = fmt)
  v2 <- fmt == 2L
  root <- withr::local_tempdir()
  z <- create_zarr(file.path(root, "z"))
  z$add_group("/", "g")
  d <- define_array("float64", c(6, 4))
  d$chunk_shape <- c(3, 2)
  a <- lapply(1:3, function(k) z$add_array("/g", paste0("a", k), d))
  fresh <- define_array("float64", c(6, 4))
  fresh$chunk_shape <- c(3, 2)
  z$add_array("/g", "alone", fresh)
  p <- file.path(root, "z", "g")
  alone <- readBin(file.path(p, "alone", if (v2) ".zarray" else "zarr.json"), "raw", 1e5)
  for (k in 1:3)
    expect_identical(readBin(file.path(p, paste0("a", k), if (v2) ".zarray" else "zarr.json"), "raw", 1e5), alone)
  # the arrays made without a parse of their own read and write
  x <- matrix(as.double(1:24), 6, 4)
  a[[3]]$write(x)
  expect_identical(open_zarr(file.path(root, "z"))[["/g/a3"]][], x)
  expect_identical(a[[2]]$chunking$chunk_shape, c(3, 2))
  # changes of the builder between two arrays are in the next one
  d$chunk_shape <- c(2, 2)
  z$add_array("/g", "b1", d)
  cs <- if (v2) zarr_doc(p, "b1", TRUE)$chunks else zarr_doc(p, "b1", FALSE)$chunk_grid$configuration$chunk_shape
  expect_identical(unlist(cs), c(2L, 2L))
  d$fill_value <- 7
  z$add_array("/g", "b2", d)
  expect_identical(zarr_doc(p, "b2", v2)$fill_value, 7L)
  expect_identical(z[["/g/b2"]][1, 1], NA_real_) # 7 marks missing values
  # the data type object the builder hands out, changed in place
  dt <- d$data_type_from_storage.mode
  dt$fill_value <- 5
  z$add_array("/g", "b3", d)
  expect_identical(zarr_doc(p, "b3", v2)$fill_value, 5L)
  expect_identical(zarr_doc(p, "b2", v2)$fill_value, 7L)
  # no empty .zattrs was written for the new nodes
  expect_false(file.exists(file.path(p, "a1", ".zattrs")))
  # a builder made from a template keeps its attributes in every array
  tmpl <- array_builder$new(modifyList(d$metadata(), list(zarr_format = fmt, attributes = list(units = "m", scale = 2))))
  for (k in 1:2) z$add_array("/g", paste0("t", k), tmpl)
  for (k in 1:2) {
    expect_identical(open_zarr(file.path(root, "z"))[[paste0("/g/t", k)]]$attributes, list(units = "m", scale = 2L))
    if (v2) expect_true(file.exists(file.path(p, paste0("t", k), ".zattrs")))
  }
})

test_that("a node that is already there is never replaced, whatever its state", {
  root <- withr::local_tempdir()
  p <- file.path(root, "z")
  z <- create_zarr(p)
  d <- define_array("int32", 4)
  z$add_array("/", "a", d)
  z$add_group("/", "g")
  expect_error(z$add_array("/", "a", d), class = "zarr_error_exists")
  expect_error(z$add_array("/", "g", d), class = "zarr_error_exists")
  expect_error(z$add_group("/", "a"), class = "zarr_error_exists")
  # made by another writer after this object was opened
  other <- open_zarr(p)
  other$add_array("/", "late", d)
  other$add_group("/", "lateg")
  expect_error(z$add_array("/", "late", d), class = "zarr_error_exists")
  expect_error(z$add_group("/", "lateg"), class = "zarr_error_exists")
  # a document that cannot be read is a node too: left as it is
  dir.create(file.path(p, "broken"))
  writeLines("{ not json", file.path(p, "broken", "zarr.json"))
  expect_error(z$add_array("/", "broken", d), class = "zarr_error_exists")
  expect_error(open_zarr(p)$add_array("/", "broken", d), class = "zarr_error_exists")
  expect_identical(readLines(file.path(p, "broken", "zarr.json")), "{ not json")
  # chunks left by an interrupted deletion (a folder without a document)
  # are erased, not taken as the new array's data
  dir.create(file.path(p, "gone", "c"), recursive = TRUE)
  writeBin(as.raw(1:8), file.path(p, "gone", "c", "0"))
  writeBin(as.raw(1:8), file.path(p, "gone", "notes.txt"))
  a <- z$add_array("/", "gone", d)
  expect_false(file.exists(file.path(p, "gone", "c", "0")))
  expect_true(file.exists(file.path(p, "gone", "notes.txt")))
  expect_identical(a[], rep(NA_integer_, 4))
  # an invalid definition writes nothing
  bad <- list(zarr_format = 3L, node_type = "array", shape = list(4L), data_type = "int32",
              chunk_grid = list(name = "regular", configuration = list(chunk_shape = list(0L))),
              chunk_key_encoding = list(name = "default"), fill_value = 0L,
              codecs = list(list(name = "bytes", configuration = list(endian = "little"))))
  expect_error(z$add_array("/", "bad", bad), class = "zarr_error_metadata")
  expect_false(file.exists(file.path(p, "bad")))
  expect_error(z$add_array("/", "bad", bad), class = "zarr_error_metadata") # checked again
  # a read-only store refuses before looking
  ro <- open_zarr(p, read_only = TRUE)
  expect_error(ro$add_array("/", "new", d), class = "zarr_error_read_only")
  expect_error(ro$add_arrays("/", c("n1", "n2"), d), class = "zarr_error_read_only")
  expect_false(file.exists(file.path(p, "new")))
})

test_that("a new folder deep below the root is made, and a file on the way is an error", {
  root <- withr::local_tempdir()
  st <- zarr_localstore$new(file.path(root, "s"))
  st$set("a/b/c/d/e/k", as.raw(1:3))
  expect_identical(st$get("a/b/c/d/e/k"), as.raw(1:3))
  st$set("a/b/x/k", as.raw(4:5))
  expect_identical(st$get("a/b/x/k"), as.raw(4:5))
  expect_error(st$set("a/b/x/k/deeper", as.raw(1)), class = "zarr_error_io")
  expect_identical(st$get("a/b/x/k"), as.raw(4:5))
})

test_that("a data type unregistered between two arrays of one builder is checked again", {
  zarr_register_data_type("test.pc2_q", 2,
    decode = function(raw, n) readBin(raw, "integer", n, size = 2, endian = "little") / 256,
    encode = function(x) writeBin(as.integer(round(x * 256)), raw(), size = 2, endian = "little"))
  on.exit(zarr_unregister_data_type("test.pc2_q"))
  z <- create_zarr()
  d <- define_array("test.pc2_q", 3)
  z$add_array("/", "one", d)
  zarr_unregister_data_type("test.pc2_q")
  expect_error(z$add_array("/", "two", d), class = "zarr_error")
  expect_null(z[["/two"]])
})

for (fmt in 2:3) test_that(sprintf("v%d: add_arrays() creates a batch with the consolidated copy written once, and zarr-python reads it", fmt), {
  withr::local_options(zarr.format = fmt)
  root <- withr::local_tempdir()
  p <- file.path(root, "c.zarr")
  z <- create_zarr(p)
  z$add_group("/", "g")
  z$add_array("/g", "first", define_array("int32", 2))
  zarr_consolidate(z)
  z <- open_zarr(p)
  d <- define_array("float64", c(4, 3))
  d$chunk_shape <- c(2, 3)
  made <- z$add_arrays("/g", c("b", "a", "c"), d)
  expect_identical(names(made), c("b", "a", "c"))
  expect_true(all(vapply(made, inherits, TRUE, "zarr_array")))
  made$a$write(matrix(as.double(1:12), 4, 3))
  # one definition per name; through the group too
  g <- z[["/g"]]
  two <- g$add_arrays(c("i", "s"), list(define_array("int32", 5), define_array("string", 2)))
  expect_identical(two$s$data_type$data_type, "string")
  # the consolidated copy lists them all, reopened with the copy
  z2 <- open_zarr(p)
  expect_setequal(z2$arrays, c("/g/first", "/g/a", "/g/b", "/g/c", "/g/i", "/g/s"))
  expect_identical(z2[["/g/a"]][], matrix(as.double(1:12), 4, 3))
  if (fmt == 2L) {
    zm <- jsonlite::fromJSON(file.path(p, ".zmetadata"), simplifyVector = FALSE)
    expect_true(all(paste0("g/", c("a", "b", "c", "i", "s"), "/.zarray") %in% names(zm$metadata)))
  } else {
    zm <- jsonlite::fromJSON(file.path(p, "zarr.json"), simplifyVector = FALSE)
    expect_true(all(paste0("g/", c("a", "b", "c", "i", "s")) %in% names(zm$consolidated_metadata$metadata)))
  }
  # an existing name stops the batch; the arrays made before it are in the copy
  expect_error(z$add_arrays("/g", c("d", "a", "e"), d), class = "zarr_error_exists")
  z3 <- open_zarr(p)
  expect_true("/g/d" %in% z3$arrays)
  expect_false("/g/e" %in% z3$arrays)
  expect_error(z$add_arrays("/g", c("x", "x"), d), class = "zarr_error_argument")
  expect_error(z$add_arrays("/g", c("x", "y"), list(d)), class = "zarr_error_argument")
  expect_error(z$add_arrays("/g", NA_character_, d), class = "zarr_error_argument")
  if (fmt == 2L) {
    skip_on_cran()
    skip_without_python_zarr()
    got <- run_python('
import zarr
g = zarr.open_consolidated(zarr.DirectoryStore(sys.argv[1]))
emit([sorted(g["g"].array_keys()), list(g["g/b"].shape), g["g/a"][3, 2]])
', p)
    expect_identical(got, list(list("a", "b", "c", "d", "first", "i", "s"), list(4L, 3L), 12))
  }
})
