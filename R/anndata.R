#' Read AnnData stores
#'
#' `read_anndata()` reads an AnnData store, the layout that Python's anndata
#' (0.8 and later) writes with `write_zarr()`, into a `zarr_anndata` object:
#' a list with `X`, `layers`, `obs`, `var`, `obsm`, `varm`, `obsp`, `varp`
#' and `uns`, oriented as in anndata (observations, usually cells, in rows;
#' variables, usually genes, in columns). `as_sce()` turns it into a
#' Bioconductor `SingleCellExperiment` or `SummarizedExperiment`, which puts
#' genes in rows and cells in columns: the matrices are transposed.
#'
#' Each element is decoded from its `encoding-type` attribute:
#' * `array`: an R vector, matrix or array. 64-bit integers become doubles.
#' * `csr_matrix`, `csc_matrix` (groups with `data`, `indices`, `indptr` and
#'   a `shape` attribute): a `Matrix` sparse matrix, `dgRMatrix` for CSR and
#'   `dgCMatrix` for CSC (`lgRMatrix`/`lgCMatrix` for logical data). No values
#'   are copied or reordered: the transpose of a `dgRMatrix` is a
#'   `dgCMatrix`, so the genes x cells assays of `as_sce()` are `dgCMatrix`
#'   objects for CSR stores (the usual case).
#' * `dataframe`: a `data.frame` with the columns in `column-order` and the
#'   index (the `_index` attribute names it) as row names. Columns encoded
#'   `categorical` become factors (ordered when the `ordered` attribute is
#'   true, code -1 is `NA`), `string-array` character vectors,
#'   `nullable-integer`, `nullable-boolean` and `nullable-string-array`
#'   vectors with `NA` where the mask is set.
#' * `dict`: a named list (so `uns` is a nested list).
#' * `string-array`, `numeric-scalar`, `string`, `string-scalar`: character
#'   vectors, numbers and single strings.
#'
#' Values are read as stored (without fill value masking or CF decoding, as
#' anndata reads them), each array with one read of the C engine.
#'
#' `X` chooses how `X` and `layers` are read: `"auto"` as stored (a dense
#' matrix or a sparse `Matrix`), `"dense"` always as an R matrix,
#' `"sparse"` always as a sparse `Matrix`, and `"delayed"` lazily: dense
#' arrays become `DelayedArray` objects backed by the store (see
#' [zarr_delayed()]); sparse ones are read into a sparse `Matrix` and
#' wrapped in a `DelayedArray`, so that all assays have the same class.
#'
#' @param x An AnnData store: its location (anything [open_zarr()] opens,
#'   opened read-only), a [zarr] object, or a [zarr_group] holding it.
#' @param X How to read `X` and `layers`: `"auto"`, `"dense"`, `"sparse"`
#'   or `"delayed"` (see Details).
#' @param elements The elements to read, of `"X"`, `"layers"`, `"obs"`,
#'   `"var"`, `"obsm"`, `"varm"`, `"obsp"`, `"varp"` and `"uns"`; the others
#'   are `NULL`.
#' @return `read_anndata()`: a `zarr_anndata` object (a list). `as_sce()`: a
#'   `SingleCellExperiment` (or `SummarizedExperiment`) with the assays `X`
#'   and the layers, genes x cells; `colData` from `obs`, `rowData` from
#'   `var`, `reducedDims` from `obsm`, `colPairs`/`rowPairs` from
#'   `obsp`/`varp`, and `uns` and `varm` in `metadata()`. A
#'   `SummarizedExperiment` has no place for `obsm`, `obsp` and `varp`; they
#'   go to `metadata()` too.
#'
#' When SummarizedExperiment or SingleCellExperiment is loaded, `as(x,
#' "SummarizedExperiment")` and `as(x, "SingleCellExperiment")` do the same
#' as `as_sce()` on a `zarr_anndata` object.
#' @seealso [write_anndata()] to write AnnData stores, [zarr_delayed()]
#' @name anndata
#' @examples
#' # a small AnnData store (3 cells x 2 genes) in a temporary folder
#' path <- tempfile(fileext = ".zarr")
#' write_anndata(list(
#'   X = matrix(c(0, 1.5, 2, 0, 0, 3), 3, 2),
#'   obs = data.frame(cell_type = c("T", "B", "T"), row.names = c("c1", "c2", "c3")),
#'   var = data.frame(symbol = c("CD3E", "MS4A1"), row.names = c("g1", "g2"))), path)
#' ad <- read_anndata(path)
#' ad
#' ad$X
#' ad$obs
#' if (interactive() && requireNamespace("SingleCellExperiment", quietly = TRUE)) {
#'   sce <- as_sce(ad) # genes x cells (loading Bioconductor takes some seconds)
#'   sce
#' }
#' unlink(path, recursive = TRUE)
NULL

anndata_elements <- c("X", "layers", "obs", "var", "obsm", "varm", "obsp", "varp", "uns")

#' @rdname anndata
#' @export
read_anndata <- function(x, X = c("auto", "dense", "sparse", "delayed"), elements = anndata_elements) {
  X <- match.arg(X)
  if (is.character(x)) x <- open_zarr(x, read_only = TRUE)
  if (inherits(x, "zarr")) x <- x$root
  if (!inherits(x, "zarr_group")) zarr_abort("argument", "an AnnData store is a zarr_group (or a zarr object, or a store location)")
  bad <- setdiff(elements, anndata_elements)
  if (length(bad)) zarr_abort("argument", sprintf("unknown AnnData elements: %s", paste(bad, collapse = ", ")))
  if (X == "delayed") require_delayed()
  if (X %in% c("sparse", "delayed") || (X == "auto" && any(c("X", "layers") %in% elements))) require_matrix()
  kids <- x$children
  # anndata always writes obs and var: a group with none of the elements is
  # some other data, which would otherwise read as an empty AnnData object
  if (!any(anndata_elements %in% names(kids)))
    zarr_abort("value", sprintf(
      "group '%s' is not an AnnData store: it has none of %s (its children: %s); read it with open_zarr()",
      x$path, paste(anndata_elements, collapse = ", "),
      if (length(kids)) paste(names(kids), collapse = ", ") else "none"))
  get <- function(e) if (e %in% elements && !is.null(kids[[e]])) kids[[e]]
  matrix_of <- function(node) anndata_matrix(node, X)
  obs <- if (!is.null(get("obs"))) anndata_read(kids$obs)
  var <- if (!is.null(get("var"))) anndata_read(kids$var)
  out <- list(
    X = if (!is.null(get("X"))) matrix_of(kids$X),
    layers = if (!is.null(get("layers"))) lapply(anndata_children(kids$layers), matrix_of),
    obs = obs, var = var,
    obsm = if (!is.null(get("obsm"))) lapply(anndata_children(kids$obsm), anndata_read),
    varm = if (!is.null(get("varm"))) lapply(anndata_children(kids$varm), anndata_read),
    obsp = if (!is.null(get("obsp"))) lapply(anndata_children(kids$obsp), anndata_read),
    varp = if (!is.null(get("varp"))) lapply(anndata_children(kids$varp), anndata_read),
    uns = if (!is.null(get("uns"))) anndata_read(kids$uns)
  )
  # names of observations and variables on the matrices, as anndata shows them
  on <- if (!is.null(obs)) row.names(obs)
  vn <- if (!is.null(var)) row.names(var)
  name_rows <- function(m, rows, cols = NULL) {
    if (is.null(m) || is.data.frame(m) || length(dim(m)) != 2L) return(m) # (a data frame has its index)
    dn <- list(if (!is.null(rows) && nrow(m) == length(rows)) rows,
               if (!is.null(cols) && ncol(m) == length(cols)) cols)
    if (is.null(dn[[1L]]) && is.null(dn[[2L]])) return(m)
    # the slot of a Matrix object, set in place: dimnames<- copies the values
    if (methods::is(m, "sparseMatrix")) m@Dimnames <- dn else dimnames(m) <- dn
    m
  }
  name_all <- function(l, rows, cols = NULL) if (!is.null(l)) lapply(l, name_rows, rows, cols)
  out$X <- name_rows(out$X, on, vn)
  out$layers <- name_all(out$layers, on, vn)
  out$obsm <- name_all(out$obsm, on)
  out$obsp <- name_all(out$obsp, on, on)
  out$varm <- name_all(out$varm, vn)
  out$varp <- name_all(out$varp, vn, vn)
  structure(out, class = "zarr_anndata", path = x$path)
}

# The children of a dict-encoded group, by name.
anndata_children <- function(node) {
  if (!inherits(node, "zarr_group")) return(list())
  node$children
}

anndata_encoding <- function(node) {
  e <- node$attributes[["encoding-type"]]
  if (is.character(e) && length(e) == 1L) return(e)
  # before anndata 0.7.6 stores had no encoding: sparse groups said so with h5sparse_format
  f <- node$attributes[["h5sparse_format"]]
  if (is.character(f) && length(f) == 1L) return(paste0(f, "_matrix"))
  if (inherits(node, "zarr_array")) "array" else "dict"
}

# The values of an array as anndata reads them: no fill masking, no CF
# decoding; 64-bit integers as doubles (R has no 64-bit integers, and
# Matrix and DataFrame take doubles).
anndata_values <- function(a) {
  v <- a$read(fill_as_na = FALSE, decode = FALSE)
  if (inherits(v, "integer64")) {
    d <- dim(v)
    v <- as.double(v)
    dim(v) <- d
  }
  if (length(dim(v)) == 1L) dim(v) <- NULL # in place (as.vector() would copy)
  v
}

# One element, decoded by its encoding.
anndata_read <- function(node) {
  enc <- anndata_encoding(node)
  switch(enc,
    array = , `string-array` = , `numeric-scalar` = , string = , `string-scalar` = anndata_values(node),
    csr_matrix = , csc_matrix = anndata_sparse(node, enc),
    dataframe = anndata_dataframe(node),
    categorical = anndata_categorical(node),
    `nullable-integer` = , `nullable-boolean` = , `nullable-string-array` = anndata_nullable(node),
    dict = if (length(kids <- anndata_children(node))) lapply(kids, anndata_read) else named_list(),
    zarr_abort("value", sprintf("unknown AnnData encoding '%s'", enc), array = node$path)
  )
}

# X or a layer, read as `how` asks.
anndata_matrix <- function(node, how) {
  enc <- anndata_encoding(node)
  sparse <- enc %in% c("csr_matrix", "csc_matrix")
  if (how == "delayed") {
    if (!sparse) return(zarr_delayed(node))
    return(delayed_da("DelayedArray")(anndata_sparse(node, enc)))
  }
  m <- anndata_read(node)
  if (how == "dense" && sparse) return(as.matrix(m))
  if (how == "sparse" && !sparse) return(methods::as(m, "CsparseMatrix"))
  m
}

require_matrix <- function() {
  if (!requireNamespace("Matrix", quietly = TRUE))
    zarr_abort("argument", "reading sparse AnnData matrices needs the package Matrix")
}

# CSR/CSC groups into Matrix classes without copying or reordering: CSR
# (rows compressed) is a dgRMatrix, CSC a dgCMatrix.
anndata_sparse <- function(node, enc) {
  require_matrix()
  kids <- node$children
  shape <- as.integer(unlist(node$attributes[["shape"]]))
  x <- anndata_values(kids$data)
  idx <- as.integer(anndata_values(kids$indices))
  p <- anndata_values(kids$indptr)
  if (length(p) && p[length(p)] > .Machine$integer.max)
    zarr_abort("value", "a sparse matrix with more than 2^31 - 1 values does not fit a Matrix object", array = node$path)
  p <- as.integer(p)
  logical <- is.logical(x)
  if (!logical) x <- as.double(x)
  cls <- paste0(if (logical) "lg" else "dg", if (enc == "csr_matrix") "RMatrix" else "CMatrix")
  # slots set one by one: new() with slots would run the validity check, which fails on unsorted indices
  m <- methods::new(cls)
  m@Dim <- shape
  m@p <- p
  if (enc == "csr_matrix") m@j <- idx else m@i <- idx
  m@x <- x
  # scipy may leave indices unsorted within a row or column; Matrix wants them sorted
  if (!isTRUE(methods::validObject(m, test = TRUE))) {
    lens <- diff(p)
    outer <- rep.int(seq_along(lens), lens)
    m <- if (enc == "csr_matrix") Matrix::sparseMatrix(i = outer, j = idx + 1L, x = x, dims = shape, repr = "R")
         else Matrix::sparseMatrix(i = idx + 1L, j = outer, x = x, dims = shape)
  }
  m
}

anndata_categorical <- function(node) {
  kids <- node$children
  codes <- as.integer(anndata_values(kids$codes))
  levels <- as.character(anndata_values(kids$categories))
  codes[codes < 0L] <- NA_integer_
  ordered <- isTRUE(node$attributes[["ordered"]])
  structure(codes + 1L, levels = levels, class = c(if (ordered) "ordered", "factor"))
}

# values + mask (mask TRUE where the value is missing)
anndata_nullable <- function(node) {
  kids <- node$children
  v <- anndata_values(kids$values)
  if (!is.null(kids$mask)) v[as.logical(anndata_values(kids$mask))] <- NA
  v
}

anndata_dataframe <- function(node) {
  kids <- node$children
  at <- node$attributes
  cols <- as.character(unlist(at[["column-order"]]))
  index_name <- at[["_index"]]
  df <- lapply(stats::setNames(cols, cols), function(k) {
    if (is.null(kids[[k]])) zarr_abort("value", sprintf("the data frame has no column '%s'", k), array = node$path)
    anndata_read(kids[[k]])
  })
  df <- as.data.frame(df, stringsAsFactors = FALSE, optional = TRUE)
  idx <- if (is.character(index_name) && !is.null(kids[[index_name]])) as.character(anndata_read(kids[[index_name]]))
  if (!length(cols)) df <- data.frame(row.names = seq_along(idx))
  if (!is.null(idx)) {
    if (anyDuplicated(idx)) {
      warning(sprintf("AnnData index of '%s' has duplicated names; made unique", node$path), call. = FALSE)
      idx <- make.unique(idx)
    }
    row.names(df) <- idx
  }
  df
}

#' @export
dim.zarr_anndata <- function(x) {
  n <- function(df, m, i) if (!is.null(df)) nrow(df) else if (!is.null(m)) dim(m)[i] else NA_integer_
  c(n(x$obs, x$X, 1L), n(x$var, x$X, 2L))
}

#' @export
print.zarr_anndata <- function(x, ...) {
  d <- dim(x)
  cat(sprintf("<AnnData store> %s: n_obs x n_vars = %s x %s\n", attr(x, "path") %||% "", d[1L], d[2L]))
  if (!is.null(x$X)) cat(sprintf("    X: %s\n", paste(class(x$X)[1L], collapse = "")))
  for (e in c("obs", "var")) if (length(x[[e]])) cat(sprintf("    %s: %s\n", e, paste(sQuote(names(x[[e]]), FALSE), collapse = ", ")))
  for (e in c("layers", "obsm", "varm", "obsp", "varp", "uns"))
    if (length(x[[e]])) cat(sprintf("    %s: %s\n", e, paste(sQuote(names(x[[e]]), FALSE), collapse = ", ")))
  invisible(x)
}

#' @rdname anndata
#' @param class For `as_sce()`: `"SingleCellExperiment"` (needs the package
#'   SingleCellExperiment) or `"SummarizedExperiment"`.
#' @param ... For `as_sce()`: arguments of `read_anndata()` when `x` is not
#'   a `zarr_anndata` object yet.
#' @export
as_sce <- function(x, class = c("SingleCellExperiment", "SummarizedExperiment"), ...) {
  class <- match.arg(class)
  if (!inherits(x, "zarr_anndata")) x <- read_anndata(x, ...)
  need <- c("SummarizedExperiment", if (class == "SingleCellExperiment") "SingleCellExperiment")
  for (p in need) if (!requireNamespace(p, quietly = TRUE))
    zarr_abort("argument", sprintf("as_sce() needs the package %s", p))
  df <- function(d) if (!is.null(d)) S4Vectors::DataFrame(d, check.names = FALSE)
  assays <- c(if (!is.null(x$X)) list(X = x$X), x$layers)
  assays <- lapply(assays, anndata_t)
  meta <- c(if (length(x$uns)) list(uns = x$uns), if (length(x$varm)) list(varm = x$varm))
  args <- list(assays = assays, colData = df(x$obs), rowData = df(x$var))
  if (class == "SummarizedExperiment") {
    meta <- c(meta, Filter(length, list(obsm = x$obsm, obsp = x$obsp, varp = x$varp)))
    return(do.call(SummarizedExperiment::SummarizedExperiment, c(args, list(metadata = meta))))
  }
  args$reducedDims <- lapply(x$obsm, function(m) if (is.data.frame(m)) df(m) else m)
  sce <- do.call(SingleCellExperiment::SingleCellExperiment, c(args, list(metadata = meta)))
  # pairs are indexed by position (SelfHits): names would leak into the indices
  unname_all <- function(l) lapply(l, function(m) {
    if (isS4(m)) m@Dimnames <- list(NULL, NULL) else dimnames(m) <- NULL
    m
  })
  if (length(x$obsp)) SingleCellExperiment::colPairs(sce) <- unname_all(x$obsp)
  if (length(x$varp)) SingleCellExperiment::rowPairs(sce) <- unname_all(x$varp)
  sce
}

# Cells x genes (AnnData) to genes x cells (Bioconductor). A CSR matrix of
# cells is a CSC matrix of genes with the same slots, so no values move;
# other matrices go through Matrix::t, the S4 generic that Matrix and
# DelayedArray objects (and base matrices) dispatch on.
anndata_t <- function(m) {
  if (!methods::is(m, "RsparseMatrix") || !methods::is(m, "generalMatrix")) return(Matrix::t(m))
  out <- methods::new(sub("RMatrix$", "CMatrix", class(m)[1L]))
  out@Dim <- rev(m@Dim)
  out@Dimnames <- rev(m@Dimnames)
  out@p <- m@p
  out@i <- m@j
  out@x <- m@x
  out
}

# as() from zarr_anndata, defined once the target's package is loaded (zarr
# does not load Bioconductor packages), in an environment of their own that
# names zarr as their package (zarr's namespace is locked by then), as the
# DelayedArray classes are (R/delayed.R).
anndata_targets <- c(SummarizedExperiment = "SummarizedExperiment", SingleCellExperiment = "SingleCellExperiment")
anndata_as_state <- new.env(parent = emptyenv())

register_anndata_as <- function(pkg) {
  if (isTRUE(anndata_as_state[[pkg]]) || !isNamespaceLoaded(pkg)) return(invisible())
  where <- anndata_as_state$where
  if (is.null(where)) {
    where <- new.env(parent = environment(register_anndata_as))
    assign(".packageName", "zarr", envir = where)
    methods::setOldClass("zarr_anndata", where = where)
    anndata_as_state$where <- where
  }
  to <- names(anndata_targets)[anndata_targets == pkg]
  methods::setAs("zarr_anndata", to, function(from) as_sce(from, to), where = where)
  anndata_as_state[[pkg]] <- TRUE
  invisible()
}
