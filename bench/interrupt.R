# How long a user interrupt (SIGINT, as Ctrl-C sends) takes to stop a read
# or write, at each stage: pre-faulting a large result, decoding (workers
# copying), encoding a write, remote requests (the HTTP test server, slowed).
# Each case runs in a child R process (tests/testthat/helper-interrupt.R),
# interrupted after a few delays; the worst latency is printed against the
# target of 0.2 s.
#
# usage: Rscript bench/interrupt.R [pattern]   (from the repository root; our
# zarr from $ZARR_BENCH_LIB or .lib/; the remote stage needs node; `pattern`,
# a regular expression, keeps the stages whose names match, e.g. "write")

local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  source(file.path(if (length(f)) dirname(f[1]) else "bench", "common.R"))
})
root <- bench_root()
lib <- bench_our_lib(root)
load_our_zarr(lib)
source(file.path(root, "tests", "testthat", "helper-interrupt.R"))
libs <- c(if (nzchar(lib)) lib, .libPaths())

big <- paste("z <- create_zarr(tempfile())",
             "d <- define_array('float64', c(16000, 10000)); d$chunk_shape <- c(1000, 1000)",
             "a <- z$add_array('/', 'f', d)", sep = "; ")
wdir <- tempfile("intr")
dir.create(wdir)
write_setup <- paste(sprintf("z <- create_zarr(tempfile(tmpdir = '%s'))", wdir),
                     "d <- define_array('float64', c(2000, 3000)); d$chunk_shape <- c(500, 500)",
                     "d$remove_codec('zstd'); d$add_codec('gzip', list(level = 9))",
                     "a <- z$add_array('/', 'w', d)",
                     "v <- matrix(round(runif(6e6), 3), 2000, 3000)", sep = "; ")
zstd_setup <- paste(sprintf("z <- create_zarr(tempfile(tmpdir = '%s'))", wdir),
                    "d <- define_array('float64', c(6000, 6000)); d$chunk_shape <- c(500, 500)",
                    "a <- z$add_array('/', 'w', d)",
                    "v <- matrix(round(runif(36e6), 3), 6000, 6000)", sep = "; ")
int_setup <- paste(sprintf("z <- create_zarr(tempfile(tmpdir = '%s'))", wdir),
                   "d <- define_array('int32', c(6000, 6000)); d$chunk_shape <- c(500, 500)",
                   "a <- z$add_array('/', 'w', d)",
                   "v <- matrix(as.numeric(sample.int(1e6, 36e6, TRUE)), 6000, 6000)", sep = "; ")
i2f_setup <- sub("as.numeric(sample.int", "(sample.int", sub("'int32'", "'float64'", int_setup, fixed = TRUE),
                 fixed = TRUE)
stages <- list(
  list(name = "pre-faulting a 1.3 GB result", setup = big, call = "x <- a[]", env = character()),
  list(name = "decoding (workers copying 1.3 GB)", setup = big, call = "x <- a[rev(seq_len(16000)), ]",
       env = c(ZARR_NO_PREFAULT = "1")),
  list(name = "encoding a write (zstd 1, the default)", setup = zstd_setup, call = "a[] <- v", env = character()),
  list(name = "encoding a write (gzip 9, 2 MB chunks)", setup = write_setup, call = "a[] <- v", env = character()),
  list(name = "encoding a write (gzip 9, one thread)", setup = paste(write_setup, "options(zarr.num_threads = 1)",
                                                                    sep = "; "),
       call = "a[] <- v", env = character()),
  list(name = "encoding a write (gzip 9, one 48 MB chunk)",
       setup = sub("d$chunk_shape <- c(500, 500)", "d$chunk_shape <- c(2000, 3000)", write_setup, fixed = TRUE),
       call = "a[] <- v", env = character()),
  list(name = "checking and converting a write (double to int32, 288 MB)", setup = int_setup, call = "a[] <- v",
       env = character(), delays = c(0.03, 0.06, 0.1, 0.15, 0.2, 0.25, 0.3)),
  list(name = "converting a write (integer to float64, 144 MB)", setup = i2f_setup, call = "a[] <- v",
       env = character())
)

# the remote stage: the HTTP test server, every request 400 ms late
server <- NULL
if (nzchar(Sys.which("node")) && requireNamespace("processx", quietly = TRUE)) {
  sroot <- file.path(wdir, "srv")
  dir.create(sroot)
  z <- create_zarr(file.path(sroot, "r.zarr"))
  d <- define_array("float64", c(800, 800))
  d$chunk_shape <- c(100, 100)
  z$add_array("/", "x", d)$write(matrix(as.numeric(1:640000), 800, 800))
  server <- processx::process$new("node", c(file.path(root, "tools", "testserver", "server.js"), "--root", sroot,
                                            "--port", "0"), stdout = "|", stderr = "|", cleanup = TRUE)
  out <- ""
  while (!grepl("listening [0-9]+\n", out) && server$is_alive()) {
    server$poll_io(200)
    out <- paste0(out, server$read_output())
  }
  port <- regmatches(out, regexec("listening ([0-9]+)", out))[[1]][2]
  url <- sprintf("http://127.0.0.1:%s/latency=400/r.zarr", port)
  stages[[length(stages) + 1L]] <- list(
    name = "remote requests (HTTP, 0.4 s each)",
    setup = sprintf("Sys.setenv(no_proxy = '127.0.0.1'); options(zarr.http_concurrency = 2); a <- open_zarr('%s')$root[['x']]", url),
    call = "x <- a[]", env = character())
}

# an interrupt that lands in R code before the call reaches C is R's own
# (class "interrupt" only); one in the call is also a zarr_error_interrupted
delays <- c(0.1, 0.2, 0.3, 0.4, 0.55, 0.7, 0.9)
pattern <- commandArgs(TRUE)[1]
if (!is.na(pattern)) stages <- Filter(function(s) grepl(pattern, s$name), stages)
cat("Interrupt latency (seconds from SIGINT to the call's end; target < 0.2)\n")
for (s in stages) {
  r <- lapply(s$delays %||% delays, function(dl) interrupt_child(s$setup, s$call, dl, lib = libs, env = s$env))
  ok <- vapply(r, function(x) "interrupt" %in% x$class, TRUE)
  ours <- vapply(r, function(x) "zarr_error_interrupted" %in% x$class, TRUE)
  lat <- vapply(r, `[[`, 0, "latency")
  worst <- if (any(ok)) max(lat[ok]) else NA
  cat(sprintf("  %-58s worst %.3f, mean %.3f over %d interrupts (%d in C)%s%s\n", s$name, worst, mean(lat[ok]),
              sum(ok), sum(ours), if (all(ok)) "" else sprintf(", %d not interrupted", sum(!ok)),
              if (isTRUE(worst < 0.2)) "  ok" else "  MISSES"))
}
if (!is.null(server)) invisible(server$kill())
unlink(wdir, recursive = TRUE)
