# zarr_array$promote(): one more dimension, by renaming stored chunks.

# The stored chunk keys of an array (keys of other nodes and metadata
# documents are left out) and their grid coordinates, one row per key.
stored_chunk_keys <- function(store, prefix, enc, ndim) {
  keys <- store$list_prefix(prefix)
  rel <- substring(keys, nchar(prefix) + 1L)
  sep <- enc[["separator"]]
  lead <- if (enc[["name"]] == "v2") "" else paste0("c", if (ndim) sep)
  if (enc[["name"]] != "v2" && ndim == 0L) {
    ok <- rel == "c"
    return(list(keys = keys[ok], coords = matrix(0, sum(ok), 0L)))
  }
  ok <- startsWith(rel, lead)
  parts <- strsplit(substring(rel[ok], nchar(lead) + 1L), sep, fixed = TRUE)
  good <- vapply(parts, function(p) length(p) == max(1L, ndim) && all(grepl("^[0-9]+$", p)), TRUE)
  keys <- keys[ok][good]
  coords <- matrix(as.numeric(unlist(parts[good])), ncol = max(1L, ndim), byrow = TRUE)
  if (ndim == 0L) coords <- coords[, 0L, drop = FALSE]
  list(keys = keys, coords = coords)
}

chunk_key_of <- function(prefix, enc, coords) {
  sep <- enc[["separator"]]
  body <- if (ncol(coords)) apply(coords, 1L, function(r) paste(format(r, scientific = FALSE, trim = TRUE), collapse = sep))
    else rep("0", nrow(coords))
  if (enc[["name"]] == "v2") paste0(prefix, body) else
    paste0(prefix, "c", if (ncol(coords)) paste0(sep, body) else "")
}

promote_array <- function(arr, priv, dimension, length) {
  len <- length
  store <- priv$.store
  path <- arr$path
  if (store$read_only) zarr_abort("read_only", "the store is read-only", array = path)
  recover_structure(arr, priv) # what an interrupted change left, first
  m <- priv$.metadata
  if (any(vapply(m[["codecs"]], function(cd) identical(if (is.list(cd)) cd[["name"]] else cd, "sharding_indexed"), TRUE)))
    zarr_abort("unsupported", "sharded arrays cannot be promoted", array = path)
  shape <- priv$.shape
  r <- base::length(shape)
  dimension <- suppressWarnings(as.numeric(dimension))
  if (base::length(dimension) != 1L || is.na(dimension) || dimension != trunc(dimension) ||
      dimension < 1 || dimension > r + 1)
    zarr_abort("argument", sprintf("dimension must be a whole number from 1 to %d", r + 1L), array = path)
  len <- suppressWarnings(as.numeric(len))
  if (base::length(len) != 1L || is.na(len) || len < 1 || len != trunc(len))
    zarr_abort("argument", "length must be a positive whole number", array = path)
  k <- dimension - 1 # 0-based position of the new axis
  chunk <- priv$.grid$chunk_shape
  new_shape <- append(as.numeric(shape), len, after = k)
  new_chunk <- append(as.numeric(chunk), 1, after = k)
  as_field <- function(old, v) if (is.list(old)) as.list(v) else v
  m[["shape"]] <- as_field(m[["shape"]], new_shape)
  cfg <- m[["chunk_grid"]][["configuration"]]
  if (identical(m[["chunk_grid"]][["name"]], "rectilinear")) {
    cs <- cfg[["chunk_shapes"]]
    if (!is.list(cs)) cs <- as.list(cs)
    cfg[["chunk_shapes"]] <- append(cs, list(1), after = k)
  } else {
    cfg[["chunk_shape"]] <- as_field(cfg[["chunk_shape"]], new_chunk)
  }
  m[["chunk_grid"]][["configuration"]] <- cfg
  m[["codecs"]] <- lapply(m[["codecs"]], function(cd) {
    if (!is.list(cd) || !identical(cd[["name"]], "transpose")) return(cd)
    old <- as.numeric(unlist(cd[["configuration"]][["order"]]))
    moved <- old + (old >= k)
    # the new axis has chunks of length 1: anywhere in the order gives the
    # same bytes; R order stays R order (a v2 "F" array stays "F")
    order <- if (identical(old, rev(seq_len(r) - 1))) rev(seq_len(r + 1) - 1) else c(moved, k)
    cd[["configuration"]][["order"]] <- as_field(cd[["configuration"]][["order"]], as.integer(order))
    cd
  })
  if (!is.null(m[["dimension_names"]])) {
    dn <- vapply(m[["dimension_names"]], function(x) if (is.null(x)) NA_character_ else as.character(x)[1L], "", USE.NAMES = FALSE)
    m[["dimension_names"]] <- as.list(append(dn, NA_character_, after = k))
  }
  if (identical(as.integer(m[["zarr_format"]]), 2L)) m[["attributes"]][["_ARRAY_DIMENSIONS"]] <- NULL
  parse_array_metadata(m, path) # nothing is changed for metadata that would not work

  enc <- priv$.grid$chunk_encoding
  prefix <- node_prefix(path)
  old <- stored_chunk_keys(store, prefix, enc, r)
  coords <- old$coords
  new_coords <- if (r) cbind(coords[, seq_len(k), drop = FALSE], 0, coords[, k + seq_len(r - k), drop = FALSE])
    else matrix(0, nrow(coords), 1L)
  new_keys <- chunk_key_of(prefix, enc, new_coords)
  move_chunks(arr, priv, m, old$keys, new_keys, "promote")
  invisible(arr)
}
