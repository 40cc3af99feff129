# Shared by the AnnData tests (test-anndata.R, test-anndata-write.R): the
# skip, and comparisons of R values with what Debian's anndata 0.8 reads
# (dumped as JSON by python/anndata_dump.py).

skip_without_anndata <- function() {
  skip_without_python_zarr()
  require_or_skip(python_has("anndata"), "python3 with anndata (python3-anndata)")
  require_or_skip(requireNamespace("Matrix", quietly = TRUE), "the R package Matrix")
}

# anndata's reading of stores (paths), as JSON (python/anndata_dump.py)
anndata_dumps <- function(paths) {
  skip_without_anndata()
  code <- c(readLines(testthat::test_path("python", "anndata_dump.py")),
            readLines(testthat::test_path("python", "anndata_read.py")))
  run_python(code, paths)
}

# JSON lists (null for missing) as R vectors
py_vec <- function(l, na = NA) unlist(lapply(l, function(e) if (is.null(e)) na else e))

# a dumped matrix (row-major values) as an R matrix
py_matrix <- function(m) {
  shape <- py_vec(m$shape)
  matrix(as.double(py_vec(m$values, NA_real_)), shape[1L], shape[2L], byrow = TRUE)
}

expect_frame_equals_dump <- function(df, d, info) {
  expect_identical(row.names(df), py_vec(d$index), info = info)
  expect_identical(names(df), py_vec(d$columns) %||% character(), info = info)
  for (k in names(d$data)) {
    col <- d$data[[k]]
    v <- df[[k]]
    what <- paste(info, k)
    switch(col$kind,
      categorical = {
        expect_s3_class(v, "factor")
        expect_identical(is.ordered(v), col$ordered, info = what)
        expect_identical(levels(v), py_vec(col$categories), info = what)
        expect_identical(as.character(v), py_vec(col$values, NA_character_), info = what)
      },
      string = expect_identical(v, py_vec(col$values, NA_character_), info = what),
      bool = , boolean = expect_identical(v, py_vec(col$values, NA), info = what),
      expect_identical(as.double(v), as.double(py_vec(col$values, NA_real_)), info = what)
    )
  }
}

expect_matrix_equals_dump <- function(m, d, info) {
  expect_identical(dim(m), as.integer(py_vec(d$shape)), info = info)
  expect_identical(unname(as.matrix(m)), py_matrix(d), info = info)
}

expect_uns_equals_dump <- function(u, d, info) {
  switch(d$kind,
    dict = {
      expect_identical(sort(names(u)), sort(names(d$items) %||% character()), info = info)
      for (k in names(d$items)) expect_uns_equals_dump(u[[k]], d$items[[k]], paste0(info, "$", k))
    },
    string = expect_identical(u, d$value, info = info),
    # numbers as doubles: anndata's int64 are read as doubles, int32 as integers
    scalar = if (is.logical(d$value)) expect_identical(as.vector(u), d$value, info = info) else {
      expect_true(is.numeric(u) && length(u) == 1L, info = info)
      expect_identical(as.double(u), as.double(d$value), info = info)
    },
    strings = expect_identical(as.vector(u), py_vec(d$values), info = info),
    array = {
      shape <- as.integer(py_vec(d$shape))
      vals <- as.double(py_vec(d$values, NA_real_))
      expect_true(is.numeric(u) || is.logical(u), info = info)
      if (length(shape) == 2L) expect_identical(unname(u) + 0, matrix(vals, shape[1L], shape[2L], byrow = TRUE), info = info)
      else expect_identical(as.double(u), vals, info = info)
    },
    categorical = {
      expect_s3_class(u, "factor")
      expect_identical(is.ordered(u), d$ordered, info = info)
      expect_identical(levels(u), py_vec(d$categories) %||% character(), info = info)
      expect_identical(as.character(u), py_vec(d$values, NA_character_), info = info)
    },
    frame = expect_frame_equals_dump(u, d, info),
    sparse = expect_matrix_equals_dump(u, d, info)
  )
}

expect_anndata_equals_dump <- function(ad, d, info) {
  expect_s3_class(ad, "zarr_anndata")
  expect_identical(dim(ad), as.integer(py_vec(d$shape)), info = info)
  expect_matrix_equals_dump(ad$X, d$X, paste(info, "X"))
  expect_identical(dimnames(ad$X), list(py_vec(d$obs$index), py_vec(d$var$index)), info = info)
  expect_frame_equals_dump(ad$obs, d$obs, paste(info, "obs"))
  expect_frame_equals_dump(ad$var, d$var, paste(info, "var"))
  same_names <- function(a, b) expect_identical(sort(names(a) %||% character()), sort(names(b) %||% character()), info = info)
  same_names(ad$layers, d$layers)
  for (k in names(d$layers)) expect_matrix_equals_dump(ad$layers[[k]], d$layers[[k]], paste(info, "layer", k))
  for (e in c("obsm", "varm", "obsp", "varp")) {
    same_names(ad[[e]], d[[e]])
    for (k in names(d[[e]])) {
      if (!is.null(d[[e]][[k]]$index)) expect_frame_equals_dump(ad[[e]][[k]], d[[e]][[k]], paste(info, e, k))
      else expect_matrix_equals_dump(ad[[e]][[k]], d[[e]][[k]], paste(info, e, k))
    }
  }
  expect_uns_equals_dump(ad$uns, d$uns, paste(info, "uns"))
}

