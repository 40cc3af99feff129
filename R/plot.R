#' Quick-look plots of arrays and images
#'
#' `plot()` (the same as `image()`) draws a 2-d array, or a 2-d slice of an
#' array of more dimensions, as an image with a colour scale; `as.raster()`
#' gives the same picture as a raster object (see [grDevices::as.raster()]).
#' They read a downsampled view: along x and y, every k-th element, so that
#' at most `max_pixels` elements are read along each (by default as many as
#' the device has pixels, at most 1000), in one read of the selection: only
#' the chunks that hold those elements are read (when k is larger than the
#' chunks, whole chunks are skipped), and a long read shows the progress bar
#' reads show (see `zarr.progress` in [zarr-options]).
#'
#' **Which dimensions are x and y.** x runs left to right, y bottom to top.
#' They are the dimensions whose coordinate variables (or names) say they
#' are longitudes and latitudes, or x and y (the `axis`, `standard_name`
#' and `units` attributes, or names such as lon, lat, x, y); otherwise the
#' last dimension is x and the one before it y, as for a matrix printed in
#' R and as [terra::rast()][zarr-stars-terra] and `st_as_stars()` take them.
#' `xy` chooses them instead: `c(x, y)` by name or number. Every other
#' dimension is sliced at one index: `slice` gives them, by name
#' (`slice = list(time = 3)`) or in order. Without `slice`, an array (or
#' selection) whose other dimensions hold more than one element is an error
#' of class `zarr_error_argument` naming them, their extents and the
#' `slice` to pass: a plot never picks a time step or a depth unasked.
#'
#' **Values and axes.** Values are decoded as reads decode them (see
#' [cf-decoding]: packed values unpacked, fill values and `_FillValue` as
#' `NA`, which is not drawn: the background shows). A dimension with a
#' coordinate variable (an array of the same group named as the dimension,
#' as xarray writes them; see [zarr_dataset()]) is drawn at its coordinate
#' values (times on a time axis), others at their indices (from 1). Without
#' y coordinates, the first row is on top, as in an image; with them, y
#' grows upwards. The title is the array name with its `long_name` and
#' `units` attributes, and the index (or coordinate) of each slice.
#'
#' **Colours.** `col` (default `hcl.colors(64)`, viridis) spans `zlim`
#' (default: the range of the values read) in equal steps; values outside
#' `zlim` take the colour of its nearest end. A colour bar is drawn in the
#' right margin unless `legend = FALSE` (the margins are then restored
#' after the plot: add to a plot with `legend = FALSE`).
#'
#' **Images and pyramids.** For an OME-NGFF image (see [zarr-ome]),
#' `channel` chooses the channel by number (from 1) or label, as
#' `$read_region()` does, and `slice` gives the other axes (`t`, `z`) in
#' physical coordinates, as `$read_region()` takes them (default: the first
#' plane); the level drawn is the coarsest one with at least `max_pixels`
#' pixels along x or y (or the full resolution when it has fewer), unless
#' `level` is given; the axes are in physical units and the channel's
#' `omero` window (when set) is the default `zlim`. A level array plots as
#' its image at that level. A group with a `multiscales` attribute (the
#' `datasets` of OME-NGFF or the `layout` of the multiscales convention)
#' plots its coarsest level that has enough pixels; when the levels are
#' groups, `variable` names the array (default: the first data variable).
#' A [zarr_dataset] plots its variable `variable`; a [zarr_cf_data]
#' selection (from `sel()` or `isel()`) plots the values it holds.
#'
#' @param x A [zarr_array], an OME-NGFF image or level, a group with a
#'   `multiscales` attribute, a [zarr_dataset], a [zarr_cf_data]
#'   selection, or a [zarr] object (its root).
#' @param y Ignored (`plot()` takes it).
#' @param ... Further arguments for [graphics::image()] (`xlab`, `ylab`,
#'   `main`, `asp`, `axes`, ...).
#' @param slice The index of each dimension other than x and y: a list or
#'   vector, named by dimension or in order (for OME-NGFF images:
#'   physical coordinates by axis name).
#' @param xy The x and y dimensions, `c(x, y)`, by name or number.
#' @param max_pixels The most elements read along x and along y (`NULL`:
#'   the device's size in pixels, at most 1000; 1000 for `as.raster()`).
#' @param col The colours.
#' @param zlim The values at the two ends of the colour scale.
#' @param legend Whether to draw a colour bar.
#' @param decode Whether to decode the values (see `read()` of
#'   [zarr_array]).
#' @param channel For OME-NGFF images: the channel, by number (from 1) or
#'   label.
#' @param level For OME-NGFF images and multiscales groups: the level to
#'   draw (by number, 1 the full resolution); `NULL` chooses.
#' @param variable For datasets and multiscales groups whose levels are
#'   groups: the name of the array to draw.
#' @return `plot()` and `image()`: `x`, invisibly. `as.raster()`: a raster
#'   object, x along the columns and y along the rows (the top row first),
#'   `NA` where the values are `NA`.
#' @name zarr-plot
#' @aliases plot.zarr_array image.zarr_array as.raster.zarr_array
#' @importFrom graphics image
#' @importFrom grDevices as.raster
#' @seealso [zarr-stars-terra] for plots through stars or terra
#' @examples
#' fn <- system.file("extdata", "volcano.zarr", package = "zarr")
#' elev <- open_zarr(fn, read_only = TRUE)[["/elevation"]]
#' plot(elev)
#' image(elev, max_pixels = 20, legend = FALSE) # a coarser look
#' r <- as.raster(elev)
#' dim(r)
#'
#' # an OME-NGFF image of two channels: the second one
#' path <- tempfile(fileext = ".zarr")
#' img <- write_ome_ngff(array(runif(2 * 64 * 48), c(2, 64, 48)), path,
#'                       axes = c("c", "y", "x"), channels = c("DNA", "actin"))
#' plot(img, channel = "actin")
#' unlink(path, recursive = TRUE)
NULL

# ---- what to read ----

# Elements read along a dimension of n for at most m of them: every k-th,
# each in the middle of the k it stands for.
plot_stride <- function(n, m) {
  if (n <= 0) return(numeric())
  k <- max(1, ceiling(n / m))
  seq(min(n, (k + 1) %/% 2), n, by = k)
}

# 1-based indices -> an element of a read() selection (a run as a range,
# which the engine plans without one number per index).
plot_index <- function(i) {
  r <- as_range_if_contiguous(as.numeric(i) - 1)
  if (inherits(r, "zarr_range")) r else structure(r, class = "zarr_index")
}

# The most elements read along x and y.
plot_max_pixels <- function(max_pixels, device = TRUE) {
  if (!is.null(max_pixels)) {
    if (!is.numeric(max_pixels) || length(max_pixels) != 1L || is.na(max_pixels) || max_pixels < 1)
      zarr_abort("argument", "max_pixels must be a positive number")
    return(floor(max_pixels))
  }
  if (!device) return(1000)
  # the device the plot goes to (opened now if there is none, as the plot would)
  px <- tryCatch(max(grDevices::dev.size("px")), error = function(e) NA)
  if (is.na(px) || px < 1) 1000 else min(1000, ceiling(px))
}

# The dimensions of an array that are x and y: from `xy` (names or numbers),
# else as st_as_stars() and rast() take them (cf_xy_order()).
plot_xy_dims <- function(dims, axes, xy, path = NULL) {
  n <- length(dims)
  if (n < 2L) zarr_abort("value", sprintf("a plot needs 2 dimensions or more, not %d", n), array = path)
  if (is.null(xy)) return(cf_xy_order(list(dims = dims, axes = axes))[1:2])
  if (length(xy) != 2L) zarr_abort("argument", "xy gives two dimensions: c(x, y)", array = path)
  k <- if (is.character(xy)) match(xy, dims) else suppressWarnings(as.integer(xy))
  if (anyNA(k) || any(k < 1L | k > n) || k[1L] == k[2L])
    zarr_abort("argument", sprintf("xy names two different dimensions of %s, by number (1 to %d) or name",
                                   if (any(nzchar(dims))) paste(dims, collapse = ", ") else "the array", n),
               array = path)
  k
}

# The 1-based index along each dimension not in `xy_dims`, from `slice` (by
# name or in order; default 1), checked against the extents.
plot_slice_index <- function(slice, dims, shape, xy_dims, path = NULL) {
  other <- setdiff(seq_along(shape), xy_dims)
  out <- stats::setNames(rep(1, length(other)), other)
  if (!length(slice)) return(out)
  slice <- as.list(slice)
  nm <- names(slice)
  if (is.null(nm)) {
    if (length(slice) != length(other))
      zarr_abort("argument", sprintf("slice gives one index for each dimension other than x and y (%d)", length(other)),
                 array = path)
    pos <- other
  } else {
    pos <- match(nm, dims)
    if (anyNA(pos) || !all(pos %in% other))
      zarr_abort("argument", sprintf("slice names dimensions other than x and y: %s",
                                     paste(dims[other], collapse = ", ")), array = path)
  }
  for (k in seq_along(slice)) {
    v <- slice[[k]]
    d <- pos[k]
    if (!is.numeric(v) || length(v) != 1L || is.na(v) || v < 1 || v > shape[d] || v != trunc(v))
      zarr_abort("argument", sprintf("the slice of dimension %s is one index from 1 to %s",
                                     if (nzchar(dims[d])) dims[d] else d, format(shape[d])), array = path)
    out[[as.character(d)]] <- v
  }
  out
}

# Without `slice`, a dimension other than x and y of more than one element
# has no plane to draw: say what to pass (its name, its extent, an example)
# rather than draw one the user did not choose.
plot_need_slice <- function(slice, dims, extents, xyd, name = NULL, path = NULL) {
  if (length(slice)) return(invisible())
  other <- setdiff(seq_along(extents), xyd)
  open <- other[extents[other] > 1]
  if (!length(open)) return(invisible())
  lab <- ifelse(nzchar(dims), dims, paste0("dimension ", seq_along(dims)))
  # by name when the dimensions have names, else one index per other one in order
  example <- if (all(nzchar(dims[other]))) sprintf("list(%s)", paste(sprintf("%s = 1", dims[open]), collapse = ", "))
    else sprintf("c(%s)", paste(rep("1", length(other)), collapse = ", "))
  zarr_abort("argument", sprintf(paste0(
    "%s has %d dimensions and a plot draws 2 (x: %s, y: %s): give `slice` to choose one index of %s, ",
    "e.g. slice = %s, or choose x and y with `xy`"),
    if (nzchar(name %||% "")) name else "the array", length(extents), lab[xyd[1L]], lab[xyd[2L]],
    paste(sprintf("%s (1 to %s)", lab[open], format(extents[open])), collapse = ", "), example), array = path)
}

# ---- arrays ----

# A downsampled 2-d view of an array, as a zarr_cf_data: strided indices
# along x and y, one index along the others, read in one call.
plot_read_array <- function(x, slice, xy, max_pixels, decode) {
  shape <- x$shape
  ca <- cf_coordinate_arrays(x)
  dims <- names(ca)
  axes <- cf_axes(dims, lapply(ca, function(a) if (!is.null(a)) a$attributes))
  xyd <- plot_xy_dims(dims, axes, xy, x$path)
  plot_need_slice(slice, dims, shape, xyd, x$name, x$path)
  at <- plot_slice_index(slice, dims, shape, xyd, x$path)
  sel <- lapply(seq_along(shape), function(d) {
    plot_index(if (d %in% xyd) plot_stride(shape[d], max_pixels) else at[[as.character(d)]])
  })
  coords <- lapply(ca, function(a) if (!is.null(a)) a$read())
  d <- new_cf_data(x, sel, coords, decode)
  d$xy <- xyd
  d
}

#' @rdname zarr-plot
#' @export
image.zarr_array <- function(x, ..., slice = NULL, xy = NULL, max_pixels = NULL, col = grDevices::hcl.colors(64),
                             zlim = NULL, legend = TRUE, decode = getOption("zarr.decode_cf", TRUE)) {
  d <- plot_read_array(x, slice, xy, plot_max_pixels(max_pixels), decode)
  plot_draw(plot_plane(d, d$xy), ..., col = col, zlim = zlim, legend = legend)
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr_array <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr_array <- function(x, ..., slice = NULL, xy = NULL, max_pixels = 1000,
                                 col = grDevices::hcl.colors(64), zlim = NULL,
                                 decode = getOption("zarr.decode_cf", TRUE)) {
  d <- plot_read_array(x, slice, xy, plot_max_pixels(max_pixels, device = FALSE), decode)
  plot_raster(plot_plane(d, d$xy), col, zlim)
}

# ---- selections, datasets ----

#' @rdname zarr-plot
#' @export
image.zarr_cf_data <- function(x, ..., slice = NULL, xy = NULL, col = grDevices::hcl.colors(64), zlim = NULL,
                               legend = TRUE) {
  plot_draw(plot_cf_plane(x, slice, xy), ..., col = col, zlim = zlim, legend = legend)
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr_cf_data <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr_cf_data <- function(x, ..., slice = NULL, xy = NULL, col = grDevices::hcl.colors(64), zlim = NULL) {
  plot_raster(plot_cf_plane(x, slice, xy), col, zlim)
}

# The plane of a selection: `slice` gives indices of the array (as for
# arrays), found among those the selection holds.
plot_cf_plane <- function(x, slice, xy) {
  n <- length(x$dims)
  xyd <- plot_xy_dims(x$dims, x$axes %||% rep("", n), xy, x$path)
  plot_need_slice(slice, x$dims, lengths(x$index), xyd, x$name, x$path)
  full <- vapply(x$index, function(i) if (length(i)) max(i) else 0, 0)
  at <- plot_slice_index(slice, x$dims, full, xyd, x$path)
  pick <- lapply(seq_len(n), function(d) {
    if (d %in% xyd) return(seq_along(x$index[[d]]))
    j <- if (is.null(slice)) 1L else match(at[[as.character(d)]], x$index[[d]])
    if (is.na(j)) zarr_abort("argument", sprintf("the selection does not hold index %s of dimension %s",
                                                 format(at[[as.character(d)]]), x$dims[d]), array = x$path)
    j
  })
  x$values <- do.call(`[`, c(list(cf_plain_values(x$values)), pick, list(drop = FALSE)))
  x$index <- Map(function(i, p) i[p], x$index, pick)
  x$coords <- stats::setNames(lapply(seq_len(n), function(d) {
    cv <- x$coords[[d]]
    if (is.null(cv)) NULL else cf_subset(cv, pick[[d]])
  }), names(x$coords))
  plot_plane(x, xyd)
}

#' @rdname zarr-plot
#' @export
image.zarr_dataset <- function(x, ..., variable = NULL) {
  variable <- variable %||% x$data_vars[1L]
  if (is.na(variable %||% NA)) zarr_abort("value", "the dataset has no data variable to plot")
  image(x[[variable]], ...)
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr_dataset <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr_dataset <- function(x, ..., variable = NULL) {
  variable <- variable %||% x$data_vars[1L]
  if (is.na(variable %||% NA)) zarr_abort("value", "the dataset has no data variable to plot")
  as.raster(x[[variable]], ...)
}

# ---- what is drawn ----

# A plane of a zarr_cf_data whose dimensions other than `xyd` hold one
# element: the values as a matrix [x, y] for image(), x and y positions
# increasing, and the labels.
plot_plane <- function(d, xyd) {
  v <- d$values
  if (inherits(v, "CFTime")) v <- v$as_timestamp()
  if (inherits(v, c("integer64", "Date", "POSIXct"))) v <- structure(as.double(v), dim = dim(v))
  if (is.logical(v)) v <- v + 0L
  if (!is.numeric(v) || is.object(v))
    zarr_abort("value", sprintf("%s values cannot be plotted: a plot needs numbers", class(v)[1L]), array = d$path)
  n <- length(d$dims)
  if (is.null(dim(v)) || length(dim(v)) != n) dim(v) <- lengths(d$index)
  if (!length(v)) zarr_abort("value", "the plane to plot has no elements", array = d$path)
  z <- aperm(unclass(v), c(xyd, setdiff(seq_len(n), xyd)))
  dim(z) <- dim(z)[1:2]
  storage.mode(z) <- "double"
  dim_label <- function(k) if (nzchar(d$dims[k])) d$dims[k] else sprintf("dimension %d", k)
  # positions: coordinates where usable (numbers or times, monotonic), else indices
  pos <- function(k) {
    cv <- d$coords[[k]]
    time <- inherits(cv, c("Date", "POSIXct"))
    if (!is.null(cv) && (is.numeric(cv) || time) && !anyNA(cv) && length(cv) == length(d$index[[k]]) &&
        (length(cv) < 2L || !is.unsorted(cv, strictly = TRUE) || !is.unsorted(rev(cv), strictly = TRUE)))
      return(list(at = as.numeric(cv), time = if (time) class(cv)[1L], coords = TRUE,
                  tz = attr(cv, "tzone")))
    list(at = as.numeric(d$index[[k]]), time = NULL, coords = FALSE)
  }
  px <- pos(xyd[1L])
  py <- pos(xyd[2L])
  if (length(px$at) > 1L && px$at[1L] > px$at[length(px$at)]) {
    px$at <- rev(px$at)
    z <- z[rev(seq_len(nrow(z))), , drop = FALSE]
  }
  if (length(py$at) > 1L && py$at[1L] > py$at[length(py$at)]) {
    py$at <- rev(py$at)
    z <- z[, rev(seq_len(ncol(z))), drop = FALSE]
  }
  a <- d$attributes %||% list()
  txt <- function(v) if (is.character(v) && length(v) == 1L && nzchar(v)) v
  long <- txt(a[["long_name"]]) %||% txt(a[["standard_name"]])
  units <- txt(d$units)
  main <- paste0(if (nzchar(d$name %||% "")) d$name else "array", if (!is.null(long)) paste0(": ", long),
                 if (!is.null(units)) paste0(" [", units, "]"))
  others <- setdiff(seq_len(n), xyd)
  where <- vapply(others, function(k) {
    cv <- d$coords[[k]]
    val <- if (is.null(cv)) format(d$index[[k]][1L])
      else if (inherits(cv, "CFTime")) cv$as_timestamp()[1L] else format(cv[1L], digits = 6)
    paste(dim_label(k), "=", val)
  }, "")
  where <- c(where, vapply(names(d$dropped), function(k) paste(k, "=", format(d$dropped[[k]])[1L]), ""))
  list(z = z, x = px, y = py, main = main, sub = if (length(where)) paste(where, collapse = ", "),
       xlab = dim_label(xyd[1L]), ylab = dim_label(xyd[2L]), path = d$path,
       # without y coordinates the first row is on top, as in an image
       top_down = !py$coords)
}

# Colour indices (1 to ncol) of values: equal steps over zlim, values
# outside it at its ends, NA for NA.
plot_colour_index <- function(z, zlim, ncol) {
  w <- zlim[2L] - zlim[1L]
  i <- if (w > 0) floor((z - zlim[1L]) / w * ncol) + 1 else z * 0 + (ncol + 1) %/% 2
  i[i < 1] <- 1
  i[i > ncol] <- ncol
  i
}

plot_zlim <- function(z, zlim) {
  if (!is.null(zlim)) {
    if (!is.numeric(zlim) || length(zlim) != 2L || anyNA(zlim) || zlim[1L] > zlim[2L])
      zarr_abort("argument", "zlim is two numbers, the lower first")
    return(as.numeric(zlim))
  }
  f <- z[is.finite(z)]
  if (!length(f)) c(0, 1) else range(f)
}

plot_check_col <- function(col) {
  if (!length(col) || anyNA(col)) zarr_abort("argument", "col needs colours, none NA")
  col
}

# The plane as a raster: rows are y, top first; columns x, left first.
plot_raster <- function(p, col, zlim) {
  col <- plot_check_col(col)
  zlim <- plot_zlim(p$z, zlim)
  i <- plot_colour_index(p$z, zlim, length(col))
  m <- col[i]
  dim(m) <- dim(i)
  m <- t(m) # rows y, columns x
  if (!p$top_down) m <- m[rev(seq_len(nrow(m))), , drop = FALSE]
  grDevices::as.raster(m)
}

# Cell edges from centres (a single cell: one unit wide).
plot_edges <- function(at) {
  n <- length(at)
  if (n == 1L) return(at + c(-0.5, 0.5))
  h <- diff(at) / 2
  c(at[1L] - h[1L], at[-n] + h, at[n] + h[n - 1L])
}

plot_draw <- function(p, ..., col, zlim, legend) {
  col <- plot_check_col(col)
  zlim <- plot_zlim(p$z, zlim)
  nc <- length(col)
  i <- plot_colour_index(p$z, zlim, nc)
  xe <- plot_edges(p$x$at)
  ye <- plot_edges(p$y$at)
  regular <- function(e) length(e) < 3L || isTRUE(all.equal(diff(e), rep(diff(e)[1L], length(e) - 1L)))
  args <- list(...)
  if (isTRUE(legend)) {
    op <- graphics::par(mar = pmax(graphics::par("mar"), c(0, 0, 0, 5.1)))
    on.exit(graphics::par(op))
  }
  time_axis <- !is.null(p$x$time) || !is.null(p$y$time)
  # square cells for maps and images, not for time axes or long strips
  ratio <- diff(range(ye)) / diff(range(xe))
  raster <- identical(grDevices::dev.capabilities("rasterImage")$rasterImage, "yes")
  defaults <- list(main = p$main, sub = p$sub, xlab = p$xlab, ylab = p$ylab,
                   asp = if (!time_axis && ratio >= 0.1 && ratio <= 10) 1 else NA,
                   ylim = if (p$top_down) rev(range(ye)) else range(ye), xlim = range(xe),
                   useRaster = raster && regular(xe) && regular(ye), axes = !time_axis)
  args <- utils::modifyList(defaults, args)
  draw_axes <- time_axis && !isFALSE(list(...)$axes)
  args$axes <- if (time_axis) FALSE else args$axes
  do.call(graphics::image, c(list(x = xe, y = ye, z = i, col = col, breaks = seq(0.5, nc + 0.5, by = 1)), args))
  if (draw_axes) {
    for (s in 1:2) {
      a <- if (s == 1L) p$x else p$y
      if (identical(a$time, "Date")) graphics::axis.Date(s, as.Date(range(a$at), origin = "1970-01-01"))
      else if (identical(a$time, "POSIXct"))
        graphics::axis.POSIXct(s, as.POSIXct(range(a$at), origin = "1970-01-01", tz = a$tz %||% "UTC"))
      else graphics::axis(s)
    }
    graphics::box()
  }
  if (isTRUE(legend)) plot_colour_bar(col, zlim)
  invisible()
}

# A colour bar in the right margin, beside the plot region, labelled with
# pretty values of zlim.
plot_colour_bar <- function(col, zlim) {
  op <- graphics::par(xpd = NA)
  on.exit(graphics::par(op))
  right <- graphics::grconvertX(1, "npc", "ndc")
  w <- graphics::grconvertX(1, "lines", "ndc") - graphics::grconvertX(0, "lines", "ndc")
  x0 <- graphics::grconvertX(right + w, "ndc", "user")
  x1 <- graphics::grconvertX(right + 2 * w, "ndc", "user")
  b <- graphics::grconvertY(0, "npc", "ndc")
  t <- graphics::grconvertY(1, "npc", "ndc")
  nc <- length(col)
  ys <- graphics::grconvertY(b + (t - b) * (0:nc) / nc, "ndc", "user")
  graphics::rect(x0, ys[-(nc + 1L)], x1, ys[-1L], col = col, border = NA)
  graphics::rect(x0, ys[1L], x1, ys[nc + 1L], border = graphics::par("fg"))
  at <- pretty(zlim)
  at <- at[at >= zlim[1L] & at <= zlim[2L]]
  if (zlim[2L] > zlim[1L] && length(at)) {
    y <- graphics::grconvertY(b + (t - b) * (at - zlim[1L]) / (zlim[2L] - zlim[1L]), "ndc", "user")
    graphics::text(x1, y, format(at), pos = 4, cex = 0.8)
  }
}

# ---- OME-NGFF images, multiscales groups ----

# The level of a pyramid to draw: the coarsest whose larger side along x
# and y has at least m pixels (or as many as the full resolution has).
plot_pick_level <- function(sizes, m) {
  want <- min(m, sizes[1L])
  ok <- which(sizes >= want)
  if (!length(ok)) 1L else ok[which.min(sizes[ok])]
}

# Whether a group the OME-NGFF domain took is an image: a group of the
# multiscales convention has `multiscales` too, but no axes.
plot_is_ome <- function(x) !inherits(tryCatch(x$axes, zarr_error = function(e) e), "error")

# The plane of an OME-NGFF image to draw: the level (chosen for `m` pixels
# unless given), strided along x and y, one plane of the other axes; its
# zlim is the channel's omero window, when set.
plot_ome_plane <- function(x, channel, level, slice, m) {
  ax <- x$axes
  space <- which(ax$type %in% "space" | (is.na(ax$type) & !ax$name %in% c("c", "t")))
  xd <- match("x", ax$name)
  yd <- match("y", ax$name)
  if (is.na(xd)) xd <- space[length(space)]
  if (is.na(yd)) yd <- setdiff(space, xd)[length(setdiff(space, xd))]
  if (!length(xd) || !length(yd) || is.na(xd) || is.na(yd))
    zarr_abort("value", "the image has no x and y axes to plot", array = x$path)
  lv <- x$levels
  if (is.null(level)) level <- plot_pick_level(vapply(lv$shape, function(s) max(s[c(xd, yd)]), 0), m)
  a <- x$level(level)
  k <- if (is.character(level)) match(level, lv$path) else level
  chan <- which(ax$type %in% "channel")
  if (!length(chan) && !is.null(channel) && !identical(as.numeric(channel), 1))
    zarr_abort("argument", "the image has no channel axis", array = x$path)
  args <- as.list(slice)
  if (length(args) && (is.null(names(args)) || !all(names(args) %in% ax$name[-c(xd, yd, chan)])))
    zarr_abort("argument", sprintf("slice names axes other than x, y and the channel: %s",
                                   paste(ax$name[-c(xd, yd, chan)], collapse = ", ")), array = x$path)
  if (length(chan)) args[[ax$name[chan[1L]]]] <- channel %||% 1
  sel <- do.call(x$region_index, c(list(level), args))
  shape <- a$shape
  for (d in seq_along(sel)) {
    if (d %in% c(xd, yd)) sel[[d]] <- plot_index(plot_stride(shape[d], m))
    else {
      r <- if (ax$name[d] %in% names(args)) sel[[d]] else c(1, 1)
      sel[[d]] <- zarr_range(r[1L] - 1, 1)
    }
  }
  v <- a$read(unname(sel))
  sc <- lv$scale[[k]]
  tr <- lv$translation[[k]]
  idx <- lapply(sel, function(s) as.numeric(sel_indices(s)) + 1)
  ch <- x$channels
  ci <- if (length(chan)) idx[[chan[1L]]][1L]
  label <- if (!is.null(ci) && !is.null(ch) && ci <= nrow(ch) && !is.na(ch$label[ci])) ch$label[ci]
  window <- if (!is.null(ci) && !is.null(ch) && ci <= nrow(ch) && !is.na(ch$window_start[ci]) &&
                 !is.na(ch$window_end[ci]) && ch$window_end[ci] > ch$window_start[ci])
    c(ch$window_start[ci], ch$window_end[ci])
  unit_label <- function(d) if (is.na(ax$unit[d])) ax$name[d] else sprintf("%s (%s)", ax$name[d], ax$unit[d])
  # as a zarr_cf_data: physical coordinates along x and y
  coords <- lapply(seq_along(sel), function(d) if (d %in% c(xd, yd)) tr[d] + (idx[[d]] - 1) * sc[d])
  dims <- ax$name
  d <- list(name = "", values = v, dims = dims, coords = stats::setNames(coords, dims), index = idx,
            attributes = list(), path = a$path)
  p <- plot_plane(d, c(xd, yd))
  name <- ome_parse(x)$name
  p$main <- paste0(if (is.character(name) && !is.na(name)) name else x$path,
                   if (length(chan)) sprintf(": channel %d%s", ci, if (!is.null(label)) sprintf(" (%s)", label) else ""))
  others <- setdiff(seq_along(sel), c(xd, yd, chan))
  p$sub <- paste(c(sprintf("level %d of %d", k, nrow(lv)),
                   sprintf("%s = %s", dims[others], format(vapply(others, function(j) tr[j] + (idx[[j]] - 1) * sc[j], 0)))),
                 collapse = ", ")
  p$xlab <- unit_label(xd)
  p$ylab <- unit_label(yd)
  # microscopy: the first row on top
  p$top_down <- TRUE
  p$y$coords <- FALSE
  p$zlim <- window
  p
}

#' @rdname zarr-plot
#' @export
image.zarr_ome_image <- function(x, ..., channel = NULL, level = NULL, slice = NULL, max_pixels = NULL,
                                 col = grDevices::hcl.colors(64), zlim = NULL, legend = TRUE) {
  if (!plot_is_ome(x)) return(NextMethod())
  p <- plot_ome_plane(x, channel, level, slice, plot_max_pixels(max_pixels))
  plot_draw(p, ..., col = col, zlim = zlim %||% p$zlim, legend = legend)
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr_ome_image <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr_ome_image <- function(x, ..., channel = NULL, level = NULL, slice = NULL, max_pixels = 1000,
                                     col = grDevices::hcl.colors(64), zlim = NULL) {
  if (!plot_is_ome(x)) return(NextMethod())
  p <- plot_ome_plane(x, channel, level, slice, plot_max_pixels(max_pixels, device = FALSE))
  plot_raster(p, col, zlim %||% p$zlim)
}

#' @rdname zarr-plot
#' @export
image.zarr_ome_level <- function(x, ...) {
  image(x$parent, ..., level = match(x$name, x$parent$dataset_paths()))
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr_ome_level <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr_ome_level <- function(x, ...) as.raster(x$parent, ..., level = match(x$name, x$parent$dataset_paths()))

# The arrays of the levels of a group's `multiscales` attribute: OME-NGFF's
# `datasets` (a list of multiscales) or the multiscales convention's
# `layout`; a level that is a group gives its array `variable`.
plot_multiscale_arrays <- function(g, variable) {
  ms <- g$attributes[["multiscales"]]
  paths <- if (is.list(ms) && is.list(ms[["layout"]])) vapply(ms[["layout"]], function(l) as.character(l$asset %||% NA)[1L], "")
    else if (is.list(ms) && length(ms) && is.list(ms[[1L]]) && is.list(ms[[1L]]$datasets))
      vapply(ms[[1L]]$datasets, function(l) as.character(l$path %||% NA)[1L], "")
  if (!length(paths) || anyNA(paths))
    zarr_abort("value", "a group plots when its 'multiscales' attribute lists its levels; plot one of its arrays",
               array = g$path)
  lapply(paths, function(p) {
    node <- g$get_node(p)
    if (inherits(node, "zarr_group")) {
      v <- variable %||% zarr_dataset(node)$data_vars[1L]
      node <- if (!is.na(v %||% NA)) node$get_node(v)
    }
    if (!inherits(node, "zarr_array"))
      zarr_abort("value", sprintf("level '%s' of the multiscales is not an array%s", p,
                                  if (is.null(variable)) "" else sprintf(" nor holds '%s'", variable)), array = g$path)
    node
  })
}

# The array of a multiscales group to draw: level `level`, or the coarsest
# with at least `m` elements along x or y (or as many as the first level).
plot_group_array <- function(x, level, variable, xy, m) {
  arrs <- plot_multiscale_arrays(x, variable)
  if (is.null(level)) {
    sizes <- vapply(arrs, function(a) {
      ca <- cf_coordinate_arrays(a)
      k <- plot_xy_dims(names(ca), cf_axes(names(ca), lapply(ca, function(c) if (!is.null(c)) c$attributes)), xy, a$path)
      max(a$shape[k])
    }, 0)
    level <- plot_pick_level(sizes, m)
  }
  if (!is.numeric(level) || length(level) != 1L || is.na(level) || level < 1 || level > length(arrs))
    zarr_abort("argument", sprintf("the multiscales has levels 1 to %d", length(arrs)), array = x$path)
  arrs[[level]]
}

#' @rdname zarr-plot
#' @export
image.zarr_group <- function(x, ..., level = NULL, variable = NULL, xy = NULL, max_pixels = NULL) {
  # a level group of a Zarr Vectors store: the store at that level
  if (inherits(x$parent, "zarr_vectors_store") && is.list(x$attributes[["zarr_vectors_level"]])) {
    image(x$parent, ..., level = x$name)
    return(invisible(x))
  }
  m <- plot_max_pixels(max_pixels)
  image(plot_group_array(x, level, variable, xy, m), ..., xy = xy, max_pixels = m)
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr_group <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr_group <- function(x, ..., level = NULL, variable = NULL, xy = NULL, max_pixels = 1000) {
  m <- plot_max_pixels(max_pixels, device = FALSE)
  as.raster(plot_group_array(x, level, variable, xy, m), ..., xy = xy, max_pixels = m)
}

#' @rdname zarr-plot
#' @export
image.zarr <- function(x, ...) {
  image(x$root, ...)
  invisible(x)
}

#' @rdname zarr-plot
#' @export
plot.zarr <- function(x, y, ...) image(x, ...)

#' @rdname zarr-plot
#' @export
as.raster.zarr <- function(x, ...) as.raster(x$root, ...)

# ---- Zarr Vectors ----

#' Quick-look plots of Zarr Vectors point clouds, graphs and meshes
#'
#' `plot()` (the same as `image()`) of a Zarr Vectors store (see
#' [zarr-vectors]) draws the vertices inside a box, projected onto two of
#' its axes, with the lines of a graph or the triangle outlines of a mesh,
#' optionally coloured by an attribute. The axes are in the units of the
#' positions (labelled with the axis names, and the `unit` of the store's
#' axes when it gives one), on the same scale.
#'
#' **What is read.** Only the chunks of space that `box` touches, of one
#' level: the coarsest whose estimated number of vertices in the box is at
#' least `max_points`, or the finest level when none has as many. The
#' estimate of a level is its `vertex_count` times the share of its occupied
#' chunks that the box touches (chunk listings and level metadata only).
#' `max_points` defaults to a quarter of the device's pixels (one point for
#' each square of 2 x 2 pixels), at most 100 000: for a device of 480 x 480
#' pixels, 57 600 points. When the level read holds more than `max_points`
#' vertices in the box, every k-th is drawn so that at most `max_points`
#' are; lines and triangles are all drawn. A long read shows the progress
#' bar reads show (see `zarr.progress` in [zarr-options]).
#'
#' **Colours.** Without `colour`, points (and lines) take `col` (default the
#' foreground colour). `colour` names a vertex attribute (or an axis, to
#' colour by depth): numbers span `col` (default `hcl.colors(64)`) over
#' `zlim` (default their range) with a colour bar in the right margin;
#' factors, logicals and strings take one colour of `col` per value, with
#' a legend there. `legend = FALSE` leaves the margin alone. A level group
#' of the store (`zv[["1"]]`) plots as the store at that level.
#'
#' @param x A `zarr_vectors_store` (or one of its level groups).
#' @param y Ignored (`plot()` takes it).
#' @param ... Further arguments for [graphics::plot.default()] (`main`,
#'   `xlab`, `ylab`, `pch`, `cex`, `axes`, ...).
#' @param box The box to draw: a list of `c(lower, upper)` by axis name
#'   (`list(x = c(0, 50), z = c(10, 20))`); axes it does not name are
#'   whole. The plot's limits along the axes drawn are the box's where it
#'   gives them, else the store's `bounds`.
#' @param dims The two axes drawn, `c(x, y)`, by name or number (default
#'   the first two).
#' @param level The level to read (numbered from 0, as in `$levels`);
#'   `NULL` chooses as above.
#' @param max_points The number of points the plot aims at (`NULL`: from
#'   the device, see above).
#' @param colour The name of a vertex attribute (of one channel) or of an
#'   axis whose values colour the points.
#' @param col The colours.
#' @param zlim For a numeric `colour`: the values at the two ends of the
#'   colour scale.
#' @param links Whether to draw the lines of a graph and the triangle
#'   outlines of a mesh.
#' @param link_col The colour of lines and triangle outlines.
#' @param legend Whether to draw the colour bar or legend of `colour`.
#' @return `x`, invisibly.
#' @name zarr-vectors-plot
#' @seealso [zarr-vectors], [zarr-plot] for arrays and images
#' @examples
#' set.seed(1)
#' xyz <- cbind(runif(2000, 0, 100), runif(2000, 0, 100), runif(2000, 0, 10))
#' path <- tempfile(fileext = ".zarr")
#' zv <- write_zarr_vectors(path, xyz, chunk_shape = c(50, 50, 10),
#'                          attributes = data.frame(intensity = xyz[, 1] / 100))
#' plot(zv, colour = "intensity")
#' # the chunks of one quarter only, x against z, at the full resolution
#' plot(zv, box = list(x = c(0, 50), y = c(0, 50)), dims = c("x", "z"),
#'      level = 0, colour = "z", legend = FALSE)
#' unlink(path, recursive = TRUE)
NULL

# The most points drawn: a quarter of the device's pixels, at most 1e5.
plot_max_points <- function(max_points) {
  if (!is.null(max_points)) {
    if (!is.numeric(max_points) || length(max_points) != 1L || is.na(max_points) || max_points < 1)
      zarr_abort("argument", "max_points must be a positive number")
    return(floor(max_points))
  }
  px <- tryCatch(prod(grDevices::dev.size("px")), error = function(e) NA)
  if (is.na(px) || px < 1) 1e5 else min(1e5, ceiling(px / 4))
}

# The box as lower and upper bounds on every axis (-Inf, Inf where unnamed).
plot_zv_box <- function(box, axes, path) {
  d <- length(axes)
  lower <- stats::setNames(rep(-Inf, d), axes)
  upper <- stats::setNames(rep(Inf, d), axes)
  if (is.null(box)) return(list(lower = lower, upper = upper))
  if (!is.list(box) || is.null(names(box)) || !all(names(box) %in% axes) || anyDuplicated(names(box)))
    zarr_abort("argument", sprintf("box is a list of c(lower, upper) by axis name (%s)", paste(axes, collapse = ", ")),
               array = path)
  for (nm in names(box)) {
    b <- box[[nm]]
    if (!is.numeric(b) || length(b) != 2L || anyNA(b) || b[1L] > b[2L])
      zarr_abort("argument", sprintf("the box along %s is c(lower, upper), lower <= upper", nm), array = path)
    lower[[nm]] <- b[1L]
    upper[[nm]] <- b[2L]
  }
  list(lower = lower, upper = upper)
}

# The level of a ZV store to read for a box: the coarsest whose estimated
# vertex count in the box (vertex_count times the share of its chunks the
# box touches) is at least m, else the finest.
plot_zv_level <- function(x, lower, upper, m) {
  lv <- x$levels
  est <- vapply(seq_len(nrow(lv)), function(k) {
    ch <- x$chunks(lv$level[k])
    if (!nrow(ch)) return(0)
    cs <- as.numeric(unlist(x$level_metadata(lv$level[k])$chunk_shape %||% x$info$chunk_shape))
    n <- nrow(ch)
    inside <- rowSums(ch >= rep(floor(lower / cs), each = n) & ch <= rep(floor(upper / cs), each = n)) == ncol(ch)
    lv$vertex_count[k] * sum(inside) / n
  }, 0)
  # an unknown count: the finest level is taken to have enough, others not
  est[is.na(est)] <- ifelse(seq_along(est)[is.na(est)] == 1L, Inf, -1)
  lv$level[plot_pick_level(est, m)]
}

# What a plot of a ZV store draws: the vertices of the box at the level
# chosen (at most max_points of them), its links, the axes drawn, limits.
plot_zv_points <- function(x, box, dims, level, max_points, colour) {
  axes <- x$axes
  d <- length(axes)
  if (d < 2L) zarr_abort("value", "a plot needs positions of 2 dimensions or more", array = x$path)
  dims <- dims %||% axes[1:2]
  k <- if (is.character(dims)) match(dims, axes) else suppressWarnings(as.integer(dims))
  if (length(k) != 2L || anyNA(k) || any(k < 1L | k > d) || k[1L] == k[2L])
    zarr_abort("argument", sprintf("dims names two different axes of the store, by number (1 to %d) or name (%s)",
                                   d, paste(axes, collapse = ", ")), array = x$path)
  b <- plot_zv_box(box, axes, x$path)
  if (is.null(level)) level <- plot_zv_level(x, b$lower, b$upper, max_points)
  lv <- x$levels
  if (length(level) != 1L || !as.character(level) %in% lv$path)
    zarr_abort("argument", sprintf("the store has levels %s", paste(lv$path, collapse = ", ")), array = x$path)
  n_est <- lv$vertex_count[match(as.character(level), lv$path)]
  bytes <- (if (is.na(n_est)) 0 else n_est) * 8 * (d + 2)
  got <- with_progress(x$read_box(b$lower, b$upper, level = level), bytes,
                       sprintf("Reading %s level %s", x$path, level))
  v <- got$vertices
  if (!is.null(colour)) {
    if (!is.character(colour) || length(colour) != 1L || !colour %in% setdiff(names(v), c("chunk", "row")))
      zarr_abort("argument", sprintf("colour names a vertex attribute or an axis: %s",
                                     paste(setdiff(names(v), c("chunk", "row")), collapse = ", ")), array = x$path)
    if (!is.null(dim(v[[colour]])) && ncol(v[[colour]]) != 1L)
      zarr_abort("argument", sprintf("attribute '%s' has %d channels: colour takes one of one channel",
                                     colour, ncol(v[[colour]])), array = x$path)
  }
  n <- nrow(v)
  shown <- if (n > max_points) seq(1L, n, by = ceiling(n / max_points)) else seq_len(n)
  # limits: the box where it is finite, else the store's bounds, else the data
  bounds <- x$info$bounds
  lim <- lapply(k, function(j) {
    lo <- b$lower[[j]]
    hi <- b$upper[[j]]
    bj <- if (is.list(bounds) && length(bounds) == 2L)
      suppressWarnings(as.numeric(c(unlist(bounds[[1L]])[j], unlist(bounds[[2L]])[j])))
    if (length(bj) != 2L || anyNA(bj)) bj <- if (n) range(v[[axes[j]]]) else c(0, 1)
    c(if (is.finite(lo)) lo else bj[1L], if (is.finite(hi)) hi else bj[2L])
  })
  ms <- x$attributes[["multiscales"]]
  ax_meta <- if (is.list(ms) && length(ms) && is.list(ms[[1L]])) ms[[1L]]$axes
  unit <- vapply(k, function(j) {
    u <- if (is.list(ax_meta) && length(ax_meta) == d && is.list(ax_meta[[j]])) ax_meta[[j]]$unit
    if (is.character(u) && length(u) == 1L && !is.na(u) && nzchar(u)) u else NA_character_
  }, "")
  list(vertices = v, shown = shown, links = got$links, level = level, dims = axes[k], lim = lim, unit = unit,
       levels = paste(lv$path, collapse = ", "))
}

#' @rdname zarr-vectors-plot
#' @export
image.zarr_vectors_store <- function(x, ..., box = NULL, dims = NULL, level = NULL, max_points = NULL,
                                     colour = NULL, col = NULL, zlim = NULL, links = TRUE, link_col = "grey50",
                                     legend = TRUE) {
  p <- plot_zv_points(x, box, dims, level, plot_max_points(max_points), colour)
  v <- p$vertices
  s <- p$shown
  by <- if (!is.null(colour)) v[[colour]]
  if (!is.null(dim(by))) by <- by[, 1L]
  categorical <- !is.null(by) && (is.factor(by) || is.logical(by) || is.character(by))
  if (categorical) {
    f <- as.factor(by)
    col <- plot_check_col(col %||% grDevices::hcl.colors(max(2L, nlevels(f)), "Dark 3"))
    pcol <- rep_len(col, nlevels(f))[as.integer(f)]
  } else if (!is.null(by)) {
    col <- plot_check_col(col %||% grDevices::hcl.colors(64))
    zlim <- plot_zlim(as.numeric(by), zlim)
    pcol <- col[plot_colour_index(as.numeric(by), zlim, length(col))]
  } else {
    col <- plot_check_col(col %||% graphics::par("fg"))
    pcol <- rep_len(col[1L], nrow(v))
  }
  key <- isTRUE(legend) && !is.null(by)
  if (key) {
    op <- graphics::par(mar = pmax(graphics::par("mar"), c(0, 0, 0, if (categorical) 7.1 else 5.1)))
    on.exit(graphics::par(op))
  }
  lab <- ifelse(is.na(p$unit), p$dims, sprintf("%s (%s)", p$dims, p$unit))
  geometry <- paste(unlist(x$info$geometry_types), collapse = ", ")
  defaults <- list(main = sprintf("Zarr Vectors%s", if (nzchar(geometry)) paste0(": ", geometry) else ""),
                   sub = sprintf("level %s of levels %s, %d points%s", format(p$level), p$levels, nrow(v),
                                 if (length(s) < nrow(v)) sprintf(" (%d drawn)", length(s)) else ""),
                   xlab = lab[1L], ylab = lab[2L], xlim = p$lim[[1L]], ylim = p$lim[[2L]], asp = 1,
                   pch = 16, cex = 0.4)
  args <- utils::modifyList(defaults, list(...))
  pt <- args[c("pch", "cex")]
  args$pch <- args$cex <- NULL
  do.call(graphics::plot.default, c(list(x = NA_real_, y = NA_real_, type = "n"), args))
  X <- v[[p$dims[1L]]]
  Y <- v[[p$dims[2L]]]
  L <- p$links
  if (isTRUE(links) && !is.null(L) && ncol(L) >= 2L && nrow(L)) {
    # a triangle's three edges; a line's one
    e <- if (ncol(L) == 2L) L else rbind(L[, 1:2], L[, 2:3], L[, c(3L, 1L)])
    graphics::segments(X[e[, 1L]], Y[e[, 1L]], X[e[, 2L]], Y[e[, 2L]], col = link_col)
  }
  graphics::points(X[s], Y[s], col = pcol[s], pch = pt$pch, cex = pt$cex)
  if (key && categorical) {
    op2 <- graphics::par(xpd = NA)
    on.exit(graphics::par(op2), add = TRUE)
    right <- graphics::grconvertX(1, "npc", "user") + (graphics::grconvertX(1, "lines", "user") -
                                                       graphics::grconvertX(0, "lines", "user"))
    graphics::legend(right, graphics::grconvertY(1, "npc", "user"), legend = levels(f),
                     col = rep_len(col, nlevels(f)), pch = 16, bty = "n", cex = 0.8, title = colour)
  } else if (key) plot_colour_bar(col, zlim)
  invisible(x)
}

#' @rdname zarr-vectors-plot
#' @export
plot.zarr_vectors_store <- function(x, y, ...) image(x, ...)
