# Converters between decoded Zarr data (zarr_cf_data, arrays, datasets) and
# the classes of the stars and terra packages, and the writer of xarray
# datasets from stars objects and data frames. stars and terra are
# suggested: their methods are registered when those packages load.

# ---- registration of methods for generics of suggested packages ----

# S4 methods need a mutable place to live: the namespace is locked once
# loaded, and terra may load after it.
cf_s4_env <- new.env()

# The S3 classes of a zarr_array, as S4 sees them (setOldClass()): one
# hierarchy for every package whose S4 methods take arrays (terra here,
# DelayedArray in R/delayed.R); two different ones break dispatch.
zarr_array_s3_classes <- c("zarr_array", "zarr_node", "zarr_object", "R6")

cf_register_stars <- function(...) {
  ns <- asNamespace("stars")
  for (cl in c("zarr_array", "zarr_cf_data", "zarr_dataset"))
    registerS3method("st_as_stars", cl, get(paste0("st_as_stars.", cl), mode = "function"), envir = ns)
}

cf_register_terra <- function(...) {
  rast <- methods::getGeneric("rast", package = "terra")
  methods::setOldClass(zarr_array_s3_classes, where = cf_s4_env)
  methods::setOldClass("zarr_cf_data", where = cf_s4_env)
  methods::setMethod(rast, "zarr_array", function(x, ...) cf_rast(x$sel(...)), where = cf_s4_env)
  methods::setMethod(rast, "zarr_cf_data", function(x, ...) cf_rast(x), where = cf_s4_env)
  methods::setOldClass(c("zarr_dataset", "R6"), where = cf_s4_env)
  methods::setMethod(rast, "zarr_dataset", function(x, ..., vars = NULL) cf_rast_dataset(x, ..., vars = vars),
                     where = cf_s4_env)
}

# Register now when the package is loaded already, else when it loads.
cf_register_when_loaded <- function(pkg, fun) {
  if (isNamespaceLoaded(pkg)) fun()
  setHook(packageEvent(pkg, "onLoad"), function(...) fun())
}

cf_register_converters <- function() {
  cf_register_when_loaded("stars", cf_register_stars)
  cf_register_when_loaded("terra", cf_register_terra)
}

# ---- which dimension is x, which is y ----

# "X", "Y", "T" or "" for each dimension of a zarr_cf_data, from the
# attributes of its coordinate arrays (axis, standard_name, units) or its
# name.
cf_axes <- function(dims, attrs) {
  vapply(seq_along(dims), function(d) {
    a <- attrs[[d]] %||% list()
    ax <- toupper(as.character(a[["axis"]] %||% "")[1L])
    if (ax %in% c("X", "Y", "T")) return(ax)
    sn <- as.character(a[["standard_name"]] %||% "")[1L]
    u <- as.character(a[["units"]] %||% "")[1L]
    n <- tolower(dims[d])
    if (sn %in% c("longitude", "projection_x_coordinate", "grid_longitude") || grepl("^degrees?_?e", u) ||
        n %in% c("x", "lon", "long", "longitude", "rlon", "easting")) return("X")
    if (sn %in% c("latitude", "projection_y_coordinate", "grid_latitude") || grepl("^degrees?_?n", u) ||
        n %in% c("y", "lat", "latitude", "rlat", "northing")) return("Y")
    if (sn == "time" || grepl("\\ssince\\s", u) || n %in% c("time", "t")) return("T")
    ""
  }, "")
}

# The order of the Zarr dimensions in stars (and terra) terms: x, y, then the
# others from the last to the first (stars' order is the reverse of Zarr's
# C order: lon, lat, time for xarray's time, lat, lon). Without axes named,
# the last Zarr dimension is x and the one before it y.
cf_xy_order <- function(x) {
  n <- length(x$dims)
  if (n < 2L) return(seq_len(n))
  ax <- x$axes %||% rep("", n)
  xd <- match("X", ax)
  yd <- match("Y", ax)
  g <- geo_georef(x)
  if (!is.null(g)) { xd <- g$xd; yd <- g$yd }
  if (is.na(xd) || is.na(yd) || xd == yd) { xd <- n; yd <- n - 1L }
  c(xd, yd, rev(setdiff(seq_len(n), c(xd, yd))))
}

# The WKT of the CRS of a variable: the crs_wkt or spatial_ref attribute of
# its grid_mapping variable (or its own attributes, as GDAL writes them).
cf_crs_wkt <- function(x) {
  pick <- function(a) {
    w <- a[["crs_wkt"]] %||% a[["spatial_ref"]]
    if (is.character(w) && length(w) == 1L && nzchar(w)) w
  }
  gdal <- x$attributes[["_CRS"]] # GDAL's own attribute (its Zarr driver before 3.13)
  pick(x$grid_mapping %||% list()) %||% pick(x$attributes %||% list()) %||%
    if (json_is_object(gdal)) pick(list(crs_wkt = gdal[["wkt"]]))
}

# The CRS of a variable: from the proj: convention, else from CF.
cf_crs_any <- function(x) {
  geo_crs(x$geo %||% list()) %||% cf_crs_wkt(x)
}

# Coordinate values of dimension d (indices where there are none; times of
# other calendars as ISO strings).
cf_dim_values <- function(x, d) cf_coord_column(x$coords[[d]], x$index[[d]])

cf_plain_values <- function(v) {
  if (inherits(v, "CFTime")) v <- v$as_timestamp()
  if (is.null(dim(v))) dim(v) <- length(v)
  v
}

# ---- stars ----

#' Convert decoded Zarr data to stars or terra objects
#'
#' With the \pkg{stars} package installed, `stars::st_as_stars()` takes a
#' [zarr_array], a [zarr_cf_data] selection (from the `sel()` and `isel()`
#' methods) or a [zarr_dataset]; with \pkg{terra} installed, `terra::rast()`
#' takes a 2-d or 3-d [zarr_array] or [zarr_cf_data], or a [zarr_dataset]
#' (the layers of each variable, of those `vars` names or by default of
#' those `as.data.frame()` takes, one after the other). Values are decoded
#' (see [cf-decoding]).
#'
#' `st_as_stars()` puts the dimensions in stars' order: x (longitude) first,
#' then y (latitude), then the others in the reverse of their Zarr order (so
#' xarray's `time, lat, lon` becomes `lon, lat, time`). x and y are found
#' from the `axis`, `standard_name` or `units` attributes of the coordinate
#' arrays or from their names (lon, lat, x, y, ...); otherwise the last two
#' Zarr dimensions are x and y. Dimensions take their coordinate values
#' (regular ones as offset and delta, as cell centres for x and y), times as
#' `POSIXct` or `Date` (other calendars as ISO strings). The `units`
#' attribute makes the values \pkg{units} objects (when that package is
#' installed and knows the unit). The CRS comes from the `crs_wkt` or
#' `spatial_ref` attribute of the variable named by `grid_mapping` (or
#' GDAL's `_CRS` attribute of the variable itself).
#'
#' GeoZarr data (EOPF Sentinel products, GDAL 3.13 with
#' `GEOREFERENCING_CONVENTION=SPATIAL_PROJ`) are georeferenced by the
#' zarr-conventions instead: the CRS from `proj:code`, `proj:wkt2` or
#' `proj:projjson` (see [zarr_convention_proj]) and the x and y dimensions
#' and their affine transform from `spatial:dimensions` and
#' `spatial:transform` (see [zarr_convention_spatial]), on the array, on its
#' group, or in the entry for its level in the layout of a `multiscales`
#' group above (see [zarr_levels()]). They take precedence over coordinate
#' arrays; a selection gets the transform of its own first cell. stars
#' keeps rotated transforms; terra needs a grid along x and y. A dataset
#' gives one stars attribute per data variable (those with the dimensions of
#' the first data variable with the most dimensions, or `vars`).
#'
#' `rast()` needs regular x and y coordinates: the extent is that of the
#' cells whose centres they are; rows are put north up (flipped when the
#' latitudes increase; without y coordinates the first row stays on top,
#' as in an image); the third dimension gives the layers, named after
#' its coordinate values, and sets `terra::time()` when it holds times:
#' those of the standard calendars, and those of the "noleap", "all_leap"
#' and "360_day" calendars when each is also a Gregorian date (so
#' "2001-02-30" of "360_day" names a layer but sets no time; Julian dates
#' name other days than the Gregorian dates written the same way and set
#' no time either).
#'
#' Arguments in `...` of `st_as_stars()` and `rast()` of an array or a
#' dataset select by coordinate values first, as `sel()` does.
#'
#' The stars objects remember the arrays they came from, for [as_zarr()]
#' to write them back as they were (see "Datasets" there).
#' @param .x,x A [zarr_array], [zarr_cf_data] or (`st_as_stars()`)
#'   [zarr_dataset].
#' @param ... Selection by coordinate values (for arrays and datasets).
#' @param vars For datasets: the variables to convert.
#' @return A `stars` object, or a `SpatRaster`.
#' @name zarr-stars-terra
#' @aliases st_as_stars.zarr_array st_as_stars.zarr_cf_data st_as_stars.zarr_dataset
#'   rast,zarr_array-method rast,zarr_cf_data-method rast,zarr_dataset-method
#' @seealso [as_zarr()] to write stars objects and `SpatRaster`s for xarray
#'   and GDAL
#' @examplesIf requireNamespace("stars", quietly = TRUE)
#' z <- create_zarr()
#' for (d in c("lat", "lon")) {
#'   b <- define_array("float64", 3)
#'   b$dimension_names <- d
#'   z$root$add_array(d, b)$write(c(10, 20, 30))
#' }
#' b <- define_array("float64", c(3, 3))
#' b$dimension_names <- c("lat", "lon")
#' z$root$add_array("v", b)$write(matrix(1:9, 3))
#' stars::st_as_stars(z$root[["v"]])
NULL

st_as_stars.zarr_cf_data <- function(.x, ...) {
  x <- .x
  v <- cf_plain_values(x$values)
  ord <- cf_xy_order(x)
  if (length(ord) > 1L) v <- aperm(v, ord)
  dn <- ifelse(nzchar(x$dims), x$dims, paste0("dim", seq_along(x$dims)))[ord]
  vals <- lapply(ord, function(d) cf_dim_values(x, d))
  xy <- length(ord) >= 2L && is.numeric(vals[[1L]]) && is.numeric(vals[[2L]])
  # coordinates are cell centres (of one cell, the extent is unknown)
  mid <- xy & seq_along(ord) <= 2L & lengths(vals) > 1L
  args <- c(stats::setNames(vals, dn), list(.raster = if (xy) dn[1:2] else rep(NA_character_, 2L), cell_midpoints = mid))
  dims <- do.call(stars::st_dimensions, args)
  v <- cf_set_units(v, x$units)
  s <- stars::st_as_stars(stats::setNames(list(v), cf_value_name(x)), dimensions = dims)
  g <- geo_georef(x)
  if (!is.null(g)) s <- geo_stars_dims(s, dn[1:2], g$transform)
  wkt <- cf_crs_any(x)
  if (!is.null(wkt)) s <- sf::st_set_crs(s, sf::st_crs(wkt))
  cf_set_sources(s, list(x))
}

# x and y dimensions of a stars object from an affine transform (a, b, c,
# d, e, f): offsets and steps, and the rotation terms as stars' `affine`.
geo_stars_dims <- function(s, xy, tr) {
  d <- stars::st_dimensions(s)
  set <- function(dim, offset, delta) {
    dim$offset <- offset
    dim$delta <- delta
    dim["values"] <- list(NULL)
    dim$point <- FALSE
    dim
  }
  d[[xy[1L]]] <- set(d[[xy[1L]]], tr[3L], tr[1L])
  d[[xy[2L]]] <- set(d[[xy[2L]]], tr[6L], tr[5L])
  r <- attr(d, "raster")
  r$affine <- c(tr[2L], tr[4L])
  r$dimensions <- xy
  r$curvilinear <- FALSE
  attr(d, "raster") <- r
  attr(s, "dimensions") <- d
  s
}

# units objects where the units package knows the unit (times are not)
cf_set_units <- function(v, u) {
  if (!is.character(u) || length(u) != 1L || grepl("\\ssince\\s", u) || !is.numeric(v) ||
      !requireNamespace("units", quietly = TRUE)) return(v)
  tryCatch(units::set_units(v, u, mode = "standard"), error = function(e) v)
}

st_as_stars.zarr_array <- function(.x, ...) st_as_stars.zarr_cf_data(.x$sel(...))

st_as_stars.zarr_dataset <- function(.x, ..., vars = NULL) {
  parts <- .x$sel(..., vars = vars %||% cf_default_vars(.x))
  out <- lapply(parts, st_as_stars.zarr_cf_data)
  cf_set_sources(if (length(out) == 1L) out[[1L]] else do.call(c, unname(out)), parts)
}

# ---- terra ----

cf_rast <- function(x) {
  n <- length(x$dims)
  if (n < 2L || n > 3L) zarr_abort("value", sprintf("terra's rasters have 2 or 3 dimensions, %s has %d", x$path, n))
  ord <- cf_xy_order(x)
  v <- aperm(cf_plain_values(x$values), ord) # x, y, layers
  xc <- cf_dim_values(x, ord[1L])
  yc <- cf_dim_values(x, ord[2L])
  g <- geo_georef(x)
  if (!is.null(g)) {
    tr <- g$transform
    if (tr[2L] != 0 || tr[4L] != 0) zarr_abort("value", sprintf("the transform of %s is rotated: terra needs a grid along x and y", x$path))
    # cell centres from the transform
    xc <- tr[3L] + tr[1L] * (seq_along(xc) - 0.5)
    yc <- tr[6L] + tr[5L] * (seq_along(yc) - 0.5)
  } else if (is.null(x$coords[[ord[2L]]])) {
    # without y coordinates, the first row stays on top (as an image, as GDAL shows it)
    yc <- rev(yc)
  }
  step <- function(cv, what) {
    if (!is.numeric(cv)) zarr_abort("value", sprintf("the %s coordinates of %s are not numbers", what, x$path))
    if (length(cv) < 2L) return(if (!is.null(g)) abs(tr[if (what == "x") 1L else 5L]) else 1)
    dd <- diff(cv)
    if (any(abs(dd - dd[1L]) > 1e-6 * abs(dd[1L]))) zarr_abort("value", sprintf("the %s coordinates of %s are not regular: terra needs a regular grid", what, x$path))
    dd[1L]
  }
  dx <- step(xc, "x")
  dy <- step(yc, "y")
  # terra's arrays are rows (north first), columns (west first), layers
  if (length(dim(v)) == 2L) dim(v) <- c(dim(v), 1L)
  if (dx < 0) v <- v[rev(seq_along(xc)), , , drop = FALSE]
  if (dy > 0) v <- v[, rev(seq_along(yc)), , drop = FALSE]
  v <- aperm(v, c(2L, 1L, 3L))
  ex <- terra::ext(min(xc) - abs(dx) / 2, max(xc) + abs(dx) / 2, min(yc) - abs(dy) / 2, max(yc) + abs(dy) / 2)
  r <- terra::rast(v, extent = ex, crs = cf_crs_any(x) %||% "")
  name <- cf_value_name(x)
  if (n == 3L) {
    lv <- cf_dim_values(x, ord[3L])
    names(r) <- paste(name, format(lv), sep = "_")
    lv <- cf_gregorian_labels(x$coords[[ord[3L]]], lv)
    if (inherits(lv, c("Date", "POSIXct"))) terra::time(r) <- lv
  } else names(r) <- name
  if (is.character(x$units) && length(x$units) == 1L) terra::units(r) <- x$units
  r
}

# The times of a model calendar (noleap, all_leap, 360_day) as Date or
# POSIXct when each is also a date of the Gregorian calendar (the labels
# kept, as terra does for netCDF files; 2001-02-30 is no such date, and Julian
# dates name other days): terra's time() takes nothing else. `lv` otherwise.
cf_gregorian_labels <- function(cv, lv) {
  if (!inherits(cv, "CFTime") || !cv$cal$name %in% c("noleap", "365_day", "all_leap", "366_day", "360_day") ||
      !is.character(lv) || anyNA(lv)) return(lv)
  day <- all(nchar(lv) == 10L)
  fmt <- if (day) "%Y-%m-%d" else "%Y-%m-%dT%H:%M:%S"
  t <- if (day) as.Date(lv, format = fmt, optional = TRUE) else as.POSIXct(lv, tz = "UTC", format = fmt)
  if (anyNA(t) || !identical(format(t, fmt), lv)) return(lv)
  t
}

# rast() of a dataset: one layer per time (or element of the third
# dimension) and variable, the variables of as.data.frame() by default.
cf_rast_dataset <- function(x, ..., vars = NULL) {
  parts <- x$sel(..., vars = vars %||% cf_default_vars(x))
  out <- lapply(parts, cf_rast)
  if (length(out) == 1L) out[[1L]] else do.call(c, unname(out))
}

# ---- writing stars objects and data frames for xarray ----

# What as_zarr() needs to write a converted dataset back as it was read:
# the Zarr order of the dimensions and, per variable and coordinate, its
# attributes and data type. as.data.frame() and st_as_stars() of decoded
# data keep it in the attribute "zarr_cf" of what they return (data frames
# keep it through row subsets; a data frame or stars object without it is
# written from what it holds).
cf_sources <- function(parts) {
  vars <- list()
  for (p in parts) vars[names(p$sources$variables)] <- p$sources$variables
  list(dims = parts[[1L]]$dims, variables = vars, group = parts[[1L]]$sources$group)
}

cf_set_sources <- function(x, parts) {
  if (length(parts) && !is.null(parts[[1L]]$sources)) attr(x, "zarr_cf") <- cf_sources(parts)
  x
}

# One array's part of it
cf_source_of <- function(a) list(attributes = a$attributes, data_type = a$data_type)

# Attributes about how values are stored or linking to other variables:
# as_zarr() writes its own, never the source's
cf_storage_attrs <- c("scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned",
                      "coordinates", "grid_mapping", "bounds", "_ARRAY_DIMENSIONS", "dtype")

# as_zarr() of a stars object or a data frame (R/api.R dispatches here).
as_zarr_dataset <- function(x, location = NULL, pack = NULL, dims = NULL, format = 2L, chunks = NULL) {
  src <- attr(x, "zarr_cf", exact = TRUE)
  ds <- if (inherits(x, "stars")) cf_from_stars(x, src$dims) else if (inherits(x, "SpatRaster")) cf_from_spatraster(x)
    else cf_from_data_frame(x, dims, src)
  srcv <- src$variables
  old <- options(zarr.format = as.integer(format))
  on.exit(options(old), add = TRUE)
  z <- create_zarr(location)
  g <- z$root
  # the dataset's own attributes (title, Conventions, history, ...)
  for (k in setdiff(names(src$group), "_ARRAY_DIMENSIONS")) g$set_attribute(k, src$group[[k]])
  # coordinates in one chunk each, as xarray writes them
  for (d in names(ds$coords)) cf_write_variable(g, d, ds$coords[[d]], d, list(), chunks = length(ds$coords[[d]]), src = srcv[[d]])
  for (v in names(ds$vars)) {
    attrs <- ds$attrs[[v]] %||% list()
    # as rioxarray writes it: a coordinate holding the CRS
    if (!is.null(ds$crs)) attrs[c("grid_mapping", "coordinates")] <- list("spatial_ref", "spatial_ref")
    # and as GDAL 3.13 writes it: the proj: and spatial: conventions (a
    # variable written back as read gets them only if its source had them)
    src_attrs <- names(srcv[[v]]$attributes)
    if (!is.null(ds$geo) && (is.null(srcv[[v]]) || any(grepl("^(proj|spatial):", src_attrs))))
      attrs <- geo_write_attrs(attrs, ds$crs, ds$geo)
    # and GDAL's own attribute, which GDAL before 3.13 reads (not grid_mapping)
    if (!is.null(ds$crs)) attrs[["_CRS"]] <- list(wkt = ds$crs)
    cf_write_variable(g, v, ds$vars[[v]], ds$dims, attrs, pack[[v]], chunks, src = srcv[[v]])
  }
  if (!is.null(ds$crs)) {
    b <- define_array("int32", integer())
    b$dimension_names <- character() # xarray needs the (empty) list of dimensions
    a <- g$add_array("spatial_ref", b)
    a$write(0L)
    a$set_attribute("crs_wkt", ds$crs)
    a$set_attribute("spatial_ref", ds$crs)
  }
  zarr_consolidate(z)
  z
}

# One variable: its data type, CF attributes (time units, packing), then the
# decoded values, which write() encodes. `src` (see cf_sources()) is the
# array the values were read from: its attributes are kept, its time units
# and calendar, packing and floating-point type are used again.
cf_write_variable <- function(g, name, v, dims, attrs, pack = NULL, chunks = NULL, src = NULL) {
  shape <- dim(v) %||% length(v)
  enc <- if (!is.null(src)) tryCatch(cf_encoding(src$attributes, src$data_type, name), error = function(e) NULL)
  sa <- src$attributes %||% list()
  # times (of other calendars: ISO strings) in the source's units and calendar
  src_time <- !is.null(enc$time) && (inherits(v, c("Date", "POSIXct")) || is.character(v))
  drop <- c(cf_storage_attrs, if (src_time) c("units", "calendar"))
  # valid_min/max/range are in the stored units of a packed variable
  if (!is.null(enc$scale) || !is.null(enc$offset)) drop <- c(drop, "valid_min", "valid_max", "valid_range")
  sa <- sa[setdiff(names(sa), drop)]
  attrs <- c(sa[setdiff(names(sa), names(attrs))], attrs)
  src_type <- if (!is.null(src)) src$data_type$data_type
  src_kind <- if (!is.null(src_type)) dtype_kind(src_type) else NA
  if (src_time) {
    num <- cf_encode(v, list(time = enc$time, calendar = enc$calendar, kind = "f", bits = 64L), name)
    whole <- !anyNA(num) && all(num == round(num))
    dtype <- if (whole && src_kind %in% c("i", "u") && all(abs(num) < 2^(dtype_info(src_type)$size * 8 - 1)))
      src_type else "float64"
    attrs$units <- enc$units
    attrs$calendar <- enc$calendar
    v <- num
    if (length(shape) > 1L) dim(v) <- shape
  } else if (inherits(v, c("Date", "POSIXct"))) {
    t <- if (inherits(v, "Date")) as.numeric(v) * 86400 else as.numeric(v)
    ok <- t[!is.na(t)]
    origin <- if (length(ok)) min(ok) else 0
    per <- c(days = 86400, hours = 3600, minutes = 60, seconds = 1)
    whole <- vapply(per, function(p) all((ok - origin) %% p == 0), TRUE)
    unit <- names(per)[match(TRUE, whole)]
    origin_txt <- format(as.POSIXct(origin, origin = "1970-01-01", tz = "UTC"), "%Y-%m-%d %H:%M:%S")
    units <- if (is.na(unit)) paste("seconds since", origin_txt) else paste(unit, "since", origin_txt)
    span <- if (length(ok)) max(abs(ok - origin)) / per[[unit %|NA|% "seconds"]] else 0
    dtype <- if (!is.na(unit) && span < .Machine$integer.max) "int32" else "float64"
    attrs$units <- units
    attrs$calendar <- "proleptic_gregorian"
  } else {
    if (!is.numeric(v) && !is.logical(v) && !is.character(v) && !is.factor(v))
      zarr_abort("value", sprintf("variable '%s' of class %s cannot be written", name, class(v)[1L]))
    packed_src <- !is.null(enc$scale) || !is.null(enc$offset)
    # packed as it was read, unless `pack` says otherwise
    if (is.null(pack) && packed_src && src_kind %in% c("i", "u") && is.numeric(v) &&
        cf_packs_into(v, enc, src_type))
      pack <- list(scale_factor = enc$scale %||% 1, add_offset = enc$offset %||% 0, dtype = src_type,
                   `_FillValue` = enc$fill[1L])
    dtype <- if (!is.null(pack)) pack$dtype %||% "int16"
             else if (!packed_src && identical(src_kind, "f") && is.double(v)) src_type
             else r_data_type(v)
  }
  b <- define_array(dtype, shape)
  b$dimension_names <- dims
  if (!is.null(chunks)) b$chunk_shape <- pmin(shape, chunks)
  if (!is.null(pack)) {
    fill <- pack[["_FillValue"]] %||% -2^(dtype_info(dtype)$size * 8 - 1)
    b$fill_value <- fill
    attrs[["_FillValue"]] <- fill
    attrs$scale_factor <- pack$scale_factor %||% 1
    attrs$add_offset <- pack$add_offset %||% 0
  }
  a <- g$add_array(name, b)
  for (k in names(attrs)) a$set_attribute(k, attrs[[k]])
  a$write(v)
  a
}

# Whether values packed as in `enc` fit the integer type (values changed
# since they were read may not: they are then written unpacked)
cf_packs_into <- function(v, enc, dtype) {
  p <- (v[!is.na(v)] - (enc$offset %||% 0)) / (enc$scale %||% 1)
  bits <- dtype_info(dtype)$size * 8
  lim <- if (dtype_kind(dtype) == "u") c(0, 2^bits - 1) else c(-2^(bits - 1), 2^(bits - 1) - 1)
  !length(p) || all(is.finite(p) & round(p) >= lim[1L] & round(p) <= lim[2L])
}

`%|NA|%` <- function(a, b) if (is.na(a)) b else a

# A stars object -> list(coords, vars, dims (Zarr order), attrs, crs); the
# Zarr order is `order` (the source's) when it names the dimensions, else
# the reverse of stars' order.
cf_from_stars <- function(x, order = NULL) {
  d <- stars::st_dimensions(x)
  dn <- names(d)
  perm <- if (length(order) == length(dn) && setequal(order, dn)) match(order, dn) else rev(seq_along(dn))
  # x and y values are cell centres (as in CF); times are the start of their step
  xy <- attr(d, "raster")$dimensions
  coords <- stats::setNames(lapply(dn, function(n) {
    v <- stars::st_get_dimension_values(x, n, center = n %in% xy)
    if (inherits(v, "units")) v <- units::drop_units(v)
    v
  }), dn)
  vars <- lapply(seq_along(x), function(i) {
    v <- x[[i]]
    attrs <- list()
    if (inherits(v, "units")) {
      attrs$units <- as.character(units::deparse_unit(v))
      v <- units::drop_units(v)
    }
    if (is.null(dim(v))) dim(v) <- length(v)
    list(values = if (length(dn) > 1L) aperm(v, perm) else v, attrs = attrs)
  })
  crs <- sf::st_crs(x)
  list(coords = coords, vars = stats::setNames(lapply(vars, `[[`, "values"), names(x)),
       attrs = stats::setNames(lapply(vars, `[[`, "attrs"), names(x)), dims = dn[perm],
       crs = if (!is.na(crs)) crs$wkt, geo = geo_from_stars(d))
}

# The affine transform of the x and y dimensions of a stars object, when
# they are regular: list(dims (y, x), transform, shape (ny, nx)), else NULL.
geo_from_stars <- function(d) {
  r <- attr(d, "raster")
  xy <- r$dimensions
  if (length(xy) != 2L || isTRUE(r$curvilinear) || !all(xy %in% names(d))) return(NULL)
  dx <- d[[xy[1L]]]
  dy <- d[[xy[2L]]]
  if (!is.numeric(dx$offset) || !is.numeric(dy$offset) || anyNA(c(dx$offset, dx$delta, dy$offset, dy$delta)))
    return(NULL)
  aff <- r$affine %||% c(0, 0)
  aff[is.na(aff)] <- 0
  list(dims = rev(xy), transform = c(dx$delta, aff[1L], dx$offset, aff[2L], dy$delta, dy$offset),
       shape = c(dy$to - dy$from + 1L, dx$to - dx$from + 1L))
}

# A SpatRaster -> the list cf_from_stars() gives: one 2-d variable (y, x)
# per layer, x and y coordinates at cell centres.
cf_from_spatraster <- function(x) {
  nx <- terra::ncol(x)
  ny <- terra::nrow(x)
  e <- as.vector(terra::ext(x)) # xmin, xmax, ymin, ymax
  res <- terra::res(x)
  coords <- list(y = e[["ymax"]] - res[2L] * (seq_len(ny) - 0.5), x = e[["xmin"]] + res[1L] * (seq_len(nx) - 0.5))
  a <- terra::as.array(x) # rows (north first), columns, layers
  vn <- make.unique(make.names(names(x)))
  un <- terra::units(x)
  vars <- lapply(seq_len(terra::nlyr(x)), function(i) matrix(a[, , i], ny, nx))
  attrs <- lapply(seq_len(terra::nlyr(x)), function(i) if (isTRUE(nzchar(un[i]))) list(units = un[i]) else list())
  wkt <- terra::crs(x)
  list(coords = coords, vars = stats::setNames(vars, vn), attrs = stats::setNames(attrs, vn), dims = c("y", "x"),
       crs = if (nzchar(wkt)) wkt,
       geo = list(dims = c("y", "x"), transform = c(res[1L], 0, e[["xmin"]], 0, -res[2L], e[["ymax"]]), shape = c(ny, nx)))
}

# The proj: (EPSG code when the CRS has one, and its WKT2) and spatial:
# attributes of a variable.
geo_write_attrs <- function(attrs, wkt, geo) {
  if (!is.null(wkt)) {
    crs <- sf_or_terra_epsg(wkt)
    p <- zarr_convention_proj$new()
    p$set(code = if (!is.na(crs)) paste0("EPSG:", crs), wkt2 = wkt)
    attrs <- p$write(attrs)
  }
  s <- zarr_convention_spatial$new()
  s$set(dimensions = geo$dims, transform = geo$transform, shape = geo$shape)
  s$write(attrs)
}

# The EPSG code of a CRS given as WKT (NA when it has none), by sf or terra.
sf_or_terra_epsg <- function(wkt) {
  code <- NA_integer_
  if (requireNamespace("sf", quietly = TRUE)) code <- sf::st_crs(wkt)$epsg
  else if (requireNamespace("terra", quietly = TRUE)) {
    d <- terra::crs(wkt, describe = TRUE)
    if (identical(d$authority, "EPSG")) code <- as.integer(d$code)
  }
  if (length(code) != 1L) NA_integer_ else code
}

# A data frame of a regular grid: `dims` names the dimension columns, in
# Zarr order; the other columns are variables. Cells without a row are NA.
# By default they are the dimensions of the source (`src`, see
# cf_sources()), else the fewest first columns that tell the rows apart,
# put in CF's order when x and y are among them (cf_df_dim_order()).
cf_from_data_frame <- function(x, dims = NULL, src = NULL) {
  x <- as.data.frame(x)
  if (is.null(dims) && length(src$dims) && all(src$dims %in% names(x)) && length(src$dims) < ncol(x) &&
      !anyDuplicated(x[src$dims])) dims <- src$dims
  if (is.null(dims)) {
    k <- which(vapply(seq_len(ncol(x) - 1L), function(k) !anyDuplicated(x[seq_len(k)]), TRUE))[1L]
    if (is.na(k)) zarr_abort("value", "no columns of the data frame make a regular grid: give `dims`")
    dims <- cf_df_dim_order(x[seq_len(k)], src$variables)
  }
  if (!all(dims %in% names(x))) zarr_abort("argument", "`dims` must name columns of the data frame")
  coords <- lapply(x[dims], cf_df_coord_values)
  idx <- Map(match, x[dims], coords)
  shape <- lengths(coords)
  cell <- Reduce(function(acc, d) acc + (idx[[d]] - 1) * prod(shape[seq_len(d - 1L)]), seq_along(idx)[-1L], idx[[1L]])
  if (anyDuplicated(cell)) zarr_abort("value", "rows of the data frame repeat grid cells")
  vn <- setdiff(names(x), dims)
  vars <- lapply(vn, function(v) {
    col <- x[[v]]
    out <- rep(col[NA_integer_], prod(shape)) # NA of the column's type and class
    out[cell] <- col
    dim(out) <- shape
    out
  })
  list(coords = coords, vars = stats::setNames(vars, vn), attrs = list(), dims = dims, crs = NULL)
}

# The coordinate values of a dimension column: in the order they come when
# that is monotonic, else sorted (rows left out can put a later value first),
# decreasing when most values that come one after another decrease
cf_df_coord_values <- function(col) {
  u <- unique(col)
  if (is.factor(u) || anyNA(u) || !isTRUE(is.unsorted(u)) || !isTRUE(is.unsorted(rev(u)))) return(u)
  s <- tryCatch(sort(u), error = function(e) NULL)
  if (length(s) != length(u)) return(u)
  ups <- sum(utils::tail(u, -1L) > utils::head(u, -1L))
  if (ups < (length(u) - 1L) / 2) rev(s) else s
}

# The Zarr order of the dimension columns of a data frame: with an x and a y
# column (as cf_axes() finds them, times also by their class) xarray's
# order, time first, x last, other dimensions between them in their column
# order (so expand.grid(lon, lat, time) and the long format of stars give
# time, lat, lon); else the order of the columns.
cf_df_dim_order <- function(cols, sources = NULL) {
  dn <- names(cols)
  ax <- cf_axes(dn, lapply(dn, function(d) sources[[d]]$attributes))
  ax[vapply(cols, inherits, TRUE, c("Date", "POSIXct"))] <- "T"
  if (!all(c("X", "Y") %in% ax)) return(dn)
  rank <- match(ax, c("T", "", "Y", "X"))
  dn[order(rank)]
}

# the variables converted by default: as as.data.frame() of a dataset takes them
cf_default_vars <- function(x) {
  dv <- x$data_vars
  if (!length(dv)) zarr_abort("value", "the dataset has no data variables")
  dn <- lapply(dv, function(v) x[[v]]$dimension_names)
  first <- dn[[which.max(lengths(dn))]]
  dv[vapply(dn, identical, TRUE, first)]
}
