#' Write AnnData stores
#'
#' `write_anndata()` writes an AnnData store, the layout that Python's
#' anndata reads with `read_zarr()`, from a `SingleCellExperiment`, a
#' `SummarizedExperiment`, a `zarr_anndata` object (see [read_anndata()]) or
#' a named list with the elements `X`, `layers`, `obs`, `var`, `obsm`,
#' `varm`, `obsp`, `varp` and `uns` (any of them may be left out).
#'
#' Lists are oriented as in anndata: observations (cells) in rows, variables
#' (genes) in columns. `X` and the layers are base matrices or `Matrix`
#' sparse matrices: a `dgRMatrix` is written as `csr_matrix`, other sparse
#' matrices as `csc_matrix` (a `dgCMatrix` as it is, without copying or
#' reordering its values). `obs` and `var` are data frames, their row names
#' the index; factors become categoricals (ordered ones ordered), integer and
#' logical columns with `NA` nullable integers and booleans, character columns
#' strings (with `NA`, categoricals, with a warning, as anndata has no
#' missing strings). `obsm` and `varm` hold matrices or data frames, `obsp`
#' and `varp` square matrices, and `uns` a nested named list of vectors,
#' matrices, factors, data frames and lists; a vector of length one is
#' written as a scalar. Double columns are written as float64: a column that
#' [read_anndata()] read from 64-bit integers (R has none) goes back as
#' float64 unless it is made integer first (`as.integer()`: int32).
#'
#' A `SingleCellExperiment` or `SummarizedExperiment` (genes x cells) is
#' transposed: its first assay, or the one `X_name` names, becomes `X`, the
#' others the layers (a `dgCMatrix` of genes is written as the CSR matrix of
#' cells with the same values); `colData` becomes `obs`, `rowData` `var`,
#' `reducedDims` `obsm`, `colPairs` and `rowPairs` `obsp` and `varp`, and
#' `metadata()` `uns`. The `metadata()` entries that [as_sce()] makes
#' (`uns`, and `varm`, `obsm`, `obsp`, `varp` holding matrices of the right
#' size) go back to their places, so that `write_anndata(as_sce(ad))`
#' writes what `ad` holds.
#'
#' What cannot be written is left out with a warning of class
#' `zarr_warning_anndata` (such as an `uns` entry that is a function, a
#' column of dates, or alternative experiments); matrices of the wrong size
#' and unsupported `X` or layers are errors of class `zarr_error_value`.
#'
#' @param x A `SingleCellExperiment`, `SummarizedExperiment`, `zarr_anndata`
#'   object or named list (see Details).
#' @param location Where to create the store (anything [create_zarr()]
#'   takes; it must not exist yet, or be an empty directory); `NULL` for a
#'   store in memory.
#' @param format `2` (default): Zarr v2, which anndata 0.8 to 0.10 read;
#'   `3`: Zarr v3, which anndata 0.11 and later read.
#' @param X_name For a `SingleCellExperiment` or `SummarizedExperiment`: the
#'   name of the assay to write as `X` (default: the first one).
#' @return The [zarr] object of the new store, invisibly.
#' @seealso [read_anndata()], which reads the store back
#' @export
#' @examples
#' ad <- list(
#'   X = matrix(c(0, 1.5, 2, 0, 0, 3), 3, 2),
#'   obs = data.frame(cell_type = factor(c("T", "B", "T")), n = c(1L, NA, 3L),
#'                    row.names = c("c1", "c2", "c3")),
#'   var = data.frame(symbol = c("CD3E", "MS4A1"), row.names = c("g1", "g2")),
#'   uns = list(title = "tiny", params = list(k = 15L))
#' )
#' z <- write_anndata(ad) # in memory
#' back <- read_anndata(z)
#' back$obs
#' back$uns$params$k
write_anndata <- function(x, location = NULL, format = 2L, X_name = NULL) {
  if (!is.numeric(format) || length(format) != 1L || !format %in% c(2, 3))
    zarr_abort("argument", "format must be 2 or 3")
  if (!is.null(X_name) && (!is.character(X_name) || length(X_name) != 1L || is.na(X_name)))
    zarr_abort("argument", "X_name must be a single assay name")
  ad <- if (methods::is(x, "SummarizedExperiment")) adw_from_se(x, X_name) else adw_from_list(x)
  ad <- adw_check(ad)
  old <- options(zarr.format = as.integer(format))
  on.exit(options(old), add = TRUE)
  z <- create_zarr(location)
  root <- z$root
  adw_encoding(root, "anndata", "0.1.0")
  if (!is.null(ad$X)) adw_matrix(root, "X", ad$X)
  adw_dataframe(root, "obs", ad$obs)
  adw_dataframe(root, "var", ad$var)
  for (e in c("layers", "obsm", "varm", "obsp", "varp")) {
    g <- root$add_group(e)
    adw_encoding(g, "dict", "0.1.0")
    idx <- if (e %in% c("obsm", "varm")) row.names(ad[[if (e == "obsm") "obs" else "var"]])
    for (k in names(ad[[e]])) {
      v <- ad[[e]][[k]]
      if (is.data.frame(v)) {
        row.names(v) <- idx # anndata wants the index of obs (or var)
        adw_dataframe(g, k, v)
      } else adw_matrix(g, k, v)
    }
  }
  adw_dict(root, "uns", ad$uns %||% list(), "uns")
  invisible(z)
}

adw_encoding <- function(node, type, version) {
  node$set_attribute("encoding-type", type)
  node$set_attribute("encoding-version", version)
}

adw_drop <- function(what, why) {
  zarr_warn("anndata", sprintf("%s is not written: %s", what, why))
}

# ---- inputs

adw_from_list <- function(x) {
  if (!is.list(x) || is.data.frame(x))
    zarr_abort("argument", "write_anndata() takes a SingleCellExperiment, a SummarizedExperiment or a named list")
  if (length(x) && (is.null(names(x)) || !all(nzchar(names(x)))))
    zarr_abort("argument", "the AnnData list must be named")
  bad <- setdiff(names(x), anndata_elements)
  if (length(bad)) zarr_abort("argument", sprintf("unknown AnnData elements: %s", paste(bad, collapse = ", ")))
  x <- unclass(x)
  for (e in c("layers", "obsm", "varm", "obsp", "varp", "uns"))
    if (!is.null(x[[e]]) && (!is.list(x[[e]]) || is.data.frame(x[[e]]) ||
                             (length(x[[e]]) && (is.null(names(x[[e]])) || !all(nzchar(names(x[[e]])))))))
      zarr_abort("argument", sprintf("'%s' must be a named list", e))
  stats::setNames(lapply(anndata_elements, function(e) x[[e]]), anndata_elements)
}

# genes x cells -> the anndata list
adw_from_se <- function(x, X_name) {
  se <- asNamespace("SummarizedExperiment")
  assays <- as.list(se$assays(x, withDimnames = TRUE))
  an <- names(assays)
  if (length(assays) && (is.null(an) || !all(nzchar(an)))) {
    an <- ifelse(nzchar(an %||% rep("", length(assays))), an, paste0("assay", seq_along(assays)))
    names(assays) <- an
  }
  pick <- if (is.null(X_name)) 1L else match(X_name, an)
  if (is.na(pick)) zarr_abort("argument", sprintf("there is no assay '%s'", X_name))
  assays <- lapply(assays, adw_t)
  as_df <- function(d) as.data.frame(d, optional = TRUE)
  out <- list(X = if (length(assays)) assays[[pick]], layers = assays[-pick],
              obs = as_df(se$colData(x)), var = as_df(se$rowData(x)))
  if (is.null(colnames(x))) row.names(out$obs) <- NULL
  n_obs <- ncol(x)
  n_var <- nrow(x)
  if (methods::is(x, "SingleCellExperiment")) {
    sce <- asNamespace("SingleCellExperiment")
    out$obsm <- lapply(as.list(sce$reducedDims(x)), function(m) if (methods::is(m, "DataFrame")) as_df(m) else m)
    out$obsp <- stats::setNames(lapply(sce$colPairNames(x), function(n) sce$colPair(x, n, asSparse = TRUE)), sce$colPairNames(x))
    out$varp <- stats::setNames(lapply(sce$rowPairNames(x), function(n) sce$rowPair(x, n, asSparse = TRUE)), sce$rowPairNames(x))
    if (length(sce$altExpNames(x))) adw_drop("altExps", "AnnData has no alternative experiments")
  }
  rr <- tryCatch(se$rowRanges(x), error = function(e) NULL)
  if (methods::is(rr, "GRanges") || (methods::is(rr, "GRangesList") && sum(as.numeric(lengths(rr))) > 0))
    adw_drop("rowRanges", "AnnData has no genomic ranges (write them into rowData)")
  # what as_sce() put into metadata() goes back to its place
  meta <- asNamespace("S4Vectors")$metadata(x)
  fits <- function(l, n, square = FALSE) is.list(l) && !is.data.frame(l) && length(l) && !is.null(names(l)) &&
    all(vapply(l, function(m) length(dim(m)) == 2L && nrow(m) == n && (!square || ncol(m) == n), TRUE))
  places <- list(obsm = c(n_obs, FALSE), varm = c(n_var, FALSE), obsp = c(n_obs, TRUE), varp = c(n_var, TRUE))
  for (e in names(places)) {
    if (!is.null(meta[[e]]) && fits(meta[[e]], places[[e]][1L], places[[e]][2L])) {
      out[[e]] <- c(out[[e]], meta[[e]][setdiff(names(meta[[e]]), names(out[[e]]))])
      meta[[e]] <- NULL
    }
  }
  uns <- meta$uns
  if (is.list(uns) && !is.data.frame(uns) && !is.null(names(uns))) {
    meta$uns <- NULL
    meta <- c(uns, meta[setdiff(names(meta), names(uns))])
  }
  if (length(meta) && (is.null(names(meta)) || !all(nzchar(names(meta))))) {
    adw_drop("metadata() entries without names", "uns is a dictionary")
    meta <- meta[nzchar(names(meta) %||% rep("", length(meta)))]
  }
  out$uns <- meta
  out
}

# A genes x cells assay as cells x genes. A CSC matrix of genes is the CSR
# matrix of cells with the same slots (the inverse of anndata_t()).
adw_t <- function(m) {
  if (methods::is(m, "DelayedArray")) {
    m <- if (isTRUE(asNamespace("DelayedArray")$is_sparse(m))) methods::as(m, "CsparseMatrix") else as.matrix(m)
  }
  if (methods::is(m, "CsparseMatrix") && methods::is(m, "generalMatrix") && methods::is(m, "dMatrix")) {
    out <- methods::new("dgRMatrix")
    out@Dim <- rev(m@Dim)
    out@Dimnames <- rev(m@Dimnames)
    out@p <- m@p
    out@j <- m@i
    out@x <- m@x
    return(out)
  }
  if (methods::is(m, "Matrix")) return(Matrix::t(m))
  t(as.matrix(m))
}

# Sizes agree; obs and var are data frames with an index.
adw_check <- function(ad) {
  dims <- function(e) lapply(ad[[e]], function(m) dim(m))
  mats <- c(list(X = dim(ad$X)), dims("layers"))
  mats <- mats[lengths(mats) > 0L]
  n_obs <- if (is.data.frame(ad$obs)) nrow(ad$obs) else if (length(mats)) mats[[1L]][1L] else
    if (length(ad$obsm)) NROW(ad$obsm[[1L]]) else 0L
  n_var <- if (is.data.frame(ad$var)) nrow(ad$var) else if (length(mats)) mats[[1L]][2L] else
    if (length(ad$varm)) NROW(ad$varm[[1L]]) else 0L
  for (k in names(mats)) if (length(mats[[k]]) != 2L || any(mats[[k]] != c(n_obs, n_var)))
    zarr_abort("value", sprintf("'%s' is %s, not n_obs x n_vars = %d x %d", k, paste(mats[[k]], collapse = " x "), n_obs, n_var))
  for (e in c("obsm", "varm", "obsp", "varp")) {
    n <- if (e %in% c("obsm", "obsp")) n_obs else n_var
    for (k in names(ad[[e]])) {
      d <- dim(ad[[e]][[k]])
      if (length(d) < 1L || d[1L] != n || (e %in% c("obsp", "varp") && (length(d) != 2L || d[2L] != n)))
        zarr_abort("value", sprintf("%s '%s' has %s rows where %d are needed%s", e, k, if (length(d)) d[1L] else "no",
                                    n, if (e %in% c("obsp", "varp")) " (and as many columns)" else ""))
    }
  }
  frame <- function(df, n, names) {
    if (is.null(df)) df <- data.frame(row.names = names %||% as.character(seq_len(n)))
    if (!is.data.frame(df)) zarr_abort("argument", "obs and var must be data frames")
    df
  }
  x_names <- if (!is.null(ad$X)) dimnames(ad$X)
  ad$obs <- frame(ad$obs, n_obs, x_names[[1L]])
  ad$var <- frame(ad$var, n_var, x_names[[2L]])
  ad
}

# ---- elements

# chunks of about a million elements, split along the first dimension
adw_chunks <- function(shape) {
  rest <- prod(shape[-1L])
  pmax(1, c(min(shape[1L], max(1, floor(2^20 / max(1, rest)))), shape[-1L]))
}

adw_array <- function(g, name, v, type = "array", version = "0.2.0", scalar = FALSE) {
  shape <- if (scalar) integer() else dim(v) %||% length(v)
  b <- define_array(r_data_type(v), shape)
  b$portable <- TRUE # C order, as numpy writes
  if (length(shape)) b$chunk_shape <- adw_chunks(shape)
  if (is.character(v)) b$fill_value <- ""
  a <- g$add_array(name, b)
  if (prod(shape) > 0) a$write(if (is.factor(v)) as.character(v) else v)
  if (!is.null(type)) adw_encoding(a, type, version)
  a
}

# Values of a dense matrix or vector as anndata holds them: NA integers and
# logicals have no numpy counterpart, so they become doubles (NaN).
adw_plain <- function(v, what) {
  if ((is.integer(v) || is.logical(v)) && anyNA(v)) {
    zarr_warn("anndata", sprintf("%s has NA values: written as doubles (NaN)", what))
    storage.mode(v) <- "double"
  }
  v
}

# X, layers, obsm, varm, obsp, varp
adw_matrix <- function(g, name, m) {
  what <- if (g$path == "/") name else paste0(g$path, "/", name)
  if (methods::is(m, "sparseMatrix")) return(adw_sparse(g, name, m))
  if (methods::is(m, "DelayedArray")) m <- as.matrix(m)
  if (methods::is(m, "Matrix")) m <- as.matrix(m)
  if (!is.array(m) || !(is.numeric(m) || is.logical(m)))
    zarr_abort("value", sprintf("'%s' is a %s, not a numeric or logical matrix", what, class(m)[1L]))
  m <- adw_plain(m, what)
  dimnames(m) <- NULL
  adw_array(g, name, m)
}

adw_sparse <- function(g, name, m) {
  if (!methods::is(m, "RsparseMatrix")) m <- methods::as(m, "CsparseMatrix")
  m <- methods::as(m, "generalMatrix")
  if (!methods::is(m, "lMatrix") || anyNA(m@x)) m <- methods::as(m, "dMatrix")
  csr <- methods::is(m, "RsparseMatrix")
  grp <- g$add_group(name)
  adw_encoding(grp, if (csr) "csr_matrix" else "csc_matrix", "0.1.0")
  grp$set_attribute("shape", as.list(m@Dim))
  adw_array(grp, "data", m@x, type = NULL)
  adw_array(grp, "indices", if (csr) m@j else m@i, type = NULL)
  adw_array(grp, "indptr", m@p, type = NULL)
  grp
}

adw_dataframe <- function(g, name, df) {
  if (!is.null(df[["_index"]])) zarr_abort("value", sprintf("data frame '%s' has a column '_index', the name of its index", name))
  grp <- g$add_group(name)
  adw_encoding(grp, "dataframe", "0.2.0")
  kept <- character()
  for (k in names(df)) if (adw_column(grp, k, df[[k]], sprintf("column '%s' of %s", k, grp$path))) kept <- c(kept, k)
  adw_array(grp, "_index", as.character(row.names(df)), "string-array")
  grp$set_attribute("_index", "_index")
  grp$set_attribute("column-order", as.list(kept))
  grp
}

# One column (or an uns vector); FALSE when it cannot be written.
adw_column <- function(g, name, v, what) {
  if (is.character(v) && anyNA(v)) {
    zarr_warn("anndata", sprintf("%s has NA strings: written as a categorical", what))
    v <- factor(v)
  }
  if (is.factor(v)) {
    grp <- g$add_group(name)
    adw_encoding(grp, "categorical", "0.2.0")
    grp$set_attribute("ordered", is.ordered(v))
    codes <- as.integer(unclass(v)) - 1L
    codes[is.na(codes)] <- -1L
    adw_array(grp, "codes", codes)
    adw_array(grp, "categories", levels(v), "string-array")
    return(TRUE)
  }
  if (!is.null(attr(v, "class")) || !is.atomic(v) || !is.null(dim(v)) || !(is.numeric(v) || is.logical(v) || is.character(v))) {
    adw_drop(what, sprintf("a %s", class(v)[1L]))
    return(FALSE)
  }
  if ((is.integer(v) || is.logical(v)) && anyNA(v)) {
    grp <- g$add_group(name)
    adw_encoding(grp, if (is.integer(v)) "nullable-integer" else "nullable-boolean", "0.1.0")
    mask <- is.na(v)
    v[mask] <- if (is.integer(v)) 0L else FALSE
    adw_array(grp, "values", v)
    adw_array(grp, "mask", mask)
    return(TRUE)
  }
  adw_array(g, name, v, if (is.character(v)) "string-array" else "array")
  TRUE
}

adw_name_ok <- function(name) node_name_ok(name)

adw_dict <- function(g, name, l, what) {
  grp <- g$add_group(name)
  adw_encoding(grp, "dict", "0.1.0")
  for (k in names(l)) {
    w <- paste0(what, "$", k)
    if (!nzchar(k) || !adw_name_ok(k)) adw_drop(w, "its name is not a valid node name")
    else adw_uns(grp, k, l[[k]], w)
  }
  if (any(!nzchar(names(l) %||% rep("", length(l))))) adw_drop(sprintf("entries of %s without names", what), "uns is a dictionary")
  grp
}

adw_uns <- function(g, name, v, what) {
  if (is.null(v)) return(adw_drop(what, "it is NULL"))
  if (is.data.frame(v)) return(adw_dataframe(g, name, v))
  if (methods::is(v, "sparseMatrix")) return(adw_sparse(g, name, v))
  if (is.list(v) && is.null(attr(v, "class"))) {
    if (length(v) && is.null(names(v))) return(adw_drop(what, "a list without names (uns holds dictionaries)"))
    return(adw_dict(g, name, v, what))
  }
  if (is.array(v) && is.null(attr(v, "class")) && (is.numeric(v) || is.logical(v) || is.character(v))) {
    v <- adw_plain(v, what)
    dimnames(v) <- NULL
    return(adw_array(g, name, v, if (is.character(v)) "string-array" else "array"))
  }
  if (length(v) == 1L && is.null(attr(v, "class")) && (is.numeric(v) || is.logical(v) || is.character(v))) {
    if (is.na(v) && !is.double(v)) return(adw_drop(what, "a missing value that is not a number"))
    return(adw_array(g, name, v, if (is.character(v)) "string" else "numeric-scalar", scalar = TRUE))
  }
  if (is.factor(v) || (is.atomic(v) && is.null(attr(v, "class")))) {
    if (!is.factor(v) && !is.character(v)) v <- adw_plain(v, what)
    return(invisible(adw_column(g, name, unname(v), what)))
  }
  adw_drop(what, sprintf("a %s", class(v)[1L]))
}
