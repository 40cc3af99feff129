# Per-call latency: this package beside zarr-python 2 in the same run (issue
# 21, items 1 and 5). Three targets:
#   open_one_*   open a store and read one element (a v2 array at the root,
#                opened by its path; a v2 group, then its array by name)
#   first_read   `[i, j]` of an array opened just before (its parts are made
#                on first use; `later_read`: a second read of each)
#   sel_3x3      `[` of a 3 x 3 block from an array opened once (100 x 100
#                float64, one chunk, zstd as issue 27 measured it; `_raw`:
#                uncompressed, where zarr-python 2 decodes nothing either)
#   create_500   create 500 arrays (20 groups of 25) in a new local store
#   set_attr_*   set one attribute of one array in a consolidated 500-array
#                store, the node looked up by path each time (store opened
#                once; `_open`: opened each time too)
#
# usage (from the repository root): Rscript bench/latency.R
# Environment: ZARR_BENCH_LIB (library holding our zarr, as bench/run.R),
# ZARR_BENCH_PYTHON (interpreter with zarr 2.x; default /usr/bin/python3 or
# python3), ZARR_BENCH_REPS (timed repetitions, 7), ZARR_BENCH_DIR (work dir),
# ZARR_BENCH_ONLY (regular expression: only the rows whose id matches).
# Each repetition loops the operation for at least 0.2 s (both sides); the
# table shows the median time per call of the repetitions, wall and CPU, and
# ours / zarr-python. zarr-python runs in a subprocess (bench/latency.py)
# right after our repetitions of the same row. Without zarr-python the
# python columns are NA.

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_path <- load_our_zarr(bench_our_lib(root))
reps <- max(3L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "7")))
min_time <- 0.2
only <- Sys.getenv("ZARR_BENCH_ONLY", "")

py <- Sys.getenv("ZARR_BENCH_PYTHON", "")
if (!nzchar(py)) {
  for (cand in unique(c("/usr/bin/python3", Sys.which("python3")))) {
    v <- tryCatch(suppressWarnings(system2(cand, c("-c", shQuote("import zarr; print(zarr.__version__)")),
                                           stdout = TRUE, stderr = FALSE)), error = function(e) character())
    if (is.null(attr(v, "status")) && length(v) && grepl("^2\\.", v[length(v)])) { py <- cand; break }
  }
}

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
if (!nzchar(workdir)) workdir <- tempfile("zarr-latency-")
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
on.exit(unlink(workdir, recursive = TRUE), add = TRUE)
p <- function(...) file.path(workdir, ...)

# ---------------------------------------------------------------- fixtures (ours, v2: both can read them)
old <- options(zarr.format = 2)
x <- matrix(as.double(seq_len(400 * 300)), 400, 300)
def2 <- function(shape, chunks) {
  d <- define_array("float64", shape)
  d$chunk_shape <- chunks
  d$remove_codec("zstd")
  d$add_codec("zstd", list(level = 1))
  d
}
a <- as_zarr(x, location = p("root_array.zarr"))                 # a root array
small <- matrix(as.double(seq_len(100 * 100)), 100, 100)
as_zarr(small, location = p("small.zarr"))                        # one 100 x 100 chunk
local({ # the same, uncompressed (zarr-python reads it without decoding), in a group
  d <- define_array("float64", dim(small))
  d$chunk_shape <- dim(small)
  d$remove_codec("zstd")
  create_zarr(p("small_raw.zarr"))$add_array("/", "a", d)$write(small)
})
z <- create_zarr(p("group.zarr"))
z$add_array("/", "a", def2(dim(x), c(100, 100)))$write(x)          # a group holding "a"
tree_meta <- list(groups = 20L, arrays = 25L, shape = c(100L, 100L), chunks = c(10L, 10L), node = "g10/a13")
make_tree <- function(path, format = 2L) {
  withr_opts <- options(zarr.format = format)
  on.exit(options(withr_opts))
  z <- create_zarr(path)
  d <- def2(tree_meta$shape, tree_meta$chunks)
  for (g in seq_len(tree_meta$groups)) {
    z$add_group("/", paste0("g", g))
    for (k in seq_len(tree_meta$arrays)) z$add_array(paste0("/g", g), paste0("a", k), d)
  }
  invisible(z)
}
make_tree(p("tree.zarr"))
zarr_consolidate(open_zarr(p("tree.zarr")))
make_tree(p("tree3.zarr"), 3L)
zarr_consolidate(open_zarr(p("tree3.zarr")))
invisible(system2("cp", c("-a", shQuote(p("tree.zarr")), shQuote(p("tree_py.zarr")))))
options(old)
I <- 123L; J <- 45L  # the element read (1-based); zarr-python reads [I-1, J-1]

# ---------------------------------------------------------------- timing
# Median seconds per call over `reps` repetitions, each looping `fn` for at
# least min_time seconds (the loop count fixed by a warm-up). The garbage of
# the rows before is collected first (as zarr-python's rows start in a
# process of their own): the 3,500 arrays the read rows open made the
# small reads after them a third slower.
timed <- function(fn, per_call = 1) {
  invisible(gc(FALSE))
  fn(0L)
  t0 <- proc.time()[["elapsed"]]; k <- 0L
  while (proc.time()[["elapsed"]] - t0 < min_time / 4) { k <- k + 1L; fn(k) }
  calls <- max(1L, ceiling(k * 4 * min_time / max(1e-9, proc.time()[["elapsed"]] - t0) / 4))
  wall <- cpu <- numeric(reps)
  n <- 1000L
  for (r in seq_len(reps)) {
    t <- proc.time()
    for (j in seq_len(calls)) { fn(n); n <- n + 1L }
    d <- proc.time() - t
    wall[r] <- d[["elapsed"]] / calls / per_call
    cpu[r] <- (d[["user.self"]] + d[["sys.self"]]) / calls / per_call
  }
  c(wall = stats::median(wall), cpu = stats::median(cpu))
}

py_row <- function(id) {
  if (!nzchar(py)) return(c(wall = NA, cpu = NA))
  out <- suppressWarnings(system2(py, c(shQuote(file.path(here, "latency.py")), id, shQuote(workdir), reps, min_time),
                                  stdout = TRUE, stderr = FALSE))
  v <- tryCatch(jsonlite::fromJSON(out[length(out)]), error = function(e) NULL)
  if (is.null(v)) return(c(wall = NA, cpu = NA))
  c(wall = v$wall, cpu = v$cpu)
}

rows <- list()
# zarr-python's time of a row already run (a v3 row is compared with its v2 row)
py_of <- function(id) {
  r <- rows[[id]]
  if (is.null(r)) return(py_row(id))
  c(wall = r$python_ms, cpu = r$python_cpu_ms) / 1e3
}
row <- function(id, what, ours, python = py_row(id)) {
  if (nzchar(only) && !grepl(only, id)) return(invisible())
  rows[[id]] <<- data.frame(id = id, what = what, ours_ms = 1e3 * ours[["wall"]], ours_cpu_ms = 1e3 * ours[["cpu"]],
                            python_ms = 1e3 * python[["wall"]], python_cpu_ms = 1e3 * python[["cpu"]],
                            ratio = ours[["wall"]] / python[["wall"]], cpu_ratio = ours[["cpu"]] / python[["cpu"]])
  say("  %-16s ours %9.3f ms (cpu %9.3f)   zarr-python %9.3f ms (cpu %9.3f)   ratio %6.2f", id,
      1e3 * ours[["wall"]], 1e3 * ours[["cpu"]], 1e3 * python[["wall"]], 1e3 * python[["cpu"]], ours[["wall"]] / python[["wall"]])
}

say("zarr %s from %s; %s; zarr-python via %s", utils::packageVersion("zarr"), our_path, R.version.string,
    if (nzchar(py)) py else "(none)")
say("load average at start: %s", paste(readLines("/proc/loadavg"), collapse = " "))
stopifnot(identical(open_zarr(p("root_array.zarr"))$root[I, J], x[I, J]),
          identical(open_zarr(p("group.zarr"))[["/a"]][I, J], x[I, J]))

row("open_one_root", "open_zarr(path)$root[i, j] (v2 root array)",
    timed(function(n) open_zarr(p("root_array.zarr"))$root[I, J]))
row("open_one_group", "open_zarr(path)[[\"/a\"]][i, j] (v2 group)",
    timed(function(n) open_zarr(p("group.zarr"))[["/a"]][I, J]))
row("open_node", "open_zarr(path)[[\"/a\"]], no read (v2 group)",
    timed(function(n) open_zarr(p("group.zarr"))[["/a"]]))
# Arrays opened beforehand (not timed), then [i, j] of each: its first read,
# or (`later`) a read after one already made.
timed_reads <- function(later, k = 500L) {
  wall <- cpu <- numeric(reps)
  for (r in seq_len(reps)) {
    arrs <- lapply(seq_len(k), function(n) open_zarr(p("group.zarr"))[["/a"]])
    if (later) for (b in arrs) b[I, J]
    t <- proc.time()
    for (b in arrs) b[I, J]
    d <- proc.time() - t
    wall[r] <- d[["elapsed"]] / k
    cpu[r] <- (d[["user.self"]] + d[["sys.self"]]) / k
  }
  c(wall = stats::median(wall), cpu = stats::median(cpu))
}
row("first_read", "[i, j] of an array just opened (v2 group; 500 opened first)", timed_reads(FALSE))
row("later_read", "the same, the arrays having read once", timed_reads(TRUE))
a_open <- open_zarr(p("small.zarr"))$root
stopifnot(identical(a_open[1:3, 1:3], small[1:3, 1:3]))
row("sel_3x3", "a[1:3, 1:3] of an array opened once (v2, 100 x 100, one chunk)",
    timed(function(n) a_open[1:3, 1:3]))
a_raw <- open_zarr(p("small_raw.zarr"))[["/a"]]
stopifnot(identical(a_raw[1:3, 1:3], small[1:3, 1:3]))
row("sel_3x3_raw", "the same, uncompressed",
    timed(function(n) a_raw[1:3, 1:3]))
row("create_500", "500 arrays (20 groups x 25) in a new v2 store, per store",
    timed(function(n) { d <- p(sprintf("new-%d.zarr", n)); make_tree(d); unlink(d, recursive = TRUE) }))
row("create_500_v3", "the same in a v3 store (zarr-python: v2)",
    timed(function(n) { d <- p(sprintf("new3-%d.zarr", n)); make_tree(d, 3L); unlink(d, recursive = TRUE) }),
    python = py_of("create_500"))
zt <- open_zarr(p("tree.zarr"))
node_path <- paste0("/", tree_meta$node)
row("set_attr", "z[[path]]$set_attribute() in a consolidated 500-array v2 store",
    timed(function(n) zt[[node_path]]$set_attribute("bench", n)))
zt3 <- open_zarr(p("tree3.zarr"))
row("set_attr_v3", "the same in a v3 store (zarr-python: v2)",
    timed(function(n) zt3[[node_path]]$set_attribute("bench", n)),
    python = py_of("set_attr"))
row("set_attr_open", "open_zarr(path)[[path]]$set_attribute() (opened each time), v2",
    timed(function(n) open_zarr(p("tree.zarr"))[[node_path]]$set_attribute("bench", n)))
if (!is.null(rows$set_attr)) { # the consolidated copy has the attribute
  zm <- jsonlite::fromJSON(p("tree.zarr", ".zmetadata"), simplifyVector = FALSE)
  stopifnot(is.numeric(zm$metadata[[paste0(tree_meta$node, "/.zattrs")]]$bench))
}

tab <- do.call(rbind, rows)
rownames(tab) <- NULL
say("\nload average at end: %s", paste(readLines("/proc/loadavg"), collapse = " "))
say("median time per call, ms (create_500: per store of 500 arrays); ratio = ours / zarr-python (wall)")
local({ old <- options(width = 250, digits = 3); on.exit(options(old)); print(tab, row.names = FALSE) })
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(tab, file.path(root, "bench", "results", "latency.csv"), row.names = FALSE)
