# A local store reads a node's metadata documents in one C call
# (ffi_store_node_docs), a v2 root group's .zmetadata with them; what an
# open finds must be what the documents say now, store by store.

v2_tree <- function(consolidate = TRUE) {
  path <- withr::local_tempdir(fileext = ".zarr", .local_envir = parent.frame())
  withr::with_options(list(zarr.format = 2), {
    z <- create_zarr(path)
    z$add_group("/", "g")
    z$add_array("/g", "a", define_array("int32", c(4, 4)))$write(matrix(1:16, 4, 4))
    if (consolidate) zarr_consolidate(z)
  })
  path
}

test_that("a consolidated v2 store opens from its .zmetadata, read anew each open", {
  path <- v2_tree()
  z <- open_zarr(path)
  expect_setequal(z$arrays, "/g/a")
  expect_identical(z[["/g/a"]][2, 3], 10L)
  # another writer adds an array and consolidates again: a new open sees it
  withr::with_options(list(zarr.format = 2), {
    w <- open_zarr(path)
    w$add_array("/g", "b", define_array("float64", 3))$write(c(1.5, 2.5, 3.5))
    zarr_consolidate(w)
  })
  z2 <- open_zarr(path)
  expect_setequal(z2$arrays, c("/g/a", "/g/b"))
  expect_identical(z2[["/g/b"]][], c(1.5, 2.5, 3.5))
})

test_that("the .zmetadata read with one store's root is not another store's", {
  with_cons <- v2_tree(consolidate = TRUE)
  without <- v2_tree(consolidate = FALSE)
  withr::with_options(list(zarr.format = 2), open_zarr(without)$add_array("/", "h", define_array("int32", 2)))
  s1 <- zarr_localstore$new(with_cons)
  s2 <- zarr_localstore$new(without)
  meta <- s1$get_metadata("")
  expect_identical(meta, s2$get_metadata("")) # the same root documents
  s1$get_metadata("")
  expect_null(zarr:::read_consolidated(s2, meta)) # s1's document is not s2's
  expect_setequal(zarr$new(s2)$arrays, c("/g/a", "/h"))
  expect_setequal(names(zarr:::read_consolidated(s1, s1$get_metadata(""))), c("g", "g/a"))
  expect_setequal(zarr$new(s1)$arrays, "/g/a")
})

test_that("documents that are folders count as absent; an unreadable .zmetadata means listing", {
  path <- v2_tree(consolidate = FALSE)
  dir.create(file.path(path, ".zmetadata"))
  dir.create(file.path(path, "g", ".zattrs"))
  z <- open_zarr(path)
  expect_setequal(z$arrays, "/g/a")
  expect_identical(z[["/g"]]$attributes, setNames(list(), character()))
  expect_identical(z[["/g/a"]][4, 4], 16L)
})

test_that("opening reads documents, not data: no data requests are counted", {
  path <- v2_tree(consolidate = FALSE)
  z <- open_zarr(path)
  st <- z$store
  before <- st$io_stats()
  a <- z[["/g/a"]]
  expect_equal((st$io_stats() - before)[["requests"]], 0)
  withr::local_options(zarr.chunk_cache_bytes = 0)
  expect_identical(a[1, 1], 1L)
  expect_equal((st$io_stats() - before)[["requests"]], 1)
})

test_that("a node path too long for a key is a classed error", {
  path <- v2_tree(consolidate = FALSE)
  st <- zarr_localstore$new(path)
  long <- paste(rep("abcdefgh", 600), collapse = "/")
  expect_error(st$get_metadata(long), class = "zarr_error_key")
  expect_error(st$get_metadata("../x"), class = "zarr_error_key")
  expect_null(st$get_metadata("nothing/here"))
})
