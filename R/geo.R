# GeoZarr georeferencing through the zarr-conventions "proj:" (CRS),
# "spatial:" (affine transform, dimensions, bounding box) and "multiscales"
# (overview levels). The convention classes follow zarr_convention_uom; the
# helpers below gather the properties that apply to an array (its own, its
# group's, and the layout entry of a multiscales group above it) for the
# stars and terra converters (R/cf_convert.R).

#' Convention "proj:": coordinate reference systems
#'
#' The zarr-conventions `geo-proj` convention gives the coordinate reference
#' system (CRS) of geospatial data as attributes `proj:code` (an
#' "AUTHORITY:CODE" string such as "EPSG:32633"), `proj:wkt2` (WKT2 text) or
#' `proj:projjson` (a PROJJSON object), on an array or on its group (then
#' for the arrays directly in it). Set them with `set()`, get them with
#' `as_list()`, store them (and register the convention) with `write()`.
#' [`stars::st_as_stars()`][zarr-stars-terra] and `terra::rast()` of an
#' array that carries them set the CRS; `as_zarr()` of a stars object or a
#' `SpatRaster` writes them.
#' @seealso [zarr_convention_spatial], [zarr_convention_multiscales],
#'   [zarr_convention]
#' @export
#' @examples
#' p <- zarr_convention_proj$new()
#' p$set(code = "EPSG:32633")
#' str(p$write(list()))
zarr_convention_proj <- R6::R6Class("zarr_convention_proj",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "proj:" convention agent.
    #' @return A new agent.
    initialize = function() {
      k <- known_conventions$proj
      super$initialize(k$name, k$schema, k$uuid)
      private$.spec <- k$spec
      private$.description <- "Coordinate reference system information for geospatial data"
    },

    #' @description Set the CRS, in one or more forms.
    #' @param code An "AUTHORITY:CODE" string, such as "EPSG:4326".
    #' @param wkt2 WKT2 text.
    #' @param projjson A PROJJSON object (a list).
    #' @return Self, invisibly.
    set = function(code = NULL, wkt2 = NULL, projjson = NULL) {
      if (!is.null(code)) geo_check_code(code)
      if (!is.null(wkt2)) as_single_string(wkt2, "wkt2")
      if (!is.null(projjson) && !json_is_object(projjson))
        zarr_abort("argument", "'projjson' must be a named list (a JSON object)")
      if (is.null(code) && is.null(wkt2) && is.null(projjson))
        zarr_abort("argument", "give the CRS as `code`, `wkt2` or `projjson`")
      private$.props <- Filter(Negate(is.null), list(`proj:code` = code, `proj:wkt2` = wkt2,
                                                     `proj:projjson` = projjson))
      invisible(self)
    },

    #' @description The properties as stored in the attributes.
    #' @return A named list (`proj:code`, `proj:wkt2`, `proj:projjson` as set).
    as_list = function() private$.props,

    #' @description Write the properties into a list of attributes and
    #'   register the convention.
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) {
      if (!length(private$.props)) zarr_abort("argument", "set the CRS first")
      attributes <- self$register(attributes)
      attributes[grep("^proj:", names(attributes))] <- NULL
      c(attributes, private$.props)
    },

    #' @description Forget the CRS.
    #' @return Self, invisibly.
    clear = function() {
      private$.props <- list()
      invisible(self)
    }
  ),
  private = list(.props = list())
)

#' Convention "spatial:": array indices to coordinates
#'
#' The zarr-conventions `spatial` convention relates array indices to
#' coordinates: `spatial:dimensions` names the spatial dimensions (`y`, `x`
#' for 2-d data, in the order of the array), `spatial:transform` holds the
#' affine coefficients `a, b, c, d, e, f` with `x = a * col + b * row + c`,
#' `y = d * col + e * row + f` (`col`, `row` counted from 0 at the outer
#' corner of the first cell; the order of Python's affine package, not
#' GDAL's geotransform), `spatial:bbox` the extent `xmin, ymin, xmax, ymax`,
#' `spatial:shape` the size of the spatial dimensions and
#' `spatial:registration` "pixel" (the default: the transform gives cell
#' corners) or "node" (cell centres).
#' @seealso [zarr_convention_proj], [zarr_convention_multiscales]
#' @export
#' @examples
#' s <- zarr_convention_spatial$new()
#' s$set(dimensions = c("y", "x"), transform = c(10, 0, 500000, 0, -10, 5000000),
#'       shape = c(100, 100))
#' s$as_list()[["spatial:bbox"]]
#'
#' # an array georeferenced by proj: and spatial:
#' z <- create_zarr()
#' b <- define_array("float64", c(100, 100))
#' b$dimension_names <- c("y", "x")
#' a <- z$root$add_array("v", b)
#' at <- s$write(zarr_convention_proj$new()$set(code = "EPSG:32633")$write(list()))
#' for (k in names(at)) a$set_attribute(k, at[[k]])
#' if (requireNamespace("terra", quietly = TRUE)) terra::rast(a)
zarr_convention_spatial <- R6::R6Class("zarr_convention_spatial",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "spatial:" convention agent.
    #' @return A new agent.
    initialize = function() {
      k <- known_conventions$spatial
      super$initialize(k$name, k$schema, k$uuid)
      private$.spec <- k$spec
      private$.description <- "Spatial coordinate information"
    },

    #' @description Set the properties.
    #' @param dimensions The names of the spatial dimensions (`y`, `x`).
    #' @param transform The 6 affine coefficients `a, b, c, d, e, f`.
    #' @param shape Optional size of the spatial dimensions (`height`,
    #'   `width`); with a transform it also gives the bounding box.
    #' @param bbox Optional bounding box `xmin, ymin, xmax, ymax`.
    #' @param registration "pixel" (default) or "node".
    #' @return Self, invisibly.
    set = function(dimensions, transform = NULL, shape = NULL, bbox = NULL, registration = "pixel") {
      if (!is.character(dimensions) || length(dimensions) < 2L || anyNA(dimensions))
        zarr_abort("argument", "'dimensions' must name at least two dimensions")
      if (!is.null(transform)) geo_check_transform(transform)
      if (!is.null(shape) && (!is.numeric(shape) || length(shape) != length(dimensions) || anyNA(shape) || any(shape < 0)))
        zarr_abort("argument", "'shape' must give the size of each spatial dimension")
      if (!is.null(bbox) && (!is.numeric(bbox) || length(bbox) != 2L * length(dimensions) || anyNA(bbox)))
        zarr_abort("argument", "'bbox' must have two numbers per spatial dimension")
      registration <- match.arg(registration, c("pixel", "node"))
      if (is.null(bbox) && !is.null(transform) && !is.null(shape) && length(shape) == 2L)
        bbox <- geo_bbox(transform, shape)
      private$.props <- Filter(Negate(is.null), list(
        `spatial:dimensions` = as.list(dimensions), `spatial:transform_type` = if (!is.null(transform)) "affine",
        `spatial:transform` = if (!is.null(transform)) as.list(as.numeric(transform)),
        `spatial:shape` = if (!is.null(shape)) as.list(as.integer(shape)),
        `spatial:bbox` = if (!is.null(bbox)) as.list(as.numeric(bbox)),
        `spatial:registration` = registration))
      invisible(self)
    },

    #' @description The properties as stored in the attributes.
    #' @return A named list.
    as_list = function() private$.props,

    #' @description Write the properties into a list of attributes and
    #'   register the convention.
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) {
      if (!length(private$.props)) zarr_abort("argument", "set the spatial dimensions first")
      attributes <- self$register(attributes)
      attributes[grep("^spatial:", names(attributes))] <- NULL
      c(attributes, private$.props)
    },

    #' @description Forget the properties.
    #' @return Self, invisibly.
    clear = function() {
      private$.props <- list()
      invisible(self)
    }
  ),
  private = list(.props = list())
)

#' Convention "multiscales": overview levels
#'
#' The zarr-conventions `multiscales` convention lists, in the `multiscales`
#' attribute of a group, the levels of a pyramid: `layout` holds one entry
#' per level with `asset` (the path of the level's group or array, relative
#' to the group), `derived_from` (the level it was computed from),
#' `transform` (`scale` and `translation` relative to that level) and
#' optionally `spatial:shape` and `spatial:transform` of the level.
#' [zarr_levels()] lists the levels of a group.
#' @seealso [zarr_levels()], [zarr_convention_spatial]
#' @export
#' @examples
#' m <- zarr_convention_multiscales$new()
#' m$set(list(list(asset = "r10m"),
#'            list(asset = "r20m", derived_from = "r10m",
#'                 transform = list(scale = c(2, 2)))))
#' names(m$write(list()))
zarr_convention_multiscales <- R6::R6Class("zarr_convention_multiscales",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "multiscales" convention agent.
    #' @return A new agent.
    initialize = function() {
      k <- known_conventions$multiscales
      super$initialize(k$name, k$schema, k$uuid)
      private$.spec <- k$spec
      private$.description <- "Multiscale layout of zarr datasets"
    },

    #' @description Set the layout.
    #' @param layout A list of levels, each a list with at least `asset`.
    #' @param resampling_method Optional name of the resampling method.
    #' @return Self, invisibly.
    set = function(layout, resampling_method = NULL) {
      geo_check_layout(layout, "the layout")
      private$.props <- Filter(Negate(is.null), list(
        layout = lapply(layout, function(l) lapply(l, function(v) if (is.numeric(v) && length(v) > 1L) as.list(v)
                                                             else if (is.list(v)) lapply(v, function(w) if (length(w) > 1L) as.list(w) else w) else v)),
        resampling_method = if (!is.null(resampling_method)) as_single_string(resampling_method, "resampling_method")))
      invisible(self)
    },

    #' @description The `multiscales` value.
    #' @return A list with `layout`.
    as_list = function() private$.props,

    #' @description Write the layout into a list of attributes and register
    #'   the convention.
    #' @param attributes A list with the attributes of a group.
    #' @return The updated attributes.
    write = function(attributes) {
      if (!length(private$.props)) zarr_abort("argument", "set the layout first")
      attributes <- self$register(attributes)
      attributes[["multiscales"]] <- private$.props
      attributes
    },

    #' @description Forget the layout.
    #' @return Self, invisibly.
    clear = function() {
      private$.props <- list()
      invisible(self)
    }
  ),
  private = list(.props = list())
)

#' Levels of a multiscales group
#'
#' The overview levels that the `multiscales` attribute of a group lists
#' (the zarr-conventions layout, see [zarr_convention_multiscales]): one row
#' per level with its `asset` (path relative to the group), `derived_from`,
#' `scale` (relative to the level it derives from, as text), `shape` (from
#' `spatial:shape`, or the shape of the level's array) and `resolution`
#' (the cell size from `spatial:transform`, when given). The group's node
#' of a level is `group$get_node(asset)`; `stars::st_as_stars()` and
#' `terra::rast()` of its arrays are georeferenced from the layout entry
#' and the `proj:` and `spatial:` attributes of the group.
#'
#' For an OME-NGFF image (0.4, 0.5 or 0.6, a `zarr_ome_image`) the levels
#' are the image's own `$levels` (see [zarr-ome]): `level`, `path`,
#' `shape`, `scale` and `translation` per axis.
#' @param group A [zarr_group].
#' @return A data frame of class `zarr_levels` (zero rows when the group
#'   has no `multiscales` layout).
#' @export
#' @examples
#' z <- create_zarr()
#' g <- z$root
#' for (l in c("r10m", "r20m")) {
#'   n <- if (l == "r10m") 4 else 2
#'   g$add_group(l)$add_array("b", define_array("float32", c(n, n)))
#' }
#' m <- zarr_convention_multiscales$new()
#' m$set(list(list(asset = "r10m", `spatial:transform` = c(10, 0, 0, 0, -10, 40)),
#'            list(asset = "r20m", derived_from = "r10m",
#'                 transform = list(scale = c(2, 2)),
#'                 `spatial:transform` = c(20, 0, 0, 0, -20, 40))))
#' at <- m$write(list())
#' for (a in names(at)) g$set_attribute(a, at[[a]])
#' zarr_levels(g)
zarr_levels <- function(group) {
  if (!inherits(group, "zarr_group")) zarr_abort("argument", "zarr_levels() needs a zarr_group")
  # an OME-NGFF image (0.4 to 0.6) lists its own levels
  if (inherits(group, "zarr_ome_image")) return(structure(group$levels, group = group$path))
  layout <- geo_layout(group)
  txt <- function(v) if (is.null(v)) NA_character_ else paste(format(unlist(v)), collapse = " x ")
  rows <- lapply(layout, function(l) {
    node <- tryCatch(group$get_node(l$asset), error = function(e) NULL)
    shape <- l[["spatial:shape"]] %||% geo_level_shape(node)
    tr <- l[["spatial:transform"]]
    data.frame(asset = l$asset, derived_from = as.character(l$derived_from %||% NA_character_),
               scale = txt(l$transform$scale), shape = txt(shape),
               resolution = if (length(tr) == 6L) txt(abs(unlist(tr)[c(1L, 5L)])) else NA_character_,
               stringsAsFactors = FALSE)
  })
  out <- if (length(rows)) do.call(rbind, rows) else
    data.frame(asset = character(), derived_from = character(), scale = character(), shape = character(),
               resolution = character(), stringsAsFactors = FALSE)
  structure(out, class = c("zarr_levels", "data.frame"), group = group$path)
}

# the shape of a level: of its array, or of the first array in its group
geo_level_shape <- function(node) {
  if (inherits(node, "zarr_array")) return(node$shape)
  if (inherits(node, "zarr_group")) for (k in node$children) if (inherits(k, "zarr_array") && length(k$shape) >= 2L) return(k$shape)
  NULL
}

# ---- validation of what a store says ----

geo_check_code <- function(code, where = NULL) {
  if (!is.character(code) || length(code) != 1L || is.na(code) || !grepl("^[A-Za-z0-9_]+:[0-9A-Za-z_.-]+$", code))
    zarr_abort("value", sprintf("'proj:code' must be a string such as \"EPSG:4326\"%s", if (!is.null(where)) paste0(" (", where, ")") else ""))
  code
}

geo_check_transform <- function(tr, where = NULL) {
  tr <- unlist(tr)
  if (!is.numeric(tr) || length(tr) != 6L || any(!is.finite(tr)))
    zarr_abort("value", sprintf("'spatial:transform' must be 6 finite numbers%s", if (!is.null(where)) paste0(" (", where, ")") else ""))
  if (tr[1L] * tr[5L] - tr[2L] * tr[4L] == 0)
    zarr_abort("value", sprintf("'spatial:transform' is singular%s", if (!is.null(where)) paste0(" (", where, ")") else ""))
  as.numeric(tr)
}

geo_check_layout <- function(layout, where) {
  if (!is.list(layout) || !is.null(names(layout)) || length(layout) > 1000L)
    zarr_abort("value", sprintf("the multiscales layout of %s must be a list of levels", where))
  for (l in layout)
    if (!json_is_object(l) || !is.character(l$asset) || length(l$asset) != 1L || is.na(l$asset))
      zarr_abort("value", sprintf("each level of the multiscales layout of %s needs an `asset` string", where))
  layout
}

# xmin, ymin, xmax, ymax of a grid of shape (height, width) under an affine transform
geo_bbox <- function(tr, shape) {
  cols <- c(0, shape[2L], 0, shape[2L])
  rows <- c(0, 0, shape[1L], shape[1L])
  xs <- tr[1L] * cols + tr[2L] * rows + tr[3L]
  ys <- tr[4L] * cols + tr[5L] * rows + tr[6L]
  c(min(xs), min(ys), max(xs), max(ys))
}

# ---- the properties that apply to a node ----

geo_props <- function(a) {
  if (!is.list(a) || is.null(names(a))) return(list())
  a[grepl("^(proj|spatial):", names(a))]
}

# The multiscales layout of a group (list() without one).
geo_layout <- function(group) {
  ms <- group$attributes[["multiscales"]]
  if (!json_is_object(ms) || is.null(ms$layout)) return(list())
  geo_check_layout(ms$layout, group$path)
}

# The layout entry of a multiscales group that names `node` (relative path).
geo_layout_entry <- function(group, node) {
  rel <- sub("^/", "", substring(node$path, nchar(group$path) + 1L))
  for (l in tryCatch(geo_layout(group), zarr_error = function(e) list()))
    if (identical(sub("^\\./", "", sub("/$", "", l$asset)), rel)) return(geo_props(l))
  list()
}

# The proj: and spatial: properties of an array, lowest level last: those of
# a multiscales group above it and its entry for the level, those of its
# group (which apply to the arrays directly in it), its own.
# (a shallow override: a lower level replaces a property whole)
geo_override <- function(a, b) {
  a[names(b)] <- b
  a
}

geo_node_props <- function(x) {
  out <- list()
  p <- x$parent
  if (inherits(p, "zarr_group")) {
    gp <- p$parent
    if (inherits(gp, "zarr_group")) {
      e <- geo_layout_entry(gp, p)
      if (length(e)) out <- geo_override(geo_props(gp$attributes), e)
    }
    e <- geo_layout_entry(p, x)
    if (length(e)) out <- geo_override(out, e)
    out <- geo_override(out, geo_props(p$attributes))
  }
  geo_override(out, geo_props(x$attributes))
}

# The CRS as a string sf::st_crs() and terra accept, or NULL.
geo_crs <- function(props) {
  if (!is.null(props[["proj:code"]])) return(geo_check_code(props[["proj:code"]]))
  w <- props[["proj:wkt2"]]
  if (is.character(w) && length(w) == 1L && nzchar(w)) return(w)
  pj <- props[["proj:projjson"]]
  if (json_is_object(pj)) return(json_write(pj, pretty = FALSE))
  NULL
}

# The georeferencing of a decoded selection `x` (zarr_cf_data with `geo`):
# NULL without a transform, else list(xd, yd (indices of the x and y
# dimensions), transform (of the selection, cell corners), crs).
geo_georef <- function(x) {
  props <- x$geo
  if (!length(props)) return(NULL)
  tt <- props[["spatial:transform_type"]] %||% "affine"
  tr <- props[["spatial:transform"]]
  if (is.null(tr) || !identical(tt, "affine")) return(NULL)
  tr <- geo_check_transform(tr, x$path)
  n <- length(x$dims)
  if (n < 2L) return(NULL)
  sd <- unlist(props[["spatial:dimensions"]])
  if (is.character(sd) && length(sd) >= 2L && all(utils::tail(sd, 2L) %in% x$dims)) {
    yd <- match(sd[length(sd) - 1L], x$dims)
    xd <- match(sd[length(sd)], x$dims)
  } else {
    yd <- n - 1L
    xd <- n
  }
  if (identical(props[["spatial:registration"]], "node")) # the transform gives cell centres
    tr[c(3L, 6L)] <- tr[c(3L, 6L)] - (tr[c(1L, 4L)] + tr[c(2L, 5L)]) / 2
  # the selection's own transform: its first cell and its step along x and y
  step <- function(i, what) {
    if (length(i) < 2L) return(1)
    s <- unique(diff(i))
    if (length(s) != 1L || s <= 0) zarr_abort("value", sprintf("the %s selection of %s is not a regular increasing sequence: it has no affine transform", what, x$path))
    s
  }
  ix <- x$index[[xd]]
  iy <- x$index[[yd]]
  kx <- step(ix, "x")
  ky <- step(iy, "y")
  c0 <- ix[1L] - 1
  r0 <- iy[1L] - 1
  out <- c(tr[1L] * kx, tr[2L] * ky, tr[3L] + tr[1L] * c0 + tr[2L] * r0,
           tr[4L] * kx, tr[5L] * ky, tr[6L] + tr[4L] * c0 + tr[5L] * r0)
  list(xd = xd, yd = yd, transform = out, crs = geo_crs(props))
}
