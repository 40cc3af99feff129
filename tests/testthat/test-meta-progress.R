# Progress bars are for interactive sessions: a script run by Rscript
# prints none unless zarr.progress = TRUE; zarr.progress = FALSE turns them
# off everywhere.

# Run a large write, read and save_to() in a child Rscript (not interactive);
# its stdout and stderr together.
progress_child <- function(progress = NULL) {
  script <- tempfile(fileext = ".R")
  on.exit(unlink(script), add = TRUE)
  writeLines(c(
    "library(zarr)",
    # bars as soon as possible, whatever the size
    "options(zarr.progress_min_bytes = 0, zarr.progress_after = 0, zarr.num_threads = 1)",
    if (!is.null(progress)) sprintf("options(zarr.progress = %s)", progress),
    "z <- create_zarr()",
    "d <- define_array('float64', c(1000, 1000)); d$chunk_shape <- c(50, 50)",
    "a <- z$add_array('/', 'x', d)",
    "a[] <- matrix(as.numeric(seq_len(1e6)), 1000)",
    "x <- a[]",
    "z$save_to(zarr_memorystore$new())",
    "cat('sum', sum(x), '\\n')"
  ), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  out <- suppressWarnings(system2(rscript, shQuote(script), stdout = TRUE, stderr = TRUE,
                                  env = paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep))))
  expect_null(attr(out, "status"))
  out
}

test_that("a non-interactive Rscript prints no progress bar by default", {
  skip_if_not_installed("cli")
  out <- progress_child()
  expect_identical(out, "sum 500000500000 ")
})

test_that("zarr.progress = TRUE shows bars under Rscript, FALSE shows none", {
  skip_if_not_installed("cli")
  on <- progress_child("TRUE")
  expect_true(any(grepl("Reading /x", on, fixed = TRUE)))
  expect_true(any(grepl("Writing /x", on, fixed = TRUE)))
  expect_identical(progress_child("FALSE"), "sum 500000500000 ")
})

test_that("zarr_options() reports whether bars are shown", {
  withr::local_options(zarr.progress = NULL)
  expect_identical(zarr_options("progress"), interactive())
  withr::local_options(zarr.progress = TRUE)
  expect_true(zarr_options("progress"))
})

test_that("a read's bar counts its chunks from the start, while the result's pages are touched", {
  skip_if_not_installed("cli")
  # 9.6 MB of doubles: above the size from which the engine touches the
  # result's pages before reading (where the bar used to be closed at 0 of 0)
  z <- create_zarr()
  d <- define_array("float64", c(1200, 1000))
  d$chunk_shape <- c(100, 100)
  a <- z$add_array("/", "x", d)
  withr::local_options(zarr.progress = FALSE)
  a[] <- matrix(as.numeric(seq_len(1.2e6)), 1200)
  withr::local_options(zarr.progress = TRUE, zarr.progress_min_bytes = 0, zarr.progress_after = 0,
                       zarr.num_threads = 1, cli.dynamic = FALSE, cli.progress_show_after = 0)
  out <- capture.output(x <- a[], type = "message")
  expect_identical(x[1200, 1000], 1.2e6)
  bar <- grep("Reading /x", out, fixed = TRUE, value = TRUE)
  expect_gte(length(bar), 1L)
  # 12 x 10 chunks
  expect_true(all(grepl("[0-9]+/120 ", bar)))
})
