# Reading the conformance fixtures (../shared/fixtures/expected.json) and
# comparing an array read from them with its expected values; shared by
# test-fixtures.R (local directories and zip files) and test-http.R (the same
# stores served over HTTP).
#
# `fixture_pending`: entries that cannot be read yet. For them the tests
# assert a clear classed error (a "zarr_error"), never a crash, an unclassed
# error or a silent wrong answer. When one starts to read, its test fails:
# take it off the list.
# `fixture_deviations`: entries that read, but not the reference values. Their
# test asserts that they still differ, so the list stays exact as well.
# `fixture_pending_stores`: whole stores (zip files) that cannot be read yet.

fixture_pending <- character()

# Entries that read, but not the reference values; none at the moment.
fixture_deviations <- character()

# Zip files that cannot be read yet; none at the moment.
fixture_pending_stores <- character()

# (a promise: helper-zarr.R, which defines fixtures_dir(), is sourced after
# this file)
delayedAssign("fixture_entries", if (nzchar(fixtures_dir())) {
  jsonlite::read_json(file.path(fixtures_dir(), "expected.json"))
} else list())

# A function(e) that returns the array of entry `e`, opening each store once
# (building a large group takes a while) with `open_store(store)`, where
# `store` is the entry's store path below the fixtures directory.
fixture_opener <- function(open_store) {
  opened <- new.env()
  function(e) {
    z <- opened[[e[["store"]]]] %||% (opened[[e[["store"]]]] <- open_store(e[["store"]]))
    a <- if (identical(e[["array"]], "/")) z$root else z[[e[["array"]]]]
    if (is.null(a)) stop(sprintf("no array '%s' in %s", e[["array"]], e[["store"]]))
    a
  }
}

# The elements at 0-based C-order flat indices, whatever the shape.
c_order_at <- function(x, shape, idx) {
  if (length(shape) <= 1L) return(x[idx + 1])
  x[arrayInd(idx + 1, rev(shape))[, rev(seq_along(shape)), drop = FALSE]]
}

# Values comparable with expected.json: atomic vectors in C order.
comparable <- function(x) {
  if (!is.null(dim(x))) x <- x[as.vector(aperm(array(seq_along(x), dim(x))))]
  if (inherits(x, "integer64")) return(as.character(x))
  if (inherits(x, "POSIXt")) return(format(x, "%Y-%m-%dT%H:%M:%S", tz = "UTC"))
  if (inherits(x, "Date")) return(format(x, "%Y-%m-%dT00:00:00"))
  if (inherits(x, "difftime")) return(as.numeric(x, units = "secs"))
  if (is.list(x)) return(vapply(x, function(v) if (is.null(v)) NA_character_ else
                                if (is.raw(v)) rawToChar(v) else as.character(v), ""))
  if (is.numeric(x)) return(as.double(x))
  as.vector(x)
}

expected_values <- function(data, dtype) {
  if (dtype == "bool") return(vapply(data, function(v) if (is.null(v)) NA else v, NA))
  if (dtype %in% c("int64", "uint64")) return(vapply(data, function(v) if (is.null(v)) NA_character_ else as.character(v), ""))
  if (grepl("^(u?int|float)|timedelta", dtype)) return(json_numbers(data))
  # strings: a non-string item is the fill value of an element never written,
  # which (like null) counts as missing; the README allows NA or "" for it
  vapply(data, function(v) if (is.null(v) || !is.character(v)) NA_character_ else v, "")
}

# Describes where got differs from want (NA == NA, NaN != NA, a missing
# string may read as ""); `at` labels the elements by C-order index.
compare_values <- function(what, got, want, at = seq_along(want) - 1) {
  if (length(got) != length(want))
    return(sprintf("%s: %d elements, want %d", what, length(got), length(want)))
  if (is.character(got) && is.character(want)) got[is.na(want) & got %in% ""] <- NA
  same <- (is.na(got) & is.na(want)) | (!is.na(got) & !is.na(want) & got == want)
  if (is.double(got) && is.double(want)) same <- same & is.nan(got) == is.nan(want)
  bad <- which(!same)
  if (length(bad) == 0L) return(character())
  i <- head(bad, 5)
  sprintf("%s: %d of %d differ; at C-order %s got %s want %s", what, length(bad), length(want),
          paste(at[i], collapse = ","), paste(format(got[i], digits = 15), collapse = ","),
          paste(format(want[i], digits = 15), collapse = ","))
}

# Everything that is wrong with one array against its entry (empty: all good).
fixture_problems <- function(e, a) {
  shape <- as.numeric(unlist(e[["shape"]]))
  s <- e[["summary"]]
  raw <- a$read(fill_as_na = FALSE)
  out <- character()
  d <- as.numeric(dim(raw) %||% length(raw))
  if (!identical(d, shape) || (length(shape) > 1L && is.null(dim(raw))))
    return(sprintf("dim %s, want shape %s", paste(d, collapse = "x"), paste(shape, collapse = "x")))
  if (!identical(as.numeric(unlist(a$shape)), shape)) out <- c(out, "$shape differs from shape")
  if (!is.null(e[["data"]])) {
    got <- comparable(raw)
    want <- expected_values(e[["data"]], e[["dtype"]])
    out <- c(out, compare_values("data", got, want))
  }
  if (!is.null(e[["data_head"]])) {
    want <- expected_values(e[["data_head"]], e[["dtype"]])
    got <- as.double(c_order_at(raw, shape, seq_along(want) - 1))
    out <- c(out, compare_values("data_head", got, want))
  }
  if (!is.null(e[["probe"]])) {
    at <- as.numeric(names(e[["probe"]]))
    want <- expected_values(unname(e[["probe"]]), e[["dtype"]])
    out <- c(out, compare_values("probe", as.double(c_order_at(raw, shape, at)), want, at))
  }
  # Default reading: elements equal to the fill value (and only those) become
  # NA, except for bool; a NaN fill value leaves NaN as it is.
  if (is.numeric(raw) && e[["dtype"]] != "bool") {
    def <- a$read()
    na <- FALSE
    if (!identical(def, raw)) {
      na <- is.na(def) & !is.na(raw)
      if (!identical(is.na(def) & !na, is.na(raw)) || !identical(as.vector(def[!na]), as.vector(raw[!na])))
        out <- c(out, "default read differs from fill_as_na = FALSE beyond fill -> NA")
      fill <- suppressWarnings(as.numeric(a$data_type$fill_value))
      if (!isTRUE(all.equal(unique(as.double(raw[na])), fill, tolerance = 1e-7)))
        out <- c(out, "default read turns elements other than the fill value into NA")
    }
    if (!is.null(s[["fill_value_count"]]) && sum(na) != s[["fill_value_count"]])
      out <- c(out, sprintf("%d fill values read as NA, want %d", sum(na), s[["fill_value_count"]]))
  }
  if (!is.null(s)) {
    v <- as.double(raw)
    if (length(v) != s[["n"]]) out <- c(out, sprintf("n = %d, want %d", length(v), s[["n"]]))
    if (!is.null(s[["nan"]]) && sum(is.nan(v)) != s[["nan"]]) out <- c(out, "nan count differs")
    if (!is.null(s[["finite"]]) && sum(is.finite(v)) != s[["finite"]]) out <- c(out, "finite count differs")
    if (!is.null(s[["sum"]]) && !isTRUE(all.equal(sum(v[is.finite(v)]), s[["sum"]], tolerance = 1e-9)))
      out <- c(out, "sum differs")
    if (!is.null(s[["nonfill_sum"]])) {
      nf <- as.double(def[!is.na(def)])
      if (!isTRUE(all.equal(c(sum(nf), min(nf), max(nf)),
                            c(s[["nonfill_sum"]], s[["nonfill_min"]], s[["nonfill_max"]]), tolerance = 1e-9)))
        out <- c(out, "sum/min/max of the non-fill elements differ")
    }
  }
  out
}

# The expectations for one entry: pending entries give a classed error,
# deviations still differ, all others read their reference values.
# `fixture_array(e)` opens the entry's array (see fixture_opener()).
check_fixture_entry <- function(key, e, fixture_array) {
  twin <- e[["twin"]] %||% key
  if (twin %in% fixture_pending || e[["store"]] %in% fixture_pending_stores) {
    testthat::expect_error(fixture_array(e)$read(fill_as_na = FALSE), class = "zarr_error",
                           info = paste(key, "is pending; if it reads now, take it off `fixture_pending`"))
  } else if (twin %in% fixture_deviations) {
    testthat::expect_true(length(fixture_problems(e, fixture_array(e))) > 0L,
                          info = paste(key, "reads the reference values now: take it off `fixture_deviations`"))
  } else {
    testthat::expect_identical(fixture_problems(e, fixture_array(e)), character(), info = key)
  }
}

# ../shared/realworld: arrays other projects wrote (skips when absent)
realworld_dir <- function(sub = NULL) {
  d <- file.path(Sys.getenv("ZARR_FIXTURES_DIR", "../../../shared/fixtures"), "..", "realworld")
  if (!is.null(sub)) d <- file.path(d, sub)
  skip_if_not(dir.exists(d), sprintf("../shared/realworld/%s is not here", sub %||% ""))
  d
}
