# Zarr Vectors stores: round trips of point clouds, graphs and meshes, box
# and object queries against brute force, levels, the domain.

zv_tmp <- function(env = parent.frame()) withr::local_tempfile(fileext = ".zarr", .local_envir = env)

# Edges as sorted "a-b" strings of original vertex ids, for set comparison.
edge_set <- function(m, ids) {
  if (!nrow(m)) return(character())
  e <- matrix(ids[m], ncol = ncol(m))
  sort(apply(e, 1L, function(r) paste(sort(r), collapse = "-")))
}

test_that("a random point cloud round-trips with its attributes", {
  set.seed(1)
  n <- 5000
  xyz <- cbind(runif(n, -50, 150), runif(n, 0, 100), rnorm(n, 40, 30))
  att <- data.frame(id = seq_len(n), intensity = runif(n), label = sample(0:5, n, TRUE))
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(40, 40, 40), attributes = att, dtype = "float64")
  expect_s3_class(zv, "zarr_vectors_store")
  expect_identical(zv$axes, c("x", "y", "z"))
  got <- zv$read_level()
  v <- got$vertices[order(got$vertices$id), ]
  expect_equal(nrow(v), n)
  expect_equal(as.matrix(v[c("x", "y", "z")]), xyz, ignore_attr = TRUE)
  expect_equal(v$intensity, att$intensity)
  expect_identical(v$label, att$label)
  expect_null(got$links)
  # every vertex lies in the chunk it is stored under
  ck <- do.call(rbind, strsplit(as.character(v$chunk), ".", fixed = TRUE))
  expect_equal(matrix(as.numeric(ck), ncol = 3), floor(xyz / 40))
  # float32 positions keep float32 precision
  zv32 <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(40, 40, 40), attributes = att["id"], levels = 1L)
  v32 <- zv32$read_level()$vertices
  v32 <- v32[order(v32$id), ]
  expect_equal(as.matrix(v32[c("x", "y", "z")]), xyz, tolerance = 1e-6, ignore_attr = TRUE)
  expect_identical(zv32$levels$path, "0")
})

test_that("box queries return what brute-force filtering finds", {
  set.seed(2)
  n <- 4000
  xyz <- matrix(runif(3 * n, 0, 100), ncol = 3)
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(25, 25, 25), attributes = data.frame(id = seq_len(n)),
                           dtype = "float64", levels = 1L)
  for (i in 1:6) {
    lo <- runif(3, -10, 80)
    hi <- lo + runif(3, 0, 50)
    want <- which(rowSums(xyz >= rep(lo, each = n) & xyz <= rep(hi, each = n)) == 3)
    b <- zv$read_box(lo, hi)
    expect_setequal(b$vertices$id, want)
    if (length(want))
      expect_equal(as.matrix(b$vertices[order(b$vertices$id), c("x", "y", "z")]), xyz[want, , drop = FALSE], ignore_attr = TRUE)
  }
  expect_identical(nrow(zv$read_box(c(200, 200, 200), c(300, 300, 300))$vertices), 0L)
  expect_error(zv$read_box(c(1, 1, 1), c(0, 0, 0)), class = "zarr_error_argument")
  # one chunk, by coordinates or key
  ch <- zv$chunks()
  c1 <- zv$read_chunk(ch[5, ])
  expect_identical(as.character(c1$vertices$chunk[1]), rownames(ch)[5])
  expect_equal(sort(c1$vertices$id), which(apply(floor(xyz / 25), 1, function(r) all(r == ch[5, ]))))
})

test_that("objects come back whole through the object manifest", {
  set.seed(3)
  n <- 3000
  xyz <- matrix(runif(3 * n, 0, 90), ncol = 3)
  obj <- sample(0:9, n, TRUE)
  oa <- data.frame(volume = runif(10), kind = 10:1)
  groups <- list(c(0, 3, 5), 7, c(1, 2))
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(30, 30, 30), attributes = data.frame(id = seq_len(n)),
                           objects = obj, object_attributes = oa, groups = groups, dtype = "float64")
  for (ids in list(0, 4, c(2, 9))) {
    got <- zv$read_objects(ids)
    expect_setequal(got$vertices$id, which(obj %in% ids))
    expect_identical(got$vertices$object, obj[got$vertices$id])
  }
  expect_equal(zv$object_attributes(), oa)
  expect_equal(zv$object_groups(), groups)
  m <- zv$manifests(4)
  expect_true(all(m$object == 4))
  expect_identical(nrow(m$coords), length(unique(apply(floor(xyz[obj == 4, ] / 30), 1, paste, collapse = "."))))
  f <- zv$fragments(rownames(zv$chunks())[1])
  expect_true(all(f$is_range))
  # level 1: per object, one vertex per occupied bin, inside the object's extent
  l1 <- zv$read_objects(4, level = 1)$vertices
  expect_gt(nrow(l1), 0)
  expect_lt(nrow(l1), sum(obj == 4))
  expect_true(all(l1$object == 4))
  expect_identical(zv$level_metadata(1)$parent_level, 0L)
  expect_error(zv$read_objects(10), class = "zarr_error_zv")
})

test_that("a random graph round-trips, with links inside and across chunks", {
  set.seed(4)
  n <- 800
  xyz <- matrix(runif(3 * n, 0, 100), ncol = 3)
  obj <- sample(0:3, n, TRUE)
  # edges inside objects, some between far-apart vertices (other chunks)
  edges <- do.call(rbind, lapply(0:3, function(o) {
    w <- which(obj == o)
    unique(t(apply(matrix(sample(w, 2 * 300, TRUE), ncol = 2), 1, sort)))
  }))
  edges <- edges[edges[, 1] != edges[, 2], ]
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(50, 50, 50), links = edges, objects = obj,
                           attributes = data.frame(id = seq_len(n)), dtype = "float64")
  expect_identical(unlist(zv$info$geometry_types), "graph")
  got <- zv$read_level()
  expect_identical(ncol(got$links), 2L)
  expect_identical(edge_set(got$links, got$vertices$id), edge_set(edges, seq_len(n)))
  x <- zv$cross_chunk_links()
  expect_gt(nrow(x$rows), 0)
  # a box: the edges whose two ends are in it
  lo <- c(10, 10, 10)
  hi <- c(80, 70, 90)
  inbox <- rowSums(xyz >= rep(lo, each = n) & xyz <= rep(hi, each = n)) == 3
  b <- zv$read_box(lo, hi)
  expect_setequal(b$vertices$id, which(inbox))
  expect_identical(edge_set(b$links, b$vertices$id), edge_set(edges[inbox[edges[, 1]] & inbox[edges[, 2]], ], seq_len(n)))
  # an object: its vertices and its edges
  o <- zv$read_objects(2)
  expect_setequal(o$vertices$id, which(obj == 2))
  expect_identical(edge_set(o$links, o$vertices$id), edge_set(edges[obj[edges[, 1]] == 2, ], seq_len(n)))
  # link fragments parallel the vertex fragments
  k <- rownames(zv$chunks())[1]
  expect_identical(length(zv$fragments(k, links = TRUE)$is_range), length(zv$fragments(k)$is_range))
})

test_that("a triangle mesh round-trips", {
  set.seed(5)
  g <- expand.grid(x = 0:20, y = 0:20)
  xyz <- cbind(g$x * 5, g$y * 5, sin(g$x / 3) * 10 + 20)
  id <- function(i, j) i * 21 + j + 1
  tri <- do.call(rbind, lapply(0:19, function(j) do.call(rbind, lapply(0:19, function(i)
    rbind(c(id(j, i), id(j, i + 1), id(j + 1, i)), c(id(j, i + 1), id(j + 1, i + 1), id(j + 1, i)))))))
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(30, 30, 30), links = tri,
                           attributes = data.frame(id = seq_len(nrow(xyz))), dtype = "float64")
  expect_identical(unlist(zv$info$geometry_types), "mesh")
  got <- zv$read_level()
  expect_identical(ncol(got$links), 3L)
  # faces keep their vertex order
  f <- matrix(got$vertices$id[got$links], ncol = 3)
  key <- function(m) sort(apply(m, 1, paste, collapse = "-"))
  expect_identical(key(f), key(tri))
  expect_equal(as.matrix(got$vertices[order(got$vertices$id), c("x", "y", "z")]), xyz, ignore_attr = TRUE)
  one <- zv$read_objects(0)
  expect_identical(nrow(one$vertices), nrow(xyz))
  expect_identical(nrow(one$links), nrow(tri))
})

test_that("the ZarrVectors domain claims ZV roots before OME-NGFF does", {
  doms <- names(zarr_domains())
  expect_true(match("ZarrVectors", doms) < match("OME-NGFF", doms))
  path <- zv_tmp()
  write_zarr_vectors(path, matrix(1:6 + 0.5, ncol = 2), chunk_shape = c(2, 2), levels = 1L)
  z <- open_zarr(path)
  expect_s3_class(z$root, "zarr_vectors_store")
  expect_output(print(z$root), "Zarr Vectors")
  # domains asked first with first = TRUE
  first <- local_domain(observer_domain$new())
  zarr_unregister_domain("Observer")
  zarr_register_domain(first, first = TRUE)
  expect_identical(names(zarr_domains())[1], "Observer")
})

test_that("damaged ZV stores give zarr_error_zv errors", {
  path <- zv_tmp()
  v <- rbind(c(1, 1), c(2, 2), c(3, 3), c(12, 1))
  zv <- write_zarr_vectors(path, v, chunk_shape = c(10, 10), objects = c(0, 0, 1, 1), levels = 1L,
                           links = rbind(c(1, 2), c(3, 4)))
  # a fragment index whose range runs past the chunk's vertices
  fr <- zv$get_node("0/vertex_fragments/1.0")
  b <- as.raw(fr$read())
  b[33] <- as.raw(5) # count of the one range: 5 rows in a chunk of 1
  fr[] <- as.integer(b)
  zv <- open_zarr(path)$root
  expect_error(zv$read_objects(1), class = "zarr_error_zv")
  # a link naming a vertex its chunk does not have
  ln <- zv$get_node("0/links/0/0.0")
  ln[] <- c(9L, rep(0L, 15))
  expect_error(open_zarr(path)$root$read_level(), class = "zarr_error_zv")
})

test_that("links from level 0 to level 1 lead each vertex to the centroid it was merged into", {
  set.seed(6)
  n <- 1500
  xyz <- matrix(runif(3 * n, 0, 100), ncol = 3)
  obj <- sample(0:2, n, TRUE)
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(50, 50, 50), objects = obj, dtype = "float64",
                           attributes = data.frame(id = seq_len(n)), level_links = TRUE)
  expect_identical(zv$info$cross_level_storage, "explicit")
  expect_true("multiscale_links" %in% unlist(zv$info$format_capabilities))
  ll <- zv$level_links()
  expect_identical(nrow(ll$rows), as.integer(n))
  l0 <- zv$read_level(0)$vertices
  l1 <- zv$read_level(1)$vertices
  key0 <- paste(zarr:::zv_chunk_key(ll$coords[[1]]), ll$rows[, 1])
  key1 <- paste(zarr:::zv_chunk_key(ll$coords[[2]]), ll$rows[, 2])
  from <- match(key0, paste(l0$chunk, l0$row))
  to <- match(key1, paste(l1$chunk, l1$row))
  expect_false(anyNA(from))
  expect_false(anyNA(to))
  cen <- rowsum(as.matrix(l0[from, c("x", "y", "z")]), to) / tabulate(to)[sort(unique(to))]
  expect_equal(unname(cen), unname(as.matrix(l1[sort(unique(to)), c("x", "y", "z")])))
  expect_null(zv$level_links(1))
  # a vertex and its centroid belong to the same object
  expect_identical(obj[l0$id[from]], zv$read_objects(0:2, level = 1)$vertices$object[match(key1, {
    o <- zv$read_objects(0:2, level = 1)$vertices
    paste(o$chunk, o$row)
  })])
})

test_that("level 1 of a graph links the centroids its edges lead to", {
  set.seed(7)
  n <- 600
  xyz <- matrix(runif(3 * n, 0, 100), ncol = 3)
  edges <- cbind(1:(n - 1), 2:n)
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(50, 50, 50), links = edges, level_links = TRUE,
                           attributes = data.frame(id = seq_len(n)), dtype = "float64")
  l0 <- zv$read_level(0)$vertices
  l1 <- zv$read_level(1)
  ll <- zv$level_links()
  # the level-1 vertex of each original vertex, through the level links
  to <- match(paste(zarr:::zv_chunk_key(ll$coords[[2]]), ll$rows[, 2]), paste(l1$vertices$chunk, l1$vertices$row))
  from <- match(paste(zarr:::zv_chunk_key(ll$coords[[1]]), ll$rows[, 1]), paste(l0$chunk, l0$row))
  parent <- integer(n)
  parent[l0$id[from]] <- to
  want <- matrix(parent[edges], ncol = 2)
  want <- want[want[, 1] != want[, 2], ]
  key <- function(m) sort(unique(apply(m, 1, function(r) paste(sort(r), collapse = "-"))))
  expect_identical(key(l1$links), key(want))
  expect_identical(nrow(l1$links), length(key(want)))
})

test_that("a skeleton keeps its parent references (link_width 1)", {
  set.seed(8)
  xyz <- matrix(runif(90, 0, 10), ncol = 3)
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(5, 5, 5), links = matrix(c(1, 5, 9)), levels = 1L,
                           attributes = data.frame(id = 1:30), dtype = "float64")
  expect_identical(unlist(zv$info$geometry_types), "skeleton")
  got <- zv$read_level()
  expect_identical(sort(got$vertices$id[got$links[, 1]]), c(1L, 5L, 9L))
})

test_that("an object index stored as one manifest per variable-length bytes element reads the same", {
  path <- zv_tmp()
  set.seed(9)
  xyz <- matrix(runif(300, 0, 20), ncol = 3)
  obj <- sample(0:3, 100, TRUE)
  zv <- write_zarr_vectors(path, xyz, chunk_shape = c(10, 10, 10), objects = obj, levels = 1L,
                           attributes = data.frame(id = 1:100))
  want <- zv$read_objects(0:3)$vertices
  m <- zv$manifests(0:3)
  bytes <- as.raw(zv$get_node("0/object_index/data")$read_bytes())
  starts <- c(zarr:::zv_rows(list(zv$get_node("0/object_index/offsets")$read_bytes()), "int64", 1L, "t")[, 1L], length(bytes))
  oi <- zv$get_node("0/object_index")
  oi$delete("data")
  oi$delete("offsets")
  a <- oi$add_array("manifests", define_array("variable_length_bytes", 4))
  a[] <- lapply(1:4, function(i) bytes[seq.int(starts[i] + 1, length.out = starts[i + 1] - starts[i])])
  again <- open_zarr(path)$root
  expect_equal(again$manifests(0:3), m)
  expect_equal(again$read_objects(0:3)$vertices, want)
})

test_that("$levels has level (from 0), path, vertex_count, bin_shape and scale per level", {
  set.seed(3)
  xyz <- matrix(runif(600, 0, 100), ncol = 3)
  zv <- write_zarr_vectors(zv_tmp(), xyz, chunk_shape = c(50, 50, 50), bin_shape = c(10, 10, 20))
  lv <- zv$levels
  expect_named(lv, c("level", "path", "vertex_count", "bin_shape", "scale"))
  expect_identical(lv$level, 0:1)
  expect_identical(lv$path, c("0", "1"))
  expect_identical(lv$vertex_count[1], 200)
  expect_identical(lv$vertex_count[2], as.numeric(nrow(zv$read_level(1)$vertices)))
  expect_identical(lv$bin_shape[[2]], c(x = 20, y = 20, z = 40))
  expect_identical(lv$scale[[1]], c(x = 1, y = 1, z = 1))
  expect_identical(lv$scale[[2]], c(x = 2, y = 2, z = 2))
  # the level argument takes the same numbers
  expect_identical(nrow(zv$read_level(lv$level[1])$vertices), 200L)
  out <- capture.output(print(lv))
  expect_length(out, 3L)
  expect_match(out[1], "bin_shape [x y z]", fixed = TRUE)
  expect_match(out[3], "20 x 20 x 40", fixed = TRUE)
})

test_that("float32 positions that lose precision warn (zarr_warning_precision); float64 keeps them", {
  set.seed(4)
  # georeferenced metres with centimetre detail
  geo <- cbind(4.5e6 + round(runif(50, 0, 1000), 2), 5.6e6 + round(runif(50, 0, 1000), 2))
  expect_warning(zv <- write_zarr_vectors(zv_tmp(), geo, chunk_shape = c(100, 100), levels = 1L),
                 class = "zarr_warning_precision", regexp = "float64")
  expect_gt(max(abs(as.matrix(zv$read_level(0)$vertices[, c("x", "y")]) - geo)), 0.01)
  expect_no_warning(zv <- write_zarr_vectors(zv_tmp(), geo, chunk_shape = c(100, 100), levels = 1L,
                                             dtype = "float64"))
  v <- zv$read_level(0)$vertices
  expect_identical(as.matrix(v[order(v$x), c("x", "y")]), unname(geo[order(geo[, 1]), ]), ignore_attr = TRUE)
  # positions near the origin compared to their chunks: float32 is enough, no warning
  expect_no_warning(write_zarr_vectors(zv_tmp(), matrix(runif(300, 0, 100), ncol = 3),
                                       chunk_shape = c(50, 50, 50), levels = 1L))
})

test_that("write_zarr_vectors() writes Zarr v3 even under options(zarr.format = 2)", {
  path <- zv_tmp()
  withr::with_options(list(zarr.format = 2), {
    zv <- write_zarr_vectors(path, matrix(c(1, 2, 3, 4, 5, 6), ncol = 3), chunk_shape = c(10, 10, 10), levels = 1L)
    expect_identical(getOption("zarr.format"), 2)
  })
  expect_true(file.exists(file.path(path, "zarr.json")))
  expect_false(file.exists(file.path(path, ".zgroup")))
  expect_s3_class(open_zarr(path)$root, "zarr_vectors_store")
})
