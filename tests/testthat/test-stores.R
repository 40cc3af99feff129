# The key-value primitives of zarr_localstore and zarr_memorystore.

# A store of either kind with a root group and a few keys.
new_store <- function(kind, env = parent.frame()) {
  st <- if (kind == "local") zarr_localstore$new(local_store_path(env)) else zarr_memorystore$new()
  st$create_group("/", "")
  st$set("a", as.raw(0:9))
  st$set("ab", as.raw(1:3))
  st$set("g/x", as.raw(5))
  st$set("g/sub/y", as.raw(c(6, 7)))
  st
}

store_kinds <- c("local", "memory")

test_that("new stores are writable, version 3 and use '.' as the separator", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    expect_s3_class(st, "zarr_store")
    expect_false(st$read_only)
    expect_identical(st$version, 3L)
    expect_identical(st$separator, ".")
    expect_true(st$supports_writes)
    expect_true(st$supports_deletes)
    expect_true(st$supports_listing)
    expect_output(print(st), "store")
  }
  st <- zarr_localstore$new(local_store_path())
  expect_true(dir.exists(st$root))
  expect_identical(st$uri, paste0("file://", st$root))
  expect_identical(st$friendlyClassName, "Local file system store")
  expect_identical(zarr_memorystore$new()$friendlyClassName, "Memory store")
})

test_that("exists(), get() and set() work on keys", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    expect_true(st$exists("a"))
    expect_true(st$exists("g/sub/y"))
    expect_false(st$exists("zz"))
    expect_false(st$exists("g/zz"))
    expect_null(st$get("zz"))
    expect_null(st$get("g/sub/zz"))
    expect_identical(st$get("a"), as.raw(0:9))
    expect_identical(st$get("g/sub/y"), as.raw(c(6, 7)))
    # overwrite
    st$set("a", as.raw(c(42, 43)))
    expect_identical(st$get("a"), as.raw(c(42, 43)))
    st$set("a", as.raw(0:9))
    # an empty value
    st$set("empty", raw(0))
    expect_true(st$exists("empty"))
    expect_identical(st$get("empty"), raw(0))
    # values must be raw
    expect_error(st$set("k", "text"), class = "zarr_error_value")
    expect_error(st$set("k", 1:3), class = "zarr_error_value")
    expect_false(st$exists("k"))
    # set() returns the store invisibly
    expect_invisible(st$set("k", as.raw(1)))
  }
})

test_that("get() honours every kind of byte range", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    v <- as.raw(0:9)
    expect_identical(st$get("a", byte_range = NULL), v)
    # positive offset: from there to the end
    expect_identical(st$get("a", byte_range = 3), v[4:10])
    expect_identical(st$get("a", byte_range = 0), v)
    expect_identical(st$get("a", byte_range = 9), v[10])
    # negative: the final bytes
    expect_identical(st$get("a", byte_range = -3), v[8:10])
    expect_identical(st$get("a", byte_range = -1), v[10])
    expect_identical(st$get("a", byte_range = -10), v)
    # c(start, end), end exclusive
    expect_identical(st$get("a", byte_range = c(2, 5)), v[3:5])
    expect_identical(st$get("a", byte_range = c(0, 1)), v[1])
    expect_identical(st$get("a", byte_range = c(0, 10)), v)
    # a range past the end gives the remainder
    expect_identical(st$get("a", byte_range = c(8, 100)), v[9:10])
    # empty ranges and ranges starting past the end are errors
    expect_error(st$get("a", byte_range = c(5, 5)), class = "zarr_error_argument", regexp = "key 'a'")
    expect_error(st$get("a", byte_range = c(5, 2)), class = "zarr_error_argument")
    expect_error(st$get("a", byte_range = 10), class = "zarr_error_argument")
    expect_error(st$get("a", byte_range = c(10, 12)), class = "zarr_error_argument")
    expect_error(st$get("a", byte_range = c(1, 2, 3)), class = "zarr_error_argument")
    expect_error(st$get("a", byte_range = NA), class = "zarr_error_argument")
    # a missing key is NULL, whatever the range
    expect_null(st$get("zz", byte_range = c(0, 2)))
  }
})

test_that("list_dir() and list_prefix() list names and keys", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    expect_setequal(st$list_dir(""), c("a", "ab", "g", "zarr.json"))
    expect_setequal(st$list_dir("g"), c("sub", "x"))
    expect_setequal(st$list_dir("g/"), c("sub", "x"))
    expect_setequal(st$list_dir("g/sub"), "y")
    expect_length(st$list_dir("nope"), 0L)
    expect_setequal(st$list_prefix("g/"), c("g/sub/y", "g/x"))
    expect_setequal(st$list_prefix("g"), c("g/sub/y", "g/x"))
    expect_setequal(st$list_prefix(""), c("a", "ab", "g/sub/y", "g/x", "zarr.json"))
    expect_setequal(st$list(), st$list_prefix(""))
    expect_length(st$list_prefix("nope/"), 0L)
  }
  expect_setequal(new_store("memory")$keys, c("a", "ab", "g/sub/y", "g/x", "zarr.json"))
})

test_that("set_if_not_exists() does not overwrite", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    st$set_if_not_exists("a", as.raw(99))
    expect_identical(st$get("a"), as.raw(0:9))
    st$set_if_not_exists("new", as.raw(99))
    expect_identical(st$get("new"), as.raw(99))
    st$set_if_not_exists("deep/new/key", as.raw(1:2))
    expect_identical(st$get("deep/new/key"), as.raw(1:2))
  }
})

test_that("getsize() and getsize_prefix() report sizes in bytes", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    expect_equal(st$getsize("a"), 10)
    expect_equal(st$getsize("g/sub/y"), 2)
    expect_true(is.na(st$getsize("zz")))
    expect_equal(st$getsize_prefix("g"), 3)
    expect_equal(st$getsize_prefix("g/"), 3)
    expect_equal(st$getsize_prefix("g/sub"), 2)
    expect_equal(st$getsize_prefix("nope"), 0)
    expect_equal(st$getsize_prefix(""), 10 + 3 + 3 + st$getsize("zarr.json"))
  }
})

test_that("erase() removes one key, and erasing 'a' leaves 'ab'", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    st$erase("a")
    expect_false(st$exists("a"))
    expect_true(st$exists("ab"))
    expect_identical(st$get("ab"), as.raw(1:3))
    st$erase("g/x")
    expect_false(st$exists("g/x"))
    expect_true(st$exists("g/sub/y"))
    # erasing a key that does not exist is not an error
    expect_no_error(st$erase("zz"))
    expect_setequal(st$list_prefix(""), c("ab", "g/sub/y", "zarr.json"))
  }
})

test_that("erase_prefix() removes everything below a prefix, not its siblings", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    st$set("gg/z", as.raw(1))
    st$erase_prefix("g")
    expect_false(st$exists("g/x"))
    expect_false(st$exists("g/sub/y"))
    expect_setequal(st$list_prefix(""), c("a", "ab", "gg/z", "zarr.json"))
    expect_true(st$exists("gg/z"))
    expect_true(st$exists("a"))
    expect_true(st$exists("ab"))
    # "a" is a key, not a prefix: the prefix "a/" holds nothing, so "a" and "ab" stay
    st$erase_prefix("a")
    expect_true(st$exists("a"))
    expect_true(st$exists("ab"))
  }
})

test_that("list_prefix() of an emptied prefix is empty", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    st$erase_prefix("g")
    expect_identical(st$list_prefix("g/"), character(), info = kind)
    expect_equal(st$getsize_prefix("g"), 0, info = kind)
  }
})

test_that("erasing an empty group removes it, directory included", {
  st <- zarr_localstore$new(local_store_path())
  st$create_group("/", "")
  st$create_group("/", "h")
  expect_true(st$erase("h"))
  expect_false(st$exists("h"))
  expect_false(dir.exists(file.path(st$root, "h")))
  expect_false("h" %in% st$list_dir(""))
  # the same through the hierarchy
  path <- local_store_path()
  z <- create_zarr(path)
  z$add_group("/", "g")
  z$add_array("/", "a", define_array("int32", 3))$write(1:3)
  z$delete_group("/g")
  z$delete_array("/a")
  expect_identical(list.files(path, all.files = TRUE, no.. = TRUE), "zarr.json")
  expect_identical(z$store$list_dir(""), "zarr.json")
})

test_that("erase_prefix() on a group keeps a bare group document", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    st$create_group("/", "grp")
    meta <- st$get_metadata("grp")
    meta$attributes <- list(note = "x")
    st$set_metadata("grp", meta)
    st$set("grp/child/k", as.raw(1))
    st$erase_prefix("grp")
    expect_true(st$is_group("grp"))
    expect_length(st$get_metadata("grp")$attributes, 0L)
    expect_false(st$exists("grp/child/k"))
  }
})

test_that("is_group() and get_metadata() recognise nodes", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    expect_true(st$is_group(""))
    expect_true(st$is_group("/"))
    expect_false(st$is_group("g")) # g/ holds keys but no zarr.json
    expect_null(st$get_metadata("g"))
    st$create_group("/", "grp")
    expect_true(st$is_group("grp"))
    expect_true(st$is_group("/grp"))
    expect_true(st$is_group("grp/"))
    expect_false(st$is_group("nope"))
    st$create_array("/", "arr", define_array("int32", 3))
    expect_false(st$is_group("arr"))
    meta <- st$get_metadata("arr")
    expect_identical(meta$node_type, "array")
    expect_identical(meta$data_type, "int32")
    expect_equal(unlist(meta$shape), 3)
    expect_identical(st$get_metadata("")$node_type, "group")
    expect_error(st$create_group("/", ""), class = "zarr_error_exists")
    expect_error(st$create_group("/", "grp"), class = "zarr_error_exists")
  }
})

test_that("create_array() adds the store's chunk key encoding", {
  for (kind in store_kinds) {
    st <- new_store(kind)
    meta <- st$create_array("/", "arr", define_array("int32", 3))
    expect_identical(meta$chunk_key_encoding$configuration$separator, ".")
    expect_identical(st$get_metadata("arr")$chunk_key_encoding$configuration$separator, ".")
  }
})

test_that("clear() empties the store; a local store keeps its root document", {
  st <- new_store("memory")
  st$clear()
  expect_identical(st$list_prefix(""), character())
  expect_identical(st$keys, character())

  st <- new_store("local")
  st$clear()
  expect_identical(st$list_prefix(""), "zarr.json")
  expect_identical(list.files(st$root, all.files = TRUE, no.. = TRUE), "zarr.json")
  expect_true(st$is_group(""))
})

test_that("the local store keeps keys as files below its root", {
  st <- new_store("local")
  expect_identical(readBin(file.path(st$root, "g", "sub", "y"), "raw", 100), as.raw(c(6, 7)))
  writeBin(as.raw(c(1, 2, 3)), file.path(st$root, "outside"))
  expect_identical(st$get("outside"), as.raw(1:3))
  expect_true(st$exists("g")) # a directory counts as a key
  expect_true(st$exists("g/sub"))
})

test_that("the local store writes atomically: no '.partial' files remain", {
  path <- local_store_path()
  z <- create_zarr(path)
  def <- define_array("float64", c(40, 50))
  def$chunk_shape <- c(7, 9)
  arr <- z$add_array("/", "a", def)
  x <- matrix(as.numeric(seq_len(2000)), 40, 50)
  arr$write(x)
  arr[3:30, 5:45] <- 0
  arr$set_attribute("units", "m")
  z$add_group("/", "g")
  z$store$set("g/raw", as.raw(1:100))
  expect_length(partial_files(path), 0L)
  # a failed write does not leave one behind either
  expect_error(arr$write(c(1, 2, "x")), class = "zarr_error_value")
  int_arr <- z$add_array("/", "i", define_array("uint8", 30))
  expect_error(int_arr$write(c(1:29, 300)), class = "zarr_error_value")
  expect_length(partial_files(path), 0L)
  # and keys named like temporaries are not listed
  writeBin(as.raw(1), file.path(path, "g", "junk.partial"))
  expect_false("junk.partial" %in% z$store$list_dir("g"))
  expect_false("g/junk.partial" %in% z$store$list_prefix("g"))
})

test_that("a local store can be reopened read-only and read", {
  path <- local_store_path()
  st <- zarr_localstore$new(path)
  st$create_group("/", "")
  st$set("k", as.raw(1:4))
  ro <- zarr_localstore$new(path, read_only = TRUE)
  expect_true(ro$read_only)
  expect_false(ro$supports_writes)
  expect_identical(ro$get("k"), as.raw(1:4))
  expect_identical(ro$get("k", byte_range = -2), as.raw(3:4))
  expect_error(ro$set("k", as.raw(0)), class = "zarr_error_read_only")
  expect_error(ro$erase("k"), class = "zarr_error_read_only")
  expect_error(ro$set_if_not_exists("k2", as.raw(0)), class = "zarr_error_read_only")
  expect_identical(st$get("k"), as.raw(1:4))
  expect_false(st$exists("k2"))
  expect_error(zarr_localstore$new(tempfile(), read_only = TRUE), class = "zarr_error_store")
})

test_that("file:// URIs are accepted", {
  path <- local_store_path()
  z <- create_zarr(paste0("file://", path))
  z$add_array("/", "a", define_array("int32", 2))$write(1:2)
  expect_identical(open_zarr(paste0("file://", path))[["/a"]]$read(), 1:2)
})

test_that("a memory store is independent of other memory stores", {
  z1 <- create_zarr()
  z2 <- create_zarr()
  z1$add_array("/", "a", define_array("int32", 2))$write(1:2)
  expect_null(z2[["/a"]])
  expect_false(z2$store$exists("a/zarr.json"))
  expect_true(z1$store$exists("a/zarr.json"))
})
