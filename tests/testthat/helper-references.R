# Kerchunk reference test data: netCDF-4 and HDF5 files written by Debian's
# python3-netcdf4 / python3-h5py, their references (tests/testthat/python/
# kerchunk_refs.py writes them from h5py's chunk information) and the values
# h5py reads. `python3` on PATH may be an interpreter without Debian's
# packages: look for one that imports h5py, netCDF4 (and fsspec + zarr for
# the independent reader).

ref_python <- function(modules = c("h5py", "netCDF4", "numpy")) {
  cands <- unique(c(Sys.getenv("ZARR_PYTHON", ""), "/usr/bin/python3", Sys.which("python3")))
  cands <- cands[nzchar(cands) & file.exists(cands)]
  code <- paste0("import ", paste(modules, collapse = ", "))
  for (py in cands) {
    ok <- suppressWarnings(system2(py, c("-c", shQuote(code)), stdout = FALSE, stderr = FALSE))
    if (identical(ok, 0L)) return(py)
  }
  ""
}

skip_without_ref_python <- function(modules = c("h5py", "netCDF4", "numpy")) {
  py <- ref_python(modules)
  require_or_skip(nzchar(py), sprintf("a Python 3 with %s (Debian: python3-h5py python3-netcdf4%s)",
                                      paste(modules, collapse = ", "),
                                      if ("fsspec" %in% modules) " python3-fsspec python3-zarr" else ""))
  py
}

ref_script <- function() {
  cands <- c("python/kerchunk_refs.py", testthat::test_path("python", "kerchunk_refs.py"))
  for (f in cands) if (file.exists(f)) return(normalizePath(f))
  ""
}

# Make the files and references once per test file, in a temporary directory.
ref_data <- local({
  cache <- NULL
  function() {
    py <- skip_without_ref_python()
    if (!is.null(cache) && dir.exists(cache)) return(cache)
    dir <- tempfile("kerchunk")
    dir.create(dir)
    out <- suppressWarnings(system2(py, c(shQuote(ref_script()), "make", shQuote(dir)),
                                    stdout = TRUE, stderr = TRUE))
    if (!is.null(attr(out, "status")) || !file.exists(file.path(dir, "expected.json")))
      stop("kerchunk_refs.py make failed: ", paste(out, collapse = "\n"))
    cache <<- normalizePath(dir)
    cache
  }
})

# Values h5py read, as R arrays (C order -> R's dim == shape).
ref_expected <- function(dir, name) {
  ex <- jsonlite::fromJSON(file.path(dir, "expected.json"), simplifyVector = TRUE)[[name]]
  v <- as.numeric(ex$values)
  c_order_array(v, ex$shape)
}

# Read a variable through fsspec's ReferenceFileSystem and zarr-python.
ref_fsspec <- function(dir, refs, names) {
  py <- skip_without_ref_python(c("fsspec", "zarr", "numpy"))
  script <- ref_script()
  out <- withr::with_dir(dir, suppressWarnings(system2(py, c(shQuote(script), "fsspec", shQuote(refs), shQuote(names)),
                                                       stdout = TRUE, stderr = FALSE)))
  if (!is.null(attr(out, "status"))) stop("fsspec reader failed on ", refs)
  res <- jsonlite::fromJSON(paste(out, collapse = "\n"), simplifyVector = TRUE)
  lapply(res, function(r) c_order_array(as.numeric(r$values), r$shape))
}

ref_read_json <- function(path) jsonlite::read_json(path, simplifyVector = FALSE)
ref_write_json <- function(x, path) jsonlite::write_json(x, path, auto_unbox = TRUE, digits = NA, null = "null")

# fsspec's Parquet layout, written with nanoparquet from JSON v0 references:
# .zmetadata with the metadata documents and record_size, and per array
# refs.<k>.parq files (path, offset, size, raw) in C order of the chunks.
ref_write_parquet <- function(refs, dir, record_size = 4L, drop = character()) {
  dir.create(dir, showWarnings = FALSE)
  keys <- names(refs)
  meta_keys <- keys[grepl("(^|/)[.]z(array|attrs|group)$", keys)]
  meta <- lapply(refs[meta_keys], function(v) if (is.character(v)) jsonlite::parse_json(v) else v)
  ref_write_json(list(metadata = meta, record_size = record_size), file.path(dir, ".zmetadata"))
  for (ak in meta_keys[grepl("[.]zarray$", meta_keys)]) {
    field <- sub("/[.]zarray$", "", ak)
    za <- meta[[ak]]
    nch <- ceiling(unlist(za$shape) / unlist(za$chunks))
    total <- prod(nch)
    grid <- as.matrix(expand.grid(rev(lapply(nch, function(n) seq_len(n) - 1L))))[, rev(seq_along(nch)), drop = FALSE]
    ck <- paste0(field, "/", apply(grid, 1L, paste, collapse = "."))
    dir.create(file.path(dir, field), showWarnings = FALSE, recursive = TRUE)
    for (k in seq_len(ceiling(total / record_size)) - 1L) {
      rows <- seq(k * record_size + 1, min(total, (k + 1) * record_size))
      path <- rep(NA_character_, length(rows))
      offset <- size <- numeric(length(rows))
      raw <- vector("list", length(rows))
      for (j in seq_along(rows)) {
        v <- refs[[ck[rows[j]]]]
        if (is.null(v) || ck[rows[j]] %in% drop) next
        if (is.character(v)) {
          raw[[j]] <- if (startsWith(v, "base64:")) jsonlite::base64_dec(substring(v, 8L)) else charToRaw(v)
        } else {
          path[j] <- v[[1]]
          if (length(v) == 3L) {
            offset[j] <- v[[2]]
            size[j] <- v[[3]]
          }
        }
      }
      df <- data.frame(path = path, offset = bit64::as.integer64(offset), size = bit64::as.integer64(size))
      df$raw <- raw
      nanoparquet::write_parquet(df, file.path(dir, field, sprintf("refs.%d.parq", k)))
    }
  }
  invisible(dir)
}
