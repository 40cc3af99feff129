# sharding_indexed after a transpose codec: the sharding codec receives the
# shard in the transposed dimensions, so its inner chunk shape (and the order
# of its index) are in those dimensions (Zarr v3 specification, sharding
# codec: "the shard chunk to which the sharding codec is applied"). The
# stores are written by hand from that text; zarrita applies the inner chunk
# grid to the array's dimensions instead, so it cannot serve as the reference.

# C-order elements of an R array.
c_order <- function(x) as.vector(aperm(x, rev(seq_along(dim(x)))))

# A float64 array `A` stored in chunks (shards) of `chunk`, with codecs
# transpose(order) -> sharding_indexed(inner, bytes; index bytes + crc32c).
write_transposed_shards <- function(dir, A, chunk, order, inner, index_location = "end") {
  dir.create(dir, recursive = TRUE, showWarnings = FALSE)
  js <- function(v) paste0("[", paste(v, collapse = ", "), "]")
  writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": %s, "data_type": "float64",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": %s}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": 0, "codecs": [{"name": "transpose", "configuration": {"order": %s}},
  {"name": "sharding_indexed", "configuration": {"chunk_shape": %s,
   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
   "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
   "index_location": "%s"}}], "attributes": {}}',
    js(dim(A)), js(chunk), js(order), js(inner), index_location), file.path(dir, "zarr.json"))
  crc32c <- zarr:::zarr_codec_crc32c$new()
  grid <- dim(A) %/% chunk
  for (ci in seq_len(prod(grid)) - 1L) {
    cc <- as.vector(arrayInd(ci + 1L, rev(grid)))[rev(seq_along(grid))] - 1L # C-order chunk coordinates
    block <- do.call(`[`, c(list(A), lapply(seq_along(chunk), function(d) cc[d] * chunk[d] + seq_len(chunk[d])),
                            drop = FALSE))
    shard <- aperm(block, order + 1L) # what the sharding codec receives
    ig <- dim(shard) %/% inner
    body <- raw()
    index <- numeric()
    for (k in seq_len(prod(ig)) - 1L) { # inner chunks in C order over the shard's dimensions
      ic <- as.vector(arrayInd(k + 1L, rev(ig)))[rev(seq_along(ig))] - 1L
      piece <- do.call(`[`, c(list(shard), lapply(seq_along(inner), function(d) ic[d] * inner[d] + seq_len(inner[d])),
                              drop = FALSE))
      bytes <- writeBin(c_order(piece), raw(), size = 8L, endian = "little")
      index <- c(index, length(body) + if (index_location == "start") 16 * prod(ig) + 4 else 0, length(bytes))
      body <- c(body, bytes)
    }
    idx <- unlist(lapply(index, function(v) writeBin(c(as.integer(v), 0L), raw(), size = 4L, endian = "little")))
    idx <- crc32c$encode(idx)
    key <- file.path(dir, "c", paste(cc, collapse = "/"))
    dir.create(dirname(key), recursive = TRUE, showWarnings = FALSE)
    writeBin(if (index_location == "end") c(body, idx) else c(idx, body), key)
  }
  invisible(dir)
}

test_that("an inner chunk shape that divides only the transposed shard is read (was refused)", {
  dir <- local_store_path()
  A <- matrix(as.numeric(1:24), 4, 6, byrow = TRUE)
  write_transposed_shards(dir, A, chunk = c(4, 6), order = c(1, 0), inner = c(3, 2))
  a <- open_zarr(dir)[["/"]]
  expect_identical(a[], A)
  expect_identical(a[2:3, c(2, 5)], A[2:3, c(2, 5)])
  expect_identical(a[4, ], A[4, ])
})

test_that("inner chunks of a transposed shard come from the index in the transposed order", {
  # 2 x 2 inner chunks divide both the shard and its transpose: the old check
  # passed, and the values came back scrambled
  dir <- local_store_path()
  A <- matrix(as.numeric(1:24), 4, 6, byrow = TRUE)
  write_transposed_shards(dir, A, chunk = c(4, 6), order = c(1, 0), inner = c(2, 2))
  expect_identical(open_zarr(dir)[["/"]][], A)
})

test_that("a 3-d transposed shard reads locally and over HTTP, whole and in parts", {
  set.seed(19)
  A <- array(round(rnorm(8 * 6 * 10), 3), c(8, 6, 10))
  dir <- local_store_path()
  # shards 4 x 6 x 5, transposed to 5 x 4 x 6; inner 5 x 2 x 3
  write_transposed_shards(dir, A, chunk = c(4, 6, 5), order = c(2, 0, 1), inner = c(5, 2, 3),
                          index_location = "start")
  a <- open_zarr(dir)[["/"]]
  expect_identical(a[], A)
  expect_identical(a[3:6, 2, c(1, 7, 10)], A[3:6, 2, c(1, 7, 10)])
  srv <- http_server(dir)
  h <- open_zarr(srv$url_of())[["/"]]
  expect_identical(h[], A)
  expect_identical(h[8:1, 5:6, 4], A[8:1, 5:6, 4])
})

test_that("an inner chunk shape that does not divide the transposed shard is refused", {
  dir <- local_store_path()
  A <- matrix(as.numeric(1:24), 4, 6, byrow = TRUE)
  write_transposed_shards(dir, A, chunk = c(4, 6), order = c(1, 0), inner = c(3, 2))
  meta <- readLines(file.path(dir, "zarr.json"))
  writeLines(sub('"chunk_shape": [3, 2]', '"chunk_shape": [2, 3]', meta, fixed = TRUE), file.path(dir, "zarr.json"))
  expect_error(open_zarr(dir)[["/"]][], class = "zarr_error")
})
