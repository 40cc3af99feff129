# Benchmarks of our zarr package against base R (writeBin / readBin / seek)
# and, when installed in bench/lib, the CRAN 'zarr' package.
#
# usage (from the repository root): Rscript bench/run.R     (or bash bench/run.sh)
# See bench/README.md. Environment:
#   ZARR_BENCH_LIB     library holding our zarr (default: .lib/ when it has
#                      zarr, else whatever library(zarr) finds)
#   ZARR_BENCH_REPS    timed repetitions per operation, after a warm-up (5)
#   ZARR_BENCH_REPS_FAST  the same for operations under 0.3 s (11)
#   ZARR_BENCH_RSS     false: skip the peak RSS subprocesses
#   ZARR_BENCH_CRAN    false: skip the CRAN zarr comparison
#   ZARR_BENCH_CRAN_TIMEOUT  seconds allowed to the CRAN process (900)
#   ZARR_BENCH_ONLY    regular expression: only the operations whose id matches
#   ZARR_BENCH_DIR     work directory for the stores (default: a new temporary
#                      directory, removed at the end); must be on a real disk
#                      to measure file input/output
# Output: the table on stdout and bench/results/results.csv.

t_start <- proc.time()[["elapsed"]]
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_lib <- bench_our_lib(root)
our_path <- load_our_zarr(our_lib)

is_false <- function(x) tolower(x) %in% c("false", "0", "no")
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "5")))
reps_fast <- max(reps, as.integer(Sys.getenv("ZARR_BENCH_REPS_FAST", "11")))
fast_rep <- 0.3    # operations whose repetition takes less (both sides) get reps_fast
do_rss <- !is_false(Sys.getenv("ZARR_BENCH_RSS", "true"))
do_cran <- !is_false(Sys.getenv("ZARR_BENCH_CRAN", "true"))
cran_timeout <- as.numeric(Sys.getenv("ZARR_BENCH_CRAN_TIMEOUT", "900"))
only <- Sys.getenv("ZARR_BENCH_ONLY", "")
min_time <- 0.05   # a timed repetition of a fast operation loops until >= 50 ms
rscript <- file.path(R.home("bin"), "Rscript")

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
own_workdir <- !nzchar(workdir)
if (own_workdir) workdir <- tempfile("zarr-bench-")
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
# (a temporary work dir is inside tempdir(), which R removes at exit anyway)
results_dir <- file.path(root, "bench", "results")
dir.create(results_dir, recursive = TRUE, showWarnings = FALSE)

sh1 <- function(cmd, args) tryCatch(suppressWarnings(system2(cmd, args, stdout = TRUE, stderr = FALSE))[1],
                                    error = function(e) NA_character_)
fs_type <- sh1("stat", c("-f", "-c", "%T", shQuote(workdir)))
n_cores <- parallel::detectCores()
def_threads <- tryCatch(zarr:::zarr_num_threads(), error = function(e) NA)
cpu_model <- tryCatch(sub(".*: ", "", grep("^model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
                      error = function(e) NA)
say("zarr %s from %s", utils::packageVersion("zarr"), our_path)
say("%s; %s; %d cores (%s); default zarr.num_threads = %s",
    R.version.string, sh1("uname", c("-sr")), n_cores, cpu_model, def_threads)
load_start <- loadavg()
say("work dir %s (%s); %d timed repetitions after a warm-up (%d for operations under %.1f s); medians",
    workdir, fs_type, reps, reps_fast, fast_rep)
say("load average at start: %s (other processes on the machine make the timings noisy)", load_start)
if (fs_type %in% c("tmpfs", "ramfs"))
  say("NOTE: the work dir is in memory (%s): file input/output costs are not measured; set ZARR_BENCH_DIR", fs_type)

# ---------------------------------------------------------------- fixtures
t0 <- proc.time()[["elapsed"]]
fx <- make_fixtures(workdir)
invisible(system2("sync"))
say("fixtures written in %.1f s", proc.time()[["elapsed"]] - t0)
ops <- make_ops(fx)
if (nzchar(only)) ops <- ops[grepl(only, names(ops))]

# ---------------------------------------------------------------- timings
outdir <- file.path(workdir, "out")
dir.create(outdir, showWarnings = FALSE)
counter <- 0L
time_op <- function(op) {
  run <- function(side, k) {
    outs <- character(k)
    for (i in seq_len(k)) {
      counter <<- counter + 1L
      outs[i] <- file.path(outdir, sprintf("%s-%d%s", side, counter, if (side == "zarr") ".zarr" else ".bin"))
    }
    fn <- op[[side]]
    invisible(gc(FALSE))
    t0 <- proc.time()
    for (i in seq_len(k)) fn(outs[i])
    d <- proc.time() - t0
    c(elapsed = d[["elapsed"]] / k, cpu = (d[["user.self"]] + d[["sys.self"]]) / k)
  }
  if (!is.null(op$open)) {
    op$open()
    on.exit(op$close())
  }
  for (inp in c(op$input, op$base_input)) invisible(get_data(inp))
  # warm-up; it also sets how many calls make one timed repetition
  w <- c(zarr = run("zarr", 1L)[["elapsed"]], base = run("base", 1L)[["elapsed"]])
  k <- pmax(1L, pmin(1000L, as.integer(ceiling(min_time / pmax(w, 1e-6)))))
  names(k) <- names(w)
  # fast operations get more repetitions (cheap, and steadier medians)
  n_rep <- if (max(w * k) < fast_rep) reps_fast else reps
  m <- list(zarr = NULL, base = NULL)
  for (r in seq_len(n_rep)) for (s in c("zarr", "base"))  # interleaved
    m[[s]] <- rbind(m[[s]], run(s, k[[s]]))
  # Written stores stay until all timings are done: on this kind of file
  # system (ext4 without a journal) files deleted in the last ~30 s make
  # creating new ones several times slower, which would penalise whichever
  # write comes next. sync (untimed) so that no write-back of this operation's
  # data runs during the next one.
  if (op$kind == "write") invisible(system2("sync"))
  valid <- if (op$kind == "write") NA else same_values(op$zarr(NULL), op$expect())
  data.frame(id = op$id, reps = n_rep, load1 = as.numeric(sub(" .*", "", loadavg())),
             calls_zarr = k[["zarr"]], calls_base = k[["base"]],
             zarr_s = stats::median(m$zarr[, "elapsed"]), zarr_min_s = min(m$zarr[, "elapsed"]),
             zarr_cpu_s = stats::median(m$zarr[, "cpu"]),
             base_s = stats::median(m$base[, "elapsed"]), base_min_s = min(m$base[, "elapsed"]),
             base_cpu_s = stats::median(m$base[, "cpu"]), valid = valid)
}

say("\ntimings (zarr vs base R, medians):")
tim <- list()
for (op in ops) {
  tim[[op$id]] <- time_op(op)
  tt <- tim[[op$id]]
  say("  %-10s %-36s zarr %8.4f s (cpu %7.4f)  %-20s %8.4f s%s", op$id, op$operation, tt$zarr_s,
      tt$zarr_cpu_s, op$baseline, tt$base_s, if (isFALSE(tt$valid)) "  WRONG RESULT" else "")
}
tim <- do.call(rbind, tim)

# ---------------------------------------------------------------- CRAN zarr
cran <- NULL
cran_status <- "skipped (ZARR_BENCH_CRAN=false)"
if (do_cran) {
  cran_lib <- file.path(root, "bench", "lib")
  d <- file.path(cran_lib, "zarr", "DESCRIPTION")
  if (!file.exists(d) || !identical(unname(read.dcf(d)[1, "Repository"]), "CRAN")) {
    cran_status <- "not available (not installed in bench/lib: Rscript bench/setup-cran-zarr.R)"
  } else {
    say("\nCRAN zarr %s from %s: each operation once", read.dcf(d)[1, "Version"], cran_lib)
    rds <- file.path(workdir, "cran.rds")
    t0 <- proc.time()[["elapsed"]]
    st <- tryCatch(system2(rscript, c(shQuote(file.path(root, "bench", "cran.R")), shQuote(workdir), shQuote(rds)),
                           env = "R_LIBS=", timeout = cran_timeout),
                   error = function(e) -1L)
    if (file.exists(rds)) {
      cran <- readRDS(rds)
      cran_status <- sprintf("CRAN zarr %s%s", attr(cran, "version"),
                             if (nzchar(attr(cran, "note"))) paste0(" (", attr(cran, "note"), ")") else "")
    } else {
      cran_status <- sprintf("not available (the CRAN zarr process failed, status %s, after %.0f s)",
                             st, proc.time()[["elapsed"]] - t0)
    }
  }
}

unlink(outdir, recursive = TRUE)  # the timings' stores, kept until now (see time_op)

# ---------------------------------------------------------------- peak RSS
worker <- file.path(root, "bench", "worker.R")
run_worker <- function(id, side) {
  out <- tryCatch(suppressWarnings(system2(rscript, c(shQuote(worker), id, side, shQuote(workdir)),
                                           stdout = TRUE, stderr = TRUE,
                                           env = paste0("ZARR_BENCH_LIB=", shQuote(our_lib)))),
                  error = function(e) conditionMessage(e))
  l <- grep("^RSS ", out, value = TRUE)
  if (!length(l)) {
    say("  worker %s %s failed: %s", id, side, paste(utils::tail(out, 3), collapse = " | "))
    return(c(hwm = NA, pre = NA, reset = NA, valid = NA))
  }
  f <- strsplit(l[1], " ")[[1]]
  c(hwm = as.numeric(f[2]), pre = as.numeric(f[3]), reset = as.logical(f[4]), valid = as.logical(f[5]))
}
rss <- NULL
if (do_rss) {
  say("\npeak RSS: one fresh R process per operation and side")
  none <- sapply(1:3, function(i) run_worker("none", "zarr")[["hwm"]])
  base_hwm <- stats::median(none)
  say("  baseline (fresh R + zarr loaded and warmed up): VmHWM %.1f MB (runs: %s)", base_hwm * 1024 / MB,
      paste(sprintf("%.1f", none * 1024 / MB), collapse = ", "))
  rss <- do.call(rbind, lapply(Filter(function(op) !isTRUE(op$no_rss), ops), function(op) {
    z <- run_worker(op$id, "zarr"); b <- run_worker(op$id, "base")
    r <- data.frame(id = op$id, rss_mb = (z[["hwm"]] - base_hwm) * 1024 / MB,
                    base_rss_mb = (b[["hwm"]] - base_hwm) * 1024 / MB,
                    rss_hwm_reset = isTRUE(as.logical(z[["reset"]])), rss_valid = as.logical(z[["valid"]]))
    say("  %-10s zarr %7.1f MB  base %7.1f MB", op$id, r$rss_mb, r$base_rss_mb)
    r
  }))
}

# ---------------------------------------------------------------- table
rows <- list()
row <- function(...) rows[[length(rows) + 1L]] <<- data.frame(..., stringsAsFactors = FALSE)
fmt_target <- function(t) if (is.null(t)) "" else t$text
for (op in ops) {
  tt <- tim[tim$id == op$id, ]
  r <- if (is.null(rss) || !op$id %in% rss$id) NULL else rss[rss$id == op$id, ]
  ratio <- tt$zarr_s / tt$base_s
  rss_mb <- if (is.null(r)) NA_real_ else r$rss_mb
  row(id = op$id, workload = op$workload, operation = op$operation, baseline = op$baseline,
      threads = if (is.null(op$threads)) paste0("default (", def_threads, ")") else as.character(op$threads),
      reps = tt$reps, load1 = tt$load1, calls_per_rep = tt$calls_zarr, zarr_s = tt$zarr_s, zarr_min_s = tt$zarr_min_s, zarr_cpu_s = tt$zarr_cpu_s,
      base_s = tt$base_s, base_cpu_s = tt$base_cpu_s, ratio = ratio,
      target = fmt_target(op$target), target_max_ratio = if (is.null(op$target)) NA else op$target$max,
      result_mb = op$bytes / MB, rss_mb = rss_mb, rss_per_result = rss_mb * MB / op$bytes,
      base_rss_mb = if (is.null(r)) NA_real_ else r$base_rss_mb,
      rss_target = if (op$kind == "read" && !isTRUE(op$no_rss)) "<= 1.5x result" else "",
      rss_target_max = if (op$kind == "read" && !isTRUE(op$no_rss)) 1.5 else NA,
      valid = tt$valid)
}
derived <- function(id, workload, operation, baseline, z_s, z_cpu, b_s, b_cpu, target = NULL, note = "") {
  row(id = id, workload = workload, operation = operation, baseline = baseline, threads = "",
      reps = NA, load1 = NA, calls_per_rep = NA, zarr_s = z_s, zarr_min_s = NA, zarr_cpu_s = z_cpu, base_s = b_s, base_cpu_s = b_cpu,
      ratio = z_s / b_s, target = fmt_target(target),
      target_max_ratio = if (is.null(target)) NA else target$max, result_mb = NA, rss_mb = NA,
      rss_per_result = NA, base_rss_mb = NA, rss_target = "", rss_target_max = NA, valid = NA)
}
g <- function(id, col) if (id %in% tim$id) tim[tim$id == id, col] else NA_real_
for (k in c("read", "write")) {
  if (all(paste0("w5_", k, "_t", 1:2) %in% tim$id))
    derived(paste0("w5_", k, "_speedup"), "W5", sprintf("%s zstd: 2 threads vs 1", k), "1 thread",
            g(paste0("w5_", k, "_t2"), "zarr_s"), g(paste0("w5_", k, "_t2"), "zarr_cpu_s"),
            g(paste0("w5_", k, "_t1"), "zarr_s"), g(paste0("w5_", k, "_t1"), "zarr_cpu_s"),
            target = if (k == "read") list(max = 1 / 1.6, text = "2 thr >= 1.6x faster") else NULL)
}
for (id in c("w1_write", "w1_read", "w4_write", "w4_read")) {
  if (!id %in% tim$id) next
  wl <- toupper(substr(id, 1, 2)); k <- sub(".*_", "", id)
  tg <- if (k == "read") list(max = 0.01, text = ">= 100x faster") else NULL
  if (!is.null(cran) && id %in% cran$id && is.na(cran$error[cran$id == id])) {
    cr <- cran[cran$id == id, ]
    derived(paste0(id, "_vs_cran"), wl, paste(k, "vs CRAN zarr (1 run)"), "CRAN zarr",
            g(id, "zarr_s"), g(id, "zarr_cpu_s"), cr$elapsed, cr$cpu, target = tg)
    rows[[length(rows)]]$base_rss_mb <- cr$rss_mb
    rows[[length(rows)]]$valid <- cr$valid
  } else {
    why <- if (!is.null(cran) && id %in% cran$id) paste("CRAN zarr failed:", cran$error[cran$id == id]) else
      paste("CRAN zarr", cran_status)
    derived(paste0(id, "_vs_cran"), wl, paste(k, "vs CRAN zarr"), "CRAN zarr: not available",
            g(id, "zarr_s"), g(id, "zarr_cpu_s"), NA_real_, NA_real_, target = tg)
    rows[[length(rows)]]$notes <- why
  }
}
res <- do.call(rbind, lapply(rows, function(r) { if (is.null(r$notes)) r$notes <- ""; r }))
res$target_met <- ifelse(is.na(res$target_max_ratio), "",
                         ifelse(is.na(res$ratio), "n/a", ifelse(res$ratio <= res$target_max_ratio, "met", "MISSED")))
res$rss_target_met <- ifelse(is.na(res$rss_target_max), "",
                             ifelse(is.na(res$rss_per_result), "n/a",
                                    ifelse(res$rss_per_result <= res$rss_target_max, "met", "MISSED")))
res$target_max_ratio <- NULL
res$rss_target_max <- NULL
num <- vapply(res, is.double, TRUE)
res_csv <- res
res_csv[num] <- lapply(res[num], signif, digits = 5)
utils::write.csv(res_csv, file.path(results_dir, "results.csv"), row.names = FALSE)

# printed table
f_s <- function(x) ifelse(is.na(x), "-", ifelse(x >= 100, sprintf("%.0f", x), ifelse(x >= 0.01, sprintf("%.3f", x),
                                                                                    sprintf("%.2e", x))))
f_r <- function(x) ifelse(is.na(x), "-", ifelse(x >= 10, sprintf("%.1f", x), sprintf("%.2f", x)))
f_r4 <- function(x) ifelse(is.na(x), "-", ifelse(x < 0.1, sprintf("%.4f", x), f_r(x)))
f_m <- function(x) ifelse(is.na(x), "-", sprintf("%.1f", x))
tab <- data.frame(
  workload = res$workload, operation = res$operation, baseline = res$baseline,
  `zarr s` = f_s(res$zarr_s), `baseline s` = f_s(res$base_s), ratio = f_r4(res$ratio),
  `cpu s` = f_s(res$zarr_cpu_s), `peak RSS MB` = f_m(res$rss_mb), `RSS/result` = ifelse(res$result_mb >= 1 | is.na(res$result_mb), f_r(res$rss_per_result), "(small)"),
  target = paste0(res$target, ifelse(nzchar(res$target_met), paste0(": ", res$target_met), "")),
  `RSS <= 1.5x` = res$rss_target_met,
  check.names = FALSE)
wrong <- which(res$valid %in% FALSE)
if (length(wrong)) tab$operation[wrong] <- paste(tab$operation[wrong], "[WRONG RESULT]")
cat("\n")
say("Results (seconds per operation; ratio = zarr s / baseline s, lower is better):")
local({ old <- options(width = 300); on.exit(options(old)); print(tab, right = FALSE, row.names = FALSE) })
cat("\n")
say("Notes:")
say("- zarr s / baseline s: medians of %d timed repetitions (%d for operations under %.1f s) after", reps,
    reps_fast, fast_rep)
say("  one warm-up, in this process, zarr and baseline interleaved; operations under %.0f ms are", 1000 * min_time)
say("  looped to >= %.0f ms per repetition (calls_per_rep in results.csv). cpu s = user+sys of", 1000 * min_time)
say("  the zarr operation, all threads.")
say("- Warm page cache: every read reads files written earlier in this run; writes are not")
say("  fsync'ed (neither zarr nor writeBin). Reads include opening the store / file; block, slice")
say("  and column reads use an array and a connection opened beforehand.")
say("- Peak RSS MB: VmHWM of a fresh R process that ran the operation once, minus the VmHWM of a")
say("  fresh R process that only loaded zarr (same warm-up). RSS/result divides it by the size of")
say("  the result (reads) or of the input (writes: the input is counted, so 1.0 = no overhead;")
say("  writeBin itself peaks at 2.0). Not shown for results under 1 MB (a few MB of noise).")
if (!is.null(cran)) {
  say("- %s, run once in its own R process (bench/lib only). Its stores use its own defaults:",
      cran_status)
  say("  W1 via as_zarr: chunks %s, codecs %s; W4: chunks 1000, its default blosc codec.",
      attr(cran, "w1_chunks"), attr(cran, "w1_codecs"))
  say("  In the 'vs CRAN zarr' rows, 'baseline s' is the CRAN package's time (its cpu s and RSS in")
  say("  results.csv: base_cpu_s, base_rss_mb).")
} else {
  say("- CRAN zarr: %s", cran_status)
}
say("- W5 '2 threads vs 1': zarr s = 2 threads, baseline s = 1 thread; target ratio <= 1/1.6 = 0.625.")
if ("w5_read_t2" %in% tim$id) {
  par <- g("w5_read_t2", "zarr_cpu_s") / g("w5_read_t2", "zarr_s")
  say("  The 2-thread read kept %.2f cores busy on average (cpu s / zarr s)%s", par,
      if (par < 1.3) ": the threads hardly ran in parallel (other processes busy?), so the thread target is not judged fairly." else ".")
}
say("- Load average at start %s, at end %s (%d cores): a load above the core count means other",
    load_start, loadavg(), n_cores)
say("  processes competed for the CPU and the wall times are inflated; compare with cpu s.")
say("\nwrote %s", file.path(results_dir, "results.csv"))
say("total %.0f s", proc.time()[["elapsed"]] - t_start)
if (own_workdir) unlink(workdir, recursive = TRUE)
