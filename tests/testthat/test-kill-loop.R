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

# Structural changes (R/resize.R) killed with SIGKILL at each of their steps
# in turn: the child process dies just before its n-th write, erase or copy
# of a key (journal, staging, chunk, metadata). Promote with "/" chunk keys
# makes the old key "a/c/0/0" the folder of "a/c/0/0/0" (issue 26, defect 7).
# After each kill: a read-only opening changes no file and reads the old or
# new values (or refuses a half-moved array); a writable opening reads the
# old or new values; the next change leaves no journal or staging key.
test_that("structural changes killed at every step reopen readable, old or new", {
  skip_on_cran()
  skip_on_os("windows")
  tenv <- environment()
  child <- tempfile(fileext = ".R")
  on.exit(unlink(child), add = TRUE)
  writeLines(c(
    "args <- commandArgs(TRUE); path <- args[1]; at <- as.integer(args[2])",
    "suppressMessages(library(zarr))",
    "ns <- asNamespace('zarr'); n <- 0L",
    "step <- function() { n <<- n + 1L; if (n == at) tools::pskill(Sys.getpid(), tools::SIGKILL) }",
    "erase <- ns$store_erase_keys; copy <- ns$store_copy_keys",
    "unlockBinding('store_erase_keys', ns); unlockBinding('store_copy_keys', ns)",
    "assign('store_erase_keys', function(store, keys) for (k in keys) { step(); erase(store, k) }, envir = ns)",
    "assign('store_copy_keys', function(store, from, to) for (i in seq_along(from)) { step(); copy(store, from[i], to[i]) }, envir = ns)",
    "z <- open_zarr(path); st <- z$store; set <- st$set",
    "unlockBinding('set', st); st$set <- function(key, value) { step(); set(key, value) }",
    "a <- z[['/a']]",
    "eval(parse(text = args[3]))",
    "cat('finished\\n')"), child)
  rscript <- file.path(R.home("bin"), "Rscript")
  x <- matrix(1:32, 8, 4) # two chunks: few steps, each kind of step twice
  cases <- list(
    promote_slash = list(op = "a$promote(2, 2)"),
    promote_dot = list(op = "a$promote(3, 2)", sep = "."),
    promote_v2_slash = list(op = "a$promote(1, 3)", format = 2L),
    shrink = list(op = "a$resize(c(6, 3))"),
    grow_low = list(op = "a$resize(low = c(4, 0))"),
    shrink_low = list(op = "a$resize(low = c(-4, 0), high = c(-2, 0))"),
    append = list(op = "a$append(matrix(101:108, 2, 4), along = 1)")
  )
  snapshot <- function(p) {
    f <- list.files(p, recursive = TRUE, all.files = TRUE)
    list(list.files(p, recursive = TRUE, all.files = TRUE, include.dirs = TRUE), unname(tools::md5sum(file.path(p, f))))
  }
  for (nm in names(cases)) {
    cs <- cases[[nm]]
    template <- local_store_path()
    if (is.null(cs$sep)) cs$sep <- "/"
    if (is.null(cs$format)) cs$format <- 3L
    st <- zarr_localstore$new(template)
    fmt <- cs$format
    st$create_group("/", "", fmt)
    d <- define_array("int32", c(8, 4))
    d$chunk_shape <- c(4, 4)
    d$format <- fmt
    m <- d$metadata()
    m$chunk_key_encoding <- list(name = if (fmt == 2L) "v2" else "default",
                                 configuration = list(separator = cs$sep))
    zarr$new(st)$add_array("/", "a", m)$write(x)
    copy_of <- function() {
      p <- local_store_path(env = tenv)
      dir.create(p)
      file.copy(list.files(template, full.names = TRUE, all.files = TRUE, no.. = TRUE), p, recursive = TRUE)
      p
    }
    p <- copy_of()
    a <- open_zarr(p)[["/a"]]
    eval(parse(text = cs$op))
    new <- a$read(fill_as_na = FALSE)
    old <- x
    states <- character()
    for (at in 1:60) {
      p <- copy_of()
      out <- suppressWarnings(system2(rscript, c(child, p, at, shQuote(cs$op)), stdout = TRUE, stderr = TRUE))
      if (any(out == "finished")) break
      info <- sprintf("%s, killed at step %d", nm, at)
      # read-only: nothing written, old or new values, or a refusal
      before <- snapshot(p)
      got <- tryCatch(open_zarr(p, read_only = TRUE)[["/a"]]$read(fill_as_na = FALSE),
                      zarr_error_interrupted = function(e) "refused")
      expect_true(identical(got, old) || identical(got, new) || identical(got, "refused"), info = info)
      expect_identical(snapshot(p), before, info = info)
      # writable: finished or undone
      a <- open_zarr(p)[["/a"]]
      got <- a$read(fill_as_na = FALSE)
      state <- if (identical(got, old)) "old" else if (identical(got, new)) "new" else "neither"
      expect_true(state != "neither", info = info)
      states <- union(states, state)
      # the next change cleans what was left
      shape <- dim(got)
      a$resize(shape + c(rep(0, length(shape) - 1L), 4))
      back <- a$read(fill_as_na = FALSE)
      expect_identical(do.call(`[`, c(list(back), lapply(shape, seq_len), drop = FALSE)), got, info = info)
      expect_false(any(grepl("__zarr_", zarr_localstore$new(p, read_only = TRUE)$list_prefix(""))), info = info)
      unlink(p, recursive = TRUE)
    }
    expect_true(any(out == "finished"), info = nm)
    if (nzchar(Sys.getenv("ZARR_KILL_DEBUG"))) message(nm, ": ", at - 1L, " kills")
    expect_gte(at, 4L)
    expect_setequal(states, c("old", "new"))
  }
})
