# Zarr Vectors conventions the writer does not use but stores from other
# writers do: implicit_sequential links and the identity object index.

zvc_tmp <- function(env = parent.frame()) withr::local_tempfile(fileext = ".zarr", .local_envir = env)

# the root's zarr_vectors attribute with some fields changed
zvc_convention <- function(path, ...) {
  zv <- open_zarr(path)$root
  i <- zv$info
  new <- list(...)
  i[names(new)] <- new
  zv$set_attribute("zarr_vectors", i)
  open_zarr(path)$root
}

test_that("implicit_sequential polylines link each fragment's vertices in their order", {
  set.seed(31)
  # three walks, each one object, that never come back to a chunk they left
  # (a fragment is then a stretch of the line)
  walks <- lapply(1:3, function(i) apply(matrix(runif(2 * 60, 0.05, 1), ncol = 2), 2, cumsum) + i)
  v <- do.call(rbind, walks)
  obj <- rep(0:2, each = 60)
  steps <- do.call(rbind, lapply(0:2, function(o) cbind(o * 60 + 1:59, o * 60 + 2:60)))
  p <- zvc_tmp()
  # written with explicit links, read back as the reference's polylines would be stored
  ex <- write_zarr_vectors(p, v, c(10, 10), links = steps, objects = obj, attributes = data.frame(id = seq_len(nrow(v))),
                           levels = 1L)
  want <- ex$read_level()
  unlink(file.path(p, "0", c("links", "link_fragments")), recursive = TRUE)
  zv <- zvc_convention(p, links_convention = "implicit_sequential", geometry_types = list("polyline"))
  got <- zv$read_level()
  ids <- got$vertices$id
  pairs <- function(m, ids) sort(paste(ids[m[, 1]], ids[m[, 2]]))
  expect_identical(pairs(got$links, ids), pairs(want$links, want$vertices$id))
  # the links inside chunks are the steps whose ends share a chunk, the rest the cross-chunk records
  expect_identical(nrow(got$links), nrow(steps))
  # a box and objects see them too
  one <- zv$read_objects(1)
  expect_identical(nrow(one$links), 59L)
  # a point cloud marked implicit_sequential (the reference marks them so) has no links
  p2 <- zvc_tmp()
  write_zarr_vectors(p2, v, c(10, 10), levels = 1L)
  pc <- zvc_convention(p2, links_convention = "implicit_sequential")
  expect_null(pc$read_level()$links)
})

test_that("the identity object index makes object k the vertex of row k of the one chunk", {
  set.seed(32)
  v <- matrix(runif(40, 0, 9), ncol = 2)
  p <- zvc_tmp()
  write_zarr_vectors(p, v, c(10, 10), links = rbind(c(1, 2), c(2, 3), c(5, 9)), objects = 0:19,
                     attributes = data.frame(id = 1:20), levels = 1L)
  unlink(file.path(p, "0", "object_index"), recursive = TRUE)
  zv <- zvc_convention(p, object_index_convention = "identity")
  all <- zv$read_level()$vertices
  got <- zv$read_objects(c(4, 0, 1))
  expect_identical(got$vertices$id, all$id[c(5, 1, 2)])
  expect_identical(got$vertices$object, c(4L, 0L, 1L))
  # the link between vertices 1 and 2 (rows of all) is inside the selection
  l <- got$links
  expect_identical(nrow(l), 1L)
  expect_setequal(got$vertices$id[l[1, ]], c(1L, 2L))
  expect_error(zv$read_objects(20), class = "zarr_error_argument")
  # with more than one chunk the convention is invalid
  p2 <- zvc_tmp()
  write_zarr_vectors(p2, rbind(v, c(15, 15)), c(10, 10), objects = 0:20, levels = 1L)
  zv2 <- zvc_convention(p2, object_index_convention = "identity")
  expect_error(zv2$read_objects(0), class = "zarr_error_zv")
})
