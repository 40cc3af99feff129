# GeoZarr georeferencing: the zarr-conventions proj:, spatial: and
# multiscales attributes (stores built here from the conventions' published
# examples, checked against hand computations) and GDAL 3.6's own `_CRS`
# (stores GDAL writes, checked against what gdalinfo reports).

skip_without_geo <- function() {
  skip_if_not_installed("stars")
  skip_if_not_installed("sf")
  skip_if_not_installed("terra")
}

# Registration of the proj: and spatial: conventions plus their properties,
# as the conventions' examples write them on an array.
geo_attrs <- function(code = NULL, wkt2 = NULL, projjson = NULL, dims = c("Y", "X"), transform = NULL, ...) {
  a <- list()
  if (!is.null(code) || !is.null(wkt2) || !is.null(projjson))
    a <- zarr_convention_proj$new()$set(code = code, wkt2 = wkt2, projjson = projjson)$write(a)
  zarr_convention_spatial$new()$set(dimensions = dims, transform = transform, ...)$write(a)
}

geo_array <- function(g, name, shape, attrs, dims = c("Y", "X"), dtype = "uint8", values = NULL) {
  b <- define_array(dtype, shape)
  b$dimension_names <- dims
  a <- g$add_array(name, b)
  for (k in names(attrs)) a$set_attribute(k, attrs[[k]])
  if (!is.null(values)) a$write(values)
  a
}

test_that("the conventions register as the published texts name them", {
  k <- zarr_conventions()
  expect_identical(k$uuid[match(c("proj:", "spatial:", "multiscales"), k$name)],
                   c("f17cb550-5864-4468-aeb7-f3180cfb622f", "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
                     "d35379db-88df-4056-af3a-620245f8e347"))
  a <- geo_attrs(code = "EPSG:3857", transform = c(2, 0, 10, 0, -2, 20), shape = c(5, 4))
  expect_identical(vapply(a$zarr_conventions, `[[`, "", "name"), c("proj:", "spatial:"))
  expect_identical(a[["proj:code"]], "EPSG:3857")
  expect_identical(unlist(a[["spatial:bbox"]]), c(10, 10, 18, 20)) # x 10..18, y 20-2*5..20
  expect_identical(a[["spatial:registration"]], "pixel")
  expect_error(zarr_convention_proj$new()$set(code = "4326"), class = "zarr_error_value")
  expect_error(zarr_convention_spatial$new()$set("x"), class = "zarr_error_argument")
  expect_error(zarr_convention_spatial$new()$set(c("y", "x"), transform = 1:5), class = "zarr_error_value")
})

test_that("the proj: and spatial: example (EPSG:3857) opens in stars and terra with its CRS and transform", {
  skip_without_geo()
  z <- create_zarr()
  # the example of the spatial convention: a 256 x 256 web-mercator tile of the world
  ext <- 20037508.342789244
  res <- 156543.03392804097
  a <- geo_array(z$root, "tile", c(256, 256),
                 geo_attrs(code = "EPSG:3857", transform = c(res, 0, -ext, 0, -res, ext),
                           bbox = c(-ext, -ext, ext, ext)),
                 values = matrix(rep(0:255, 256), 256, byrow = TRUE))
  r <- terra::rast(a)
  expect_equal(as.vector(terra::ext(r)), c(xmin = -ext, xmax = ext, ymin = -ext, ymax = ext))
  expect_equal(terra::res(r), c(res, res))
  expect_identical(terra::crs(r, describe = TRUE)$code, "3857")
  expect_identical(terra::values(r)[1:3, 1], c(0, 1, 2)) # the first row, west to east
  s <- stars::st_as_stars(a)
  d <- stars::st_dimensions(s)
  expect_equal(c(d$X$offset, d$X$delta, d$Y$offset, d$Y$delta), c(-ext, res, ext, -res))
  expect_identical(sf::st_crs(s)$epsg, 3857L)
  expect_equal(s[[1]][3, 1], 2) # stars: x first
  # a selection keeps its place: its own first cell
  s2 <- stars::st_as_stars(a$isel(Y = 11:12, X = 101:104))
  d2 <- stars::st_dimensions(s2)
  expect_equal(c(d2$X$offset, d2$Y$offset), c(-ext + 100 * res, ext - 10 * res))
})

test_that("proj:wkt2 and proj:projjson, group-level properties and node registration", {
  skip_without_geo()
  z <- create_zarr()
  wkt <- sf::st_crs("EPSG:32632")$wkt
  g <- z$root$add_group("g")
  # the CRS and the spatial dimensions on the group apply to its arrays
  for (k in names(at <- geo_attrs(wkt2 = wkt, dims = c("lat", "lon"))))
    g$set_attribute(k, at[[k]])
  a <- geo_array(g, "v", c(2, 3), list(`spatial:transform` = list(1, 0, 100, 0, -1, 50),
                                       `spatial:registration` = "node"),
                 dims = c("lat", "lon"), values = matrix(1:6, 2, byrow = TRUE))
  # the array's transform replaces the group's whole
  g$set_attribute("spatial:transform", list(5, 0, 0, 0, -5, 0))
  r <- terra::rast(a)
  # node registration: the transform gives cell centres, the extent is half a cell wider
  expect_equal(as.vector(terra::ext(r)), c(xmin = 99.5, xmax = 102.5, ymin = 48.5, ymax = 50.5))
  expect_identical(terra::crs(r, describe = TRUE)$code, "32632")
  expect_identical(as.vector(terra::values(r)), c(1, 2, 3, 4, 5, 6))
  # PROJJSON (the form GDAL also writes in `_CRS`)
  pj <- jsonlite::fromJSON('{"type": "GeographicCRS", "name": "WGS 84",
    "datum": {"type": "GeodeticReferenceFrame", "name": "World Geodetic System 1984",
      "ellipsoid": {"name": "WGS 84", "semi_major_axis": 6378137, "inverse_flattening": 298.257223563}},
    "coordinate_system": {"subtype": "ellipsoidal", "axis": [
      {"name": "Geodetic latitude", "abbreviation": "Lat", "direction": "north", "unit": "degree"},
      {"name": "Geodetic longitude", "abbreviation": "Lon", "direction": "east", "unit": "degree"}]},
    "id": {"authority": "EPSG", "code": 4326}}', simplifyVector = FALSE)
  b <- geo_array(z$root, "w", c(2, 2), geo_attrs(projjson = pj, dims = c("y", "x"), transform = c(0.5, 0, 0, 0, -0.5, 1)),
                 dims = c("y", "x"), values = matrix(1:4, 2))
  expect_identical(sf::st_crs(stars::st_as_stars(b))$epsg, 4326L)
  # bad properties are classed errors when converting
  b$set_attribute("spatial:transform", list(1, 2, 3))
  expect_error(terra::rast(b), class = "zarr_error_value")
  b$set_attribute("spatial:transform", list(1, 0, 0, 0, -1, 0))
  b$set_attribute("proj:code", "not a code")
  expect_error(stars::st_as_stars(b), class = "zarr_error_value")
})

test_that("a multiscales group lists its levels and each level opens georeferenced", {
  skip_without_geo()
  z <- create_zarr()
  g <- z$root$add_group("reflectance")
  # the multiscales example of the spatial convention (r10m, r20m), shapes scaled down
  ms <- zarr_convention_multiscales$new()
  ms$set(list(list(asset = "r10m", transform = list(scale = c(1, 1), translation = c(0, 0)),
                   `spatial:shape` = c(12, 12), `spatial:transform` = c(10, 0, 500000, 0, -10, 5000000)),
              list(asset = "r20m", derived_from = "r10m", transform = list(scale = c(2, 2), translation = c(0, 0)),
                   `spatial:shape` = c(6, 6), `spatial:transform` = c(20, 0, 500000, 0, -20, 5000000))))
  at <- ms$write(zarr_convention_proj$new()$set(code = "EPSG:32633")$write(list()))
  at <- zarr_convention_spatial$new()$set(c("Y", "X"), bbox = c(500000, 4999880, 500120, 5000000))$write(at)
  for (k in names(at)) g$set_attribute(k, at[[k]])
  for (l in c("r10m", "r20m")) {
    n <- if (l == "r10m") 12 else 6
    geo_array(g$add_group(l), "b04", c(n, n), list(), values = matrix(seq_len(n * n) %% 256, n))
  }
  lv <- zarr_levels(g)
  expect_s3_class(lv, "zarr_levels")
  expect_identical(lv$asset, c("r10m", "r20m"))
  expect_identical(lv$derived_from, c(NA, "r10m"))
  expect_identical(lv$shape, c("12 x 12", "6 x 6"))
  expect_identical(lv$resolution, c("10 x 10", "20 x 20"))
  expect_output(print(lv), "2 levels")
  expect_identical(nrow(zarr_levels(z$root)), 0L)
  r <- terra::rast(g$get_node("r20m/b04"))
  expect_equal(as.vector(terra::ext(r)), c(xmin = 500000, xmax = 500120, ymin = 4999880, ymax = 5e6))
  expect_identical(terra::crs(r, describe = TRUE)$code, "32633")
  s <- stars::st_as_stars(g[["r10m"]][["b04"]])
  d <- stars::st_dimensions(s)
  expect_equal(c(d$X$offset, d$X$delta, d$Y$delta), c(500000, 10, -10))
  # a level group as a dataset: its arrays are georeferenced for that level
  sd <- stars::st_as_stars(zarr_dataset(g[["r20m"]]))
  expect_equal(stars::st_dimensions(sd)$X$delta, 20)
  expect_identical(sf::st_crs(sd)$epsg, 32633L)
  # levels that are arrays in the multiscales group itself
  h <- z$root$add_group("pyramid")
  at2 <- zarr_convention_multiscales$new()$set(list(
    list(asset = "0", `spatial:transform` = c(1, 0, 0, 0, -1, 4)),
    list(asset = "1", derived_from = "0", transform = list(scale = c(2, 2)),
         `spatial:transform` = c(2, 0, 0, 0, -2, 4))))$write(list())
  for (k in names(at2)) h$set_attribute(k, at2[[k]])
  for (l in 0:1) geo_array(h, as.character(l), c(4, 4) / 2^l, list(), values = matrix(0L, 4 / 2^l, 4 / 2^l))
  expect_identical(zarr_levels(h)$shape, c("4 x 4", "2 x 2"))
  expect_equal(as.vector(terra::ext(terra::rast(h[["1"]]))), c(xmin = 0, xmax = 4, ymin = 0, ymax = 4))
  # a layout that is not a list of levels is a classed error
  g$set_attribute("multiscales", list(layout = list(list(derived_from = "x"))))
  expect_error(zarr_levels(g), class = "zarr_error_value")
})

test_that("as_zarr() of stars objects and SpatRasters writes proj:, spatial: and CF grid_mapping", {
  skip_without_geo()
  r <- terra::rast(nrows = 3, ncols = 4, xmin = 500000, xmax = 500040, ymin = 4999940, ymax = 5e6,
                   crs = "EPSG:32633", nlyrs = 2)
  terra::values(r) <- cbind(1:12, 101:112)
  names(r) <- c("b1", "b2")
  z <- as_zarr(r)
  a <- z$root[["b2"]]
  expect_identical(a$attributes[["proj:code"]], "EPSG:32633")
  expect_identical(unlist(a$attributes[["spatial:transform"]]), c(10, 0, 500000, 0, -20, 5e6))
  expect_identical(unlist(a$attributes[["spatial:dimensions"]]), c("y", "x"))
  expect_identical(a$attributes[["grid_mapping"]], "spatial_ref")
  r2 <- terra::rast(a)
  expect_equal(as.vector(terra::ext(r2)), as.vector(terra::ext(r)))
  expect_identical(terra::values(r2)[, 1], as.numeric(101:112))
  s <- stars::st_as_stars(r)
  z2 <- as_zarr(s)
  b <- z2$root[["b1"]]
  expect_identical(unlist(b$attributes[["spatial:dimensions"]]), c("y", "x"))
  expect_identical(unlist(b$attributes[["spatial:shape"]]), c(3L, 4L))
  expect_identical(b$attributes[["proj:code"]], "EPSG:32633")
  s2 <- stars::st_as_stars(b)
  expect_equal(stars::st_dimensions(s2)$x$offset, 500000)
  expect_equal(stars::st_dimensions(s2)$y$delta, -20)
  expect_identical(sf::st_crs(s2)$epsg, 32633L)
})

test_that("stores GDAL 3.6 writes (_CRS, X/Y coordinates) open with the CRS and transform gdalinfo reports", {
  skip_on_cran()
  skip_without_geo()
  skip_without_gdal()
  p <- local_store_path()
  tif <- tempfile(fileext = ".tif")
  info <- run_python('
from osgeo import gdal, osr
gdal.UseExceptions()
tif, out = sys.argv[1], sys.argv[2]
ds = gdal.GetDriverByName("GTiff").Create(tif, 5, 3, 2, gdal.GDT_Int16) # 2 bands: arrays Band1, Band2
ds.SetGeoTransform([500000, 10, 0, 5000000, 0, -20])
s = osr.SpatialReference()
s.ImportFromEPSG(32633)
ds.SetProjection(s.ExportToWkt())
for b in (1, 2):
    ds.GetRasterBand(b).WriteArray((np.arange(15).reshape(3, 5) * b - 3).astype("int16"))
del ds
t = gdal.Translate(out, tif, format="ZARR")
del t # closes the store: GDAL writes it then
z = gdal.Open("ZARR:\\"%s\\":/Band1" % out)
srs = z.GetSpatialRef()
emit({"gt": list(z.GetGeoTransform()), "epsg": srs.GetAuthorityCode(None), "values": z.ReadAsArray().tolist()})',
    c(tif, p))
  z <- open_zarr(p, read_only = TRUE)
  a <- z$root[["Band1"]]
  gt <- unlist(info$gt)
  r <- terra::rast(a)
  expect_equal(as.vector(terra::ext(r)), c(xmin = gt[1], xmax = gt[1] + 5 * gt[2], ymin = gt[4] + 3 * gt[6], ymax = gt[4]))
  expect_identical(terra::crs(r, describe = TRUE)$code, info$epsg)
  expect_identical(as.vector(terra::values(r)), as.numeric(unlist(info$values)))
  s <- stars::st_as_stars(a)
  d <- stars::st_dimensions(s)
  expect_equal(c(d$X$offset, d$X$delta, d$Y$offset, d$Y$delta), gt[c(1, 2, 4, 6)])
  expect_identical(as.character(sf::st_crs(s)$epsg), info$epsg)
})

test_that("GDAL reads the georeferencing of what as_zarr() writes from a SpatRaster", {
  skip_on_cran()
  skip_without_geo()
  skip_without_gdal()
  p <- local_store_path()
  r <- terra::rast(nrows = 3, ncols = 4, xmin = 500000, xmax = 500040, ymin = 4999940, ymax = 5e6,
                   crs = "EPSG:32633")
  terra::values(r) <- 1:12
  names(r) <- "b1"
  as_zarr(r, location = p)
  info <- run_python('
from osgeo import gdal
gdal.UseExceptions()
z = gdal.Open("ZARR:\\"%s\\":/b1" % sys.argv[1])
srs = z.GetSpatialRef()
emit({"gt": list(z.GetGeoTransform()), "epsg": srs.GetAuthorityCode(None) if srs else None,
      "values": z.ReadAsArray().tolist()})', p)
  expect_equal(unlist(info$gt), c(500000, 10, 0, 5e6, 0, -20))
  expect_identical(info$epsg, "32633")
  expect_identical(as.numeric(unlist(info$values)), as.numeric(1:12))
})

test_that("a GDAL-written array with valid_range reads as GDAL reads it", {
  skip_on_cran()
  skip_without_gdal()
  p <- local_store_path()
  d <- run_python('
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.GetDriverByName("ZARR").CreateMultiDimensional(sys.argv[1], options=["FORMAT=ZARR_V2"])
rg = ds.GetRootGroup()
dy = rg.CreateDimension("y", None, None, 2)
dx = rg.CreateDimension("x", None, None, 3)
a = rg.CreateMDArray("v", [dy, dx], gdal.ExtendedDataType.Create(gdal.GDT_Int16))
at = a.CreateAttribute("valid_range", [2], gdal.ExtendedDataType.Create(gdal.GDT_Int16))
at.Write([0, 10])
a.Write(np.array([[-5, 0, 5], [10, 15, 20]], dtype="int16"))
del at, a, dy, dx, rg, ds
r = gdal.OpenEx(sys.argv[1], gdal.OF_MULTIDIM_RASTER).GetRootGroup().OpenMDArray("v")
emit({"values": r.ReadAsArray().tolist(), "valid_range": r.GetAttribute("valid_range").Read()})', p)
  expect_identical(unlist(d$valid_range), c(0L, 10L))
  z <- open_zarr(p, read_only = TRUE)
  want <- matrix(as.numeric(unlist(d$values)), 2, byrow = TRUE)
  expect_equal(z$root[["v"]]$read(), want, ignore_attr = TRUE) # not masked outside the range
  expect_identical(anyNA(z$root[["v"]]$sel()$values), FALSE)
})
