# Zarr Vectors: reading every vertex of a point cloud against reading the
# same bytes as one plain uint8 array (same chunk count, same Blosc + Zstd
# codec). The ZV read fetches and decodes its blobs (one single-chunk array
# each) in one engine call, as the plain read does its chunks; it adds one C
# pass that turns the bytes into double columns and the chunk/row columns.
#
# usage: Rscript bench/zarr_vectors.R   (from the repository root)
#   ZARR_BENCH_ZV_N      points (default 1e7)
#   ZARR_BENCH_REPS      timed repetitions after one warm-up (default 5)
lib <- Sys.getenv("ZARR_BENCH_LIB", ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(zarr)
n <- as.numeric(Sys.getenv("ZARR_BENCH_ZV_N", "1e7"))
reps <- as.integer(Sys.getenv("ZARR_BENCH_REPS", "5"))
set.seed(1)
xyz <- matrix(runif(3 * n, 0, 400), ncol = 3)
dir <- tempfile("zvbench")
dir.create(dir)
on.exit(unlink(dir, recursive = TRUE))
zv_path <- file.path(dir, "cloud.zarr")
t_write <- system.time(zv <- write_zarr_vectors(zv_path, xyz, chunk_shape = c(100, 100, 100), levels = 1L))[["elapsed"]]
nchunks <- nrow(zv$chunks())
rm(xyz)
invisible(gc())

# the same bytes (float32 x, y, z per point) as one uint8 array of as many chunks
bytes <- n * 12
plain <- create_zarr(file.path(dir, "plain.zarr"))
def <- define_array("uint8", bytes)
def$chunk_shape <- ceiling(bytes / nchunks)
def$remove_codec("zstd")
def$add_codec("blosc", list(cname = "zstd", clevel = 5L, shuffle = "shuffle", typesize = 4L))
a <- plain$add_array("/", "bytes", def)
a[] <- sample.int(256L, bytes, replace = TRUE) - 1L
rm(def)
invisible(gc())

time_it <- function(f) {
  f()
  vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], 0)
}
t_zv <- time_it(function() open_zarr(zv_path)$root$read_level()$vertices)
t_plain <- time_it(function() open_zarr(file.path(dir, "plain.zarr"))[["/bytes"]][])
# also on one thread (the machine's other work makes the parallel numbers move)
t_plain1 <- withr::with_options(list(zarr.num_threads = 1L),
                                time_it(function() open_zarr(file.path(dir, "plain.zarr"))[["/bytes"]][]))
cat(sprintf("%s points, %d chunks (%s MB of positions); written in %.1f s\n",
            format(n, big.mark = ",", scientific = FALSE), nchunks, format(bytes / 2^20, digits = 4), t_write))
cat(sprintf("read every vertex (ZV)         : median %.3f s\n", stats::median(t_zv)))
cat(sprintf("read the same bytes (uint8)    : median %.3f s\n", stats::median(t_plain)))
cat(sprintf("the same bytes, one thread     : median %.3f s\n", stats::median(t_plain1)))
cat(sprintf("ratio ZV / plain               : %.2f (one thread: %.2f)\n", stats::median(t_zv) / stats::median(t_plain),
            stats::median(t_zv) / stats::median(t_plain1)))
