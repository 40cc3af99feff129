# The rectilinear chunk grid (zarr-extensions chunk-grids/rectilinear):
# metadata in its inline and run-length forms, reads and writes of random
# selections against base R, and the chunks each write leaves in the store.

rect_array <- function(root, shape, chunk_shapes, dtype = "int32", name = "r") {
  z <- create_zarr(root)
  def <- define_array(dtype, shape)
  def$chunk_shape <- chunk_shapes
  z$add_array("/", name, def)
}

# The bytes of a stored chunk before its bytes-to-bytes codecs.
chunk_payload <- function(path, arr) {
  raw <- readBin(path, "raw", file.size(path))
  for (cd in rev(arr$codecs)) if (cd$mode == "bytes -> bytes") raw <- cd$decode(raw)
  raw
}

test_that("the metadata holds the chunk lengths, with runs in run-length form", {
  root <- tempfile("rect-")
  arr <- rect_array(root, c(10, 7), list(c(3, 1, 4, 2), list(c(2, 3), 1)))
  meta <- jsonlite::fromJSON(file.path(root, "r", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$chunk_grid$name, "rectilinear")
  expect_identical(meta$chunk_grid$configuration$kind, "inline")
  expect_identical(meta$chunk_grid$configuration$chunk_shapes,
                   list(list(3L, 1L, 4L, 2L), list(list(2L, 3L), 1L)))
  expect_s3_class(arr$chunking, "chunk_grid_rectilinear")
  expect_identical(arr$chunking$chunk_edges, list(c(3, 1, 4, 2), c(2, 2, 2, 1)))
  expect_identical(arr$chunking$chunk_grid, c(4, 4))
  # regular lengths along a dimension are written as one number
  root2 <- tempfile("rect-")
  rect_array(root2, c(10, 7), list(5, c(4, 3)))
  meta <- jsonlite::fromJSON(file.path(root2, "r", "zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$chunk_grid$configuration$chunk_shapes, list(5L, list(4L, 3L)))
})

test_that("the specification's example expands as it says", {
  root <- tempfile("rect-spec-")
  dir.create(file.path(root, "a"), recursive = TRUE)
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}}', file.path(root, "zarr.json"))
  writeLines('{"zarr_format": 3, "node_type": "array", "shape": [6, 6, 6, 6, 6], "data_type": "uint8",
    "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline",
      "chunk_shapes": [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": 0, "codecs": [{"name": "bytes"}], "attributes": {}}', file.path(root, "a", "zarr.json"))
  arr <- open_zarr(root)[["/a"]]
  # [4, 4, 4] overflows the extent: its third chunk holds no element
  expect_identical(arr$chunking$chunk_edges, list(c(4, 4), c(1, 2, 3), c(4, 4), c(1, 1, 1, 3), c(4, 4)))
  set.seed(5)
  x <- array(sample(1:255, 6^5, TRUE), rep(6, 5))
  arr$write(x)
  expect_identical(arr$read(), x)
  files <- list.files(file.path(root, "a", "c"), recursive = TRUE)
  expect_length(files, 2 * 3 * 2 * 4 * 2)
  # chunk (1, 2, 0, 3, 1) is 4 x 3 x 4 x 3 x 4 elements: x[5:6, 4:6, 1:4, 4:6, 5:6]
  # and the fill value beyond the array (C order, bytes codec only)
  got <- readBin(file.path(root, "a", "c", "1", "2", "0", "3", "1"), "raw", 1e4)
  want <- array(0L, c(4, 3, 4, 3, 4))
  want[1:2, , , , 1:2] <- x[5:6, 4:6, 1:4, 4:6, 5:6]
  want <- aperm(want, 5:1)
  expect_identical(as.integer(got), as.vector(want))
  # the edge chunks are stored whole (4 x 4 along dims 1 and 5, 4 along dim 3)
  expect_length(readBin(file.path(root, "a", "c", "1", "0", "1", "0", "1"), "raw", 1e4), 4 * 1 * 4 * 1 * 4)
})

test_that("random selections read and write as base R does", {
  set.seed(42)
  for (dtype in c("int32", "float64", "uint16", "string")) {
    root <- tempfile("rect-sel-")
    shape <- c(23, 11, 5)
    cs <- list(c(1, 7, 2, 9, 6), list(c(3, 3), 2), c(5))
    arr <- rect_array(root, shape, cs, dtype = dtype)
    gen <- function(n) switch(dtype, string = sample(c(letters, "\u00e9t\u00e9"), n, TRUE),
                              float64 = round(rnorm(n), 3), as.integer(sample(0:60000, n, TRUE)))
    x <- array(gen(prod(shape)), shape)
    arr$write(x)
    expect_identical(arr$read(), x, info = dtype)
    for (k in 1:15) {
      sel <- lapply(shape, function(n) sample(n, sample(1:n, 1), replace = TRUE))
      expect_identical(arr$read(exact_sel(arr, sel)), x[sel[[1]], sel[[2]], sel[[3]], drop = FALSE], info = dtype)
      # a block write across chunk edges
      lo <- vapply(shape, function(n) sample(n, 1), 1)
      hi <- pmin(shape, lo + sample(0:6, 3, TRUE))
      blk <- lapply(seq_along(shape), function(d) lo[d]:hi[d])
      v <- array(gen(prod(lengths(blk))), lengths(blk))
      arr$write(v, blk)
      x[blk[[1]], blk[[2]], blk[[3]]] <- v
      # scattered writes
      sel <- lapply(shape, function(n) sample(n, sample(1:3, 1)))
      v <- array(gen(prod(lengths(sel))), lengths(sel))
      arr$write(v, exact_sel(arr, sel))
      x[sel[[1]], sel[[2]], sel[[3]]] <- v
    }
    expect_identical(arr$read(), x, info = dtype)
    expect_identical(open_zarr(root)[["/r"]]$read(), x, info = dtype)
  }
})

test_that("each chunk holds its own shape, and unwritten chunks are absent", {
  root <- tempfile("rect-files-")
  arr <- rect_array(root, c(10, 7), list(c(3, 1, 4, 2), c(2, 2, 2, 1)))
  x <- matrix(NA_integer_, 10, 7)
  x[4, ] <- 1:7 # only chunk row 1 (rows 4..4)
  arr$write(1:7, list(4, 1:7))
  expect_identical(arr$read(), x)
  files <- sort(list.files(file.path(root, "r")))
  expect_identical(files, c("c.1.0", "c.1.1", "c.1.2", "c.1.3", "zarr.json"))
  # chunk (1, 2): 1 x 2 elements, stored with a transpose to R's order
  expect_identical(readBin(chunk_payload(file.path(root, "r", "c.1.2"), arr), "integer", 10), 5:6)
  expect_length(chunk_payload(file.path(root, "r", "c.1.3"), arr), 4L) # 1 x 1
  # writing the fill value everywhere removes the chunks again
  arr$write(matrix(NA_integer_, 10, 7))
  expect_identical(list.files(file.path(root, "r")), "zarr.json")
  expect_named(arr$store$io_stats(), c("requests", "bytes", "cache_hits", "cache_misses", "cache_bytes"))
})

test_that("invalid rectilinear grids are classed errors", {
  root <- tempfile("rect-bad-")
  dir.create(file.path(root, "a"), recursive = TRUE)
  writeLines('{"zarr_format": 3, "node_type": "group", "attributes": {}}', file.path(root, "zarr.json"))
  meta <- function(grid, codecs = '[{"name": "bytes"}]')
    writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": [6, 4], "data_type": "uint8",
      "chunk_grid": %s, "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": %s,
      "attributes": {}}', grid, codecs), file.path(root, "a", "zarr.json"))
  open_bad <- function(class) expect_error(open_zarr(root)[["/a"]]$read(), class = class)
  meta('{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[1, 2], 4]}}')
  open_bad("zarr_error_metadata") # 3 < 6
  meta('{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[0, 6], 4]}}')
  open_bad("zarr_error_metadata")
  meta('{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[[2, 0]], 4]}}')
  open_bad("zarr_error_metadata")
  meta('{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [6]}}')
  open_bad("zarr_error_metadata")
  meta('{"name": "rectilinear", "configuration": {"kind": "file", "chunk_shapes": [6, 4]}}')
  open_bad("zarr_error_unsupported")
  meta('{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[[1, 1e15]], 4]}}')
  expect_identical(open_zarr(root)[["/a"]]$chunking$chunk_edges, list(rep(1, 6), 4)) # only what is needed
  # sharding: every chunk must hold whole inner chunks (2 does not hold 4)
  meta('{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[2, 4], 4]}}',
       '[{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 2], "codecs": [{"name": "bytes"}],
         "index_codecs": [{"name": "bytes"}]}}]')
  open_bad("zarr_error_metadata")
  # Zarr v2 has no such grid
  old <- options(zarr.format = 2)
  on.exit(options(old))
  z <- create_zarr()
  def <- define_array("int8", c(6, 4))
  def$chunk_shape <- list(c(2, 4), 4)
  expect_error(z$add_array("/", "x", def), class = "zarr_error_unsupported")
})

test_that("save_to() copies every chunk of rectilinear and regular grids from every kind of store", {
  skip_without_http_server()
  root <- withr::local_tempdir()
  x <- array(1:70, c(10, 7))
  grids <- list(rectilinear = list(c(3, 1, 4, 2), list(c(2, 3), 1)), regular = c(3, 2))
  make <- function(path, chunks) {
    z <- create_zarr(path)
    def <- define_array("int32", c(10, 7))
    def$chunk_shape <- chunks
    z$add_group("/", "g")$add_array("r", def)$write(x)
    z
  }
  for (g in names(grids)) {
    make(file.path(root, paste0(g, ".zarr")), grids[[g]])
    zarr_consolidate(make(file.path(root, paste0(g, "-c.zarr")), grids[[g]]))
    make(file.path(root, paste0(g, ".zip")), grids[[g]])$store$close()
  }
  srv <- http_server(root)
  for (g in names(grids)) {
    n_chunks <- prod(open_zarr(file.path(root, paste0(g, ".zarr")))[["/g/r"]]$chunking$chunk_grid)
    mem <- zarr_memorystore$new()
    open_zarr(file.path(root, paste0(g, ".zarr")))$save_to(mem)
    by_path <- suppressMessages(open_zarr(paste0(srv$url, "/", g, ".zarr")))
    by_path[["/g/r"]] # known by its path: the store cannot list it
    sources <- list(local = open_zarr(file.path(root, paste0(g, ".zarr"))), memory = zarr$new(mem),
                    zip = open_zarr(file.path(root, paste0(g, ".zip"))),
                    http_consolidated = open_zarr(paste0(srv$url, "/", g, "-c.zarr")), http_by_path = by_path)
    for (s in names(sources)) {
      label <- paste(g, "from", s)
      d <- tempfile("copy-")
      suppressMessages(sources[[s]]$save_to(d)) # a store without consolidated metadata says so
      expect_identical(open_zarr(d)[["/g/r"]][], x, label = label)
      chunks <- setdiff(list.files(file.path(d, "g", "r"), recursive = TRUE), "zarr.json")
      expect_length(chunks, n_chunks)
      m <- zarr_memorystore$new()
      suppressMessages(sources[[s]]$save_to(m))
      expect_identical(zarr$new(m)[["/g/r"]][], x, label = paste(label, "to memory"))
    }
  }
})
