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
    st <- stored_chunk_keys(store, arr$prefix, grid$chunk_encoding, nd)
    if (length(st$keys)) { # keys that are not this array's canonical chunk keys are left alone
      same <- grid$chunk_keys(st$coords) == st$keys
      st <- list(keys = st$keys[same], coords = st$coords[same, , drop = FALSE])
    }
    return(st)
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
  move_chunks(store, st$keys[inside], arr$chunking$chunk_keys(to[inside, , drop = FALSE]), arr$prefix)
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
    arr$write(arr$read(sel, fill_as_na = FALSE, decode = FALSE), sel)
  }
  invisible()
}

# Rename stored values `from[i]` to `to[i]` in one store. The values are
# copied by the C engine (ffi_store_copy, concurrently) to keys of their own
# first, then to their new keys, so that no new key lands on a value still to
# be moved (and, with "/" keys, no file stands where a directory must go).
move_chunks <- function(store, from, to, prefix) {
  moving <- from != to
  from <- from[moving]
  to <- to[moving]
  if (!length(from)) return(invisible())
  tmp <- paste0(prefix, "__zarr_move/", seq_along(from))
  io <- store$io_spec()
  nthreads <- zarr_num_threads()
  .Call(ffi_store_copy, io, io, from, tmp, nthreads)
  for (k in from) store$erase(k)
  .Call(ffi_store_copy, io, io, tmp, to, nthreads)
  for (k in tmp) store$erase(k)
  store$erase(paste0(prefix, "__zarr_move")) # the directory, on a local store
  invisible()
}
