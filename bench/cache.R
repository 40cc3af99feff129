# The decoded-chunk cache (option zarr.chunk_cache_bytes) on sliding-window
# reads: 1000 overlapping 64 x 64 windows sliding over a 2048 x 2048 float64
# array stored in zstd chunks of 256 x 256, read with the cache on (64 MiB,
# the default; emptied first, so its filling is timed too) and off (0).
# Target: at least 5x faster with the cache on. Values are checked equal.
#
# usage: Rscript bench/cache.R   (from the repository root; our zarr from
# $ZARR_BENCH_LIB or .lib/, as bench/run.R)

local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  source(file.path(if (length(f)) dirname(f[1]) else "bench", "common.R"))
})
load_our_zarr(bench_our_lib(bench_root()))

reps <- as.integer(Sys.getenv("ZARR_BENCH_REPS", "3"))
set.seed(1)
n <- 2048
# a smooth field with noise, as elevation or temperature grids are: zstd
# shrinks it (uniform random numbers would be stored nearly raw)
x <- round(outer(100 * sin(seq_len(n) / 60), cos(seq_len(n) / 90)) + rnorm(n * n, sd = 2), 2)
dim(x) <- c(n, n)
path <- tempfile(fileext = ".zarr")
z <- create_zarr(path)
d <- define_array("float64", c(n, n))
d$chunk_shape <- c(256, 256)
a <- z$add_array("/", "x", d)
a$write(x)
a <- open_zarr(path)$root[["x"]]

# 1000 windows: rows of windows 32 apart, each window 16 columns right of the
# last, so each overlaps the last by 3/4 and the row above by half
starts <- expand.grid(j = seq(1, n - 63, by = 16), i = seq(1, n - 63, by = 32))[seq_len(1000), ]
# through `[`, and through read() with ranges (less R code per call)
windows <- function(how) {
  for (k in seq_len(nrow(starts))) {
    i <- starts$i[k]
    j <- starts$j[k]
    if (how == "[") a[i:(i + 63), j:(j + 63)] else a$read(list(c(i, i + 63), c(j, j + 63)))
  }
}

stopifnot(identical(a[1:64, 1985:2048], x[1:64, 1985:2048]))
time_mode <- function(bytes, how) {
  options(zarr.chunk_cache_bytes = bytes)
  best <- Inf
  for (r in seq_len(reps)) {
    zarr_clear_cache()
    gc(FALSE)
    t <- system.time(windows(how))[["elapsed"]]
    best <- min(best, t)
  }
  best
}
res <- lapply(c("[", "read()"), function(how) c(off = time_mode(0, how), on = time_mode(64 * 2^20, how)))
st <- a$store$io_stats()
k <- sample.int(nrow(starts), 50)
for (q in k) { # cached values are the stored ones
  i <- starts$i[q]
  j <- starts$j[q]
  stopifnot(identical(a[i:(i + 63), j:(j + 63)], x[i:(i + 63), j:(j + 63)]))
}
cat(sprintf("1000 overlapping 64x64 windows of a 2048x2048 zstd array in 256x256 chunks (best of %d)\n", reps))
for (r in seq_along(res)) {
  how <- c("a[i, j]", "a$read()")[r]
  cat(sprintf("  %-9s cache off %.3f s, on %.3f s (%4.0f us per window): %.1fx (target >= 5x)\n",
              how, res[[r]][["off"]], res[[r]][["on"]], res[[r]][["on"]] * 1e3, res[[r]][["off"]] / res[[r]][["on"]]))
}
cat(sprintf("  the cache held %.1f MB; hits %.0f, misses %.0f in all runs\n",
            st[["cache_bytes"]] / 1e6, st[["cache_hits"]], st[["cache_misses"]]))
unlink(path, recursive = TRUE)
