# Interrupting a call in a child R process, as Ctrl-C does (SIGINT). Used by
# test-perf-interrupt.R and bench/interrupt.R.

# Run `setup`, then `call` (R code, as strings) in a child R process with
# the zarr of `lib`; `delay` seconds after the call starts, send SIGINT.
# Returns the classes of the condition the call ended with ("finished" when
# it was not interrupted), the seconds from the signal to the end of the
# call, the seconds the call ran before the signal, and the child's output.
interrupt_child <- function(setup, call, delay, lib = .libPaths(), env = character(), after = "") {
  script <- tempfile(fileext = ".R")
  on.exit(unlink(script), add = TRUE)
  writeLines(c(
    "suppressPackageStartupMessages(library(zarr))",
    setup,
    "cat('go\\n'); flush(stdout()); t_go <- as.numeric(Sys.time())",
    sprintf("r <- tryCatch({%s; 'finished'}, interrupt = function(c) paste(class(c), collapse = ' '))", call),
    "t_end <- as.numeric(Sys.time())",
    after,
    "cat(sprintf('\\nend|%s|%.4f|%.4f\\n', r, t_end, t_go)); flush(stdout())"), script)
  p <- processx::process$new(file.path(R.home("bin"), "Rscript"), script, stdout = "|", stderr = "|",
                             env = c("current", R_LIBS = paste(lib, collapse = ":"), env))
  on.exit(if (p$is_alive()) p$kill(), add = TRUE)
  out <- ""
  deadline <- Sys.time() + 300
  while (!grepl("(^|\n)go\n", out) && p$is_alive() && Sys.time() < deadline) {
    p$poll_io(200)
    out <- paste0(out, p$read_output())
  }
  Sys.sleep(delay)
  t0 <- as.numeric(Sys.time())
  p$interrupt()
  p$wait(60000)
  out <- paste0(out, p$read_all_output())
  m <- regmatches(out, regexec("end\\|([^|]*)\\|([0-9.]+)\\|([0-9.]+)", out))[[1]]
  list(class = if (length(m)) strsplit(m[2], " ", fixed = TRUE)[[1]] else NA_character_,
       latency = if (length(m)) as.numeric(m[3]) - t0 else NA_real_,
       ran = if (length(m)) t0 - as.numeric(m[4]) else NA_real_,
       output = out, error = p$read_all_error())
}
