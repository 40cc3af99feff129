# The numcodecs family: v2 compressors and filters, and the same codecs under
# their "numcodecs.<id>" names in v3. All run in C (src/codec_lz4.c,
# codec_bz2.c, codec_checksum.c, codec_delta.c, codec_gzip.c, ...).

# id -> what the codec does; array -> array filters act on typed elements.
numcodecs_modes <- c(
  zlib = "bytes", gzip = "bytes", zstd = "bytes", blosc = "bytes", lz4 = "bytes", bz2 = "bytes",
  lzma = "bytes",
  crc32c = "bytes", adler32 = "bytes", fletcher32 = "bytes", crc32 = "bytes", jenkins_lookup3 = "bytes",
  shuffle = "bytes", packbits = "bytes",
  delta = "array", fixedscaleoffset = "array", bitround = "array", quantize = "array", astype = "array"
)

# A numeric element type for the C filters, as numpy writes it: "<f8".
num_spec <- function(type, big_default = FALSE) {
  if (is.null(type)) return(NULL)
  if (type %in% dtype_table$name) {
    info <- dtype_info(type)
    kind <- if (grepl("^float", type)) "f" else if (grepl("^uint", type)) "u" else "i"
    return(sprintf("%s%s%d", if (big_default) ">" else "<", kind, info$size))
  }
  m <- regmatches(type, regexec("^([<>|=]?)([iuf])([1248])$", type))[[1L]]
  if (!length(m)) zarr_abort("codec", sprintf("unsupported filter data type '%s'", type))
  big <- if (m[2L] == ">") TRUE else if (m[2L] == "<") FALSE else big_default
  sprintf("%s%s%s", if (big) ">" else "<", m[3L], m[4L])
}

#' @noRd
zarr_codec_numcodecs <- R6::R6Class("zarr_codec_numcodecs",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    initialize = function(id, configuration = list(), data_type = NULL) {
      if (is.na(numcodecs_modes[id]))
        zarr_abort("codec", sprintf("unsupported codec 'numcodecs.%s'", id))
      super$initialize(paste0("numcodecs.", id), configuration)
      private$.id <- id
      private$.dt <- data_type
      private$.from <- numcodecs_modes[[id]]
      private$.to <- numcodecs_modes[[id]]
      private$.elementwise <- numcodecs_modes[[id]] == "array"
    },
    copy = function() zarr_codec_numcodecs$new(private$.id, private$.config, private$.dt),
    encode = function(data) private$bb_encode(data),
    decode = function(data) private$bb_decode(data)
  ),
  active = list(id = function(value) private$.id),
  private = list(
    .id = NULL, .dt = NULL, .elementwise = FALSE,
    c_spec = function(big = FALSE) {
      cfg <- private$.config
      cfg <- c(cfg, codec_defaults[[private$.id]][setdiff(names(codec_defaults[[private$.id]]), names(cfg))])
      out <- c(list(name = private$.id), cfg[setdiff(names(cfg), c("id", "dtype", "astype"))])
      if (private$.id == "astype") { # decode_dtype: the array's; encode_dtype: stored
        dt <- cfg[["decode_dtype"]] %||% (if (!is.null(private$.dt)) private$.dt$data_type)
        if (is.null(cfg[["encode_dtype"]]) || is.null(dt))
          zarr_abort("codec", "numcodecs.astype needs encode_dtype and decode_dtype")
        out$dtype <- num_spec(dt, big)
        out$astype <- num_spec(cfg[["encode_dtype"]], big)
      }
      if (private$.id == "quantize") {
        digits <- cfg[["digits"]]
        if (!is.numeric(digits) || length(digits) != 1L || is.na(digits) || digits != trunc(digits) || abs(digits) > 300)
          zarr_abort("codec", "numcodecs.quantize needs whole number digits")
        ex <- -digits # log10 of the precision, 10^-digits
        ex <- if (ex < 0) floor(ex) else ceiling(ex)
        out$scale <- 2^ceiling(log2(10^-ex))
      }
      if (private$.id %in% c("delta", "fixedscaleoffset", "bitround", "quantize")) {
        dt <- cfg[["dtype"]] %||% (if (!is.null(private$.dt)) private$.dt$data_type)
        if (is.null(dt)) zarr_abort("codec", sprintf("numcodecs.%s needs a dtype", private$.id))
        out$dtype <- num_spec(dt, big)
        out$astype <- num_spec(cfg[["astype"]] %||% dt, big)
      }
      if (identical(private$.id, "jenkins_lookup3")) {
        iv <- cfg[["initval"]]
        if (!is.numeric(iv) || length(iv) != 1L || is.na(iv) || iv < 0 || iv >= 2^32 || iv != trunc(iv))
          zarr_abort("codec", "numcodecs.jenkins_lookup3: initval must be a whole number from 0 to 2^32 - 1")
        out$prefix <- jenkins_prefix_hex(cfg[["prefix"]])
      }
      if (identical(private$.id, "packbits")) # numcodecs: bool, one bit each, most significant first
        out <- list(name = "packbits", dtype = "|u1", bits = 1L, first_bit = 0L, last_bit = 0L,
                    padding = "first_byte", bit_order = "big")
      if (identical(private$.id, "lzma")) {
        out$preset <- if (is.null(cfg[["preset"]])) -1 else cfg[["preset"]]
        out$filters <- lzma_filters_text(cfg[["filters"]])
      }
      if (identical(private$.id, "blosc")) {
        out$typesize <- cfg[["typesize"]] %||% (if (!is.null(private$.dt)) private$.dt$size else 1L)
        sh <- if (is.null(cfg[["shuffle"]])) "shuffle" else blosc_shuffle_name(cfg[["shuffle"]], out$typesize)
        out$shuffle <- match(sh, blosc_shuffles) - 1L
      }
      out
    }
  )
)

# numcodecs' jenkins_lookup3 prefix (bytes hashed before the data: a list of
# byte values, or base64 text) as hexadecimal text for src/codec_checksum.c.
jenkins_prefix_hex <- function(prefix) {
  if (is.null(prefix)) return("")
  bytes <- if (is_json_string(prefix)) tryCatch(jsonlite::base64_dec(prefix), error = function(e) NULL)
    else suppressWarnings(as.numeric(unlist(prefix)))
  if (is.null(bytes) || (is.numeric(bytes) && (anyNA(bytes) || any(bytes < 0 | bytes > 255 | bytes != trunc(bytes)))) ||
      length(bytes) > 64L)
    zarr_abort("codec", "numcodecs.jenkins_lookup3: prefix must be at most 64 bytes (byte values or base64)")
  paste(sprintf("%02x", as.integer(bytes)), collapse = "")
}

# lzma's filter list (Python's lzma filter dicts: an "id" and options) as the
# text src/codec_lzma.c reads: "3,dist=4;33,preset=1". Ids beyond 2^53 (LZMA1,
# 2^62 + 1) come from JSON as digits ("json_literal") and stay exact.
lzma_filters_text <- function(filters) {
  if (is.null(filters) || !length(filters)) return("")
  if (!is.list(filters) || !all(vapply(filters, is_json_object, TRUE)))
    zarr_abort("codec", "numcodecs.lzma: filters must be a list of objects, each with an id")
  whole <- function(v, what) {
    if (inherits(v, "json_literal") || (is.character(v) && length(v) == 1L && grepl("^[0-9]+$", v)))
      return(unclass(v))
    if (!is.numeric(v) || length(v) != 1L || is.na(v) || v < 0 || v != trunc(v) || v > 2^53)
      zarr_abort("codec", sprintf("numcodecs.lzma: filter %s must be a whole number", what))
    formatC(v, format = "f", digits = 0)
  }
  paste(vapply(filters, function(f) {
    if (is.null(f[["id"]])) zarr_abort("codec", "numcodecs.lzma: a filter without an id")
    opts <- f[setdiff(names(f), "id")]
    paste(c(whole(f[["id"]], "id"), if (length(opts))
      paste0(names(opts), "=", vapply(names(opts), function(k) whole(opts[[k]], k), ""))), collapse = ",")
  }, ""), collapse = ";")
}

for (id in names(numcodecs_modes)) local({
  id <- id
  register_codec(paste0("numcodecs.", id), function(config, data_type, chunk_shape)
    zarr_codec_numcodecs$new(id, config, data_type))
})
register_codec("zlib", function(config, data_type, chunk_shape)
  zarr_codec_numcodecs$new("zlib", config, data_type))

# The C description of a codec chain. Array -> array codecs that act on each
# element alone (numcodecs filters, bitround, scale_offset, cast_value) give
# the same result applied to the serialised elements right after the array ->
# bytes codec's first step, in its byte order: that is where the C chain runs
# them, in their encoding order. An array -> bytes codec may describe itself
# as several steps (packbits: bytes, then the packing).
chain_c_spec <- function(codecs) {
  specs <- list()
  moved <- list()
  reshaped <- FALSE
  for (cd in codecs) {
    if (inherits(cd, "zarr_codec_reshape")) { # C order is unchanged: nothing to do
      reshaped <- TRUE
      next
    }
    if (reshaped && cd[["name"]] %in% c("transpose", "sharding_indexed"))
      zarr_abort("unsupported", sprintf("a '%s' codec after reshape is not supported", cd[["name"]]))
    if (codec_is_elementwise(cd)) {
      moved[[length(moved) + 1L]] <- cd
      next
    }
    if (length(moved) && identical(cd[["name"]], "transpose"))
      zarr_abort("unsupported", "an element filter before a transpose codec is not supported")
    if (identical(cd[["from"]], "array") && identical(cd[["to"]], "bytes")) {
      if (length(moved) && cd[["name"]] %in% c("sharding_indexed", "vlen-utf8", "vlen-bytes", "json2", "n5_default"))
        zarr_abort("unsupported", sprintf("an element filter before '%s' is not supported", cd[["name"]]))
      big <- identical(cd[["endian"]], "big")
      sp <- codec_c_spec(cd)
      if (!is.null(names(sp))) sp <- list(sp)
      specs <- c(specs, sp[1L], lapply(moved, codec_c_spec, big = big), sp[-1L])
      moved <- list()
      next
    }
    specs[[length(specs) + 1L]] <- codec_c_spec(cd)
  }
  specs
}
