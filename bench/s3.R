# S3 benchmark: W1 (4000 x 2000 doubles, chunks 100 x 100, zstd-1; 800
# chunks) written to and read from a local S3 server (s3rver behind
# tools/s3server/proxy.js, which checks every signature), beside the same
# write and read on local disk, and (when tools/azurite is installed) in
# Azurite, the Azure Storage emulator, which checks every Shared Key
# signature too.
#
# usage (from the repository root): Rscript bench/s3.R   (bash bench/run.sh runs it too)
# Needs node, s3rver in tools/s3server/node_modules (tools/setup.sh) and processx.
# Environment: ZARR_BENCH_LIB, ZARR_BENCH_REPS (3). Output: the table on
# stdout and bench/results/s3.csv.

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
if (is.na(here)) here <- "bench"
source(file.path(here, "common.R"))
root <- bench_root()
our_path <- load_our_zarr(bench_our_lib(root))
reps <- max(1L, as.integer(Sys.getenv("ZARR_BENCH_REPS", "3")))

proxy <- file.path(root, "tools", "s3server", "proxy.js")
if (!nzchar(Sys.which("node")) || !dir.exists(file.path(root, "tools", "s3server", "node_modules", "s3rver")))
  stop("node and s3rver (tools/setup.sh) are needed for the S3 benchmark")
Sys.setenv(no_proxy = "127.0.0.1,localhost", NO_PROXY = "127.0.0.1,localhost")
workdir <- tempfile("zarr-bench-s3-")
dir.create(workdir)
srv <- processx::process$new("node", c("--openssl-legacy-provider", proxy, "--dir", file.path(workdir, "s3"),
                                       "--cred", "AKIDBENCH:benchsecret", "--private", "bench"),
                             stdin = "|", stdout = "|", stderr = "|", cleanup = TRUE)
port <- NA_integer_
out <- ""
deadline <- Sys.time() + 30
while (is.na(port) && srv$is_alive() && Sys.time() < deadline) {
  srv$poll_io(200)
  out <- paste0(out, srv$read_output())
  m <- regmatches(out, regexec("LISTENING ([0-9]+)", out))[[1]]
  if (length(m)) port <- as.integer(m[2])
}
if (is.na(port)) stop("the S3 server did not start: ", out, srv$read_all_error())
endpoint <- sprintf("http://127.0.0.1:%d", port)
# Azurite, beside it (column azurite_s, NA without it)
azurite <- file.path(root, "tools", "azurite", "node_modules", "azurite", "dist", "src", "blob", "main.js")
az_key <- "YmVuY2gta2V5LWJlbmNoLWtleS1iZW5jaC1rZXktYmVuY2gta2V5LWJlbmNoLWtleS0wMQ=="
az_endpoint <- NULL
if (file.exists(azurite)) {
  az <- processx::process$new("node", c(azurite, "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
                                        "--skipApiVersionCheck", "--disableTelemetry"),
                              env = c("current", AZURITE_ACCOUNTS = paste0("bench:", az_key)),
                              stdin = "|", stdout = "|", stderr = "|", cleanup = TRUE)
  out <- ""
  deadline <- Sys.time() + 60
  while (is.null(az_endpoint) && az$is_alive() && Sys.time() < deadline) {
    az$poll_io(200)
    out <- paste0(out, az$read_output())
    m <- regmatches(out, regexec("listens on http://127\\.0\\.0\\.1:([0-9]+)", out))[[1]]
    if (length(m)) az_endpoint <- sprintf("http://127.0.0.1:%s/bench", m[2])
  }
  if (!is.null(az_endpoint)) {
    # the container, through the package's own request path
    st <- zarr::zarr_azurestore$new("bench", endpoint = az_endpoint, key = az_key)
    invisible(zarr:::s3_request(st$io_spec(), "PUT", "", "restype=container", at_bucket = TRUE))
  }
}
say("zarr %s from %s; S3 server %s; %d repetitions after a warm-up, medians; http_concurrency %s",
    utils::packageVersion("zarr"), our_path, endpoint, reps, format(getOption("zarr.http_concurrency", 32)))

x <- get_data("x1")
def <- function() our_def("float64", dim(x), c(100, 100), "zstd")
s3_store <- function(prefix) zarr::zarr_s3store$new("bench", prefix, endpoint = endpoint,
                                                    access_key = "AKIDBENCH", secret_key = "benchsecret")
k <- 0L
write_s3 <- function() {
  k <<- k + 1L
  st <- s3_store(sprintf("w1-%d.zarr", k))
  st$create_group("/", "")
  zarr::zarr$new(st)$add_array("/", "x", def())$write(x)
  st
}
write_local <- function() {
  k <<- k + 1L
  z <- zarr::create_zarr(file.path(workdir, sprintf("w1-%d.zarr", k)))
  z$add_array("/", "x", def())$write(x)
  z$store
}
read_all <- function(st) {
  y <- zarr::zarr$new(st)[["/x"]][, ]
  stopifnot(identical(y, x))
}
timed <- function(f) {
  f()
  t <- vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], 0)
  stats::median(t)
}
write_az <- function() {
  k <<- k + 1L
  st <- zarr::zarr_azurestore$new("bench", sprintf("w1-%d.zarr", k), endpoint = az_endpoint, key = az_key)
  st$create_group("/", "")
  zarr::zarr$new(st)$add_array("/", "x", def())$write(x)
  st
}
s3_ro <- write_s3()
loc_ro <- write_local()
az_ro <- if (!is.null(az_endpoint)) write_az()
rows <- data.frame(
  operation = c("W1 write (800 chunks)", "W1 read all [,]"),
  local_s = c(timed(write_local), timed(function() read_all(loc_ro))),
  s3_s = c(timed(write_s3), timed(function() read_all(s3_ro))),
  azurite_s = if (is.null(az_ro)) NA_real_ else c(timed(write_az), timed(function() read_all(az_ro)))
)
rows$ratio <- rows$s3_s / rows$local_s
rows$azurite_ratio <- rows$azurite_s / rows$local_s
print(format(rows, digits = 3), row.names = FALSE)
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(rows, file.path(root, "bench", "results", "s3.csv"), row.names = FALSE)
invisible(srv$kill())
if (exists("az")) invisible(az$kill())
unlink(workdir, recursive = TRUE)
