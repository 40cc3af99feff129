# Peer benchmark: this package and zarr-python 2 (Debian's python3-zarr and
# python3-numcodecs) reading and writing the same Zarr v2 stores in one run;
# GDAL (its Python multidimensional API, bench/zb_peers.py) and terra read the
# same stores too (whole reads), after the interleaved rows.
#
# usage (from the repository root): Rscript bench/peer.R   (bash bench/run.sh runs it last)
# See bench/README.md ("Peer: zarr-python 2"). Environment:
#   ZARR_BENCH_LIB      library holding our zarr (as bench/run.R)
#   ZARR_BENCH_PYTHON   the Python interpreter (default: the first of /usr/bin/python3,
#                       python3 that can import zarr 2.x and numcodecs)
#   ZARR_BENCH_REPS     timed repetitions per operation after a warm-up (5)
#   ZARR_BENCH_PEER_OPEN_REPS  opens per repetition of the open + one element row (200)
#   ZARR_BENCH_PEER_TIMEOUT    seconds allowed to bench/peer.py for one answer (900)
#   ZARR_BENCH_ONLY     regular expression: only the operations whose id matches
#   ZARR_BENCH_DIR      work directory for the stores (default: a temporary one)
#   ZARR_BENCH_KEEP     true: keep the stores and the spec file (to profile on them, or to
#                       run bench/peer.py alone: /usr/bin/python3 bench/peer.py <spec>)
# Output: the table on stdout and bench/results/peer.csv. Without a Python
# that can import zarr 2 it prints why and exits with status 0.
# zarr-python runs in one process, bench/peer.py --serve, started after the
# stores are written: each repetition of ours is followed by one of its
# repetitions of the same operation, so that both see the same load.

t_start <- proc.time()[["elapsed"]]
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()

# ---------------------------------------------------------------- zarr-python
find_python <- function() {
  env <- Sys.getenv("ZARR_BENCH_PYTHON", "")
  cands <- if (nzchar(env)) env else unique(c("/usr/bin/python3", Sys.which("python3")))
  cands <- cands[nzchar(cands)]
  probe <- "import zarr, numcodecs, numpy; print(zarr.__version__)"
  for (py in cands) {
    v <- tryCatch(suppressWarnings(system2(py, c("-c", shQuote(probe)), stdout = TRUE, stderr = FALSE)),
                  error = function(e) character())
    if (is.null(attr(v, "status")) && length(v) && grepl("^2\\.", v[length(v)]))
      return(list(path = py, version = v[length(v)]))
  }
  list(path = NA_character_, tried = cands)
}
py <- find_python()
if (is.na(py$path)) {
  say("bench/peer.R: skipped: no Python interpreter here can import zarr 2.x and numcodecs (tried: %s).",
      paste(py$tried, collapse = ", "))
  say("  Install Debian's python3-zarr and python3-numcodecs (bash bench/run.sh does, as root),")
  say("  or point ZARR_BENCH_PYTHON to an interpreter that has them.")
  quit(status = 0)
}

our_lib <- bench_our_lib(root)
our_path <- load_our_zarr(our_lib)
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "5")))
open_reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_PEER_OPEN_REPS", "200")))
py_timeout <- as.numeric(Sys.getenv("ZARR_BENCH_PEER_TIMEOUT", "900"))
only <- Sys.getenv("ZARR_BENCH_ONLY", "")
min_time <- 0.05  # a repetition of a faster operation loops to >= 50 ms (both sides)
want <- function(id) !nzchar(only) || grepl(only, id)
keep <- tolower(Sys.getenv("ZARR_BENCH_KEEP", "false")) %in% c("true", "1", "yes")

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
own_workdir <- !nzchar(workdir)
if (own_workdir) workdir <- tempfile("zarr-peer-")
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
fixdir <- file.path(workdir, "peer-fixtures")
outdir <- file.path(workdir, "peer-out")
unlink(c(fixdir, outdir), recursive = TRUE)
dir.create(fixdir); dir.create(outdir)
results_dir <- file.path(root, "bench", "results")
dir.create(results_dir, recursive = TRUE, showWarnings = FALSE)

n_cores <- parallel::detectCores()
def_threads <- zarr:::zarr_num_threads()
load_start <- loadavg()
say("zarr %s from %s; %s", utils::packageVersion("zarr"), our_path, R.version.string)
say("zarr-python %s via %s", py$version, py$path)
say("%d cores, default zarr.num_threads = %d; %d timed repetitions after a warm-up, medians; work dir %s",
    n_cores, def_threads, reps, workdir)
say("load average at start: %s (a shared machine: other processes make the timings noisy)", load_start)

# ---------------------------------------------------------------- fixtures (Zarr v2)
options(zarr.format = 2)
t0 <- proc.time()[["elapsed"]]
x1 <- get_data("x1"); x3 <- get_data("x3"); x4 <- get_data("x4")
st <- list()
fixture <- function(key, x, chunks, codec) {
  p <- file.path(fixdir, paste0(key, ".zarr"))
  type <- if (is.integer(x)) "int32" else "float64"
  our_write_def(p, x, our_def(type, dim(x) %||% length(x), chunks, codec))
  st[[key]] <<- p
}
fixture("w1", x1, c(100, 100), "zstd")
fixture("w3", x3, c(64, 64, 64), "zstd")
fixture("w4", x4, 1000, "zstd")
fixture("w5_none", x1, c(100, 100), "none")
fixture("w5_blosc", x1, c(100, 100), "blosc")
fixture("b1_lz4_500", x1, c(500, 500), "blosc")
fixture("b2_bzstd_100", x1, c(100, 100), "blosc_zstd")
fixture("b4_bzstd_500", x1, c(500, 500), "blosc_zstd")
fixture("b3_vec_lz4", x4, 1000, "blosc")
stopifnot(file.exists(file.path(st$w1, "a", ".zarray")))  # really v2
invisible(system2("sync"))
say("fixtures written in %.1f s", proc.time()[["elapsed"]] - t0)

# 500 arrays in 20 groups of 25 (small float64 arrays, zstd-1)
meta <- list(groups = 20L, arrays = 25L, shape = c(100L, 100L), chunks = c(10L, 10L), node = "g10/a13")
make_tree <- function(path) {
  z <- create_zarr(path)
  def <- our_def("float64", meta$shape, meta$chunks, "zstd")
  for (g in seq_len(meta$groups)) {
    z$add_group("/", paste0("g", g))
    for (a in seq_len(meta$arrays)) z$add_array(paste0("/g", g), paste0("a", a), def)
  }
  invisible(z)
}

# ---------------------------------------------------------------- zarr-python, serving
# bench/peer.py --serve opens the same arrays and answers one command a line,
# so that each repetition of ours is followed by one of zarr-python's.
spec <- list(
  reps = reps, open_reps = open_reps, min_time = min_time, only = only, out_dir = outdir,
  stores = c(st, list(meta500 = file.path(fixdir, "meta500.zarr"), meta500_py = file.path(fixdir, "meta500_py.zarr"))),
  full_reads = list(list("b1_lz4_500", "b1_lz4_500"), list("b2_bzstd_100", "b2_bzstd_100"),
                    list("b3_vec_lz4", "b3_vec_lz4"), list("b4_bzstd_500", "b4_bzstd_500"),
                    list("w1_read", "w1"), list("w3_read", "w3"), list("w4_read", "w4"),
                    list("w5_read_none", "w5_none"), list("w5_read_blosc", "w5_blosc")),
  writes = list(  # id, store whose array (values, chunks, codec) is written again, codec
    list("w1_write", "w1", "zstd"), list("w3_write", "w3", "zstd"), list("w4_write", "w4", "zstd"),
    list("w5_write_none", "w5_none", "none"), list("w5_write_blosc", "w5_blosc", "blosc")),
  open_store = "w1",
  w2_blocks = lapply(seq_len(nrow(w2_blocks)), function(b) c(w2_blocks$i[b], w2_blocks$j[b])),
  w3_k = W3_K, w3_ij = W3_IJ, meta = meta)
st <- spec$stores
spec_file <- file.path(workdir, "peer-spec.json")
writeLines(jsonlite::toJSON(spec, auto_unbox = TRUE, digits = NA), spec_file)
pyproc <- processx::process$new(py$path, c(file.path(root, "bench", "peer.py"), spec_file, "--serve"),
                                stdin = "|", stdout = "|", stderr = "")
py_buf <- character()
py_ok <- TRUE
py_call <- function(cmd) {
  if (!py_ok) return(NULL)
  ans <- tryCatch({
    pyproc$write_input(paste0(jsonlite::toJSON(cmd, auto_unbox = TRUE), "\n"))
    deadline <- proc.time()[["elapsed"]] + py_timeout
    while (!length(py_buf)) {
      if (proc.time()[["elapsed"]] > deadline) stop("no answer within ", py_timeout, " s")
      if (!pyproc$is_alive() && !pyproc$is_incomplete_output()) stop("bench/peer.py exited (status ", pyproc$get_exit_status(), ")")
      pyproc$poll_io(1000)
      py_buf <<- c(py_buf, pyproc$read_output_lines())
    }
    line <- py_buf[1]; py_buf <<- py_buf[-1]
    jsonlite::fromJSON(line, simplifyVector = FALSE)
  }, error = function(e) {
    say("  zarr-python side stopped: %s", conditionMessage(e))
    py_ok <<- FALSE
    NULL
  })
  if (!is.null(ans$error)) {
    say("  zarr-python %s %s: %s", cmd$cmd, cmd$id %||% "", ans$error)
    return(NULL)
  }
  ans
}
pyinfo <- py_call(list(cmd = "info"))
if (is.null(pyinfo)) say("bench/peer.py --serve did not start: the table has this package only")

# ---------------------------------------------------------------- timing
# Median wall and CPU seconds per call of fn(i) over `reps` repetitions after
# one warm-up; a faster operation is called k times per repetition (k from
# the warm-up, or `calls`). With `id`, zarr-python does the same operation,
# its warm-up after ours and each of its repetitions right after ours.
pyops <- list()
timed <- function(fn, calls = NULL, warm = fn, id = NULL) {
  rule <- function(w) max(1L, min(1000L, as.integer(ceiling(min_time / max(w, 1e-6)))))
  invisible(gc(FALSE))
  t0 <- proc.time()[["elapsed"]]
  warm(0L)
  k <- calls %||% rule(proc.time()[["elapsed"]] - t0)
  pw <- if (!is.null(id)) py_call(list(cmd = "rep", id = id, calls = 1L, first = 0L))
  kp <- if (is.null(pw)) NA else calls %||% rule(pw$rep_s)
  wall <- cpu <- pwall <- pcpu <- rep(NA_real_, reps)
  n <- 1L
  for (r in seq_len(reps)) {
    t0 <- proc.time()
    for (j in seq_len(k)) { fn(n); n <- n + 1L }
    d <- proc.time() - t0
    wall[r] <- d[["elapsed"]] / k
    cpu[r] <- (d[["user.self"]] + d[["sys.self"]]) / k
    if (!is.na(kp)) {
      pr <- py_call(list(cmd = "rep", id = id, calls = kp, first = 1L + (r - 1L) * kp))
      if (!is.null(pr)) { pwall[r] <- pr$s; pcpu[r] <- pr$cpu_s }
    }
  }
  if (!is.na(kp) && !anyNA(pwall)) {
    chk <- py_call(list(cmd = "check", id = id))
    pyops[[id]] <<- c(list(s = stats::median(pwall), min_s = min(pwall), cpu_s = stats::median(pcpu),
                           reps = reps, calls_per_rep = kp), chk)
  }
  list(s = stats::median(wall), min_s = min(wall), cpu_s = stats::median(cpu), reps = reps, calls_per_rep = k)
}
# MD5 of the values' bytes in column-major order (as bench/peer.py digests)
md5_of <- function(xs) {
  f <- tempfile(); con <- file(f, "wb")
  for (x in xs) writeBin(as.vector(x), con)
  close(con)
  on.exit(unlink(f))
  unname(tools::md5sum(f))
}
read_all <- function(a) {
  nd <- length(a$shape)
  if (nd == 1L) a$read() else if (nd == 2L) a[, ] else a[, , ]
}
open_a <- function(p) open_zarr(p)$get_node("/a")

ours <- list()
rec <- function(id, r) {
  ours[[id]] <<- r
  p <- pyops[[id]]
  say("  %-18s %10.6f s (cpu %10.6f)%s%s", id, r$s, r$cpu_s,
      if (is.null(p)) "" else sprintf("   zarr-python %10.6f s (cpu %10.6f)", p$s, p$cpu_s),
      if (isFALSE(r$valid)) "  WRONG VALUES" else "")
}

full_reads <- lapply(spec$full_reads, function(fr)
  c(fr, list(list(w1 = x1, w3 = x3, w4 = x4, w5_none = x1, w5_blosc = x1, b1_lz4_500 = x1, b2_bzstd_100 = x1,
                  b4_bzstd_500 = x1, b3_vec_lz4 = x4)[[fr[[2]]]])))
writes <- spec$writes

say("\ntimings, this package then zarr-python, repetitions interleaved (array opened beforehand")
say("unless the row is about opening):")
for (fr in full_reads) {
  if (!want(fr[[1]])) next
  a <- open_a(st[[fr[[2]]]])
  r <- timed(function(i) read_all(a), id = fr[[1]])
  v <- read_all(a)
  r$valid <- same_values(v, fr[[3]])
  r$md5 <- md5_of(list(v))
  rec(fr[[1]], r)
}
if (want("w2_blocks")) {
  a <- open_a(st$w1)
  w2 <- function(i) lapply(seq_len(nrow(w2_blocks)), function(b) {
    i <- w2_blocks$i[b]; j <- w2_blocks$j[b]
    a[i:(i + 99L), j:(j + 99L)]
  })
  r <- timed(w2, id = "w2_blocks")
  v <- w2(0)
  r$valid <- same_values(v, lapply(seq_len(nrow(w2_blocks)), function(b) {
    i <- w2_blocks$i[b]; j <- w2_blocks$j[b]
    x1[i:(i + 99L), j:(j + 99L)]
  }))
  r$md5 <- md5_of(v)
  rec("w2_blocks", r)
}
a3 <- open_a(st$w3)
if (want("w3_slice")) {
  r <- timed(function(i) a3[, , W3_K], id = "w3_slice")
  v <- a3[, , W3_K]
  r$valid <- same_values(v, x3[, , W3_K]); r$md5 <- md5_of(list(v))
  rec("w3_slice", r)
}
if (want("w3_column")) {
  r <- timed(function(i) a3[W3_IJ[1], W3_IJ[2], ], id = "w3_column")
  v <- a3[W3_IJ[1], W3_IJ[2], ]
  r$valid <- same_values(v, x3[W3_IJ[1], W3_IJ[2], ]); r$md5 <- md5_of(list(v))
  rec("w3_column", r)
}
if (want("open_one")) {
  open_one <- function(i) open_zarr(st$w1)$get_node("/a")[1, 1]
  r <- timed(open_one, calls = open_reps, id = "open_one")
  r$value <- open_one(0)
  r$valid <- identical(r$value, x1[1, 1])
  rec("open_one", r)
}
for (wr in writes) {
  if (!want(wr[[1]])) next
  x <- get_data(c(w1 = "x1", w3 = "x3", w4 = "x4", w5_none = "x1", w5_blosc = "x1")[[wr[[2]]]])
  chunks <- c(w1 = 100, w3 = 64, w4 = 1000, w5_none = 100, w5_blosc = 100)[[wr[[2]]]]
  def <- our_def(if (is.integer(x)) "int32" else "float64", dim(x) %||% length(x),
                 rep(chunks, length(dim(x) %||% 1L)), wr[[3]])
  last <- NULL
  r <- timed(function(i) {
    last <<- file.path(outdir, sprintf("r-%s-%d.zarr", wr[[1]], i))
    our_write_def(last, x, def)
  }, id = wr[[1]])
  invisible(system2("sync"))  # untimed, like bench/run.R
  v <- read_all(open_a(last))
  r$valid <- same_values(v, x); r$md5 <- md5_of(list(v))
  r$bytes <- sum(file.size(list.files(last, recursive = TRUE, all.files = TRUE, full.names = TRUE)))
  rec(wr[[1]], r)
}
per_tree <- meta$groups * meta$arrays
st$meta500 <- file.path(fixdir, "meta500.zarr")
st$meta500_py <- file.path(fixdir, "meta500_py.zarr")
if (want("meta_create") || want("meta_set_attr")) {
  # the warm-up builds the fixture of the set_attribute rows
  r <- timed(function(i) make_tree(file.path(outdir, sprintf("r-meta-%d.zarr", i))),
             warm = function(i) make_tree(st$meta500), id = "meta_create")
  for (f in c("s", "min_s", "cpu_s")) r[[f]] <- r[[f]] / per_tree
  r$per_rep <- per_tree
  r$valid <- length(list.files(st$meta500, pattern = "^\\.zarray$", recursive = TRUE, all.files = TRUE)) == per_tree
  rec("meta_create", r)
  zarr_consolidate(open_zarr(st$meta500))
  stopifnot(file.exists(file.path(st$meta500, ".zmetadata")))
  invisible(system2("cp", c("-a", shQuote(st$meta500), shQuote(st$meta500_py))))
}
if (want("meta_set_attr")) {
  node <- open_zarr(st$meta500)$get_node(paste0("/", meta$node))
  last <- NA
  r <- timed(function(i) { node$set_attribute("bench", i); last <<- i }, id = "meta_set_attr")
  zm <- jsonlite::fromJSON(file.path(st$meta500, ".zmetadata"), simplifyVector = FALSE)
  r$valid <- identical(as.integer(zm$metadata[[paste0(meta$node, "/.zattrs")]]$bench), as.integer(last))
  rec("meta_set_attr", r)
}
# threads: this package only (zarr-python 2 decodes chunks one after the other)
for (key in c("b1_lz4_500", "b4_bzstd_500")) for (nt in 1:2) {
  id <- sprintf("%s_t%d", key, nt)
  if (!want(id)) next
  a <- open_a(st[[key]])
  r <- timed(function(i) with_threads(nt, a[, ]))
  r$valid <- same_values(with_threads(nt, a[, ]), x1)
  rec(id, r)
}

pyend <- py_call(list(cmd = "info"))
invisible(try(close(pyproc$get_input_connection()), silent = TRUE))  # end of input: peer.py exits
invisible(pyproc$wait(10000))
if (pyproc$is_alive()) invisible(pyproc$kill())
pyres <- if (is.null(pyinfo)) NULL else c(pyinfo, list(ops = pyops, load_start = pyinfo$load, load_end = pyend$load))

# ---------------------------------------------------------------- GDAL and terra (whole reads)
# GDAL: bench/zb_peers.py in its own process per store (open + read, a warm-up
# and `reps` repetitions; checked by the sum of the values). terra: rast() +
# values() in this process. A store a reader cannot open gets its reason.
gdal_ops <- list()
gdal_ok <- system2(py$path, c("-c", shQuote("import osgeo.gdal")), stdout = FALSE, stderr = FALSE) == 0
for (fr in full_reads) {
  if (!want(fr[[1]])) next
  want_sum <- sum(as.numeric(fr[[3]]))
  if (gdal_ok) {
    out <- suppressWarnings(system2(py$path, c(file.path(root, "bench", "zb_peers.py"), "gdal", "read",
                                               shQuote(st[[fr[[2]]]]), "--reps", reps), stdout = TRUE, stderr = FALSE))
    g <- tryCatch(jsonlite::fromJSON(out[length(out)], simplifyVector = FALSE), error = function(e) list(error = "no answer"))
    if (is.null(g$error)) g$valid <- isTRUE(all.equal(as.numeric(g$check$sum), want_sum))
    gdal_ops[[fr[[1]]]]$gdal <- g
  }
  tr <- tryCatch({
    invisible(terra::rast(st[[fr[[2]]]]))
    r <- timed(function(i) terra::values(terra::rast(st[[fr[[2]]]])))
    r$valid <- isTRUE(all.equal(sum(terra::values(terra::rast(st[[fr[[2]]]]))), want_sum))
    r
  }, error = function(e) list(error = conditionMessage(e)))
  gdal_ops[[fr[[1]]]]$terra <- tr
  say("  %-18s GDAL %s   terra %s", fr[[1]],
      if (is.null(gdal_ops[[fr[[1]]]]$gdal$s)) paste("n/a:", substr(gdal_ops[[fr[[1]]]]$gdal$error %||% "no GDAL", 1, 50))
      else sprintf("%.6f s", gdal_ops[[fr[[1]]]]$gdal$s),
      if (is.null(tr$s)) paste("n/a:", substr(tr$error, 1, 50)) else sprintf("%.6f s", tr$s))
}
load_end <- loadavg()

# ---------------------------------------------------------------- table
rows <- list(
  # id, row label, target: max ratio (ours / zarr-python), or an absolute max seconds per operation
  list("b1_lz4_500", "4000x2000 f64, 500x500 chunks, blosc lz4+shuffle: read all", ratio = 1),
  list("b2_bzstd_100", "same, 100x100 chunks, blosc zstd-1+shuffle: read all", ratio = 1),
  list("b4_bzstd_500", "same, 500x500 chunks, blosc zstd-1+shuffle: read all", ratio = 1),
  list("b3_vec_lz4", "1e6 f64, chunks of 1000, blosc lz4+shuffle: read all", ratio = 1),
  list("open_one", "open store + read one element (W1 store)", ratio = 1, abs = 1e-3),
  list("w1_read", "W1 4000x2000 f64, 100x100, zstd-1: read all", ratio = 0.5),
  list("w2_blocks", "W2 20 unaligned 100x100 blocks of W1", ratio = 1),
  list("w3_read", "W3 256x256x128 i32, 64^3, zstd-1: read all", ratio = 1),
  list("w3_slice", "W3 slice [, , 70]", ratio = 1),
  list("w3_column", "W3 column [100, 200, ]", ratio = 1),
  list("w4_read", "W4 1e6 f64, chunks of 1000, zstd-1: read all", ratio = 0.5),
  list("w5_read_none", "W5 W1 uncompressed: read all", ratio = 1),
  list("w5_read_blosc", "W5 W1 blosc lz4+shuffle: read all", ratio = 0.5),
  list("w1_write", "W1 write, zstd-1", ratio = 1),
  list("w3_write", "W3 write, zstd-1", ratio = 1),
  list("w4_write", "W4 write, zstd-1", ratio = 1),
  list("w5_write_none", "W5 W1 write, uncompressed", ratio = 1),
  list("w5_write_blosc", "W5 W1 write, blosc lz4+shuffle", ratio = 1),
  list("meta_create", "create 500 arrays in 20 groups of 25 (per array)", ratio = 1, abs = 1 / per_tree),
  list("meta_set_attr", "set_attribute, consolidated 500-array store (per call)", ratio = 1, abs = 0.01))
num <- function(x) if (is.null(x)) NA_real_ else as.numeric(x)
tab <- do.call(rbind, lapply(rows, function(rw) {
  id <- rw[[1]]
  o <- ours[[id]]; p <- if (is.null(pyres)) NULL else pyres$ops[[id]]
  if (is.null(o) && is.null(p)) return(NULL)
  same <- if (is.null(o) || is.null(p)) NA else if (!is.null(o$md5)) identical(o$md5, p$md5) else
    if (id == "open_one") identical(o$value, num(p$value)) else if (id == "meta_set_attr") isTRUE(p$consolidated_ok) else
    if (id == "meta_create") identical(as.integer(p$arrays_found), as.integer(per_tree)) else NA
  ratio <- num(o$s) / num(p$s)
  tgt <- sprintf("<= %gx", rw$ratio); ok <- is.na(ratio) || ratio <= rw$ratio
  if (!is.null(rw$abs)) {
    tgt <- paste0(tgt, if (id == "meta_create") ", 500 in < 1 s" else sprintf(", < %g ms", rw$abs * 1000))
    ok <- ok && !is.na(o$s) && o$s < rw$abs
  }
  data.frame(id = id, operation = rw[[2]], ours_s = num(o$s), ours_cpu_s = num(o$cpu_s),
             py_s = num(p$s), py_cpu_s = num(p$cpu_s), ratio = ratio, cpu_ratio = num(o$cpu_s) / num(p$cpu_s),
             ours_min_s = num(o$min_s), py_min_s = num(p$min_s),
             calls_per_rep = num(o$calls_per_rep), py_calls_per_rep = num(p$calls_per_rep),
             ours_mb = num(o$bytes) / MB, py_mb = num(p$bytes) / MB,
             gdal_s = num(gdal_ops[[id]]$gdal$s), gdal_cpu_s = num(gdal_ops[[id]]$gdal$cpu_s),
             terra_s = num(gdal_ops[[id]]$terra$s),
             peers_valid = if (is.null(gdal_ops[[id]])) NA else
               all(unlist(lapply(gdal_ops[[id]], function(g) if (is.null(g$s)) TRUE else isTRUE(g$valid)))),
             ours_valid = if (is.null(o)) NA else isTRUE(o$valid), same_values = same,
             target = tgt, target_met = if (is.na(ratio)) "n/a" else if (ok) "met" else "MISSED",
             stringsAsFactors = FALSE)
}))
# threads: 2 against 1, this package only
for (key in c("b1_lz4_500", "b4_bzstd_500")) {
  t1 <- ours[[paste0(key, "_t1")]]; t2 <- ours[[paste0(key, "_t2")]]
  if (is.null(t1) || is.null(t2)) next
  lab <- c(b1_lz4_500 = "blosc lz4", b4_bzstd_500 = "blosc zstd-1")[[key]]
  for (nt in 1:2) {
    o <- list(t1, t2)[[nt]]
    tab <- rbind(tab, data.frame(
      id = sprintf("%s_t%d", key, nt), operation = sprintf("500x500 chunks, %s: read all, %d thread%s", lab, nt,
                                                          if (nt > 1) "s" else ""),
      ours_s = o$s, ours_cpu_s = o$cpu_s, py_s = NA, py_cpu_s = NA,
      ratio = if (nt == 2) t2$s / t1$s else NA, cpu_ratio = if (nt == 2) t2$cpu_s / t1$cpu_s else NA, ours_min_s = o$min_s, py_min_s = NA,
      calls_per_rep = o$calls_per_rep, py_calls_per_rep = NA, ours_mb = NA, py_mb = NA,
      gdal_s = NA, gdal_cpu_s = NA, terra_s = NA, peers_valid = NA,
      ours_valid = isTRUE(o$valid), same_values = NA,
      target = if (nt == 2) "2 thr / 1 thr <= 0.625" else "",
      target_met = if (nt == 2) (if (t2$s / t1$s <= 0.625) "met" else "MISSED") else "",
      stringsAsFactors = FALSE))
  }
}
csv <- tab
isnum <- vapply(csv, is.double, TRUE)
csv[isnum] <- lapply(csv[isnum], signif, digits = 5)
utils::write.csv(csv, file.path(results_dir, "peer.csv"), row.names = FALSE)

f_t <- function(x) ifelse(is.na(x), "-", ifelse(x >= 0.01, sprintf("%.3f s", x), sprintf("%.3f ms", 1000 * x)))
f_r <- function(x) ifelse(is.na(x), "-", ifelse(x >= 10, sprintf("%.1f", x), sprintf("%.2f", x)))
show <- data.frame(
  operation = tab$operation, `this package` = f_t(tab$ours_s), `cpu` = f_t(tab$ours_cpu_s),
  `zarr-python` = f_t(tab$py_s), `py cpu` = f_t(tab$py_cpu_s), ratio = f_r(tab$ratio), `cpu ratio` = f_r(tab$cpu_ratio),
  GDAL = f_t(tab$gdal_s), `GDAL cpu` = f_t(tab$gdal_cpu_s), `GDAL / ours` = f_r(tab$gdal_s / tab$ours_s),
  terra = f_t(tab$terra_s), `terra / ours` = f_r(tab$terra_s / tab$ours_s),
  `same values` = paste0(ifelse(is.na(tab$same_values), ifelse(tab$ours_valid, "(R ok)", "R WRONG"),
                                ifelse(tab$same_values & tab$ours_valid, "yes", "NO")),
                         ifelse(!is.na(tab$peers_valid) & !tab$peers_valid, ", GDAL/terra WRONG", "")),
  target = paste0(tab$target, ifelse(nzchar(tab$target_met), paste0(": ", tab$target_met), "")),
  check.names = FALSE)
cat("\n")
say("Peer results (per operation; ratio = this package / zarr-python, lower is better;")
say("thread rows: ratio = 2 threads / 1 thread):")
local({ old <- options(width = 300); on.exit(options(old)); print(show, right = FALSE, row.names = FALSE) })
cat("\n")
say("Notes:")
say("- Medians of %d timed repetitions after a warm-up, each of ours followed by one of zarr-python's", reps)
say("  (bench/peer.py --serve, one process); operations under %.0f ms are looped to", 1000 * min_time)
say("  >= %.0f ms per repetition, the open row %d opens per repetition; time.perf_counter in Python,", 1000 * min_time, open_reps)
say("  proc.time in R. cpu = user + system seconds of the process (all threads) per operation;")
say("  cpu ratio = this package's cpu / zarr-python's: the work done, less sensitive to the load")
say("  than wall time (this package decodes on %d threads, zarr-python on one, blosc aside).", def_threads)
say("- The same Zarr v2 stores, written by this package (options(zarr.format = 2), order F);")
say("  arrays opened beforehand except in the open row. Writes: each side writes the same")
say("  values with the same chunks, codec and order into fresh stores.")
if (!is.null(pyres)) {
  say("- zarr-python %s, numcodecs %s, numpy %s, Python %s (%s); blosc's own threads: %s.",
      pyres$zarr_version, pyres$numcodecs_version, pyres$numpy_version, pyres$python, pyres$executable,
      pyres$blosc_nthreads)
  if (isTRUE(pyres$zstd_shim))
    say("  This numcodecs rejects the `checksum: false` key of zstd: peer.py registers a Zstd accepting exactly that.")
}
say("- This package: %d threads (default) except in the thread rows.", def_threads)
say("- GDAL: its Python multidimensional API (bench/zb_peers.py, gdal.OpenEx + ReadAsArray), open + read,")
say("  in its own process after the interleaved rows, not interleaved; terra: rast() + values() (a double")
say("  matrix) in this process. '-': the store cannot be read that way (the reason is printed above the table).")
say("  GDAL / ours, terra / ours > 1: the peer is slower.")
say("- same values: MD5 of the values read (written stores: read back) equal on both sides; open row:")
say("  the element; create: 500 .zarray files; set_attribute: the new value is in .zmetadata.")
say("- Load average (%d cores): start %s, end %s.", n_cores, load_start, load_end)
say("  A load above the core count means other processes competed for the CPU; compare cpu.")
say("\nwrote %s", file.path(results_dir, "peer.csv"))
if (keep) {
  unlink(outdir, recursive = TRUE)
  say("kept the stores in %s and %s (ZARR_BENCH_KEEP=true)", fixdir, spec_file)
  say("  (zarr-python alone on them: %s bench/peer.py %s)", py$path, spec_file)
} else {
  say("timings done in %.0f s; removing the stores (slow on some file systems)", proc.time()[["elapsed"]] - t_start)
  unlink(c(fixdir, outdir, spec_file), recursive = TRUE)
  if (own_workdir) unlink(workdir, recursive = TRUE)
}
say("total %.0f s", proc.time()[["elapsed"]] - t_start)
