# The seven user journeys of issue 28, each run end to end as the README and
# the help pages tell a newcomer to do it (the steps are those of the README
# chunks and the vignettes they point to). Values are checked against what
# the data was made of, or against the independent writer/reader (xarray,
# anndata) where one exists.

# How many colours a plot drew (render_png() of helper-plot.R): a colour
# scale over varying values gives many, an empty or failed plot one or two.
plot_colours <- function(draw) {
  img <- render_png(draw)
  length(unique(round(as.vector(img[, , 1]) * 255) * 65536 +
                round(as.vector(img[, , 2]) * 255) * 256 + round(as.vector(img[, , 3]) * 255)))
}

test_that("journey 1: xarray data, CF decoding, selection by date, stars/terra, plot", {
  skip_on_cran()
  skip_without_xarray()
  path <- file.path(withr::local_tempdir(), "air.zarr")
  run_python(c(
    "import json, sys, numpy as np, pandas as pd, xarray as xr",
    "t = pd.date_range('2020-01-01', periods=6, freq='D')",
    "v = np.arange(6 * 3 * 4).reshape(6, 3, 4) / 10 + 280",
    "ds = xr.Dataset({'air': (('time', 'lat', 'lon'), v, {'units': 'K'})},",
    "                coords={'time': t, 'lat': [50., 45., 40.], 'lon': [0., 5., 10., 15.]})",
    "ds.lat.attrs['units'] = 'degrees_north'; ds.lon.attrs['units'] = 'degrees_east'",
    "ds.air.encoding = {'dtype': 'int16', 'scale_factor': 0.1, 'add_offset': 0.0, '_FillValue': -32767}",
    "ds.to_zarr(sys.argv[1], consolidated=True)",
    "print(json.dumps({}))"), path)
  expected <- array(seq(0, 71) / 10 + 280, c(4, 3, 6))       # numpy C order: lon fastest
  expected <- aperm(expected, 3:1)                            # time, lat, lon

  z <- open_zarr(path, read_only = TRUE)
  air <- z[["/air"]]
  expect_identical(air$dimension_names, c("time", "lat", "lon"))
  expect_equal(air[, , ], expected, ignore_attr = TRUE)       # unpacked int16 -> K
  expect_identical(air[1, 1, 1:2, decode = FALSE], c(2800L, 2801L))
  expect_equal(z[["/time"]][], as.Date("2020-01-01") + 0:5)

  s <- air$sel(time = c("2020-01-02", "2020-01-03"), lat = 45, lon = c(5, 10))
  expect_equal(unname(as.array(s)), expected[2:3, 2, 2:3, drop = FALSE], ignore_attr = TRUE)
  expect_equal(s$coords$lon, c(5, 10))
  n <- air$sel(time = "2020-01-04", lat = 44, lon = 11, method = "nearest")
  expect_equal(as.vector(n$values), expected[4, 2, 3])

  ds <- zarr_dataset(z)
  df <- as.data.frame(ds)
  expect_identical(nrow(df), 72L)
  expect_equal(df$air[df$lat == 40 & df$lon == 15 & df$time == as.Date("2020-01-06")],
               expected[6, 3, 4])

  if (requireNamespace("stars", quietly = TRUE)) {
    st <- stars::st_as_stars(air)
    expect_identical(unname(dim(st)), c(4L, 3L, 6L))        # lon, lat, time
    expect_equal(as.numeric(st[[1]][, , 2]), as.numeric(t(expected[2, , ])))
  }
  if (requireNamespace("terra", quietly = TRUE)) {
    r <- terra::rast(air, time = c("2020-01-01", "2020-01-02"))
    expect_equal(terra::nlyr(r), 2)
    expect_equal(as.character(terra::time(r)), c("2020-01-01", "2020-01-02"))
    # north up: the first row is lat 50, as stored
    expect_equal(unname(terra::values(r)[, 1]), as.vector(t(expected[1, , ])))
  }
  # a plot never picks a time step unasked; the error says what to pass
  expect_error(plot_colours(function() plot(air)), "slice = list\\(time = 1\\)", class = "zarr_error_argument")
  expect_gt(plot_colours(function() plot(air, slice = list(time = 2))), 10)
})

test_that("journey 2: an AnnData store to SingleCellExperiment and back", {
  skip_on_cran()
  skip_without_anndata()
  skip_if_not_installed("SingleCellExperiment")
  dir <- withr::local_tempdir()
  path <- file.path(dir, "pbmc.zarr")
  run_python(c(
    "import json, sys, warnings, numpy as np, pandas as pd, anndata as ad, scipy.sparse as sp",
    "warnings.simplefilter('ignore')",
    "X = sp.csr_matrix(np.array([[1, 0, 2], [0, 3, 0], [4, 0, 0], [0, 0, 5]], dtype='float32'))",
    "obs = pd.DataFrame({'cell_type': pd.Categorical(['T', 'B', 'T', 'NK'])}, index=['c1', 'c2', 'c3', 'c4'])",
    "var = pd.DataFrame({'gene_ids': ['g1', 'g2', 'g3']}, index=['A', 'B', 'C'])",
    "a = ad.AnnData(X=X, obs=obs, var=var)",
    "a.obsm['X_pca'] = np.arange(8, dtype='float64').reshape(4, 2)",
    "a.uns['title'] = 'demo'",
    "a.write_zarr(sys.argv[1])",
    "print(json.dumps({}))"), path)
  X <- matrix(c(1, 0, 2, 0, 3, 0, 4, 0, 0, 0, 0, 5), 4, 3, byrow = TRUE)

  ad <- read_anndata(path)
  expect_equal(as.matrix(ad$X), X, ignore_attr = TRUE)
  expect_identical(as.vector(table(ad$obs$cell_type)[c("B", "NK", "T")]), c(1L, 1L, 2L))
  sce <- as_sce(ad)
  expect_s4_class(sce, "SingleCellExperiment")
  expect_identical(dim(sce), c(3L, 4L))                     # genes x cells
  expect_equal(as.matrix(SummarizedExperiment::assay(sce, "X")), t(X), ignore_attr = TRUE)
  expect_identical(colnames(sce), c("c1", "c2", "c3", "c4"))
  expect_equal(unname(SingleCellExperiment::reducedDim(sce, "X_pca")),
               matrix(0:7, 4, 2, byrow = TRUE))

  out <- file.path(dir, "out.zarr")
  suppressWarnings(write_anndata(sce, out))
  back <- run_python(c(
    "import json, sys, warnings, anndata as ad",
    "warnings.simplefilter('ignore')",
    "a = ad.read_zarr(sys.argv[1])",
    "X = a.X.toarray() if hasattr(a.X, 'toarray') else a.X",
    "print(json.dumps({'shape': list(a.shape), 'X': X.tolist(), 'obs': list(a.obs_names),",
    "                  'cell_type': [str(v) for v in a.obs['cell_type']], 'title': a.uns['title']}))"), out)
  expect_identical(unlist(back$shape), c(4L, 3L))           # cells x genes again
  expect_equal(do.call(rbind, lapply(back$X, unlist)), X)
  expect_identical(unlist(back$obs), c("c1", "c2", "c3", "c4"))
  expect_identical(unlist(back$cell_type), c("T", "B", "T", "NK"))
  expect_identical(back$title, "demo")
})

test_that("journey 3: an OME-NGFF image, its levels, a region in physical units, a channel plot", {
  skip_on_cran()
  path <- file.path(withr::local_tempdir(), "image.ome.zarr")
  a <- array(seq_len(2 * 64 * 48), c(2, 64, 48))
  write_ome_ngff(a, path, levels = 3, axes = c("c", "y", "x"), scale = c(1, 0.5, 0.5),
                 units = c(NA, "micrometer", "micrometer"), channels = c("DAPI", "GFP"))
  img <- open_zarr(path)$root
  expect_s3_class(img$levels, "data.frame")
  expect_identical(nrow(img$levels), 3L)
  expect_identical(img$level(2)$shape, c(2L, 32L, 24L))
  # y 0 to 2 and x 0 to 1 micrometer at 0.5 per pixel: pixels 1..5 and 1..3
  r <- img$read_region(level = 1, y = c(0, 2), x = c(0, 1), c = "DAPI")
  expect_equal(unclass(r)[1, , ], a[1, 1:5, 1:3], ignore_attr = TRUE)
  expect_equal(attr(r, "coordinates")$y, seq(0, 2, by = 0.5))
  expect_gt(plot_colours(function() plot(img, channel = "GFP")), 10)
  # the errors a user meets first say what would have worked
  expect_error(img$read_region(level = 1, c = "RFP"), "channels: DAPI, GFP", class = "zarr_error_argument")
  expect_error(write_ome_ngff(a, tempfile(fileext = ".zarr"), axes = c("c", "y", "x"), units = c(y = "micrometer")),
               "axes (c, y, x)", fixed = TRUE, class = "zarr_error_argument")
})

test_that("journey 4: a large array written in pieces, threads, progress, map_blocks", {
  skip_on_cran()
  withr::local_options(zarr.num_threads = 2, zarr.progress = FALSE)
  z <- create_zarr(file.path(withr::local_tempdir(), "big.zarr"))
  d <- define_array("float64", c(400, 300))
  d$chunk_shape <- c(100, 100)
  a <- z$root$add_array("t", d)
  for (j in 1:3) a[, (j - 1) * 100 + 1:100] <- matrix(j, 400, 100)   # one column of chunks at a time
  expect_identical(sum(a[, ]), 400 * 100 * 6)
  expect_identical(zarr_map_blocks(a, sum, combine = `+`), 240000)
  expect_equal(nrow(zarr_chunk_blocks(a)$block), 12)
  out <- zarr_map_blocks(a, function(x) x * 2, output = list(define_array("float64", a$shape), "/t2"))
  expect_identical(z[["/t2"]][400, c(1, 300)], c(2, 6))
  if (requireNamespace("mirai", quietly = TRUE)) {
    mirai::daemons(2)
    withr::defer(mirai::daemons(0))
    expect_identical(zarr_map_blocks(a, max, combine = max), 3)
  }
})

test_that("journey 5: an Icechunk repository: its history, a snapshot, a branch", {
  skip_on_cran()
  repo <- system.file("extdata", "volcano.icechunk", package = "zarr")
  skip_if(!nzchar(repo), "the example Icechunk repository is not installed")
  h <- icechunk_history(repo)
  expect_identical(names(h), c("snapshot_id", "time", "message"))
  expect_identical(h$message[nrow(h)], "Repository initialized")
  z <- open_zarr(repo, snapshot = h$snapshot_id[1])
  expect_identical(z[["/elevation"]]$shape, c(87L, 61L))
  main <- open_zarr(repo, branch = "main")
  expect_identical(main$store$branches(), "main")
  expect_equal(main[["/elevation"]][, ], z[["/elevation"]][, ])
  expect_error(open_zarr(repo, branch = "dev"), "no branch 'dev' (branches: main)", fixed = TRUE,
               class = "zarr_error_not_found")
})

test_that("journey 6: a Zarr Vectors point cloud: write, read a box, levels, plot", {
  skip_on_cran()
  set.seed(6)
  xyz <- matrix(runif(300, 0, 200), ncol = 3)
  path <- file.path(withr::local_tempdir(), "points.zarr")
  write_zarr_vectors(path, vertices = xyz, chunk_shape = c(100, 100, 100), links = cbind(1:99, 2:100))
  zv <- open_zarr(path)$root
  b <- zv$read_box(lower = c(0, 0, 0), upper = c(50, 50, 50))
  inside <- apply(xyz, 1, function(p) all(p >= 0 & p <= 50))
  expect_identical(nrow(b$vertices), sum(inside))
  expect_equal(sort(b$vertices$x), sort(xyz[inside, 1]), tolerance = 1e-6)   # stored as float32
  expect_equal(zv$levels$vertex_count[1], 100)
  expect_gt(nrow(zv$levels), 1L)
  expect_gt(plot_colours(function() plot(zv, box = list(x = c(0, 100), y = c(0, 100)))), 2)
})

test_that("journey 7: a domain package: a convention, a node subclass, registered", {
  skip_on_cran()
  conv_class <- R6::R6Class("journey_units_convention", inherit = zarr_convention, cloneable = FALSE,
    private = list(.unit = NULL),
    public = list(
      initialize = function() super$initialize(name = "units",
        schema = "https://example.org/zarr-units/v1/schema.json",
        uuid = "7c1f5b2e-3a4d-4f6b-9e21-0b8d5c4a7e13"),
      set = function(unit) { private$.unit <- unit; invisible(self) },
      as_list = function() list(`units:unit` = private$.unit),
      clear = function() { private$.unit <- NULL; invisible(self) }))
  array_class <- R6::R6Class("journey_units_array", inherit = zarr_array, cloneable = FALSE,
    public = list(initialize = function(name, metadata, parent) {
      super$initialize(name, metadata, parent)
      private$.domain <- "Units"
    }),
    active = list(unit = function() private$.metadata$attributes[["units:unit"]]))
  domain_class <- R6::R6Class("journey_units_domain", inherit = zarr_domain, cloneable = FALSE,
    public = list(
      initialize = function() super$initialize("JourneyUnits"),
      build = function(name, metadata, parent) {
        convs <- metadata$attributes$zarr_conventions
        if (identical(metadata$node_type, "array") &&
            any(vapply(convs %||% list(), function(cv) identical(cv$name, "units"), TRUE)))
          array_class$new(name, metadata, parent)
        else FALSE
      }))
  dom <- domain_class$new()
  zarr_register_domain(dom)
  withr::defer(zarr_unregister_domain(dom))

  path <- file.path(withr::local_tempdir(), "units.zarr")
  z <- create_zarr(path)
  temps <- z$add_array("/", "temperature", define_array("int16", c(2, 2)))
  temps[, ] <- matrix(1:4, 2, 2)
  conv <- conv_class$new()$set("K")
  atts <- c(conv$register(list()), conv$as_list())
  for (nm in names(atts)) temps$set_attribute(nm, atts[[nm]])
  z$add_array("/", "counts", define_array("int32", 3))

  z <- open_zarr(path)
  expect_s3_class(z[["/temperature"]], "journey_units_array")
  expect_identical(z[["/temperature"]]$unit, "K")
  expect_identical(z[["/temperature"]][, ], matrix(1:4, 2, 2))
  expect_false(inherits(z[["/counts"]], "journey_units_array"))
})

test_that("read_anndata() of a store that is not AnnData says so instead of reading an empty object", {
  z <- create_zarr()
  z$add_array("/", "air", define_array("float64", c(2, 2)))
  err <- expect_error(read_anndata(z), class = "zarr_error_value")
  expect_match(conditionMessage(err), "group '/' is not an AnnData store")
  expect_match(conditionMessage(err), "its children: air")
  expect_error(read_anndata(create_zarr()), "its children: none", class = "zarr_error_value")
})

test_that("write_zarr_vectors() without chunk_shape says what to give", {
  err <- expect_error(write_zarr_vectors(file.path(withr::local_tempdir(), "v.zarr"),
                                         vertices = matrix(1:4, ncol = 2)),
                      class = "zarr_error_argument")
  expect_match(conditionMessage(err), "chunk_shape is needed", fixed = TRUE)
  expect_match(conditionMessage(err), "chunk_shape = c(100, 100)", fixed = TRUE)
})
