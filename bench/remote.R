# Remote (HTTP) benchmarks of our zarr package, against a local read of the
# same store measured in the same run, and (when bench/lib holds it) the CRAN
# 'zarr' package's HTTP store.
#
# usage (from the repository root): Rscript bench/remote.R   (bash bench/run.sh runs it too)
# Needs node (tools/testserver/server.js serves the stores on 127.0.0.1, with
# injected latency) and the processx package. See bench/README.md.
#   R1  W1 (4000 x 2000 doubles, chunks 100 x 100, zstd-1) read whole over HTTP
#       at 0 and 20 ms latency per request, vs the same read from local disk
#   R2  one 20 x 20 inner chunk of a 400 x 400 float64 array stored as one
#       shard: requests and body bytes moved (target: 2 requests, < 12 kB)
#   R3  64 chunks at 100 ms latency vs one chunk at 100 ms (target <= 3x),
#       with the default zarr.http_concurrency and with 64
#   CRAN zarr: its HTTP store reading its own W1 store at 0 and 20 ms (once)
# Environment: ZARR_BENCH_LIB, ZARR_BENCH_REPS (5), ZARR_BENCH_DIR,
# ZARR_BENCH_CRAN (false: skip CRAN zarr), ZARR_BENCH_CRAN_TIMEOUT (900).
# Output: the table on stdout and bench/results/remote.csv.

t_start <- proc.time()[["elapsed"]]
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_lib <- bench_our_lib(root)
our_path <- load_our_zarr(our_lib)

is_false <- function(x) tolower(x) %in% c("false", "0", "no")
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "5")))
do_cran <- !is_false(Sys.getenv("ZARR_BENCH_CRAN", "true"))
cran_timeout <- as.numeric(Sys.getenv("ZARR_BENCH_CRAN_TIMEOUT", "900"))
rscript <- file.path(R.home("bin"), "Rscript")

workdir <- Sys.getenv("ZARR_BENCH_DIR", "")
own_workdir <- !nzchar(workdir)
if (own_workdir) workdir <- tempfile("zarr-bench-remote-")
workdir <- file.path(workdir, "remote")
unlink(workdir, recursive = TRUE)
dir.create(workdir, recursive = TRUE, showWarnings = FALSE)
workdir <- normalizePath(workdir)
results_dir <- file.path(root, "bench", "results")
dir.create(results_dir, recursive = TRUE, showWarnings = FALSE)

say("zarr %s from %s", utils::packageVersion("zarr"), our_path)
say("%s; %d cores; options: zarr.http_concurrency = %s, zarr.range_gap = %s, zarr.range_max = %s",
    R.version.string, parallel::detectCores(), format(getOption("zarr.http_concurrency", "(unset)")),
    format(getOption("zarr.range_gap", "(unset)")), format(getOption("zarr.range_max", "(unset)")))
load_start <- loadavg()
say("work dir %s; %d timed repetitions after a warm-up, medians; load average %s", workdir, reps, load_start)

# ---------------------------------------------------------------- the server
if (!nzchar(Sys.which("node"))) stop("node not found: the remote benchmarks need it (tools/setup.sh installs it)")
if (!requireNamespace("processx", quietly = TRUE)) stop("the processx package is needed (tools/setup.sh installs it)")
server <- start_test_server(workdir, root)
if (is.null(server$process)) stop("the test server did not start: ", server$why)
srv <- server$process
base_url <- server$url
say("test server %s (node %s), root = work dir", base_url, system2("node", "--version", stdout = TRUE))
control <- server$control
url_of <- function(store, latency = 0) {
  paste0(base_url, if (latency > 0) sprintf("/latency=%d", latency), "/", store)
}

# ---------------------------------------------------------------- the stores
t0 <- proc.time()[["elapsed"]]
x1 <- get_data("x1")
invisible(as_zarr(x1, location = file.path(workdir, "w1.zarr")))
seeded <- function(seed, expr) { set.seed(seed); expr }
xs <- seeded(22, matrix(stats::rnorm(400 * 400), 400, 400))
zs <- create_zarr(file.path(workdir, "sharded.zarr"))
d <- define_array("float64", dim(xs))
d$chunk_shape <- c(400, 400)
d$remove_codec("zstd")
d$add_codec("sharding_indexed", list(chunk_shape = c(20, 20)))
zs$add_array("/", "a", d)$write(xs)
x3 <- seeded(33, matrix(stats::runif(800 * 800), 800, 800))
our_write_def(file.path(workdir, "r3.zarr"), x3, our_def("float64", dim(x3), c(100, 100)))
invisible(system2("sync"))
say("stores written in %.1f s", proc.time()[["elapsed"]] - t0)

# ---------------------------------------------------------------- timing
# median seconds of fn() over `reps` runs after one warm-up; the server's
# statistics of the last run; whether its result equals `want`.
measure <- function(fn, want = NULL, n = reps, server = TRUE) {
  res <- tryCatch({
    v <- fn()   # warm-up
    valid <- if (is.null(want)) NA else same_values(v, want)
    rm(v)
    ts <- numeric(n)
    for (i in seq_len(n)) {
      invisible(gc(FALSE))
      control("reset")
      t0 <- proc.time()[["elapsed"]]
      fn()
      ts[i] <- proc.time()[["elapsed"]] - t0
    }
    st <- if (server) control("stats") else list(requests = NA, bytes = NA, connections = NA)
    list(s = stats::median(ts), min_s = min(ts), requests = st$requests, bytes = st$bytes,
         connections = st$connections, valid = valid, error = NA_character_)
  }, error = function(e) list(s = NA_real_, min_s = NA_real_, requests = NA, bytes = NA,
                              connections = NA, valid = NA, error = conditionMessage(e)))
  res
}

rows <- list()
row <- function(id, operation, baseline, z, b = NULL, target = NULL, target_max = NA, note = "") {
  ratio <- if (is.null(b)) NA_real_ else z$s / b$s
  met <- if (is.na(target_max)) "" else if (is.na(ratio)) "n/a" else if (ratio <= target_max) "met" else "MISSED"
  r <- data.frame(id = id, operation = operation, baseline = baseline,
                  zarr_s = z$s, zarr_min_s = z$min_s, base_s = if (is.null(b)) NA_real_ else b$s,
                  ratio = ratio, requests = as.numeric(z$requests %||% NA),
                  mb = as.numeric(z$bytes %||% NA) / MB, connections = as.numeric(z$connections %||% NA),
                  target = target %||% "", target_met = met, valid = z$valid,
                  notes = paste(c(if (nzchar(note)) note, if (!is.na(z$error)) paste("error:", z$error),
                                  if (!is.null(b) && !is.na(b$error)) paste("baseline error:", b$error)),
                                collapse = "; "),
                  stringsAsFactors = FALSE)
  rows[[length(rows) + 1L]] <<- r
  say("  %-20s %-56s %9s s  %-22s %9s s  ratio %6s  requests %6s  MB %7s%s", id, operation,
      fmt(r$zarr_s), baseline, fmt(r$base_s), fmt(r$ratio), fmt(r$requests), fmt(r$mb),
      if (nzchar(r$notes)) paste0("  [", r$notes, "]") else "")
  invisible(r)
}
fmt <- function(x) ifelse(is.na(x), "-", ifelse(abs(x) >= 100, sprintf("%.0f", x), sprintf("%.3f", x)))

say("\ntimings:")
# ---- R1: W1 over HTTP vs local disk
local_w1 <- measure(function() open_zarr(file.path(workdir, "w1.zarr"))$root[, ], x1, server = FALSE)
row("r1_local", "W1 open + read [, ] from local disk", "", local_w1)
r1 <- list()
for (lat in c(0, 20)) {
  r1[[as.character(lat)]] <- z <- measure(function() open_zarr(url_of("w1.zarr", lat))$root[, ], x1)
  row(sprintf("r1_http_%dms", lat), sprintf("W1 open + read [, ] over HTTP, %d ms latency", lat),
      "local disk", z, local_w1)
}

# ---- R1 again from nginx (when installed): the node test server is
# single-threaded and slower than a production web server, so at 0 ms it,
# not the client, sets the pace. nginx serves the same files.
nginx_url <- NULL
nginx_bin <- Sys.which("nginx")
if (!nzchar(nginx_bin) && file.exists("/usr/sbin/nginx")) nginx_bin <- "/usr/sbin/nginx"
if (nzchar(nginx_bin)) {
  ngx_dir <- file.path(workdir, "nginx")
  dir.create(ngx_dir, showWarnings = FALSE)
  ngx_port <- 20000L + sample.int(20000L, 1L)
  # run as root, nginx's workers would drop to a user who cannot read the work dir
  as_root <- identical(unname(Sys.info()[["effective_user"]]), "root")
  writeLines(c(if (as_root) "user root;", "worker_processes 1;", "daemon off;", sprintf("pid %s/nginx.pid;", ngx_dir),
               sprintf("error_log %s/error.log;", ngx_dir), "events { worker_connections 1024; }",
               "http {", "  access_log off;", "  sendfile on;", "  keepalive_requests 100000;",
               sprintf("  client_body_temp_path %s;", ngx_dir), sprintf("  proxy_temp_path %s;", ngx_dir),
               sprintf("  fastcgi_temp_path %s;", ngx_dir), sprintf("  uwsgi_temp_path %s;", ngx_dir),
               sprintf("  scgi_temp_path %s;", ngx_dir),
               sprintf("  server { listen 127.0.0.1:%d; root %s; }", ngx_port, workdir), "}"),
             file.path(ngx_dir, "nginx.conf"))
  ngx <- processx::process$new(nginx_bin, c("-c", file.path(ngx_dir, "nginx.conf"), "-e", file.path(ngx_dir, "error.log")),
                               stdout = "|", stderr = "|", cleanup = TRUE)
  Sys.sleep(0.5)
  if (ngx$is_alive()) nginx_url <- sprintf("http://127.0.0.1:%d", ngx_port)
}
if (!is.null(nginx_url)) {
  z <- measure(function() open_zarr(paste0(nginx_url, "/w1.zarr"))$root[, ], x1, server = FALSE)
  row("r1_nginx_0ms", "W1 open + read [, ] over HTTP from nginx, 0 ms", "local disk", z, local_w1,
      target = "<= 2x local disk", target_max = 2)
  ngx$kill()
} else {
  say("  (nginx not installed: no R1 row served by nginx)")
}

# ---- R2: one inner chunk of a shard
open_a <- function(u) {
  a <- open_zarr(u)[["/a"]]
  if (is.null(a)) stop("no array /a in ", u)
  a
}
r2_arr <- tryCatch(open_a(url_of("sharded.zarr")), error = function(e) e)
r2 <- if (inherits(r2_arr, "error")) {
  list(s = NA_real_, min_s = NA_real_, requests = NA, bytes = NA, connections = NA, valid = NA,
       error = conditionMessage(r2_arr))
} else measure(function() r2_arr[1:20, 1:20], xs[1:20, 1:20])
r2_ok <- isTRUE(r2$requests == 2 && r2$bytes < 12000)
r2_row <- row("r2_shard_chunk", "one 20x20 inner chunk of a 400x400 shard", "", r2,
              target = "2 requests, < 12 kB")
rows[[length(rows)]]$target_met <- if (is.na(r2$requests)) "n/a" else if (r2_ok) "met" else "MISSED"
r2_local <- tryCatch(open_zarr(file.path(workdir, "sharded.zarr"))[["/a"]][1:20, 1:20], error = function(e) NULL)
if (!is.null(r2_local) && !inherits(r2_arr, "error"))
  rows[[length(rows)]]$valid <- isTRUE(rows[[length(rows)]]$valid) &&
    same_values(tryCatch(r2_arr[1:20, 1:20], error = function(e) NULL), r2_local)

# ---- R3: 64 chunks vs 1 chunk at 100 ms latency
r3_run <- function(concurrency) {
  old <- options(zarr.http_concurrency = concurrency)
  on.exit(options(old))
  a <- tryCatch(open_a(url_of("r3.zarr", 100)), error = function(e) e)
  if (inherits(a, "error")) {
    e <- list(s = NA_real_, min_s = NA_real_, requests = NA, bytes = NA, connections = NA, valid = NA,
              error = conditionMessage(a))
    return(list(one = e, all = e))
  }
  list(one = measure(function() a[1:100, 1:100], x3[1:100, 1:100]),
       all = measure(function() a[, ], x3))
}
for (cc in list(NULL, 64L)) {
  lab <- if (is.null(cc)) sprintf("default concurrency (%s)", format(zarr:::http_options()$concurrency)) else
    sprintf("zarr.http_concurrency = %d", cc)
  r3 <- r3_run(cc)
  id <- if (is.null(cc)) "r3_64_chunks" else "r3_64_chunks_c64"
  row(paste0(id, "_one"), sprintf("1 chunk (100x100) at 100 ms, %s", lab), "", r3$one)
  row(id, sprintf("64 chunks (800x800) at 100 ms, %s", lab), "1 chunk at 100 ms", r3$all, r3$one,
      target = if (is.null(cc)) "<= 3x one chunk" else "(info) <= 3x", target_max = 3)
}

# ---- CRAN zarr's HTTP store
cran_status <- "skipped (ZARR_BENCH_CRAN=false)"
if (do_cran) {
  cran_lib <- file.path(root, "bench", "lib")
  dfile <- file.path(cran_lib, "zarr", "DESCRIPTION")
  if (!file.exists(dfile) || !identical(unname(read.dcf(dfile)[1, "Repository"]), "CRAN")) {
    cran_status <- "not available (not installed in bench/lib: Rscript bench/setup-cran-zarr.R)"
  } else {
    say("\nCRAN zarr %s from %s: its own W1 store, each read once", read.dcf(dfile)[1, "Version"], cran_lib)
    rds <- file.path(workdir, "cran-remote.rds")
    st <- tryCatch(system2(rscript, c(shQuote(file.path(root, "bench", "cran-remote.R")), shQuote(workdir),
                                      shQuote(base_url), shQuote(rds)),
                           env = "R_LIBS=", timeout = cran_timeout),
                   error = function(e) -1L)
    if (file.exists(rds)) {
      cr <- readRDS(rds)
      cran_status <- sprintf("CRAN zarr %s%s", attr(cr, "version"),
                             if (nzchar(attr(cr, "note"))) paste0(" (", attr(cr, "note"), ")") else "")
      for (lat in c(0, 20)) {
        k <- cr[cr$id == sprintf("http_%dms", lat), ]
        cz <- list(s = if (is.na(k$error)) k$elapsed else NA_real_, min_s = NA_real_, requests = k$requests, bytes = k$bytes,
                   connections = k$connections, valid = k$valid, error = k$error)
        ours <- r1[[as.character(lat)]]
        row(sprintf("r1_cran_%dms", lat), sprintf("CRAN zarr: W1 over HTTP, %d ms (1 run)", lat), "", cz)
        row(sprintf("r1_vs_cran_%dms", lat), sprintf("ours vs CRAN zarr, W1 over HTTP, %d ms", lat),
            "CRAN zarr", ours, cz)
      }
    } else {
      cran_status <- sprintf("not available (the CRAN zarr process failed, status %s)", st)
    }
  }
}

# ---------------------------------------------------------------- table
invisible(srv$kill())
res <- do.call(rbind, rows)
res_csv <- res
num <- vapply(res, is.double, TRUE)
res_csv[num] <- lapply(res[num], signif, digits = 5)
utils::write.csv(res_csv, file.path(results_dir, "remote.csv"), row.names = FALSE)
tab <- data.frame(id = res$id, operation = res$operation, baseline = res$baseline,
                  `zarr s` = fmt(res$zarr_s), `baseline s` = fmt(res$base_s), ratio = fmt(res$ratio),
                  requests = ifelse(is.na(res$requests), "-", sprintf("%.0f", res$requests)),
                  `MB moved` = ifelse(is.na(res$mb), "-", sprintf("%.3f", res$mb)),
                  conns = ifelse(is.na(res$connections), "-", sprintf("%.0f", res$connections)),
                  target = paste0(res$target, ifelse(nzchar(res$target_met), paste0(": ", res$target_met), "")),
                  check.names = FALSE)
wrong <- which(res$valid %in% FALSE)
if (length(wrong)) tab$operation[wrong] <- paste(tab$operation[wrong], "[WRONG RESULT]")
cat("\n")
say("Remote results (seconds per operation; ratio = zarr s / baseline s, lower is better):")
local({ old <- options(width = 300); on.exit(options(old)); print(tab, right = FALSE, row.names = FALSE) })
errs <- res[nzchar(res$notes) & grepl("error", res$notes), c("id", "notes")]
if (nrow(errs)) {
  say("\nErrors:")
  for (i in seq_len(nrow(errs))) say("  %s: %s", errs$id[i], errs$notes[i])
}
cat("\n")
say("Notes:")
say("- Served by tools/testserver/server.js on 127.0.0.1 (HTTP/1.1, keep-alive); latency = a delay")
say("  the server adds before each answer. requests / MB moved / conns: the server's count of")
say("  requests, response body bytes and TCP connections used, for the last timed repetition.")
say("- Medians of %d timed repetitions after a warm-up; each W1 read includes opening the store.", reps)
say("  R2 and R3 open the array beforehand and time the read only.")
say("- R3: with n requests in flight at once, 64 requests of 100 ms need at least ceiling(64 / n)")
say("  x 100 ms: the <= 3x target needs more than 21 requests in flight (the c64 row shows what")
say("  64 in flight give).")
say("- CRAN zarr: %s", cran_status)
say("- Load average at start %s, at end %s.", load_start, loadavg())
say("\nwrote %s", file.path(results_dir, "remote.csv"))
say("total %.0f s", proc.time()[["elapsed"]] - t_start)
if (own_workdir) unlink(dirname(workdir), recursive = TRUE)
