# Structural changes are atomic for readers: a writer that resizes (growing,
# shrinking, with and without low), appends, promotes, saves with save_to()
# and deletes arrays, killed with SIGKILL at random moments, leaves every
# array reading one of the states it went through, never a mix or nothing;
# opening the store finishes or undoes what was left, the next structural
# change cleans the rest, and an interrupted save_to() never opens as a
# whole but wrong copy.

# The states an array goes through in one round of the writer, in order
# (E: created, not yet written).
atomic_states <- function() {
  x <- matrix(1:64, 8, 8)
  y <- matrix(101:116, 2, 8)
  s2 <- rbind(x, y)
  s3 <- rbind(matrix(NA_integer_, 4, 8), s2)
  s4 <- s3[1:11, ]
  s5 <- array(s4, c(1, 11, 8))
  s6 <- s5[, , 5:8, drop = FALSE]
  s7 <- array(NA_integer_, c(1, 14, 6))
  s7[, 1:11, 1:4] <- s6
  list(E = matrix(NA_integer_, 8, 8), S1 = x, S2 = s2, S3 = s3, S4 = s4, S5 = s5, S6 = s6, S7 = s7)
}

test_that("writers killed during structural changes leave old or new states only", {
  skip_on_cran()
  skip_on_os("windows")
  skip_if_not_installed("processx")
  path <- local_store_path()
  savedir <- tempfile("saves")
  dir.create(savedir)
  on.exit(unlink(savedir, recursive = TRUE), add = TRUE)
  create_zarr(path)
  script <- tempfile(fileext = ".R")
  writeLines(c(
    "library(zarr)",
    sprintf("path <- '%s'; savedir <- '%s'", path, savedir),
    "x <- matrix(1:64, 8, 8); y <- matrix(101:116, 2, 8)",
    "d <- define_array('int32', c(8, 8)); d$chunk_shape <- c(4, 4)",
    "m <- d$metadata()",
    "m$chunk_key_encoding <- list(name = 'default', configuration = list(separator = '/'))",
    "z <- open_zarr(path)",
    "repeat {",
    "  k <- 1L + max(c(0L, suppressWarnings(as.integer(list.files(savedir)))), na.rm = TRUE)",
    "  nm <- paste0('a', k)",
    "  a <- z$add_array('/', nm, m)",
    "  a$write(x)",
    "  a$append(y, along = 1)",
    "  z$save_to(file.path(savedir, k))",
    "  a$resize(low = c(4, 0))",
    "  a$resize(c(11, 8))",
    "  a$promote(1)",
    "  a$resize(low = c(0, 0, -4))",
    "  a$resize(c(1, 14, 6))",
    "  z[['/']]$delete(nm)",
    "}"), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  states <- atomic_states()
  seen <- character()
  checked <- character()
  set.seed(11)
  kills <- 0L
  for (i in 1:24) {
    p <- processx::process$new(rscript, script, stdout = NULL, stderr = "|",
                               env = c("current", R_LIBS = paste(.libPaths(), collapse = ":")))
    Sys.sleep(0.7 + stats::runif(1, 0, 1))
    if (p$is_alive()) {
      p$kill() # SIGKILL
      kills <- kills + 1L
    } else {
      fail(paste("the writer stopped:", p$read_all_error()))
    }
    p$wait()
    # opened again (writable: an array marked mid-move is finished)
    z <- open_zarr(path)
    for (ap in z$arrays) {
      a <- z[[ap]]
      got <- a$read(fill_as_na = FALSE)
      hit <- names(states)[vapply(states, identical, TRUE, got)]
      # writing the first values is not a structural change: chunk by chunk
      if (!length(hit) && identical(dim(got), c(8L, 8L)) && all(is.na(got) | got == states$S1)) hit <- "W"
      expect_length(hit, 1L)
      if (!length(hit)) {
        print(got)
        z[["/"]]$delete(a$name)
        next
      }
      seen <- union(seen, hit)
      if (nzchar(Sys.getenv("ZARR_KILL_DEBUG"))) message("state ", hit)
      # the next structural change cleans what is left: growing shows fill
      # values only past the old edge
      shape <- dim(got)
      a$resize(shape + c(rep(0, length(shape) - 1L), 4))
      back <- a$read(fill_as_na = FALSE)
      idx <- lapply(shape, seq_len)
      expect_identical(do.call(`[`, c(list(back), idx, drop = FALSE)), got, info = hit)
      expect_true(all(is.na(do.call(`[<-`, c(list(back), idx, list(value = NA_integer_))))), info = hit)
      z[["/"]]$delete(a$name)
    }
    expect_length(open_zarr(path)$arrays, 0L)
    # every copy: incomplete (refused or empty), or whole and right
    for (dest in setdiff(list.files(savedir, full.names = TRUE), checked)) {
      checked <- c(checked, dest)
      zz <- tryCatch(open_zarr(dest, read_only = TRUE), zarr_error = function(e) NULL)
      if (is.null(zz) || is.null(zz$root)) next
      seen <- union(seen, "saved")
      if (nzchar(Sys.getenv("ZARR_KILL_DEBUG"))) message("saved copy ", dest)
      expect_identical(zz$arrays, paste0("/a", basename(dest)))
      expect_identical(zz[[zz$arrays]]$read(fill_as_na = FALSE), states$S2)
    }
  }
  expect_gte(kills, 20L)
  expect_gte(length(seen), 4L) # kills landed in several states
})
