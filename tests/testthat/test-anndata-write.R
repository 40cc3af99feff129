# write_anndata(): stores that read_anndata() reads back as written, and
# that Debian's anndata 0.8 (python3-anndata) reads equal to what was
# written.

# Every element kind: sparse X (CSR), dense and CSC layers; obs with
# categoricals (one ordered, one with a missing value), nullable integers
# and booleans, strings, doubles (with NA), integers and logicals; obsm with
# a matrix and a data frame; sparse obsp, dense varp; a nested uns.
adw_input <- function() {
  set.seed(7)
  obs_names <- paste0("cell", 1:6)
  var_names <- paste0("gene", 1:4)
  X <- methods::as(Matrix::rsparsematrix(6, 4, 0.4), "RsparseMatrix")
  X@Dimnames <- list(obs_names, var_names)
  named <- function(m, r, c = NULL) {
    dimnames(m) <- list(r, c)
    m
  }
  csc <- methods::as(X * 2, "CsparseMatrix")
  obsp <- Matrix::sparseMatrix(i = c(1, 2, 5), j = c(1, 4, 6), x = c(1.5, 2, 3), dims = c(6, 6))
  obsp@Dimnames <- list(obs_names, obs_names)
  list(
    X = X,
    layers = list(csc = csc, dense = named(matrix(as.double(1:24) / 4, 6), obs_names, var_names)),
    obs = data.frame(
      cell_type = factor(c("T", "B", NA, "T", "NK", "B")),
      stage = factor(c("lo", "hi", "lo", "mid", "hi", "lo"), levels = c("lo", "mid", "hi"), ordered = TRUE),
      label = letters[1:6], nint = c(1L, NA, 3L, 4L, 5L, 6L), nbool = c(TRUE, NA, FALSE, TRUE, TRUE, FALSE),
      score = c(0.5, NA, 1.25, -2, 3, 1e-300), k = -2:3, keep = c(TRUE, FALSE, TRUE, TRUE, FALSE, TRUE),
      row.names = obs_names),
    var = data.frame(symbol = paste0("G", 1:4), mean = c(0, 0.25, 0.5, 1), hv = c(TRUE, FALSE, TRUE, FALSE),
                     chrom = factor(c("1", "X", "1", "2")), row.names = var_names),
    obsm = list(X_pca = named(matrix(stats::rnorm(12), 6), obs_names),
                meta = data.frame(x = as.double(1:6), g = factor(c("a", "a", "b", "b", "c", "a")), row.names = obs_names)),
    varm = list(PCs = named(matrix(as.double(1:8), 4), var_names)),
    obsp = list(distances = obsp),
    varp = list(corr = named(diag(4), var_names, var_names)),
    uns = list(title = "a title", n_neighbors = 15L, alpha = 0.25, use = TRUE, ints = c(3L, 1L, 2L),
               names = c("p", "q", "r"), grid = matrix(0:5, 2), groups = factor(c("x", "y", "x")),
               params = list(method = "umap", inner = list(deep = list(k = "v"), x = 2.5)),
               table = data.frame(a = c(1.5, 2.5), b = c("u", "v"), row.names = c("r1", "r2")),
               graph = Matrix::sparseMatrix(i = 1:3, j = c(2, 3, 1), x = 2, dims = c(3, 3)))
  )
}

expect_same_anndata <- function(got, want) {
  expect_s3_class(got, "zarr_anndata")
  expect_identical(got$X, want$X)
  expect_identical(got$layers[names(want$layers)], want$layers)
  expect_identical(got$obs, want$obs)
  expect_identical(got$var, want$var)
  for (e in c("obsm", "varm", "obsp", "varp")) expect_identical(got[[e]][names(want[[e]])], want[[e]], info = e)
  expect_identical(sort_names(got$uns), sort_names(want$uns))
}

# dictionaries (uns) have no order
sort_names <- function(l) {
  if (!is.list(l) || is.data.frame(l)) return(l)
  lapply(l[order(names(l))], sort_names)
}

test_that("read_anndata() reads back what write_anndata() writes, every element kind, Zarr v2 and v3", {
  skip_if_not_installed("Matrix")
  ad <- adw_input()
  z <- write_anndata(ad)
  expect_s3_class(z, "zarr")
  expect_identical(z$root$metadata[["zarr_format"]], 2L)
  expect_identical(z$root$attributes[["encoding-type"]], "anndata")
  expect_expected <- function(back) {
    expect_same_anndata(back, ad)
    expect_s4_class(back$X, "dgRMatrix") # written as CSR, read as CSR
    expect_s4_class(back$layers$csc, "dgCMatrix")
  }
  expect_expected(read_anndata(z))
  expect_identical(unlist(z[["/obs"]]$attributes[["column-order"]]), names(ad$obs))
  expect_identical(z[["/obs/cell_type"]]$attributes[["encoding-type"]], "categorical")
  expect_identical(z[["/obs/nint"]]$attributes[["encoding-type"]], "nullable-integer")
  expect_identical(z[["/obs/nbool"]]$attributes[["encoding-type"]], "nullable-boolean")
  expect_identical(unlist(z[["/X"]]$attributes$shape), c(6L, 4L))
  expect_identical(z[["/uns/n_neighbors"]]$shape, integer()) # a scalar
  path <- file.path(withr::local_tempdir(), "v3.zarr")
  write_anndata(ad, path, format = 3)
  expect_true(file.exists(file.path(path, "zarr.json")))
  expect_expected(read_anndata(path))
  # without obs and var, the index comes from the names of X
  z2 <- write_anndata(list(X = ad$layers$dense))
  back <- read_anndata(z2)
  expect_identical(back$X, ad$layers$dense)
  expect_identical(row.names(back$obs), row.names(ad$obs))
  expect_length(back$obs, 0L)
})

test_that("anndata 0.8 reads write_anndata() output equal to what was written", {
  skip_if_not_installed("Matrix")
  ad <- adw_input()
  dir <- withr::local_tempdir()
  path <- file.path(dir, "ad.zarr")
  write_anndata(ad, path)
  d <- anndata_dumps(path)[[path]]
  # what anndata reads equals the R values written
  expect_anndata_equals_dump(structure(ad, class = "zarr_anndata"), d, "written")
  expect_identical(d$X$kind, "csr")
  expect_identical(d$layers$csc$kind, "csc")
  expect_identical(d$obsp$distances$kind, "csc")
  kinds <- vapply(d$obs$data, function(col) col$kind, "")
  expect_identical(kinds[names(ad$obs)],
                   c(cell_type = "categorical", stage = "categorical", label = "string", nint = "Int32",
                     nbool = "boolean", score = "float64", k = "int32", keep = "bool"))
  expect_identical(d$obs$data$stage$ordered, TRUE)
  expect_identical(d$uns$items$groups$kind, "categorical")
  expect_identical(d$uns$items$n_neighbors$kind, "scalar")
  expect_identical(d$uns$items$table$kind, "frame")
  # and read_anndata() agrees with anndata
  expect_anndata_equals_dump(read_anndata(path), d, "read back")
})

test_that("a SingleCellExperiment is written transposed: assays, colData, rowData, reducedDims, pairs, metadata", {
  skip_if_not_installed("Matrix")
  skip_if_not_installed("SingleCellExperiment")
  ad <- adw_input()
  ad$uns <- ad$uns[c("title", "params")]
  sce <- as_sce(structure(ad, class = "zarr_anndata"))
  S4Vectors::metadata(sce)$extra <- 42
  S4Vectors::metadata(sce)$fun <- function() 1
  dir <- withr::local_tempdir()
  path <- file.path(dir, "sce.zarr")
  expect_warning(write_anndata(sce, path), "uns\\$fun", class = "zarr_warning_anndata")
  back <- read_anndata(path)
  # X from the first assay: the CSC genes x cells matrix is the CSR cells x genes one, values unmoved
  expect_identical(back$X, ad$X)
  expect_identical(back$layers$dense, ad$layers$dense)
  expect_identical(as.matrix(back$layers$csc), as.matrix(ad$layers$csc))
  expect_identical(back$obs, ad$obs)
  expect_identical(back$var, ad$var)
  expect_identical(back$obsm$X_pca, ad$obsm$X_pca)
  expect_identical(back$obsm$meta, ad$obsm$meta)
  expect_identical(back$varm, ad$varm)
  expect_identical(unname(as.matrix(back$obsp$distances)), unname(as.matrix(ad$obsp$distances)))
  expect_identical(back$uns$title, "a title")
  expect_identical(sort_names(back$uns$params), sort_names(ad$uns$params))
  expect_identical(back$uns$extra, 42)
  expect_null(back$uns$fun)
  # X_name picks the assay written as X
  z <- suppressWarnings(write_anndata(sce, X_name = "dense"))
  expect_identical(read_anndata(z)$X, ad$layers$dense)
  expect_error(write_anndata(sce, X_name = "nope"), class = "zarr_error_argument")
  se <- as_sce(structure(ad, class = "zarr_anndata"), "SummarizedExperiment")
  back_se <- read_anndata(write_anndata(se))
  expect_identical(back_se$X, ad$X)
  expect_identical(back_se$obsp$distances, ad$obsp$distances) # from metadata(), where as_sce() put it
  # anndata 0.8 reads the store of the SingleCellExperiment
  d <- anndata_dumps(path)[[path]]
  expect_identical(as.integer(py_vec(d$shape)), c(6L, 4L))
  expect_matrix_equals_dump(ad$X, d$X, "sce X")
  expect_frame_equals_dump(ad$obs, d$obs, "sce obs")
  expect_matrix_equals_dump(ad$obsm$X_pca, d$obsm$X_pca, "sce obsm")
})

test_that("what cannot be written is a classed warning or error, never silently lost", {
  skip_if_not_installed("Matrix")
  obs <- data.frame(day = as.Date("2024-01-01") + 0:2, who = c("a", NA, "b"), n = 1:3)
  expect_warning(expect_warning(z <- write_anndata(list(X = matrix(0, 3, 2), obs = obs)),
                                "column 'day'", class = "zarr_warning_anndata"),
                 "NA strings", class = "zarr_warning_anndata")
  back <- read_anndata(z)
  expect_identical(names(back$obs), c("who", "n"))
  expect_identical(back$obs$who, factor(c("a", NA, "b")))
  expect_warning(z <- write_anndata(list(X = matrix(c(1L, NA, 3L, 4L), 2))), "NaN", class = "zarr_warning_anndata")
  expect_identical(unname(read_anndata(z)$X), matrix(c(1, NA, 3, 4), 2))
  expect_warning(write_anndata(list(uns = list(a = list(1, 2)))), "uns\\$a", class = "zarr_warning_anndata")
  expect_error(write_anndata(list(X = matrix(0, 3, 2), layers = list(l = matrix(0, 2, 3)))),
               "'l' is 2 x 3", class = "zarr_error_value")
  expect_error(write_anndata(list(X = matrix(0, 3, 2), obsm = list(p = matrix(0, 4, 2)))),
               "obsm 'p'", class = "zarr_error_value")
  expect_error(write_anndata(list(X = matrix("a", 2, 2))), class = "zarr_error_value")
  expect_error(write_anndata(list(Y = 1)), "Y", class = "zarr_error_argument")
  expect_error(write_anndata(list(X = matrix(0, 1, 1)), format = 4), class = "zarr_error_argument")
  expect_error(write_anndata(1:3), class = "zarr_error_argument")
  dir <- withr::local_tempdir()
  writeLines("x", file.path(dir, "taken"))
  expect_error(write_anndata(list(X = matrix(0, 1, 1)), dir), class = "zarr_error_exists")
})
