# Icechunk benchmark: a sharded array read through an Icechunk repository
# against the very same array as a plain Zarr store, on local disk and over
# HTTP with added latency. The package writes the plain store; the official
# Icechunk implementation (tools/icechunk/import_store.mjs) copies it byte
# for byte into a repository (spec 2), whose shards become native chunks.
# Each Icechunk row's baseline is the plain store in the same place, timed in
# the same run: the ratio is what the repository's indirection (repo object,
# snapshot, manifest) costs.
#
# usage (from the repository root): Rscript bench/icechunk.R   (bash bench/run.sh runs it too)
# Needs node, processx, gcc and @earthmover/icechunk in tools/icechunk
# (tools/setup.sh), and a zarr with Icechunk support; says why and exits
# with status 0 without them.
# Environment: ZARR_BENCH_LIB, ZARR_BENCH_REPS (5), ZARR_BENCH_DIR.
# Output: the table on stdout and bench/results/icechunk.csv.

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_path <- load_our_zarr(bench_our_lib(root))
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "5")))
skip_bench <- function(why) {
  say("bench/icechunk.R: skipped: %s", why)
  quit(save = "no", status = 0)
}

if (!exists("zarr_icechunkstore", envir = asNamespace("zarr"), inherits = FALSE))
  skip_bench(sprintf("zarr %s (%s) has no Icechunk support", utils::packageVersion("zarr"), our_path))
if (!nzchar(Sys.which("node")) || !requireNamespace("processx", quietly = TRUE))
  skip_bench("node and the processx package are needed")
tool <- file.path(root, "tools", "icechunk")
if (!file.exists(file.path(tool, "node_modules", "@earthmover", "icechunk", "index.js")))
  skip_bench("@earthmover/icechunk is not installed in tools/icechunk (tools/setup.sh installs it)")

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
own_workdir <- !nzchar(workdir)
if (own_workdir) workdir <- tempfile("zarr-bench-icechunk-")
workdir <- file.path(workdir, "icechunk")
unlink(workdir, recursive = TRUE)
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
say("zarr %s from %s; %d cores; load average %s; %d timed repetitions after a warm-up, medians",
    utils::packageVersion("zarr"), our_path, parallel::detectCores(), loadavg(), reps)

# ---------------------------------------------------------------- the data
# 2048 x 2048 float64 (32 MB), shards 512 x 512 (16), inner chunks 64 x 64
# (64 per shard), zstd-1; chunk keys with "/", as Icechunk requires.
t0 <- proc.time()[["elapsed"]]
set.seed(71)
x <- matrix(cumsum(stats::rnorm(2048 * 2048)), 2048, 2048)
plain <- file.path(workdir, "plain.zarr")
repo <- file.path(workdir, "repo")
d <- define_array("float64", dim(x))
d$chunk_shape <- c(512, 512)
d$add_codec("sharding_indexed", list(chunk_shape = c(64, 64)))
meta <- d$metadata()
meta$chunk_key_encoding <- list(name = "default", configuration = list(separator = "/"))
create_zarr(plain)$add_array("/", "a", meta)$write(x)
imp <- processx::run("bash", c(file.path(tool, "run.sh"), "import_store.mjs", plain, repo),
                     error_on_status = FALSE, timeout = 300)
if (imp$status == 3L) skip_bench(paste("the Icechunk native module does not load:", trimws(imp$stderr)))
if (imp$status != 0L) stop("tools/icechunk/import_store.mjs failed: ", imp$stderr)
imported <- jsonlite::fromJSON(imp$stdout)
invisible(system2("sync"))
say("plain store and repository (%d native chunk objects) written in %.1f s",
    imported$native_chunk_objects, proc.time()[["elapsed"]] - t0)

# ---------------------------------------------------------------- the server
server <- start_test_server(workdir, root)
if (is.null(server$process)) stop("the test server did not start: ", server$why)
srv <- server$process
base_url <- server$url
control <- server$control
where <- function(name, latency) {
  if (is.na(latency)) file.path(workdir, name)
  else paste0(base_url, if (latency > 0) sprintf("/latency=%d", latency), "/", name)
}

# ---------------------------------------------------------------- timing
# median seconds of fn() over `reps` runs after a warm-up whose result is
# checked against `want`; the server's requests and bytes of the last run.
measure <- function(fn, want, http) {
  tryCatch({
    v <- fn()
    valid <- same_values(v, want)
    rm(v)
    ts <- numeric(reps)
    for (i in seq_len(reps)) {
      invisible(gc(FALSE))
      if (http) control("reset")
      t0 <- proc.time()[["elapsed"]]
      fn()
      ts[i] <- proc.time()[["elapsed"]] - t0
    }
    st <- if (http) control("stats") else list(requests = NA, bytes = NA)
    list(s = stats::median(ts), requests = st$requests, bytes = st$bytes, valid = valid, error = NA_character_)
  }, error = function(e) list(s = NA_real_, requests = NA, bytes = NA, valid = NA, error = conditionMessage(e)))
}

# W2-like blocks: 20 unaligned 100 x 100 blocks at fixed positions
set.seed(72)
blocks <- cbind(sample.int(2048 - 99, 20), sample.int(2048 - 99, 20))
read_blocks <- function(a) lapply(seq_len(nrow(blocks)), function(k) {
  i <- blocks[k, 1]
  j <- blocks[k, 2]
  a[i:(i + 99), j:(j + 99)]
})
want_blocks <- read_blocks(x)

# the repository opened as one explicitly (branch "main"), the plain store as usual
open_at <- function(loc) if (basename(loc) == "repo") open_zarr(loc, branch = "main") else open_zarr(loc)
ops <- list(
  list(id = "all", what = "open + read [, ] (32 MB, 16 shards)", want = x,
       fn = function(loc) function() open_at(loc)[["/a"]][, ]),
  list(id = "blocks", what = "20 unaligned 100x100 blocks, array opened beforehand", want = want_blocks,
       fn = function(loc) { a <- open_at(loc)[["/a"]]; function() read_blocks(a) }),
  list(id = "one", what = "open + read one element", want = x[1000, 1000],
       fn = function(loc) function() open_at(loc)[["/a"]][1000, 1000])
)
places <- list(list(id = "local", what = "local disk", latency = NA),
               list(id = "http0", what = "HTTP, 0 ms", latency = 0),
               list(id = "http20", what = "HTTP, 20 ms per request", latency = 20))

rows <- list()
fmt <- function(v) ifelse(is.na(v), "-", sprintf("%.3f", v))
say("\n%-13s %-52s %-24s %10s %10s %7s %9s %9s", "id", "operation", "where", "icechunk s", "plain s", "ratio",
    "requests", "plain req")
for (op in ops) for (pl in places) {
  http <- !is.na(pl$latency)
  p <- measure(op$fn(where("plain.zarr", pl$latency)), op$want, http)
  ic <- measure(op$fn(where("repo", pl$latency)), op$want, http)
  r <- data.frame(id = paste0("i_", op$id, "_", pl$id), operation = op$what, where = pl$what,
                  icechunk_s = ic$s, plain_s = p$s, ratio = ic$s / p$s,
                  requests = as.numeric(ic$requests %||% NA), plain_requests = as.numeric(p$requests %||% NA),
                  mb = as.numeric(ic$bytes %||% NA) / MB, plain_mb = as.numeric(p$bytes %||% NA) / MB,
                  valid = if (is.na(ic$valid) || is.na(p$valid)) NA else ic$valid && p$valid,
                  notes = paste(na.omit(c(if (!is.na(ic$error)) paste("icechunk:", ic$error),
                                          if (!is.na(p$error)) paste("plain:", p$error))), collapse = "; "),
                  stringsAsFactors = FALSE)
  rows[[length(rows) + 1L]] <- r
  say("%-13s %-52s %-24s %10s %10s %7s %9s %9s%s%s", paste0(op$id, "_", pl$id), op$what, pl$what, fmt(r$icechunk_s),
      fmt(r$plain_s), fmt(r$ratio), format(r$requests), format(r$plain_requests),
      if (isFALSE(r$valid)) "  [values differ]" else "", if (nzchar(r$notes)) paste0("  [", r$notes, "]") else "")
}
rows <- do.call(rbind, rows)
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(rows, file.path(root, "bench", "results", "icechunk.csv"), row.names = FALSE)
say("\nload average at the end %s; bench/results/icechunk.csv", loadavg())
invisible(srv$kill())
if (own_workdir) unlink(dirname(workdir), recursive = TRUE)
