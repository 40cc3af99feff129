#' Zarr Vectors: point clouds, graphs and meshes
#'
#' A Zarr Vectors (ZV) store keeps vector geometry (points, edges, triangle
#' faces, and objects made of them) in a Zarr v3 hierarchy: a root group with
#' a `zarr_vectors` attribute and an NGFF-style `multiscales` attribute, one
#' group per resolution level (`0`, `1`, ...), and in each level the ZV arrays
#' (`vertices`, `vertex_fragments`, `links/0`, `link_fragments`,
#' `vertex_attributes/<name>`, `fragment_attributes/<name>`,
#' `link_attributes/<name>/0`, `object_index`, `object_attributes/<name>`,
#' `groups`, `group_attributes/<name>`, `cross_chunk_links/0`,
#' `cross_chunk_link_attributes/<name>/0`). Space is cut into chunks of
#' `chunk_shape`; the vertices of chunk `(i, j, k)` (those with
#' `floor(position / chunk_shape)` equal to it) are one byte blob named
#' `"i.j.k"`. An object is a set of fragments, each a run of vertices in one
#' chunk, and the object index lists each object's fragments chunk by chunk.
#'
#' Stores open as `zarr_vectors_store` objects (a [zarr_group]) through the
#' "ZarrVectors" [zarr_domain], registered when the package is loaded
#' (ahead of the OME-NGFF domain: a ZV root has `multiscales` too).
#'
#' @section Reading:
#' * `$info`: the `zarr_vectors` attribute of the root; `$levels`: a data
#'   frame (class `zarr_levels`, printed one line per level) of the levels,
#'   one row each: `level`, `path`, `vertex_count`,
#'   and the list columns `bin_shape` and `scale` (named by axis; `NA`
#'   where the store does not give them);
#'   `$level_metadata(level)`: the `zarr_vectors_level` attribute.
#' * Levels are numbered as the ZV specification numbers them: from 0, the
#'   full resolution, then 1 for the coarser level (bins twice as large).
#'   The `level` argument of every method takes that number (the level
#'   group's name in the store); this differs from OME-NGFF images
#'   ([zarr-ome]), whose levels count from 1 as R does.
#' * `$chunks(level = 0)`: the occupied chunks, a matrix of chunk coordinates
#'   with the chunk keys as row names.
#' * `$read_chunk(chunk, level = 0)`, `$read_box(lower, upper, level = 0)`,
#'   `$read_objects(ids, level = 0)`, `$read_level(level = 0)`: vertices and
#'   links in one call. The result is a list with `vertices`, a data frame of
#'   the coordinates (named by the axes), the vertex attributes, the `chunk`
#'   key and the `row` in that chunk (from 0), plus `object` for
#'   `read_objects()`; and `links`, an integer matrix of `link_width`
#'   columns whose values are row numbers of `vertices` (links inside a chunk
#'   and cross-chunk links whose endpoints are all in the result). A box
#'   holds the vertices with `lower <= position <= upper` in every
#'   dimension.
#' * `$fragments(chunk, level = 0, links = FALSE)`: a chunk's fragment index
#'   (`is_range`, `start`, `count`, and the `rows` of each fragment).
#' * `$manifests(ids, level = 0)`: the manifest blocks of objects.
#' * `$cross_chunk_links(level = 0, delta = 0)`: the cross-chunk records, a
#'   list with `coords` (chunk coordinates per endpoint) and `rows`;
#'   `$level_links(level = 0, delta = 1)`: the same for the links from
#'   `level` to `level + delta` (`links/+1`), whose first endpoint is at
#'   `level` and the others at `level + delta`.
#' * `$object_attributes(level = 0)`: a data frame, one row per object;
#'   `$object_groups(level = 0)`: a list of object ids (from 0) per group;
#'   `$group_attributes(level = 0)`: a data frame, one row per group.
#' * `$fragment_attributes(level = 0)`: a data frame, one row per fragment
#'   (`chunk`, `fragment` number in the chunk from 0, and the attributes).
#' * `$link_attributes(level = 0)`: a data frame whose rows follow the
#'   `links` of `$read_level(level)`: those inside chunks
#'   (`link_attributes/<name>/0/<chunk>`), then those across chunks
#'   (`cross_chunk_link_attributes/<name>/0/data`).
#' * An attribute of several channels (`channel_names` in its array group, or
#'   `num_channels` for object and group attributes) stores rows of C values
#'   and comes back as a matrix column of the data frame.
#'
#' Stores of other writers may use two conventions this writer does not:
#' `links_convention` "implicit_sequential" for lines, polylines and
#' streamlines (no `links/0`: the vertices of each fragment are linked in
#' their order; cross-chunk records are read as usual), and
#' `object_index_convention` "identity" (no object index: object k is the
#' vertex of row k, in a store of one chunk), read by `$read_objects()`.
#' "implicit_sequential_with_branches" is not read.
#'
#' Byte layouts are checked as they are read (the fragment index's magic,
#' version, bitmap popcount and lengths; manifest blocks; row counts; link
#' indices inside their chunk): a violation is an error of class
#' `zarr_error_zv`.
#'
#' @section Differences from the specification:
#' Where the ZV specification and its Python reference implementation
#' (format 0.7) differ, or the specification is silent, this package does as
#' the reference does: each ZV array is a group holding one single-chunk 1-D
#' uint8 array per chunk key; `object_index` and `groups` hold `data` (the
#' concatenated records) and `offsets` (the int64 byte offset at which each
#' object's or group's records start); an `object_index/manifests` array of
#' variable-length bytes (one manifest per object, the newest reference's
#' layout) is read too; fragment indexes are compressed with
#' Blosc + Zstd and byte shuffle (the codec map of the reference and
#' section 5.2, where section 11.3 lists no compression). The `ZVFG` magic
#' is the little-endian uint32 0x5A564647, so the blob's first bytes are
#' "GFVZ". Blosc shuffles use the element size of the payload (4 or 8 for
#' positions, 8 for int64 indexes), not the uint8 of the array. Fragment
#' attributes (which the reference does not write) have the metadata of
#' vertex attributes with `zv_array` "fragment_attribute"; link attributes
#' of several channels carry `channel_names` as vertex attributes do (the
#' reference records no channel count for them).
#'
#' @seealso [write_zarr_vectors()], [zarr_domain], [zarr-vectors-plot] for
#'   `plot()` of a store
#' @name zarr-vectors
#' @aliases zarr_vectors_store
#' @examples
#' set.seed(1)
#' xyz <- matrix(runif(3000, 0, 100), ncol = 3)
#' path <- tempfile(fileext = ".zarr")
#' zv <- write_zarr_vectors(path, xyz, chunk_shape = c(50, 50, 50),
#'                          attributes = data.frame(intensity = runif(1000)))
#' zv$levels
#' box <- zv$read_box(c(0, 0, 0), c(20, 20, 20))
#' head(box$vertices)
#' unlink(path, recursive = TRUE)
NULL

zv_domain_name <- "ZarrVectors"
zv_format_version <- "0.7.0"

zarr_vectors_domain <- R6::R6Class("zarr_vectors_domain",
  inherit = zarr_domain,
  cloneable = FALSE,
  public = list(
    initialize = function() super$initialize(zv_domain_name),
    # A ZV root declares itself by its attribute; nothing else is read.
    build = function(name, metadata, parent) {
      if (zv_claims(metadata)) return(zarr_vectors_store$new(name, metadata, parent))
      FALSE
    }
  ),
  active = list(open_hierarchy = function(value) FALSE)
)

# Whether the node is a ZV root (the domain's build() and build_node()'s
# shortcut for nodes no built-in domain claims ask this).
zv_claims <- function(metadata) {
  identical(metadata[["node_type"]], "group") && is.list(metadata[["attributes"]][["zarr_vectors"]])
}

zv_error <- function(message, where = NULL) zarr_abort("zv", message, array = where)

# ---- byte blobs ---------------------------------------------------------------

# The metadata of the single-chunk uint8 array that holds one blob; Blosc +
# Zstd at level 5 with the shuffle and element size of the payload.
zv_blob_metadata <- function(n, shuffle, typesize) {
  list(zarr_format = 3L, node_type = "array", shape = list(n), data_type = "uint8",
       chunk_grid = list(name = "regular", configuration = list(chunk_shape = list(max(n, 1)))),
       chunk_key_encoding = list(name = "default", configuration = list(separator = "/")),
       fill_value = 0L,
       codecs = list(list(name = "bytes"),
                     list(name = "blosc", configuration = list(cname = "zstd", clevel = 5L, shuffle = shuffle,
                                                               typesize = as.integer(typesize), blocksize = 0L))),
       attributes = named_list())
}

zv_write_blob <- function(group, name, bytes, shuffle = "shuffle", typesize = 8L) {
  a <- group$add_array(name, zv_blob_metadata(length(bytes), shuffle, typesize))
  if (length(bytes)) a[] <- bytes
  invisible(a)
}

# A ZV array: a group whose attributes say what it holds.
zv_add_group <- function(parent, path, attributes = NULL) {
  g <- parent
  for (p in strsplit(path, "/", fixed = TRUE)[[1L]]) g <- g$open_child(p) %||% g$add_group(p)
  for (nm in names(attributes)) g$set_attribute(nm, attributes[[nm]])
  g
}

# The bytes of a blob (a raw vector, read by the C engine), NULL when there
# is no such blob.
zv_blob <- function(root, path) {
  a <- root$get_node(path)
  if (is.null(a)) return(NULL)
  if (!inherits(a, "zarr_array") || !identical(a$data_type$data_type, "uint8") || length(a$shape) != 1L)
    zv_error("a ZV blob must be a 1-D uint8 array", path)
  if (!(a$shape <= max_decoded_bytes())) # read_bytes() allocates the shape first
    zv_error(sprintf("a ZV blob of %.0f bytes is more than the budget of %.0f (option zarr.max_decoded_bytes)",
                     a$shape, max_decoded_bytes()), path)
  a$read_bytes()
}

# The bytes of the blobs `keys` of the ZV array at `path` (NULL where there
# is none), read together: the engine fetches and decodes them in one call.
zv_blobs <- function(root, path, keys) {
  if (!length(keys)) return(list())
  tryCatch(zarr_read_arrays(root, paste0(path, "/", keys), rtype = "raw", max_bytes = max_decoded_bytes()),
           zarr_error_value = function(e) zv_error("a ZV blob must be a 1-D uint8 array", path),
           zarr_error_metadata = function(e)
             zv_error(sprintf("the blobs of a ZV array must be 1-D uint8 arrays alike, within the budget: %s",
                              conditionMessage(e)), path))
}

zv_rows <- function(blobs, dtype, ncol, where, columns = FALSE)
  .Call(ffi_zv_rows_decode, blobs, dtype, as.integer(ncol), columns, where, zarr_num_threads(), max_decoded_bytes())

# A fragment index parsed and expanded: its ranges must lie inside nrows (NA:
# unknown) and what it expands to inside the parse budget.
zv_frag <- function(blob, nrows, where) .Call(ffi_zv_frag_parse, blob, as.numeric(nrows), where, max_decoded_bytes())

# A count from a ZV group's attributes (link_width, num_channels): one
# integer, NA when it is not one (without the warning of as.integer()).
zv_int <- function(x) {
  x <- suppressWarnings(as.numeric(x))
  if (length(x) == 1L && !is.na(x) && abs(x) < 2^31) as.integer(x) else NA_integer_
}

# Bytes per element of a ZV element type (NA when unknown).
zv_type_size <- function(dtype) dtype_table$size[match(dtype, dtype_table$name)]

zv_chunk_key <- function(coords) do.call(paste, c(lapply(seq_len(ncol(coords)), function(j) format(coords[, j], scientific = FALSE, trim = TRUE)), sep = "."))

zv_delta <- function(delta) if (delta > 0) paste0("+", delta) else as.character(delta)

zv_dtype_of <- function(x) if (is.logical(x)) "bool" else if (is.integer(x) || is.factor(x)) "int32" else "float64"

# The columns of an attribute data frame, each a numeric matrix of its
# channels (a matrix column of the data frame holds several); checked.
# Attribute "zv_dtype" is the element type; "zv_meta" what else its group
# records. A logical is stored as bool (0 or 1, no NA); a factor as its codes
# from 0 with the dictionary encoding of the reference implementation
# (encoding "dictionary", its levels as "categories", "ordered", and
# "_FillValue" -1 for NA), which $read_*() turn back into the factor.
zv_columns <- function(df, what) {
  if (is.null(df)) return(list())
  if (is.matrix(df) && !is.data.frame(df)) df <- as.data.frame(df)
  if (!is.data.frame(df) || (length(df) && is.null(names(df))) || anyDuplicated(names(df)) || any(!nzchar(names(df))))
    zarr_abort("argument", sprintf("%s must be a data frame with named columns", what))
  cols <- lapply(names(df), function(nm) {
    col <- df[[nm]]
    if (!(is.numeric(col) || is.logical(col) || is.factor(col)) || (!is.null(dim(col)) && length(dim(col)) != 2L))
      zarr_abort("argument", sprintf("the columns of %s must be numbers, logicals, factors or numeric matrices", what))
    if (is.logical(col) && anyNA(col))
      zarr_abort("argument", sprintf("column '%s' of %s has NA, which a bool attribute cannot hold", nm, what))
    meta <- NULL
    if (is.factor(col)) {
      meta <- list(encoding = "dictionary", categories = as.list(levels(col)), ordered = is.ordered(col))
      codes <- as.integer(col) - 1L
      if (anyNA(codes)) {
        codes[is.na(codes)] <- -1L
        meta[["_FillValue"]] <- -1L
      }
      col <- codes
    }
    m <- as.matrix(col)
    attr(m, "zv_dtype") <- zv_dtype_of(df[[nm]])
    attr(m, "zv_meta") <- meta
    m
  })
  names(cols) <- names(df)
  cols
}

# Whether an attribute column (of zv_columns()) holds categories (a factor's
# codes, or bool), which a coarser level takes the most frequent of.
zv_categorical <- function(m) identical(attr(m, "zv_dtype"), "bool") || !is.null(attr(m, "zv_meta"))

# Per group g (1..ng) the most frequent value of x; on a tie the smallest,
# but the fill code -1 (a factor's NA) last.
zv_mode <- function(x, g, ng) {
  o <- order(g, x)
  gs <- g[o]
  xs <- x[o]
  n <- length(xs)
  start <- c(TRUE, gs[-1L] != gs[-n] | xs[-1L] != xs[-n])
  cnt <- tabulate(cumsum(start))
  rg <- gs[start]
  rx <- xs[start]
  best <- order(rg, -cnt, rx == -1, rx)
  best <- best[!duplicated(rg[best])]
  out <- numeric(ng)
  out[rg[best]] <- rx[best]
  out
}

# Attribute values as their group says: bool as logical, int32 as integer,
# the dictionary encoding (codes from 0 into "categories", "_FillValue" for
# NA) as a factor. A code outside the categories is an error.
zv_decode_column <- function(A, aa, where) {
  if (identical(aa$encoding, "dictionary")) {
    if (is.matrix(A)) zv_error("a dictionary-encoded attribute has one channel", where)
    cats <- aa$categories
    if (!is.null(cats) && !is.list(cats) && !is.atomic(cats)) cats <- NULL
    lev <- vapply(as.list(cats), function(x) if (is.atomic(x) && length(x) == 1L && !is.na(x)) as.character(x) else NA_character_, "")
    if (is.null(cats) || anyNA(lev) || anyDuplicated(lev))
      zv_error("the categories of a dictionary-encoded attribute must be distinct strings or numbers", where)
    fill <- aa[["_FillValue"]]
    na <- if (length(fill) == 1L && is.numeric(fill)) A == fill else logical(length(A))
    if (any(!na & (A < 0 | A >= length(lev) | A != floor(A))))
      zv_error(sprintf("a dictionary-encoded attribute holds a code outside its %d categories", length(lev)), where)
    codes <- as.integer(A) + 1L
    codes[na] <- NA_integer_
    return(structure(codes, levels = lev, class = c(if (isTRUE(aa$ordered)) "ordered", "factor")))
  }
  if (identical(aa$dtype, "bool")) storage.mode(A) <- "logical"
  else if (identical(aa$dtype, "int32")) storage.mode(A) <- "integer"
  A
}

zv_shape <- function(m) if (ncol(m) == 1L) list(nrow(m)) else list(nrow(m), ncol(m))

# Write attribute columns (zv_columns()) under `dir`: rows `idx` of each, cut
# at `breaks` into the blobs `keys`; the group of each says what it is. Several
# channels are rows of C values, named by `channel_names`.
zv_write_attributes <- function(lvl, dir, cols, idx, breaks, keys, meta = list(), sub = "") {
  if (length(cols)) zv_add_group(lvl, dir, list(names = as.list(names(cols)))) # their order
  for (nm in names(cols)) {
    m <- cols[[nm]]
    dt <- attr(m, "zv_dtype")
    C <- ncol(m)
    extra <- if (C > 1L) list(channel_names = as.list(colnames(m) %||% paste0("ch", seq_len(C) - 1L)))
    g <- zv_add_group(lvl, paste0(dir, "/", nm, sub), c(if (is.function(meta)) meta(m) else meta, list(name = nm, dtype = dt),
                                                        extra, attr(m, "zv_meta")))
    blobs <- .Call(ffi_zv_rows_encode, matrix(as.numeric(m[idx, , drop = FALSE]), ncol = C), dt, breaks)
    for (k in seq_along(keys)) zv_write_blob(g, keys[k], blobs[[k]], "shuffle", zv_type_size(dt))
  }
}

# ---- writing ------------------------------------------------------------------

#' Write a Zarr Vectors store
#'
#' Writes points, a graph (vertices and edges) or a triangle mesh (vertices
#' and faces) as a Zarr Vectors store: vertices are sorted into chunks of
#' `chunk_shape` and, inside a chunk, by object; each chunk gets its vertex
#' blob, its fragment index (one range fragment per object in the chunk),
#' its links with their fragment index, and its vertex attributes. Links
#' whose endpoints lie in different chunks become cross-chunk link records.
#' Objects get manifests in the object index. A coarser level 1 holds, per
#' object, the centroid of the vertices in each bin of twice the base bin
#' shape (with the mean of the numeric attributes), and the links between
#' them: each link's ends moved to their centroids, without the links that
#' collapse to one vertex and without repeats. Levels are numbered from 0
#' (see `$levels` in [zarr-vectors]).
#'
#' The store is always Zarr v3, whatever `options(zarr.format)` says: the
#' ZV specification is defined on Zarr v3 only.
#'
#' @param location A directory path (or a store) for the new store.
#' @param vertices A numeric matrix, one row per vertex and one column per
#'   spatial dimension.
#' @param chunk_shape The size of a chunk in each dimension, in the units of
#'   the vertices (a box of space, not a number of points); required.
#' @param attributes Optional data frame (or matrix) of vertex attributes,
#'   one row per vertex; numeric, integer, logical or factor columns, or
#'   numeric matrix columns for attributes of several channels (their column
#'   names become the `channel_names`). The same holds for the other
#'   attribute tables.
#' @param links Optional integer matrix of 1, 2 (edges) or 3 (triangles)
#'   columns of vertex row numbers (from 1).
#' @param objects Optional object id (from 0) of each vertex; by default
#'   every vertex belongs to object 0 when there are links, and there is no
#'   object index for a plain point cloud.
#' @param object_attributes Optional data frame, one row per object.
#' @param groups Optional list of integer vectors of object ids.
#' @param geometry The geometry type: "point_cloud", "graph" or "mesh";
#'   by default from the width of `links`.
#' @param axes Names of the dimensions.
#' @param dtype Element type of the positions: "float32" (default, half the
#'   size, what the reference implementation writes) or "float64". float32
#'   keeps about 7 significant digits, so positions far from the origin
#'   compared to their chunk size lose detail: georeferenced coordinates
#'   such as 4500000.37 m are stored to the nearest 0.5 m. When rounding
#'   to float32 moves a position by more than 1e-5 of its chunk size, a
#'   warning of class `zarr_warning_precision` says so; give "float64"
#'   (or subtract an offset from the positions) to keep the detail.
#' @param bin_shape The base bin shape (of level 0) in each dimension;
#'   level 1 uses bins twice as large. `NULL` (default) for a quarter of the
#'   chunk shape.
#' @param levels 1 (full resolution only) or 2 (with the coarser level).
#' @param level_links Whether to write, with two levels, the links from each
#'   vertex of level 0 to the vertex of level 1 it was merged into
#'   (`links/+1`, read by `$level_links()`).
#' @param link_attributes Optional data frame, one row per row of `links`
#'   (level 0 only).
#' @param fragment_attributes Optional data frame, one row per object: each
#'   fragment (the part of an object in one chunk) gets its object's values.
#' @param group_attributes Optional data frame, one row per element of
#'   `groups`.
#' @return The store opened, a `zarr_vectors_store` (see [zarr-vectors]).
#' @seealso [zarr-vectors]
#' @examples
#' # a triangle mesh over a 10 x 10 grid of vertices, at two resolutions
#' xy <- as.matrix(expand.grid(x = 0:9, y = 0:9)) * 10
#' xyz <- cbind(xy, z = sqrt(xy[, "x"] * xy[, "y"]))
#' v <- function(i, j) j * 10 + i + 1 # the row of vertex (i, j)
#' cells <- expand.grid(i = 0:8, j = 0:8)
#' tri <- with(cells, rbind(cbind(v(i, j), v(i + 1, j), v(i, j + 1)),
#'                          cbind(v(i + 1, j), v(i + 1, j + 1), v(i, j + 1))))
#' path <- tempfile(fileext = ".zarr")
#' zv <- write_zarr_vectors(path, xyz, chunk_shape = c(50, 50, 50), links = tri, levels = 2,
#'                          attributes = data.frame(height = xyz[, "z"]))
#' zv$levels
#' part <- zv$read_box(c(0, 0, 0), c(45, 45, 100))
#' head(part$vertices)
#' head(part$links)
#' unlink(path, recursive = TRUE)
#' @export
write_zarr_vectors <- function(location, vertices, chunk_shape, attributes = NULL, links = NULL,
                               objects = NULL, object_attributes = NULL, groups = NULL,
                               geometry = NULL, axes = NULL, dtype = "float32", bin_shape = NULL,
                               levels = 2L, level_links = FALSE, link_attributes = NULL,
                               fragment_attributes = NULL, group_attributes = NULL) {
  if (!is.matrix(vertices) || !is.numeric(vertices) || !nrow(vertices) || anyNA(vertices) || any(!is.finite(vertices)))
    zarr_abort("argument", "vertices must be a numeric matrix of finite values, one row per vertex")
  storage.mode(vertices) <- "double"
  d <- ncol(vertices)
  n <- nrow(vertices)
  if (missing(chunk_shape))
    zarr_abort("argument", sprintf(
      "chunk_shape is needed: the extent of a spatial chunk along each of the %d coordinates, in their units, e.g. chunk_shape = c(%s)",
      d, paste(rep(100, d), collapse = ", ")))
  chunk_shape <- as.numeric(chunk_shape)
  if (length(chunk_shape) != d || any(!is.finite(chunk_shape) | chunk_shape <= 0))
    zarr_abort("argument", "chunk_shape needs one positive size per column of vertices")
  if (!dtype %in% c("float32", "float64")) zarr_abort("argument", "dtype must be \"float32\" or \"float64\"")
  if (dtype == "float32") zv_check_float32(vertices, chunk_shape)
  axes <- axes %||% c("x", "y", "z", "t")[seq_len(d)] %||% paste0("dim", seq_len(d))
  if (length(axes) != d || anyNA(axes)) axes <- paste0("dim", seq_len(d))
  attributes <- zv_columns(attributes, "attributes")
  if (any(vapply(attributes, nrow, 0) != n)) zarr_abort("argument", "attributes need one row per vertex")
  if (!is.null(links)) {
    links <- as.matrix(links)
    if (!is.numeric(links) || !ncol(links) %in% 1:3 || anyNA(links) || any(links < 1 | links > n | links != floor(links)))
      zarr_abort("argument", "links must be a matrix of 1 to 3 columns of vertex rows (1 to the number of vertices)")
    storage.mode(links) <- "integer"
  }
  link_attributes <- zv_columns(link_attributes, "link_attributes")
  if (length(link_attributes) && (is.null(links) || any(vapply(link_attributes, nrow, 0) != nrow(links))))
    zarr_abort("argument", "link_attributes need one row per link")
  if (is.null(objects) && (!is.null(links) || !is.null(object_attributes) || !is.null(groups) ||
                           !is.null(fragment_attributes))) objects <- integer(n)
  if (!is.null(objects)) {
    objects <- as.numeric(objects)
    if (length(objects) != n || anyNA(objects) || any(objects < 0 | objects != floor(objects)))
      zarr_abort("argument", "objects must give a whole non-negative object id per vertex")
  }
  nobj <- if (is.null(objects)) 0 else max(objects) + 1
  object_attributes <- zv_columns(object_attributes, "object_attributes")
  fragment_attributes <- zv_columns(fragment_attributes, "fragment_attributes")
  if (any(vapply(c(object_attributes, fragment_attributes), nrow, 0) != nobj))
    zarr_abort("argument", "object_attributes and fragment_attributes need one row per object")
  group_attributes <- zv_columns(group_attributes, "group_attributes")
  if (any(vapply(group_attributes, nrow, 0) != length(groups)))
    zarr_abort("argument", "group_attributes need one row per group")
  geometry <- geometry %||% if (is.null(links)) "point_cloud" else c("skeleton", "graph", "mesh")[ncol(links)]
  bin_shape <- as.numeric(bin_shape %||% (chunk_shape / 4))
  levels <- as.integer(levels)
  if (!levels %in% 1:2) zarr_abort("argument", "levels must be 1 or 2")

  # the ZV specification is defined on Zarr v3 only, whatever zarr.format says
  old <- options(zarr.format = 3L)
  on.exit(options(old), add = TRUE)
  z <- create_zarr(location)
  root <- z$root
  lvl <- root$add_group("0")
  at0 <- zv_write_level(lvl, vertices, attributes, links, objects, nobj, chunk_shape, dtype, fragment_attributes,
                        link_attributes)
  n0 <- nrow(vertices)
  zv_write_objects_extra(lvl, object_attributes, groups, group_attributes)
  lvl$set_attribute("zarr_vectors_level", list(
    level = 0L, vertex_count = n0, bin_shape = as.list(bin_shape), bin_ratio = as.list(rep(1L, d)),
    object_sparsity = 1, coarsening_method = "none", parent_level = NULL,
    arrays_present = as.list(zv_arrays_present(lvl))))
  datasets <- list(list(path = "0", coordinateTransformations = list(
    list(type = "scale", scale = as.list(rep(1, d))), list(type = "translation", translation = as.list(bin_shape / 2)))))
  if (levels == 2L) {
    coarse <- zv_coarsen(vertices, attributes, objects, 2 * bin_shape)
    lvl1 <- root$add_group("1")
    at1 <- zv_write_level(lvl1, coarse$vertices, coarse$attributes, zv_coarse_links(links, coarse$parent),
                          coarse$objects, nobj, chunk_shape, dtype, fragment_attributes)
    n1 <- nrow(coarse$vertices)
    if (isTRUE(level_links)) zv_write_level_links(lvl, at0, at1, coarse$parent)
    lvl1$set_attribute("zarr_vectors_level", list(
      level = 1L, vertex_count = n1, bin_shape = as.list(2 * bin_shape), bin_ratio = as.list(rep(2L, d)),
      object_sparsity = 1, coarsening_method = "grid_centroid", parent_level = 0L,
      arrays_present = as.list(zv_arrays_present(lvl1))))
    datasets[[2L]] <- list(path = "1", coordinateTransformations = list(
      list(type = "scale", scale = as.list(rep(2, d))), list(type = "translation", translation = as.list(bin_shape))))
  }
  root$set_attribute("multiscales", list(list(
    axes = lapply(axes, function(a) list(name = a, type = "space")), datasets = datasets)))
  root$set_attribute("zarr_vectors", list(
    zv_version = zv_format_version, chunk_shape = as.list(chunk_shape),
    bounds = list(as.list(apply(vertices, 2L, min)), as.list(apply(vertices, 2L, max))),
    geometry_types = list(geometry), crs = NULL,
    links_convention = "explicit", object_index_convention = "standard",
    cross_chunk_strategy = "explicit_links", cross_level_depth = if (level_links && levels == 2L) 1L else 0L,
    cross_level_storage = if (level_links && levels == 2L) "explicit" else "none",
    reduction_factor = 2L, base_bin_shape = as.list(bin_shape),
    format_capabilities = as.list(c("fragment_index", if (level_links && levels == 2L) "multiscale_links"))))
  open_zarr(location)$root
}

# float32 keeps about 7 significant digits: positions far from the origin
# compared to their chunks (georeferenced metres such as 4.5e6) lose their
# detail (0.25 m there). Warn when rounding moves a position by more than a
# hundred-thousandth of its chunk, so that the loss is never silent.
zv_check_float32 <- function(vertices, chunk_shape) {
  v <- as.vector(vertices)
  err <- abs(readBin(writeBin(v, raw(), size = 4L), "double", length(v), size = 4L) - v)
  err <- matrix(err, ncol = ncol(vertices))
  worst <- apply(err, 2L, max) / chunk_shape
  if (any(worst > 1e-5)) {
    j <- which.max(worst)
    zarr_warn("precision", sprintf(paste0(
      "float32 positions lose precision: column %d moves by up to %s (%.2g of a chunk); ",
      "give dtype = \"float64\" to keep it, or subtract an offset from the positions"),
      j, format(max(err[, j]), digits = 3), worst[j]))
  }
  invisible()
}

zv_arrays_present <- function(lvl) {
  kids <- setdiff(lvl$store$list_dir(paste0(lvl$prefix)), node_documents)
  sort(kids)
}

# Per object, the centroid of its vertices in each bin (and the mean of the
# attributes): one vertex per occupied (bin, object).
zv_coarsen <- function(vertices, attributes, objects, bin) {
  n <- nrow(vertices)
  cell <- floor(vertices / rep(bin, each = n))
  key <- do.call(paste, c(as.data.frame(cell), list(if (is.null(objects)) 0 else objects), sep = "\r"))
  g <- match(key, unique(key))
  cnt <- tabulate(g)
  v <- rowsum(vertices, g, reorder = FALSE) / cnt
  dimnames(v) <- NULL
  # the mean of each attribute (integers become doubles); of categories
  # (factors, logicals) the most frequent, which keeps their type
  att <- lapply(attributes, function(m) {
    if (zv_categorical(m)) {
      a <- vapply(seq_len(ncol(m)), function(j) zv_mode(m[, j], g, length(cnt)), numeric(length(cnt)))
      a <- matrix(a, ncol = ncol(m), dimnames = list(NULL, colnames(m)))
      attr(a, "zv_meta") <- attr(m, "zv_meta")
      attr(a, "zv_dtype") <- attr(m, "zv_dtype")
      return(a)
    }
    a <- rowsum(m * 1, g, reorder = FALSE) / cnt
    dimnames(a) <- list(NULL, colnames(m))
    attr(a, "zv_dtype") <- "float64"
    a
  })
  obj <- if (!is.null(objects)) objects[!duplicated(g)]
  list(vertices = v, attributes = att, objects = obj, parent = g)
}

# The links of a coarser level: each end moved to the vertex it was merged
# into; links that collapse (two ends on one vertex) and repeats are dropped.
zv_coarse_links <- function(links, parent) {
  if (is.null(links)) return(NULL)
  m <- matrix(parent[links], ncol = ncol(links))
  if (ncol(m) == 1L) return(unique(m))
  # each row's ends in increasing order, without sorting row by row
  lo <- do.call(pmin, unname(as.data.frame(m)))
  hi <- do.call(pmax, unname(as.data.frame(m)))
  s <- if (ncol(m) == 2L) cbind(lo, hi) else cbind(lo, rowSums(m) - lo - hi, hi)
  keep <- rowSums(s[, -1L, drop = FALSE] == s[, -ncol(s), drop = FALSE]) == 0 & !duplicated(s)
  m[keep, , drop = FALSE]
}

# Write one level's chunked arrays; returns where each vertex went.
zv_write_level <- function(lvl, V, attributes, links, objects, nobj, cs, dtype, fragment_attributes = list(),
                           link_attributes = list()) {
  n <- nrow(V)
  d <- ncol(V)
  ck <- floor(V / rep(cs, each = n))
  obj <- if (is.null(objects)) numeric(n) else objects
  ord <- do.call(order, c(unname(as.data.frame(ck)), list(obj)))
  V <- V[ord, , drop = FALSE]
  ck <- ck[ord, , drop = FALSE]
  obj <- obj[ord]
  key <- zv_chunk_key(ck)
  first_row <- !duplicated(key)
  ukeys <- key[first_row]
  ucoords <- ck[first_row, , drop = FALSE]
  ci <- cumsum(first_row) # chunk of each (sorted) vertex
  nk <- length(ukeys)
  breaks <- c(0, cumsum(tabulate(ci, nk)))
  local <- seq_len(n) - 1 - breaks[ci]
  # fragments: runs of one object in one chunk, numbered from 0 in their chunk
  fstart <- first_row | c(TRUE, obj[-1L] != obj[-n])
  fid <- cumsum(fstart)                     # fragment of each vertex, over the level
  fchunk <- ci[fstart]
  ffirst <- match(seq_len(nk), fchunk)      # first fragment of each chunk
  fnum <- seq_along(fchunk) - ffirst[fchunk] # number inside the chunk
  fcount <- tabulate(fid, length(fchunk))
  flocal <- local[fstart]
  nfrag <- tabulate(fchunk, nk)

  vg <- zv_add_group(lvl, "vertices", list(zv_array = "vertices", dtype = dtype, encoding = "raw"))
  fg <- zv_add_group(lvl, "vertex_fragments", list(zv_array = "vertex_fragments", encoding = "fragment_index_v1"))
  blobs <- .Call(ffi_zv_rows_encode, V, dtype, breaks)
  esize <- if (dtype == "float32") 4L else 8L
  for (k in seq_len(nk)) {
    zv_write_blob(vg, ukeys[k], blobs[[k]], "shuffle", esize)
    fr <- ffirst[k] - 1L + seq_len(nfrag[k])
    zv_write_blob(fg, ukeys[k], .Call(ffi_zv_frag_encode, rep(TRUE, nfrag[k]), as.numeric(flocal[fr]),
                                      as.numeric(fcount[fr]), 0, numeric()))
  }
  rm(blobs)
  zv_write_attributes(lvl, "vertex_attributes", attributes, ord, breaks, ukeys, list(zv_array = "attribute", shape = list(n)))
  # per fragment, its object's values (fragments are the pieces of objects)
  zv_write_attributes(lvl, "fragment_attributes", fragment_attributes, obj[fstart] + 1, c(0, cumsum(nfrag)), ukeys,
                      list(zv_array = "fragment_attribute"))

  if (!is.null(links)) {
    L <- ncol(links)
    inv <- integer(n)
    inv[ord] <- seq_len(n)
    e <- matrix(inv[links], ncol = L)
    ce <- matrix(ci[e], ncol = L)
    intra <- rowSums(ce == ce[, 1L]) == L
    ie <- e[intra, , drop = FALSE]
    owner <- fid[ie[, 1L]]
    io <- order(owner)
    ie <- ie[io, , drop = FALSE]
    owner <- owner[io]
    lchunk <- ci[ie[, 1L]]
    lbreaks <- c(0, cumsum(tabulate(lchunk, nk)))
    lblobs <- .Call(ffi_zv_rows_encode, matrix(as.numeric(local[ie]), ncol = L), "int64", lbreaks)
    lcount <- tabulate(owner, length(fchunk)) # link rows per fragment
    lg <- zv_add_group(lvl, "links/0", list(zv_array = "links", level_delta = 0L, link_width = L,
                                            num_links = nrow(ie), dtype = "int64"))
    lfg <- zv_add_group(lvl, "link_fragments", list(zv_array = "link_fragments", encoding = "fragment_index_v1"))
    zv_write_attributes(lvl, "link_attributes", link_attributes, which(intra)[io], lbreaks, ukeys,
                        list(zv_array = "link_attribute", level_delta = 0L), "/0")
    for (k in seq_len(nk)) {
      zv_write_blob(lg, ukeys[k], lblobs[[k]], "bitshuffle", 8L)
      fr <- ffirst[k] - 1L + seq_len(nfrag[k])
      cnt <- lcount[fr]
      zv_write_blob(lfg, ukeys[k], .Call(ffi_zv_frag_encode, rep(TRUE, nfrag[k]), as.numeric(c(0, cumsum(cnt))[seq_along(cnt)]),
                                         as.numeric(cnt), 0, numeric()))
    }
    xe <- e[!intra, , drop = FALSE]
    if (nrow(xe)) {
      rec <- do.call(cbind, lapply(seq_len(L), function(j) cbind(ck[xe[, j], , drop = FALSE], local[xe[, j]])))
      storage.mode(rec) <- "double"
      blob <- .Call(ffi_zv_rows_encode, rec, "int64", c(0, nrow(rec)))[[1L]]
      cg <- zv_add_group(lvl, "cross_chunk_links/0", list(zv_array = "cross_chunk_links", level_delta = 0L,
                                                          link_width = L, num_links = nrow(xe), sid_ndim = d))
      zv_write_blob(cg, "data", blob)
      zv_write_attributes(lvl, "cross_chunk_link_attributes", link_attributes, which(!intra), c(0, nrow(xe)), "data",
                          list(zv_array = "cross_chunk_link_attribute", level_delta = 0L, num_links = nrow(xe)), "/0")
    }
  }

  if (nobj > 0) {
    mo <- order(obj[fstart], fchunk)
    enc <- .Call(ffi_zv_manifest_encode, as.numeric(obj[fstart][mo]), ucoords[fchunk[mo], , drop = FALSE] * 1,
                 as.numeric(fnum[mo]), nobj)
    og <- zv_add_group(lvl, "object_index", list(zv_array = "object_index", num_objects = nobj, sid_ndim = d,
                                                 layout = "data_offsets"))
    zv_write_blob(og, "data", enc$data)
    zv_write_blob(og, "offsets", .Call(ffi_zv_rows_encode, matrix(enc$starts, ncol = 1L), "int64", c(0, nobj))[[1L]])
  }
  # where each vertex (in the order given) went: its chunk and row
  inv <- integer(n)
  inv[ord] <- seq_len(n)
  list(chunk = ck[inv, , drop = FALSE], key = key[inv], row = local[inv])
}

# Links from each vertex of a level to the coarser vertex it was merged into
# (links/+1, link_width 2): per chunk of the finer level, records of
# (chunk coordinates, row) for both ends, the first at the finer level.
zv_write_level_links <- function(lvl, fine, coarse, parent) {
  d <- ncol(fine$chunk)
  rec <- cbind(fine$chunk, fine$row, coarse$chunk[parent, , drop = FALSE], coarse$row[parent])
  storage.mode(rec) <- "double"
  o <- order(match(fine$key, unique(fine$key)), fine$row)
  keys <- fine$key[o]
  rec <- rec[o, , drop = FALSE]
  first <- !duplicated(keys)
  breaks <- c(which(first) - 1, length(keys))
  blobs <- .Call(ffi_zv_rows_encode, rec, "int64", breaks)
  g <- zv_add_group(lvl, "links/+1", list(zv_array = "links", level_delta = 1L, link_width = 2L,
                                          num_links = nrow(rec), dtype = "int64", sid_ndim = d))
  for (k in seq_along(blobs)) zv_write_blob(g, keys[first][k], blobs[[k]], "bitshuffle", 8L)
}

zv_write_objects_extra <- function(lvl, object_attributes, groups, group_attributes = list()) {
  # dense tables, one row per object or group
  dense <- function(kind) function(m) list(zv_array = kind, num_channels = ncol(m), shape = zv_shape(m))
  nobj <- if (length(object_attributes)) nrow(object_attributes[[1L]]) else 0
  zv_write_attributes(lvl, "object_attributes", object_attributes, seq_len(nobj), c(0, nobj), "data", dense("object_attribute"))
  ng <- length(groups)
  zv_write_attributes(lvl, "group_attributes", group_attributes, seq_len(ng), c(0, ng), "data", dense("groupings_attribute"))
  if (length(groups)) {
    ids <- as.numeric(unlist(groups))
    starts <- c(0, cumsum(lengths(groups)))[seq_along(groups)] * 8
    g <- zv_add_group(lvl, "groups", list(zv_array = "groups", num_groups = length(groups)))
    zv_write_blob(g, "data", .Call(ffi_zv_rows_encode, matrix(ids, ncol = 1L), "int64", c(0, length(ids)))[[1L]])
    zv_write_blob(g, "offsets", .Call(ffi_zv_rows_encode, matrix(starts, ncol = 1L), "int64", c(0, length(starts)))[[1L]])
  }
}

# ---- reading ------------------------------------------------------------------

zarr_vectors_store <- R6::R6Class("zarr_vectors_store",
  inherit = zarr_group,
  cloneable = FALSE,
  private = list(
    .cache = NULL,
    print_details = function() {
      i <- self$info
      cat("Zarr Vectors:", paste(unlist(i$geometry_types), collapse = ", "), " version", format(i$zv_version %||% "?"),
          "\nChunk shape :", paste(unlist(i$chunk_shape), collapse = " x "),
          "\nLevels      :", paste(private$level_table()$path, collapse = ", "), "\n")
    },
    display_attributes = function() {
      a <- private$.metadata[["attributes"]]
      a[!names(a) %in% c("zarr_vectors", "multiscales")]
    },
    # the level numbers and paths, from the multiscale or else the level groups
    level_table = function() {
      ms <- private$.metadata[["attributes"]][["multiscales"]]
      ds <- if (is.list(ms) && length(ms)) ms[[1L]]$datasets
      paths <- if (length(ds)) vapply(ds, function(x) as.character(x$path %||% NA)[1L], "") else
        sort(grep("^[0-9]+$", private$list_dir(""), value = TRUE))
      data.frame(level = seq_along(paths) - 1L, path = paths, stringsAsFactors = FALSE)
    },
    level_path = function(level) {
      lv <- private$level_table()
      p <- as.character(level)
      if (!p %in% lv$path) zv_error(sprintf("there is no level '%s'", p), self$path)
      p
    },
    ndim = function() length(unlist(self$info$chunk_shape)),
    # attributes of a ZV array group, NULL when there is none
    array_attributes = function(path) {
      g <- self$get_node(path)
      if (is.null(g)) NULL else g$attributes
    },
    list_dir = function(path) {
      kids <- tryCatch(self$store$list_dir(paste0(self$prefix, path, "/")), zarr_error = function(e) character())
      setdiff(kids, node_documents)
    },
    # Vertices (and attributes) of chunks `keys` of a level: the decoded rows
    # one chunk after the other, with the row count of each chunk.
    read_vertices = function(lv, keys) {
      va <- private$array_attributes(paste0(lv, "/vertices"))
      if (is.null(va)) zv_error(sprintf("level '%s' has no vertices", lv), self$path)
      d <- private$ndim()
      blobs <- zv_blobs(self, paste0(lv, "/vertices"), keys)
      if (any(gone <- vapply(blobs, is.null, TRUE)))
        zv_error(sprintf("chunk '%s' has no vertices", keys[which(gone)[1L]]), paste0(lv, "/vertices"))
      # the coordinates, then each row's chunk and row within it
      X <- zv_rows(blobs, va$dtype %||% "float32", d, paste0(self$path, lv, "/vertices"), columns = 2L)
      rows <- attr(X, "rows")
      total <- sum(rows)
      # the decoded columns become the data frame as they are
      df <- structure(X[seq_len(d)], names = self$axes, class = "data.frame", row.names = c(NA_integer_, -total))
      va <- private$read_columns(paste0(lv, "/vertex_attributes"), keys)
      if (length(va) && !identical(as.numeric(attr(va, "rows")), as.numeric(rows)))
        zv_error("vertex attributes are not row-aligned with the vertices", paste0(self$path, lv, "/vertex_attributes"))
      for (nm in names(va)) df[[nm]] <- va[[nm]]
      df$chunk <- structure(X[[d + 1L]], levels = keys, class = "factor")
      df$row <- X[[d + 2L]]
      list(vertices = df, rows = rows, offsets = c(0, cumsum(rows)))
    },
    # The attribute columns under `dir` (<dir>/<name><sub>/<key> for each of
    # `keys`): a named list of vectors, or matrices of their channels, with
    # attribute "rows" (rows per key, equal for every column).
    read_columns = function(dir, keys, sub = "") {
      nms <- private$list_dir(dir)
      order_names <- self$get_node(dir)
      order_names <- if (inherits(order_names, "zarr_group")) unlist(order_names$attributes$names)
      nms <- c(intersect(order_names, nms), setdiff(nms, order_names))
      rows <- NULL
      cols <- lapply(nms, function(nm) {
        path <- paste0(dir, "/", nm, sub)
        aa <- private$array_attributes(path)
        if (is.null(aa)) zv_error("an attribute has no array group", paste0(self$path, path))
        C <- if (length(aa$channel_names)) length(aa$channel_names) else zv_int(aa$num_channels %||% 1L)
        if (length(C) != 1L || is.na(C) || C < 1L) zv_error("bad channel count", paste0(self$path, path))
        A <- zv_rows(lapply(zv_blobs(self, path, keys), function(b) b %||% raw()), aa$dtype %||% "float32", C, path)
        r <- as.numeric(attr(A, "rows"))
        if (is.null(rows)) rows <<- r
        else if (!identical(r, rows)) zv_error(sprintf("attribute '%s' is not row-aligned with the others", nm), paste0(self$path, path))
        attr(A, "rows") <- NULL
        if (C > 1L) colnames(A) <- unlist(aa$channel_names) %||% paste0("ch", seq_len(C) - 1L)
        zv_decode_column(if (C == 1L) A[, 1L] else A, aa, paste0(self$path, path))
      })
      names(cols) <- nms
      structure(cols, rows = rows %||% numeric(length(keys)))
    },
    # a data frame of columns read by read_columns() (matrix columns kept whole)
    frame = function(cols, n) {
      df <- structure(list(), names = character(), class = "data.frame", row.names = c(NA_integer_, -n))
      for (nm in names(cols)) df[[nm]] <- cols[[nm]]
      df
    },
    # Links of chunks `keys` (intra-chunk and cross-chunk) as 1-based rows of
    # the vertices read by read_vertices().
    read_links = function(lv, keys, got) {
      la <- private$array_attributes(paste0(lv, "/links/0"))
      ca <- private$array_attributes(paste0(lv, "/cross_chunk_links/0"))
      seq_links <- is.null(la) && private$sequential()
      if (is.null(la) && is.null(ca) && !seq_links) return(NULL)
      L <- if (seq_links) 2L else zv_int((la %||% ca)$link_width)
      if (length(L) != 1L || !L %in% 1:3) zv_error("link_width must be 1, 2 or 3", paste0(self$path, lv, "/links/0"))
      out <- matrix(integer(), 0, L)
      if (seq_links) out <- private$sequential_links(lv, keys, got)
      if (!is.null(la)) {
        lb <- lapply(zv_blobs(self, paste0(lv, "/links/0"), keys), function(b) b %||% raw())
        M <- zv_rows(lb, "int64", L, paste0(lv, "/links/0"))
        nl <- attr(M, "rows")
        owner <- rep(seq_along(keys), nl)
        if (any(M < 0 | M >= got$rows[owner]))
          zv_error("a link names a vertex outside its chunk", paste0(self$path, lv, "/links/0"))
        out <- M + got$offsets[owner] + 1
      }
      rec <- private$records(paste0(lv, "/cross_chunk_links/0"), "data")
      if (!is.null(rec)) {
        if (ncol(rec$rows) != L) zv_error("links/0 and cross_chunk_links/0 differ in link_width", paste0(self$path, lv))
        G <- vapply(seq_len(L), function(j) {
          kj <- match(zv_chunk_key(rec$coords[[j]]), keys)
          loc <- rec$rows[, j]
          if (any(!is.na(kj) & (loc < 0 | loc >= got$rows[kj])))
            zv_error("a cross-chunk link names a vertex outside its chunk", paste0(self$path, lv, "/cross_chunk_links/0"))
          got$offsets[kj] + loc + 1
        }, numeric(nrow(rec$rows)))
        G <- matrix(G, ncol = L)
        out <- rbind(out, G[stats::complete.cases(G), , drop = FALSE])
      }
      storage.mode(out) <- "integer"
      out
    },
    # The identity object-index convention: one object per vertex, object k
    # the vertex of row k, in a store of one chunk; no object_index array.
    identity_objects = function(lv, ids, level) {
      keys <- rownames(self$chunks(level))
      if (length(keys) > 1L)
        zv_error("the identity object index is only valid in a store of one chunk", paste0(self$path, lv))
      got <- private$read_vertices(lv, keys)
      ids <- as.numeric(ids)
      if (anyNA(ids) || any(ids < 0 | ids >= nrow(got$vertices) | ids != floor(ids)))
        zarr_abort("argument", sprintf("object ids run from 0 to %d here", nrow(got$vertices) - 1L))
      rows <- ids + 1
      v <- got$vertices[rows, , drop = FALSE]
      v$object <- as.integer(ids)
      rownames(v) <- NULL
      links <- private$read_links(lv, keys, got)
      if (!is.null(links)) { # the links between the objects asked for
        links <- matrix(match(links, rows), ncol = ncol(links))
        links <- links[stats::complete.cases(links), , drop = FALSE]
      }
      list(vertices = v, links = links)
    },
    # The implicit_sequential links convention: a line's vertices are linked
    # in their order, no links array (not for point clouds, which the
    # reference also marks so).
    sequential = function() {
      i <- self$info
      identical(i$links_convention, "implicit_sequential") &&
        any(unlist(i$geometry_types) %in% c("line", "polyline", "streamline"))
    },
    # Each fragment's consecutive rows linked: as rows of the vertices read.
    sequential_links = function(lv, keys, got) {
      fb <- zv_blobs(self, paste0(lv, "/vertex_fragments"), keys)
      parts <- lapply(seq_along(keys), function(k) {
        if (is.null(fb[[k]])) zv_error(sprintf("chunk '%s' has no fragment index", keys[k]), paste0(self$path, lv, "/vertex_fragments"))
        fi <- zv_frag(fb[[k]], got$rows[k], paste0(self$path, lv, "/vertex_fragments/", keys[k]))
        r <- fi$rows
        if (length(r) < 2L) return(matrix(0, 0, 2))
        f <- rep.int(seq_along(fi$is_range), diff(fi$offsets))
        same <- f[-1L] == f[-length(f)]
        cbind(r[-length(r)], r[-1L])[same, , drop = FALSE] + got$offsets[k] + 1
      })
      do.call(rbind, c(list(matrix(0, 0, 2)), parts))
    },
    # Link records (link_width endpoints, each chunk coordinates and a row)
    # of the blobs `keys` under `path` (all of them when NULL): cross-chunk
    # links (one "data" blob) and cross-level links (one blob per chunk).
    records = function(path, keys) {
      la <- private$array_attributes(path)
      if (is.null(la)) return(NULL)
      d <- private$ndim()
      L <- zv_int(la$link_width)
      if (length(L) != 1L || !L %in% 1:3) zv_error("link_width must be 1, 2 or 3", paste0(self$path, path))
      keys <- keys %||% private$list_dir(path)
      R <- zv_rows(lapply(zv_blobs(self, path, keys), function(b) b %||% raw()), "int64", L * (d + 1L), path)
      if (!is.null(la$num_links) && nrow(R) != la$num_links)
        zv_error(sprintf("%d link records, but num_links says %s", nrow(R), format(la$num_links)), paste0(self$path, path))
      list(coords = lapply(seq_len(L), function(j) R[, (j - 1L) * (d + 1L) + seq_len(d), drop = FALSE]),
           rows = R[, (seq_len(L) - 1L) * (d + 1L) + d + 1L, drop = FALSE])
    },
    # The rows of the blob `key` of vertices (or links/0), from its array's
    # shape (metadata only), NA when unknown: the rows its fragment index
    # may name.
    blob_rows = function(lv, links, key) {
      arr <- if (links) "/links/0" else "/vertices"
      aa <- private$array_attributes(paste0(lv, arr))
      size <- if (links) 8 * zv_int(aa$link_width) else
        zv_type_size(aa$dtype %||% "float32") * private$ndim()
      a <- tryCatch(self$get_node(paste0(lv, arr, "/", key)), zarr_error = function(e) NULL)
      if (!inherits(a, "zarr_array") || length(a$shape) != 1L || !length(size) || is.na(size) || size <= 0)
        return(NA_real_)
      floor(as.numeric(a$shape) / size)
    },
    index_blobs = function(lv) {
      ck <- paste0("oi", lv)
      if (is.null(private$.cache[[ck]])) {
        data <- zv_blob(self, paste0(lv, "/object_index/data"))
        if (!is.null(data)) {
          off <- zv_rows(list(zv_blob(self, paste0(lv, "/object_index/offsets")) %||% raw()), "int64", 1L,
                         paste0(lv, "/object_index/offsets"))[, 1L]
        } else {
          # the newer reference layout: one variable-length bytes element
          # (a manifest) per object
          m <- self$get_node(paste0(lv, "/object_index/manifests"))
          if (is.null(m)) zv_error(sprintf("level '%s' has no object index", lv), self$path)
          man <- m$read(fill_as_na = FALSE)
          if (!is.list(man) || !all(vapply(man, is.raw, TRUE)))
            zv_error("object_index/manifests must hold variable-length bytes", paste0(self$path, lv, "/object_index"))
          data <- unlist(man, use.names = FALSE) %||% raw()
          off <- c(0, cumsum(as.numeric(lengths(man))))[seq_along(man)]
        }
        private$.cache[[ck]] <- list(data = data, starts = off)
      }
      private$.cache[[ck]]
    }
  ),
  public = list(
    # called by the domain, with what zarr_group$new() takes
    initialize = function(name, metadata, parent) {
      super$initialize(name, metadata, parent)
      private$.domain <- "Zarr Vectors"
      private$.cache <- list()
    },
    level_metadata = function(level = 0) {
      g <- self$get_node(private$level_path(level))
      g$attributes[["zarr_vectors_level"]]
    },
    chunks = function(level = 0) {
      lv <- private$level_path(level)
      keys <- sort(private$list_dir(paste0(lv, "/vertices")))
      d <- private$ndim()
      parts <- strsplit(keys, ".", fixed = TRUE)
      if (any(lengths(parts) != d)) zv_error("a chunk key does not have one number per dimension", paste0(lv, "/vertices"))
      m <- matrix(as.numeric(unlist(parts)), ncol = d, byrow = TRUE, dimnames = list(keys, self$axes))
      if (anyNA(m)) zv_error("a chunk key is not made of numbers", paste0(lv, "/vertices"))
      m
    },
    read_chunk = function(chunk, level = 0) {
      key <- if (is.character(chunk)) chunk else paste(format(chunk, scientific = FALSE, trim = TRUE), collapse = ".")
      lv <- private$level_path(level)
      got <- private$read_vertices(lv, key)
      list(vertices = got$vertices, links = private$read_links(lv, key, got))
    },
    read_level = function(level = 0) {
      lv <- private$level_path(level)
      keys <- rownames(self$chunks(level))
      got <- private$read_vertices(lv, keys)
      list(vertices = got$vertices, links = private$read_links(lv, keys, got))
    },
    read_box = function(lower, upper, level = 0) {
      d <- private$ndim()
      lower <- as.numeric(lower)
      upper <- as.numeric(upper)
      if (length(lower) != d || length(upper) != d || anyNA(c(lower, upper)) || any(lower > upper))
        zarr_abort("argument", "a box needs lower <= upper, one number per dimension")
      lv <- private$level_path(level)
      cs <- as.numeric(unlist(self$level_metadata(level)$chunk_shape %||% self$info$chunk_shape))
      ch <- self$chunks(level)
      inside <- rowSums(ch >= rep(floor(lower / cs), each = nrow(ch)) & ch <= rep(floor(upper / cs), each = nrow(ch))) == d
      keys <- rownames(ch)[inside]
      got <- private$read_vertices(lv, keys)
      X <- as.matrix(got$vertices[self$axes])
      keep <- rowSums(X >= rep(lower, each = nrow(X)) & X <= rep(upper, each = nrow(X))) == d
      links <- private$read_links(lv, keys, got)
      pos <- cumsum(keep)
      pos[!keep] <- NA
      v <- got$vertices[keep, , drop = FALSE]
      rownames(v) <- NULL
      if (!is.null(links)) {
        links[] <- pos[links]
        links <- links[stats::complete.cases(links), , drop = FALSE]
      }
      list(vertices = v, links = links)
    },
    manifests = function(ids, level = 0) {
      lv <- private$level_path(level)
      ob <- private$index_blobs(lv)
      m <- .Call(ffi_zv_manifests, ob$data, ob$starts, as.numeric(ids), private$ndim(), paste0(self$path, lv, "/object_index"),
                 max_decoded_bytes())
      colnames(m$coords) <- self$axes
      m
    },
    fragments = function(chunk, level = 0, links = FALSE) {
      lv <- private$level_path(level)
      key <- if (is.character(chunk)) chunk else paste(format(chunk, scientific = FALSE, trim = TRUE), collapse = ".")
      arr <- if (links) "link_fragments" else "vertex_fragments"
      blob <- zv_blob(self, paste0(lv, "/", arr, "/", key))
      if (is.null(blob)) zv_error(sprintf("chunk '%s' has no %s", key, arr), paste0(self$path, lv))
      zv_frag(blob, private$blob_rows(lv, links, key), paste0(self$path, lv, "/", arr, "/", key))
    },
    read_objects = function(ids, level = 0) {
      lv <- private$level_path(level)
      if (identical(self$info$object_index_convention, "identity")) return(private$identity_objects(lv, ids, level))
      m <- self$manifests(ids, level)
      keys <- zv_chunk_key(m$coords)
      ukeys <- unique(keys)
      got <- private$read_vertices(lv, ukeys)
      # the rows of the fragments each block names: counted against the
      # parse budget before they are made (a block of a few bytes names up
      # to 2^32 fragments, a fragment all rows of its chunk)
      budget <- max_decoded_bytes()
      row_bytes <- 8 * (ncol(got$vertices) + 1)
      total <- 0
      vrows <- vector("list", length(m$object))
      for (k in seq_along(ukeys)) {
        where <- paste0(self$path, lv, "/vertex_fragments/", ukeys[k])
        fi <- zv_frag(zv_blob(self, paste0(lv, "/vertex_fragments/", ukeys[k])) %||%
                        zv_error(sprintf("chunk '%s' has no fragment index", ukeys[k]), paste0(lv, "/vertex_fragments")),
                      got$rows[k], where)
        nf <- length(fi$is_range)
        for (b in which(keys == ukeys[k])) {
          if (m$mode[b] != 2L && m$first[b] + m$count[b] > nf || m$mode[b] == 2L && any(m$explicit[m$first[b] + seq_len(m$count[b])] >= nf))
            zv_error(sprintf("object %s names fragments of chunk '%s' beyond its %d", format(m$object[b]), ukeys[k], nf),
                     paste0(self$path, lv, "/object_index"))
          f <- if (m$mode[b] == 2L) m$explicit[m$first[b] + seq_len(m$count[b])] else m$first[b] + seq_len(m$count[b]) - 1
          total <- total + sum(fi$count[f + 1])
          if (total * row_bytes > budget)
            zv_error(sprintf("objects %s name %.0f vertex rows, more than the budget of %.0f bytes holds (option zarr.max_decoded_bytes)",
                             paste(format(utils::head(unique(m$object), 3L)), collapse = ", "), total, budget),
                     paste0(self$path, lv, "/object_index"))
          sel <- unlist(lapply(f, function(j) seq.int(fi$offsets[j + 1L] + 1, length.out = fi$offsets[j + 2L] - fi$offsets[j + 1L])))
          vrows[[b]] <- got$offsets[k] + fi$rows[sel] + 1
        }
      }
      rows <- unlist(vrows)
      obj <- rep(m$object, lengths(vrows))
      v <- got$vertices[rows, , drop = FALSE]
      v$object <- as.integer(obj)
      rownames(v) <- NULL
      links <- private$read_links(lv, ukeys, got)
      if (!is.null(links)) {
        # a vertex may belong to several objects: a link belongs to each
        # object that holds all of its endpoints
        key <- paste(rows, obj)
        links <- do.call(rbind, c(list(links[0, , drop = FALSE]), lapply(unique(obj), function(o) {
          lo <- matrix(match(paste(links, o), key), ncol = ncol(links))
          lo[stats::complete.cases(lo), , drop = FALSE]
        })))
        storage.mode(links) <- "integer"
      }
      list(vertices = v, links = links)
    },
    cross_chunk_links = function(level = 0, delta = 0)
      private$records(paste0(private$level_path(level), "/cross_chunk_links/", zv_delta(delta)), "data"),
    level_links = function(level = 0, delta = 1)
      private$records(paste0(private$level_path(level), "/links/", zv_delta(delta)), NULL),
    object_attributes = function(level = 0) {
      lv <- private$level_path(level)
      cols <- private$read_columns(paste0(lv, "/object_attributes"), "data")
      private$frame(cols, attr(cols, "rows")[1L])
    },
    group_attributes = function(level = 0) {
      lv <- private$level_path(level)
      cols <- private$read_columns(paste0(lv, "/group_attributes"), "data")
      private$frame(cols, attr(cols, "rows")[1L])
    },
    fragment_attributes = function(level = 0) {
      lv <- private$level_path(level)
      keys <- rownames(self$chunks(level))
      cols <- private$read_columns(paste0(lv, "/fragment_attributes"), keys)
      rows <- attr(cols, "rows")
      df <- data.frame(chunk = structure(rep.int(seq_along(keys), rows), levels = keys, class = "factor"),
                       fragment = sequence(rows) - 1L)
      for (nm in names(cols)) df[[nm]] <- cols[[nm]]
      df
    },
    link_attributes = function(level = 0) {
      lv <- private$level_path(level)
      keys <- rownames(self$chunks(level))
      intra <- private$read_columns(paste0(lv, "/link_attributes"), keys, "/0")
      cross <- private$read_columns(paste0(lv, "/cross_chunk_link_attributes"), "data", "/0")
      nms <- union(names(intra), names(cross))
      ni <- sum(attr(intra, "rows"))
      nc <- sum(attr(cross, "rows"))
      # the rows of read_level()$links: the links inside chunks, then across
      nl <- c(private$array_attributes(paste0(lv, "/links/0"))$num_links %||% ni,
              private$array_attributes(paste0(lv, "/cross_chunk_links/0"))$num_links %||% nc)
      if (length(nms) && !identical(as.numeric(nl), c(ni, nc)))
        zv_error("link attributes are not row-aligned with the links", paste0(self$path, lv, "/link_attributes"))
      cols <- lapply(nms, function(nm) {
        a <- intra[[nm]]
        b <- cross[[nm]]
        if (is.null(a) && ni > 0 || is.null(b) && nc > 0)
          zv_error(sprintf("link attribute '%s' misses links inside or across chunks", nm), paste0(self$path, lv))
        if (is.matrix(a) || is.matrix(b)) rbind(a, b) else c(a, b)
      })
      names(cols) <- nms
      private$frame(cols, ni + nc)
    },
    object_groups = function(level = 0) {
      lv <- private$level_path(level)
      data <- zv_blob(self, paste0(lv, "/groups/data"))
      if (is.null(data)) return(list())
      ids <- zv_rows(list(data), "int64", 1L, paste0(lv, "/groups/data"))[, 1L]
      off <- zv_rows(list(zv_blob(self, paste0(lv, "/groups/offsets")) %||% integer()), "int64", 1L, paste0(lv, "/groups/offsets"))[, 1L]
      if (any(off %% 8 != 0) || is.unsorted(off) || any(off < 0 | off > 8 * length(ids)))
        zv_error("group offsets must be increasing multiples of 8 inside the data", paste0(self$path, lv, "/groups"))
      ends <- c(off[-1L], 8 * length(ids)) / 8
      lapply(seq_along(off), function(i) ids[seq.int(off[i] / 8 + 1, length.out = ends[i] - off[i] / 8)])
    }
  ),
  active = list(
    info = function(value) private$.metadata[["attributes"]][["zarr_vectors"]],
    axes = function(value) {
      ms <- private$.metadata[["attributes"]][["multiscales"]]
      ax <- if (is.list(ms) && length(ms)) vapply(ms[[1L]]$axes %||% list(), function(a) as.character(a$name %||% a)[1L], "")
      d <- private$ndim()
      if (length(ax) != d) paste0("dim", seq_len(d)) else ax
    },
    levels = function(value) {
      out <- private$level_table()
      ax <- self$axes
      d <- length(ax)
      # numbers from metadata of any shape: NA where a level does not give d of them
      nums <- function(v) {
        v <- suppressWarnings(as.numeric(unlist(v)))
        stats::setNames(if (length(v) == d) v else rep(NA_real_, d), ax)
      }
      meta <- lapply(out$path, function(p) {
        m <- tryCatch(self$get_node(p)$attributes[["zarr_vectors_level"]], zarr_error = function(e) NULL)
        if (is.list(m)) m else list()
      })
      out$vertex_count <- vapply(meta, function(m) {
        v <- suppressWarnings(as.numeric(unlist(m$vertex_count)))
        if (length(v) == 1L) v else NA_real_
      }, 0)
      out$bin_shape <- I(lapply(meta, function(m) nums(m$bin_shape)))
      ms <- private$.metadata[["attributes"]][["multiscales"]]
      ds <- if (is.list(ms) && length(ms) && is.list(ms[[1L]])) ms[[1L]]$datasets
      out$scale <- I(lapply(out$path, function(p) {
        hit <- Filter(function(x) is.list(x) && identical(as.character(x$path %||% NA)[1L], p), ds %||% list())
        ct <- if (length(hit)) Filter(function(t) is.list(t) && identical(t$type, "scale"), hit[[1L]]$coordinateTransformations %||% list())
        if (length(ct)) nums(ct[[1L]]$scale) else nums(rep(1, d))
      }))
      class(out) <- c("zarr_levels", class(out))
      out
    }
  )
)
