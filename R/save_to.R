# zarr$save_to(): the whole hierarchy into another store, in Zarr v3 or v2.
#
# Chunks are copied as they are stored: the codec chain of an array is the
# same in both formats (the package holds v2 metadata in v3 form), so only
# the metadata documents and the chunk keys change. The copy runs in C
# (ffi_store_copy), batch by batch: values are fetched concurrently from the
# source and written by the workers (or by the R thread for stores written
# in R).

copy_batch_keys <- 256L

save_destination <- function(location) {
  if (inherits(location, "zarr")) location <- location$store
  if (inherits(location, "zarr_store")) {
    if (location$read_only) zarr_abort("read_only", "the destination store is read-only")
    if (!is.null(location$get_metadata("")))
      zarr_abort("exists", "the destination store already holds a Zarr hierarchy")
    return(location)
  }
  if (!is.character(location) || length(location) != 1L || is.na(location))
    zarr_abort("argument", "location must be a path, an s3:// location or a zarr_store")
  if (is_s3_url(location)) return(new_s3_store(location))
  p <- sub("^file://", "", location)
  if (dir.exists(p) && length(list.files(p, all.files = TRUE, no.. = TRUE)))
    zarr_abort("exists", sprintf("'%s' already exists and is not empty", location))
  zarr_localstore$new(p)
}

# Array metadata (v3 form) for an array written in format `fmt`.
convert_array_metadata <- function(m, fmt) {
  from <- as.integer(m$zarr_format %||% 3L)
  m$zarr_format <- fmt
  if (from == fmt) return(m)
  m$chunk_key_encoding <- NULL # the destination's default for that format
  if (fmt == 3L) {
    attrs <- m$attributes %||% named_list()
    if (is.null(m$dimension_names) && !is.null(attrs[["_ARRAY_DIMENSIONS"]]))
      m$dimension_names <- attrs[["_ARRAY_DIMENSIONS"]]
    attrs[["_ARRAY_DIMENSIONS"]] <- NULL
    m$attributes <- if (length(attrs)) attrs else named_list()
    if (is.null(m$fill_value)) {
      dt <- m$data_type
      if (is.list(dt)) dt <- dt$name
      m$fill_value <- fill_for_null(dt)
    }
  }
  m
}

# Copy the stored chunks of `arr` to the array at `dst_prefix` of `dst`.
copy_array_chunks <- function(arr, dst, dst_meta, dst_prefix, tick) {
  src <- arr$store
  src_enc <- arr$chunking$chunk_encoding
  enc <- normalize_key_encoding(list(name = dst_meta$chunk_key_encoding$name %||% "default",
                                     separator = dst_meta$chunk_key_encoding$configuration$separator))
  nd <- length(arr$shape)
  src_prefix <- node_prefix(arr$path)
  if (isTRUE(src$supports_listing) &&
      !is.null(stored <- tryCatch(stored_chunk_keys(src, src_prefix, src_enc, nd), zarr_error = function(e) NULL))) {
    from <- stored$keys
    coords <- stored$coords
  } else { # no listing: every chunk of the grid (missing ones are skipped)
    grid <- arr$chunking$chunk_grid
    coords <- if (nd) as.matrix(expand.grid(lapply(grid, function(n) seq_len(n) - 1))) else matrix(0, 1L, 0L)
    from <- chunk_key_of(src_prefix, src_enc, coords)
  }
  to <- chunk_key_of(dst_prefix, enc, coords)
  n <- length(from)
  nthreads <- zarr_num_threads()
  for (b in seq_len(ceiling(n / copy_batch_keys))) {
    i <- ((b - 1L) * copy_batch_keys + 1L):min(n, b * copy_batch_keys)
    .Call(ffi_store_copy, src$io_spec(), dst$io_spec(), from[i], to[i], nthreads)
    tick(length(i))
  }
  n
}

save_zarr_to <- function(z, location, verbose = FALSE, format = 3L) {
  format <- suppressWarnings(as.integer(format))
  if (length(format) != 1L || !format %in% c(2L, 3L)) zarr_abort("argument", "format must be 2 or 3")
  root <- z$root
  if (is.null(root)) zarr_abort("argument", "the zarr object has no hierarchy to save")
  arrays <- if (inherits(root, "zarr_array")) list(root) else lapply(z$arrays, z$get_node)
  groups <- if (inherits(root, "zarr_group")) lapply(z$groups, z$get_node) else list()
  for (a in arrays)
    if (length(a$metadata$storage_transformers))
      zarr_abort("unsupported", "arrays with storage transformers cannot be saved", array = a$path)
  dst <- save_destination(location)
  say <- if (isTRUE(verbose)) function(...) message(sprintf(...)) else function(...) NULL

  # groups first, parents before children
  depth <- vapply(groups, function(g) if (g$path == "/") 0L else lengths(strsplit(g$path, "/", fixed = TRUE)), 0L)
  for (g in groups[order(depth)]) {
    say("group %s", g$path)
    dst$set_metadata(node_prefix(g$path),
                     list(zarr_format = format, node_type = "group",
                          attributes = g$metadata$attributes %||% named_list()))
  }
  # how many chunks there are to copy, for the progress bar (a guess without listing)
  total <- sum(vapply(arrays, function(a) prod(a$chunking$chunk_grid), 0))
  done <- 0
  bar <- r_progress("Saving the Zarr hierarchy", total)
  tick <- function(k) {
    done <<- done + k
    bar(done)
  }
  for (a in arrays) {
    meta <- convert_array_metadata(a$metadata, format)
    parent <- if (is.null(a$parent)) "/" else a$parent$path
    meta <- dst$create_array(parent, a$name, meta)
    n <- copy_array_chunks(a, dst, meta, node_prefix(a$path), tick)
    say("array %s: %s chunk(s)", a$path, format(n))
  }
  bar(NULL)
  invisible(dst)
}
