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
  from <- as.integer(m[["zarr_format"]] %||% 3L)
  m[["zarr_format"]] <- fmt
  if (from == fmt) return(m)
  m[["chunk_key_encoding"]] <- NULL # the destination's default for that format
  if (fmt == 3L) {
    attrs <- m[["attributes"]] %||% named_list()
    if (is.null(m[["dimension_names"]]) && !is.null(attrs[["_ARRAY_DIMENSIONS"]]))
      m[["dimension_names"]] <- attrs[["_ARRAY_DIMENSIONS"]]
    attrs[["_ARRAY_DIMENSIONS"]] <- NULL
    m[["attributes"]] <- if (length(attrs)) attrs else named_list()
    if (is.null(m[["fill_value"]])) {
      dt <- m[["data_type"]]
      if (is.list(dt)) dt <- dt[["name"]]
      m[["fill_value"]] <- fill_for_null(dt)
    }
  }
  m
}

# Raise a failure about one array with the array's path in it.
fail_for_array <- function(e, path) {
  if (!is.null(e$array)) stop(e)
  zarr_abort(sub("^zarr_error_", "", class(e)[1L]), conditionMessage(e), array = path)
}

# The chunk key encoding and grid of an array, from its metadata (v3 form).
metadata_keys_layout <- function(m) {
  enc <- m[["chunk_key_encoding"]]
  shape <- check_shape(m[["shape"]], "shape")
  grid <- metadata_chunk_counts(m, shape)
  list(enc = normalize_key_encoding(list(name = enc[["name"]] %||% "default", separator = enc[["configuration"]][["separator"]])),
       nd = length(shape), grid = grid)
}

# Grid coordinates (rows) of the chunks with 0-based linear indices `lin`.
grid_coords <- function(lin, grid) {
  nd <- length(grid)
  if (!nd) return(matrix(0, length(lin), 0L))
  stride <- cumprod(c(1, grid[-nd]))
  matrix(vapply(seq_len(nd), function(d) (lin %/% stride[d]) %% grid[d], numeric(length(lin))),
         nrow = length(lin))
}

# Copy the stored chunks of the array at `path` (metadata `src_meta`) to the
# array with metadata `dst_meta` in `dst`, batch by batch. Without listing,
# every chunk of the grid is asked for and the missing ones are skipped.
copy_array_chunks <- function(src, path, src_meta, dst, dst_meta, tick) {
  s <- metadata_keys_layout(src_meta)
  d <- metadata_keys_layout(dst_meta)
  prefix <- node_prefix(path)
  # an HTTP store lists only what its consolidated metadata names: no chunks
  stored <- if (isTRUE(src$supports_listing) && !inherits(src, "zarr_httpstore"))
    tryCatch(stored_chunk_keys(src, prefix, s$enc, s$nd), zarr_error = function(e) NULL)
  n <- if (is.null(stored)) prod(s$grid) else length(stored$keys)
  nthreads <- zarr_num_threads()
  for (b in seq_len(ceiling(n / copy_batch_keys))) {
    i <- ((b - 1) * copy_batch_keys + 1):min(n, b * copy_batch_keys)
    if (is.null(stored)) {
      coords <- grid_coords(i - 1, s$grid)
      from <- chunk_key_of(prefix, s$enc, coords)
    } else {
      coords <- stored$coords[i, , drop = FALSE]
      from <- stored$keys[i]
    }
    .Call(ffi_store_copy, store_chunk_io(src, prefix), dst$io_spec(), from, chunk_key_of(prefix, d$enc, coords), nthreads)
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

  # Everything is checked before anything is written. An array this package
  # cannot read is copied as it is (metadata and chunks), when the format
  # stays the same.
  plan <- lapply(arrays, function(a) {
    m0 <- a$metadata
    if (isTRUE(attr(m0, "zarr_broken")) || is.null(m0[["shape"]]))
      zarr_abort("metadata", "the array's metadata cannot be read, so it cannot be saved", array = a$path)
    if (length(m0[["storage_transformers"]]))
      zarr_abort("unsupported", "arrays with storage transformers cannot be saved", array = a$path)
    m <- convert_array_metadata(m0, format)
    same <- identical(as.integer(m0[["zarr_format"]] %||% 3L), format)
    err <- tryCatch({
      parse_array_metadata(m, a$path)
      if (format == 2L) v2_from_v3(m)
      NULL
    }, zarr_error = function(e) e)
    if (!is.null(err) && !same) fail_for_array(err, a$path)
    list(node = a, src_meta = m0, meta = m, verbatim = !is.null(err))
  })
  dst <- save_destination(location)
  say <- if (isTRUE(verbose)) function(...) message(sprintf(...)) else function(...) NULL

  # An interrupted copy must not open as a whole one: each array's metadata
  # is written after its chunks, the root's document last, and a marker
  # (save_marker) says until then that the copy is incomplete.
  dst$set(save_marker, charToRaw(json_write(list(operation = "save_to", source = z$root$path), pretty = FALSE)))
  depth <- vapply(groups, function(g) if (g$path == "/") 0L else lengths(strsplit(g$path, "/", fixed = TRUE)), 0L)
  groups <- groups[order(depth)]
  group_doc <- function(g) {
    say("group %s", g$path)
    dst$set_metadata(node_prefix(g$path),
                     list(zarr_format = format, node_type = "group",
                          attributes = g$metadata[["attributes"]] %||% named_list()))
  }
  for (g in groups) if (g$path != "/") group_doc(g)
  # how many chunks there are to copy, for the progress bar (at most that
  # many: without listing, missing chunks are counted too)
  total <- sum(vapply(plan, function(p) prod(metadata_keys_layout(p$src_meta)$grid), 0))
  done <- 0
  bar <- r_progress("Saving the Zarr hierarchy", total)
  tick <- function(k) {
    done <<- done + k
    bar(done)
  }
  for (p in plan) {
    a <- p$node
    meta <- if (p$verbatim) p$meta else store_key_encoding(dst, p$meta)
    n <- copy_array_chunks(a$store, a$path, p$src_meta, dst, meta, tick)
    tryCatch(dst$set_metadata(node_prefix(a$path), meta), zarr_error = function(e) fail_for_array(e, a$path))
    say("array %s: %s chunk(s)%s", a$path, format(n), if (p$verbatim) " (copied as it is)" else "")
  }
  for (g in groups) if (g$path == "/") group_doc(g)
  dst$erase(save_marker)
  bar(NULL)
  invisible(dst)
}

# The key at the root of a save_to() destination while the copy is under way.
save_marker <- "__zarr_saving.json"
