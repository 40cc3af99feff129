# The CRAN 'zarr' package's HTTP store, for bench/remote.R: in its own R
# process with bench/lib first on the library path (bench/setup-cran-zarr.R).
# Writes W1 with CRAN zarr's as_zarr() below the test server's root, then
# reads it once over HTTP at 0 and at 20 ms latency, taking the server's
# request statistics of each read.
#
# usage: Rscript bench/cran-remote.R <server root> <server URL> <output .rds>

args <- commandArgs(TRUE)
if (length(args) != 3L) stop("usage: cran-remote.R <server root> <server URL> <output .rds>")
dir <- args[1]; base_url <- args[2]; out_rds <- args[3]

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "common.R"))  # also defines `%||%`, which R < 4.4 lacks
root <- bench_root()
cran_lib <- normalizePath(file.path(root, "bench", "lib"), mustWork = TRUE)
.libPaths(c(cran_lib, .libPaths()))
suppressPackageStartupMessages(library(zarr))
desc <- utils::packageDescription("zarr")
if (!is_cran_zarr(desc) || !startsWith(find.package("zarr"), cran_lib))
  stop("bench/lib does not hold the CRAN zarr package (found ", find.package("zarr"), ")")
Sys.setenv(no_proxy = "127.0.0.1,localhost", NO_PROXY = "127.0.0.1,localhost")

control <- function(what) {
  con <- url(paste0(base_url, "/_", what), open = "rb")
  on.exit(close(con))
  jsonlite::fromJSON(paste(readLines(con, warn = FALSE), collapse = ""), simplifyVector = FALSE)
}

x1 <- get_data("x1")
unlink(file.path(dir, "cran"), recursive = TRUE)
dir.create(file.path(dir, "cran"), recursive = TRUE)
t0 <- proc.time()[["elapsed"]]
w <- tryCatch({ as_zarr(x1, location = file.path(dir, "cran", "w1.zarr")); NA_character_ },
              error = function(e) conditionMessage(e))
cat(sprintf("cran-remote: W1 written in %.1f s%s\n", proc.time()[["elapsed"]] - t0,
            if (is.na(w)) "" else paste(":", w)))

rows <- list()
for (lat in c(0, 20)) {
  u <- paste0(base_url, if (lat > 0) sprintf("/latency=%d", lat), "/cran/w1.zarr")
  invisible(gc(full = TRUE))
  control("reset")
  t0 <- proc.time()
  res <- if (is.na(w)) tryCatch(open_zarr(u)$root[, ], error = function(e) e) else simpleError(w)
  d <- proc.time() - t0
  st <- control("stats")
  err <- if (inherits(res, "error")) conditionMessage(res) else NA_character_
  rows[[length(rows) + 1L]] <- data.frame(
    id = sprintf("http_%dms", lat), elapsed = d[["elapsed"]], cpu = d[["user.self"]] + d[["sys.self"]],
    requests = st$requests, bytes = st$bytes, connections = st$connections,
    valid = if (is.na(err)) same_values(res, x1) else FALSE, error = err)
  cat(sprintf("cran-remote: %2d ms %7.2f s  %d requests  %s\n", lat, d[["elapsed"]], st$requests,
              if (is.na(err)) "" else err))
  rm(res)
}
res <- do.call(rbind, rows)
attr(res, "version") <- desc$Version
attr(res, "note") <- gsub("\\s+", " ", desc$BenchNote %||% "")
saveRDS(res, out_rds)
unlink(file.path(dir, "cran"), recursive = TRUE)
