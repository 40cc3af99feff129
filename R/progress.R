# Progress bars (cli) for long reads, writes and copies.
#
# A read or write is one .Call into the engine. For one that may take long
# (a large selection, with progress wanted, see progress_wanted(), and cli installed),
# with_progress() hands the engine an R function; the engine's R thread calls
# it from the polls it already makes (src/progress.c), never before
# `zarr.progress_after` seconds (default 2) and at most 5 times a second.
# Small calls, and every call with the option off, never reach the engine's
# hook: the cost is one comparison.

progress_state <- new.env(parent = emptyenv())
progress_state$active <- FALSE
progress_state$reports <- 0 # reports made in this session (for the tests)

# Selections below this many bytes never show a bar: they take well under
# the delay.
progress_min_bytes <- function() getOption("zarr.progress_min_bytes", engine_opt_defaults[["progress_min"]])

# Bars are for people watching: by default only in interactive sessions, so
# that Rscript and batch logs get none; zarr.progress = TRUE or FALSE forces
# them on or off.
progress_wanted <- function() {
  v <- getOption("zarr.progress")
  if (is.null(v)) interactive() else isTRUE(v)
}

progress_on <- function() {
  progress_wanted() && !progress_state$active && requireNamespace("cli", quietly = TRUE)
}

# The engine counts chunks (a write: the partly covered ones it reads, then
# every one it writes), so the bar shows them, not a bare percentage.
progress_format <- "{cli::pb_name}{cli::pb_bar} {cli::pb_current}/{cli::pb_total} | ETA: {cli::pb_eta}"

# Evaluate `expr` (an engine call) with a progress bar when it moves at least
# `bytes` bytes and progress is on.
with_progress <- function(expr, bytes, label) {
  if (bytes < progress_min_bytes() || !progress_on()) return(expr)
  frame <- environment()
  bar <- NULL
  report <- function(done, total) {
    progress_state$reports <- progress_state$reports + 1
    if (is.null(bar))
      bar <<- cli::cli_progress_bar(redact(label), total = total, clear = TRUE, format = progress_format, .envir = frame)
    cli::cli_progress_update(id = bar, set = min(done, total), total = total, force = TRUE, .envir = frame)
  }
  progress_state$active <- TRUE
  .Call(ffi_progress_begin, report, as.numeric(getOption("zarr.progress_after", 2)))
  on.exit({
    .Call(ffi_progress_end)
    progress_state$active <- FALSE
  })
  expr
}

# A bar driven from R, for loops over batches (save_to()): cli shows it only
# once it has run for `zarr.progress_after` seconds. Returns a function that
# takes the units done so far (and, with done = NULL, closes the bar).
r_progress <- function(label, total, frame = parent.frame()) {
  if (!total || !progress_on()) return(function(done) invisible(NULL))
  delay <- as.numeric(getOption("zarr.progress_after", 2))
  old <- options(cli.progress_show_after = delay)
  on.exit(options(old))
  bar <- cli::cli_progress_bar(redact(label), total = total, clear = TRUE, .envir = frame)
  function(done) {
    progress_state$reports <- progress_state$reports + 1
    if (is.null(done)) cli::cli_progress_done(id = bar, .envir = frame)
    else cli::cli_progress_update(id = bar, set = min(done, total), .envir = frame)
    invisible(NULL)
  }
}
