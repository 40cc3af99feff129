# The vignettes' R chunks run (R CMD check builds them too, but tools/test.sh
# does not run R CMD check): each is knitted in a fresh Rscript, as a
# vignette build does, with chunk errors failing the knit.

knit_in_child <- function(rmd) {
  dir <- withr::local_tempdir()
  file.copy(rmd, dir)
  script <- file.path(dir, "knit.R")
  writeLines(c(
    "knitr::opts_chunk$set(error = FALSE)",
    sprintf("invisible(knitr::knit(%s, %s, quiet = TRUE))", deparse(basename(rmd)),
            deparse(sub("[.]Rmd$", ".md", basename(rmd))))
  ), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  withr::local_dir(dir)
  out <- suppressWarnings(system2(rscript, shQuote(script), stdout = TRUE, stderr = TRUE,
                                  env = paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep))))
  list(status = attr(out, "status") %||% 0L, output = out,
       md = if (file.exists(sub("[.]Rmd$", ".md", basename(rmd)))) readLines(sub("[.]Rmd$", ".md", basename(rmd))))
}

test_that("every vignette knits without an error in its chunks", {
  skip_on_cran()
  skip_if_not_installed("knitr")
  vignettes <- testthat::test_path("../../vignettes")
  skip_if_not(dir.exists(vignettes), "the vignettes are not here (not the source tree)")
  rmds <- list.files(vignettes, pattern = "[.]Rmd$", full.names = TRUE)
  expect_gt(length(rmds), 5L)
  for (rmd in rmds) {
    r <- knit_in_child(rmd)
    expect(r$status == 0L, paste0(basename(rmd), " did not knit:\n", paste(utils::tail(r$output, 20), collapse = "\n")))
    if (basename(rmd) == "processing-big-arrays.Rmd" && requireNamespace("mirai", quietly = TRUE)) {
      # the mirai chunk ran, on daemons, and showed its output
      i <- grep("any(pids == Sys.getpid())", r$md, fixed = TRUE)
      expect_length(i, 1L)
      expect_identical(r$md[i + 1L], "#> [1] FALSE")
    }
  }
})
