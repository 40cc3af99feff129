#' OME-NGFF multiscale images
#'
#' Groups that hold an OME-NGFF (OME-Zarr) multiscale image open as
#' `zarr_ome_image` objects, and the arrays of its resolution levels as
#' `zarr_ome_level` arrays. Three versions are read: 0.4 (Zarr v2, the
#' `multiscales` and `omero` attributes), 0.5 (Zarr v3, the same under the
#' `ome` attribute) and 0.6 (Zarr v3, `ome`, with named coordinate systems
#' and transformations between them, see below). A single-file image
#' (`.ozx`) opens with `open_zarr("image.ozx")`, as a zip file. This is a [zarr_domain] named "OME-NGFF", registered
#' when the package is loaded; `zarr_unregister_domain("OME-NGFF")` turns it
#' off for the session.
#'
#' An image lists its levels (`$levels`: path, shape, scale and translation
#' per axis, the transformations of each dataset and of the whole multiscale
#' combined), its axes (`$axes`: name, type, unit), the `omero` channels
#' (`$channels`) and its label images (`$labels`, each a `zarr_ome_image`
#' whose `$label_colors` gives the `image-label` colours). The arrays of the
#' levels use the axis names as dimension names.
#'
#' `$read_region(level, ...)` reads part of a level given in physical
#' coordinates: each argument is named by an axis and is a range `c(from,
#' to)` (the pixels whose centres lie in it, both ends included) or a single
#' coordinate (the nearest pixel). Pixel `i` (counted from 0) of a level lies
#' at `translation + i * scale`. Channel axes take channel numbers (from 1,
#' the rows of `$channels`) or channel labels instead, and their
#' `"coordinates"` in the result are those channel numbers. Axes not named are read whole. Only the chunks
#' under the region are read. `$region_index()` gives the index ranges
#' without reading.
#'
#' @section OME-NGFF 0.6:
#' A 0.6 multiscale lists `coordinateSystems` (each a name and axes) and
#' gives each dataset a transformation from its array into one of them, the
#' image's intrinsic system (its axes are `$axes`); that transformation
#' must be a scale, a translation or a sequence of both, which give the
#' `scale` and `translation` of `$levels` as for 0.4/0.5. The multiscale's
#' own `coordinateTransformations` lead from one named system to another
#' (`$transformations` lists them). These types are understood, nested to
#' at most 16 levels: `identity`, `scale`, `translation`, `affine` (rows of
#' the matrix, each with its offset last; a homogeneous matrix too),
#' `rotation`, `sequence`, `mapAxis` (input axis indices from 0, or the
#' drafts' output-to-input axis names), `byDimension` and `bijection` (its
#' forward transformation). `displacements` and `coordinates` fields are not
#' applied: `$transformations` gives the `path` of their array and
#' `$transformation_data(i)` reads it, by number or name.
#'
#' `$read_region(level, ..., coordinate_system = "name")` takes the
#' coordinates of that system instead, its axes naming the arguments (every
#' axis, channel axes too, takes coordinates there: where the channel axis
#' has a scale of 1 and no translation, the first channel is at 0, not 1).
#' The transformations
#' from the intrinsic system are chained (the shortest chain of affine
#' ones) and composed with the level's scale and translation. When every
#' coordinate comes from one pixel axis (scale, translation, mapAxis,
#' byDimension of those, sequences of them) the region is the pixels whose
#' centres lie in it, as above. For a general affine transformation (shear,
#' rotation) the region is not a box in pixels: what is read is the
#' bounding box, in pixels, of the region's corners mapped back (so it
#' holds pixels outside the region too), and a transformation that cannot be
#' inverted (singular, or changing the number of axes) is an error. Axes
#' not named take what the whole level covers. The result then has the
#' attribute `"affine"`, a list of a matrix `A` and a vector `b`: the pixel
#' at position `j` (a vector of indices from 0) of the result lies at the
#' matrix product of `A` and `j` plus `b` in the system, and, when the map
#' is axis-aligned, also `"coordinates"` per dimension.
#'
#' @section Fields and methods:
#' An image (`zarr_ome_image`, a [zarr_group]) has:
#' * `$version`: "0.4", "0.5" or "0.6"; `$ome`: the OME attributes as stored.
#' * `$coordinate_systems` (0.6): a named list of data frames of axes, one
#'   per coordinate system; `$transformations` (0.6): a data frame with
#'   `name`, `type`, `input`, `output` and `path` (of a field's array) of
#'   the multiscale's transformations; `$transformation_data(i)`: the array
#'   of a `displacements` or `coordinates` transformation. `NULL` for 0.4 and 0.5.
#' * `$axes`: a data frame with `name`, `type` and `unit` (`NA` when none).
#' * `$levels`: a data frame (class `zarr_levels`) with `level` (1 is
#'   the full resolution), `path`, and list columns `shape`, `scale` and
#'   `translation` (named by axis); it prints one line per level.
#'   Levels are numbered from 1 (the full resolution) wherever they are
#'   taken or shown; the `path` is the dataset's key in the store (often
#'   "0", "1", ...).
#' * `$level(level)`: the array of a level, by number or by path.
#' * `$channels`: a data frame with `label`, `color` ("#RRGGBB"),
#'   `window_start`, `window_end`, `window_min`, `window_max`, `active`;
#'   `NULL` without `omero` metadata.
#' * `$labels`: the label images under `labels/`, a named list of images.
#' * `$label_colors`: for a label image, a data frame with `label_value`,
#'   `red`, `green`, `blue`, `alpha`.
#' * `$region_index(level, ..., coordinate_system = NULL)`,
#'   `$read_region(level, ..., coordinate_system = NULL, fill_as_na,
#'   drop = FALSE)`: see above; the region comes with its axes as the names
#'   of its dimnames and the physical coordinates of its pixels in the
#'   attribute `"coordinates"`. `drop = TRUE` drops the axes of one pixel
#'   (a single channel, time or plane), so that a plane is a matrix.
#'
#' A level (`zarr_ome_level`, a [zarr_array]) adds `$scale`,
#' `$translation` and `$units`, named by axis.
#'
#' Metadata that does not describe an image (a dataset without a path, axes
#' that do not match the shape of a level, ...) makes the fields and methods
#' raise errors of class `zarr_error_metadata`; opening the store and
#' printing still work.
#'
#' @seealso [write_ome_ngff()], [zarr_domain], [zarr-plot] (`plot(img,
#'   channel = )`), the vignette "Bioconductor and
#'   images"
#' @name zarr-ome
#' @aliases zarr_ome_image zarr_ome_level read_region
#' @examples
#' path <- tempfile(fileext = ".zarr")
#' img <- write_ome_ngff(array(1:(2 * 64 * 48), c(2, 64, 48)), path, levels = 3,
#'                       axes = c("c", "y", "x"), scale = c(1, 0.5, 0.5))
#' img
#' img$levels
#' # y from 10 to 20 and x from 0 to 5 (micrometres) of channel 2, full resolution
#' dim(img$read_region(1, y = c(10, 20), x = c(0, 5), c = 2))
#' # the same as a matrix, without the channel axis
#' dim(img$read_region(1, y = c(10, 20), x = c(0, 5), c = 2, drop = TRUE))
#' plot(img, channel = 2)
#' unlink(path, recursive = TRUE)
NULL

ome_domain_name <- "OME-NGFF"

# The OME attributes of a node: 0.5 keeps them under "ome", 0.4 at the root
# of the attributes (then the version is in each multiscale).
ome_attributes <- function(attributes) {
  if (!is.list(attributes) || !length(attributes)) return(NULL)
  if (is.list(attributes[["ome"]])) {
    o <- attributes[["ome"]]
    o$version <- o$version %||% "0.5"
    return(o)
  }
  keep <- intersect(c("multiscales", "omero", "labels", "image-label"), names(attributes))
  if (!length(keep)) return(NULL)
  o <- attributes[keep]
  ms <- o$multiscales
  o$version <- if (is.list(ms) && length(ms) && is.list(ms[[1L]])) as.character(ms[[1L]]$version %||% "0.4") else "0.4"
  o
}

# Whether the domain may claim the node: an image group, or an array of an
# image (a level when the image lists it). The domain's build() and
# build_node()'s shortcut for nodes no built-in domain claims ask this.
ome_may_claim <- function(metadata, parent) {
  nt <- metadata[["node_type"]]
  if (identical(nt, "group")) return(!is.null(ome_attributes(metadata[["attributes"]])[["multiscales"]]))
  identical(nt, "array") && inherits(parent, "zarr_ome_image")
}

zarr_ome_domain <- R6::R6Class("zarr_ome_domain",
  inherit = zarr_domain,
  cloneable = FALSE,
  public = list(
    initialize = function() super$initialize(ome_domain_name),
    # Decides from the node's own metadata (and, for a level array, its
    # parent image), reading nothing from the store.
    build = function(name, metadata, parent, store) {
      if (!ome_may_claim(metadata, parent)) return(FALSE)
      if (identical(metadata[["node_type"]], "group")) return(zarr_ome_image$new(name, metadata, parent, store))
      if (name %in% parent$dataset_paths(quiet = TRUE)) return(zarr_ome_level$new(name, metadata, parent, store))
      FALSE
    }
  ),
  active = list(
    # nodes need nothing beyond themselves and their parent
    open_hierarchy = function(value) FALSE
  )
)

ome_error <- function(node, message) zarr_abort("metadata", paste("OME-NGFF:", message), array = node$path)

# The first multiscale of an image, checked: axes, datasets with paths and
# transformations, combined with the multiscale's own transformations.
ome_parse <- function(node) {
  o <- ome_attributes(node$attributes)
  ms <- o$multiscales
  if (!is.list(ms) || !length(ms) || !is.list(ms[[1L]])) ome_error(node, "'multiscales' is not a list of multiscales")
  m <- ms[[1L]]
  if (!is.null(m$coordinateSystems)) return(ome_parse06(node, o, m))
  axes <- m$axes
  if (!is.list(axes) && !is.character(axes)) ome_error(node, "the multiscale has no 'axes'")
  axes <- lapply(axes, function(a) if (is.character(a)) list(name = a) else a)
  ax <- data.frame(
    name = vapply(axes, function(a) as.character(a$name %||% NA_character_)[1L], ""),
    type = vapply(axes, function(a) as.character(a$type %||% NA_character_)[1L], ""),
    unit = vapply(axes, function(a) as.character(a$unit %||% NA_character_)[1L], ""),
    stringsAsFactors = FALSE)
  if (anyNA(ax$name) || anyDuplicated(ax$name)) ome_error(node, "every axis needs a name of its own")
  n <- nrow(ax)
  ds <- m$datasets
  if (!is.list(ds) || !length(ds)) ome_error(node, "the multiscale has no 'datasets'")
  transform <- function(ct, where) {
    sc <- rep(1, n)
    tr <- rep(0, n)
    for (t in ct %||% list()) {
      v <- t$scale %||% t$translation
      if (identical(t$type, "identity")) next
      if (!is.numeric(v <- suppressWarnings(as.numeric(unlist(v)))) || length(v) != n || anyNA(v))
        ome_error(node, sprintf("a '%s' transformation of %s needs %d numbers, one per axis",
                                format(t$type %||% "?"), where, n))
      if (identical(t$type, "scale")) {
        sc <- sc * v
        tr <- tr * v
      } else if (identical(t$type, "translation")) tr <- tr + v
      else ome_error(node, sprintf("unknown transformation type '%s' in %s", format(t$type %||% "?"), where))
    }
    list(scale = sc, translation = tr)
  }
  top <- transform(m$coordinateTransformations, "the multiscale")
  lv <- lapply(seq_along(ds), function(i) {
    p <- ds[[i]]$path
    if (!is.character(p) || length(p) != 1L || !nzchar(p)) ome_error(node, sprintf("dataset %d has no path", i))
    t <- transform(ds[[i]]$coordinateTransformations, sprintf("dataset '%s'", p))
    # the multiscale's transformations apply after the dataset's
    list(path = p, scale = t$scale * top$scale, translation = t$translation * top$scale + top$translation)
  })
  list(version = o$version, name = m$name %||% NA_character_, axes = ax, levels = lv, omero = o$omero,
       image_label = o[["image-label"]])
}

# ---- OME-NGFF 0.6 (RFC-5): coordinate systems and transformations ----

# Nested transformations (sequence, byDimension, bijection) may go this deep
# and no deeper: the metadata is untrusted and recursion is bounded.
ome_max_depth <- 16L

# The name a 0.6 transformation gives as its input or output: a string or
# an object with a name (or only a path, for an array).
ome_cs_ref <- function(x) {
  if (is.character(x) && length(x) == 1L) return(x)
  if (is.list(x)) {
    v <- x$name %||% x$path
    if (is.character(v) && length(v) == 1L) return(v)
  }
  NA_character_
}

# Axis indices of mapAxis/byDimension: 0-based integers, or (in drafts of
# 0.6) axis names looked up in `names`. Returns 1-based positions.
ome_axis_index <- function(node, v, names, n, what) {
  v <- unlist(v)
  if (is.character(v) && length(names)) v <- match(v, names) - 1
  v <- suppressWarnings(as.numeric(v))
  if (!length(v) || anyNA(v) || any(v != round(v)) || any(v < 0 | v >= n))
    ome_error(node, sprintf("%s needs axis indices from 0 to %d", what, n - 1L))
  as.integer(v) + 1L
}

# A 0.6 transformation as an affine map x -> A %*% x + b from n_in to n_out
# dimensions (n_out NA: the transformation decides), or, for displacements
# and coordinates, the path of the array that holds the field (read as
# data, not applied). in_axes/out_axes: axis names, for the name forms.
ome_compile <- function(node, t, n_in, n_out = NA_integer_, where, in_axes = NULL, out_axes = NULL, depth = 1L) {
  if (depth > ome_max_depth)
    ome_error(node, sprintf("transformations of %s are nested deeper than %d levels", where, ome_max_depth))
  if (!is.list(t) || !is.character(t$type) || length(t$type) != 1L)
    ome_error(node, sprintf("a transformation of %s has no type", where))
  ty <- t$type
  nums <- function(v, len, what) {
    v <- suppressWarnings(as.numeric(unlist(v)))
    if (!length(v) || anyNA(v) || !all(is.finite(v)) || (!is.na(len) && length(v) != len))
      ome_error(node, sprintf("a '%s' transformation of %s needs %s", ty, where, what))
    v
  }
  aff <- function(A, b = rep(0, nrow(A))) list(type = ty, A = A, b = b)
  switch(ty,
    identity = aff(diag(1, n_in)),
    scale = aff(diag(nums(t$scale, n_in, sprintf("%d numbers, one per axis", n_in)), n_in)),
    translation = aff(diag(1, n_in), nums(t$translation, n_in, sprintf("%d numbers, one per axis", n_in))),
    mapAxis = {
      m <- t$mapAxis
      # drafts wrote {"output axis": "input axis"}; 0.6 a list of input indices
      if (is.list(m) && !is.null(names(m)) && length(out_axes)) m <- unlist(m)[out_axes]
      k <- ome_axis_index(node, m, in_axes, n_in, sprintf("a 'mapAxis' transformation of %s", where))
      A <- matrix(0, length(k), n_in)
      A[cbind(seq_along(k), k)] <- 1
      aff(A)
    },
    affine = , rotation = {
      rows <- t[[ty]]
      if (!is.list(rows) || !length(rows) || length(rows) > 1024L)
        ome_error(node, sprintf("a '%s' transformation of %s needs a matrix (a list of rows)", ty, where))
      cols <- if (ty == "affine") n_in + 1L else n_in
      M <- do.call(rbind, lapply(rows, function(r) nums(r, cols, sprintf("rows of %d numbers", cols))))
      # a homogeneous (n+1) x (n+1) matrix drops its last row
      if (ty == "affine" && (is.na(n_out) || n_out == n_in) && nrow(M) == cols && nrow(M) > 1L &&
          all(M[cols, ] == c(rep(0, n_in), 1))) M <- M[-cols, , drop = FALSE]
      if (ty == "affine") aff(M[, seq_len(n_in), drop = FALSE], M[, cols]) else aff(M)
    },
    sequence = {
      ts <- t$transformations
      if (!is.list(ts) || !length(ts) || length(ts) > 1024L)
        ome_error(node, sprintf("a 'sequence' transformation of %s needs a list of transformations", where))
      out <- aff(diag(1, n_in))
      for (s in ts) {
        r <- ome_compile(node, s, nrow(out$A), NA_integer_, where, depth = depth + 1L)
        if (!is.null(r$path)) ome_error(node, sprintf("a '%s' field cannot be part of a sequence here (%s)", r$type, where))
        out <- aff(r$A %*% out$A, drop(r$A %*% out$b) + r$b)
      }
      out$type <- ty
      out
    },
    byDimension = {
      ts <- t$transformations
      if (!is.list(ts) || !length(ts) || length(ts) > 1024L)
        ome_error(node, sprintf("a 'byDimension' transformation of %s needs a list of transformations", where))
      no <- if (is.na(n_out)) n_in else n_out
      A <- matrix(0, no, n_in)
      b <- rep(0, no)
      done <- rep(FALSE, no)
      for (s in ts) {
        if (!is.list(s)) ome_error(node, sprintf("a 'byDimension' entry of %s is not an object", where))
        what <- sprintf("a 'byDimension' entry of %s", where)
        ia <- ome_axis_index(node, s$input_axes, in_axes, n_in, what)
        oa <- ome_axis_index(node, s$output_axes, out_axes, no, what)
        r <- ome_compile(node, s$transformation, length(ia), length(oa), where, depth = depth + 1L)
        if (!is.null(r$path) || nrow(r$A) != length(oa) || any(done[oa]))
          ome_error(node, sprintf("%s does not map its input axes onto output axes of their own", what))
        A[oa, ia] <- r$A
        b[oa] <- r$b
        done[oa] <- TRUE
      }
      aff(A, b)
    },
    bijection = {
      r <- ome_compile(node, t$forward, n_in, n_out, where, in_axes, out_axes, depth + 1L)
      r$type <- ty
      r
    },
    displacements = , coordinates = {
      p <- t$path
      if (!is.character(p) || length(p) != 1L || !nzchar(p))
        ome_error(node, sprintf("a '%s' transformation of %s needs the path of its array", ty, where))
      list(type = ty, path = p)
    },
    ome_error(node, sprintf("unknown transformation type '%s' in %s", ty, where)))
}

# The 0.6 multiscale `m`: the coordinate systems, the intrinsic one (where
# the datasets' transformations lead), the levels and the transformations
# between coordinate systems.
ome_parse06 <- function(node, o, m) {
  cs <- m$coordinateSystems
  if (!is.list(cs) || !length(cs) || length(cs) > 1024L) ome_error(node, "'coordinateSystems' is not a list of coordinate systems")
  axes_df <- function(axes, where) {
    # 64 axes are far more than an image has, and bound the matrices built
    if (!is.list(axes) || !length(axes) || length(axes) > 64L || !all(vapply(axes, is.list, TRUE)))
      ome_error(node, sprintf("coordinate system %s has no axes", where))
    ax <- data.frame(
      name = vapply(axes, function(a) as.character(a$name %||% NA_character_)[1L], ""),
      type = vapply(axes, function(a) as.character(a$type %||% NA_character_)[1L], ""),
      unit = vapply(axes, function(a) as.character(a$unit %||% NA_character_)[1L], ""),
      stringsAsFactors = FALSE)
    if (anyNA(ax$name) || anyDuplicated(ax$name)) ome_error(node, sprintf("every axis of coordinate system %s needs a name of its own", where))
    ax
  }
  systems <- lapply(seq_along(cs), function(i) {
    nm <- cs[[i]]$name
    if (!is.character(nm) || length(nm) != 1L) ome_error(node, sprintf("coordinate system %d has no name", i))
    axes_df(cs[[i]]$axes, sprintf("'%s'", nm))
  })
  names(systems) <- vapply(cs, function(x) x$name, "")
  if (anyDuplicated(names(systems))) ome_error(node, "two coordinate systems have the same name")
  ds <- m$datasets
  if (!is.list(ds) || !length(ds)) ome_error(node, "the multiscale has no 'datasets'")
  outputs <- unique(unlist(lapply(ds, function(d) {
    ct <- d$coordinateTransformations
    if (is.list(ct) && length(ct) && is.list(ct[[length(ct)]])) ome_cs_ref(ct[[length(ct)]]$output)
  })))
  outputs <- outputs[!is.na(outputs)]
  if (length(outputs) > 1L) ome_error(node, "the datasets lead to different coordinate systems")
  # without outputs, the last coordinate system (the spec's examples list
  # the datasets' own last)
  intrinsic <- if (length(outputs)) outputs else names(systems)[length(systems)]
  if (!intrinsic %in% names(systems)) ome_error(node, sprintf("the datasets lead to '%s', which is not a coordinate system", intrinsic))
  ax <- systems[[intrinsic]]
  n <- nrow(ax)
  lv <- lapply(seq_along(ds), function(i) {
    p <- ds[[i]]$path
    if (!is.character(p) || length(p) != 1L || !nzchar(p)) ome_error(node, sprintf("dataset %d has no path", i))
    ct <- ds[[i]]$coordinateTransformations
    where <- sprintf("dataset '%s'", p)
    if (!is.list(ct) || !length(ct)) ome_error(node, sprintf("%s has no coordinateTransformations", where))
    r <- ome_compile(node, list(type = "sequence", transformations = ct), n, n, where)
    # a level is a grid of pixels along the image's axes: scale and translation only
    if (!identical(dim(r$A), c(n, n)) || any(r$A[row(r$A) != col(r$A)] != 0))
      ome_error(node, sprintf("%s must map its pixels by scale and translation", where))
    list(path = p, scale = diag(r$A), translation = r$b)
  })
  tr <- m$coordinateTransformations %||% list()
  if (!is.list(tr) || length(tr) > 1024L) ome_error(node, "the multiscale's 'coordinateTransformations' is not a list")
  edges <- lapply(seq_along(tr), function(i) {
    t <- tr[[i]]
    from <- ome_cs_ref(t$input %||% intrinsic)
    to <- ome_cs_ref(t$output)
    if (is.na(from) || is.na(to) || !from %in% names(systems) || !to %in% names(systems))
      ome_error(node, sprintf("transformation %d of the multiscale needs an input and an output among its coordinate systems", i))
    r <- ome_compile(node, t, nrow(systems[[from]]), nrow(systems[[to]]), sprintf("transformation %d of the multiscale", i),
                     systems[[from]]$name, systems[[to]]$name)
    if (is.null(r$path) && nrow(r$A) != nrow(systems[[to]]))
      ome_error(node, sprintf("transformation %d of the multiscale gives %d coordinates but '%s' has %d axes",
                              i, nrow(r$A), to, nrow(systems[[to]])))
    c(list(name = as.character(t$name %||% NA_character_)[1L], input = from, output = to), r)
  })
  list(version = o$version, name = m$name %||% NA_character_, axes = ax, levels = lv, omero = o$omero,
       image_label = o[["image-label"]], systems = systems, intrinsic = intrinsic, edges = edges)
}

# The affine map from the intrinsic coordinate system to `cs`, following
# the multiscale's transformations forwards (the shortest chain).
ome_path_to <- function(node, p, cs) {
  if (!cs %in% names(p$systems))
    zarr_abort("argument", sprintf("no coordinate system '%s' (the image has %s)", cs,
                                   paste(names(p$systems), collapse = ", ")), array = node$path)
  n <- nrow(p$axes)
  best <- list()
  best[[p$intrinsic]] <- list(A = diag(1, n), b = rep(0, n))
  frontier <- p$intrinsic
  # breadth-first: each round adds one transformation, at most one per system
  for (round in seq_len(length(p$systems))) {
    if (!is.null(best[[cs]]) || !length(frontier)) break
    nxt <- character()
    for (e in p$edges) {
      if (!e$input %in% frontier || !is.null(best[[e$output]])) next
      if (!is.null(e$path)) next
      f <- best[[e$input]]
      best[[e$output]] <- list(A = e$A %*% f$A, b = drop(e$A %*% f$b) + e$b)
      nxt <- c(nxt, e$output)
    }
    frontier <- nxt
  }
  if (is.null(best[[cs]]))
    zarr_abort("argument", sprintf("no chain of affine transformations leads from '%s' to '%s'", p$intrinsic, cs),
               array = node$path)
  best[[cs]]
}

# Index ranges (1-based, per dimension of the level) of the region given in
# coordinate system `cs`. An axis-aligned map (each coordinate from one
# index) is inverted exactly; a general affine one through the bounding box
# of the region mapped back.
ome_region06 <- function(node, p, l, shape, want, cs) {
  f <- ome_path_to(node, p, cs)
  # pixel index (from 0) -> coordinates in cs
  A <- f$A %*% diag(l$scale, length(l$scale))
  b <- drop(f$A %*% l$translation) + f$b
  out_ax <- p$systems[[cs]]$name
  if (length(want) && (is.null(names(want)) || !all(names(want) %in% out_ax)))
    zarr_abort("argument", sprintf("name each coordinate by an axis of '%s': %s", cs, paste(out_ax, collapse = ", ")),
               array = node$path)
  n <- length(shape)
  for (nm in names(want)) {
    v <- want[[nm]]
    if (!is.numeric(v) || !length(v) || length(v) > 2L || anyNA(v))
      zarr_abort("argument", sprintf("axis '%s' takes a coordinate or a range c(from, to)", nm), array = node$path)
  }
  nz <- A != 0
  aligned <- nrow(A) == n && all(rowSums(nz) == 1L) && all(colSums(nz) == 1L)
  lo <- rep(0, n)
  hi <- shape - 1
  if (aligned) {
    for (nm in names(want)) {
      r <- match(nm, out_ax)
      k <- which(nz[r, ])
      v <- (want[[nm]] - b[r]) / A[r, k]
      if (length(v) == 1L) lo[k] <- hi[k] <- round(v) else {
        v <- sort(v)
        lo[k] <- ceiling(v[1L] - 1e-9)
        hi[k] <- floor(v[2L] + 1e-9)
      }
    }
  } else {
    if (nrow(A) != n)
      zarr_abort("argument", sprintf("the map to '%s' changes the number of axes; read_region() needs one it can invert", cs),
                 array = node$path)
    # the corners of the box: 2^n of them
    if (n > 16L) zarr_abort("argument", "a general affine region takes at most 16 axes", array = node$path)
    if (abs(det(A)) < 1e-12 * max(1, max(abs(A)))^n)
      ome_error(node, sprintf("the transformation to '%s' is singular and cannot be inverted", cs))
    # the box in cs: given ranges, or what the whole level covers
    corners <- as.matrix(expand.grid(lapply(seq_len(n), function(k) c(0, shape[k] - 1))))
    full <- A %*% t(corners) + b
    box <- lapply(seq_len(n), function(r) {
      v <- want[[out_ax[r]]]
      if (is.null(v)) range(full[r, ]) else range(v)
    })
    bc <- as.matrix(expand.grid(box))
    back <- solve(A, t(bc) - b)
    mn <- apply(back, 1L, min)
    mx <- apply(back, 1L, max)
    lo <- ceiling(mn - 1e-9)
    hi <- floor(mx + 1e-9)
    pt <- lo > hi
    lo[pt] <- hi[pt] <- round((mn[pt] + mx[pt]) / 2)
  }
  if (any(hi < 0 | lo > shape - 1 | lo > hi))
    zarr_abort("argument", sprintf("the region holds no pixel of the level in '%s'", cs), array = node$path)
  lo <- pmax(lo, 0)
  hi <- pmin(hi, shape - 1)
  list(sel = stats::setNames(lapply(seq_len(n), function(k) c(lo[k], hi[k]) + 1), p$axes$name),
       A = A, b = drop(b + A %*% lo), aligned = aligned, out_axes = out_ax)
}

ome_rgb <- function(hex) {
  hex <- as.character(hex)
  ifelse(is.na(hex) | !nzchar(hex), NA_character_, paste0("#", toupper(hex)))
}

zarr_ome_image <- R6::R6Class("zarr_ome_image",
  inherit = zarr_group,
  cloneable = FALSE,
  public = list(
    initialize = function(name, metadata, parent, store) {
      super$initialize(name, metadata, parent, store)
      private$.domain <- ome_domain_name
    },

    # The paths of the levels (NULL with quiet = TRUE when the metadata is
    # broken: the domain then leaves the arrays plain).
    dataset_paths = function(quiet = FALSE) {
      p <- if (quiet) tryCatch(private$parsed(), error = function(e) NULL) else private$parsed()
      vapply(p$levels, function(l) l$path, "")
    },

    level = function(level = 1L) {
      lv <- private$parsed()$levels
      if (is.character(level)) level <- match(level, vapply(lv, function(l) l$path, ""))
      if (length(level) != 1L || is.na(level) || level < 1 || level > length(lv))
        zarr_abort("argument", sprintf("the image has levels 1 to %d", length(lv)), array = self$path)
      a <- self$get_node(lv[[level]]$path)
      if (!inherits(a, "zarr_array")) ome_error(self, sprintf("dataset '%s' is not an array", lv[[level]]$path))
      if (length(a$shape) != nrow(private$parsed()$axes))
        ome_error(self, sprintf("dataset '%s' has %d dimensions but the image has %d axes",
                                lv[[level]]$path, length(a$shape), nrow(private$parsed()$axes)))
      a
    },

    region_index = function(level = 1L, ..., coordinate_system = NULL) {
      a <- self$level(level)
      p <- private$parsed()
      l <- p$levels[[if (is.character(level)) match(level, self$dataset_paths()) else level]]
      want <- list(...)
      if (!is.null(coordinate_system)) {
        if (!is.character(coordinate_system) || length(coordinate_system) != 1L || is.na(coordinate_system))
          zarr_abort("argument", "coordinate_system must be the name of a coordinate system", array = self$path)
        if (is.null(p$systems))
          zarr_abort("argument", sprintf("the image is OME-NGFF %s, which has no named coordinate systems", p$version),
                     array = self$path)
        return(ome_region06(self, p, l, a$shape, want, coordinate_system)$sel)
      }
      ax <- p$axes
      if (length(want) && (is.null(names(want)) || !all(names(want) %in% ax$name)))
        zarr_abort("argument", sprintf("name each coordinate by an axis of the image: %s",
                                       paste(ax$name, collapse = ", ")), array = self$path)
      shape <- a$shape
      sel <- lapply(seq_len(nrow(ax)), function(k) c(1, shape[k]))
      for (nm in names(want)) {
        k <- match(nm, ax$name)
        v <- want[[nm]]
        if (identical(ax$type[k], "channel")) {
          if (is.character(v)) {
            labs <- self$channels$label
            v <- match(v, labs)
            if (anyNA(v)) zarr_abort("argument", sprintf("no channel named '%s' (channels: %s)", want[[nm]][is.na(v)][1L],
                                                         paste(utils::head(labs, 20L), collapse = ", ")), array = self$path)
          }
          if (!is.numeric(v) || !length(v) || anyNA(v) || any(v < 1 | v > shape[k]))
            zarr_abort("argument", sprintf("channels of axis '%s' are 1 to %d", nm, shape[k]), array = self$path)
          sel[[k]] <- if (length(v) == 1L) c(v, v) else as.integer(v)
          next
        }
        if (!is.numeric(v) || !length(v) || length(v) > 2L || anyNA(v))
          zarr_abort("argument", sprintf("axis '%s' takes a coordinate or a range c(from, to)", nm), array = self$path)
        s <- l$scale[k]
        t <- l$translation[k]
        i <- if (length(v) == 1L) rep(round((v - t) / s), 2L) else {
          r <- sort((v - t) / s)
          c(ceiling(r[1L] - 1e-9), floor(r[2L] + 1e-9))
        }
        i <- pmin(pmax(i, 0), shape[k] - 1)
        if (length(v) == 2L && (ceiling(min((v - t) / s) - 1e-9) > shape[k] - 1 || floor(max((v - t) / s) + 1e-9) < 0 || i[1L] > i[2L]))
          zarr_abort("argument", sprintf("the range of axis '%s' holds no pixel of level %s", nm, format(level)),
                     array = self$path)
        sel[[k]] <- i + 1
      }
      stats::setNames(sel, ax$name)
    },

    read_region = function(level = 1L, ..., coordinate_system = NULL, fill_as_na = getOption("zarr.fill_as_na", TRUE),
                           drop = FALSE) {
      if (!is_flag(drop)) zarr_abort("argument", "drop must be TRUE or FALSE", array = self$path)
      if (!is.null(coordinate_system)) return(private$read_region06(level, list(...), coordinate_system, fill_as_na, drop))
      sel <- self$region_index(level, ...)
      a <- self$level(level)
      l <- private$parsed()$levels[[if (is.character(level)) match(level, self$dataset_paths()) else level]]
      out <- a$read(unname(sel), fill_as_na = fill_as_na)
      if (is.null(dim(out)) && length(sel) == 1L) dim(out) <- length(out)
      dn <- dimnames(out) %||% vector("list", length(sel))
      names(dn) <- names(sel)
      dimnames(out) <- dn
      # channels are numbered from 1, as the arguments number them
      chan <- private$parsed()$axes$type %in% "channel"
      attr(out, "coordinates") <- stats::setNames(lapply(seq_along(sel), function(k) {
        i <- seq(sel[[k]][1L], sel[[k]][2L])
        if (chan[k]) i else l$translation[k] + (i - 1) * l$scale[k]
      }), names(sel))
      if (drop) out <- ome_drop(out)
      out
    },

    transformation_data = function(i) {
      e <- private$parsed()$edges
      if (length(i) != 1L || (is.numeric(i) && (is.na(i) || i < 1 || i > length(e))))
        zarr_abort("argument", sprintf("the image has transformations 1 to %d", length(e)), array = self$path)
      if (is.character(i)) i <- match(i, vapply(e, function(x) x$name, ""))
      if (is.na(i)) zarr_abort("argument", "no transformation of that name", array = self$path)
      p <- e[[i]]$path
      if (is.null(p)) zarr_abort("argument", sprintf("transformation %d ('%s') has no array of its own", i, e[[i]]$type),
                                 array = self$path)
      a <- self$get_node(p)
      if (!inherits(a, "zarr_array")) ome_error(self, sprintf("the '%s' field '%s' is not an array", e[[i]]$type, p))
      a$read()
    }
  ),
  active = list(
    ome = function(value) ome_attributes(self$attributes),
    coordinate_systems = function(value) private$parsed()$systems,
    transformations = function(value) {
      e <- private$parsed()$edges
      if (is.null(e)) return(NULL)
      chr <- function(f) vapply(e, function(x) as.character(x[[f]] %||% NA_character_)[1L], "")
      data.frame(name = chr("name"), type = chr("type"), input = chr("input"), output = chr("output"),
                 path = chr("path"), stringsAsFactors = FALSE)
    },
    version = function(value) private$parsed()$version,
    axes = function(value) private$parsed()$axes,
    levels = function(value) {
      p <- private$parsed()
      ax <- p$axes$name
      shapes <- lapply(seq_along(p$levels), function(i) self$level(i)$shape)
      out <- data.frame(level = seq_along(p$levels), path = vapply(p$levels, function(l) l$path, ""),
                        stringsAsFactors = FALSE)
      out$shape <- I(lapply(shapes, function(s) stats::setNames(s, ax)))
      out$scale <- I(lapply(p$levels, function(l) stats::setNames(l$scale, ax)))
      out$translation <- I(lapply(p$levels, function(l) stats::setNames(l$translation, ax)))
      class(out) <- c("zarr_levels", class(out))
      out
    },
    channels = function(value) {
      ch <- private$parsed()$omero$channels
      if (!length(ch)) return(NULL)
      num <- function(x) { x <- suppressWarnings(as.numeric(x)); if (length(x) == 1L) x else NA_real_ }
      data.frame(
        label = vapply(ch, function(c) as.character(c$label %||% NA_character_)[1L], ""),
        color = ome_rgb(vapply(ch, function(c) as.character(c$color %||% NA_character_)[1L], "")),
        window_start = vapply(ch, function(c) num(c$window$start), 0),
        window_end = vapply(ch, function(c) num(c$window$end), 0),
        window_min = vapply(ch, function(c) num(c$window$min), 0),
        window_max = vapply(ch, function(c) num(c$window$max), 0),
        active = vapply(ch, function(c) isTRUE(c$active %||% TRUE), TRUE),
        stringsAsFactors = FALSE)
    },
    labels = function(value) {
      g <- self$get_node("labels")
      if (!inherits(g, "zarr_group")) return(list())
      nm <- unlist(ome_attributes(g$attributes)$labels %||% list())
      out <- lapply(nm, function(n) g$get_node(n))
      names(out) <- nm
      Filter(function(x) inherits(x, "zarr_ome_image"), out)
    },
    label_colors = function(value) {
      cl <- private$parsed()$image_label$colors
      if (!length(cl)) return(NULL)
      rgba <- t(vapply(cl, function(c) { v <- as.numeric(unlist(c$rgba %||% NA)); if (length(v) == 4L) v else rep(NA_real_, 4L) }, numeric(4)))
      data.frame(label_value = vapply(cl, function(c) as.numeric(c[["label-value"]] %||% NA)[1L], 0),
                 red = rgba[, 1L], green = rgba[, 2L], blue = rgba[, 3L], alpha = rgba[, 4L])
    }
  ),
  private = list(
    .parsed = NULL,
    parsed = function() {
      # metadata of any shape: what is not an image is a metadata error
      if (is.null(private$.parsed))
        private$.parsed <- tryCatch(ome_parse(self), zarr_error = function(e) stop(e),
                                    error = function(e) ome_error(self, conditionMessage(e)))
      private$.parsed
    },
    read_region06 = function(level, want, cs, fill_as_na, drop) {
      a <- self$level(level)
      p <- private$parsed()
      if (is.null(p$systems))
        zarr_abort("argument", sprintf("the image is OME-NGFF %s, which has no named coordinate systems", p$version),
                   array = self$path)
      l <- p$levels[[if (is.character(level)) match(level, self$dataset_paths()) else level]]
      r <- ome_region06(self, p, l, a$shape, want, cs)
      out <- a$read(unname(r$sel), fill_as_na = fill_as_na)
      if (is.null(dim(out)) && length(r$sel) == 1L) dim(out) <- length(out)
      dn <- dimnames(out) %||% vector("list", length(r$sel))
      names(dn) <- names(r$sel)
      dimnames(out) <- dn
      # pixel j (from 0) of the result lies at A %*% j + b in the system
      attr(out, "affine") <- list(A = r$A, b = stats::setNames(r$b, r$out_axes))
      if (r$aligned) {
        nz <- r$A != 0
        attr(out, "coordinates") <- stats::setNames(lapply(seq_along(r$sel), function(k) {
          o <- which(nz[, k])
          r$b[o] + (seq_len(diff(r$sel[[k]]) + 1L) - 1) * r$A[o, k]
        }), names(r$sel))
      }
      if (drop) out <- ome_drop(out)
      out
    },
    metadata_changed = function() {
      private$.parsed <- NULL
      invisible(NULL)
    },
    display_attributes = function() {
      a <- private$.metadata[["attributes"]]
      a[!names(a) %in% c("ome", "multiscales", "omero", "image-label", "_creator")]
    },
    print_details = function(...) {
      lines <- tryCatch(ome_summary(self), zarr_error = function(e) paste("OME-NGFF  :", conditionMessage(e)))
      cat(lines, sep = "\n")
    }
  )
)

# A region without its axes of one pixel (a plane as a matrix), keeping the
# coordinates of the others.
ome_drop <- function(out) {
  if (length(dim(out)) < 2L || !any(dim(out) == 1L)) return(out)
  co <- attr(out, "coordinates")
  keep <- dim(out) != 1L
  dn <- dimnames(out)[keep]
  out2 <- if (any(keep)) array(as.vector(out), dim(out)[keep]) else as.vector(out)
  if (any(keep)) dimnames(out2) <- dn
  if (!is.null(co)) attr(out2, "coordinates") <- co[keep]
  if (!is.null(attr(out, "affine"))) attr(out2, "affine") <- attr(out, "affine")
  out2
}

# The lines print() adds for an image: levels x shape x scale, axes with
# units, channels, labels.
ome_summary <- function(img) {
  p <- img$.__enclos_env__$private$parsed()
  ax <- p$axes
  lv <- img$levels
  axis_txt <- paste0(ax$name, " (", ifelse(is.na(ax$type), "", ax$type),
                     ifelse(is.na(ax$unit), "", paste0(ifelse(is.na(ax$type), "", ", "), ax$unit)), ")")
  axis_txt <- sub(" \\(\\)$", "", axis_txt)
  num <- function(x) paste(vapply(x, format, "", digits = 4), collapse = " x ")
  lines <- c(sprintf("OME-NGFF   : %s%s", p$version, if (!is.na(p$name)) sprintf(", \"%s\"", p$name) else ""),
             sprintf("Axes       : %s", paste(axis_txt, collapse = ", ")),
             sprintf("Levels     : %d", nrow(lv)),
             sprintf("  %d %-6s %-22s scale %s", lv$level, paste0("\"", lv$path, "\""),
                     vapply(lv$shape, function(s) paste(s, collapse = " x "), ""),
                     vapply(lv$scale, num, "")))
  if (!is.null(p$systems))
    lines <- c(lines, sprintf("Coordinates: %s (intrinsic: %s)%s", paste(names(p$systems), collapse = ", "), p$intrinsic,
                              if (length(p$edges)) sprintf(", %d transformation%s", length(p$edges),
                                                           if (length(p$edges) == 1L) "" else "s") else ""))
  ch <- img$channels
  if (!is.null(ch))
    lines <- c(lines, sprintf("Channels   : %s", paste(trimws(paste0(
      ifelse(is.na(ch$label), "", ch$label), ifelse(is.na(ch$color), "", paste0(" ", ch$color)),
      ifelse(is.na(ch$window_start) | is.na(ch$window_end), "",
             sprintf(" [%s, %s]", format(ch$window_start, trim = TRUE), format(ch$window_end, trim = TRUE))))),
      collapse = "; ")))
  if (!is.null(p$image_label)) lines <- c(lines, sprintf("Label image: %d colours", nrow(img$label_colors) %||% 0L))
  labs <- tryCatch(names(img$labels), zarr_error = function(e) NULL)
  if (length(labs)) lines <- c(lines, sprintf("Labels     : %s", paste(labs, collapse = ", ")))
  lines
}

#' @export
print.zarr_levels <- function(x, ...) {
  # zarr_levels() of a multiscales group names its group; $levels do not
  if (!is.null(attr(x, "group")))
    cat(sprintf("<Zarr multiscales> %s: %d level%s\n", attr(x, "group"), nrow(x), if (nrow(x) == 1L) "" else "s"))
  if (nrow(x)) print(format(x, ...), right = FALSE, row.names = FALSE)
  invisible(x)
}

# One line per level (of an OME-NGFF image, a Zarr Vectors store or a
# multiscales group): missing text as blanks; list
# columns of numbers per axis as "64 x 48", the axis names in the column
# header, so that the table stays one screen wide; a translation only when
# some level has one.
#' @export
format.zarr_levels <- function(x, ...) {
  x <- as.data.frame(unclass(x), stringsAsFactors = FALSE, optional = TRUE)
  num <- function(v) paste(vapply(v, format, "", digits = 4), collapse = " x ")
  out <- list()
  for (nm in names(x)) {
    col <- x[[nm]]
    if (!is.list(col)) {
      out[[nm]] <- if (is.character(col)) ifelse(is.na(col), "", col) else col
      next
    }
    if (nm == "translation" && !any(vapply(col, function(t) any(t != 0, na.rm = TRUE), TRUE))) next
    ax <- if (length(col)) names(col[[1L]]) else NULL
    out[[if (length(ax)) sprintf("%s [%s]", nm, paste(ax, collapse = " ")) else nm]] <- vapply(col, num, "")
  }
  as.data.frame(out, stringsAsFactors = FALSE, check.names = FALSE)
}

zarr_ome_level <- R6::R6Class("zarr_ome_level",
  inherit = zarr_array,
  cloneable = FALSE,
  public = list(
    initialize = function(name, metadata, parent, store) {
      super$initialize(name, metadata, parent, store)
      private$.domain <- ome_domain_name
      # the axes name the dimensions when the array itself does not
      ax <- tryCatch(parent$axes, zarr_error = function(e) NULL)
      if (is.null(private$.dimnames) && !is.null(ax) && nrow(ax) == length(private$.shape))
        private$.dimnames <- ax$name
    }
  ),
  private = list(
    print_details = function(...) {
      txt <- tryCatch({
        sc <- self$scale
        u <- self$units
        paste(sprintf("%s %s%s", names(sc), vapply(sc, format, "", digits = 4),
                      ifelse(is.na(u), "", paste0(" ", u))), collapse = ", ")
      }, zarr_error = function(e) conditionMessage(e))
      cat("Pixel size :", txt, "\n")
    }
  ),
  active = list(
    units = function(value) {
      ax <- private$.parent$axes
      stats::setNames(ax$unit, ax$name)
    },
    scale = function(value) {
      p <- private$.parent
      stats::setNames(p$levels$scale[[match(private$.name, p$dataset_paths())]], p$axes$name)
    },
    translation = function(value) {
      p <- private$.parent
      stats::setNames(p$levels$translation[[match(private$.name, p$dataset_paths())]], p$axes$name)
    }
  )
)

#' Write an OME-NGFF multiscale image
#'
#' Writes an R array (or a [zarr_array]) as an OME-NGFF image in a new
#' store: level 1 is the array, each further level takes every second
#' pixel of the one before along the axes in `downsample` (nearest
#' neighbour, which also suits label images), with their scale doubled.
#'
#' The store is Zarr v3 with OME-NGFF 0.5 metadata (the `ome` attribute).
#' For readers that only know Zarr v2 (zarr-python 2, older viewers), set
#' `options(zarr.format = 2)` first: the store is then Zarr v2 with
#' OME-NGFF 0.4 metadata (the `multiscales` and `omero` attributes).
#' `version = "0.6"` writes OME-NGFF 0.6 (Zarr v3): one coordinate system
#' named "physical" with the axes, and per level one transformation (a
#' scale, or a sequence of scale and translation) from the level's array to
#' it. A `location` ending in ".ozx" (or ".zip") writes a single-file image,
#' a zip file.
#'
#' A level of an image (a `zarr_ome_level`, such as `img$level(2)`) is
#' written with what its image says of it: its axes, scale, translation and
#' units, and the image's `omero` channels (labels, colours and windows),
#' unless other values are given.
#'
#' @param x An R array, a [zarr_array] or a level of an OME-NGFF image.
#' @param location Path of the new store (a ".ozx" or ".zip" path: a zip file).
#' @param levels Number of resolution levels.
#' @param axes Names of the axes, one per dimension; "c" is a channel axis,
#'   "t" a time axis, others are space axes.
#' @param scale Physical size of a pixel of level 1 along each axis.
#' @param units Units of the axes: one per axis, in the order of `axes`
#'   (`NA` for none, e.g. `c(NA, "micrometer", "micrometer")` for c, y, x);
#'   defaults to "micrometer" for space axes.
#' @param chunk_shape Chunk shape of every level (clamped to its shape).
#' @param name Name of the multiscale.
#' @param channels Optional channels, for the `omero` metadata: their labels,
#'   or a data frame as the `$channels` of an image gives (columns `label`
#'   and optionally `color`, `window_start`, `window_end`, `window_min`,
#'   `window_max`, `active`), one per channel, in the order of the channel
#'   axis (channel 1 first).
#' @param downsample Names of the axes halved from one level to the next:
#'   by default every space axis. `c("y", "x")` keeps the number of
#'   z planes at every level. Channel and time axes cannot be halved.
#' @param version The OME-NGFF version: "0.4" (Zarr v2), "0.5" or "0.6"
#'   (Zarr v3); by default 0.5, or 0.4 under `options(zarr.format = 2)`.
#' @return The image, a `zarr_ome_image` (see [zarr-ome]).
#' @export
#' @examples
#' path <- tempfile(fileext = ".zarr")
#' x <- array(runif(2 * 4 * 32 * 32), c(2, 4, 32, 32))
#' img <- write_ome_ngff(x, path, levels = 2, axes = c("c", "z", "y", "x"),
#'                       scale = c(1, 2, 0.5, 0.5), channels = c("DAPI", "GFP"),
#'                       downsample = c("y", "x"))
#' img$levels
#' # level 2 as an image of its own keeps its scale and channel labels
#' path2 <- tempfile(fileext = ".zarr")
#' img2 <- write_ome_ngff(img$level(2), path2, levels = 1)
#' img2$levels$scale[[1]]
#' img2$channels$label
#' unlink(c(path, path2), recursive = TRUE)
write_ome_ngff <- function(x, location, levels = 3L, axes = NULL, scale = NULL, units = NULL,
                           chunk_shape = NULL, name = "image", channels = NULL, downsample = NULL, version = NULL) {
  translation <- NULL
  v2 <- zarr_default_format() == 2L
  version <- version %||% if (v2) "0.4" else "0.5"
  if (!is.character(version) || length(version) != 1L || !version %in% c("0.4", "0.5", "0.6"))
    zarr_abort("argument", "version must be \"0.4\", \"0.5\" or \"0.6\"")
  if (v2 != (version == "0.4"))
    zarr_abort("argument", sprintf("OME-NGFF %s is Zarr v%d: set options(zarr.format = %d) for it", version,
                                   if (version == "0.4") 2L else 3L, if (version == "0.4") 2L else 3L))
  if (inherits(x, "zarr_ome_level")) {
    # the level's place in its image is kept unless overridden
    img <- x$parent
    axes <- axes %||% names(x$scale)
    scale <- scale %||% unname(x$scale)
    units <- units %||% unname(x$units)
    translation <- unname(x$translation)
    # the image's channels when they match its channel axis (a foreign
    # image's omero metadata may not)
    ch <- img$ome$omero$channels
    n_ch <- x$shape[match("channel", img$axes$type)]
    if (is.null(channels) && is.list(ch) && all(vapply(ch, is.list, TRUE)) && length(ch) %in% n_ch) channels <- ch
    nm <- ome_parse(img)$name
    if (missing(name) && is.character(nm) && length(nm) == 1L && !is.na(nm)) name <- nm
  }
  if (inherits(x, "zarr_array")) x <- x$read()
  if (is.null(dim(x))) dim(x) <- length(x)
  d <- dim(x)
  n <- length(d)
  axes <- axes %||% utils::tail(c("t", "c", "z", "y", "x"), n)
  if (length(axes) != n) zarr_abort("argument", "give one axis name per dimension")
  scale <- as.numeric(scale %||% rep(1, n))
  if (length(scale) != n) zarr_abort("argument", "give one scale per dimension")
  type <- ifelse(axes == "c", "channel", ifelse(axes == "t", "time", "space"))
  units <- units %||% ifelse(type == "space", "micrometer", NA_character_)
  if (length(units) != n)
    zarr_abort("argument", sprintf("give one unit per dimension, in the order of the axes (%s), NA for none",
                                   paste(axes, collapse = ", ")))
  downsample <- downsample %||% axes[type == "space"]
  if (!is.character(downsample) || !all(downsample %in% axes[type == "space"]))
    zarr_abort("argument", sprintf("downsample takes names of space axes: %s",
                                   paste(axes[type == "space"], collapse = ", ")))
  halve <- axes %in% downsample
  levels <- as.integer(levels)
  if (length(levels) != 1L || is.na(levels) || levels < 1L) zarr_abort("argument", "levels must be a count of at least 1")
  omero <- ome_channels_metadata(channels, if (any(type == "channel")) d[type == "channel"][1L])
  z <- create_zarr(location)
  chunk_shape <- chunk_shape %||% pmin(d, ifelse(type == "space", 256L, 1L))
  r_type <- r_data_type(x)
  datasets <- list()
  sc <- scale
  for (k in seq_len(levels)) {
    def <- define_array(r_type, dim(x))
    def$chunk_shape <- pmin(chunk_shape, dim(x))
    # the axis names also as dimension names (Zarr v3), as 0.5 readers expect
    if (!v2) def$dimension_names <- axes
    a <- z$add_array("/", as.character(k - 1L), def)
    a$write(x)
    ct <- list(list(type = "scale", scale = as.list(sc)))
    # every second pixel from the first: the first pixel's centre stays where it was
    if (!is.null(translation) && any(translation != 0))
      ct[[2L]] <- list(type = "translation", translation = as.list(translation))
    path <- as.character(k - 1L)
    # 0.6: one transformation per dataset, from the array to the image's
    # coordinate system, both named
    if (version == "0.6")
      ct <- list(c(if (length(ct) == 1L) ct[[1L]] else list(type = "sequence", transformations = ct),
                   list(input = path, output = "physical")))
    datasets[[k]] <- list(path = path, coordinateTransformations = ct)
    if (k < levels) {
      idx <- lapply(seq_len(n), function(j) if (halve[j]) seq(1L, dim(x)[j], by = 2L) else seq_len(dim(x)[j]))
      x <- do.call(`[`, c(list(x), idx, list(drop = FALSE)))
      sc <- ifelse(halve, sc * 2, sc)
    }
  }
  ax <- lapply(seq_len(n), function(j) Filter(Negate(is.null), list(name = axes[j], type = type[j],
                                                                     unit = if (!is.na(units[j])) units[j])))
  ms <- if (version == "0.6") list(name = name, coordinateSystems = list(list(name = "physical", axes = ax)),
                                   datasets = datasets) else list(name = name, axes = ax, datasets = datasets)
  if (v2) {
    # OME-NGFF 0.4: the version in each multiscale, the attributes at the top
    z$root$set_attributes(c(list(multiscales = list(c(list(version = "0.4"), ms))),
                            if (!is.null(omero)) list(omero = omero)))
  } else {
    ome <- list(version = version, multiscales = list(ms))
    if (!is.null(omero)) ome$omero <- omero
    z$root$set_attribute("ome", ome)
  }
  # a zip file (.zip, .ozx) is written when its store closes
  if (inherits(z$store, "zarr_zipstore")) z$store$close()
  # reopened, so that the domain builds the image and its levels
  img <- open_zarr(location)$root
  if (!inherits(img, "zarr_ome_image")) zarr_abort("argument", "the OME-NGFF domain is not registered")
  img
}

# The omero metadata of `channels`: labels, a data frame like $channels, or
# the omero channel entries of an image (kept as they are); NULL for none.
ome_channels_metadata <- function(channels, n_channels) {
  if (is.null(channels)) return(NULL)
  if (is.character(channels)) {
    ch <- lapply(channels, function(l) list(label = l, active = TRUE))
  } else if (is.data.frame(channels)) {
    if (!"label" %in% names(channels)) zarr_abort("argument", "a data frame of channels needs a 'label' column")
    ch <- lapply(seq_len(nrow(channels)), function(i) {
      r <- as.list(channels[i, , drop = FALSE])
      w <- Filter(Negate(is.na), list(start = r$window_start, end = r$window_end, min = r$window_min,
                                      max = r$window_max))
      col <- r$color
      Filter(Negate(is.null), list(
        label = as.character(r$label),
        color = if (!is.null(col) && !is.na(col)) sub("^#", "", as.character(col)),
        window = if (length(w)) w,
        active = if (is.null(r$active) || is.na(r$active)) TRUE else isTRUE(r$active)))
    })
  } else if (is.list(channels) && all(vapply(channels, is.list, TRUE))) {
    ch <- channels
  } else {
    zarr_abort("argument", "channels must be labels, a data frame of channels or omero channel entries")
  }
  if (!is.null(n_channels) && length(ch) != n_channels)
    zarr_abort("argument", sprintf("give %d channels, one per channel of the image (%d given)", n_channels, length(ch)))
  list(channels = ch)
}
