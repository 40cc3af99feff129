# Atomic writes: a writer killed with SIGKILL at random moments leaves no
# torn chunk or metadata file, and no temporary file is ever read as data.

test_that("writers killed at random moments leave every file whole", {
  skip_on_cran()
  skip_on_os("windows")
  skip_if_not_installed("processx")
  path <- local_store_path()
  z <- create_zarr(path)
  d <- define_array("int32", c(64, 64))
  d$chunk_shape <- c(16, 16)
  z$add_array("/", "a", d)$write(matrix(0L, 64, 64))
  dv <- define_array("float64", c(40, 40))
  dv$chunk_shape <- c(40, 40)
  dv$add_codec("sharding_indexed", list(chunk_shape = c(10, 10)))
  z$add_array("/", "s", dv)$write(matrix(0, 40, 40))
  zarr_consolidate(z)
  # The writer fills both arrays with one value k at a time, and records k in
  # an attribute; every chunk is therefore all one value.
  script <- tempfile(fileext = ".R")
  writeLines(c(
    "library(zarr)",
    sprintf("z <- open_zarr('%s')", path),
    "a <- z[['/a']]; s <- z[['/s']]",
    "for (k in 1:100000) {",
    "  a[, ] <- matrix(k, 64, 64)",
    "  s[, ] <- matrix(k, 40, 40)",
    "  a$set_attribute('k', k)",
    "}"), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  set.seed(7)
  kills <- 0L
  for (i in 1:30) {
    p <- processx::process$new(rscript, script, stdout = NULL, stderr = NULL,
                               env = c("current", R_LIBS = paste(.libPaths(), collapse = ":")))
    Sys.sleep(0.6 + stats::runif(1, 0, 0.8))  # R starts up, then writes
    if (p$is_alive()) {
      p$kill()                                  # SIGKILL
      kills <- kills + 1L
    }
    p$wait()
    zz <- open_zarr(path, read_only = TRUE)
    av <- zz[["/a"]][, ]
    sv <- zz[["/s"]][, ]
    # every chunk decodes and holds a single value: nothing torn
    for (r in 0:3) for (cc in 0:3) {
      blk <- av[r * 16 + 1:16, cc * 16 + 1:16]
      expect_length(unique(as.vector(blk)), 1L)
    }
    for (r in 0:3) for (cc in 0:3) {
      blk <- sv[r * 10 + 1:10, cc * 10 + 1:10]
      expect_length(unique(as.vector(blk)), 1L)
    }
    expect_true(is.numeric(zz[["/a"]]$attributes$k) || is.null(zz[["/a"]]$attributes$k))
  }
  expect_gte(kills, 25L)
  # temporary files may be left behind; they are never listed as keys
  st <- zarr_localstore$new(path, read_only = TRUE)
  expect_false(any(grepl("[.]partial$", st$list_prefix(""))))
})
