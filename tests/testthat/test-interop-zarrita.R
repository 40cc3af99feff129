# Interoperability with zarrita.js, an independent Zarr implementation
# (tools/interop, see its README for what zarrita can encode and decode).
#
# Direction "R -> zarrita": the package writes arrays into a local store and
# tools/interop/read.mjs reads them back whole; its C-order data must equal
# what was written. Direction "zarrita -> R": tools/interop/write.mjs creates
# arrays from a JSON spec made here and the package reads them.
#
# The randomized tests use a fixed seed, ZARR_INTEROP_SEED to change it
# (and ZARR_INTEROP_N for the number of cases per direction); every failure
# message names the seed and the case, so that it can be reproduced.
#
# Values are kept in a canonical form while the tests run: logical for bool,
# double for the integer types up to 32 bits, decimal strings for int64 and
# uint64, and double for float32 (values exactly representable in float32)
# and float64.

# ------------------------------------------------------------------ helpers

zi_all_dtypes <- c("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64", "float32", "float64")

# int64/uint64 are read as bit64::integer64; without bit64 they are left out.
zi_dtypes <- function() {
  if (requireNamespace("bit64", quietly = TRUE)) zi_all_dtypes
  else setdiff(zi_all_dtypes, c("int64", "uint64"))
}

zi_seed <- function() as.integer(Sys.getenv("ZARR_INTEROP_SEED", "20261121"))
zi_n_random <- function() as.integer(Sys.getenv("ZARR_INTEROP_N", "40"))

zi_kind <- function(dtype) {
  switch(dtype, bool = "bool", int64 = , uint64 = "big", float32 = , float64 = "float", "int")
}

zi_size <- function(dtype) {
  switch(dtype, bool = , int8 = , uint8 = 1L, int16 = , uint16 = 2L, int32 = , uint32 = , float32 = 4L, 8L)
}

zi_int_range <- function(dtype) {
  switch(dtype,
    int8 = c(-128, 127), int16 = c(-32768, 32767),
    int32 = c(-2147483647, 2147483647), # -2^31 is R's NA_integer_
    uint8 = c(0, 255), uint16 = c(0, 65535), uint32 = c(0, 4294967295))
}

# Round doubles to the nearest float32.
zi_f32 <- function(x) readBin(writeBin(as.double(x), raw(), size = 4L), "double", size = 4L, n = length(x))

# Random decimal strings of 64-bit integers (unsigned ones kept <= 2^63 - 1,
# the largest that bit64::integer64 holds).
zi_rand_big <- function(n, signed) {
  one <- function() {
    r <- stats::runif(1)
    if (r < 0.1) return(if (signed && stats::runif(1) < 0.5) "-9223372036854775807" else "9223372036854775807")
    nd <- if (r < 0.4) sample(1:4, 1) else sample(5:19, 1)
    first <- if (nd == 19) sample(1:8, 1) else sample(1:9, 1)
    s <- paste0(first, paste(sample(0:9, nd - 1, TRUE), collapse = ""))
    if (stats::runif(1) < 0.05) s <- "0"
    if (signed && s != "0" && stats::runif(1) < 0.5) s <- paste0("-", s)
    s
  }
  vapply(seq_len(n), function(i) one(), "")
}

# Put special values at random places of x.
zi_sprinkle <- function(x, specials) {
  n <- length(x)
  if (n == 0L) return(x)
  k <- min(n, length(specials), max(1L, n %/% 4L))
  at <- sample.int(n, k)
  x[at] <- sample(specials, k)
  x
}

# n random values of a data type, none equal to `fill` (in canonical form).
zi_values <- function(dtype, n, fill = NULL, specials = TRUE) {
  kind <- zi_kind(dtype)
  v <- switch(kind,
    bool = sample(c(TRUE, FALSE), n, TRUE),
    int = {
      rg <- zi_int_range(dtype)
      x <- if (stats::runif(1) < 0.5) sample(-50:50, n, TRUE) else floor(stats::runif(n, rg[1], rg[2] + 1))
      x <- pmin(pmax(as.double(x), rg[1]), rg[2])
      if (specials) zi_sprinkle(x, c(rg, 0, 1)) else x
    },
    big = zi_rand_big(n, dtype == "int64"),
    float = {
      if (dtype == "float32") {
        x <- zi_f32(stats::rnorm(n) * 10^sample(-30:30, n, TRUE))
        sp <- c(NaN, Inf, -Inf, 0, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45,
                zi_f32(1 / 3), 16777217 - 1)
      } else {
        x <- stats::rnorm(n) * 10^sample(-300:300, n, TRUE)
        sp <- c(NaN, Inf, -Inf, 0, .Machine$double.xmax, -.Machine$double.xmax, 4.9406564584124654e-324,
                1 / 3, 2^53 + 2)
      }
      if (specials) zi_sprinkle(x, sp) else x
    })
  if (!is.null(fill) && kind != "bool") {
    same <- if (kind == "float") (v == fill) %in% TRUE else v == fill
    if (any(same)) {
      alt <- switch(kind, int = if (fill == 1) 2 else 1, big = if (fill == "7") "8" else "7", float = 0.5)
      v[same] <- alt
    }
  }
  v
}

zi_default_fill <- function(dtype) {
  switch(dtype, bool = FALSE, int8 = -128, int16 = -32768, int32 = -2147483648,
         int64 = "-9223372036854775808", uint8 = 255, uint16 = 65535, uint32 = 4294967295,
         uint64 = "18446744073709551615", NaN)
}

# A random fill value: the package's default or another one.
zi_random_fill <- function(dtype) {
  if (stats::runif(1) < 0.4) return(zi_default_fill(dtype))
  switch(zi_kind(dtype),
    bool = sample(c(TRUE, FALSE), 1),
    int = sample(c(0, 1, zi_int_range(dtype)[2]), 1),
    big = sample(c("0", "42", "9223372036854775807"), 1),
    float = {
      f <- sample(c(0, -9999.5, Inf, -Inf, NaN, 1e30), 1)
      if (dtype == "float32") zi_f32(f) else f
    })
}

# Canonical value -> R input for $write()
zi_to_r <- function(v, dtype) {
  switch(dtype,
    bool = as.logical(v),
    int8 = , int16 = , int32 = , uint8 = , uint16 = as.integer(v),
    int64 = , uint64 = bit64::as.integer64(v),
    as.double(v))
}

zi_r_type <- function(dtype) {
  switch(dtype, bool = "logical", int8 = , int16 = , int32 = , uint8 = , uint16 = "integer",
         int64 = , uint64 = "integer64", "double")
}

# zarrita's JSON values -> canonical form
zi_from_json <- function(data, dtype) {
  if (!length(data)) return(switch(zi_kind(dtype), bool = logical(), big = character(), double()))
  switch(zi_kind(dtype),
    bool = vapply(data, function(v) if (is.null(v)) NA else as.logical(v), NA),
    big = vapply(data, function(v) if (is.null(v)) NA_character_ else as.character(v), ""),
    json_numbers(data))
}

# Canonical values -> JSON values for write.mjs (NA -> null = fill value)
zi_to_json <- function(v, dtype) {
  switch(zi_kind(dtype),
    bool = as.logical(v),
    big = as.character(v),
    int = ifelse(is.na(v), NA_character_, format(v, scientific = FALSE, trim = TRUE)),
    float = {
      out <- sprintf("%.17g", v)
      out[is.nan(v)] <- "NaN"
      out[v %in% Inf] <- "Infinity"
      out[v %in% -Inf] <- "-Infinity"
      out[is.na(v) & !is.nan(v)] <- NA_character_
      out
    })
}

zi_fill_json <- function(fill, dtype) {
  if (dtype == "bool") return(fill)
  zi_to_json(fill, dtype)
}

# Column-major canonical values -> C order
zi_c_order <- function(v, shape) {
  if (length(shape) <= 1L) return(v)
  as.vector(aperm(array(v, shape), rev(seq_along(shape))))
}

zi_fmt_value <- function(v) {
  if (is.character(v)) return(ifelse(is.na(v), "NA", v))
  if (is.logical(v)) return(as.character(v))
  ifelse(is.na(v) & !is.nan(v), "NA", sprintf("%.17g", v))
}

# Compare two canonical vectors (column-major, array of `shape`); NULL when
# equal, otherwise a description of the first differences.
zi_diff <- function(got, want, shape) {
  if (length(got) != length(want))
    return(sprintf("length %d, expected %d", length(got), length(want)))
  if (identical(got, want)) return(NULL)
  same <- if (is.double(got) && is.double(want)) {
    (got == want) %in% TRUE | (is.nan(got) & is.nan(want)) | (is.na(got) & !is.nan(got) & is.na(want) & !is.nan(want))
  } else {
    (got == want) %in% TRUE | (is.na(got) & is.na(want))
  }
  if (all(same)) {
    if (!identical(typeof(got), typeof(want)))
      return(sprintf("type %s, expected %s", typeof(got), typeof(want)))
    return(NULL)
  }
  bad <- which(!same)
  at <- if (length(shape) > 1L) arrayInd(bad, shape) else matrix(bad)
  show <- utils::head(seq_along(bad), 5L)
  paste0(length(bad), " of ", length(got), " elements differ, e.g. ",
         paste(sprintf("[%s] %s (expected %s)", apply(at[show, , drop = FALSE], 1, paste, collapse = ","),
                       zi_fmt_value(got[bad[show]]), zi_fmt_value(want[bad[show]])), collapse = "; "))
}

# Human-readable summary of a case, for failure messages
zi_describe <- function(cs) {
  cd <- vapply(cs$codecs, function(c) {
    cfg <- c$configuration
    if (!length(cfg)) return(c$name)
    paste0(c$name, "(", paste(names(cfg), vapply(cfg, function(x) paste(unlist(x), collapse = ","), ""),
                              sep = "=", collapse = ", "), ")")
  }, "")
  ord <- if (is.character(cs$order)) cs$order else paste0("transpose[", paste(cs$order, collapse = ","), "]")
  sprintf("%s shape=[%s] chunks=[%s] order=%s endian=%s codecs=%s sep='%s'%s fill=%s NAs=%d%s",
          cs$dtype, paste(cs$shape, collapse = ","), paste(cs$chunk, collapse = ","), ord, cs$endian,
          if (length(cd)) paste(cd, collapse = " > ") else "none", cs$sep,
          if (!is.null(cs$key_encoding) && cs$key_encoding != "default") paste0(" keys=", cs$key_encoding) else "",
          zi_fmt_value(cs$fill), sum(cs$mask),
          if (!is.null(cs$patch)) " +partial overwrite" else "")
}

# A test case: data type, shape, chunks, storage and codecs, and the data.
#   order: "R" (the package's default transpose), "C" (portable, none), or a
#          0-based permutation for a transpose codec
#   codecs: bytes -> bytes codecs, list(name =, configuration =)
#   mask: elements written as missing (R: NA; zarrita: null), stored as fill
zi_case <- function(dtype, shape, chunk = shape, order = "R", endian = "little", codecs = list(),
                    sep = ".", fill = zi_default_fill(dtype), mask_p = 0.1, specials = TRUE,
                    key_encoding = "default") {
  n <- prod(shape)
  vals <- zi_values(dtype, n, fill, specials)
  mask <- if (mask_p > 0) stats::runif(n) < mask_p else rep(FALSE, n)
  list(dtype = dtype, shape = shape, chunk = pmax(1, chunk), order = order, endian = endian,
       codecs = codecs, sep = sep, fill = fill, vals = vals, mask = mask, key_encoding = key_encoding)
}

# Adjust a case to what the tests can check. The substitutes are recorded in
# the case, so failure messages describe what was really written.
#  * 64-bit fill values that a double cannot hold (uint64's default 2^64 - 1,
#    2^63 - 1): zarrita parses zarr.json with JSON.parse and gets them wrong
#    (zarrita's limitation), so R -> zarrita cases do not use them (the
#    bytes the package stores for them are checked in a test of their own).
#  * zarrita byte-swaps bool data in groups of 4 bytes under a big endian
#    bytes codec (its BoolArray has no BYTES_PER_ELEMENT; zarrita's bug), so
#    bool arrays are little endian.
zi_usable <- function(cs, direction) {
  f <- cs$fill
  if (direction == "R" && zi_kind(cs$dtype) == "big" && format(as.numeric(f), scientific = FALSE) != f)
    cs <- zi_set_fill(cs, "4503599627370496")
  if (cs$dtype == "bool") cs$endian <- "little"
  cs
}

# Change the fill value of a case; values equal to it are changed too.
zi_set_fill <- function(cs, fill) {
  cs$fill <- fill
  alt <- if (fill == "7") "8" else "7"
  cs$vals[cs$vals == fill] <- alt
  if (!is.null(cs$patch)) cs$patch$vals[cs$patch$vals == fill] <- alt
  cs
}

# Whether the fill value of a case is zero: an ordinary value, never read as
# NA; R writes NA there as NaN (floating point) or as the fill value, with a
# warning (integers).
zi_fill_zero <- function(cs) {
  zi_kind(cs$dtype) != "bool" && isTRUE(as.numeric(cs$fill) == 0)
}

# What is stored (canonical, column-major): the values, fill where missing
# (written by R: NaN for a floating point zero fill).
zi_stored <- function(cs, by_r = FALSE) {
  v <- cs$vals
  v[cs$mask] <- if (by_r && zi_fill_zero(cs) && zi_kind(cs$dtype) == "float") NaN else cs$fill
  if (!is.null(cs$patch)) {
    v <- array(v, cs$shape)
    v <- do.call(`[<-`, c(list(v), cs$patch$sel, list(value = cs$patch$vals)))
    v <- as.vector(v)
  }
  v
}

# What the package should read (canonical): NA where the fill value is
# (unless bool, a NaN fill value, which keeps NaN, or a zero fill value).
zi_expected_read <- function(cs, fill_as_na = TRUE) {
  v <- zi_stored(cs)
  kind <- zi_kind(cs$dtype)
  if (fill_as_na && kind != "bool" && !(kind == "float" && is.nan(cs$fill)) && !zi_fill_zero(cs)) {
    isfill <- if (kind == "float") (v == cs$fill) %in% TRUE else v == cs$fill
    v[isfill] <- NA
  }
  v
}

# The package's value -> canonical
zi_canon_r <- function(x, dtype) {
  if (zi_kind(dtype) == "big") return(as.character(x))
  v <- as.vector(x)
  if (zi_kind(dtype) == "int") return(as.double(v))
  v
}

# ----------------------------------------------------- R writes, zarrita reads

# Array metadata for a case, made with the package's builder; what the
# builder cannot express (transpose orders other than R's, the chunk key
# separator) is edited in the metadata list it produces.
zi_r_metadata <- function(cs) {
  def <- define_array(cs$dtype, cs$shape)
  def$chunk_shape <- cs$chunk
  if (identical(cs$order, "C")) def$portable <- TRUE
  def$remove_codec("zstd")
  if (cs$endian == "big") def$add_codec("bytes", list(endian = "big")) # reconfigures the bytes codec
  for (cd in cs$codecs) def$add_codec(cd$name, cd$configuration)
  def$fill_value <- if (zi_kind(cs$dtype) == "int") as.numeric(cs$fill) else cs$fill
  m <- def$metadata()
  names_ <- vapply(m$codecs, function(c) c$name, "")
  if (is.numeric(cs$order)) {
    tr <- list(name = "transpose", configuration = list(order = as.list(as.integer(cs$order))))
    if ("transpose" %in% names_) m$codecs[[match("transpose", names_)]] <- tr
    else m$codecs <- c(list(tr), m$codecs)
    names_ <- vapply(m$codecs, function(c) c$name, "")
  }
  if (!identical(cs$sep, "."))
    m$chunk_key_encoding <- list(name = "default", configuration = list(separator = cs$sep))
  m
}

zi_r_write <- function(z, name, cs) {
  arr <- z$add_array("/", name, zi_r_metadata(cs))
  x <- zi_to_r(cs$vals, cs$dtype)
  if (any(cs$mask)) x[cs$mask] <- NA
  if (length(cs$shape) > 1L) dim(x) <- cs$shape
  # NA into integers with a zero fill value: stored as 0, and said so
  withCallingHandlers(arr$write(x), zarr_warning_na = function(w) {
    if (zi_fill_zero(cs) && zi_kind(cs$dtype) %in% c("int", "big")) invokeRestart("muffleWarning")
  })
  if (!is.null(cs$patch)) {
    y <- zi_to_r(cs$patch$vals, cs$dtype)
    if (length(cs$shape) > 1L) dim(y) <- lengths(cs$patch$sel)
    arr$write(y, exact_sel(arr, cs$patch$sel))
  }
  invisible(arr)
}

# Run `expr`; an error or warning becomes a test failure naming the case.
zi_guard <- function(expr, what) {
  msgs <- character()
  res <- withCallingHandlers(
    tryCatch(expr, error = function(e) {
      msgs <<- c(msgs, paste("error:", conditionMessage(e)))
      NULL
    }),
    warning = function(w) {
      msgs <<- c(msgs, paste("warning:", conditionMessage(w)))
      invokeRestart("muffleWarning")
    })
  if (length(msgs)) testthat::fail(paste0(what, "\n  ", paste(msgs, collapse = "\n  ")))
  list(ok = !length(msgs), value = res)
}

# Write the cases with the package, read them with zarrita, compare.
# `label` prefixes failure messages (seed and case number for random tests).
check_r_to_zarrita <- function(cases, label = "", ids = seq_along(cases)) {
  cases <- lapply(cases, zi_usable, direction = "R")
  p <- local_store_path()
  z <- create_zarr(p)
  names_ <- sprintf("a%03d", seq_along(cases))
  written <- vapply(seq_along(cases), function(i) {
    zi_guard(zi_r_write(z, names_[i], cases[[i]]),
             sprintf("%sR could not write case %d: %s", label, ids[i], zi_describe(cases[[i]])))$ok
  }, TRUE)
  if (!any(written)) return(invisible())
  paths <- paste0("/", names_[written])
  res <- tryCatch(run_node("read.mjs", c(p, paths)), error = function(e) e)
  if (inherits(res, "error")) {
    # find the arrays zarrita cannot read
    for (i in which(written)) {
      r1 <- tryCatch(run_node("read.mjs", c(p, paste0("/", names_[i]))), error = function(e) e)
      if (inherits(r1, "error"))
        testthat::fail(sprintf("%szarrita could not read case %d: %s\n  %s", label, ids[i],
                               zi_describe(cases[[i]]), conditionMessage(r1)))
    }
    return(invisible())
  }
  for (i in which(written)) {
    cs <- cases[[i]]
    r <- res[[paste0("/", names_[i])]]
    what <- sprintf("%scase %d: %s", label, ids[i], zi_describe(cs))
    meta_ok <- identical(as.numeric(unlist(r$shape)), as.numeric(cs$shape)) &&
      identical(as.numeric(unlist(r$chunk_shape)), as.numeric(cs$chunk)) &&
      identical(r$dtype, cs$dtype)
    fill_got <- zi_from_json(list(r$fill_value), cs$dtype)
    fill_ok <- is.null(zi_diff(fill_got, zi_from_json(list(zi_fill_json(cs$fill, cs$dtype)), cs$dtype), 1))
    testthat::expect(meta_ok && fill_ok, sprintf(
      "%s\n  zarrita sees shape [%s], chunks [%s], dtype %s, fill %s", what,
      paste(unlist(r$shape), collapse = ","), paste(unlist(r$chunk_shape), collapse = ","),
      r$dtype, zi_fmt_value(fill_got)))
    got <- zi_from_json(r$data, cs$dtype)
    got <- as.vector(c_order_array(got, cs$shape)) # C order -> R order
    d <- zi_diff(got, zi_stored(cs, by_r = TRUE), cs$shape)
    testthat::expect(is.null(d), sprintf("%s\n  zarrita read: %s", what, d))
  }
  invisible()
}

# ----------------------------------------------------- zarrita writes, R reads

zi_spec_codecs <- function(cs) {
  out <- list()
  if (is.numeric(cs$order)) {
    out <- list(list(name = "transpose", configuration = list(order = I(as.integer(cs$order)))))
  } else if (identical(cs$order, "R") && length(cs$shape) > 1L) {
    out <- list(list(name = "transpose", configuration = list(order = I(rev(seq_along(cs$shape)) - 1L))))
  }
  out <- c(out, list(list(name = "bytes", configuration = list(endian = cs$endian))))
  for (cd in cs$codecs) {
    cfg <- cd$configuration
    if (cd$name == "blosc") {
      cfg$typesize <- cfg$typesize %||% zi_size(cs$dtype)
      cfg$blocksize <- cfg$blocksize %||% 0L
    }
    out <- c(out, list(if (length(cfg)) list(name = cd$name, configuration = cfg) else list(name = cd$name)))
  }
  out
}

zi_spec_array <- function(path, cs) {
  v <- cs$vals
  v[cs$mask] <- NA
  data <- zi_to_json(zi_c_order(v, cs$shape), cs$dtype)
  a <- list(path = path, shape = I(as.integer(cs$shape)), chunk_shape = I(as.integer(cs$chunk)),
            data_type = cs$dtype, fill_value = zi_fill_json(cs$fill, cs$dtype),
            codecs = zi_spec_codecs(cs), data = I(data))
  if (cs$key_encoding == "v2") {
    a$chunk_key_encoding <- list(name = "v2", configuration = list(separator = cs$sep))
  } else {
    a$chunk_key_encoding <- list(name = "default", configuration = list(separator = cs$sep))
  }
  a
}

zi_run_write <- function(p, arrays, format = 3L) {
  spec <- list(store = p, zarr_format = format, node_encoders = TRUE, arrays = arrays)
  f <- tempfile(fileext = ".json")
  on.exit(unlink(f))
  writeLines(jsonlite::toJSON(spec, auto_unbox = TRUE, na = "null", null = "null", digits = NA), f)
  run_node("write.mjs", f)
}

# Read one array with the package and compare with the case.
zi_check_r_read <- function(z, path, cs, what, fill_as_na = TRUE) {
  withr::local_options(zarr.fill_as_na = fill_as_na)
  g <- zi_guard({
    arr <- z[[path]]
    x <- arr$read()
    sel <- cs$read_sel
    xs <- if (is.null(sel)) NULL else arr$read(exact_sel(arr, sel))
    list(x = x, xs = xs)
  }, sprintf("%s\n  R could not read it", what))
  if (!g$ok) return(invisible())
  x <- g$value$x
  want <- zi_expected_read(cs, fill_as_na)
  rt <- zi_r_type(cs$dtype)
  type_ok <- if (rt == "integer64") inherits(x, "integer64") else identical(typeof(x), rt)
  dims <- if (length(cs$shape) > 1L) as.integer(cs$shape) else NULL
  testthat::expect(type_ok && identical(dim(x), dims) && length(x) == prod(cs$shape), sprintf(
    "%s\n  R read %s of dim [%s], length %d; expected %s of shape [%s]", what, class(x)[1],
    paste(dim(x), collapse = ","), length(x), rt, paste(cs$shape, collapse = ",")))
  d <- zi_diff(zi_canon_r(x, cs$dtype), want, cs$shape)
  testthat::expect(is.null(d), sprintf("%s\n  R read: %s", what, d))
  if (!is.null(cs$read_sel)) {
    w <- do.call(`[`, c(list(array(want, cs$shape)), cs$read_sel, list(drop = FALSE)))
    d <- zi_diff(zi_canon_r(g$value$xs, cs$dtype), as.vector(w), dim(w))
    testthat::expect(is.null(d), sprintf("%s\n  R read of selection %s: %s", what,
                                          paste(vapply(cs$read_sel, paste, "", collapse = ","), collapse = " | "), d))
  }
  invisible()
}

check_zarrita_to_r <- function(cases, label = "", format = 3L, fill_as_na = TRUE, ids = seq_along(cases)) {
  cases <- lapply(cases, zi_usable, direction = "zarrita")
  p <- local_store_path()
  paths <- sprintf("/a%03d", seq_along(cases))
  arrays <- lapply(seq_along(cases), function(i) zi_spec_array(paths[i], cases[[i]]))
  res <- tryCatch(zi_run_write(p, arrays, format), error = function(e) e)
  ok <- rep(TRUE, length(cases))
  if (inherits(res, "error")) {
    # write the cases one by one, to find those zarrita cannot write
    unlink(p, recursive = TRUE)
    for (i in seq_along(cases)) {
      r1 <- tryCatch(zi_run_write(p, arrays[i], format), error = function(e) e)
      if (inherits(r1, "error")) {
        ok[i] <- FALSE
        testthat::fail(sprintf("%szarrita could not write case %d: %s\n  %s", label, ids[i],
                               zi_describe(cases[[i]]), conditionMessage(r1)))
      }
    }
  }
  if (!any(ok)) return(invisible())
  # Through the root group first; if that fails (one bad array spoils the
  # listing of the group), open each array as the root of its own store.
  z <- zi_guard({
    z <- open_zarr(p)
    z$arrays
    z
  }, sprintf("%sR could not open the store written by zarrita (cases %s)", label, paste(range(ids), collapse = "-")))
  for (i in which(ok)) {
    zi <- if (z$ok) z$value else tryCatch(open_zarr(file.path(p, sub("^/", "", paths[i]))), error = function(e) e)
    what <- sprintf("%scase %d: %s", label, ids[i], zi_describe(cases[[i]]))
    if (inherits(zi, "error")) {
      testthat::fail(sprintf("%s\n  R could not open it: %s", what, conditionMessage(zi)))
      next
    }
    zi_check_r_read(zi, if (z$ok) paths[i] else "/", cases[[i]], what, fill_as_na)
  }
  invisible()
}

# ------------------------------------------------------------- codec menus

zi_gzip <- function(level = 5L) list(name = "gzip", configuration = list(level = level))
zi_zstd <- function(level = 3L, checksum = FALSE) list(name = "zstd", configuration = list(level = level, checksum = checksum))
zi_blosc <- function(cname = "lz4", clevel = 5L, shuffle = "shuffle")
  list(name = "blosc", configuration = list(cname = cname, clevel = clevel, shuffle = shuffle))
zi_crc <- function() list(name = "crc32c", configuration = NULL)

# The codec chains of the fixed tests
zi_codec_menu <- function() {
  list(
    none = list(),
    gzip1 = list(zi_gzip(1L)),
    gzip9 = list(zi_gzip(9L)),
    zstd = list(zi_zstd(3L)),
    zstd_checksum = list(zi_zstd(5L, TRUE)),
    blosc_lz4_shuffle = list(zi_blosc("lz4", 5L, "shuffle")),
    blosc_lz4hc_bitshuffle = list(zi_blosc("lz4hc", 9L, "bitshuffle")),
    blosc_blosclz_noshuffle = list(zi_blosc("blosclz", 1L, "noshuffle")),
    blosc_zstd_bitshuffle = list(zi_blosc("zstd", 3L, "bitshuffle")),
    blosc_zlib_shuffle = list(zi_blosc("zlib", 6L, "shuffle")),
    blosc_clevel0 = list(zi_blosc("lz4", 0L, "noshuffle")),
    crc32c = list(zi_crc()),
    zstd_crc32c = list(zi_zstd(1L), zi_crc()),
    blosc_gzip_crc32c = list(zi_blosc("zstd", 1L, "shuffle"), zi_gzip(2L), zi_crc())
  )
}

# ------------------------------------------------------------ random cases

zi_random_codecs <- function() {
  one <- function() {
    switch(sample(c("gzip", "zstd", "blosc"), 1),
      gzip = zi_gzip(sample(0:9, 1)),
      zstd = zi_zstd(sample(1:19, 1), sample(c(TRUE, FALSE), 1)),
      blosc = zi_blosc(sample(c("blosclz", "lz4", "lz4hc", "zstd", "zlib"), 1), sample(0:9, 1),
                       sample(c("noshuffle", "shuffle", "bitshuffle"), 1)))
  }
  k <- sample(0:2, 1, prob = c(0.2, 0.65, 0.15))
  out <- lapply(seq_len(k), function(i) one())
  if (stats::runif(1) < 0.3) out <- c(out, list(zi_crc()))
  out
}

zi_random_case <- function(direction) {
  dtype <- sample(zi_dtypes(), 1)
  rank <- sample(1:4, 1)
  maxd <- c(40, 13, 7, 5)[rank]
  shape <- sample(seq_len(maxd), rank, TRUE)
  chunk <- vapply(shape, function(s) {
    r <- stats::runif(1)
    if (r < 0.1) s + sample(1:3, 1) else if (r < 0.2) s else sample(seq_len(s), 1)
  }, 0)
  order <- switch(sample(c("R", "C", "perm"), 1),
                  R = "R", C = "C", perm = sample(seq_len(rank)) - 1L)
  endian <- if (zi_size(dtype) > 1L && stats::runif(1) < 0.4) "big" else "little"
  sep <- sample(c(".", "/"), 1)
  keys <- if (direction == "zarrita" && stats::runif(1) < 0.25) "v2" else "default"
  cs <- zi_case(dtype, shape, chunk, order, endian, zi_random_codecs(), sep = sep,
                fill = zi_random_fill(dtype), mask_p = sample(c(0, 0.05, 0.3), 1), key_encoding = keys)
  if (direction == "R" && stats::runif(1) < 0.4) {
    # overwrite a random (unordered, not necessarily contiguous) block
    sel <- lapply(shape, function(s) sample.int(s, sample.int(s, 1)))
    cs$patch <- list(sel = sel, vals = zi_values(dtype, prod(lengths(sel)), cs$fill))
  }
  if (direction == "zarrita" && stats::runif(1) < 0.5) {
    cs$read_sel <- lapply(shape, function(s) sample.int(s, sample.int(s, 1), replace = stats::runif(1) < 0.3))
  }
  cs
}

zi_batches <- function(n, size) split(seq_len(n), ceiling(seq_len(n) / size))

# ---------------------------------------------------------------- R -> zarrita

test_that("zarrita reads every data type the package writes, in R and C order", {
  skip_without_zarrita()
  withr::local_seed(101)
  cases <- list()
  for (dt in zi_dtypes()) for (ord in c("R", "C")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(7, 5, 3), c(3, 2, 2), order = ord, codecs = list(zi_zstd()))
  }
  check_r_to_zarrita(cases)
})

test_that("zarrita reads arrays of 1 to 4 dimensions with ragged edge chunks", {
  skip_without_zarrita()
  withr::local_seed(102)
  shapes <- list(list(29, 8), list(c(11, 1), c(4, 1)), list(c(9, 7), c(2, 5)),
                 list(c(5, 6, 7), c(2, 4, 3)), list(c(1, 9, 4), c(1, 2, 4)),
                 list(c(3, 4, 5, 6), c(2, 3, 2, 4)), list(c(2, 3, 1, 5), c(5, 2, 1, 2)))
  cases <- list()
  for (s in shapes) for (ord in c("R", "C")) for (dt in c("int16", "float64", "uint8")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, s[[1]], s[[2]], order = ord, codecs = list(zi_gzip()))
  }
  check_r_to_zarrita(cases)
})

test_that("zarrita decodes every codec chain the package writes", {
  skip_without_zarrita()
  withr::local_seed(103)
  cases <- list()
  menu <- zi_codec_menu()
  for (nm in names(menu)) for (ord in c("R", "C")) for (dt in c("int32", "float32", "bool", "uint16")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(6, 9), c(4, 4), order = ord, codecs = menu[[nm]])
  }
  check_r_to_zarrita(cases)
})

test_that("zarrita reads big endian arrays written by the package", {
  skip_without_zarrita()
  withr::local_seed(104)
  cases <- list()
  for (dt in setdiff(zi_dtypes(), "bool")) for (ord in list("R", "C", c(1L, 2L, 0L))) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(4, 5, 3), c(3, 2, 3), order = ord, endian = "big",
                                           codecs = list(zi_blosc("lz4", 5L, "shuffle")))
  }
  cases[[length(cases) + 1L]] <- zi_case("float64", c(8, 3), c(3, 3), endian = "big", codecs = list())
  cases[[length(cases) + 1L]] <- zi_case("int64", 17, 5, endian = "big", codecs = list(zi_crc()))
  check_r_to_zarrita(cases)
})

test_that("zarrita sees NaN, Inf, -Inf and the fill value where R wrote NA", {
  skip_without_zarrita()
  withr::local_seed(105)
  cases <- list()
  for (dt in c("float32", "float64")) for (fill in list(NaN, -9999.5, Inf, -Inf, 0)) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(10, 4), c(3, 3), fill = fill, mask_p = 0.3)
  }
  for (dt in setdiff(zi_dtypes(), c("float32", "float64"))) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(5, 6), c(2, 4), mask_p = 0.3)
    cases[[length(cases) + 1L]] <- zi_case(dt, c(5, 6), c(2, 4), fill = zi_random_fill(dt), mask_p = 0.3)
  }
  # a fill value of 1 for integers, TRUE for bool
  cases[[length(cases) + 1L]] <- zi_case("bool", 12, 5, fill = TRUE, mask_p = 0.3)
  cases[[length(cases) + 1L]] <- zi_case("uint8", 12, 5, fill = 1, mask_p = 0.3)
  check_r_to_zarrita(cases)
})

test_that("zarrita reads chunks the package never wrote as the fill value", {
  skip_without_zarrita()
  withr::local_seed(106)
  p <- local_store_path()
  z <- create_zarr(p)
  def <- define_array("int16", c(10, 7))
  def$chunk_shape <- c(3, 3)
  def$fill_value <- 7
  arr <- z$add_array("/", "a", def)
  arr$write(matrix(-(1:6), 2, 3)) # only chunk (0, 0) exists
  def <- define_array("float32", c(5, 4))
  def$chunk_shape <- c(2, 2)
  def$portable <- TRUE
  arr2 <- z$add_array("/", "b", def) # nothing written: only the fill value
  res <- run_node("read.mjs", c(p, "/a", "/b"))
  want <- matrix(7, 10, 7)
  want[1:2, 1:3] <- -(1:6)
  expect_identical(c_order_array(json_numbers(res[["/a"]]$data), c(10, 7)), want)
  expect_identical(json_numbers(res[["/b"]]$data), rep(NaN, 20))
  expect_identical(res[["/b"]]$fill_value, "NaN")
})

test_that("zarrita reads 64-bit integers and large uint64 written by the package", {
  skip_without_zarrita()
  skip_if_not_installed("bit64")
  p <- local_store_path()
  z <- create_zarr(p)
  big <- c("9223372036854775807", "-9223372036854775807", "0", "-1", "9007199254740993", "123456789012345678")
  a <- z$add_array("/", "i", define_array("int64", 6))
  a$write(bit64::as.integer64(big))
  # the default fill value of uint64, 2^64 - 1, stands for NA
  u <- z$add_array("/", "u", define_array("uint64", 4))
  u$write(bit64::as.integer64(c("9223372036854775807", NA, "0", NA)))
  res <- run_node("read.mjs", c(p, "/i", "/u"))
  expect_identical(unlist(res[["/i"]]$data), big)
  expect_identical(res[["/i"]]$fill_value, "-9223372036854775808")
  expect_identical(unlist(res[["/u"]]$data),
                   c("9223372036854775807", "18446744073709551615", "0", "18446744073709551615"))
  # zarrita's JSON.parse rounds the fill value to 2^64; the document has it exactly
  expect_true(any(grepl('"fill_value": 18446744073709551615,', readLines(file.path(p, "u", "zarr.json")), fixed = TRUE)))
})

test_that("zarrita reads uint64 values beyond 2^63 - 1 the package writes from doubles", {
  skip_without_zarrita()
  p <- local_store_path()
  z <- create_zarr(p)
  def <- define_array("uint64", 4)
  def$fill_value <- "0"
  b <- z$add_array("/", "u", def)
  warned <- character()
  withCallingHandlers(b$write(c(2^64 - 2048, 2^63, 1, 2^53)), warning = function(w) {
    warned <<- c(warned, conditionMessage(w))
    invokeRestart("muffleWarning")
  })
  expect_identical(warned, character())
  res <- run_node("read.mjs", c(p, "/u"))
  expect_identical(unlist(res[["/u"]]$data),
                   c("18446744073709549568", "9223372036854775808", "1", "9007199254740992"))
})

test_that("zarrita reads 0-d arrays, empty arrays and both chunk key separators", {
  skip_without_zarrita()
  withr::local_seed(107)
  p <- local_store_path()
  z <- create_zarr(p)
  z$add_array("/", "s", define_array("float64", integer()))$write(-2.5)
  z$add_array("/", "e", define_array("int32", c(0, 3)))
  for (sep in c(".", "/")) {
    cs <- zi_case("int32", c(5, 5, 2), c(2, 3, 1), sep = sep)
    zi_r_write(z, paste0("k", if (sep == ".") "dot" else "slash"), cs)
    key <- if (sep == ".") "c.2.1.1" else file.path("c", "2", "1", "1")
    expect_true(file.exists(file.path(p, paste0("k", if (sep == ".") "dot" else "slash"), key)))
    res <- run_node("read.mjs", c(p, paste0("/k", if (sep == ".") "dot" else "slash")))[[1]]
    expect_null(zi_diff(as.vector(c_order_array(zi_from_json(res$data, "int32"), cs$shape)), zi_stored(cs), cs$shape))
  }
  res <- run_node("read.mjs", c(p, "/s", "/e"))
  expect_identical(res[["/s"]]$shape, list())
  expect_identical(json_numbers(res[["/s"]]$data), -2.5)
  expect_identical(unlist(res[["/e"]]$shape), c(0L, 3L))
  expect_length(res[["/e"]]$data, 0)
})

test_that("as_zarr() output (default codecs) is readable by zarrita", {
  skip_without_zarrita()
  p <- local_store_path()
  x <- array(c(seq(-1, 1, length.out = 59), NA), c(3, 4, 5))
  as_zarr(x, name = "x", location = p)
  res <- run_node("read.mjs", c(p, "/x"))[["/x"]]
  want <- x
  want[is.na(want)] <- NaN # R's NA is a NaN to zarrita
  expect_identical(res$dtype, "float64")
  expect_identical(c_order_array(json_numbers(res$data), c(3, 4, 5)), want)
  p2 <- local_store_path()
  as_zarr(matrix(1:12, 3), location = p2) # a root array
  res <- run_node("read.mjs", c(p2, "/"))[["/"]]
  expect_identical(c_order_array(as.integer(json_numbers(res$data)), c(3, 4)), matrix(1:12, 3))
})

test_that("zarrita reads what `[<-` wrote into an array", {
  skip_without_zarrita()
  p <- local_store_path()
  z <- create_zarr(p)
  def <- define_array("int32", c(6, 7))
  def$chunk_shape <- c(4, 3)
  arr <- z$add_array("/", "a", def)
  arr[, ] <- matrix(1:42, 6, 7)
  arr[2:4, c(7, 1)] <- matrix(-(1:6), 3, 2)
  arr[6, 3] <- NA
  want <- matrix(1:42, 6, 7)
  want[2:4, c(7, 1)] <- -(1:6)
  want[6, 3] <- -2147483648 # the fill value
  res <- run_node("read.mjs", c(p, "/a"))[["/a"]]
  expect_identical(c_order_array(json_numbers(res$data), c(6, 7)), want + 0)
})

# ---------------------------------------------------------------- zarrita -> R

test_that("the package reads every data type zarrita writes, in any dimension order", {
  skip_without_zarrita()
  withr::local_seed(201)
  cases <- list()
  for (dt in zi_dtypes()) for (ord in list("C", "R", c(0L, 1L, 2L), c(1L, 0L, 2L), c(2L, 0L, 1L))) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(7, 5, 3), c(3, 2, 2), order = ord, codecs = list(zi_zstd()),
                                           fill = zi_random_fill(dt), sep = "/")
  }
  check_zarrita_to_r(cases)
})

test_that("the package reads zarrita arrays of 1 to 4 dimensions with ragged edge chunks", {
  skip_without_zarrita()
  withr::local_seed(202)
  shapes <- list(list(29, 8), list(c(11, 1), c(4, 1)), list(c(9, 7), c(2, 5)),
                 list(c(5, 6, 7), c(2, 4, 3)), list(c(1, 9, 4), c(1, 2, 4)),
                 list(c(3, 4, 5, 6), c(2, 3, 2, 4)), list(c(2, 3, 1, 5), c(5, 2, 1, 2)))
  cases <- list()
  for (s in shapes) for (ord in c("R", "C")) for (dt in c("int16", "float64", "uint8")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, s[[1]], s[[2]], order = ord, codecs = list(zi_blosc()), sep = "/")
  }
  # a transpose codec on a 1-d array, and 4-d permutations
  cases[[length(cases) + 1L]] <- zi_case("int32", 13, 4, order = 0L, sep = "/")
  cases[[length(cases) + 1L]] <- zi_case("float32", c(3, 4, 2, 5), c(2, 2, 2, 2), order = c(2L, 0L, 3L, 1L), sep = "/")
  cases[[length(cases) + 1L]] <- zi_case("uint32", c(3, 4, 2, 5), c(3, 3, 1, 4), order = c(3L, 1L, 0L, 2L), sep = "/")
  check_zarrita_to_r(cases)
})

test_that("the package decodes every codec chain zarrita writes", {
  skip_without_zarrita()
  withr::local_seed(203)
  cases <- list()
  menu <- zi_codec_menu()
  for (nm in names(menu)) for (ord in c("R", "C")) for (dt in c("int32", "float32", "bool", "uint16", "float64")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(6, 9), c(4, 4), order = ord, codecs = menu[[nm]], sep = "/")
  }
  check_zarrita_to_r(cases)
})

test_that("the package reads big endian arrays written by zarrita", {
  skip_without_zarrita()
  withr::local_seed(204)
  cases <- list()
  for (dt in setdiff(zi_dtypes(), "bool")) for (ord in list("R", "C", c(1L, 2L, 0L))) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(4, 5, 3), c(3, 2, 3), order = ord, endian = "big",
                                           codecs = list(zi_blosc("zstd", 3L, "bitshuffle")), sep = "/")
  }
  cases[[length(cases) + 1L]] <- zi_case("float64", c(8, 3), c(3, 3), endian = "big", codecs = list(), sep = "/")
  cases[[length(cases) + 1L]] <- zi_case("int64", 17, 5, endian = "big", codecs = list(zi_gzip(), zi_crc()), sep = "/")
  check_zarrita_to_r(cases)
})

test_that("the package reads zarrita arrays with either chunk key encoding and separator", {
  skip_without_zarrita()
  withr::local_seed(205)
  cases <- list()
  for (keys in c("default", "v2")) for (sep in c("/", ".")) for (dt in c("int8", "float64")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(5, 4, 3), c(2, 3, 2), sep = sep, key_encoding = keys)
  }
  check_zarrita_to_r(cases)
})

test_that("the package reads fill values, NaN and infinities written by zarrita", {
  skip_without_zarrita()
  withr::local_seed(206)
  cases <- list()
  for (dt in c("float32", "float64")) for (fill in list(NaN, -9999.5, Inf, -Inf, 0)) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(10, 4), c(3, 3), fill = fill, mask_p = 0.3, sep = "/")
  }
  for (dt in setdiff(zi_dtypes(), c("float32", "float64"))) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(5, 6), c(2, 4), mask_p = 0.3, sep = "/")
    cases[[length(cases) + 1L]] <- zi_case(dt, c(5, 6), c(2, 4), fill = zi_random_fill(dt), mask_p = 0.3, sep = "/")
  }
  check_zarrita_to_r(cases)
  # with zarr.fill_as_na = FALSE the stored values come back as they are
  cases <- list(zi_case("int16", c(6, 5), c(4, 4), fill = 0, mask_p = 0.3, sep = "/"),
                zi_case("uint64", 9, 4, fill = "0", mask_p = 0.3, sep = "/"),
                zi_case("float64", 9, 4, fill = -1, mask_p = 0.3, sep = "/"))
  if (!requireNamespace("bit64", quietly = TRUE)) cases[[2]] <- NULL
  check_zarrita_to_r(cases, fill_as_na = FALSE)
})

test_that("the package reads 0-d arrays, empty arrays and missing chunks written by zarrita", {
  skip_without_zarrita()
  p <- local_store_path()
  arrays <- list(
    list(path = "/s", shape = I(integer()), chunk_shape = I(integer()), data_type = "int16",
         fill_value = "0", data = I("-7")),
    list(path = "/e", shape = I(c(0L, 4L)), chunk_shape = I(c(2L, 2L)), data_type = "float32",
         fill_value = "NaN", data = I(character())),
    # no data: every chunk is missing
    list(path = "/m", shape = I(c(3L, 5L)), chunk_shape = I(c(2L, 2L)), data_type = "uint8", fill_value = "9"))
  zi_run_write(p, arrays)
  z <- open_zarr(p)
  expect_identical(z[["/s"]]$read(), -7L)
  expect_identical(dim(z[["/e"]]$read()), c(0L, 4L))
  expect_identical(z[["/m"]]$read(fill_as_na = FALSE), matrix(9L, 3, 5))
  expect_true(all(is.na(z[["/m"]]$read())))
})

test_that("`[` reads arrays written by zarrita", {
  skip_without_zarrita()
  p <- local_store_path()
  x <- array(seq_len(5 * 4 * 3) / 4, c(5, 4, 3))
  zi_run_write(p, list(
    list(path = "/g/x", shape = I(c(5L, 4L, 3L)), chunk_shape = I(c(2L, 3L, 2L)), data_type = "float64",
         fill_value = "NaN", codecs = list(list(name = "transpose", configuration = list(order = I(c(1L, 2L, 0L))))),
         data = I(zi_to_json(zi_c_order(as.vector(x), dim(x)), "float64")))))
  arr <- open_zarr(p)[["/g/x"]]
  expect_identical(arr[, , ], x)
  expect_identical(arr[2, , 3], x[2, , 3])
  expect_identical(arr[c(5, 1), 4:2, -2], x[c(5, 1), 4:2, -2])
  expect_identical(arr[c(TRUE, FALSE), , 1, drop = FALSE], x[c(TRUE, FALSE), , 1, drop = FALSE])
})

test_that("the package reads Zarr v2 arrays written by zarrita", {
  skip_without_zarrita()
  withr::local_seed(207)
  cases <- list()
  comps <- list(list(), list(zi_gzip(4L)), list(zi_zstd(2L)), list(zi_blosc("lz4", 5L, "bitshuffle")),
                list(zi_blosc("zlib", 3L, "shuffle")))
  for (dt in zi_dtypes()) for (ord in c("C", "R")) {
    cases[[length(cases) + 1L]] <- zi_case(dt, c(6, 5, 4), c(4, 2, 3), order = ord, sep = sample(c(".", "/"), 1),
                                           endian = if (zi_size(dt) > 1 && stats::runif(1) < 0.5) "big" else "little",
                                           codecs = comps[[sample(length(comps), 1)]],
                                           key_encoding = "v2", fill = zi_random_fill(dt))
  }
  check_zarrita_to_r(cases, format = 2L)
})

test_that("the package reads uint64 values beyond 2^63 - 1 written by zarrita", {
  skip_without_zarrita()
  skip_if_not_installed("bit64")
  p <- local_store_path()
  zi_run_write(p, list(list(path = "/u", shape = I(3L), chunk_shape = I(2L), data_type = "uint64", fill_value = "1",
                            data = I(c("18446744073709549568", "9223372036854775807", "2")))))
  # integer64 cannot hold 2^64 - 2048: NA, with a warning
  expect_warning(x <- open_zarr(p)[["/u"]]$read(), "could not be represented exactly")
  expect_s3_class(x, "integer64")
  expect_identical(as.character(x), c(NA, "9223372036854775807", "2"))
  # as doubles (2^63 - 1 rounds to 2^63, with a warning)
  withr::local_options(zarr.int64 = "double")
  expect_warning(y <- open_zarr(p)[["/u"]]$read(), "could not be represented exactly")
  expect_identical(y, c(18446744073709549568, 9223372036854775808, 2))
})

test_that("the zarr.int64 option is honoured on every read of an array written by zarrita", {
  skip_without_zarrita()
  skip_if_not_installed("bit64")
  p <- local_store_path()
  zi_run_write(p, list(list(path = "/i", shape = I(3L), chunk_shape = I(2L), data_type = "int64", fill_value = "0",
                            data = I(c("5", "-6", "7")))))
  arr <- open_zarr(p)[["/i"]]
  expect_s3_class(arr$read(), "integer64")
  withr::local_options(zarr.int64 = "double")
  expect_identical(arr$read(), c(5, -6, 7))
})

test_that("uint64 fill values above 2^63 - 1 (the package's own default) are read back", {
  skip_if_not_installed("bit64")
  # written by the package itself, with the default fill value 2^64 - 1
  p <- local_store_path()
  z <- create_zarr(p)
  z$add_array("/", "u", define_array("uint64", 4))$write(bit64::as.integer64(c(1, NA, 3, 4)))
  expect_identical(as.character(open_zarr(p)[["/u"]]$read()), c("1", NA, "3", "4"))
  # written by zarrita
  skip_without_zarrita()
  p2 <- local_store_path()
  zi_run_write(p2, list(list(path = "/u", shape = I(3L), chunk_shape = I(2L), data_type = "uint64",
                             fill_value = "18446744073709551615", data = I(c("5", NA, "6")))))
  expect_identical(as.character(open_zarr(p2)[["/u"]]$read()), c("5", NA, "6"))
})

# ------------------------------------------------------------------- random

test_that("random arrays written by the package are read by zarrita", {
  skip_without_zarrita()
  seed <- zi_seed()
  n <- zi_n_random()
  withr::local_seed(seed)
  cases <- lapply(seq_len(n), function(i) zi_random_case("R"))
  for (b in zi_batches(n, 10L)) {
    check_r_to_zarrita(cases[b], label = sprintf("[ZARR_INTEROP_SEED=%d, random R -> zarrita] ", seed), ids = b)
  }
})

test_that("random arrays written by zarrita are read by the package", {
  skip_without_zarrita()
  seed <- zi_seed()
  n <- zi_n_random()
  withr::local_seed(seed + 1L)
  cases <- lapply(seq_len(n), function(i) zi_random_case("zarrita"))
  for (b in zi_batches(n, 10L)) {
    check_zarrita_to_r(cases[b], label = sprintf("[ZARR_INTEROP_SEED=%d, random zarrita -> R] ", seed), ids = b)
  }
})

test_that("zarrita opens Zarr v2 stores written by R as v2 and reads them", {
  skip_without_zarrita()
  withr::local_options(zarr.format = 2L)
  p <- local_store_path()
  z <- create_zarr(p)
  expect_true(file.exists(file.path(p, ".zgroup")))
  set.seed(7)
  m16 <- matrix(sample(-300:300, 7 * 5), 7, 5)
  mf <- array(c(runif(23), NaN, Inf, -Inf, 0.5, 1), c(4, 7))
  b1 <- c(TRUE, FALSE, TRUE, TRUE, FALSE)
  d <- define_array("int16", dim(m16)); d$chunk_shape <- c(3, 2); d$portable <- TRUE  # order C
  z$add_array("/", "c_order", d)$write(m16)
  d <- define_array("float64", dim(mf)); d$chunk_shape <- c(3, 3)                   # order F
  d$remove_codec("zstd"); d$add_codec("gzip", list(level = 5))
  z$add_array("/", "f_order", d)$write(mf)
  d <- define_array("int16", dim(m16)); d$chunk_shape <- c(4, 4)
  d$remove_codec("zstd"); d$add_codec("blosc", list(cname = "lz4", clevel = 5, shuffle = "shuffle"))
  d$add_codec("bytes", list(endian = "big"))
  z$add_array("/", "blosc_be", d)$write(m16)
  d <- define_array("bool", length(b1)); d$chunk_shape <- 2
  z$add_array("/", "flags", d)$write(b1)
  expect_true(file.exists(file.path(p, "c_order", ".zarray")))
  expect_false(file.exists(file.path(p, "c_order", "zarr.json")))
  zarray <- jsonlite::read_json(file.path(p, "f_order", ".zarray"))
  expect_identical(zarray$order, "F")
  expect_identical(zarray$compressor$id, "gzip")
  expect_identical(jsonlite::read_json(file.path(p, "blosc_be", ".zarray"))$dtype, ">i2")

  got <- run_node("read.mjs", c(p, "/c_order", "/f_order", "/blosc_be", "/flags"))
  for (nm in names(got)) expect_identical(got[[nm]]$zarr_format, 2L, info = nm)
  expect_identical(c_order_array(as.integer(unlist(got[["/c_order"]]$data)), c(7, 5)), m16)
  expect_identical(c_order_array(json_numbers(got[["/f_order"]]$data), c(4, 7)), mf)
  expect_identical(c_order_array(as.integer(unlist(got[["/blosc_be"]]$data)), c(7, 5)), m16)
  expect_identical(unlist(got[["/flags"]]$data), b1)
  # and R reads its own v2 store back
  z2 <- open_zarr(p)
  expect_identical(z2$version, 2L)
  expect_identical(z2[["/f_order"]][, ], mf)
})

test_that("zarrita reads sharded arrays written by R", {
  skip_without_zarrita()
  p <- local_store_path()
  z <- create_zarr(p)
  set.seed(5)
  x <- matrix(sample(-1000:1000, 13 * 11, TRUE), 13, 11)
  d <- define_array("int16", dim(x)); d$chunk_shape <- c(6, 4)
  d$add_codec("sharding_indexed", list(chunk_shape = c(3, 2)))   # R order inside
  z$add_array("/", "r_order", d)$write(x)
  y <- array(as.double(1:(7 * 9 * 4)) / 4, c(7, 9, 4))
  d <- define_array("float32", dim(y)); d$chunk_shape <- c(4, 6, 2); d$portable <- TRUE
  d$add_codec("crc32c")
  d$add_codec("sharding_indexed", list(chunk_shape = c(2, 3, 1)))
  z$add_array("/", "c_order", d)$write(y)
  got <- run_node("read.mjs", c(p, "/r_order", "/c_order"))
  expect_identical(c_order_array(as.integer(unlist(got[["/r_order"]]$data)), dim(x)), x)
  expect_identical(c_order_array(json_numbers(got[["/c_order"]]$data), dim(y)), y)
})
