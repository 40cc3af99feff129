# zarr_map_blocks() on mirai daemons: a CPU-bound function (a 2-d smoothing,
# repeated 3 x 3 box means) applied to each 256 x 256 block of a
# 4096 x 4096 float64 array (128 MB), its result written into an output
# array with the same chunks. Compared with the same function applied block
# by block in base R to the whole array in memory (no zarr, no daemons).
#
# usage: Rscript bench/mapblocks.R   (from the repository root; needs mirai)
# ZARR_BENCH_LIB: library with our zarr (default .lib/); ZARR_BENCH_DIR: where
# the store goes (default a temporary directory); ZARR_BENCH_MAP_ITER: box
# passes per block (default 12); ZARR_BENCH_MAP_N: the array's side (4096).
# Writes bench/results/mapblocks.csv. Speed-ups are only meaningful on an
# otherwise idle machine (2 daemons on 2 cores: the ideal is 2x).

root <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) normalizePath(file.path(dirname(f[1]), "..")) else normalizePath(".")
})
lib <- Sys.getenv("ZARR_BENCH_LIB", file.path(root, ".lib"))
if (dir.exists(lib)) {
  .libPaths(c(normalizePath(lib), .libPaths()))
  Sys.setenv(R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep)) # for the daemons
}
suppressPackageStartupMessages(library(zarr))
if (!requireNamespace("mirai", quietly = TRUE)) stop("bench/mapblocks.R needs the mirai package")
options(zarr.progress = FALSE)

n <- as.integer(Sys.getenv("ZARR_BENCH_MAP_N", "4096"))
bs <- 256L
iter <- as.integer(Sys.getenv("ZARR_BENCH_MAP_ITER", "12"))
work <- Sys.getenv("ZARR_BENCH_DIR", tempdir())
path <- file.path(work, sprintf("mapblocks-%d.zarr", Sys.getpid()))
on.exit(unlink(path, recursive = TRUE), add = TRUE)

# iter passes of a 3 x 3 mean (edges replicated), vectorised base R
smooth <- function(x, iter) {
  nr <- nrow(x)
  nc <- ncol(x)
  up <- c(1L, seq_len(nr - 1L)); dn <- c(seq_len(nr)[-1L], nr)
  lf <- c(1L, seq_len(nc - 1L)); rt <- c(seq_len(nc)[-1L], nc)
  for (k in seq_len(iter)) {
    v <- x[up, , drop = FALSE] + x + x[dn, , drop = FALSE]
    x <- (v[, lf, drop = FALSE] + v + v[, rt, drop = FALSE]) / 9
  }
  x
}

set.seed(11)
x <- matrix(runif(n * n), n, n)
z <- create_zarr(path)
d <- define_array("float64", c(n, n))
d$chunk_shape <- c(bs, bs)
a <- z$add_array("/", "x", d)
a$write(x)
out_def <- function() {
  b <- array_builder$new()
  b$data_type <- "float64"
  b
}

timed <- function(expr) {
  gc()
  t <- system.time(expr)[["elapsed"]]
  t
}

# base R: the same function block by block on the array in memory
base_result <- NULL
t_base <- timed({
  r <- x
  for (i in seq(1L, n, bs)) for (j in seq(1L, n, bs)) {
    ii <- i:min(n, i + bs - 1L); jj <- j:min(n, j + bs - 1L)
    r[ii, jj] <- smooth(x[ii, jj], iter)
  }
  base_result <- r
})

# zarr_map_blocks in this session
t_seq <- timed(o0 <- zarr_map_blocks(a, smooth, iter = iter, output = list(out_def(), "/seq")))
stopifnot(isTRUE(all.equal(o0[], base_result)))

# the bytes a run sends to the daemons: per task (a batch of blocks, see
# zarr:::map_batches) the block coordinates, the locations, the function and
# its arguments (as mirai serializes them)
blocks <- zarr_chunk_blocks(a)
src <- zarr:::map_location(a, "token")
dst <- zarr:::map_location(o0, "token")
items <- lapply(seq_len(nrow(blocks$start)), function(i)
  list(i = i, start = blocks$start[i, ], end = blocks$end[i, ], block = blocks$block[i, ]))
task_bytes <- function() vapply(zarr:::map_batches(length(items)), function(b)
  length(serialize(list(items[b], list(src = src, dst = dst, fun = smooth, args = list(iter = iter))), NULL)), 0)

rows <- list()
for (k in c(1L, 2L)) {
  mirai::daemons(k)
  deadline <- Sys.time() + 60
  while (mirai::status()$connections < k && Sys.time() < deadline) Sys.sleep(0.1)
  # one warm-up task per daemon loads zarr there
  invisible(mirai::everywhere(requireNamespace("zarr", quietly = TRUE)))
  if (k == 2L) per_task <- task_bytes()
  t_k <- timed(ok <- zarr_map_blocks(a, smooth, iter = iter, output = list(out_def(), sprintf("/d%d", k))))
  mirai::daemons(0)
  stopifnot(identical(ok[], o0[]))
  rows[[k]] <- t_k
}

res <- data.frame(
  run = c("base R, blocks of the in-memory array", "zarr_map_blocks, sequential",
          "zarr_map_blocks, 1 daemon", "zarr_map_blocks, 2 daemons"),
  seconds = c(t_base, t_seq, rows[[1]], rows[[2]]))
res$speedup_vs_base <- t_base / res$seconds
res$speedup_vs_1_daemon <- rows[[1]] / res$seconds
cat(sprintf("array %d x %d float64 (%.0f MB), %d blocks of %d x %d, %d box passes per block\n",
            n, n, n * n * 8 / 1e6, nrow(blocks$start), bs, bs, iter))
print(format(res, digits = 3), row.names = FALSE)
sent <- sum(per_task)
cat(sprintf("sent to the daemons per run with 2 daemons: %.1f kB (%d tasks of %.0f bytes on average); the array: %.0f MB\n",
            sent / 1e3, length(per_task), mean(per_task), n * n * 8 / 1e6))
cat(sprintf("load average at the end: %s\n", paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE, recursive = TRUE)
res$bytes_sent <- sent
utils::write.csv(res, file.path(root, "bench", "results", "mapblocks.csv"), row.names = FALSE)
