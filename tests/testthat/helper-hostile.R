# The hostile-store suite (issue 26): a store prepared by someone else is
# untrusted input. Each crafted store lies in a folder beside "outside/",
# whose files must be byte-identical after the store was opened read-only and
# writable, listed, read and printed; every failure must be a zarr_error_*;
# and peak memory stays bounded (measured in a fresh R process, since what a
# C parser mallocs is not R's heap).

# A folder with "outside/" (victim files, one in a subfolder) and the path
# where the test builds its store.
hostile_dir <- function(env = parent.frame(), store = "store.zarr") {
  dir <- withr::local_tempdir(.local_envir = env)
  dir.create(file.path(dir, "outside", "sub"), recursive = TRUE)
  writeLines("do not touch", file.path(dir, "outside", "victim.txt"))
  writeBin(as.raw(0:255), file.path(dir, "outside", "sub", "victim.bin"))
  writeLines("sibling", file.path(dir, "victim.txt"))
  list(dir = dir, store = file.path(dir, store), outside = file.path(dir, "outside"))
}

# Every file below `dir` except those below `except` (the store itself), with
# its md5: a deleted, created or changed file shows as a difference.
hostile_snapshot <- function(dir, except = NULL) {
  f <- list.files(dir, recursive = TRUE, all.files = TRUE, full.names = TRUE, include.dirs = FALSE)
  if (!is.null(except)) f <- f[!startsWith(normalizePath(f, mustWork = FALSE), normalizePath(except, mustWork = FALSE))]
  stats::setNames(unname(tools::md5sum(f)), substring(f, nchar(dir) + 2L))
}

expect_outside_unchanged <- function(before, dir, except = NULL) {
  after <- hostile_snapshot(dir, except)
  expect_identical(after[order(names(after))], before[order(names(before))])
}

# Everything a user does with a store found on disk: open it read-only and
# writable, walk every node, read every array and print it. Conditions that
# are not zarr_error_* fail the test; zarr errors and zarr warnings are
# returned (by class) so a test can ask for the one it expects.
hostile_touch <- function(location, ...) {
  seen <- character()
  note <- function(cnd) {
    cls <- class(cnd)
    if (!any(startsWith(cls, "zarr_")))
      stop(sprintf("not a classed zarr condition: %s: %s", paste(cls, collapse = "/"), conditionMessage(cnd)))
    seen <<- c(seen, cls[startsWith(cls, "zarr_")][1L])
  }
  for (ro in c(TRUE, FALSE)) {
    withCallingHandlers(tryCatch({
      z <- open_zarr(location, read_only = ro, ...)
      utils::capture.output(print(z))
      for (p in z$arrays) {
        tryCatch({
          a <- z[[p]]
          utils::capture.output(print(a))
          a$read()
        }, error = note)
      }
    }, error = note), warning = function(w) {
      if (any(startsWith(class(w), "zarr_"))) {
        note(w)
        invokeRestart("muffleWarning")
      }
    })
  }
  unique(seen)
}

# Runs `code` (a string of R, the package attached) in a new R process and
# returns the growth of its peak resident memory in MB while `code` ran, and
# the class of the condition it signalled, if any ("" when none).
hostile_peak <- function(code, timeout = 120) {
  script <- tempfile(fileext = ".R")
  out <- tempfile()
  on.exit(unlink(c(script, out)))
  writeLines(c(
    "suppressMessages(library(zarr))",
    "peak <- function() { s <- readLines('/proc/self/status'); as.numeric(sub('[^0-9]*([0-9]+).*', '\\\\1', grep('^VmHWM', s, value = TRUE))) / 1024 }",
    "invisible(gc()); p0 <- peak()",
    "cls <- tryCatch({", code, "; ''}, error = function(e) class(e)[1L])",
    sprintf("writeLines(c(format(peak() - p0), cls), '%s')", out)
  ), script)
  status <- system2("timeout", c(as.character(timeout), file.path(R.home("bin"), "Rscript"), script),
                    stdout = FALSE, stderr = FALSE)
  if (!file.exists(out)) return(list(mb = NA_real_, class = sprintf("no result (status %s)", status)))
  r <- readLines(out)
  list(mb = as.numeric(r[1L]), class = if (length(r) > 1L) r[2L] else "")
}

skip_without_proc_status <- function() {
  skip_if_not(file.exists("/proc/self/status"), "no /proc/self/status to read peak memory from")
  skip_if(!nzchar(Sys.which("timeout")), "no timeout command")
  # AddressSanitizer's quarantine holds freed memory: peaks measure it
  skip_if(grepl("asan", Sys.getenv("LD_PRELOAD")), "peak memory means little under AddressSanitizer")
}
