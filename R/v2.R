# Zarr v2 metadata (.zarray, .zgroup, .zattrs), presented to the rest of the
# package in v3 form: a v2 array is a v3 array with the "v2" chunk key
# encoding, a transpose codec for order "F", a bytes codec for the dtype's
# byte order and its filters and compressor as further codecs.

v2_dtypes <- c(b1 = "bool", i1 = "int8", i2 = "int16", i4 = "int32", i8 = "int64",
               u1 = "uint8", u2 = "uint16", u4 = "uint32", u8 = "uint64",
               f2 = "float16", f4 = "float32", f8 = "float64",
               c8 = "complex64", c16 = "complex128")

v2_parse_dtype <- function(dtype, key = NULL) {
  if (!is.character(dtype) || length(dtype) != 1L)
    zarr_abort("data_type", "unsupported v2 dtype (structured dtypes are not supported)", key = key)
  m <- regmatches(dtype, regexec("^([<>|=])([a-zA-Z][0-9]*)$", dtype))[[1L]]
  if (!length(m) || is.na(v2_dtypes[m[3L]]))
    zarr_abort("data_type", sprintf("unsupported v2 dtype '%s'", dtype), key = key)
  list(data_type = unname(v2_dtypes[m[3L]]), endian = if (m[2L] == ">") "big" else "little")
}

v2_compressor_codec <- function(comp, key = NULL) {
  id <- comp$id
  cfg <- comp
  cfg$id <- NULL
  switch(id,
    blosc = list(name = "blosc", configuration = list(
      cname = cfg$cname %||% "lz4", clevel = cfg$clevel %||% 5L,
      shuffle = c("noshuffle", "shuffle", "bitshuffle")[(cfg$shuffle %||% 1L) + 1L],
      blocksize = cfg$blocksize %||% 0L)),
    zlib = list(name = "zlib", configuration = list(level = cfg$level %||% 1L)),
    gzip = list(name = "gzip", configuration = list(level = cfg$level %||% 1L)),
    zstd = list(name = "zstd", configuration = list(level = cfg$level %||% 1L,
                                                     checksum = isTRUE(cfg$checksum))),
    crc32c = list(name = "crc32c"),
    list(name = paste0("numcodecs.", id), configuration = cfg)
  )
}

v2_get_metadata <- function(store, prefix) {
  zarray <- store$get(paste0(prefix, ".zarray"))
  zgroup <- if (is.null(zarray)) store$get(paste0(prefix, ".zgroup")) else NULL
  if (is.null(zarray) && is.null(zgroup)) return(NULL)
  attrs_raw <- store$get(paste0(prefix, ".zattrs"))
  attrs <- if (is.null(attrs_raw)) named_list() else json_parse(attrs_raw, ".zattrs", key = paste0(prefix, ".zattrs"))
  if (!is.null(zgroup)) {
    json_parse(zgroup, ".zgroup", key = paste0(prefix, ".zgroup"))
    return(list(zarr_format = 2L, node_type = "group", attributes = attrs))
  }
  key <- paste0(prefix, ".zarray")
  z <- json_parse(zarray, ".zarray", key = key)
  for (f in c("shape", "chunks", "dtype"))
    if (is.null(z[[f]])) zarr_abort("metadata", sprintf(".zarray has no '%s'", f), key = key)
  dt <- v2_parse_dtype(z$dtype, key)
  shape <- as.numeric(unlist(z$shape))
  codecs <- list()
  if (identical(z$order, "F") && length(shape) > 1L)
    codecs[[length(codecs) + 1L]] <- list(name = "transpose",
                                          configuration = list(order = json_array(rev(seq_along(shape) - 1L))))
  filters <- z$filters
  array_filters <- list()
  for (f in filters) array_filters[[length(array_filters) + 1L]] <- v2_compressor_codec(f, key)
  codecs <- c(codecs, array_filters)
  codecs[[length(codecs) + 1L]] <- list(name = "bytes", configuration = list(endian = dt$endian))
  if (!is.null(z$compressor)) codecs[[length(codecs) + 1L]] <- v2_compressor_codec(z$compressor, key)
  # xarray keeps dimension names in .zattrs
  dims <- attrs[["_ARRAY_DIMENSIONS"]]
  fill <- z$fill_value
  meta <- list(
    zarr_format = 2L, node_type = "array",
    shape = json_array(shape),
    data_type = dt$data_type,
    chunk_grid = list(name = "regular", configuration = list(chunk_shape = json_array(unlist(z$chunks)))),
    chunk_key_encoding = list(name = "v2", configuration = list(separator = z$dimension_separator %||% ".")),
    fill_value = fill,
    codecs = codecs,
    attributes = attrs
  )
  if (!is.null(dims)) meta$dimension_names <- dims
  meta
}

v2_set_metadata <- function(store, prefix, metadata) {
  zarr_abort("unsupported", "writing Zarr v2 metadata is not supported yet")
}
