# Block sums through DelayedArray: rowSums() and colSums() of a
# 20000 x 2000 int32 matrix (160 MB) on this package's backend
# (zarr_delayed(), a ZarrRArraySeed) and on HDF5Array, in the same run, on
# the same values with the same chunks (1000 x 1000) and the same
# compression: byte shuffle then zlib level 6 (HDF5Array's default filters),
# and none. DelayedArray's default block
# size (getAutoBlockSize(), 100 MB) and block shape are used on both sides,
# so the blocks are the same; only the seeds differ. Also checks that a
# full block pass decodes each chunk once ($io_stats() counts the chunk
# reads of the C engine).
#
# usage: Rscript bench/delayed.R   (from the repository root; needs
# DelayedArray and HDF5Array: Debian r-bioc-hdf5array)
# ZARR_BENCH_LIB: library with our zarr (default .lib/); ZARR_BENCH_DIR:
# where the files go (default a temporary directory); ZARR_BENCH_REPS:
# timed repetitions after one warm-up (default 3). Writes
# bench/results/delayed.csv. Ratios are HDF5Array's time over ours (above 1:
# ours is faster); the target is at least 2.

root <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) normalizePath(file.path(dirname(f[1]), "..")) else normalizePath(".")
})
lib <- Sys.getenv("ZARR_BENCH_LIB", file.path(root, ".lib"))
if (dir.exists(lib)) .libPaths(c(normalizePath(lib), .libPaths()))
for (p in c("DelayedArray", "HDF5Array"))
  if (!requireNamespace(p, quietly = TRUE)) stop("bench/delayed.R needs the ", p, " package")
suppressPackageStartupMessages({
  library(zarr)
  library(DelayedArray)
  library(HDF5Array)
})
options(zarr.progress = FALSE)

reps <- as.integer(Sys.getenv("ZARR_BENCH_REPS", "3"))
work <- Sys.getenv("ZARR_BENCH_DIR", tempdir())
zpath <- file.path(work, sprintf("delayed-%d.zarr", Sys.getpid()))
hpath <- file.path(work, sprintf("delayed-%d.h5", Sys.getpid()))

nr <- 20000L
nc <- 2000L
ch <- c(1000L, 1000L)
set.seed(18)
x <- matrix(sample.int(1000L, nr * nc, replace = TRUE), nr, nc)

# One compression setting: the same values, chunks and compression in both
# files. "zlib6": HDF5Array (rhdf5) writes the shuffle and deflate filters;
# deflate is zlib's format, so the Zarr side uses numcodecs' shuffle and zlib
# codecs (gzip would add a header and a CRC-32 to check on every chunk).
# "none": no compression on either side.
n_chunks <- prod(c(nr, nc) / ch)
run_setting <- function(setting) {
  zp <- paste0(zpath, "-", setting)
  hp <- paste0(hpath, "-", setting)
  on.exit(unlink(c(zp, hp), recursive = TRUE))
  z <- create_zarr(zp)
  d <- define_array("int32", c(nr, nc))
  d$chunk_shape <- ch
  d$remove_codec("zstd")
  if (setting == "zlib6") {
    d$add_codec("numcodecs.shuffle", list(elementsize = 4L))
    d$add_codec("numcodecs.zlib", list(level = 6L))
  }
  z$add_array("/", "x", d)$write(x)
  invisible(writeHDF5Array(x, hp, "x", chunkdim = ch, level = if (setting == "zlib6") 6L else 0L))
  sizes <- c(zarr = sum(file.size(list.files(zp, recursive = TRUE, full.names = TRUE))), hdf5 = file.size(hp))

  Z <- zarr_delayed(zp, "/x")
  H <- HDF5Array(hp, "x")
  stopifnot(identical(chunkdim(Z), ch), identical(as.integer(chunkdim(H)), ch))

  # the results agree with base R, and each chunk is decoded once per pass
  st <- zarr:::seed_array(Z@seed)$store
  do.call(rbind, lapply(c("rowSums", "colSums"), function(op) {
    f <- get(op)
    before <- st$io_stats()[["requests"]]
    rz <- f(Z)
    reads <- st$io_stats()[["requests"]] - before
    stopifnot(isTRUE(all.equal(rz, f(x))), isTRUE(all.equal(f(H), f(x))))
    tz <- timed(function() f(Z))
    th <- timed(function() f(H))
    data.frame(compression = setting, operation = op, zarr_s = tz, hdf5array_s = th, ratio = th / tz,
               chunks = n_chunks, chunk_reads_zarr = reads,
               zarr_mb = sizes[["zarr"]] / 1e6, hdf5_mb = sizes[["hdf5"]] / 1e6)
  }))
}

timed <- function(f) {
  f() # warm-up (and the open of the seed's array)
  t <- vapply(seq_len(reps), function(i) { gc(); system.time(f())[["elapsed"]] }, 0)
  stats::median(t)
}

res <- do.call(rbind, lapply(c("zlib6", "none"), run_setting))
cat(sprintf("matrix %d x %d int32 (%.0f MB), chunks %d x %d; zlib6 = byte shuffle + zlib level 6 on both sides\n",
            nr, nc, nr * nc * 4 / 1e6, ch[1], ch[2]))
cat(sprintf("DelayedArray %s, HDF5Array %s, block size %.0f MB, median of %d runs, zarr.num_threads %d\n",
            packageVersion("DelayedArray"), packageVersion("HDF5Array"), getAutoBlockSize() / 1e6, reps,
            zarr:::zarr_num_threads()))
print(format(res, digits = 3), row.names = FALSE)
cat(sprintf("each chunk decoded once per pass: %s\n",
            if (all(res$chunk_reads_zarr == n_chunks)) "yes" else "NO"))
cat(sprintf("load average at the end: %s\n", paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(res, file.path(root, "bench", "results", "delayed.csv"), row.names = FALSE)
