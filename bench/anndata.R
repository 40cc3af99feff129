# AnnData: opening and summarising a sparse AnnData store (N_OBS cells x
# 2000 genes, CSR float32, 100 values per cell) with read_anndata(), beside
# reading the same data as .h5ad with the readers installed here, same run:
#   A1  ours: read_anndata() of the .zarr store (X as dgRMatrix, obs, var,
#       uns), then the per-gene sums (colSums of X)
#   A1x ours: X alone (read_anndata(elements = "X")), then colSums of X
#   A2  ours: opening only: obs and var (read_anndata(elements = c("obs", "var")))
#   A3  rhdf5::h5read() of X's data, indices and indptr in the .h5ad, put
#       together as a dgCMatrix (genes x cells) by hand, then rowSums
#   A4  HDF5Array::H5SparseMatrix() of the .h5ad's X (a sparse DelayedMatrix,
#       genes x cells) realised as a dgCMatrix, then rowSums. HDF5Array's
#       H5ADMatrix() would be the natural call, but with Debian's HDF5Array
#       1.26 and rhdf5 it fails on a sparse X in h5isdataset() of a group;
#       H5SparseMatrix() on "/X" goes through the same check and fails the
#       same way in some sessions: then the row says so.
#   P1  Python anndata.read_h5ad() then X.sum(axis=0) (a peer process)
#   P2  Python anndata.read_zarr() then X.sum(axis=0) (the same, .zarr)
# The per-gene sums of every reader are checked against ours.
#
# usage (from the repository root): Rscript bench/anndata.R
# Needs a Python 3 with anndata (Debian python3-anndata; found as in the
# tests: ZARR_PYTHON, /usr/bin/python3, python3), which writes both files.
# Environment: ZARR_BENCH_LIB, ZARR_BENCH_REPS (3), ZARR_BENCH_DIR,
# ZARR_BENCH_NOBS (100000).
# Output: the table on stdout and bench/results/anndata.csv.

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_lib <- bench_our_lib(root)
our_path <- load_our_zarr(our_lib)
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "3")))
n_obs <- max(1000L, as.integer(Sys.getenv("ZARR_BENCH_NOBS", "100000")))

py <- ""
for (cand in unique(c(Sys.getenv("ZARR_PYTHON", ""), "/usr/bin/python3", Sys.which("python3")))) {
  if (nzchar(cand) && file.exists(cand) &&
      identical(suppressWarnings(system2(cand, c("-c", shQuote("import anndata")), stdout = FALSE, stderr = FALSE)), 0L)) {
    py <- cand
    break
  }
}
if (!nzchar(py) || !requireNamespace("Matrix", quietly = TRUE)) {
  say("anndata: no Python 3 with anndata (Debian python3-anndata) or no R package Matrix: skipped")
  quit(status = 0)
}

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
if (!nzchar(workdir)) workdir <- tempfile("zarr-bench-anndata-")
workdir <- file.path(workdir, "anndata")
unlink(workdir, recursive = TRUE)
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
zarr_path <- file.path(workdir, "cells.zarr")
h5ad_path <- file.path(workdir, "cells.h5ad")

# mode "write": both files; mode "time": P1 and P2, medians and sums as JSON
py_code <- '
import sys, json, time, warnings
warnings.simplefilter("ignore")
import numpy as np, pandas as pd, scipy.sparse as sp, anndata
mode, zarr_path, h5ad_path, n_obs, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
n_var, per_row = 2000, 100
if mode == "write":
    rng = np.random.default_rng(7)
    idx = []
    for start in range(0, n_obs, 10000):
        n = min(10000, n_obs - start)
        idx.append(np.sort(np.argpartition(rng.random((n, n_var)), per_row, axis=1)[:, :per_row], axis=1))
    indices = np.concatenate(idx).ravel().astype(np.int32)
    data = rng.poisson(2.0, size=indices.size).astype(np.float32) + 1
    indptr = np.arange(0, indices.size + 1, per_row, dtype=np.int32)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_obs, n_var))
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["T", "B", "NK", "Mono"], n_obs)),
                        "n_counts": np.asarray(X.sum(axis=1)).ravel()},
                       index=["cell%d" % i for i in range(n_obs)])
    var = pd.DataFrame({"symbol": ["G%d" % i for i in range(n_var)]}, index=["ENSG%05d" % i for i in range(n_var)])
    a = anndata.AnnData(X=X, obs=obs, var=var)
    a.uns["note"] = "bench"
    a.write_zarr(zarr_path)
    a.write_h5ad(h5ad_path)
    print(json.dumps({"nnz": int(X.nnz)}))
else:
    out = {}
    for key, read, path in [("P1", anndata.read_h5ad, h5ad_path), ("P2", anndata.read_zarr, zarr_path)]:
        times = []
        for i in range(reps + 1):
            t0 = time.perf_counter()
            a = read(path)
            s = np.asarray(a.X.sum(axis=0)).ravel()
            times.append(time.perf_counter() - t0)
        out[key] = {"median": float(np.median(times[1:])), "sums": [float(v) for v in s]}
    print(json.dumps(out))
'
py_file <- file.path(workdir, "anndata_bench.py")
writeLines(py_code, py_file)
run_py <- function(mode) {
  out <- system2(py, c(shQuote(py_file), mode, shQuote(zarr_path), shQuote(h5ad_path), n_obs, reps), stdout = TRUE)
  if (!is.null(attr(out, "status"))) stop("anndata_bench.py ", mode, " failed")
  jsonlite::fromJSON(paste(out, collapse = "\n"))
}
t_write <- system.time(made <- run_py("write"))[["elapsed"]]
du <- function(p) sum(file.size(list.files(p, recursive = TRUE, all.files = TRUE, full.names = TRUE)))
say("zarr %s from %s; %s; %d cores", utils::packageVersion("zarr"), our_path, R.version.string,
    parallel::detectCores())
say("AnnData %d cells x 2000 genes, CSR float32, %d values (%.1f MB of data + indices); .zarr %.1f MB, .h5ad %.1f MB on disk; written by anndata %s in %.1f s",
    n_obs, made$nnz, made$nnz * 8 / 1e6, du(zarr_path) / 1e6, file.size(h5ad_path) / 1e6,
    system2(py, c("-c", shQuote("import anndata; print(anndata.__version__)")), stdout = TRUE), t_write)
say("%d repetitions after a warm-up, medians", reps)

timeit <- function(f) {
  f() # warm-up (page cache)
  t <- vapply(seq_len(reps), function(i) {
    gc(FALSE)
    system.time(f())[["elapsed"]]
  }, 0)
  stats::median(t)
}

rows <- list()
add <- function(id, what, seconds) {
  rows[[length(rows) + 1L]] <<- data.frame(id = id, operation = what, seconds = round(seconds, 3))
  say("  %-3s %-62s %8.3f s", id, what, seconds)
}

ours_sums <- NULL
add("A1", "ours: read_anndata(.zarr) + colSums(X)", timeit(function() {
  ad <- zarr::read_anndata(zarr_path)
  ours_sums <<- unname(Matrix::colSums(ad$X))
}))
add("A1x", "ours: read_anndata(.zarr, elements = \"X\") + colSums(X)", timeit(function() {
  ad <- zarr::read_anndata(zarr_path, elements = "X")
  Matrix::colSums(ad$X)
}))
add("A2", "ours: read_anndata(.zarr, elements = c(\"obs\", \"var\"))", timeit(function() {
  zarr::read_anndata(zarr_path, elements = c("obs", "var"))
}))
same <- function(s, who) if (!isTRUE(all.equal(as.double(s), ours_sums, tolerance = 1e-6)))
  stop(who, ": per-gene sums differ from ours")
if (requireNamespace("rhdf5", quietly = TRUE)) {
  h5_sums <- NULL
  add("A3", "rhdf5: h5read(.h5ad X/data, indices, indptr) + rowSums", timeit(function() {
    r <- function(k) as.vector(rhdf5::h5read(h5ad_path, paste0("/X/", k)))
    m <- methods::new("dgCMatrix")
    m@Dim <- c(2000L, as.integer(n_obs))
    m@p <- as.integer(r("indptr"))
    m@i <- as.integer(r("indices"))
    m@x <- as.double(r("data"))
    h5_sums <<- Matrix::rowSums(m)
  }))
  same(h5_sums, "rhdf5 h5read")
} else say("  (rhdf5 not installed: A3 skipped)")
if (requireNamespace("HDF5Array", quietly = TRUE)) {
  h5_sums <- NULL
  t <- tryCatch(timeit(function() {
    m <- methods::as(HDF5Array::H5SparseMatrix(h5ad_path, "/X"), "dgCMatrix")
    h5_sums <<- Matrix::rowSums(m)
  }), error = function(e) {
    say("  A4  HDF5Array::H5SparseMatrix() failed: %s", conditionMessage(e))
    NA_real_
  })
  if (!is.na(t)) {
    add("A4", "HDF5Array: H5SparseMatrix(.h5ad X) as dgCMatrix + rowSums", t)
    same(h5_sums, "H5SparseMatrix as dgCMatrix")
  }
} else say("  (HDF5Array not installed: A4 skipped)")
peer <- run_py("time")
add("P1", "Python anndata: read_h5ad() + X.sum(axis=0)", peer$P1$median)
same(peer$P1$sums, "anndata read_h5ad")
add("P2", "Python anndata: read_zarr() + X.sum(axis=0)", peer$P2$median)
same(peer$P2$sums, "anndata read_zarr")

dir.create(file.path(root, "bench", "results"), showWarnings = FALSE)
utils::write.csv(do.call(rbind, rows), file.path(root, "bench", "results", "anndata.csv"), row.names = FALSE)
if (!nzchar(Sys.getenv("ZARR_BENCH_DIR", ""))) unlink(dirname(workdir), recursive = TRUE)
