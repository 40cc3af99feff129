# Symbolic links in a local store: loops end, linked folders are followed,
# and erasing through a link removes the link, never what it points to.

skip_on_os("windows")

linked_store <- function(env = parent.frame()) {
  root <- withr::local_tempdir(.local_envir = env)
  z <- create_zarr(file.path(root, "s.zarr"))
  z$add_group("/", "g")
  d <- define_array("int32", c(4, 4))
  d$chunk_shape <- c(2, 2)
  z$add_array("/g", "a", d)$write(matrix(1:16, 4))
  list(z = z, root = root, path = file.path(root, "s.zarr"))
}

test_that("a link to its own folder, or to the root, ends listings, print() and str()", {
  s <- linked_store()
  file.symlink(".", file.path(s$path, "g", "self"))
  file.symlink("..", file.path(s$path, "g", "up"))
  file.symlink(file.path(s$path), file.path(s$path, "g", "a", "root"))
  st <- open_zarr(s$path)$store
  keys <- st$list_prefix("")
  expect_identical(keys, sort(c("zarr.json", "g/zarr.json", "g/a/zarr.json",
                                sprintf("g/a/c.%d.%d", rep(0:1, each = 2), rep(0:1, 2)))))
  expect_identical(st$list_dir("g/"), c("a", "zarr.json"))
  expect_identical(st$list_dir("g/a/"), c("c.0.0", "c.0.1", "c.1.0", "c.1.1", "zarr.json"))
  z <- open_zarr(s$path)
  expect_identical(names(z[["/g"]]$children), "a")
  out <- capture.output(suppressMessages({print(z); print(z[["/g/a"]]); str(z)}))
  expect_gt(length(out), 0)
  expect_identical(z[["/g/a"]][, ], matrix(1:16, 4))
})

test_that("a loop through two links ends; a link to an array elsewhere is followed", {
  s <- linked_store()
  other <- linked_store()
  dir.create(file.path(s$path, "b"))
  file.symlink(file.path(s$path, "b"), file.path(s$path, "g", "l1"))
  file.symlink(file.path(s$path, "g"), file.path(s$path, "b", "l2"))
  file.symlink(file.path(other$path, "g", "a"), file.path(s$path, "g", "b2"))
  st <- open_zarr(s$path)$store
  keys <- st$list_prefix("")
  expect_true(all(c("g/a/c.1.1", "g/b2/zarr.json", "g/b2/c.1.1") %in% keys))
  expect_false(any(grepl("l2/l1|l1/l2/l1", keys)))
  expect_true(all(lengths(strsplit(keys, "/")) <= 5))
  z <- open_zarr(s$path)
  expect_identical(z[["/g/b2"]][, ], matrix(1:16, 4))
  expect_no_error(capture.output(suppressMessages(print(z))))
})

test_that("deleting a node whose folder is a link removes the link, not its target", {
  s <- linked_store()
  other <- linked_store()
  target <- file.path(other$path, "g")
  before <- sort(list.files(target, recursive = TRUE, all.files = TRUE))
  file.symlink(target, file.path(s$path, "lg"))
  file.symlink(file.path(target, "a"), file.path(s$path, "g", "la"))
  z <- open_zarr(s$path)
  expect_setequal(names(z[["/"]]$children), c("g", "lg"))
  z[["/g"]]$delete("la")
  expect_false(file.exists(file.path(s$path, "g", "la")))
  expect_identical(sort(list.files(target, recursive = TRUE, all.files = TRUE)), before)
  z[["/lg"]]$delete_all()
  expect_identical(sort(list.files(target, recursive = TRUE, all.files = TRUE)), before)
  expect_false(nzchar(Sys.readlink(file.path(s$path, "lg"))))
  expect_length(open_zarr(s$path)[["/lg"]]$children, 0)
  z <- open_zarr(s$path)
  z[["/"]]$delete("lg")
  expect_false(file.exists(file.path(s$path, "lg")))
  # the store erases a linked folder by its link, whatever is inside
  file.symlink(target, file.path(s$path, "lg2"))
  expect_true(z$store$erase("lg2"))
  expect_identical(sort(list.files(target, recursive = TRUE, all.files = TRUE)), before)
  expect_identical(open_zarr(other$path)[["/g/a"]][, ], matrix(1:16, 4))
})

test_that("a linked folder is read through, but never written or erased through when it leads outside the store", {
  s <- linked_store()
  other <- linked_store()
  target <- file.path(other$path, "g", "a")
  before <- tools::md5sum(list.files(target, recursive = TRUE, all.files = TRUE, full.names = TRUE))
  file.symlink(target, file.path(s$path, "g", "b2"))
  # a link to a folder inside the store is an ordinary folder for writes
  file.symlink(file.path(s$path, "g", "a"), file.path(s$path, "g", "same"))
  z <- open_zarr(s$path)
  b2 <- z[["/g/b2"]]
  expect_identical(b2[, ], matrix(1:16, 4))
  e <- expect_error(b2[1, 1] <- 99L, class = "zarr_error_key")
  expect_match(conditionMessage(e), "outside the store")
  expect_error(b2$set_attribute("x", 1), class = "zarr_error_key")
  expect_error(b2$resize(c(2, 2)), class = "zarr_error_key")
  expect_error(z$store$erase("g/b2/c.0.0"), class = "zarr_error_key")
  expect_error(z$store$set("g/b2/new", as.raw(1)), class = "zarr_error_key")
  expect_identical(tools::md5sum(list.files(target, recursive = TRUE, all.files = TRUE, full.names = TRUE)), before)
  expect_identical(open_zarr(other$path)[["/g/a"]][, ], matrix(1:16, 4))
  same <- z[["/g/same"]]
  same[1, 1] <- 99L
  expect_identical(z[["/g/a"]][1, 1], 99L)
})
