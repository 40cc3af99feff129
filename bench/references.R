# Kerchunk references: reading a netCDF-4 variable through JSON references
# with our zarr package, beside reading the same variable with the netCDF
# readers available in R (ncdf4, RNetCDF; Debian r-cran-ncdf4 / r-cran-rnetcdf).
#
# usage (from the repository root): Rscript bench/references.R   (bash bench/run.sh runs it too)
# Needs a Python 3 with h5py and netCDF4 (Debian python3-h5py python3-netcdf4;
# found as in the tests: ZARR_PYTHON, /usr/bin/python3, python3), which writes
# bench.nc (t2m: NT x 181 x 360 float32, one zlib + shuffle chunk per time
# step, NT = ZARR_BENCH_NT, default 240) and its references
# (tests/testthat/python/kerchunk_refs.py bench).
#   K1  the whole variable: ncdf4, RNetCDF, ours through references (local
#       file), ours through references with the file served over HTTP (node
#       test server; needs node and processx)
#   K2  one time step (181 x 360): the same readers
# Every reader's values are checked against ncdf4's.
# Environment: ZARR_BENCH_LIB, ZARR_BENCH_REPS (5), ZARR_BENCH_DIR, ZARR_BENCH_NT.
# Output: the table on stdout and bench/results/references.csv.

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_lib <- bench_our_lib(root)
our_path <- load_our_zarr(our_lib)
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "5")))
nt <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_NT", "240")))

py <- ""
for (cand in unique(c(Sys.getenv("ZARR_PYTHON", ""), "/usr/bin/python3", Sys.which("python3")))) {
  if (nzchar(cand) && file.exists(cand) &&
      identical(suppressWarnings(system2(cand, c("-c", shQuote("import h5py, netCDF4")), stdout = FALSE, stderr = FALSE)), 0L)) {
    py <- cand
    break
  }
}
if (!nzchar(py)) {
  say("references: no Python 3 with h5py and netCDF4 (Debian python3-h5py python3-netcdf4): skipped")
  quit(status = 0)
}

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
if (!nzchar(workdir)) workdir <- tempfile("zarr-bench-refs-")
workdir <- file.path(workdir, "references")
unlink(workdir, recursive = TRUE)
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
script <- file.path(root, "tests", "testthat", "python", "kerchunk_refs.py")
st <- system2(py, c(shQuote(script), "bench", shQuote(workdir), nt))
if (st != 0) stop("kerchunk_refs.py bench failed")
nc_file <- file.path(workdir, "bench.nc")
refs <- file.path(workdir, "refs_bench.json")
say("zarr %s from %s; %s; %d cores", utils::packageVersion("zarr"), our_path, R.version.string,
    parallel::detectCores())
say("bench.nc: t2m %d x 181 x 360 float32 (%.1f MB of values, %.1f MB on disk); %d repetitions after a warm-up, medians",
    nt, nt * 181 * 360 * 4 / 1e6, file.size(nc_file) / 1e6, reps)

timeit <- function(f) {
  f() # warm-up (page cache, connections)
  t <- vapply(seq_len(reps), function(i) {
    gc(FALSE)
    p0 <- proc.time()
    f()
    p <- proc.time() - p0
    c(p[["elapsed"]], p[["user.self"]] + p[["sys.self"]])
  }, numeric(2))
  c(wall = stats::median(t[1, ]), cpu = stats::median(t[2, ]))
}

# the reference values: ncdf4 or RNetCDF, as [time, lat, lon]
readers <- list()
if (requireNamespace("ncdf4", quietly = TRUE)) {
  readers$ncdf4 <- list(
    all = function() { nc <- ncdf4::nc_open(nc_file); on.exit(ncdf4::nc_close(nc)); ncdf4::ncvar_get(nc, "t2m", collapse_degen = FALSE) },
    one = function() { nc <- ncdf4::nc_open(nc_file); on.exit(ncdf4::nc_close(nc)); ncdf4::ncvar_get(nc, "t2m", start = c(1, 1, 2), count = c(-1, -1, 1), collapse_degen = FALSE) })
}
if (requireNamespace("RNetCDF", quietly = TRUE)) {
  readers$RNetCDF <- list(
    all = function() { nc <- RNetCDF::open.nc(nc_file); on.exit(RNetCDF::close.nc(nc)); RNetCDF::var.get.nc(nc, "t2m", collapse = FALSE) },
    one = function() { nc <- RNetCDF::open.nc(nc_file); on.exit(RNetCDF::close.nc(nc)); RNetCDF::var.get.nc(nc, "t2m", start = c(1, 1, 2), count = c(NA, NA, 1), collapse = FALSE) })
}
# netCDF readers in R return [lon, lat, time]; ours [time, lat, lon]
as_ours <- function(x) aperm(x, 3:1)
options(zarr.fill_as_na = FALSE)
readers$`zarr (references, local)` <- list(
  all = function() open_zarr(refs)[["/t2m"]][],
  one = function() open_zarr(refs)[["/t2m"]][2, , , drop = FALSE], ours = TRUE)

srv <- NULL
if (nzchar(Sys.which("node")) && requireNamespace("processx", quietly = TRUE)) {
  server <- start_test_server(workdir, root)
  srv <- server$process
  if (!is.null(srv)) {
    url <- paste0(server$url, "/refs_bench.json")
    readers$`zarr (references, HTTP)` <- list(
      all = function() open_zarr(url)[["/t2m"]][],
      one = function() open_zarr(url)[["/t2m"]][2, , , drop = FALSE], ours = TRUE)
  }
}

want_all <- NULL
want_one <- NULL
rows <- list()
for (nm in names(readers)) {
  r <- readers[[nm]]
  conv <- if (isTRUE(r$ours)) function(x) unname(x) else function(x) as_ours(x)
  got_all <- conv(r$all())
  got_one <- conv(r$one())
  if (is.null(want_all)) {
    want_all <- got_all
    want_one <- got_one
  }
  ok <- identical(dim(got_all), dim(want_all)) && all(got_all == want_all) &&
    identical(dim(got_one), dim(want_one)) && all(got_one == want_one)
  if (!ok) stop(sprintf("%s read values that differ from %s's", nm, names(readers)[1]))
  ta <- timeit(r$all)
  to <- timeit(r$one)
  rows[[nm]] <- data.frame(reader = nm, whole_s = ta[["wall"]], whole_cpu_s = ta[["cpu"]],
                           whole_MBps = nt * 181 * 360 * 4 / 1e6 / ta[["wall"]],
                           one_step_ms = 1000 * to[["wall"]], stringsAsFactors = FALSE)
}
if (!is.null(srv) && srv$is_alive()) invisible(srv$kill())
tab <- do.call(rbind, rows)
rownames(tab) <- NULL
say("")
say("K1: the whole variable; K2: one time step (values of every reader checked against %s)", names(readers)[1])
print(format(tab, digits = 3), row.names = FALSE)
results_dir <- file.path(root, "bench", "results")
dir.create(results_dir, recursive = TRUE, showWarnings = FALSE)
utils::write.csv(tab, file.path(results_dir, "references.csv"), row.names = FALSE)
say("")
say("written %s", file.path(results_dir, "references.csv"))
