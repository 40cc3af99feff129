# The `struct` data type (zarr-extensions data-types/struct; also read under
# its legacy name "structured") and Zarr v2 structured (numpy record) dtypes.
#
# The C engine moves each record as its bytes (the "record" string kind of
# src/strings.c: a list of raw vectors in R's element order), and the record
# bytes are split into field columns here, one vectorised conversion per
# field (the engine's own element kernels through ffi_decode_elements), not
# per element. Records are packed (no padding), fields in declaration order;
# multi-byte fields take the byte order of the bytes codec. A v2 subarray
# field (`["b", "<f8", [2]]`) is kept as the field's `shape` (Zarr v3's
# struct has no subarray fields: such arrays belong in v2).

# Field types a struct holds: fixed-size numbers, fixed-width strings and
# nested structs.
struct_scalar_kinds <- c("b", "i", "u", "f", "c")

# The validated layout of a struct's configuration: fields with their byte
# offset and size, and the record size. Legacy tuple fields
# (`["x", "float32"]`) are accepted.
struct_layout <- function(config) {
  fields <- config[["fields"]]
  if (!is.list(fields) || !length(fields) || is_json_object(fields))
    zarr_abort("data_type", "a struct data type needs a non-empty list of fields")
  off <- 0
  out <- vector("list", length(fields))
  for (k in seq_along(fields)) {
    f <- fields[[k]]
    if (is.list(f) && is.null(names(f)) && length(f) %in% 2:3) # legacy tuple form
      f <- list(name = f[[1L]], data_type = f[[2L]], shape = if (length(f) == 3L) f[[3L]])
    if (!is.list(f) || !is_json_string(f[["name"]]) || !nzchar(f[["name"]]) || is.null(f[["data_type"]]))
      zarr_abort("data_type", sprintf("field %d of the struct needs a name and a data_type", k))
    ty <- f[["data_type"]]
    name <- if (is.list(ty)) ty[["name"]] else ty
    if (!is_json_string(name))
      zarr_abort("data_type", sprintf("field '%s' of the struct has no data type name", f[["name"]]))
    cfg <- if (is.list(ty)) ty[["configuration"]]
    shape <- if (length(f[["shape"]])) suppressWarnings(as.numeric(unlist(f[["shape"]]))) else numeric()
    if (anyNA(shape) || any(shape < 1 | shape != floor(shape)) || prod(shape) > 2^24)
      zarr_abort("data_type", sprintf("field '%s' of the struct has an invalid shape", f[["name"]]))
    sub <- NULL
    kind <- dtype_kind(name)
    if (name %in% c("struct", "structured")) {
      sub <- struct_layout(cfg)
      size <- sub$size
      kind <- "t"
      name <- "struct"
    } else if (name %in% c("null_terminated_bytes", "fixed_length_utf32")) {
      size <- suppressWarnings(as.numeric(cfg[["length_bytes"]]))
      if (length(size) != 1L || is.na(size) || size < 1 || size > 2^20 ||
          (name == "fixed_length_utf32" && size %% 4 != 0))
        zarr_abort("data_type", sprintf("field '%s' of the struct needs a valid length_bytes", f[["name"]]))
    } else if (!is.na(kind) && kind %in% struct_scalar_kinds && !is.null(dtype_info(name)$size)) {
      size <- dtype_info(name)$size
    } else {
      zarr_abort("data_type", sprintf("field '%s' of the struct has data type '%s', which a struct here cannot hold",
                                      f[["name"]], substr(name, 1L, 60L)))
    }
    count <- if (length(shape)) prod(shape) else 1
    out[[k]] <- list(name = f[["name"]], type = name, config = cfg, kind = kind, size = size, count = count,
                     shape = shape, offset = off, sub = sub)
    off <- off + size * count
  }
  nm <- vapply(out, function(f) f$name, "")
  if (anyDuplicated(nm))
    zarr_abort("data_type", sprintf("the struct has two fields named '%s'", nm[anyDuplicated(nm)]))
  if (off > 2^30) zarr_abort("data_type", "the struct's records are too large")
  list(fields = out, names = nm, size = off)
}

# The configuration written back: object fields, nested structs as such.
struct_config_json <- function(layout) {
  list(fields = lapply(layout$fields, function(f) {
    ty <- if (!is.null(f$sub)) list(name = "struct", configuration = struct_config_json(f$sub))
      else if (length(f$config)) list(name = f$type, configuration = f$config) else f$type
    # a v2 subarray field keeps its shape (not part of the v3 struct spec)
    c(list(name = f$name, data_type = ty), if (length(f$shape)) list(shape = json_array(as.integer(f$shape))))
  }))
}

# ---- records <-> data.frame -------------------------------------------------

# Record bytes (n records of layout$size bytes, as stored) -> a data.frame
# with one column per field: subarray fields as matrices (one row per
# record, numpy's C order within the record), nested structs as data.frame
# columns, strings as character.
struct_decode <- function(layout, raw, n, big) {
  m <- matrix(raw, nrow = layout$size, ncol = n)
  cols <- lapply(layout$fields, function(f) {
    nb <- f$size * f$count
    bytes <- m[f$offset + seq_len(nb), , drop = FALSE]
    v <- switch(f$kind,
      t = struct_decode(f$sub, bytes, n * f$count, big),
      s = struct_strings_decode(f, bytes, n * f$count, big),
      {
        rt <- dtype_info(f$type)$rtype
        if (rt == "integer64" && zarr_int64_mode() == "double") rt <- "double"
        finish_rtype(.Call(ffi_decode_elements, as.vector(bytes), engine_dtype(f$type), rt, big,
                           raw(f$size), FALSE), rt)
      })
    if (f$count > 1 && !is.data.frame(v)) {
      keep <- class(v)
      v <- matrix(unclass(v), nrow = n, byrow = TRUE)
      if (identical(keep, "integer64")) class(v) <- keep
    }
    v
  })
  new_struct_frame(cols, layout$names, n)
}

new_struct_frame <- function(cols, names, n)
  structure(cols, names = names, class = "data.frame", row.names = .set_row_names(as.integer(n)))

# Fixed-width strings of a field (bytes: one column per string) -> character;
# trailing NUL padding dropped, as numpy does.
struct_strings_decode <- function(f, bytes, n, big) {
  w <- f$size
  unit <- if (f$type == "fixed_length_utf32") 4L else 1L
  bytes <- matrix(bytes, nrow = w, ncol = n)
  # the used length of each string: up to its last non-zero unit
  nz <- if (unit == 1L) bytes != as.raw(0) else {
    b <- bytes != as.raw(0)
    b <- matrix(b, nrow = 4L)
    matrix(colSums(b) > 0, nrow = w / 4L)
  }
  k <- nrow(nz)
  pos <- nz * seq_len(k)
  used <- if (k) do.call(pmax, lapply(seq_len(k), function(i) pos[i, ])) else integer(n)
  keep <- rep(seq_len(k), n) <= rep(used, each = k)
  if (unit == 4L) keep <- rep(keep, each = 4L)
  kept <- as.vector(bytes)[keep]
  parts <- split_records(kept, used * unit)
  from <- if (unit == 1L) "UTF-8" else if (big) "UTF-32BE" else "UTF-32LE"
  out <- iconv(unname(parts), from, "UTF-8")
  if (anyNA(out))
    zarr_abort("value", sprintf("field '%s' holds bytes that are not %s text", f$name, if (unit == 1L) "UTF-8" else "UTF-32"))
  Encoding(out) <- "UTF-8"
  out
}

# A data.frame (columns matched to fields by name) -> record bytes, n x size.
struct_encode <- function(layout, df, big, path = NULL) {
  if (!is.data.frame(df) && !(is.list(df) && !is.null(names(df))))
    zarr_abort("value", "a struct array is written from a data.frame", array = path)
  miss <- setdiff(layout$names, names(df))
  if (length(miss))
    zarr_abort("value", sprintf("the data.frame has no column for field(s) %s", paste(miss, collapse = ", ")), array = path)
  n <- NROW(df[[layout$names[1L]]])
  m <- matrix(as.raw(0), nrow = layout$size, ncol = n)
  for (f in layout$fields) {
    v <- df[[f$name]]
    nr <- if (is.data.frame(v) || is.matrix(v)) nrow(v) else length(v)
    if (nr != n) zarr_abort("value", sprintf("column '%s' has %d rows, not %d", f$name, nr, n), array = path)
    if (f$count > 1 && !is.data.frame(v)) {
      if (!is.matrix(v) || ncol(v) != f$count)
        zarr_abort("value", sprintf("field '%s' needs a matrix column of %s columns", f$name, format(f$count)), array = path)
      keep <- if (inherits(v, "integer64")) "integer64"
      v <- as.vector(t(unclass(v)))
      class(v) <- keep
    }
    nb <- f$size * f$count
    bytes <- switch(f$kind,
      t = struct_encode(f$sub, v, big, path),
      s = struct_strings_encode(f, v, big, path),
      {
        # NA: R's own NA where the type has one (int32, int64 as bit64 does,
        # floating point NA bits), else refused (a field has no fill of its own)
        own_na <- f$type %in% c("int32", "int64") || f$kind %in% c("f", "c")
        if (!own_na && anyNA(v))
          zarr_abort("value", sprintf("field '%s' (%s) cannot hold NA", f$name, f$type), array = path)
        dt <- engine_dtype(f$type)
        .Call(ffi_encode_elements, coerce_for_dtype(v, f$type, array = path), dt, big,
              if (f$type %in% c("int32", "int64")) fill_bytes(f$type, dtype_default_fill(f$type)) else raw(f$size),
              FALSE)
      })
    m[f$offset + seq_len(nb), ] <- bytes
  }
  m
}

struct_strings_encode <- function(f, v, big, path) {
  if (is.factor(v)) v <- as.character(v)
  if (!is.character(v)) zarr_abort("value", sprintf("field '%s' holds strings", f$name), array = path)
  v[is.na(v)] <- ""
  to <- if (f$type == "null_terminated_bytes") "UTF-8" else if (big) "UTF-32BE" else "UTF-32LE"
  r <- iconv(enc2utf8(v), "UTF-8", to, toRaw = TRUE)
  len <- lengths(r)
  if (any(len > f$size))
    zarr_abort("value", sprintf("a string of field '%s' does not fit in %s bytes", f$name, format(f$size)),
               array = path)
  w <- f$size
  out <- raw(w * length(v))
  out[rep((seq_along(v) - 1) * w, len) + sequence(len)] <- unlist(r, use.names = FALSE)
  out
}

# ---- fill values -------------------------------------------------------------

# A struct fill value in memory: a named list with one value per field (a
# data.frame row's worth). From the metadata: a JSON object (v3), record bytes
# as base64 (v2 and the legacy "structured"), or nothing / 0 (all zero).
struct_fill_normalize <- function(layout, value, big = FALSE) {
  if (is.null(value) || (is.numeric(value) && length(value) == 1L && !is.na(value) && value == 0))
    value <- raw(layout$size)
  if (is.character(value) && length(value) == 1L) {
    if (!grepl("^[A-Za-z0-9+/]*={0,2}$", value) || nchar(value) %% 4L != 0L)
      zarr_abort("fill_value", "the fill value of a struct must be an object or base64 text")
    value <- jsonlite::base64_dec(value)
  }
  if (is.raw(value)) {
    if (length(value) != layout$size)
      zarr_abort("fill_value", sprintf("the fill value has %d bytes, a record %s", length(value), format(layout$size)))
    return(struct_fill_from_frame(layout, struct_decode(layout, value, 1L, big)))
  }
  if (is.data.frame(value)) return(struct_fill_from_frame(layout, value))
  if (!is.list(value) || is.null(names(value)))
    zarr_abort("fill_value", "the fill value of a struct must name a value for each field")
  miss <- setdiff(layout$names, names(value))
  if (length(miss)) zarr_abort("fill_value", sprintf("the fill value has no value for field(s) %s", paste(miss, collapse = ", ")))
  extra <- setdiff(names(value), layout$names)
  if (length(extra)) zarr_abort("fill_value", sprintf("the fill value names unknown field(s) %s", paste(extra, collapse = ", ")))
  out <- lapply(layout$fields, function(f) {
    v <- value[[f$name]]
    if (f$kind == "t") return(struct_fill_normalize(f$sub, v, big))
    if (f$count > 1 && length(v) == f$count) return(lapply(v, function(e) normalize_fill(f$type, e)))
    v <- normalize_fill(f$type, v)
    if (f$count > 1) rep(list(v), f$count) else v
  })
  out <- stats::setNames(out, layout$names)
  struct_fill_record(layout, out, FALSE) # each value fits its field
  out
}

# One decoded row -> the fill value's in-memory form.
struct_fill_from_frame <- function(layout, df) {
  out <- lapply(layout$fields, function(f) {
    v <- df[[f$name]]
    if (f$kind == "t") return(struct_fill_from_frame(f$sub, v))
    vals <- if (is.matrix(v)) as.vector(v[1L, ]) else v[1L]
    vals <- lapply(seq_along(vals), function(i) normalize_fill(f$type, if (inherits(vals, "integer64")) as.character(vals[i]) else vals[[i]]))
    if (f$count > 1) vals else vals[[1L]]
  })
  stats::setNames(out, layout$names)
}

# The fill value as the record's bytes in the given byte order.
struct_fill_record <- function(layout, fill, big) {
  out <- lapply(layout$fields, function(f) {
    v <- fill[[f$name]]
    if (f$kind == "t") return(struct_fill_record(f$sub, v, big))
    vals <- if (f$count > 1) v else list(v)
    unlist(lapply(vals, function(e) struct_scalar_bytes(f, e, big)), use.names = FALSE)
  })
  unlist(out, use.names = FALSE)
}

struct_scalar_bytes <- function(f, v, big) {
  if (f$kind == "s") return(struct_strings_encode(f, as.character(v), big, NULL))
  b <- fill_bytes(f$type, v)
  if (big && f$size > 1L) {
    # complex: each part swapped on its own
    part <- if (f$kind == "c") f$size / 2L else f$size
    b <- b[as.vector(apply(matrix(seq_along(b), nrow = part), 2L, rev))]
  }
  if (.Platform$endian == "big" && !big && f$size > 1L) {
    part <- if (f$kind == "c") f$size / 2L else f$size
    b <- b[as.vector(apply(matrix(seq_along(b), nrow = part), 2L, rev))]
  }
  b
}

# The fill value in v3 metadata: an object of per-field values.
struct_fill_json <- function(layout, fill) {
  out <- lapply(layout$fields, function(f) {
    v <- fill[[f$name]]
    if (f$kind == "t") return(struct_fill_json(f$sub, v))
    if (f$count > 1) return(json_array(lapply(v, function(e) fill_json(f$type, e))))
    fill_json(f$type, v)
  })
  stats::setNames(out, layout$names)
}

# ---- byte order and Zarr v2 --------------------------------------------------

# The byte order of the bytes codec of a chain (inside sharding too).
struct_big_endian <- function(codecs) {
  fragments_big_endian(if (inherits(codecs, "zarr_codec_chain")) codec_chain_fragments(codecs)
                       else lapply(codecs, function(cd) cd$metadata_fragment()))
}

# The same from the codecs' metadata fragments.
fragments_big_endian <- function(frags) {
  for (cd in frags) {
    if (!is.list(cd)) next
    if (identical(cd[["name"]], "bytes")) return(identical(cd[["configuration"]][["endian"]], "big"))
    inner <- cd[["configuration"]][["codecs"]]
    if (identical(cd[["name"]], "sharding_indexed") && is.list(inner)) return(fragments_big_endian(inner))
  }
  FALSE
}

# A v2 structured dtype (`[["a", "<i4"], ["b", "<f8", [2]]]`) -> a v3 struct
# data type, and the one byte order of its multi-byte fields (numpy allows a
# byte order per field; Zarr's bytes codec has one).
v2_struct_dtype <- function(dtype) {
  orders <- character()
  conv <- function(d) {
    if (!is.list(d) || !length(d)) stop("not a list of fields")
    list(fields = lapply(d, function(f) {
      if (!is.list(f) || !length(f) %in% 2:3 || !is_json_string(f[[1L]])) stop("a field is not [name, dtype(, shape)]")
      ty <- f[[2L]]
      if (is.list(ty)) {
        sub <- list(name = "struct", configuration = conv(ty))
      } else {
        p <- v2_parse_dtype(ty)
        sub <- p$data_type
        if (substr(ty, 1L, 1L) %in% c("<", ">") && !(is.character(sub) && dtype_info_size1(sub)))
          orders <<- c(orders, p$endian)
      }
      c(list(name = f[[1L]], data_type = sub), if (length(f) == 3L) list(shape = json_array(unlist(f[[3L]]))))
    }))
  }
  cfg <- tryCatch(conv(dtype), error = function(e) NULL)
  if (is.null(cfg)) return(list(data_type = "v2:structured", endian = "little"))
  orders <- unique(orders)
  if (length(orders) > 1L) return(list(data_type = "v2:structured (fields of both byte orders)", endian = "little"))
  list(data_type = list(name = "struct", configuration = cfg), endian = if (length(orders)) orders else "little")
}

dtype_info_size1 <- function(name) {
  i <- match(name, dtype_table$name)
  !is.na(i) && identical(dtype_table$size[i], 1L)
}

# A struct data type -> the v2 dtype list.
v2_struct_dtype_doc <- function(config, endian) {
  layout <- struct_layout(config)
  doc <- function(l) lapply(l$fields, function(f) {
    ty <- if (f$kind == "t") doc(f$sub) else v2_dtype_string(f$type, f$config, endian)
    c(list(f$name, ty), if (length(f$shape)) list(json_array(as.integer(f$shape))))
  })
  doc(layout)
}

# x cut into consecutive pieces of the given lengths (a list, one per length),
# in one pass (split() by a factor built without sorting).
split_records <- function(x, lengths) {
  n <- length(lengths)
  f <- structure(rep.int(seq_len(n), lengths), levels = as.character(seq_len(n)), class = "factor")
  unname(split(x, f))
}

# Data to write to a struct array -> one raw vector per record, for the engine.
struct_records <- function(dt, data, codecs, path = NULL) {
  layout <- struct_layout(dt$configuration)
  if (is.list(data) && !is.data.frame(data) && length(data) && all(vapply(data[1L], is.raw, TRUE)) &&
      all(lengths(data) == layout$size) && is.null(names(data)))
    return(data) # already records
  m <- struct_encode(layout, data, struct_big_endian(codecs), path)
  split_records(as.vector(m), rep.int(layout$size, ncol(m)))
}

# Records read by the engine (a list of raw vectors) -> a data.frame.
struct_read_frame <- function(dt, out, codecs, lens) {
  layout <- struct_layout(dt$configuration)
  n <- length(out)
  df <- struct_decode(layout, unlist(out, use.names = FALSE), n, struct_big_endian(codecs))
  if (length(lens) > 1L) attr(df, "zarr_shape") <- lens
  df
}
