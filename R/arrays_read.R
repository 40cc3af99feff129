# Many small arrays read in one engine call (src/arrays_read.c).
#
# A data model that keeps one small array per item (Zarr Vectors: a blob per
# spatial chunk) would otherwise open each array (a metadata read and an R6
# object, ~2 ms) and decode their chunks one after the other. Here the
# metadata documents come in one batch, are checked to differ only in their
# shapes, and the first one alone becomes an array object, whose engine
# description serves them all; the chunks are fetched in one batch and
# decoded on the worker threads.

# The values of many store keys in one batch: raw vectors, NULL where absent.
store_get_many <- function(store, keys)
  .Call(ffi_store_get_keys, store$io_spec(), as.character(keys), zarr_num_threads())

# The elements (C order, as plain vectors) of the arrays at `paths` under
# `group`, NULL for paths holding no node. The arrays must be Zarr v3 arrays
# of one chunk each (shape <= chunk shape) whose metadata documents are equal
# but for the shape and the chunk shape, with a data type of numbers or
# booleans; rtype "raw" returns the bytes of uint8 arrays. Anything else is an
# error naming the array, so the caller can read that one on its own. The
# output is allocated from the shapes before a chunk is read: shapes that
# declare more than max_bytes in all are a metadata error.
zarr_read_arrays <- function(group, paths, rtype = NULL, fill_as_na = zarr_fill_as_na(), max_bytes = Inf) {
  out <- vector("list", length(paths))
  if (!length(paths)) return(out)
  prefixes <- paste0(group$prefix, sub("^/+", "", paths), "/")
  docs <- store_get_many(group$store, paste0(prefixes, "zarr.json"))
  here <- which(!vapply(docs, is.null, TRUE))
  if (!length(here)) return(out)
  meta <- lapply(here, function(i) json_parse(docs[[i]], array = paths[i], key = paste0(prefixes[i], "zarr.json")))
  # everything but the shapes is the first array's
  strip <- function(m) {
    m$shape <- NULL
    m$chunk_grid$configuration$chunk_shape <- NULL
    m
  }
  first <- strip(meta[[1L]])
  if (!identical(first$node_type, "array") || !identical(first$chunk_grid$name, "regular"))
    zarr_abort("metadata", "not an array with a regular chunk grid", array = paths[here[1L]])
  for (k in seq_along(meta)[-1L])
    if (!identical(strip(meta[[k]]), first))
      zarr_abort("metadata", sprintf("its metadata differs from that of '%s' in more than the shape",
                                     paths[here[1L]]), array = paths[here[k]])
  a <- group$get_node(paths[here[1L]])
  if (!inherits(a, "zarr_array")) zarr_abort("metadata", "not an array", array = paths[here[1L]])
  dt <- a$data_type$data_type
  if (!identical(rtype, "raw") && !dtype_kind(dt) %in% c("b", "i", "u", "f", "c"))
    zarr_abort("value", sprintf("reading many arrays at once takes numbers and booleans, not %s", dt),
               array = a$path)
  if (identical(rtype, "raw") && !identical(dt, "uint8"))
    zarr_abort("value", sprintf("raw reads take uint8 arrays, not %s", dt), array = a$path)
  dims <- function(f) {
    v <- lapply(meta, f)
    if (any(lengths(v) != length(v[[1L]])))
      zarr_abort("metadata", "the arrays differ in their number of dimensions", array = a$path)
    matrix(as.numeric(unlist(v)), nrow = length(v), byrow = TRUE)
  }
  shape <- dims(function(m) m$shape)
  chunk <- dims(function(m) m$chunk_grid$configuration$chunk_shape)
  need <- sum(apply(shape, 1L, prod)) * (dtype_info(dt)$size %|NA|% 8)
  if (!(need <= max_bytes))
    zarr_abort("metadata", sprintf("the arrays declare %.0f bytes, more than the budget of %.0f (option zarr.max_decoded_bytes)",
                                   need, max_bytes), array = paths[here[1L]])
  spec <- a$chunking$.__enclos_env__$private$c_spec() # the engine's description of the first array
  spec$rtype <- rtype %||% spec$rtype
  spec$cache_bytes <- NULL
  # every array is one chunk: the key of chunk 0 after each array's prefix
  spec0 <- spec
  spec0$key_prefix <- ""
  ck <- .Call(ffi_chunk_keys, spec0, matrix(0, 1L, ncol(shape)))
  got <- .Call(ffi_arrays_read, spec, group$store$io_spec(), paste0(prefixes[here], ck), shape, chunk,
               engine_opts(fill_as_na))
  lost <- attr(got, "zarr_lost")
  if (!is.null(lost))
    zarr_warn("precision", sprintf("%s value(s) of the arrays under '%s' could not be represented exactly in R",
                                   format(lost), group$path))
  out[here] <- lapply(got, finish_rtype, spec$rtype)
  out
}
