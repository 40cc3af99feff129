# Zarr v2 metadata (.zarray, .zgroup, .zattrs), presented to the rest of the
# package in v3 form: a v2 array is a v3 array with the "v2" chunk key
# encoding, a transpose codec for order "F", a bytes codec for the dtype's
# byte order and its filters and compressor as further codecs.

# numpy dtype code -> data type, from the data type table (R/data_type.R)
v2_dtypes <- stats::setNames(dtype_table$name, dtype_table$v2)[!is.na(dtype_table$v2)]

# A v2 dtype as a v3 data type (a name, or a list for parametrised types).
# Unsupported dtypes keep their v2 spelling, so that only reading that array
# fails, not opening its group.
# The parse of each dtype string is kept: a consolidated document repeats a
# few dtypes hundreds of times, and the regular expression dominated opening it.
v2_dtype_memo <- new.env(parent = emptyenv())

v2_dtype_memoized <- function(what, dtype, f) {
  if (is.na(dtype) || nchar(dtype, type = "bytes") > 64L) return(f(dtype))
  key <- paste0(what, dtype)
  hit <- v2_dtype_memo[[key]]
  if (is.null(hit)) hit <- v2_dtype_memo[[key]] <- f(dtype)
  hit
}

v2_parse_dtype <- function(dtype) {
  if (!is.character(dtype) || length(dtype) != 1L) return(v2_struct_dtype(dtype))
  v2_dtype_memoized("parse:", dtype, v2_parse_dtype_string)
}

v2_parse_dtype_string <- function(dtype) {
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
    else if (m[3L] == "V" && nzchar(m[4L]) && !is.na(raw_bits_size(paste0("r", 8L * as.integer(m[4L])))))
      paste0("r", 8L * as.integer(m[4L])) # numpy's void: raw bits
    else if (m[3L] %in% c("M", "m") && nzchar(m[5L])) v2_time_type(m[3L], m[5L])
    else paste0("v2:", dtype)
  list(data_type = dt, endian = endian)
}

v2_time_type <- function(code, unit) {
  parts <- regmatches(unit, regexec("^\\[([0-9]*)([A-Za-z]+)\\]$", unit))[[1L]]
  list(name = if (code == "M") "numpy.datetime64" else "numpy.timedelta64",
       configuration = list(unit = parts[3L], scale_factor = if (nzchar(parts[2L])) as.integer(parts[2L]) else 1L))
}

v2_object_codecs <- c(`vlen-utf8` = "string", `vlen-bytes` = "variable_length_bytes", json2 = "string",
                      `vlen-array` = "vlen_array", categorize = "string")

# The object codecs whose chunks R decodes and encodes (read_json2()).
r_object_codecs <- c("json2", "categorize")

# A v2 compressor or filter as a v3 codec entry.
v2_codec <- function(comp, key = NULL, typesize = 1L) {
  id <- comp[["id"]]
  if (!is_json_string(id, max_name_bytes)) zarr_abort("metadata", "codec without an id", key = key)
  cfg <- comp
  cfg[["id"]] <- NULL
  if (!length(cfg)) cfg <- named_list()
  switch(id,
    blosc = {
      # numcodecs writes -1 (automatic) too, GDAL a name ("BIT", "NONE", "2", ...)
      sh <- if (is.null(cfg[["shuffle"]])) "shuffle" else blosc_shuffle_name(cfg[["shuffle"]], typesize)
      if (is.na(sh))
        zarr_abort("metadata", sprintf("unknown blosc shuffle '%s'", substr(paste(format(unlist(cfg[["shuffle"]])), collapse = " "), 1L, 40L)),
                   key = key)
      list(name = "blosc", configuration = list(
        cname = cfg[["cname"]] %||% codec_default("blosc", "cname"),
        clevel = cfg[["clevel"]] %||% codec_default("blosc", "clevel"),
        shuffle = sh, blocksize = cfg[["blocksize"]] %||% codec_default("blosc", "blocksize")))
    },
    gzip = list(name = "gzip", configuration = list(level = cfg[["level"]] %||% codec_default("gzip", "level"))),
    zstd = list(name = "zstd", configuration = list(level = cfg[["level"]] %||% codec_default("zstd", "level"),
                                                     checksum = isTRUE(cfg[["checksum"]]))),
    crc32c = list(name = "crc32c"),
    # a codec written in R (register_zarr_codec()) keeps its name
    if (isTRUE(attr(codec_registry[[id]], "r_codec"))) list(name = id, configuration = cfg)
    else list(name = paste0("numcodecs.", id), configuration = cfg)
  )
}

# The metadata (v3 form) of a node's v2 documents as read (raw; zarray or
# zgroup NULL), parsed once per distinct bytes (meta_doc_cache).
v2_metadata <- function(prefix, zarray, zgroup, attrs_raw) {
  doc <- meta_doc_key("v2", zarray, zgroup, attrs_raw)
  hit <- meta_doc_get(doc)
  if (!is.null(hit)) return(hit)
  meta <- v2_parse_documents(prefix, zarray, zgroup, attrs_raw)
  meta_doc_put(doc, meta)
  meta
}

# The v3 form of a node's v2 documents (raw; zarray or zgroup NULL).
v2_parse_documents <- function(prefix, zarray, zgroup, attrs_raw) {
  attrs <- if (is.null(attrs_raw)) named_list() else json_parse(attrs_raw, ".zattrs", key = paste0(prefix, ".zattrs"))
  if (!is_json_object(attrs)) zarr_abort("metadata", ".zattrs is not a JSON object", key = paste0(prefix, ".zattrs"))
  if (!is.null(zgroup)) {
    if (!is_json_object(json_parse(zgroup, ".zgroup", key = paste0(prefix, ".zgroup"))))
      zarr_abort("metadata", ".zgroup is not a JSON object", key = paste0(prefix, ".zgroup"))
    return(v2_to_v3(NULL, attrs))
  }
  key <- paste0(prefix, ".zarray")
  v2_to_v3(json_parse(zarray, ".zarray", key = key), attrs, key)
}

# Parsed v2 documents -> metadata in v3 form (zarray NULL: a group).
v2_to_v3 <- function(z, attrs, key = NULL) {
  if (is.null(attrs) || !length(attrs)) attrs <- named_list()
  if (!is_json_object(attrs)) zarr_abort("metadata", ".zattrs is not a JSON object", key = key)
  if (is.null(z)) return(list(zarr_format = 2L, node_type = "group", attributes = attrs))
  check_v2_array(z, key)
  dt <- v2_parse_dtype(z[["dtype"]])
  shape <- as.numeric(unlist(z[["shape"]]))
  filters <- z[["filters"]]
  object_codec <- NULL
  cat_at <- match("categorize", vapply(filters, function(f) as.character(f[["id"]] %||% "")[1L], ""))
  if (!is.na(cat_at) && is.list(dt[["data_type"]]) && identical(dt[["data_type"]][["name"]], "fixed_length_utf32")) {
    # categorize over a <U dtype: the codes are stored, the strings keep their type
    object_codec <- "categorize"
    object_config <- filters[[cat_at]]
    object_config[["id"]] <- NULL
    filters <- filters[-cat_at]
  }
  if (identical(dt[["data_type"]], "object")) { # the object codec is among the filters
    ids <- vapply(filters, function(f) f[["id"]], "")
    hit <- match(names(v2_object_codecs), ids)
    hit <- hit[!is.na(hit)]
    if (length(hit)) {
      object_codec <- ids[hit[1L]]
      object_config <- filters[[hit[1L]]] # kept, so that the same filter is written back
      object_config[["id"]] <- NULL
      if (!length(object_config)) object_config <- named_list()
      filters <- filters[-hit[1L]]
      dt[["data_type"]] <- unname(v2_object_codecs[object_codec])
    } else {
      dt[["data_type"]] <- "v2:|O"
    }
  }
  typesize <- v2_itemsize(z[["dtype"]])
  codecs <- list()
  if (identical(z[["order"]], "F") && length(shape) > 1L)
    codecs[[length(codecs) + 1L]] <- list(name = "transpose",
                                          configuration = list(order = json_array(rev(seq_along(shape) - 1L))))
  # filters that act on element values go before the bytes codec, the rest after
  before <- list()
  after <- list()
  for (f in filters) {
    cd <- v2_codec(f, key, typesize)
    id <- sub("^numcodecs[.]", "", cd[["name"]])
    if (!is.na(numcodecs_modes[id]) && numcodecs_modes[[id]] == "array" && !length(after))
      before[[length(before) + 1L]] <- cd
    else after[[length(after) + 1L]] <- cd
  }
  ab <- if (is.null(object_codec)) list(name = "bytes", configuration = list(endian = dt[["endian"]]))
        else list(name = object_codec, configuration = object_config)
  codecs <- c(codecs, before, list(ab), after)
  if (!is.null(z[["compressor"]])) codecs[[length(codecs) + 1L]] <- v2_codec(z[["compressor"]], key, typesize)
  # xarray keeps dimension names in .zattrs
  dims <- attrs[["_ARRAY_DIMENSIONS"]]
  if (!is.null(dims) && !(is.list(dims) && length(dims) == length(shape) &&
                          all(vapply(dims, function(e) is.null(e) || is_json_string(e), TRUE))))
    dims <- NULL # not names of these dimensions: an ordinary attribute
  fill <- z[["fill_value"]]
  if (is.list(dt[["data_type"]]) && identical(dt[["data_type"]][["name"]], "null_terminated_bytes") && is.character(fill)) {
    # v2 keeps fixed bytes as base64
    if (!grepl("^[A-Za-z0-9+/]*={0,2}$", fill) || nchar(fill) %% 4L != 0L)
      meta_fail("fill_value", "must be base64 text for a |S data type", key = key)
    fill <- rawToChar(jsonlite::base64_dec(fill))
  }
  if (is.character(dt[["data_type"]]) && !is.na(raw_bits_size(dt[["data_type"]])) && is.character(fill))
    fill <- tryCatch(jsonlite::base64_dec(fill), error = function(e) meta_fail("fill_value", "must be base64 text for a |V data type", key = key))
  if (is.list(dt[["data_type"]]) && identical(dt[["data_type"]][["name"]], "struct") && !is.null(fill))
    # v2 keeps a record's bytes as base64 (zarr-python 2); v3 has a value per field
    fill <- tryCatch(struct_fill_json(struct_layout(dt[["data_type"]][["configuration"]]),
                                      struct_fill_normalize(struct_layout(dt[["data_type"]][["configuration"]]),
                                                            fill, dt[["endian"]] == "big")),
                     zarr_error = function(e) meta_fail("fill_value", conditionMessage(e), key = key))
  sep <- z[["dimension_separator"]] %||% "."
  meta <- list(
    zarr_format = 2L, node_type = "array",
    shape = json_array(shape),
    data_type = dt[["data_type"]],
    chunk_grid = list(name = "regular", configuration = list(chunk_shape = json_array(unlist(z[["chunks"]])))),
    chunk_key_encoding = list(name = "v2", configuration = list(separator = sep)),
    fill_value = fill,
    codecs = codecs,
    attributes = attrs
  )
  if (!is.null(dims)) meta[["dimension_names"]] <- dims
  meta[[pending_field]] <- z[[pending_field]] # a resize under way (R/resize.R)
  meta
}

# Bytes per element of a v2 dtype (1 when unknown): blosc's automatic shuffle.
v2_itemsize <- function(dtype) {
  if (!is_json_string(dtype)) return(1L)
  v2_dtype_memoized("size:", dtype, v2_itemsize_string)
}

v2_itemsize_string <- function(dtype) {
  n <- suppressWarnings(as.integer(sub("^[<>|=]?[a-zA-Z]", "", dtype)))
  if (is.na(n) || n < 1L) 1L else n
}

# Metadata in v3 form -> the v2 documents (.zgroup / .zarray and .zattrs).
v2_from_v3 <- function(meta) {
  attrs <- meta[["attributes"]]
  if (!is.null(meta[["dimension_names"]]))
    attrs[["_ARRAY_DIMENSIONS"]] <- json_array(unlist(meta[["dimension_names"]]))
  attrs <- if (length(attrs)) json_prepare(attrs) else named_list()
  if (identical(meta[["node_type"]], "group")) return(list(.zgroup = list(zarr_format = 2L), .zattrs = attrs))
  shape <- unlist(meta[["shape"]])
  dt <- meta[["data_type"]]
  name <- if (is.list(dt)) dt[["name"]] else dt
  codecs <- meta[["codecs"]]
  names_ <- vapply(codecs, function(cd) cd[["name"]], "")
  ab <- match(TRUE, names_ %in% c("bytes", names(v2_object_codecs)))
  if (is.na(ab)) zarr_abort("unsupported", "this codec chain cannot be written as Zarr v2")
  if (!identical(meta[["chunk_grid"]][["name"]], "regular"))
    zarr_abort("unsupported", sprintf("Zarr v2 has only regular chunks, not a '%s' chunk grid", meta[["chunk_grid"]][["name"]]))
  endian <- codecs[[ab]][["configuration"]][["endian"]] %||% "little"
  order <- "C"
  filters <- list()
  for (cd in codecs[seq_len(ab - 1L)]) {
    if (cd[["name"]] == "transpose") {
      ord <- unlist(cd[["configuration"]][["order"]])
      if (identical(as.integer(ord), rev(seq_along(shape) - 1L))) order <- "F"
      else if (!identical(as.integer(ord), seq_along(shape) - 1L))
        zarr_abort("unsupported", "Zarr v2 stores only C or F order, not another transpose")
    } else {
      filters[[length(filters) + 1L]] <- v2_codec_doc(cd)
    }
  }
  if (codecs[[ab]][["name"]] != "bytes")
    filters[[length(filters) + 1L]] <- c(list(id = codecs[[ab]][["name"]]), codecs[[ab]][["configuration"]])
  after <- lapply(codecs[-seq_len(ab)], v2_codec_doc)
  compressor <- if (length(after)) after[[length(after)]] else NULL
  filters <- c(filters, after[seq_len(max(0L, length(after) - 1L))])
  zarray <- list(
    zarr_format = 2L,
    shape = json_array(shape),
    chunks = json_array(unlist(meta[["chunk_grid"]][["configuration"]][["chunk_shape"]])),
    dtype = v2_dtype_string(name, if (is.list(dt)) dt[["configuration"]] else NULL, endian),
    compressor = compressor,
    fill_value = meta[["fill_value"]],
    order = order,
    filters = if (length(filters)) filters else NULL,
    dimension_separator = meta[["chunk_key_encoding"]][["configuration"]][["separator"]] %||% "."
  )
  zarray[[pending_field]] <- meta[[pending_field]]
  if (!is.na(raw_bits_size(name)) && !is.null(zarray[["fill_value"]])) # v2 keeps void values as base64
    zarray[["fill_value"]] <- jsonlite::base64_enc(as.raw(unlist(zarray[["fill_value"]])))
  if (name == "null_terminated_bytes" && is.character(zarray[["fill_value"]]))
    zarray[["fill_value"]] <- jsonlite::base64_enc(charToRaw(zarray[["fill_value"]]))
  if (name == "struct" && !is.null(zarray[["fill_value"]])) {
    layout <- struct_layout(dt[["configuration"]])
    zarray[["fill_value"]] <- jsonlite::base64_enc(struct_fill_record(
      layout, struct_fill_normalize(layout, zarray[["fill_value"]]), endian == "big"))
  }
  list(.zarray = zarray, .zattrs = attrs)
}

v2_dtype_string <- function(name, config, endian) {
  e <- if (endian == "big") ">" else "<"
  code <- names(v2_dtypes)[match(name, v2_dtypes)]
  if (!is.na(code)) return(paste0(if (dtype_info(name)$size == 1L) "|" else e, code))
  if (!is.na(raw_bits_size(name))) return(paste0("|V", raw_bits_size(name))) # numpy's void
  switch(name,
    struct = v2_struct_dtype_doc(config, endian),
    string = , variable_length_bytes = , bytes = , vlen_array = "|O",
    fixed_length_utf32 = paste0(e, "U", as.integer(config[["length_bytes"]]) / 4L),
    null_terminated_bytes = paste0("|S", as.integer(config[["length_bytes"]])),
    numpy.datetime64 = , numpy.timedelta64 = {
      unit <- paste0(if ((config[["scale_factor"]] %||% 1) != 1) config[["scale_factor"]], config[["unit"]] %||% "s")
      paste0(e, if (name == "numpy.datetime64") "M8[" else "m8[", unit, "]")
    },
    zarr_abort("unsupported", sprintf("data type '%s' cannot be written as Zarr v2", name))
  )
}

v2_codec_doc <- function(cd) {
  cfg <- cd[["configuration"]] %||% list()
  switch(cd[["name"]],
    blosc = list(id = "blosc", cname = cfg[["cname"]], clevel = cfg[["clevel"]],
                 shuffle = match(cfg[["shuffle"]] %||% "shuffle", blosc_shuffles) - 1L,
                 blocksize = cfg[["blocksize"]] %||% codec_default("blosc", "blocksize")),
    # numcodecs before 0.13 refuses a "checksum" key: write it only when set
    zstd = c(list(id = "zstd", level = cfg[["level"]] %||% codec_default("zstd", "level")), if (isTRUE(cfg[["checksum"]])) list(checksum = TRUE)),
    gzip = list(id = "gzip", level = cfg[["level"]] %||% codec_default("gzip", "level")),
    crc32c = list(id = "crc32c"),
    c(list(id = sub("^numcodecs[.]", "", cd[["name"]])), cfg)
  )
}

v2_set_metadata <- function(store, prefix, metadata, only = NULL) {
  docs <- v2_from_v3(metadata)
  for (doc in if (is.null(only)) names(docs) else intersect(names(docs), only)) {
    value <- docs[[doc]]
    if (doc == ".zattrs" && !length(value)) {
      if (store$exists(paste0(prefix, doc))) store$erase(paste0(prefix, doc))
      next
    }
    store$set(paste0(prefix, doc), charToRaw(json_write(value)))
  }
}

# numcodecs' "json2" object codec (v2): each chunk is the JSON text of the
# chunk's items as nested lists in C order (Python's tolist()), followed by
# the dtype ("|O") and the chunk shape: [["a","b"],["c","d"],"|O",[2,2]].
# Chunks are decoded and encoded here in R, on top of the C byte codecs.

json2_bb_codecs <- function(array) {
  Filter(function(cd) cd[["mode"]] == "bytes -> bytes", array$codecs)
}

# The array's object codec that R runs (json2 or categorize).
r_object_codec <- function(array) Find(function(cd) cd$name %in% r_object_codecs, array$codecs)

# One stored chunk -> its values in C order (NULL items are NA).
json2_decode_chunk <- function(array, raw, key, n) {
  for (cd in rev(json2_bb_codecs(array))) raw <- cd$decode(raw)
  oc <- r_object_codec(array)
  if (identical(oc$name, "categorize")) return(categorize_decode(oc$configuration, raw, n, array, key))
  items <- json_parse(raw, "json2 chunk", array = array$path, key = key)
  bad <- function() zarr_abort("corrupt_chunk", "json2 chunk does not hold the chunk's items",
                               array = array$path, key = key)
  if (!is.list(items) || length(items) < 2L) bad()
  flat <- function(x) {
    if (is.null(x)) return(NA_character_)
    if (is.list(x)) return(unlist(lapply(x, flat), use.names = FALSE))
    if (!is.atomic(x) || length(x) != 1L) bad()
    as.character(x)
  }
  vals <- flat(items[seq_len(length(items) - 2L)])
  if (length(vals) != n) bad()
  if (is.null(vals)) character() else vals
}

# Values in C order -> the stored chunk.
json2_encode_chunk <- function(array, vals, cshape) {
  oc <- r_object_codec(array)
  if (identical(oc$name, "categorize")) {
    raw <- categorize_encode(oc$configuration, vals)
    for (cd in json2_bb_codecs(array)) raw <- cd$encode(raw)
    return(raw)
  }
  nest <- function(v, dims) {
    if (length(dims) <= 1L) return(paste(json_str(v), collapse = ","))
    m <- prod(dims[-1L])
    paste0("[", vapply(seq_len(dims[1L]), function(i) nest(v[(i - 1) * m + seq_len(m)], dims[-1L]), ""),
           "]", collapse = ",")
  }
  body <- nest(vals, cshape)
  txt <- paste0("[", body, if (nzchar(body)) ",", "\"|O\",[", paste(json_num(cshape), collapse = ","), "]]")
  raw <- charToRaw(txt)
  for (cd in json2_bb_codecs(array)) raw <- cd$encode(raw)
  raw
}

# numcodecs' categorize: the stored code type ("|u1", "<u2", ...) that must
# hold every label's index.
categorize_type <- function(astype, nlabels) {
  m <- if (is_json_string(astype)) regmatches(astype, regexec("^([<>|=]?)([iu])([124])$", astype))[[1L]] else character()
  if (!length(m)) zarr_abort("codec", sprintf("categorize: unsupported astype '%s'", format(astype)))
  size <- as.integer(m[4L])
  if (nlabels >= 2^(8 * size - (m[3L] == "i")))
    zarr_abort("codec", sprintf("categorize: %d labels do not fit astype '%s'", nlabels, astype))
  list(size = size, signed = m[3L] == "i", endian = if (m[2L] == ">") "big" else "little")
}

# codes -> labels; 0 (a value without a label, NA too) is "", as numcodecs reads it
categorize_decode <- function(cfg, raw, n, array, key) {
  labels <- vapply(cfg[["labels"]], as.character, "")
  t <- categorize_type(cfg[["astype"]], length(labels))
  if (length(raw) != n * t$size)
    zarr_abort("corrupt_chunk", sprintf("categorize chunk of %d bytes does not hold %s codes of %d bytes",
                                        length(raw), format(n), t$size), array = array$path, key = key)
  codes <- if (t$size == 1L && !t$signed) as.integer(raw)
    else readBin(raw, "integer", n, size = t$size, signed = t$signed || t$size == 4L, endian = t$endian)
  if (any(codes < 0L | codes > length(labels)))
    zarr_abort("corrupt_chunk", "categorize code beyond the labels", array = array$path, key = key)
  c("", labels)[codes + 1L]
}

categorize_encode <- function(cfg, vals) {
  labels <- vapply(cfg[["labels"]], as.character, "")
  t <- categorize_type(cfg[["astype"]], length(labels))
  codes <- match(vals, labels, nomatch = 0L)
  if (t$size == 1L) return(as.raw(codes))
  writeBin(codes, raw(), size = t$size, endian = t$endian)
}

# numcodecs' vlen-array items: the element type ("<i4") as readBin() reads it
vlen_array_type <- function(dtype) {
  m <- if (is_json_string(dtype)) regmatches(dtype, regexec("^([<>|=]?)([iuf])([1248])$", dtype))[[1L]] else character()
  ok <- length(m) && paste0(m[3L], m[4L]) %in% c("i1", "i2", "i4", "u1", "u2", "f4", "f8")
  if (!ok) zarr_abort("codec", sprintf("vlen-array: unsupported dtype '%s'", format(dtype)))
  list(what = if (m[3L] == "f") "double" else "integer", size = as.integer(m[4L]), signed = m[3L] == "i",
       endian = if (m[2L] == ">") "big" else "little")
}

# the engine's vlen-bytes items -> numeric vectors, and back
vlen_array_from_raw <- function(items, dtype) {
  t <- vlen_array_type(dtype)
  out <- lapply(items, function(r) {
    if (is.null(r)) return(NULL)
    if (length(r) %% t$size) zarr_abort("corrupt_chunk", "a vlen-array item is not a whole number of elements")
    readBin(r, t$what, length(r) %/% t$size, size = t$size, signed = t$signed || t$size >= 4L, endian = t$endian)
  })
  dim(out) <- dim(items)
  out
}

vlen_array_to_raw <- function(values, dtype) {
  t <- vlen_array_type(dtype)
  lapply(values, function(v) {
    if (is.null(v)) return(raw(0))
    v <- if (t$what == "double") as.double(v) else as.integer(v)
    if (t$size == 1L) return(as.raw(bitwAnd(v, 255L)))
    writeBin(v, raw(), size = t$size, endian = t$endian)
  })
}

# R array of a chunk <-> C order values
json2_c_order <- function(arr, cshape) {
  if (length(cshape) <= 1L) return(as.vector(arr))
  as.vector(aperm(array(arr, cshape), rev(seq_along(cshape))))
}
json2_r_order <- function(vals, cshape) {
  if (length(cshape) <= 1L) return(vals)
  aperm(array(vals, rev(cshape)), rev(seq_along(cshape)))
}

# The chunks a selection touches, and where their elements go.
json2_plan <- function(array, grid, sel) {
  shape <- array$shape
  chunk <- grid$chunk_shape
  sel <- lapply(sel, sel_indices)
  n_out <- lengths(sel)
  chunks_per_dim <- lapply(seq_along(shape), function(d) unique(sel[[d]] %/% chunk[d]))
  coords <- as.matrix(expand.grid(chunks_per_dim))
  list(sel = sel, n_out = n_out, coords = coords, keys = grid$chunk_keys(coords),
       strides = cumprod(c(1, n_out))[seq_along(n_out)], chunk = chunk,
       # per chunk: positions in the selection (1-based per dimension) and in the chunk
       at = function(r) {
         idx <- lapply(seq_along(shape), function(d) which(sel[[d]] %/% chunk[d] == coords[r, d]))
         local <- lapply(seq_along(shape), function(d) sel[[d]][idx[[d]]] - coords[r, d] * chunk[d] + 1)
         list(idx = idx, local = local)
       })
}

read_json2 <- function(array, grid, sel) {
  if (!length(array$shape)) zarr_abort("unsupported", "0-d json2 arrays are not supported", array = array$path)
  if (inherits(sel, "zarr_points")) { # the block of the points' indices, then the points
    u <- lapply(seq_len(ncol(sel)), function(d) sort(unique(sel[, d])))
    at <- vapply(seq_along(u), function(d) match(sel[, d], u[[d]]) - 1, numeric(nrow(sel)))
    block <- read_json2(array, grid, u)
    return(as.vector(block)[matrix(at, ncol = length(u)) %*% cumprod(c(1, lengths(u)))[seq_along(u)] + 1])
  }
  p <- json2_plan(array, grid, sel)
  out <- rep(NA_character_, prod(p$n_out))
  fill <- as.character(array$data_type$fill_value)
  n <- prod(p$chunk)
  for (r in seq_len(nrow(p$coords))) {
    raw <- array$store$get(p$keys[r])
    if (is.null(raw) && zarr_missing_chunks_error())
      zarr_abort("missing_chunk", sprintf("chunk '%s' is missing (option zarr.missing_chunks is \"error\")", p$keys[r]),
                 array = array$path, key = p$keys[r])
    vals <- if (is.null(raw)) rep(fill, n) else json2_decode_chunk(array, raw, p$keys[r], n)
    arr <- json2_r_order(vals, p$chunk)
    a <- p$at(r)
    pos <- as.matrix(expand.grid(a$idx)) - 1
    out[pos %*% p$strides + 1] <- do.call(`[`, c(list(arr), a$local, list(drop = TRUE)))
  }
  if (length(p$n_out) > 1L) dim(out) <- p$n_out
  out
}

write_json2 <- function(array, grid, sel, data) {
  if (!length(array$shape)) zarr_abort("unsupported", "0-d json2 arrays are not supported", array = array$path)
  store <- array$store
  if (store$read_only) zarr_abort("read_only", "the store is read-only", array = array$path)
  if (inherits(sel, "zarr_points"))
    zarr_abort("unsupported", "json2 arrays are written by one index per dimension", array = array$path)
  data <- coerce_for_dtype(data, "string", array = array$path)
  fill <- enc2utf8(as.character(array$data_type$fill_value))
  warn_na_as_fill(data, array$data_type, fill_is_missing_marker(array$data_type), array$path)
  data[is.na(data)] <- fill # NA is written as the fill value
  p <- json2_plan(array, grid, sel)
  if (length(data) != prod(p$n_out) && length(data) != 1L)
    zarr_abort("value", sprintf("%s value(s) given for a selection of %s element(s)",
                                format(length(data)), format(prod(p$n_out))), array = array$path)
  data <- rep_len(data, prod(p$n_out))
  n <- prod(p$chunk)
  for (r in seq_len(nrow(p$coords))) {
    a <- p$at(r)
    pos <- as.matrix(expand.grid(a$idx)) - 1
    full <- all(lengths(lapply(a$local, unique)) == p$chunk)
    raw <- if (full) NULL else store$get(p$keys[r])
    vals <- if (is.null(raw)) rep(fill, n) else json2_decode_chunk(array, raw, p$keys[r], n)
    arr <- array(json2_r_order(vals, p$chunk), p$chunk)
    arr <- do.call(`[<-`, c(list(arr), a$local, list(value = data[pos %*% p$strides + 1])))
    store$set(p$keys[r], json2_encode_chunk(array, json2_c_order(arr, p$chunk), p$chunk))
  }
  invisible(array)
}
