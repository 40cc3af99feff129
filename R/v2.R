# Zarr v2 metadata (.zarray, .zgroup, .zattrs), presented to the rest of the
# package in v3 form: a v2 array is a v3 array with the "v2" chunk key
# encoding, a transpose codec for order "F", a bytes codec for the dtype's
# byte order and its filters and compressor as further codecs.

v2_dtypes <- c(b1 = "bool", i1 = "int8", i2 = "int16", i4 = "int32", i8 = "int64",
               u1 = "uint8", u2 = "uint16", u4 = "uint32", u8 = "uint64",
               f2 = "float16", f4 = "float32", f8 = "float64",
               c8 = "complex64", c16 = "complex128")

# A v2 dtype as a v3 data type (a name, or a list for parametrised types).
# Unsupported dtypes keep their v2 spelling, so that only reading that array
# fails, not opening its group.
v2_parse_dtype <- function(dtype) {
  if (!is.character(dtype) || length(dtype) != 1L)
    return(list(data_type = "v2:structured", endian = "little"))
  m <- regmatches(dtype, regexec("^([<>|=])([a-zA-Z])([0-9]*)(\\[[0-9]*[A-Za-z]+\\])?$", dtype))[[1L]]
  if (!length(m)) return(list(data_type = paste0("v2:", dtype), endian = "little"))
  endian <- if (m[2L] == ">") "big" else "little"
  code <- paste0(m[3L], m[4L])
  dt <- if (!nzchar(m[5L]) && !is.na(v2_dtypes[code])) unname(v2_dtypes[code])
    else if (m[3L] == "U" && nzchar(m[4L]))
      list(name = "fixed_length_utf32", configuration = list(length_bytes = 4L * as.integer(m[4L])))
    else if (m[3L] == "S" && nzchar(m[4L]))
      list(name = "null_terminated_bytes", configuration = list(length_bytes = as.integer(m[4L])))
    else if (m[3L] == "O") "object"
    else if (m[3L] %in% c("M", "m") && nzchar(m[5L])) v2_time_type(m[3L], m[5L])
    else paste0("v2:", dtype)
  list(data_type = dt, endian = endian)
}

v2_time_type <- function(code, unit) {
  parts <- regmatches(unit, regexec("^\\[([0-9]*)([A-Za-z]+)\\]$", unit))[[1L]]
  list(name = if (code == "M") "numpy.datetime64" else "numpy.timedelta64",
       configuration = list(unit = parts[3L], scale_factor = if (nzchar(parts[2L])) as.integer(parts[2L]) else 1L))
}

v2_object_codecs <- c(`vlen-utf8` = "string", `vlen-bytes` = "variable_length_bytes", json2 = "string")

# A v2 compressor or filter as a v3 codec entry.
v2_codec <- function(comp, key = NULL) {
  id <- comp$id
  if (!is.character(id) || length(id) != 1L) zarr_abort("metadata", "codec without an id", key = key)
  cfg <- comp
  cfg$id <- NULL
  if (!length(cfg)) cfg <- named_list()
  switch(id,
    blosc = list(name = "blosc", configuration = list(
      cname = cfg$cname %||% "lz4", clevel = cfg$clevel %||% 5L,
      shuffle = blosc_shuffles[(cfg$shuffle %||% 1L) + 1L],
      blocksize = cfg$blocksize %||% 0L)),
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
  dt <- v2_parse_dtype(z$dtype)
  shape <- as.numeric(unlist(z$shape))
  object_codec <- NULL
  if (identical(dt$data_type, "object")) { # the object codec is among the filters
    ids <- vapply(z$filters, function(f) f$id %||% "", "")
    hit <- match(names(v2_object_codecs), ids)
    hit <- hit[!is.na(hit)]
    if (length(hit)) {
      object_codec <- ids[hit[1L]]
      z$filters <- z$filters[-hit[1L]]
      dt$data_type <- unname(v2_object_codecs[object_codec])
    } else {
      dt$data_type <- "v2:|O"
    }
  }
  codecs <- list()
  if (identical(z$order, "F") && length(shape) > 1L)
    codecs[[length(codecs) + 1L]] <- list(name = "transpose",
                                          configuration = list(order = json_array(rev(seq_along(shape) - 1L))))
  # filters that act on element values go before the bytes codec, the rest after
  before <- list()
  after <- list()
  for (f in z$filters) {
    cd <- v2_codec(f, key)
    id <- sub("^numcodecs[.]", "", cd$name)
    if (!is.na(numcodecs_modes[id]) && numcodecs_modes[[id]] == "array" && !length(after))
      before[[length(before) + 1L]] <- cd
    else after[[length(after) + 1L]] <- cd
  }
  ab <- if (is.null(object_codec)) list(name = "bytes", configuration = list(endian = dt$endian))
        else list(name = object_codec, configuration = named_list())
  codecs <- c(codecs, before, list(ab), after)
  if (!is.null(z$compressor)) codecs[[length(codecs) + 1L]] <- v2_codec(z$compressor, key)
  # xarray keeps dimension names in .zattrs
  dims <- attrs[["_ARRAY_DIMENSIONS"]]
  fill <- z$fill_value
  if (is.list(dt$data_type) && identical(dt$data_type$name, "null_terminated_bytes") && is.character(fill))
    fill <- rawToChar(jsonlite::base64_dec(fill)) # v2 keeps fixed bytes as base64
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

# numcodecs' "json2" object codec (v2 only, read only): each chunk is a JSON
# array of the items followed by the dtype and the chunk shape. This legacy
# format is decoded here in R, chunk by chunk, on top of the C byte codecs.
read_json2 <- function(array, grid, sel) {
  shape <- array$shape
  chunk <- grid$chunk_shape
  codecs <- array$codecs
  bb <- codecs[vapply(codecs, function(cd) cd$mode == "bytes -> bytes", TRUE)]
  order_codec <- Filter(function(cd) cd$name == "transpose", codecs)
  n_out <- lengths(sel)
  out <- rep(NA_character_, prod(n_out))
  chunks_per_dim <- lapply(seq_along(shape), function(d) unique(sel[[d]] %/% chunk[d]))
  grid_coords <- as.matrix(expand.grid(chunks_per_dim))
  keys <- grid$chunk_keys(grid_coords)
  strides <- cumprod(c(1, n_out))[seq_along(n_out)]
  for (r in seq_len(nrow(grid_coords))) {
    raw <- array$store$get(keys[r])
    cshape <- chunk
    vals <- rep("", prod(cshape))
    if (!is.null(raw)) {
      for (cd in rev(bb)) raw <- cd$decode(raw)
      items <- json_parse(raw, "json2 chunk", array = array$path, key = keys[r])
      items <- items[seq_len(length(items) - 2L)]
      if (length(items) != prod(cshape))
        zarr_abort("corrupt_chunk", "json2 chunk has the wrong number of items", array = array$path, key = keys[r])
      vals <- vapply(items, function(v) if (is.null(v)) NA_character_ else as.character(v), "")
    }
    # items are in C order (or F order with a transpose codec)
    arr <- if (length(order_codec) || length(cshape) == 1L) array(vals, cshape)
           else aperm(array(vals, rev(cshape)), rev(seq_along(cshape)))
    idx <- lapply(seq_along(shape), function(d) which(sel[[d]] %/% chunk[d] == grid_coords[r, d]))
    local <- lapply(seq_along(shape), function(d) sel[[d]][idx[[d]]] - grid_coords[r, d] * chunk[d] + 1)
    pos <- as.matrix(expand.grid(idx)) - 1
    out[pos %*% strides + 1] <- do.call(`[`, c(list(arr), local, list(drop = TRUE)))
  }
  if (length(shape) > 1L) dim(out) <- n_out
  out
}
