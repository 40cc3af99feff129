# Structural changes that cannot lose data: resize (with and without low),
# append and promote fail at every write in turn (an error, or a user
# interrupt), and the array reads its old or its new state, in the session
# and when opened again; nothing they leave is ever read as data. Resizing
# a rectilinear grid uses its real chunk edges.

# A memory store whose writes (set and erase, from R or from the C engine)
# fail once `fail_after` of them are done: an error, or a user interrupt.
flaky_store <- R6::R6Class("flaky_store",
  inherit = zarr_memorystore,
  public = list(
    fail_after = Inf, writes = 0, how = "error",
    set = function(key, value) {
      private$tick(key)
      super$set(key, value)
    },
    erase = function(key) {
      private$tick(key)
      super$erase(key)
    },
    io_spec = function() {
      if (is.null(private$.io))
        private$.io <- zarr:::store_io_r(
          get = function(keys) lapply(keys, function(k) self$get(k)),
          set = function(key, value) self$set(key, value),
          erase = function(key) self$erase(key))
      private$.io
    }
  ),
  private = list(
    tick = function(key) {
      self$writes <- self$writes + 1
      if (self$writes <= self$fail_after) return()
      if (self$how == "interrupt") { # Ctrl-C: SIGINT, taken at the next check R makes
        tools::pskill(Sys.getpid(), tools::SIGINT)
        Sys.sleep(0.05)
      }
      stop(structure(class = c("zarr_error_io", "zarr_error", "error", "condition"),
                     list(message = paste("injected failure writing", key), call = NULL)))
    }
  )
)

na_rows <- function(n, m) matrix(NA_integer_, n, m)

# The array of 20 x 30 (chunks 8 x 10) and what each change makes of it.
atomic_cases <- function() {
  x <- matrix(1:600, 20, 30)
  y <- matrix(1001:1060, 2, 30)
  list(
    shrink = list(op = function(a) a$resize(c(13, 20)), new = x[1:13, 1:20]),
    grow = list(op = function(a) a$resize(c(25, 42)),
                new = rbind(cbind(x, na_rows(20, 12)), na_rows(5, 42))),
    low_grow = list(op = function(a) a$resize(low = c(8, 0)), new = rbind(na_rows(8, 30), x)),
    low_shrink = list(op = function(a) a$resize(low = c(-8, 0)), new = x[9:20, ]),
    low_same_shape = list(op = function(a) a$resize(low = c(0, 10), high = c(0, -10)),
                          new = cbind(na_rows(20, 10), x[, 1:20])),
    low_and_cut = list(op = function(a) a$resize(low = c(-8, 0), high = c(-3, 0)), new = x[9:17, ]),
    append = list(op = function(a) a$append(y, along = 1), new = rbind(x, y)),
    promote = list(op = function(a) a$promote(1, 2), new = {
      p <- array(NA_integer_, c(2, 20, 30))
      p[1, , ] <- x
      p
    })
  )
}

atomic_fixture <- function(store, format = 3L, separator = ".", consolidate = FALSE) {
  store$create_group("/", "", format)
  z <- zarr$new(store)
  d <- define_array("int32", c(20, 30))
  d$chunk_shape <- c(8, 10)
  d$format <- format
  m <- d$metadata()
  if (format == 3L) m$chunk_key_encoding <- list(name = "default", configuration = list(separator = separator))
  a <- z$add_array("/", "a", m)
  a$write(matrix(1:600, 20, 30))
  if (consolidate) {
    zarr_consolidate(z)
    a <- z[["/a"]]
  }
  a
}

read_all <- function(a) a$read(fill_as_na = FALSE)

# Opened again: old or new state; the next structural change cleans what
# an interrupted one left (growing shows only fill values past the edge),
# and no key of the journal or staging is left. With consolidated
# metadata, the copy may still show the old state when the array's own
# document was committed: the next change finishes it first (here called
# by itself, to see the state it leaves).
expect_old_or_new <- function(store, old, new, info, consolidate = FALSE) {
  store$fail_after <- Inf
  a <- zarr$new(store)[["/a"]]
  got <- read_all(a)
  ok <- identical(got, old) || identical(got, new)
  expect_true(ok, info = info)
  if (!ok) return(invisible())
  if (consolidate) {
    zarr:::recover_structure(a, a$.__enclos_env__$private)
    got <- read_all(a)
    ok <- identical(got, old) || identical(got, new)
    expect_true(ok, info = paste(info, "(finished)"))
    if (!ok) return(invisible())
  }
  shape <- dim(got)
  grown <- shape + c(rep(0, length(shape) - 1L), 16)
  a$resize(grown)
  back <- read_all(a)
  idx <- lapply(shape, seq_len)
  expect_identical(do.call(`[`, c(list(back), idx, drop = FALSE)), got, info = info)
  rest <- back
  rest <- do.call(`[<-`, c(list(rest), idx, list(value = NA_integer_)))
  expect_true(all(is.na(rest)), info = paste(info, "(values past the old edge)"))
  expect_false(any(grepl("__zarr_", store$keys)), info = paste(info, "(leftover keys)"))
}

# Every write in turn fails (at most `most` of them, spread over the change).
run_failures <- function(case, name, how = "error", format = 3L, separator = ".", most = Inf,
                         consolidate = FALSE) {
  old <- matrix(1:600, 20, 30)
  probe <- flaky_store$new()
  a <- atomic_fixture(probe, format, separator, consolidate)
  probe$writes <- 0
  case$op(a)
  total <- probe$writes
  expect_identical(read_all(a), case$new, info = name)
  expect_false(any(grepl("__zarr_", probe$keys)), info = name)
  expect_gt(total, 0)
  for (n in unique(round(seq(0, total - 1, length.out = min(total, most))))) {
    info <- sprintf("%s (v%d, '%s'), %s after %d of %d writes", name, format, separator, how, n, total)
    store <- flaky_store$new()
    a <- atomic_fixture(store, format, separator, consolidate)
    store$writes <- 0
    store$fail_after <- n
    store$how <- how
    res <- tryCatch({
      case$op(a)
      "done"
    }, error = function(e) "error", interrupt = function(e) "interrupt")
    expect_true(res %in% c("error", "interrupt"), info = info)
    if (nzchar(Sys.getenv("ZARR_KILL_DEBUG"))) message("outcome ", how, " ", res)
    # in this session: the old state (undone at once), or an array that
    # refuses to be read until it is opened again
    store$fail_after <- Inf
    got <- tryCatch(read_all(a), zarr_error_interrupted = function(e) NULL)
    if (!is.null(got)) expect_true(identical(got, old) || identical(got, case$new), info = paste(info, "(session)"))
    expect_old_or_new(store, old, case$new, info, consolidate)
  }
}

test_that("resize, append and promote failing at any write leave the old or the new state", {
  skip_on_cran()
  for (name in names(atomic_cases())) run_failures(atomic_cases()[[name]], name)
})

test_that("a user interrupt at any write leaves the old or the new state", {
  skip_on_cran()
  skip_on_os("windows")
  cases <- atomic_cases()
  for (name in c("low_grow", "append", "promote")) run_failures(cases[[name]], name, how = "interrupt", most = 8)
})

test_that("'/' chunk keys (moves staged) and Zarr v2 arrays are safe too", {
  skip_on_cran()
  cases <- atomic_cases()
  for (name in c("low_grow", "low_same_shape", "promote")) run_failures(cases[[name]], name, separator = "/", most = 8)
  for (name in c("low_shrink", "shrink", "append", "promote")) run_failures(cases[[name]], name, format = 2L, most = 8)
})

test_that("with consolidated metadata too", {
  skip_on_cran()
  cases <- atomic_cases()
  for (name in c("shrink", "low_grow", "append", "promote"))
    run_failures(cases[[name]], name, separator = "/", most = 8, consolidate = TRUE)
})

test_that("an array whose chunks were half moved is finished when opened, and refused read-only", {
  path <- local_store_path()
  z <- create_zarr(path)
  d <- define_array("int32", c(20, 30))
  d$chunk_shape <- c(8, 10)
  a <- z$add_array("/", "a", d)
  x <- matrix(1:600, 20, 30)
  a$write(x)
  # a writer killed right after the commit: the journal says "commit", the
  # metadata is marked and the chunks are still at their staging keys (a
  # store failing at every write after that point keeps this state)
  st <- zarr_localstore$new(path)
  flaky <- flaky_store$new()
  fa <- atomic_fixture(flaky)
  flaky$writes <- 0
  fa$resize(low = c(8, 0))
  total <- flaky$writes
  for (n in seq_len(total)) {
    flaky <- flaky_store$new()
    fa <- atomic_fixture(flaky)
    flaky$writes <- 0
    flaky$fail_after <- n
    try(fa$resize(low = c(8, 0)), silent = TRUE)
    flaky$fail_after <- Inf
    if (!is.null(flaky$get_metadata("a/")[[zarr:::pending_field]])) break
  }
  meta <- flaky$get_metadata("a/")
  expect_false(is.null(meta[[zarr:::pending_field]]))
  expect_true(isTRUE(meta[[zarr:::pending_field]]$must_understand))
  # copy that state to a local store, and open it read-only: refused
  for (k in flaky$keys) st$set(k, flaky$get(k))
  for (k in setdiff(st$list_prefix("a/"), flaky$keys)) st$erase(k)
  ro <- open_zarr(path, read_only = TRUE)[["/a"]]
  expect_error(ro[], class = "zarr_error_interrupted")
  # opened writable: finished
  rw <- open_zarr(path)[["/a"]]
  expect_identical(rw$read(fill_as_na = FALSE), rbind(na_rows(8, 30), x))
  expect_null(rw$metadata[[zarr:::pending_field]])
  expect_false(any(grepl("__zarr_", list.files(path, recursive = TRUE, all.files = TRUE))))
  expect_identical(open_zarr(path, read_only = TRUE)[["/a"]][], rbind(na_rows(8, 30), x))
})

test_that("resizing a rectilinear grid keeps the data (real chunk edges)", {
  for (edges in list(c(2, 5, 3), c(1, 1, 8), c(4, 4, 2), c(3, 3, 3, 1))) {
    z <- create_zarr()
    d <- define_array("int32", c(10, 4))
    d$chunk_shape <- list(edges, c(1, 3))
    a <- z$add_array("/", "a", d)
    x <- matrix(1:40, 10, 4)
    a$write(x)
    for (n in c(9, 8, 7, 5, 2, 1)) { # inside chunks and on boundaries
      a$resize(c(n, 4))
      info <- sprintf("edges %s, shrunk to %d", paste(edges, collapse = ","), n)
      expect_identical(a$read(fill_as_na = FALSE), x[seq_len(n), , drop = FALSE], info = info)
      a$resize(c(10, 4)) # growing again: fill values past the cut
      expect_identical(a$read(fill_as_na = FALSE), rbind(x[seq_len(n), , drop = FALSE], na_rows(10 - n, 4)),
                       info = info)
      a$write(x)
    }
    # growing past the listed edges adds chunks of the last length
    a$resize(c(17, 6))
    got <- a$read(fill_as_na = FALSE)
    expect_identical(got[1:10, 1:4], x)
    expect_true(all(is.na(got[11:17, ])) && all(is.na(got[, 5:6])))
    a$write(matrix(-(1:102), 17, 6))
    a2 <- zarr$new(z$store)[["/a"]]
    expect_identical(a2[], matrix(-(1:102), 17, 6))
    expect_true(sum(a2$chunking$chunk_edges[[1]]) >= 17)
    # append and promote
    a$append(matrix(7L, 2, 6), along = 1)
    expect_identical(a[18:19, ], matrix(7L, 2, 6))
    a$promote(3)
    expect_identical(a[, , 1], rbind(matrix(-(1:102), 17, 6), matrix(7L, 2, 6)))
  }
  z <- create_zarr()
  d <- define_array("int32", c(10, 4))
  d$chunk_shape <- list(c(2, 5, 3), 4)
  a <- z$add_array("/", "a", d)
  expect_error(a$resize(low = c(2, 0)), class = "zarr_error_unsupported")
  expect_equal(a$shape, c(10, 4))
})

test_that("a deleted node vanishes first; a new node at its place never shows its old chunks", {
  path <- local_store_path()
  z <- create_zarr(path)
  d <- define_array("int32", c(8, 8))
  d$chunk_shape <- c(4, 4)
  a <- z$add_array("/", "a", d)
  a$write(matrix(1:64, 8, 8))
  # what an interrupted deletion leaves: the metadata gone, the chunks not
  file.remove(file.path(path, "a", "zarr.json"))
  z2 <- open_zarr(path)
  expect_null(z2[["/a"]])
  b <- z2$add_array("/", "a", d)
  expect_true(all(is.na(b[])))
  expect_length(setdiff(list.files(file.path(path, "a"), recursive = TRUE), "zarr.json"), 0L)
  # delete_all: every node below goes, the group stays
  g <- z2$add_group("/", "g")
  g$add_array("x", d)$write(matrix(1L, 8, 8))
  g$add_group("h")
  zarr_consolidate(z2)
  z2[["/"]]$delete_all()
  z3 <- open_zarr(path)
  expect_length(z3$arrays, 0L)
  expect_identical(z3$groups, "/")
  expect_length(list.files(path, recursive = TRUE), 1L)
})

expect_whole_copy <- function(z, info = NULL) {
  expect_setequal(z$arrays, c("/g/a", "/b"))
  expect_identical(z[["/g/a"]][], matrix(1:64, 8, 8), info = info)
  expect_identical(z[["/b"]][], matrix(64:1, 8, 8), info = info)
  expect_equal(z[["/"]]$attributes$k, 1, info = info)
}

test_that("an interrupted save_to() does not open as a complete copy", {
  src <- create_zarr()
  d <- define_array("int32", c(8, 8))
  d$chunk_shape <- c(4, 4)
  g <- src$add_group("/", "g")
  src$add_array("/g", "a", d)$write(matrix(1:64, 8, 8))
  src$add_array("/", "b", d)$write(matrix(64:1, 8, 8))
  src[["/"]]$set_attribute("k", 1)
  total <- {
    s <- flaky_store$new()
    src$save_to(s)
    s$writes
  }
  for (n in seq(0, total - 1)) {
    s <- flaky_store$new()
    s$fail_after <- n
    expect_error(src$save_to(s), class = "zarr_error_io")
    s$fail_after <- Inf
    opened <- tryCatch(zarr$new(s), zarr_error = function(e) e)
    # nothing, an error saying the copy is incomplete, or the whole copy
    if (inherits(opened, "zarr") && !is.null(opened$root)) expect_whole_copy(opened, info = n)
    else if (!inherits(opened, "zarr")) expect_s3_class(opened, "zarr_error_incomplete")
  }
  s <- flaky_store$new()
  src$save_to(s)
  expect_whole_copy(zarr$new(s))
  expect_false(any(grepl("__zarr", s$keys)))
})

test_that("on S3 the same changes leave no journal or staging key behind", {
  skip_on_cran()
  s3 <- s3_server()
  cases <- atomic_cases()
  for (name in c("shrink", "low_grow", "low_shrink", "append", "promote")) {
    store <- s3$store(prefix = paste0("atomic/", name))
    a <- atomic_fixture(store, separator = "/")
    cases[[name]]$op(a)
    expect_identical(read_all(a), cases[[name]]$new, info = name)
    a2 <- zarr$new(s3$store(prefix = paste0("atomic/", name)))[["/a"]]
    expect_identical(read_all(a2), cases[[name]]$new, info = name)
    expect_false(any(grepl("__zarr_", store$list_prefix(""))), info = name)
  }
  z <- zarr$new(s3$store(prefix = "atomic/append"))
  z[["/"]]$delete("a")
  expect_length(z$store$list_prefix("a/"), 0L)
})
