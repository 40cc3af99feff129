# Zarr Vectors attributes beyond one column per vertex: several channels,
# fragment, link, cross-chunk link, object and group attributes; the stored
# bytes against blobs built by hand, and round trips.

zva_tmp <- function(env = parent.frame()) withr::local_tempfile(fileext = ".zarr", .local_envir = env)
zva_bytes <- function(zv, path) zv$get_node(path)$read_bytes()
f64le <- function(x) writeBin(as.double(x), raw(), size = 8L, endian = "little")
i32le <- function(x) writeBin(as.integer(x), raw(), size = 4L, endian = "little")

zva_store <- function(path) {
  set.seed(21)
  n <- 400
  v <- cbind(runif(n, 0, 30), runif(n, 0, 30))
  obj <- sample(0:4, n, TRUE)
  e <- unique(cbind(sample(n, 120, TRUE), sample(n, 120, TRUE)))
  e <- e[e[, 1] != e[, 2], ]
  color <- matrix(sample(0:255, 3 * n, TRUE), ncol = 3, dimnames = list(NULL, c("r", "g", "b")))
  att <- data.frame(id = seq_len(n))
  att$color <- color
  la <- data.frame(weight = runif(nrow(e)))
  la$dir <- matrix(runif(2 * nrow(e)), ncol = 2)
  oa <- data.frame(size = c(5L, 1L, 4L, 2L, 3L))
  oa$box <- matrix(as.numeric(1:10), ncol = 2)
  fa <- data.frame(tag = c(1.5, 2.5, 3.5, 4.5, 5.5))
  groups <- list(c(0, 1), c(2, 3, 4), 4)
  ga <- data.frame(g = c(10L, 20L, 30L))
  ga$rgb <- matrix(c(0.1, 0.2, 0.3, 0.4, 0.5, 0.6), ncol = 2)
  zv <- write_zarr_vectors(path, v, chunk_shape = c(10, 10), attributes = att, links = e, objects = obj,
                           object_attributes = oa, fragment_attributes = fa, groups = groups,
                           group_attributes = ga, link_attributes = la)
  list(zv = zv, v = v, obj = obj, e = e, color = color, la = la, oa = oa, fa = fa, ga = ga)
}

test_that("vertex attributes of several channels are rows of C values, named by channel_names", {
  s <- zva_store(zva_tmp())
  zv <- s$zv
  got <- zv$read_level()$vertices
  expect_identical(got$color, s$color[got$id, ], ignore_attr = FALSE)
  md <- zv$get_node("0/vertex_attributes/color")$attributes
  expect_identical(md$zv_array, "attribute")
  expect_identical(md$dtype, "int32")
  expect_identical(unlist(md$channel_names), c("r", "g", "b"))
  expect_identical(unlist(zv$get_node("0/vertex_attributes")$attributes$names), c("id", "color"))
  # the blob of each chunk: its vertices' channels one row after the other, int32 little endian
  for (k in levels(got$chunk)[1:3]) {
    ids <- got$id[got$chunk == k]
    expect_identical(zva_bytes(zv, paste0("0/vertex_attributes/color/", k)), i32le(t(s$color[ids, ])))
  }
  # level 1 keeps the channels (means of the merged vertices)
  l1 <- zv$read_level(1)$vertices
  expect_identical(colnames(l1$color), c("r", "g", "b"))
  expect_equal(ncol(l1$color), 3L)
  expect_true(all(l1$color >= 0 & l1$color <= 255))
})

test_that("link attributes follow links/0 inside chunks and the cross-chunk records across them", {
  s <- zva_store(zva_tmp())
  zv <- s$zv
  got <- zv$read_level()
  ids <- got$vertices$id
  la <- zv$link_attributes()
  expect_identical(names(la), c("weight", "dir"))
  expect_identical(nrow(la), nrow(got$links))
  # each link read comes with the values of the edge it was written from
  key_in <- paste(s$e[, 1], s$e[, 2])
  key_out <- paste(ids[got$links[, 1]], ids[got$links[, 2]])
  at <- match(key_out, key_in)
  expect_false(anyNA(at))
  expect_identical(la$weight, s$la$weight[at])
  expect_identical(unname(la$dir), s$la$dir[at, ])
  # the cross-chunk blob: the values of the edges across chunks, in the order given, float64 little endian
  ck <- got$vertices$chunk
  cross <- which(as.character(ck[match(s$e[, 1], ids)]) != as.character(ck[match(s$e[, 2], ids)]))
  expect_identical(zva_bytes(zv, "0/cross_chunk_link_attributes/weight/0/data"), f64le(s$la$weight[cross]))
  expect_identical(zva_bytes(zv, "0/cross_chunk_link_attributes/dir/0/data"), f64le(t(s$la$dir[cross, ])))
  md <- zv$get_node("0/cross_chunk_link_attributes/weight/0")$attributes
  expect_identical(md[c("zv_array", "name", "dtype", "level_delta", "num_links")],
                   list(zv_array = "cross_chunk_link_attribute", name = "weight", dtype = "float64",
                        level_delta = 0L, num_links = length(cross)))
  # inside a chunk: parallel to the link rows of links/0/<chunk>
  k <- names(which.max(table(ck[match(s$e[-cross, 1], ids)])))
  rows <- matrix(readBin(zva_bytes(zv, paste0("0/links/0/", k)), "integer", 1e4, size = 8L, endian = "little"),
                 ncol = 2, byrow = TRUE)
  base <- which(ck == k)[1L] - 1L
  lk <- match(paste(ids[base + rows[, 1] + 1], ids[base + rows[, 2] + 1]), key_in)
  expect_identical(zva_bytes(zv, paste0("0/link_attributes/weight/0/", k)), f64le(s$la$weight[lk]))
  md <- zv$get_node(paste0("0/link_attributes/dir/0"))$attributes
  expect_identical(md$zv_array, "link_attribute")
  expect_identical(md$level_delta, 0L)
  expect_identical(unlist(md$channel_names), c("ch0", "ch1"))
})

test_that("fragment attributes have one row per fragment, object attributes and group attributes one per object and group", {
  s <- zva_store(zva_tmp())
  zv <- s$zv
  fa <- zv$fragment_attributes()
  got <- zv$read_level()$vertices
  for (k in levels(got$chunk)) {
    objs <- sort(unique(s$obj[got$id[got$chunk == k]]))
    expect_identical(fa$tag[fa$chunk == k], s$fa$tag[objs + 1])
    expect_identical(fa$fragment[fa$chunk == k], seq_along(objs) - 1L)
    expect_identical(zva_bytes(zv, paste0("0/fragment_attributes/tag/", k)), f64le(s$fa$tag[objs + 1]))
  }
  expect_identical(zv$get_node("0/fragment_attributes/tag")$attributes$zv_array, "fragment_attribute")
  expect_identical(nrow(zv$fragment_attributes(1)), nrow(fa)) # level 1: the same fragments per chunk here
  oa <- zv$object_attributes()
  expect_identical(oa$size, s$oa$size)
  expect_identical(unname(oa$box), s$oa$box)
  md <- zv$get_node("0/object_attributes/box")$attributes
  expect_identical(md$num_channels, 2L)
  expect_identical(unlist(md$shape), c(5L, 2L))
  expect_identical(zva_bytes(zv, "0/object_attributes/box/data"), f64le(t(s$oa$box)))
  ga <- zv$group_attributes()
  expect_identical(ga$g, s$ga$g)
  expect_identical(unname(ga$rgb), s$ga$rgb)
  md <- zv$get_node("0/group_attributes/g")$attributes
  expect_identical(md[c("zv_array", "name", "dtype", "num_channels")],
                   list(zv_array = "groupings_attribute", name = "g", dtype = "int32", num_channels = 1L))
  expect_identical(unlist(md$shape), 3L)
  expect_identical(zva_bytes(zv, "0/group_attributes/g/data"), i32le(s$ga$g))
  expect_identical(zv$group_attributes(1), data.frame())
})

test_that("attributes of the wrong length are refused; misaligned attribute blobs are zarr_error_zv", {
  v <- rbind(c(1, 1), c(2, 2), c(12, 1))
  p <- zva_tmp()
  expect_error(write_zarr_vectors(p, v, c(10, 10), links = rbind(c(1, 2)), link_attributes = data.frame(w = 1:2)),
               class = "zarr_error_argument")
  expect_error(write_zarr_vectors(p, v, c(10, 10), objects = c(0, 1, 1), fragment_attributes = data.frame(w = 1)),
               class = "zarr_error_argument")
  expect_error(write_zarr_vectors(p, v, c(10, 10), groups = list(0), group_attributes = data.frame(w = 1:2)),
               class = "zarr_error_argument")
  expect_error(write_zarr_vectors(p, v, c(10, 10), attributes = data.frame(w = letters[1:3])),
               class = "zarr_error_argument")
  zv <- write_zarr_vectors(p, v, c(10, 10), attributes = data.frame(w = c(1, 2, 3)), objects = c(0, 0, 1),
                           fragment_attributes = data.frame(t = c(7, 8), u = c(1, 2)), levels = 1L)
  # a blob replaced by one of another length
  swap <- function(dir, key, bytes) {
    unlink(file.path(p, dir, key), recursive = TRUE)
    zarr:::zv_write_blob(open_zarr(p)$root$get_node(dir), key, bytes)
  }
  swap("0/vertex_attributes/w", "0.0", f64le(1)) # one value for a chunk of two vertices
  expect_error(open_zarr(p)$root$read_level(), class = "zarr_error_zv")
  swap("0/fragment_attributes/u", "1.0", f64le(c(1, 2))) # two rows where t has one
  expect_error(open_zarr(p)$root$fragment_attributes(), class = "zarr_error_zv")
})

test_that("factor and logical attributes read back as written: dictionary-encoded codes and bool (issue 26, defect 10)", {
  p <- zva_tmp()
  set.seed(10)
  n <- 60
  v <- cbind(runif(n, 0, 20), runif(n, 0, 20))
  obj <- rep(0:2, 20)
  e <- cbind(1:(n - 1), 2:n)
  kind <- factor(sample(c("soma", "axon", "dendrite"), n, TRUE), levels = c("soma", "axon", "dendrite", "unused"))
  kind[c(3, 7)] <- NA
  att <- data.frame(id = seq_len(n), kind = kind, ok = sample(c(TRUE, FALSE), n, TRUE),
                    grade = factor(sample(c("lo", "mid", "hi"), n, TRUE), levels = c("lo", "mid", "hi"), ordered = TRUE))
  att$flags <- matrix(sample(c(TRUE, FALSE), 2 * n, TRUE), ncol = 2, dimnames = list(NULL, c("a", "b")))
  oa <- data.frame(type = factor(c("x", "y", "x")), live = c(TRUE, FALSE, TRUE))
  la <- data.frame(dir = factor(sample(c("in", "out"), n - 1, TRUE)), real = sample(c(TRUE, FALSE), n - 1, TRUE))
  fa <- data.frame(tag = factor(c("p", "q", "r")), on = c(FALSE, TRUE, TRUE))
  ga <- data.frame(name = factor(c("g1", "g2")), big = c(TRUE, FALSE))
  zv <- write_zarr_vectors(p, v, c(10, 10), attributes = att, links = e, objects = obj, object_attributes = oa,
                           link_attributes = la, fragment_attributes = fa, groups = list(0, c(1, 2)),
                           group_attributes = ga)
  zv <- open_zarr(p)$root
  got <- zv$read_level()
  vx <- got$vertices
  o <- order(vx$id)
  expect_identical(vx$kind[o], att$kind)
  expect_identical(vx$grade[o], att$grade)
  expect_identical(vx$ok[o], att$ok)
  expect_identical(vx$flags[o, ], att$flags)
  ro <- zv$read_objects(1)$vertices
  expect_identical(sort(ro$id), which(obj == 1))
  expect_identical(ro$kind, att$kind[ro$id])
  expect_identical(ro$ok, att$ok[ro$id])
  bx <- zv$read_box(c(0, 0), c(9, 9))$vertices
  expect_identical(bx$grade, att$grade[bx$id])
  expect_identical(zv$object_attributes(), oa)
  expect_identical(zv$group_attributes(), ga)
  fr <- zv$fragment_attributes()
  expect_identical(levels(fr$tag), c("p", "q", "r"))
  expect_type(fr$on, "logical")
  for (k in levels(vx$chunk)) {
    objs <- sort(unique(obj[vx$id[vx$chunk == k]]))
    expect_identical(fr$tag[fr$chunk == k], fa$tag[objs + 1])
    expect_identical(fr$on[fr$chunk == k], fa$on[objs + 1])
  }
  lk <- zv$link_attributes()
  at <- match(paste(vx$id[got$links[, 1]], vx$id[got$links[, 2]]), paste(e[, 1], e[, 2]))
  expect_identical(lk$dir, la$dir[at])
  expect_identical(lk$real, la$real[at])
  # on disk: the dictionary encoding of the reference implementation
  # (codes from 0, the levels as "categories", -1 for NA) and bool bytes
  md <- zv$get_node("0/vertex_attributes/kind")$attributes
  expect_identical(md$dtype, "int32")
  expect_identical(md$encoding, "dictionary")
  expect_identical(unlist(md$categories), c("soma", "axon", "dendrite", "unused"))
  expect_identical(md$ordered, FALSE)
  expect_identical(md[["_FillValue"]], -1L)
  expect_identical(zv$get_node("0/vertex_attributes/grade")$attributes$ordered, TRUE)
  expect_null(zv$get_node("0/vertex_attributes/grade")$attributes[["_FillValue"]])
  expect_identical(zv$get_node("0/vertex_attributes/ok")$attributes$dtype, "bool")
  expect_identical(zv$get_node("0/object_attributes/live")$attributes$dtype, "bool")
  expect_identical(unlist(zv$get_node("0/link_attributes/dir/0")$attributes$categories), c("in", "out"))
  for (k in levels(vx$chunk)[1:3]) {
    ids <- vx$id[vx$chunk == k]
    expect_identical(zva_bytes(zv, paste0("0/vertex_attributes/kind/", k)),
                     i32le(ifelse(is.na(att$kind[ids]), -1L, as.integer(att$kind[ids]) - 1L)))
    expect_identical(zva_bytes(zv, paste0("0/vertex_attributes/ok/", k)), as.raw(att$ok[ids]))
    expect_identical(zva_bytes(zv, paste0("0/vertex_attributes/flags/", k)), as.raw(t(att$flags[ids, ])))
  }
  expect_identical(zva_bytes(zv, "0/group_attributes/big/data"), as.raw(c(1, 0)))
  # level 1 keeps the types: the most frequent value of the merged vertices
  l1 <- zv$read_level(1)$vertices
  expect_identical(levels(l1$kind), levels(kind))
  expect_true(is.ordered(l1$grade))
  expect_type(l1$ok, "logical")
  expect_type(l1$flags, "logical")
})

test_that("the most frequent value of a bin: ties go to the smallest, the NA code last", {
  expect_identical(zarr:::zv_mode(c(1, 1, 2, 2, 2, -1, -1, 0), c(1, 1, 1, 1, 1, 2, 2, 2), 2L), c(2, -1))
  expect_identical(zarr:::zv_mode(c(3, 0, 1, 1, 0), c(1, 1, 2, 2, 2), 2L), c(0, 1))
  expect_identical(zarr:::zv_mode(c(-1, 3), c(1, 1), 1L), 3)
})

test_that("a logical attribute with NA is refused (bool holds no NA), not stored changed", {
  p <- zva_tmp()
  v <- rbind(c(1, 1), c(2, 2))
  expect_error(write_zarr_vectors(p, v, c(10, 10), attributes = data.frame(ok = c(TRUE, NA))),
               class = "zarr_error_argument", regexp = "column 'ok' of attributes has NA")
  expect_error(write_zarr_vectors(p, v, c(10, 10), objects = c(0, 1), object_attributes = data.frame(ok = c(NA, TRUE))),
               class = "zarr_error_argument", regexp = "bool")
})
