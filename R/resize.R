# Resizing and appending (zarr_array$resize(), $append()): the chunk work
# behind them. Metadata are written once, by the method, after the chunks.

# The stored chunks of an array: their keys and 0-based grid coordinates
# (one row per chunk). Listed from the store when it can list keys, else
# generated from the grid `limit` (the chunks that may exist).
stored_chunks <- function(arr, limit = NULL) {
  grid <- arr$chunking
  nd <- length(arr$shape)
  store <- arr$store
  if (isTRUE(tryCatch(store$supports_listing, error = function(e) FALSE))) {
    prefix <- arr$prefix
    keys <- store$list_prefix(prefix)
    rel <- substring(keys, nchar(prefix) + 1L)
    enc <- grid$chunk_encoding
    sep <- enc$separator
    if (identical(enc$name, "v2")) {
      body <- rel
    } else {
      ok <- startsWith(rel, paste0("c", sep)) | rel == "c"
      keys <- keys[ok]
      body <- substring(rel[ok], 3L)
    }
    parts <- strsplit(body, sep, fixed = TRUE)
    ok <- vapply(parts, function(p) length(p) == nd && all(grepl("^[0-9]+$", p)), TRUE)
    keys <- keys[ok]
    coords <- matrix(as.numeric(unlist(parts[ok])), ncol = nd, byrow = TRUE)
    if (length(keys)) {
      same <- grid$chunk_keys(coords) == keys # not a chunk key of this array: left alone
      keys <- keys[same]
      coords <- coords[same, , drop = FALSE]
    }
    return(list(keys = keys, coords = coords))
  }
  limit <- limit %||% grid$chunk_grid
  if (prod(limit) > 1e6)
    zarr_abort("unsupported", "the store cannot list its keys, and the array has too many chunks to try each",
               array = arr$path)
  coords <- if (prod(limit) == 0) matrix(0, 0, nd) else
    as.matrix(expand.grid(lapply(limit, function(n) seq_len(n) - 1), KEEP.OUT.ATTRS = FALSE))
  keys <- grid$chunk_keys(coords)
  have <- vapply(keys, function(k) isTRUE(store$exists(k)), TRUE)
  list(keys = keys[have], coords = coords[have, , drop = FALSE])
}

# Move and erase chunks for a new shape (before the metadata change).
# shift: whole chunks added (positive) or removed (negative) at the start of
# each dimension; new_shape: the shape afterwards.
resize_chunks <- function(arr, new_shape, shift) {
  old <- arr$shape
  chunk <- arr$chunking$chunk_shape
  store <- arr$store
  new_grid <- ceiling(new_shape / chunk)
  shrink <- any(new_shape - shift * chunk < old) || any(shift < 0)
  if (!shrink && all(shift == 0)) return(invisible())
  st <- stored_chunks(arr)
  if (!length(st$keys)) return(invisible())
  to <- sweep(st$coords, 2L, shift, `+`)
  inside <- rowSums(to < 0 | sweep(to, 2L, new_grid, `>=`)) == 0
  for (k in st$keys[!inside]) store$erase(k)
  if (all(shift == 0)) return(invisible())
  # a translation: moving the chunks in decreasing order of coords . shift
  # never overwrites a chunk that is still to be moved
  from_keys <- st$keys[inside]
  to_keys <- arr$chunking$chunk_keys(to[inside, , drop = FALSE])
  ord <- order(drop(st$coords[inside, , drop = FALSE] %*% shift), decreasing = TRUE)
  for (j in ord) {
    v <- store$get(from_keys[j])
    if (!is.null(v)) store$set(to_keys[j], v)
  }
  for (k in setdiff(from_keys, to_keys)) store$erase(k)
  invisible()
}

# After a shrink (the metadata already changed): the chunks cut by the new
# high edge keep elements past it in their stored bytes. Reading their kept
# part and writing it back as whole (edge) chunks stores the fill value
# there, so that growing the array again shows fill values, whatever the
# data type. old: the shape before, shift: as for resize_chunks().
resize_clip <- function(arr, old, shift) {
  new_shape <- arr$shape
  chunk <- arr$chunking$chunk_shape
  had <- pmin(new_shape, old + shift * chunk) # where old data can be, in new coordinates
  if (any(had <= 0)) return(invisible())
  for (d in which(new_shape < old + shift * chunk & new_shape %% chunk != 0)) {
    sel <- lapply(seq_along(new_shape), function(e)
      if (e == d) seq(floor(new_shape[d] / chunk[d]) * chunk[d] + 1, new_shape[d]) else seq_len(new_shape[e]))
    arr$write(arr$read(sel, fill_as_na = FALSE), sel)
  }
  invisible()
}
