# Helpers for the tests against real Python clients from Debian: zarr-python 2
# with numcodecs (python3-zarr), xarray (python3-xarray) and GDAL's Python
# bindings (python3-gdal). Scripts are written to temporary files and run
# with system2(); they print one JSON document on stdout.

# The Python interpreter that has zarr-python: ZARR_PYTHON, else the system
# python3 (Debian's packages live there, not in a virtualenv), else python3.
python_bin <- local({
  found <- NULL
  function() {
    if (!is.null(found)) return(found)
    cands <- c(Sys.getenv("ZARR_PYTHON", ""), "/usr/bin/python3", Sys.which("python3"))
    cands <- unique(cands[nzchar(cands) & file.exists(cands)])
    found <<- ""
    for (py in cands) {
      ok <- suppressWarnings(system2(py, c("-c", shQuote("import zarr, numcodecs")),
                                     stdout = FALSE, stderr = FALSE))
      if (identical(ok, 0L)) {
        found <<- py
        break
      }
    }
    found
  }
})

python_has <- function(module) {
  py <- python_bin()
  if (!nzchar(py)) return(FALSE)
  identical(suppressWarnings(system2(py, c("-c", shQuote(paste("import", module))),
                                     stdout = FALSE, stderr = FALSE)), 0L)
}

skip_without_python_zarr <- function() {
  require_or_skip(nzchar(python_bin()), "python3 with zarr-python and numcodecs (python3-zarr)")
}

skip_without_xarray <- function() {
  skip_without_python_zarr()
  require_or_skip(python_has("xarray"), "python3 with xarray (python3-xarray)")
}

skip_without_gdal <- function() {
  skip_without_python_zarr()
  require_or_skip(python_has("osgeo.gdal"), "python3 with GDAL's bindings (python3-gdal)")
}

# Python code shared by every script: dump(store path) describes each array
# of a v2 hierarchy as zarr-python reads it, with its values in C order.
# 64-bit integers are written as strings, non-finite floats as "NaN" etc.,
# complex numbers as [re, im], fixed bytes as latin-1 text.
python_prelude <- '
import json, sys, os
import numpy as np

def val(x, kind):
    if x is None:
        return None
    if kind == "c":
        return [val(float(x.real), "f"), val(float(x.imag), "f")]
    if kind == "f":
        x = float(x)
        if x != x: return "NaN"
        if x == float("inf"): return "Infinity"
        if x == float("-inf"): return "-Infinity"
        return x
    if kind in "iu":
        return str(int(x))
    if kind == "b":
        return bool(x)
    if kind == "S":
        return bytes(x).decode("latin-1")
    if kind in "Mm":
        return str(int(np.asarray(x).view("i8")))
    if isinstance(x, (bytes, bytearray)):
        return bytes(x).decode("latin-1")
    if isinstance(x, str):
        return x
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return repr(x)

def attrs(a):
    try:
        return dict(a.attrs)
    except UnicodeDecodeError: # zarr-python 2 reads metadata as ASCII only
        return None

def describe(a):
    kind = a.dtype.kind
    data = a[...]
    flat = np.asarray(data).reshape(-1, order="C")
    return {
        "dtype": a.dtype.str, "shape": list(a.shape), "chunks": list(a.chunks),
        "order": a.order, "fill_value": val(a.fill_value, kind),
        "compressor": None if a.compressor is None else a.compressor.get_config(),
        "filters": None if a.filters is None else [f.get_config() for f in a.filters],
        "attrs": attrs(a), "data": [val(x, kind) for x in flat.tolist()] if kind not in "Mm" else
            [val(x, kind) for x in flat],
    }

def dump(path, consolidated=False):
    import zarr
    root = zarr.open_consolidated(path, mode="r") if consolidated else zarr.open_group(path, mode="r")
    out = {"arrays": {}, "groups": {}}
    def walk(g, prefix):
        try:
            out["groups"][prefix or "/"] = dict(g.attrs)
        except UnicodeDecodeError: # zarr-python 2 reads metadata as ASCII only
            out["groups"][prefix or "/"] = None
        for name, a in g.arrays():
            out["arrays"][prefix + "/" + name] = describe(a)
        for name, sub in g.groups():
            walk(sub, prefix + "/" + name)
    walk(root, "")
    return out

def emit(obj):
    sys.stdout.write(json.dumps(obj, allow_nan=False))
'

# Run a Python script (the prelude, then `code`) with arguments; returns
# its JSON output parsed by the package's own parser (integers exact).
run_python <- function(code, args = character(), timeout = 120) {
  script <- tempfile(fileext = ".py")
  on.exit(unlink(script), add = TRUE)
  writeLines(c(python_prelude, code), script, useBytes = TRUE)
  errf <- tempfile()
  on.exit(unlink(errf), add = TRUE)
  out <- suppressWarnings(system2(python_bin(), c(shQuote(script), shQuote(args)),
                                  stdout = TRUE, stderr = errf, timeout = timeout))
  status <- attr(out, "status") %||% 0L
  txt <- paste(out, collapse = "\n")
  if (status != 0L) {
    err <- paste(readLines(errf, warn = FALSE), collapse = "\n")
    stop(sprintf("python failed (status %s): %s\n%s", status, substr(txt, 1, 1000),
                 substr(err, max(1, nchar(err) - 3000), nchar(err))))
  }
  zarr:::json_parse(enc2utf8(txt), "python output")
}

# Values as the Python dump gives them -> comparable R values.
py_values <- function(data, kind) {
  if (kind == "c") return(vapply(data, function(v) complex(real = json_numbers(v[1])[[1]],
                                                             imaginary = json_numbers(v[2])[[1]]), 0i))
  if (kind == "f") return(json_numbers(data))
  if (kind == "b") return(vapply(data, isTRUE, TRUE))
  if (kind %in% c("i", "u", "M", "m")) return(vapply(data, function(v) as.character(v), ""))
  vapply(data, function(v) if (is.null(v)) NA_character_ else as.character(v), "")
}

# R values (as read) -> flat in C order, in the form py_values() gives.
r_flat <- function(x, shape, kind) {
  if (kind %in% c("i", "u", "M", "m")) {
    x <- if (inherits(x, "integer64")) as.character(x) else format(as.vector(unclass(x)), scientific = FALSE, trim = TRUE)
    if (kind %in% c("M", "m")) x[x == "NA"] <- "-9223372036854775808" # NaT
  }
  if (length(shape) > 1L) x <- aperm(array(x, shape), rev(seq_along(shape)))
  if (kind %in% c("i", "u", "M", "m")) return(as.vector(x))
  x <- as.vector(x)
  if (kind == "S" || kind == "U" || kind == "O") return(as.character(x))
  x
}

py_kind <- function(dtype) substr(sub("^[<>|=]", "", dtype), 1L, 1L)

# The array at `path` of a store read by this package equals a Python dump entry.
expect_matches_dump <- function(arr, entry, info = NULL) {
  kind <- py_kind(entry$dtype)
  shape <- as.numeric(unlist(entry$shape))
  testthat::expect_identical(as.numeric(arr$shape), shape, info = info)
  # (uint64 values beyond 2^63 - 1 do not fit bit64's integer64: compared below)
  # zarr-python gives the stored values: compared undecoded
  got <- withCallingHandlers(r_flat(arr$read(fill_as_na = FALSE, decode = FALSE), shape, kind),
                             zarr_warning_precision = function(w) invokeRestart("muffleWarning"))
  want <- py_values(entry$data, kind)
  if (kind == "O") { # zarr-python gives the fill value (0 or None) for unwritten elements
    known <- !is.na(want) & want != "0"
    testthat::expect_identical(got[known], want[known], info = info)
  } else if (kind == "u" && grepl("8$", entry$dtype)) { # bit64 holds up to 2^63 - 1
    small <- nchar(want) < 19L | (nchar(want) == 19L & want <= "9223372036854775807")
    testthat::expect_identical(got[small], want[small], info = info)
  } else {
    testthat::expect_equal(unname(got), unname(want), info = info)
  }
}

# Round doubles to the nearest float32.
py_f32 <- function(x) readBin(writeBin(as.double(x), raw(), size = 4L), "double", size = 4L, n = length(x))

# A variable of the dump of tests/testthat/python/cf_xarray_stores.py (xarray's
# decoding, values in C order) -> numbers, or ISO strings for times.
cf_py <- function(entry) {
  d <- entry$data
  if (grepl("^[<|]?[MO]", entry$dtype)) return(vapply(d, function(x) if (is.null(x)) NA_character_ else x, ""))
  vapply(d, function(x) if (is.null(x)) NA_real_ else as.numeric(x), 0)
}
