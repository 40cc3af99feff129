# AnnData stores written by Python's anndata (Debian's python3-anndata 0.8),
# read with read_anndata(): the values must equal what anndata reads back
# from the same stores; as_sce() must give Bioconductor's orientation.

anndata_stores <- local({
  made <- NULL
  function() {
    if (!is.null(made)) return(made)
    skip_without_anndata()
    dir <- tempfile("anndata")
    dir.create(dir)
    code <- c(readLines(testthat::test_path("python", "anndata_dump.py")),
              readLines(testthat::test_path("python", "anndata_stores.py")))
    made <<- list(dir = dir, dump = run_python(code, dir))
    made
  }
})

test_that("read_anndata() reads what anndata writes: X, layers, obs, var, obsm, varm, obsp, varp, uns", {
  s <- anndata_stores()
  for (name in c("full", "dense", "csc")) {
    ad <- read_anndata(file.path(s$dir, paste0(name, ".zarr")))
    expect_anndata_equals_dump(ad, s$dump[[name]], name)
  }
})

test_that("sparse X and layers become Matrix classes as stored; categoricals, nullable and bool columns", {
  s <- anndata_stores()
  ad <- read_anndata(file.path(s$dir, "full.zarr"))
  expect_s4_class(ad$X, "dgRMatrix") # CSR, not copied into another layout
  expect_s4_class(ad$layers$csc, "dgCMatrix")
  expect_s4_class(ad$layers$counts, "dgRMatrix") # int32 data as doubles (Matrix has no integer class)
  expect_s4_class(ad$layers$unsorted, "RsparseMatrix")
  expect_true(methods::validObject(ad$layers$unsorted))
  expect_true(is.matrix(ad$layers$dense))
  expect_identical(ad$X@p, c(0L, cumsum(tabulate(which(py_matrix(s$dump$full$X) != 0, arr.ind = TRUE)[, 1], 7L))))
  obs <- ad$obs
  expect_identical(obs$cell_type, factor(c("T", "B", NA, "T", "NK", "B", NA), levels = c("B", "NK", "T")))
  expect_identical(obs$stage, factor(c("lo", "hi", "mid", "hi", "lo", "lo", "mid"), levels = c("lo", "mid", "hi"), ordered = TRUE))
  expect_identical(obs$keep, c(TRUE, FALSE, TRUE, TRUE, FALSE, TRUE, FALSE))
  expect_identical(obs$nint, c(1, NA, 3, 4, NA, 6, 7))
  expect_identical(obs$nbool, c(TRUE, NA, FALSE, TRUE, FALSE, NA, TRUE))
  expect_identical(obs$n_i32, -3:3)
  expect_identical(obs$n_genes, c(10, 20, 30, 40, 50, 60, 70)) # int64 as doubles
  expect_true(is.nan(obs$score[2])) # NaN stays NaN (no fill value masking)
  expect_identical(ad$uns$params$grid, matrix(0:5, 2, byrow = TRUE) + 0)
  expect_identical(ad$uns$params$inner$deep$k, "v")
  expect_identical(ad$uns$title, "a title")
  expect_identical(rownames(ad$obsm$X_pca), row.names(obs))
  expect_s3_class(ad$obsm$meta, "data.frame")
  expect_identical(levels(ad$obsm$meta$g), c("a", "b", "c"))
  out <- capture.output(print(ad))
  expect_match(out[1], "n_obs x n_vars = 7 x 5", fixed = TRUE)
  expect_true(any(grepl("obsm: 'meta', 'X_pca', 'X_umap'|obsm: .*X_pca", out)))
})

test_that("X = 'dense', 'sparse' and 'delayed' read X and layers as asked; elements picks what is read", {
  s <- anndata_stores()
  path <- file.path(s$dir, "full.zarr")
  full <- read_anndata(path)
  dense <- read_anndata(path, X = "dense")
  expect_true(is.matrix(dense$X))
  expect_identical(dense$X, as.matrix(full$X))
  expect_true(all(vapply(dense$layers, is.matrix, TRUE)))
  sparse <- read_anndata(path, X = "sparse")
  expect_s4_class(sparse$layers$dense, "CsparseMatrix")
  expect_identical(as.matrix(sparse$layers$dense), full$layers$dense)
  some <- read_anndata(path, elements = c("obs", "uns"))
  expect_null(some$X)
  expect_null(some$layers)
  expect_identical(some$obs, full$obs)
  expect_identical(dim(some), c(7L, NA_integer_))
  expect_error(read_anndata(path, elements = "Y"), class = "zarr_error_argument")
  skip_if_not_installed("DelayedArray")
  lazy <- read_anndata(path, X = "delayed")
  expect_s4_class(lazy$X, "DelayedMatrix")
  expect_s4_class(lazy$layers$dense, "DelayedMatrix")
  # a dense layer is backed by the store, read block by block
  expect_s4_class(DelayedArray::seed(lazy$layers$dense), "ZarrRArraySeed")
  expect_identical(as.matrix(lazy$layers$dense), full$layers$dense)
  expect_identical(as.matrix(lazy$X), as.matrix(full$X))
  expect_identical(unname(DelayedArray::colSums(lazy$X)), unname(Matrix::colSums(full$X)))
  d2 <- read_anndata(file.path(s$dir, "dense.zarr"), X = "delayed")
  expect_identical(unname(as.matrix(d2$X)), py_matrix(s$dump$dense$X))
})

test_that("the same AnnData layout in Zarr v3 reads the same", {
  s <- anndata_stores()
  v3 <- file.path(s$dir, "full-v3.zarr")
  open_zarr(file.path(s$dir, "full.zarr"), read_only = TRUE)$save_to(v3, format = 3)
  expect_true(file.exists(file.path(v3, "zarr.json")))
  expect_anndata_equals_dump(read_anndata(v3), s$dump$full, "v3")
})

test_that("write_anndata() writes back what read_anndata() read; anndata reads it equal", {
  s <- anndata_stores()
  for (name in c("full", "dense", "csc")) {
    ad <- read_anndata(file.path(s$dir, paste0(name, ".zarr")))
    path <- file.path(s$dir, paste0(name, "-rewritten.zarr"))
    write_anndata(ad, path)
    expect_anndata_equals_dump(read_anndata(path), s$dump[[name]], paste(name, "rewritten"))
    expect_anndata_equals_dump(ad, anndata_dumps(path)[[path]], paste(name, "rewritten, read by anndata"))
  }
})

test_that("as_sce() gives genes x cells assays, colData = obs, rowData = var, reducedDims = obsm", {
  s <- anndata_stores()
  require_or_skip(requireNamespace("SingleCellExperiment", quietly = TRUE), "the R package SingleCellExperiment")
  ad <- read_anndata(file.path(s$dir, "full.zarr"))
  sce <- as_sce(ad)
  expect_s4_class(sce, "SingleCellExperiment")
  expect_identical(dim(sce), rev(dim(ad)))
  X <- SummarizedExperiment::assay(sce, "X")
  expect_s4_class(X, "dgCMatrix") # CSR cells x genes is CSC genes x cells: no copy
  expect_identical(as.matrix(X), t(as.matrix(ad$X)))
  expect_identical(SummarizedExperiment::assayNames(sce), c("X", names(ad$layers)))
  for (k in names(ad$layers))
    expect_identical(as.matrix(SummarizedExperiment::assay(sce, k)), t(as.matrix(ad$layers[[k]])), info = k)
  expect_identical(colnames(sce), row.names(ad$obs))
  expect_identical(rownames(sce), row.names(ad$var))
  cd <- SummarizedExperiment::colData(sce)
  expect_identical(names(cd), names(ad$obs))
  expect_identical(cd$cell_type, ad$obs$cell_type)
  expect_identical(as.data.frame(SummarizedExperiment::rowData(sce)), ad$var)
  expect_identical(SingleCellExperiment::reducedDimNames(sce), names(ad$obsm))
  expect_identical(SingleCellExperiment::reducedDim(sce, "X_pca"), ad$obsm$X_pca)
  expect_identical(as.matrix(SingleCellExperiment::colPair(sce, "distances", asSparse = TRUE)),
                   unname(as.matrix(ad$obsp$distances)))
  expect_identical(S4Vectors::metadata(sce)$uns, ad$uns)
  expect_identical(S4Vectors::metadata(sce)$varm, ad$varm)
  expect_identical(methods::as(ad, "SingleCellExperiment"), sce)
  expect_s4_class(methods::as(ad, "SummarizedExperiment"), "SummarizedExperiment")
  se <- as_sce(file.path(s$dir, "dense.zarr"), "SummarizedExperiment")
  expect_s4_class(se, "SummarizedExperiment")
  expect_false(methods::is(se, "SingleCellExperiment"))
  expect_identical(unname(SummarizedExperiment::assay(se)), t(py_matrix(s$dump$dense$X)))
  skip_if_not_installed("DelayedArray")
  lazy <- as_sce(file.path(s$dir, "full.zarr"), X = "delayed")
  expect_s4_class(SummarizedExperiment::assay(lazy, "dense"), "DelayedMatrix")
  expect_identical(as.matrix(SummarizedExperiment::assay(lazy, "dense")), t(ad$layers$dense))
})

test_that("an element with an unknown encoding is an error naming it", {
  s <- anndata_stores()
  path <- file.path(tempfile("anndata"), "bad.zarr")
  dir.create(path, recursive = TRUE)
  on.exit(unlink(dirname(path), recursive = TRUE))
  open_zarr(file.path(s$dir, "dense.zarr"), read_only = TRUE)$save_to(path, format = 2)
  open_zarr(path)[["/obs/label"]]$set_attribute("encoding-type", "awkward-array")
  expect_error(read_anndata(path, elements = "obs"), "awkward-array", class = "zarr_error_value")
  expect_silent(read_anndata(path, elements = "var"))
})
