# The tiled copy between chunks and R arrays (src/slab.c) against base R:
# stores are written here, byte by byte, from base R's aperm() of the
# expected array (v2 in C and F order, v3 with a transpose codec, sharded),
# and arrays written by the package are read back from their chunk files
# the same way, for every element size, odd shapes, edge chunks and random
# selections (ranges, steps, reversed, scattered, single indices).

copy_types <- list(
  # name, v2 spelling, bytes, R values generator
  list(v3 = "uint8", v2 = "|u1", size = 1L, gen = function(n) sample(0:255, n, TRUE)),
  list(v3 = "int8", v2 = "|i1", size = 1L, gen = function(n) sample(-128:127, n, TRUE)),
  list(v3 = "uint16", v2 = "<u2", size = 2L, gen = function(n) sample(0:65535, n, TRUE)),
  list(v3 = "int16", v2 = "<i2", size = 2L, gen = function(n) sample(-32768:32767, n, TRUE)),
  list(v3 = "int32", v2 = "<i4", size = 4L, gen = function(n) sample(-1e6:1e6, n, TRUE)),
  list(v3 = "float32", v2 = "<f4", size = 4L, gen = function(n) round(runif(n, -100, 100), 2) + 0.25),
  list(v3 = "float64", v2 = "<f8", size = 8L, gen = function(n) runif(n)),
  list(v3 = "complex128", v2 = "<c16", size = 16L, gen = function(n) complex(real = runif(n), imaginary = runif(n)))
)

# float32 values as float32 holds them
as_stored <- function(x, ty) {
  if (ty$v3 == "float32") readBin(writeBin(x, raw(), size = 4L), "double", length(x), size = 4L) else x
}

c_bytes <- function(block, ty) {
  v <- as.vector(aperm(block, rev(seq_along(dim(block)))))
  writeBin(v, raw(), size = if (is.complex(v)) 16L else ty$size, endian = "little")
}

# A block of chunk `cc` (0-based grid coordinates), padded with `pad` past the
# array's edge.
chunk_block <- function(A, cc, chunk, pad) {
  idx <- lapply(seq_along(chunk), function(d) cc[d] * chunk[d] + seq_len(chunk[d]))
  in_a <- lapply(seq_along(idx), function(d) idx[[d]][idx[[d]] <= dim(A)[d]])
  block <- array(pad, chunk)
  if (all(lengths(in_a) > 0)) {
    part <- do.call(`[`, c(list(A), in_a, drop = FALSE))
    block <- do.call(`[<-`, c(list(block), lapply(lengths(in_a), seq_len), list(value = part)))
  }
  block
}

grid_coords <- function(A, chunk) {
  g <- ceiling(dim(A) / chunk)
  as.matrix(expand.grid(lapply(g, function(n) seq_len(n) - 1L)))
}

js <- function(v) paste0("[", paste(v, collapse = ", "), "]")

write_v2 <- function(dir, A, chunk, ty, order) {
  dir.create(dir, recursive = TRUE)
  writeLines(sprintf('{"zarr_format": 2, "shape": %s, "chunks": %s, "dtype": "%s", "order": "%s",
 "compressor": null, "filters": null, "fill_value": null}', js(dim(A)), js(chunk), ty$v2, order),
    file.path(dir, ".zarray"))
  cs <- grid_coords(A, chunk)
  for (r in seq_len(nrow(cs))) {
    b <- chunk_block(A, cs[r, ], chunk, A[1])
    if (order == "F") b <- aperm(b, rev(seq_along(chunk))) # F order: C order of the reversed dims
    writeBin(c_bytes(b, ty), file.path(dir, paste(cs[r, ], collapse = ".")))
  }
}

# v3: transpose(perm) -> [sharding_indexed(inner) ->] bytes, uncompressed.
write_v3 <- function(dir, A, chunk, ty, perm, inner = NULL) {
  dir.create(dir, recursive = TRUE)
  leaf <- '{"name": "bytes", "configuration": {"endian": "little"}}'
  codecs <- if (is.null(inner)) leaf else sprintf('{"name": "sharding_indexed", "configuration": {"chunk_shape": %s,
   "codecs": [%s], "index_codecs": [%s], "index_location": "end"}}', js(inner), leaf, leaf)
  writeLines(sprintf('{"zarr_format": 3, "node_type": "array", "shape": %s, "data_type": "%s",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": %s}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": %s, "codecs": [{"name": "transpose", "configuration": {"order": %s}}, %s],
 "attributes": {}}', js(dim(A)), ty$v3, js(chunk), if (ty$size == 16L) "[0, 0]" else "0", js(perm), codecs), file.path(dir, "zarr.json"))
  cs <- grid_coords(A, chunk)
  for (r in seq_len(nrow(cs))) {
    shard <- aperm(chunk_block(A, cs[r, ], chunk, A[1]), perm + 1L)
    body <- if (is.null(inner)) c_bytes(shard, ty) else {
      ig <- dim(shard) %/% inner
      pieces <- list()
      index <- numeric()
      ics <- as.matrix(expand.grid(lapply(rev(ig), function(n) seq_len(n) - 1L)))[, rev(seq_along(ig)), drop = FALSE]
      at <- 0
      for (k in seq_len(nrow(ics))) { # inner chunks in C order over the shard's dims
        piece <- chunk_block(shard, ics[k, ], inner, shard[1])
        bytes <- c_bytes(piece, ty)
        pieces[[k]] <- bytes
        index <- c(index, at, length(bytes))
        at <- at + length(bytes)
      }
      u64 <- function(x) c(writeBin(as.integer(x), raw(), size = 4L, endian = "little"), as.raw(c(0, 0, 0, 0)))
      c(unlist(pieces), unlist(lapply(index, u64)))
    }
    p <- file.path(dir, "c", paste(cs[r, ], collapse = "/"))
    dir.create(dirname(p), recursive = TRUE, showWarnings = FALSE)
    writeBin(body, p)
  }
}

# A random selection of 1..n: whole, a range, a step, reversed, scattered or one.
random_sel <- function(n) {
  switch(sample(6, 1),
    NULL,
    { a <- sample(n, 1); b <- sample(n, 1); seq(min(a, b), max(a, b)) },
    seq(sample(min(3, n), 1), n, by = sample(1:3, 1)),
    rev(seq_len(n))[seq_len(sample(n, 1))],
    sample(n, sample(n, 1)),
    sample(n, 1))
}

select_base <- function(A, sel) {
  full <- lapply(seq_along(sel), function(d) if (is.null(sel[[d]])) seq_len(dim(A)[d]) else sel[[d]])
  out <- do.call(`[`, c(list(A), full, drop = FALSE))
  if (length(dim(out)) == 1L) as.vector(out) else out # the package returns 1-d as a vector
}

select_zarr <- function(a, sel) {
  args <- lapply(sel, function(s) if (is.null(s)) quote(expr = ) else s)
  do.call(`[`, c(list(a), args, drop = FALSE, fill_as_na = FALSE))
}

random_array <- function(ty, dims) array(as_stored(ty$gen(prod(dims)), ty), dims)

test_that("v2 C- and F-order chunks read as base R has them, every element size, odd shapes", {
  set.seed(42)
  for (ty in copy_types) {
    dims <- sample(c(1, 3, 17, 40, 70, 97), 3, replace = TRUE)
    dims[1] <- sample(c(65, 130), 1) # beyond one tile along R's fastest dim
    chunk <- pmax(1, pmin(dims, sample(c(7, 33, 64, 70), 3, replace = TRUE)))
    A <- random_array(ty, dims)
    for (order in c("C", "F")) {
      dir <- tempfile(fileext = ".zarr")
      write_v2(dir, A, chunk, ty, order)
      a <- open_zarr(dir)$root
      for (nt in 1:2) withr::with_options(list(zarr.num_threads = nt), {
        expect_identical(select_zarr(a, list(NULL, NULL, NULL)), A,
                         info = paste(ty$v3, order, paste(dims, collapse = "x"), paste(chunk, collapse = "x")))
      })
      for (k in 1:6) {
        sel <- lapply(dims, random_sel)
        expect_identical(select_zarr(a, sel), select_base(A, sel),
                         info = paste(ty$v3, order, deparse(sel)))
      }
    }
  }
})

test_that("2-d, 4-d and 1-d C-order chunks read as base R has them", {
  set.seed(7)
  ty <- copy_types[[3]] # uint16
  for (dims in list(c(130, 77), c(9, 66, 5, 70), 301, c(1, 200, 1))) {
    chunk <- pmax(1, ceiling(dims / c(2, 3, 1, 2)[seq_along(dims)]))
    A <- random_array(ty, dims)
    dir <- tempfile(fileext = ".zarr")
    write_v2(dir, A, chunk, ty, "C")
    a <- open_zarr(dir)$root
    expect_identical(select_zarr(a, rep(list(NULL), length(dims))), select_base(A, rep(list(NULL), length(dims))))
    for (k in 1:5) {
      sel <- lapply(dims, random_sel)
      expect_identical(select_zarr(a, sel), select_base(A, sel), info = deparse(sel))
    }
  }
})

test_that("v3 chunks under any transpose, and sharded inner chunks, read as base R has them", {
  set.seed(3)
  perms <- list(c(0, 1, 2), c(2, 1, 0), c(1, 2, 0), c(0, 2, 1), c(2, 0, 1))
  for (ty in copy_types[c(3, 5, 7, 8)]) {
    dims <- c(70, 45, 33)
    for (perm in perms) {
      A <- random_array(ty, dims)
      dir <- tempfile(fileext = ".zarr")
      write_v3(dir, A, c(64, 20, 16), ty, perm)
      a <- open_zarr(dir)$root
      expect_identical(select_zarr(a, list(NULL, NULL, NULL)), A, info = paste(ty$v3, deparse(perm)))
      sel <- lapply(dims, random_sel)
      expect_identical(select_zarr(a, sel), select_base(A, sel), info = paste(ty$v3, deparse(perm), deparse(sel)))
    }
    # shards 64 x 40 x 32 (in the transposed dims), inner chunks of a quarter
    A <- random_array(ty, dims)
    dir <- tempfile(fileext = ".zarr")
    write_v3(dir, A, c(64, 40, 32), ty, c(0, 1, 2), inner = c(32, 20, 16))
    a <- open_zarr(dir)$root
    expect_identical(select_zarr(a, list(NULL, NULL, NULL)), A, info = ty$v3)
    for (k in 1:4) {
      sel <- lapply(dims, random_sel)
      expect_identical(select_zarr(a, sel), select_base(A, sel), info = paste(ty$v3, deparse(sel)))
    }
  }
})

test_that("the fill value reads as NA through the tiled copy (16-bit tiles in registers)", {
  for (ty in copy_types[3:4]) { # uint16, int16
    fill <- if (ty$v3 == "int16") -5L else 7L
    A <- array(as.integer(seq_len(100 * 20 * 30) %% 1000) - if (fill < 0) 500L else 0L, c(100, 20, 30))
    dir <- tempfile(fileext = ".zarr")
    write_v2(dir, A, c(64, 16, 27), ty, "C")
    meta <- sub('"fill_value": null', sprintf('"fill_value": %d', fill), readLines(file.path(dir, ".zarray")))
    writeLines(meta, file.path(dir, ".zarray"))
    B <- A
    B[B == fill] <- NA
    a <- open_zarr(dir)$root
    expect_identical(a[, , ], B, info = ty$v3)
    expect_identical(a[3:99, 2:19, 5:30], B[3:99, 2:19, 5:30], info = ty$v3)
    expect_identical(a[, , , fill_as_na = FALSE], A, info = ty$v3)
  }
})

# The elements of a portable (C-order, uncompressed) v3 array, from its chunk
# files, as an R array.
read_chunk_files <- function(dir, dims, chunk, ty, what) {
  A <- array(vector(what, prod(dims)), dims)
  cs <- grid_coords(A, chunk)
  for (r in seq_len(nrow(cs))) {
    p <- file.path(dir, paste0("c.", paste(cs[r, ], collapse = "."))) # the default key encoding
    if (!file.exists(p)) next
    v <- readBin(p, what, prod(chunk), size = if (what == "complex") 16L else ty$size,
                 signed = ty$v3 %in% c("int8", "int16") || ty$size >= 4L)
    block <- aperm(array(v, rev(chunk)), rev(seq_along(chunk)))
    idx <- lapply(seq_along(chunk), function(d) cs[r, d] * chunk[d] + seq_len(chunk[d]))
    keep <- lapply(seq_along(idx), function(d) idx[[d]] <= dims[d])
    A <- do.call(`[<-`, c(list(A), lapply(seq_along(idx), function(d) idx[[d]][keep[[d]]]),
                         list(value = do.call(`[`, c(list(block), keep, drop = FALSE)))))
  }
  A
}

test_that("writes through the tiled copy land in C-order chunk files as base R has them", {
  set.seed(9)
  for (ty in copy_types[c(1, 3, 5, 7, 8)]) {
    what <- if (ty$v3 %in% c("float32", "float64")) "double" else if (ty$v3 == "complex128") "complex" else "integer"
    dims <- c(97, 66, 5)
    chunk <- c(64, 33, 4)
    def <- define_array(ty$v3, dims)
    def$portable <- TRUE
    def$chunk_shape <- chunk
    def$remove_codec("zstd")
    loc <- tempfile(fileext = ".zarr")
    z <- create_zarr(loc)
    a <- z$add_array("/", "a", def)
    A <- random_array(ty, dims)
    withr::with_options(list(zarr.fill_as_na = FALSE), {
      a$write(A)
      for (k in 1:3) { # partial writes with random selections
        sel <- lapply(dims, function(n) { s <- random_sel(n); if (is.null(s)) seq_len(n) else unique(s) })
        v <- random_array(ty, lengths(sel))
        A <- do.call(`[<-`, c(list(A), sel, list(value = v)))
        do.call(`[<-`, c(list(a), sel, list(value = v)))
      }
    })
    got <- read_chunk_files(file.path(loc, "a"), dims, chunk, ty, what)
    expect_identical(got, A, info = ty$v3)
  }
})

test_that("sharded writes copy inner chunks right, with and without a transpose inside", {
  set.seed(5)
  A <- array(sample(0:60000, 40 * 24 * 18, TRUE), c(40, 24, 18))
  for (portable in c(TRUE, FALSE)) {
    def <- define_array("uint16", dim(A))
    def$portable <- portable # FALSE: a transpose codec, inside each shard's inner chunks
    def$chunk_shape <- c(20, 24, 18)
    def$add_codec("sharding_indexed", list(chunk_shape = c(10, 8, 6)))
    z <- create_zarr(tempfile(fileext = ".zarr"))
    a <- z$add_array("/", "a", def)
    withr::with_options(list(zarr.fill_as_na = FALSE), {
      a$write(A)
      expect_identical(a[, , ], A, info = portable)
      a[3:17, 5:20, 2:17] <- A[3:17, 5:20, 2:17] + 1L # read-modify-write of inner chunks
      B <- A
      B[3:17, 5:20, 2:17] <- B[3:17, 5:20, 2:17] + 1L
      expect_identical(a[, , ], B, info = portable)
    })
  }
})
