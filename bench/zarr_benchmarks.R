# The workloads of the cross-implementation zarr_benchmarks (zarrs, tensorstore,
# zarr-python) at this machine's scale: a 1024 x 1024 x 256 uint16 array
# (512 MB) in three layouts, read by this package, by base R's readBin() of
# the same bytes, by zarr-python 2, by GDAL (Python multidimensional API) and
# by terra, where each can read the layout.
#
# usage (from the repository root): Rscript bench/zarr_benchmarks.R
# See bench/README.md ("zarr_benchmarks workloads"). Environment:
#   ZARR_BENCH_LIB     library holding our zarr (as bench/run.R)
#   ZARR_BENCH_SCALE   fraction of the first two dims (default 1: 1024; 0.25: 256 x 256 x 256)
#   ZARR_BENCH_REPS    timed repetitions per operation after a warm-up (default 3)
#   ZARR_BENCH_ZB_DIR  where the stores are generated once and kept (default
#                      $TMPDIR/zarr-zb-<shape>); needs about 2.1 GB at scale 1
#   ZARR_BENCH_CLEAN   true: remove that directory at the end
#   ZARR_BENCH_PYTHON  the Python with zarr 2 and GDAL (default /usr/bin/python3)
#   ZARR_BENCH_ONLY    regular expression on row ids (read_, chunks1_, chunks2_, inner, roundtrip_)
# Output: the table on stdout and bench/results/zarr_benchmarks.csv.
#
# Layouts (all C order, as zarr-python and the zarr_benchmarks write them):
#   none   v2, 256^3 chunks, uncompressed
#   zstd   v2, 256^3 chunks, zstd "level 0" as zarr-python 2 writes it: numcodecs
#          0.11 makes the same frames for levels 0 and 1, while libzstd (this
#          package, zarrs) reads 0 as its default level 3, several times slower
#          to compress here; so the shard store and our rewrites use level 1,
#          the work the zstd store's frames took
#   shard  v3, shards of 256^3 holding 64^3 inner chunks, zstd level 1
#   zstd64 v2, 64^3 chunks, zstd as above: the shard layout's inner chunks as a
#          plain chunked array, for the peers that cannot read v3 shards

t_start <- proc.time()[["elapsed"]]
args <- commandArgs(TRUE)
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_path <- load_our_zarr(bench_our_lib(root))

# One of two concurrent readers (started by the main run below): wait for the
# start time, read every n-th 256^3 block, print start and end times.
arr_of <- function(p) if (file.exists(file.path(p, "zarr.json"))) open_zarr(p)$get_node("/a") else open_zarr(p)$root
block_starts <- function(shape, edge) as.matrix(expand.grid(k = seq(0, shape[3] - 1, edge), j = seq(0, shape[2] - 1, edge),
                                                            i = seq(0, shape[1] - 1, edge))[, 3:1])
read_block <- function(a, s, edge) a[s[1] + seq_len(edge), s[2] + seq_len(edge), s[3] + seq_len(edge)]
if (length(args) && args[1] == "--share") {
  a <- arr_of(args[2])
  part <- as.integer(strsplit(args[3], "/")[[1]])
  bs <- block_starts(a$shape, 256)
  mine <- which((seq_len(nrow(bs)) - 1L) %% part[2] == part[1])
  while (as.numeric(Sys.time()) < as.numeric(args[4])) Sys.sleep(0.002)
  t0 <- as.numeric(Sys.time())
  for (b in mine) read_block(a, bs[b, ], 256)
  cat(sprintf("SHARE %.6f %.6f %d\n", t0, as.numeric(Sys.time()), length(mine)))
  quit(save = "no")
}

is_true <- function(x) tolower(x) %in% c("true", "1", "yes")
scale <- as.numeric(Sys.getenv("ZARR_BENCH_SCALE", "1"))
n12 <- max(256L, as.integer(round(1024 * scale / 256)) * 256L)
shape <- c(n12, n12, 256L)
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "3")))
only <- Sys.getenv("ZARR_BENCH_ONLY", "")
want <- function(id) !nzchar(only) || grepl(only, id)
python <- Sys.getenv("ZARR_BENCH_PYTHON", "/usr/bin/python3")
dir <- Sys.getenv("ZARR_BENCH_ZB_DIR", file.path(Sys.getenv("TMPDIR", "/tmp"), sprintf("zarr-zb-%dx%dx256", n12, n12)))
dir.create(dir, recursive = TRUE, showWarnings = FALSE)
dir <- normalizePath(dir)
outdir <- file.path(dir, "out")
results_dir <- file.path(root, "bench", "results")
dir.create(results_dir, recursive = TRUE, showWarnings = FALSE)
rscript <- file.path(R.home("bin"), "Rscript")
peers_py <- file.path(root, "bench", "zb_peers.py")
nbytes <- prod(shape) * 2
say("zarr %s from %s; %s; %d cores; zarr.num_threads = %d", utils::packageVersion("zarr"), our_path,
    R.version.string, parallel::detectCores(), zarr:::zarr_num_threads())
say("array %s uint16 (%.0f MB); %d timed repetitions after a warm-up, medians; stores in %s",
    paste(shape, collapse = " x "), nbytes / MB, reps, dir)
load_start <- loadavg()
say("load average at start: %s", load_start)

# ---------------------------------------------------------------- stores (generated once)
stores <- c(none = "none.zarr", zstd = "zstd.zarr", zstd64 = "zstd64.zarr", shard = "shard.zarr")
stores[] <- file.path(dir, stores)
if (!file.exists(file.path(dir, "done"))) {
  free_gb <- as.numeric(strsplit(system2("df", c("-Pk", shQuote(dir)), stdout = TRUE)[2], " +")[[1]][4]) / 1e6
  need_gb <- 4.3 * nbytes / 1e9
  if (is.finite(free_gb) && free_gb < need_gb) stop(sprintf("%s has %.1f GB free; the stores need about %.1f GB", dir, free_gb, need_gb))
  unlink(stores, recursive = TRUE)
  t0 <- proc.time()[["elapsed"]]
  # zarr-python writes the v2 stores slab by slab from one formula (values
  # 0..4158: smooth plus 6 random bits, so that zstd has some work)
  gen <- sprintf('
import numpy as np, zarr
from numcodecs import Zstd
shape = (%d, %d, %d)
rng = np.random.default_rng(1)
arrs = [zarr.open_array(p, mode="w", shape=shape, chunks=c, dtype="<u2", compressor=z, order="C", fill_value=None)
        for p, c, z in [("%s", (256,) * 3, None), ("%s", (256,) * 3, Zstd(level=0)), ("%s", (64,) * 3, Zstd(level=0))]]
for i0 in range(0, shape[0], 256):
    i, j, k = np.ogrid[i0:i0 + 256, 0:shape[1], 0:shape[2]]
    x = ((i * 7 + j * 3 + k) %% 4096).astype(np.uint16) + rng.integers(0, 64, size=(256, shape[1], shape[2]), dtype=np.uint16)
    for a in arrs:
        a[i0:i0 + 256] = x
', shape[1], shape[2], shape[3], stores[["none"]], stores[["zstd"]], stores[["zstd64"]])
  st <- system2(python, c("-c", shQuote(gen)))
  if (st != 0) stop("generating the v2 stores with ", python, " failed")
  # this package writes the sharded v3 store from the same values
  def <- define_array("uint16", shape)
  def$portable <- TRUE  # C order, no transpose codec
  def$chunk_shape <- c(256, 256, 256)
  def$remove_codec("zstd")
  def$add_codec("zstd", list(level = 1))
  def$add_codec("sharding_indexed", list(chunk_shape = c(64, 64, 64)))
  our_write_def(stores[["shard"]], arr_of(stores[["none"]])[, , ], def)
  gc()
  writeLines(paste(shape, collapse = " "), file.path(dir, "done"))
  say("stores written in %.0f s", proc.time()[["elapsed"]] - t0)
}
invisible(system2("sync"))
sizes <- vapply(stores, function(p) sum(file.size(list.files(p, recursive = TRUE, full.names = TRUE, all.files = TRUE))), 0)
say("store sizes (MB): %s", paste(sprintf("%s %.0f", names(sizes), sizes / MB), collapse = ", "))

# ---------------------------------------------------------------- helpers
# median wall and cpu (user + system, all threads of this process and its children) seconds
timed <- function(fn) {
  fn()
  ts <- vapply(seq_len(reps), function(r) {
    invisible(gc(FALSE))
    d <- system.time(fn())
    c(d[["elapsed"]], sum(d[c("user.self", "sys.self", "user.child", "sys.child")], na.rm = TRUE))
  }, c(0, 0))
  list(s = stats::median(ts[1, ]), min_s = min(ts[1, ]), cpu_s = stats::median(ts[2, ]))
}
# the same with every element made an R integer during the read (the
# default keeps large uint16 results at their stored width, converting on use)
widened <- function(fn) { old <- options(zarr.compact_results = FALSE); on.exit(options(old)); timed(fn) }
PROBES <- rbind(c(0, 0, 0), c(1, 2, 3), c(300, 17, 255), c(1023, 1023, 255), c(700, 511, 128))
checksum <- function(x) {
  p <- pmin(PROBES, matrix(dim(x) - 1, nrow(PROBES), 3, byrow = TRUE)) + 1
  list(sum = sum(colSums(x, dims = 2)), probes = as.integer(x[p]))
}
same_check <- function(a, b) !is.null(a) && !is.null(b) && isTRUE(all.equal(as.numeric(a$sum), as.numeric(b$sum))) &&
  identical(as.integer(unlist(a$probes)), as.integer(unlist(b$probes)))
peak_mb <- function(fn) {
  invisible(gc(full = TRUE))
  before <- proc_status_kb("VmRSS")
  ok <- reset_hwm()
  x <- fn()
  hwm <- proc_status_kb("VmHWM")
  list(x = x, mb = if (ok) (hwm - before) * 1024 / MB else NA)
}
py <- function(...) {
  out <- suppressWarnings(system2(python, c(peers_py, ...), stdout = TRUE, stderr = FALSE))
  res <- tryCatch(jsonlite::fromJSON(out[length(out)], simplifyVector = FALSE), error = function(e) list(error = "no answer"))
  res
}
py_ok <- nzchar(Sys.which(python)) &&
  system2(python, c("-c", shQuote("import zarr, osgeo.gdal")), stdout = FALSE, stderr = FALSE) == 0
if (!py_ok) say("no Python with zarr 2 and GDAL at %s: the peer columns are empty", python)
rows <- list()
add <- function(id, what, tool, r, note = "") {
  rows[[length(rows) + 1L]] <<- data.frame(id = id, operation = what, tool = tool, s = r$s %||% NA_real_,
                                           min_s = r$min_s %||% NA_real_, cpu_s = r$cpu_s %||% NA_real_, peak_mb = r$peak_mb %||% NA_real_,
                                           same = r$same %||% NA, note = note, stringsAsFactors = FALSE)
  say("  %-15s %-12s %s%s", id, tool, if (is.null(r$s)) "n/a" else sprintf("%.3f s (cpu %.3f)", r$s, r$cpu_s %||% NA),
      if (nzchar(note)) paste0("  (", note, ")") else "")
}
peer_rows <- function(id, what, op, store, ..., ref = NULL, tools = c("zarr", "gdal"), note = "") {
  if (!py_ok) return(invisible())
  for (tool in tools) {
    r <- py(tool, op, store, "--reps", reps, ...)
    if (!is.null(r$error)) { add(id, what, paste0(tool, if (tool == "zarr") "-python" else ""), list(), substr(r$error, 1, 80)); next }
    if (!is.null(r$check)) r$same <- same_check(r$check, ref)
    add(id, what, paste0(tool, if (tool == "zarr") "-python" else ""), r, note)
  }
}
# two concurrent readers, each a fresh process reading every other 256^3 block
concurrent <- function(cmd_args, py = FALSE) {
  start <- as.numeric(Sys.time()) + 4
  ps <- lapply(0:1, function(k) {
    last <- c(sprintf("%d/2", k), sprintf("%.3f", start))
    if (py) last <- c("--part", last[1], "--start", last[2])
    processx::process$new(cmd_args[[1]], unlist(c(cmd_args[-1], last)), stdout = "|", stderr = "|")
  })
  for (p in ps) p$wait(600000)
  tt <- lapply(ps, function(p) {
    l <- grep("^SHARE|\"t0\"", p$read_all_output_lines(), value = TRUE)
    if (!length(l)) return(NULL)
    if (startsWith(l[1], "SHARE")) as.numeric(strsplit(l[1], " ")[[1]][2:3]) else {
      j <- jsonlite::fromJSON(l[1]); if (is.null(j$t0)) NULL else c(j$t0, j$t1)
    }
  })
  if (any(bad <- vapply(tt, is.null, TRUE))) {
    say("  a reader failed: %s", paste(tail(ps[[which(bad)[1]]]$read_all_error_lines(), 3), collapse = " | "))
    return(list())
  }
  list(s = max(vapply(tt, `[`, 0, 2)) - min(vapply(tt, `[`, 0, 1)))
}

unlink(outdir, recursive = TRUE)
dir.create(outdir)
labels <- c(none = "256^3 chunks, uncompressed", zstd = "256^3 chunks, zstd", shard = "256^3 shards of 64^3, zstd")
ref <- NULL

# ---------------------------------------------------------------- whole reads
for (lay in names(labels)) {
  id <- paste0("read_", lay)
  if (!want(id)) next
  what <- paste("whole read,", labels[[lay]])
  p <- stores[[lay]]
  r <- timed(function() arr_of(p)[, , ])
  pk <- peak_mb(function() arr_of(p)[, , ])
  r$peak_mb <- pk$mb
  chk <- checksum(pk$x)
  rm(pk)
  if (is.null(ref)) ref <- chk
  r$same <- same_check(chk, ref)
  add(id, what, "this package", r)
  add(id, what, "ours, widened", widened(function() arr_of(p)[, , ]),
      "zarr.compact_results = FALSE: every element made an R integer during the read")
  if (lay == "none") {
    files <- list.files(p, pattern = "^[0-9]", full.names = TRUE)
    rb <- timed(function() lapply(files, function(f) readBin(f, "raw", file.size(f))))
    rb$peak_mb <- peak_mb(function() lapply(files, function(f) readBin(f, "raw", file.size(f))))$mb
    add(id, what, "readBin", rb, "the chunk files' bytes as raw vectors, no transpose or widening")
  }
  if (lay == "zstd" && nzchar(Sys.which("zstd"))) {
    files <- list.files(p, pattern = "^[0-9]", full.names = TRUE)
    zs <- timed(function() system2("zstd", c("-q", "-d", "-c", "-T1", shQuote(files)), stdout = FALSE))
    add(id, what, "zstd -d -T1", zs, "zstd's own single-thread decode of the chunk files to /dev/null")
  }
  peer_rows(id, what, "read", if (lay == "shard") stores[["zstd64"]] else p, ref = ref,
            note = if (lay == "shard") "reads the zstd64 store: the same values as plain 64^3 chunks" else "")
  if (lay != "shard") {
    tr <- tryCatch({
      rt <- terra::rast(p)
      timed(function() terra::values(terra::rast(p)))
    }, error = function(e) list(err = conditionMessage(e)))
    add(id, what, "terra", tr, if (is.null(tr$err)) "" else paste("rast() fails:", substr(tr$err, 1, 60)))
  }
}

# ---------------------------------------------------------------- chunk by chunk
for (lay in names(labels)) {
  id1 <- paste0("chunks1_", lay); id2 <- paste0("chunks2_", lay)
  p <- stores[[lay]]
  pp <- if (lay == "shard") stores[["zstd"]] else p
  note <- if (lay == "shard") "peers read the zstd store's 256^3 chunks" else ""
  if (want(id1)) {
    a <- arr_of(p)
    bs <- block_starts(a$shape, 256)
    add(id1, paste("every 256^3 chunk, 1 reader,", labels[[lay]]), "this package",
        timed(function() for (b in seq_len(nrow(bs))) read_block(a, bs[b, ], 256)))
    add(id1, paste("every 256^3 chunk, 1 reader,", labels[[lay]]), "ours, widened",
        widened(function() for (b in seq_len(nrow(bs))) read_block(a, bs[b, ], 256)), "zarr.compact_results = FALSE")
    peer_rows(id1, paste("every 256^3 chunk, 1 reader,", labels[[lay]]), "chunks", pp, "--chunk", 256, note = note)
  }
  if (want(id2)) {
    what <- paste("every 256^3 chunk, 2 reader processes,", labels[[lay]])
    add(id2, what, "this package", concurrent(list(rscript, file.path(root, "bench", "zarr_benchmarks.R"), "--share", p)))
    if (py_ok) for (tool in c("zarr", "gdal"))
      add(id2, what, paste0(tool, if (tool == "zarr") "-python" else ""),
          concurrent(list(python, peers_py, tool, "share", pp, "--chunk", "256"), py = TRUE), note)
  }
}

# ---------------------------------------------------------------- every inner chunk
if (want("inner")) {
  what <- "every 64^3 inner chunk of the shards, one by one"
  a <- arr_of(stores[["shard"]])
  bs <- block_starts(a$shape, 64)
  add("inner", what, "this package", timed(function() for (b in seq_len(nrow(bs))) read_block(a, bs[b, ], 64)))
  add("inner", what, "ours, widened", widened(function() for (b in seq_len(nrow(bs))) read_block(a, bs[b, ], 64)),
      "zarr.compact_results = FALSE")
  peer_rows("inner", what, "chunks", stores[["zstd64"]], "--chunk", 64, note = "the zstd64 store: plain 64^3 chunks")
}

# ---------------------------------------------------------------- round trip
for (lay in c("none", "zstd", "shard")) {
  id <- paste0("roundtrip_", lay)
  if (!want(id)) next
  what <- paste("read all and write it again,", labels[[lay]])
  p <- stores[[lay]]
  src <- arr_of(p)
  n <- 0L
  r <- timed(function() {
    n <<- n + 1L
    x <- arr_of(p)[, , ]
    def <- define_array("uint16", shape)
    def$portable <- TRUE
    def$chunk_shape <- c(256, 256, 256)
    def$remove_codec("zstd")
    if (lay != "none") def$add_codec("zstd", list(level = 1)) # numcodecs' level 0 (see the top)
    if (lay == "shard") def$add_codec("sharding_indexed", list(chunk_shape = c(64, 64, 64)))
    else { old <- options(zarr.format = 2); on.exit(options(old)) }
    our_write_def(file.path(outdir, sprintf("r-%s-%d.zarr", lay, n)), x, def)
    unlink(file.path(outdir, sprintf("r-%s-%d.zarr", lay, n)), recursive = TRUE)
  })
  add(id, what, "this package", r, if (lay == "shard") "v3 C order" else "v2 C order")
  if (py_ok) {
    pr <- py("zarr", "roundtrip", if (lay == "shard") stores[["zstd64"]] else p, "--reps", reps,
             "--out", file.path(outdir, paste0("py-", lay)))
    add(id, what, "zarr-python", pr, if (!is.null(pr$error)) substr(pr$error, 1, 80) else
          if (lay == "shard") "the zstd64 layout" else "")
    unlink(list.files(outdir, pattern = paste0("^py-", lay), full.names = TRUE), recursive = TRUE)
  }
}

# ---------------------------------------------------------------- table
tab <- do.call(rbind, rows)
ours <- tab[tab$tool == "this package", c("id", "s", "cpu_s")]
tab$vs_ours <- tab$s / ours$s[match(tab$id, ours$id)]
tab$cpu_vs_ours <- tab$cpu_s / ours$cpu_s[match(tab$id, ours$id)]
utils::write.csv(transform(tab, s = signif(s, 4), min_s = signif(min_s, 4), cpu_s = signif(cpu_s, 4),
                           peak_mb = round(peak_mb), vs_ours = signif(vs_ours, 3), cpu_vs_ours = signif(cpu_vs_ours, 3)),
                 file.path(results_dir, "zarr_benchmarks.csv"), row.names = FALSE)
f_t <- function(x) ifelse(is.na(x), "n/a", sprintf("%.3f", x))
show <- data.frame(id = tab$id, tool = tab$tool, seconds = f_t(tab$s),
                   `time / ours` = ifelse(is.na(tab$vs_ours), "-", sprintf("%.2f", tab$vs_ours)),
                   cpu = f_t(tab$cpu_s), `cpu / ours` = ifelse(is.na(tab$cpu_vs_ours), "-", sprintf("%.2f", tab$cpu_vs_ours)),
                   `peak MB` = ifelse(is.na(tab$peak_mb), "-", sprintf("%.0f", tab$peak_mb)),
                   `same values` = ifelse(is.na(tab$same), "-", ifelse(tab$same, "yes", "NO")),
                   note = tab$note, check.names = FALSE)
cat("\n")
say("zarr_benchmarks workloads, %s uint16 (time / ours > 1: the peer is slower; cpu: user + system", paste(shape, collapse = " x "))
say("seconds of the process, all threads; 2-reader rows: wall from the first start to the last end, no cpu):")
local({ old <- options(width = 250); on.exit(options(old)); print(show, right = FALSE, row.names = FALSE) })
say("\noutput buffer: this package %.0f MB (R integers keeping the uint16 width; %.0f MB widened), the Python peers %.0f MB (uint16)",
    nbytes / MB, 2 * nbytes / MB, nbytes / MB)
say("load average: start %s, end %s (%d cores shared: compare ratios within this run)", load_start, loadavg(),
    parallel::detectCores())
say("wrote %s", file.path(results_dir, "zarr_benchmarks.csv"))
unlink(outdir, recursive = TRUE)
if (is_true(Sys.getenv("ZARR_BENCH_CLEAN", "false"))) {
  unlink(dir, recursive = TRUE)
  say("removed %s", dir)
} else say("stores kept in %s (ZARR_BENCH_CLEAN=true removes them)", dir)
say("total %.0f s", proc.time()[["elapsed"]] - t_start)
