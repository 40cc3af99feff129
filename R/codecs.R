# Codecs. Each class validates its configuration and knows its metadata
# fragment; the work on chunks happens in C (src/codec_*.c), which receives the
# flat description returned by each codec's private c_spec().

codec_registry <- new.env(parent = emptyenv())

# The default configuration of each codec: the one place defaults live (the
# C side has none; it refuses a flat description that lacks a key). The
# numcodecs entries are numcodecs' own defaults, which a v2 document may omit.
# blosc's shuffle and typesize follow the data type (see zarr_codec_blosc).
codec_defaults <- list(
  gzip = list(level = 6L),
  zstd = list(level = 1L, checksum = FALSE),
  blosc = list(cname = "zstd", clevel = 1L, blocksize = 0L),
  zlib = list(level = 1L),
  lz4 = list(acceleration = 1L),
  bz2 = list(level = 1L),
  lzma = list(format = 1L, check = -1L), # preset, filters: none (liblzma's preset 6)
  adler32 = list(location = "start"),
  crc32 = list(location = "start"),
  jenkins_lookup3 = list(initval = 0L),
  shuffle = list(elementsize = 4L),
  packbits = list(padding_encoding = "none"),
  scale_offset = list(offset = 0, scale = 1),
  cast_value = list(rounding = "nearest-even", out_of_range = "none")
)

codec_default <- function(codec, key) codec_defaults[[codec]][[key]]

# Build a codec object from a metadata fragment list(name=, configuration=).
codec_from_metadata <- function(fragment, data_type, chunk_shape, array = NULL) {
  if (is.character(fragment)) fragment <- list(name = fragment)
  if (!is_json_object(fragment)) zarr_abort("metadata", "a codec entry must be a JSON object", array = array)
  name <- fragment[["name"]]
  if (!is_json_string(name, max_name_bytes) || !nzchar(name))
    zarr_abort("metadata", "codec entry without a name", array = array)
  ctor <- codec_registry[[name]]
  if (is.null(ctor))
    zarr_abort("codec", sprintf("unsupported codec '%s'", name), array = array)
  config <- fragment[["configuration"]] %||% list()
  ctor(config, data_type, chunk_shape)
}

register_codec <- function(name, ctor) {
  assign(name, ctor, envir = codec_registry)
  codec_chain_forget() # a chain validated before may now mean something else
}

# A validated codec chain, as arrays and array builders keep it: the
# metadata fragments in their normal form, what each codec takes and gives,
# and the flat description the C engine needs. The zarr_codec_* objects are
# built only when asked for ($codecs, printing). Validating builds them once
# per distinct (codecs, data type, chunk shape): the result is remembered, so
# opening or creating many arrays alike does not build R6 objects again.
codec_chain_cache <- new.env(parent = emptyenv())

# The last array metadata that parse_array_metadata() accepted for a new
# array: creating many arrays from one definition checks it once. Forgotten
# when codecs or data types are registered (codec_chain_forget(),
# zarr_register_data_type()), which can change what is valid; builders
# then make their documents anew.
validated_slot <- new.env(parent = emptyenv())
validated_slot$generation <- 0 # counts the changes of the registries (array_builder's metadata())

already_validated <- function(m) !is.null(validated_slot$m) && identical(validated_slot$m, m)
remember_validated <- function(m) validated_slot$m <- m
forget_validated <- function() {
  validated_slot$m <- NULL
  validated_slot$generation <- validated_slot$generation + 1
}

codec_chain_forget <- function() {
  rm(list = ls(codec_chain_cache, all.names = TRUE), envir = codec_chain_cache)
  forget_validated()
  parsed_cache_forget() # parsed array metadata hold chains
}

# Errors (classed, naming `array`) come from the codecs' own validation, as
# when the objects were built at once; an error of the flat description
# (a chain the engine cannot run) is kept and raised when data are used.
codec_chain <- function(entries, data_type, chunk_shape, array = NULL) {
  key <- rawToChar(serialize(list(entries, data_type$data_type, data_type$size, data_type$fill_value,
                                  data_type$configuration, as.numeric(chunk_shape)), NULL, ascii = TRUE))
  hit <- codec_chain_cache[[key]]
  if (is.null(hit)) {
    codecs <- codecs_from_metadata(entries, data_type = data_type, chunk_shape = chunk_shape, array = array)
    spec <- tryCatch(chain_c_spec(codecs), error = function(e) e)
    hit <- list(fragments = tryCatch(lapply(codecs, function(cd) cd$metadata_fragment()), error = function(e) e),
                names = vapply(codecs, function(cd) cd$name, ""),
                modes = vapply(codecs, function(cd) cd$mode, ""),
                spec = spec)
    if (length(ls(codec_chain_cache, all.names = TRUE)) >= 256L) codec_chain_forget()
    assign(key, hit, envir = codec_chain_cache)
  }
  chain <- hit
  chain$entries <- entries
  chain$chunk_shape <- chunk_shape
  chain$array <- array
  class(chain) <- "zarr_codec_chain"
  codec_chain_for(chain, data_type)
}

# A chain of its own for an array (whose data type is `data_type`): the
# codec objects are built on first use, in a box no other array shares.
codec_chain_for <- function(chain, data_type) {
  entries <- chain$entries
  chunk_shape <- chain$chunk_shape
  array <- chain$array
  chain$box <- new.env(parent = emptyenv()) # the codec objects, once built
  chain$make <- function() codecs_from_metadata(entries, data_type = data_type, chunk_shape = chunk_shape, array = array)
  chain
}

# The metadata fragments of a chain, in their normal form.
codec_chain_fragments <- function(chain) {
  if (inherits(chain$fragments, "condition")) stop(chain$fragments)
  chain$fragments
}

# The zarr_codec_* objects of a chain, built on first use.
codec_chain_objects <- function(chain) {
  if (!inherits(chain, "zarr_codec_chain")) return(chain)
  if (is.null(chain$box$objects)) chain$box$objects <- chain$make()
  chain$box$objects
}

# The flat description of a chain for the engine (an error when it has none).
codec_chain_spec <- function(chain) {
  if (inherits(chain$spec, "condition")) stop(chain$spec)
  chain$spec
}

# A codec chain from its metadata fragments. Each codec sees the shape its
# input has: a transpose codec permutes the shape for the codecs after it.
codecs_from_metadata <- function(entries, data_type, chunk_shape, array = NULL) {
  shape <- chunk_shape
  lapply(entries, function(fragment) {
    cd <- codec_from_metadata(fragment, data_type, shape, array)
    if (inherits(cd, "zarr_codec_transpose") && length(cd$order) == length(shape))
      shape <<- shape[cd$order + 1L]
    if (inherits(cd, "zarr_codec_reshape")) shape <<- cd$output_shape
    if (inherits(cd, "zarr_codec_cast_value")) # the codecs after it see the new type
      data_type <<- zarr_data_type$new(cd$data_type)
    cd
  })
}

cfg_int <- function(config, name, default, lo = -Inf, hi = Inf, codec = "") {
  v <- config[[name]]
  if (is.null(v)) return(as.integer(default))
  if (is.list(v)) v <- unlist(v)
  v <- suppressWarnings(as.numeric(v))
  if (length(v) != 1L || is.na(v) || v != trunc(v) || v < lo || v > hi)
    zarr_abort("codec", sprintf("codec '%s': '%s' must be a whole number between %s and %s",
                                codec, name, lo, hi))
  as.integer(v)
}

#' Zarr codecs
#'
#' A codec transforms chunk data when it is stored (encoding) and back when it
#' is read (decoding). Array-to-array codecs (such as `transpose`) come first
#' in a chain, then exactly one array-to-bytes codec (`bytes`), then any number
#' of bytes-to-bytes codecs (compressors and checksums). The base class does
#' nothing to the data.
#'
#' @seealso [array_builder] (`add_codec()`), [register_zarr_codec()],
#'   [zarr_codec_bytes], [zarr_codec_transpose], [zarr_codec_gzip],
#'   [zarr_codec_zstd], [zarr_codec_blosc], [zarr_codec_crc32c]
#' @examples
#' z <- open_zarr(system.file("extdata", "volcano.zarr", package = "zarr"), read_only = TRUE)
#' a <- z[["/elevation"]]
#' a$codecs
#' @export
zarr_codec <- R6::R6Class("zarr_codec",
  inherit = zarr_extension,
  cloneable = FALSE,
  public = list(
    #' @description Create a codec object.
    #' @param name The name of the codec.
    #' @param configuration A list with the configuration parameters.
    #' @return An instance of this class.
    initialize = function(name, configuration) {
      super$initialize(name)
      private$.config <- if (missing(configuration) || is.null(configuration)) list() else configuration
    },

    #' @description An independent copy of the codec. The base class cannot be
    #'   copied.
    #' @return Always an error for the base class.
    copy = function() {
      zarr_abort("codec", "the base codec class cannot be copied")
    },

    #' @description Print a summary of the codec.
    print = function() {
      cat("<Zarr codec>", self$name, sprintf("(%s)", self$mode), "\n")
      cfg <- self$configuration
      for (n in names(cfg)) cat(sprintf("  %s: %s\n", n, paste(format(unlist(cfg[[n]])), collapse = ", ")))
      invisible(self)
    },

    #' @description The metadata fragment of the codec.
    #' @return A list with `name` and, when it has one, `configuration`.
    metadata_fragment = function() {
      cfg <- self$configuration
      if (length(cfg)) list(name = self$name, configuration = cfg) else list(name = self$name)
    },

    #' @description Encode data (a no-op for the base class).
    #' @param data The data to encode.
    #' @return The data, unaltered.
    encode = function(data) data,

    #' @description The flat description of the codec that the C engine
    #'   runs (used by the array; a class written in R describes itself in
    #'   its private `c_spec()`).
    #' @param big Whether the elements this codec sees are big endian (for
    #'   codecs that work on elements, placed after the bytes codec).
    #' @return A named list.
    engine_spec = function(big = FALSE) {
      f <- private$c_spec
      if ("big" %in% names(formals(f))) f(big) else f()
    },

    #' @description Decode data (a no-op for the base class).
    #' @param data The data to decode.
    #' @return The data, unaltered.
    decode = function(data) data
  ),
  active = list(
    #' @field mode (read-only) "array -> array", "array -> bytes" or "bytes -> bytes".
    mode = function(value) paste(private$.from, "->", private$.to),
    #' @field from (read-only) What the codec takes when encoding: "array" or "bytes".
    from = function(value) private$.from,
    #' @field to (read-only) What the codec produces when encoding: "array" or "bytes".
    to = function(value) private$.to,
    #' @field elementwise (read-only) Whether the codec works on single
    #'   elements, whatever their place (the engine applies it to the
    #'   elements next to the bytes codec).
    elementwise = function(value) isTRUE(private$.elementwise),
    #' @field configuration (read-only) The configuration parameters, as in the
    #'   Zarr metadata.
    configuration = function(value) {
      if (!missing(value)) zarr_abort("read_only", "configuration is read-only; use the codec's fields")
      private$config_list()
    }
  ),
  private = list(
    .from = "bytes", .to = "bytes", .config = NULL,
    config_list = function() private$.config,
    c_spec = function() c(list(name = self$name), private$.config),
    # bytes -> bytes codecs share one implementation of encode/decode
    bb_encode = function(data) {
      if (!is.raw(data)) zarr_abort("codec", sprintf("codec '%s' encodes raw vectors", self$name))
      .Call(ffi_codec_encode, private$c_spec(), data)
    },
    bb_decode = function(data) {
      if (!is.raw(data)) zarr_abort("codec", sprintf("codec '%s' decodes raw vectors", self$name))
      .Call(ffi_codec_decode, private$c_spec(), data, NULL)
    }
  )
)

#' The transpose codec
#'
#' Records the order in which the dimensions of a chunk are stored. R arrays
#' are column-major, so storing chunks with the dimensions reversed (the
#' default when an array is defined in R) keeps R's own byte order on disk and
#' makes reading and writing a plain copy; any other order is folded into the
#' single strided copy between chunks and the R array.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("int32", c(3, 4))
#' def$codec_info # arrays defined in R start with a transpose codec
#' a <- z$add_array("/", "m", def)
#' a[] <- matrix(1:12, 3, 4)
#' tr <- a$codecs[[1]]
#' tr
#' tr$order # 0-based: dimensions stored reversed, so chunks hold R's column-major bytes
#' a[2, ]
#' # the codec on its own permutes an R array into the stored order and back
#' tr3 <- zarr_codec_transpose$new(3)
#' x <- array(1:24, c(2, 3, 4))
#' dim(tr3$encode(x))
#' identical(tr3$decode(tr3$encode(x)), x)
#' @export
zarr_codec_transpose <- R6::R6Class("zarr_codec_transpose",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a transpose codec.
    #' @param shape_length The number of dimensions of the array.
    #' @param configuration Optional list with element `order`, a 0-based
    #'   permutation. The default reverses the dimensions (R order).
    #' @return An instance of this class.
    initialize = function(shape_length, configuration = list()) {
      super$initialize("transpose", list())
      private$.n <- as.integer(shape_length)
      ord <- configuration[["order"]]
      # "C" and "F": the orders of early v3 drafts (zarrita.py wrote them): as stored, reversed
      if (identical(ord, "C")) ord <- seq_len(private$.n) - 1L
      if (is.null(ord) || identical(ord, "F")) ord <- rev(seq_len(private$.n) - 1L)
      self$order <- unlist(ord)
      private$.from <- "array"
      private$.to <- "array"
    },

    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_transpose`.
    copy = function() zarr_codec_transpose$new(private$.n, list(order = self$order)),

    #' @description Permute an R array into stored dimension order.
    #' @param data An R array.
    #' @return The permuted array.
    encode = function(data) {
      if (private$.n < 2L) return(data)
      aperm(data, self$order + 1L)
    },

    #' @description Permute stored data back into an R array.
    #' @param data An array in stored dimension order.
    #' @return The R array.
    decode = function(data) {
      if (private$.n < 2L) return(data)
      aperm(data, order(self$order + 1L))
    }
  ),
  active = list(
    #' @field order The 0-based order in which dimensions are stored.
    order = function(value) {
      if (missing(value)) return(private$.order)
      value <- suppressWarnings(as.integer(unlist(value)))
      if (length(value) != private$.n || anyNA(value) || !setequal(value, seq_len(private$.n) - 1L))
        zarr_abort("codec", sprintf("transpose order must be a permutation of 0..%d", private$.n - 1L))
      private$.order <- value
    }
  ),
  private = list(
    .n = 0L, .order = integer(),
    config_list = function() list(order = json_array(private$.order)),
    c_spec = function() list(name = "transpose", order = private$.order)
  )
)
register_codec("transpose", function(config, data_type, chunk_shape)
  zarr_codec_transpose$new(length(chunk_shape), config))

#' The bytes codec
#'
#' Turns array elements into bytes with a given byte order (endianness), and
#' back. The byte order does not matter for one-byte types.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("int32", 6)
#' def$add_codec("bytes", list(endian = "big")) # reconfigures the one bytes codec
#' a <- z$add_array("/", "big_endian", def)
#' a[] <- 1:6
#' a[]
#' a$codecs[[1]]
#' a$codecs[[1]]$endian
#' # the codec on its own: R values to bytes and back
#' b <- zarr_codec_bytes$new("int32", 2, list(endian = "big"))
#' b$encode(c(1L, 256L))
#' b$decode(b$encode(c(1L, 256L)))
#' @export
zarr_codec_bytes <- R6::R6Class("zarr_codec_bytes",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a bytes codec.
    #' @param data_type The [zarr_data_type] of the array.
    #' @param chunk_shape The shape of a chunk.
    #' @param configuration Optional list with element `endian`, "little" or
    #'   "big". The default is little endian.
    #' @return An instance of this class.
    initialize = function(data_type, chunk_shape, configuration = NULL) {
      super$initialize("bytes", list())
      private$.dt <- as_data_type(data_type)
      private$.chunk_shape <- chunk_shape
      self$endian <- configuration[["endian"]] %||% "little"
      private$.from <- "array"
      private$.to <- "bytes"
    },

    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_bytes`.
    copy = function() {
      zarr_codec_bytes$new(private$.dt, private$.chunk_shape, list(endian = self$endian))
    },

    #' @description The metadata fragment; one-byte types carry no endianness.
    #' @return A list.
    metadata_fragment = function() {
      if (private$.dt$size == 1L) return(list(name = "bytes"))
      list(name = "bytes", configuration = list(endian = private$.endian))
    },

    #' @description Write R values as bytes, as the array engine writes a
    #'   chunk: the elements of an array of the chunk's shape in C order
    #'   (last index fastest). `NA` becomes the fill value when that marks
    #'   missing values (see `fill_as_na` in [zarr-options]); otherwise a
    #'   floating point `NA` keeps R's own `NA` bits (a NaN to other
    #'   readers), and types that cannot hold `NA` store the fill value
    #'   (`bool`: `FALSE`).
    #' @param data An R vector, matrix or array with the chunk's elements.
    #' @return A raw vector.
    encode = function(data) {
      dt <- private$.dt
      shape <- private$.chunk_shape
      if (length(shape) > 1L && length(data) == prod(shape)) { # R order -> C order
        keep <- if (inherits(data, "integer64")) class(data)
        data <- as.vector(aperm(array(unclass(data), shape), rev(seq_along(shape))))
        class(data) <- keep
      }
      .Call(ffi_encode_elements, coerce_for_dtype(data, dt$data_type), dt$data_type,
            private$.endian == "big", .Call(ffi_fill_bytes, dt$data_type, dt$fill_value),
            zarr_fill_as_na() && fill_is_missing_marker(dt))
    },

    #' @description Read bytes written in C order as R values, the reverse
    #'   of `encode()`; elements equal to a fill value that marks missing
    #'   values become `NA` (see `fill_as_na` in [zarr-options]: never for
    #'   `bool`, a NaN fill value or a fill value of zero).
    #' @param data A raw vector.
    #' @return An R vector, or an array of the chunk's shape.
    decode = function(data) {
      dt <- private$.dt
      out <- .Call(ffi_decode_elements, data, dt$data_type, dt$Rtype, private$.endian == "big",
                   .Call(ffi_fill_bytes, dt$data_type, dt$fill_value),
                   zarr_fill_as_na() && fill_is_missing_marker(dt))
      shape <- private$.chunk_shape
      if (length(shape) > 1L && length(out) == prod(shape)) # C order -> R order
        out <- aperm(array(out, rev(shape)), rev(seq_along(shape)))
      finish_rtype(out, dt$Rtype)
    }
  ),
  active = list(
    #' @field endian The byte order, "little" or "big".
    endian = function(value) {
      if (missing(value)) return(private$.endian)
      if (!is.character(value) || length(value) != 1L || !value %in% c("little", "big"))
        zarr_abort("codec", "endian must be \"little\" or \"big\"")
      private$.endian <- value
    }
  ),
  private = list(
    .dt = NULL, .chunk_shape = NULL, .endian = "little",
    config_list = function() list(endian = private$.endian),
    c_spec = function() list(name = "bytes", endian = private$.endian)
  )
)
register_codec("bytes", function(config, data_type, chunk_shape)
  zarr_codec_bytes$new(data_type, chunk_shape, config))

#' The gzip codec
#'
#' Compresses chunks with gzip (zlib's deflate with a gzip header).
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("float64", dim(volcano))
#' def$remove_codec("zstd")
#' def$add_codec("gzip", list(level = 9))
#' def$codec_info
#' a <- z$add_array("/", "volcano", def)
#' a[] <- volcano
#' identical(a[], volcano)
#' gz <- a$codecs[[3]]
#' gz
#' gz$level
#' # the codec on its own compresses raw vectors
#' bytes <- serialize(volcano, NULL)
#' packed <- gz$encode(bytes)
#' c(length(bytes), length(packed))
#' identical(gz$decode(packed), bytes)
#' @export
zarr_codec_gzip <- R6::R6Class("zarr_codec_gzip",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a gzip codec.
    #' @param configuration Optional list with element `level`, 0 (none) to 9
    #'   (smallest). Default 6.
    #' @return An instance of this class.
    initialize = function(configuration = NULL) {
      super$initialize("gzip", list())
      self$level <- configuration[["level"]] %||% codec_default("gzip", "level")
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_gzip`.
    copy = function() zarr_codec_gzip$new(list(level = self$level)),
    #' @description Compress a raw vector.
    #' @param data A raw vector.
    #' @return The compressed raw vector.
    encode = function(data) private$bb_encode(data),
    #' @description Decompress a raw vector.
    #' @param data A raw vector.
    #' @return The decompressed raw vector.
    decode = function(data) private$bb_decode(data)
  ),
  active = list(
    #' @field level The compression level, 0 to 9.
    level = function(value) {
      if (missing(value)) return(private$.level)
      private$.level <- cfg_int(list(level = value), "level", codec_default("gzip", "level"), 0, 9, "gzip")
    }
  ),
  private = list(
    .level = NULL,
    config_list = function() list(level = private$.level),
    c_spec = function() list(name = "gzip", level = private$.level)
  )
)
register_codec("gzip", function(config, data_type, chunk_shape) zarr_codec_gzip$new(config))

#' The zstd codec
#'
#' Compresses chunks with Zstandard.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("float64", dim(volcano))
#' def$remove_codec("zstd") # the default one, level 1
#' def$add_codec("zstd", list(level = 9, checksum = TRUE))
#' a <- z$add_array("/", "volcano", def)
#' a[] <- volcano
#' identical(a[], volcano)
#' zs <- a$codecs[[3]]
#' zs
#' c(level = zs$level, checksum = zs$checksum)
#' # the codec on its own compresses raw vectors
#' bytes <- serialize(volcano, NULL)
#' c(length(bytes), length(zs$encode(bytes)))
#' @export
zarr_codec_zstd <- R6::R6Class("zarr_codec_zstd",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a zstd codec.
    #' @param configuration Optional list with elements `level` (-131072 to
    #'   22; higher is smaller and slower; 0 means zstd's default, 3; default
    #'   here 1) and `checksum` (logical, default `FALSE`).
    #' @return An instance of this class.
    initialize = function(configuration = NULL) {
      super$initialize("zstd", list())
      self$level <- configuration[["level"]] %||% codec_default("zstd", "level")
      self$checksum <- configuration[["checksum"]] %||% codec_default("zstd", "checksum")
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_zstd`.
    copy = function() zarr_codec_zstd$new(list(level = self$level, checksum = self$checksum)),
    #' @description Compress a raw vector.
    #' @param data A raw vector.
    #' @return The compressed raw vector.
    encode = function(data) private$bb_encode(data),
    #' @description Decompress a raw vector.
    #' @param data A raw vector.
    #' @return The decompressed raw vector.
    decode = function(data) private$bb_decode(data)
  ),
  active = list(
    #' @field level The compression level.
    level = function(value) {
      if (missing(value)) return(private$.level)
      private$.level <- cfg_int(list(level = value), "level", codec_default("zstd", "level"), -131072, 22, "zstd")
    },
    #' @field checksum Whether zstd stores a checksum in each frame.
    checksum = function(value) {
      if (missing(value)) return(private$.checksum)
      if (!is.logical(value) || length(value) != 1L || is.na(value))
        zarr_abort("codec", "zstd checksum must be TRUE or FALSE")
      private$.checksum <- value
    }
  ),
  private = list(
    .level = NULL, .checksum = NULL,
    config_list = function() list(level = private$.level, checksum = private$.checksum),
    c_spec = function() list(name = "zstd", level = private$.level, checksum = private$.checksum)
  )
)
register_codec("zstd", function(config, data_type, chunk_shape) zarr_codec_zstd$new(config))

blosc_cnames <- c("blosclz", "lz4", "lz4hc", "zstd", "zlib")
blosc_shuffles <- c("noshuffle", "shuffle", "bitshuffle")

#' The blosc codec
#'
#' Compresses chunks with the blosc meta-compressor, optionally shuffling
#' bytes or bits of the elements first, which helps numeric data compress.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("float64", dim(volcano))
#' def$remove_codec("zstd")
#' def$add_codec("blosc", list(cname = "lz4", clevel = 5))
#' a <- z$add_array("/", "volcano", def)
#' a[] <- volcano
#' identical(a[], volcano)
#' bl <- a$codecs[[3]]
#' bl # byte shuffle of the 8-byte elements, then lz4
#' bl$configuration
#' @export
zarr_codec_blosc <- R6::R6Class("zarr_codec_blosc",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a blosc codec.
    #' @param data_type The [zarr_data_type] of the array; it sets `typesize`
    #'   and the default shuffle (byte shuffle for multi-byte types, bit
    #'   shuffle for one-byte types).
    #' @param configuration Optional list with `cname`, `clevel`, `shuffle`,
    #'   `typesize` and `blocksize`. The default is zstd at level 1.
    #' @return An instance of this class.
    initialize = function(data_type, configuration = NULL) {
      super$initialize("blosc", list())
      dt <- if (is.null(data_type)) NULL else as_data_type(data_type)
      size <- if (is.null(dt)) 1L else dt$size %|NA|% 1L
      self$cname <- configuration[["cname"]] %||% codec_default("blosc", "cname")
      self$clevel <- configuration[["clevel"]] %||% codec_default("blosc", "clevel")
      private$.typesize <- size # for the automatic shuffle
      self$shuffle <- configuration[["shuffle"]] %||% (if (size > 1L) "shuffle" else "bitshuffle")
      self$typesize <- configuration[["typesize"]] %||% size
      self$blocksize <- configuration[["blocksize"]] %||% codec_default("blosc", "blocksize")
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_blosc`.
    copy = function() {
      out <- zarr_codec_blosc$new(NULL, private$config_list())
      out
    },
    #' @description Compress a raw vector.
    #' @param data A raw vector.
    #' @return The compressed raw vector.
    encode = function(data) private$bb_encode(data),
    #' @description Decompress a raw vector.
    #' @param data A raw vector.
    #' @return The decompressed raw vector.
    decode = function(data) private$bb_decode(data)
  ),
  active = list(
    #' @field cname The compressor: "blosclz", "lz4", "lz4hc", "zstd" or "zlib".
    cname = function(value) {
      if (missing(value)) return(private$.cname)
      if (!is.character(value) || length(value) != 1L || !value %in% blosc_cnames)
        zarr_abort("codec", sprintf("blosc cname must be one of %s", paste(blosc_cnames, collapse = ", ")))
      private$.cname <- value
    },
    #' @field clevel The compression level, 0 to 9.
    clevel = function(value) {
      if (missing(value)) return(private$.clevel)
      private$.clevel <- cfg_int(list(clevel = value), "clevel", codec_default("blosc", "clevel"), 0, 9, "blosc")
    },
    #' @field shuffle "noshuffle", "shuffle" or "bitshuffle".
    shuffle = function(value) {
      if (missing(value)) return(private$.shuffle)
      if (!(is.character(value) && length(value) == 1L && value %in% blosc_shuffles))
        value <- blosc_shuffle_name(value, private$.typesize)
      if (!is.character(value) || length(value) != 1L || !value %in% blosc_shuffles)
        zarr_abort("codec", "blosc shuffle must be \"noshuffle\", \"shuffle\" or \"bitshuffle\"")
      private$.shuffle <- value
    },
    #' @field typesize Element size in bytes used for shuffling.
    typesize = function(value) {
      if (missing(value)) return(private$.typesize)
      private$.typesize <- cfg_int(list(typesize = value), "typesize", 1L, 1, 255, "blosc")
    },
    #' @field blocksize Block size in bytes; 0 lets blosc choose.
    blocksize = function(value) {
      if (missing(value)) return(private$.blocksize)
      private$.blocksize <- cfg_int(list(blocksize = value), "blocksize", codec_default("blosc", "blocksize"), 0, .Machine$integer.max, "blosc")
    }
  ),
  private = list(
    .cname = NULL, .clevel = NULL, .shuffle = "shuffle", .typesize = 1L, .blocksize = NULL,
    config_list = function() {
      list(cname = private$.cname, clevel = private$.clevel, shuffle = private$.shuffle,
           typesize = private$.typesize, blocksize = private$.blocksize)
    },
    c_spec = function() {
      list(name = "blosc", cname = private$.cname, clevel = private$.clevel,
           shuffle = match(private$.shuffle, blosc_shuffles) - 1L,
           typesize = private$.typesize, blocksize = private$.blocksize)
    }
  )
)
register_codec("blosc", function(config, data_type, chunk_shape)
  zarr_codec_blosc$new(data_type, config))

#' The crc32c codec
#'
#' Appends a CRC-32C checksum to each chunk when writing and verifies it when
#' reading. A mismatch is an error of class `zarr_error_checksum`.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("int32", 10)
#' def$add_codec("crc32c")
#' def$codec_info
#' a <- z$add_array("/", "checked", def)
#' a[] <- 1:10
#' a[]
#' # the codec on its own appends 4 bytes, and checks them when decoding
#' cr <- a$codecs[[3]]
#' sealed <- cr$encode(charToRaw("zarr"))
#' sealed
#' rawToChar(cr$decode(sealed))
#' sealed[1] <- as.raw(0) # damage the data
#' tryCatch(cr$decode(sealed), zarr_error_checksum = function(e) "checksum mismatch")
#' @export
zarr_codec_crc32c <- R6::R6Class("zarr_codec_crc32c",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a crc32c codec.
    #' @param configuration Ignored; the codec has no parameters.
    #' @return An instance of this class.
    initialize = function(configuration = NULL) {
      super$initialize("crc32c", list())
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_crc32c`.
    copy = function() zarr_codec_crc32c$new(),
    #' @description Append the checksum.
    #' @param data A raw vector.
    #' @return The raw vector with 4 checksum bytes appended.
    encode = function(data) private$bb_encode(data),
    #' @description Verify and strip the checksum.
    #' @param data A raw vector ending in a checksum.
    #' @return The raw vector without the checksum.
    decode = function(data) private$bb_decode(data)
  ),
  private = list(c_spec = function() list(name = "crc32c"))
)
register_codec("crc32c", function(config, data_type, chunk_shape) zarr_codec_crc32c$new(config))

# The sharding codec: a chunk (shard) holds a grid of inner chunks, each
# encoded with its own codec chain, and an index of their byte ranges.
zarr_codec_sharding <- R6::R6Class("zarr_codec_sharding",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    initialize = function(data_type, chunk_shape, configuration) {
      super$initialize("sharding_indexed", list())
      if (!is_json_dims(configuration[["chunk_shape"]]))
        zarr_abort("metadata", "sharding: 'chunk_shape' must be an array of positive integers")
      for (f in c("codecs", "index_codecs")) {
        v <- configuration[[f]]
        if (!is.null(v) && (!is.list(v) || (length(v) && !is.null(names(v)))))
          zarr_abort("metadata", sprintf("sharding: '%s' must be an array of codecs", f))
      }
      loc <- configuration[["index_location"]]
      if (!is.null(loc) && !(is_json_string(loc) && loc %in% c("start", "end")))
        zarr_abort("metadata", "sharding: 'index_location' must be \"start\" or \"end\"")
      inner <- as.numeric(unlist(configuration[["chunk_shape"]]))
      if (length(inner) != length(chunk_shape) || any(inner < 1) || any(chunk_shape %% inner != 0))
        zarr_abort("codec", "sharding: the inner chunk shape must divide the shard shape")
      private$.inner_shape <- inner
      private$.codecs <- codecs_from_metadata(configuration[["codecs"]] %||% list(list(name = "bytes")),
                                              data_type = data_type, chunk_shape = inner)
      private$.index_codecs <- lapply(configuration[["index_codecs"]] %||% list(list(name = "bytes"), list(name = "crc32c")),
                                      codec_from_metadata, data_type = zarr_data_type$new("uint64"),
                                      chunk_shape = c(chunk_shape / inner, 2))
      private$.location <- configuration[["index_location"]] %||% "end"
      private$.from <- "array"
      private$.to <- "bytes"
    },
    copy = function() self,
    encode = function(data) zarr_abort("codec", "sharding encodes whole arrays only, through the array"),
    decode = function(data) zarr_abort("codec", "sharding decodes whole arrays only, through the array")
  ),
  active = list(
    codecs = function(value) private$.codecs,
    inner_shape = function(value) private$.inner_shape
  ),
  private = list(
    .inner_shape = NULL, .codecs = NULL, .index_codecs = NULL, .location = "end",
    config_list = function() {
      list(chunk_shape = json_array(private$.inner_shape),
           codecs = lapply(private$.codecs, function(cd) cd$metadata_fragment()),
           index_codecs = lapply(private$.index_codecs, function(cd) cd$metadata_fragment()),
           index_location = private$.location)
    },
    c_spec = function() {
      list(name = "sharding_indexed", chunk_shape = private$.inner_shape,
           codecs = chain_c_spec(private$.codecs),
           index_codecs = chain_c_spec(private$.index_codecs),
           index_location = private$.location)
    }
  )
)
register_codec("sharding_indexed", function(config, data_type, chunk_shape)
  zarr_codec_sharding$new(data_type, chunk_shape, config))

# A codec's flat description for C; element filters take the byte order of
# the elements they see (`big`).
codec_c_spec <- function(codec, big = FALSE) codec$engine_spec(big)

codec_is_elementwise <- function(codec) isTRUE(codec$elementwise)

# Variable-length strings and bytes: the array -> bytes codecs of string arrays.
zarr_codec_vlen <- R6::R6Class("zarr_codec_vlen",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    initialize = function(name, configuration = named_list()) {
      super$initialize(name, configuration)
      private$.from <- "array"
      private$.to <- "bytes"
    },
    copy = function() zarr_codec_vlen$new(self$name, private$.config),
    metadata_fragment = function() list(name = self$name, configuration = private$.config)
  ),
  private = list(c_spec = function() list(name = self$name))
)
register_codec("vlen-utf8", function(config, data_type, chunk_shape) zarr_codec_vlen$new("vlen-utf8"))
register_codec("vlen-bytes", function(config, data_type, chunk_shape) zarr_codec_vlen$new("vlen-bytes"))
register_codec("json2", function(config, data_type, chunk_shape) zarr_codec_vlen$new("json2"))
# numcodecs' vlen-array (v2): the layout of vlen-bytes, each item the bytes
# of a 1-d array of `dtype` ("<i4"); R converts items (R/v2.R)
register_codec("vlen-array", function(config, data_type, chunk_shape) {
  vlen_array_type(config[["dtype"]])
  zarr_codec_vlen$new("vlen-array", list(dtype = config[["dtype"]]))
})
# numcodecs' categorize (v2): strings as the 1-based index of their label
# (0: none), stored as `astype`; R decodes its chunks, as json2's (R/v2.R)
register_codec("categorize", function(config, data_type, chunk_shape) {
  labels <- config[["labels"]]
  if (!is.list(labels) || !all(vapply(labels, is_json_string, TRUE)))
    zarr_abort("codec", "categorize: labels must be an array of strings")
  categorize_type(config[["astype"]] %||% "|u1", length(labels))
  zarr_codec_vlen$new("categorize", list(labels = labels, dtype = config[["dtype"]] %||% "|O",
                                         astype = config[["astype"]] %||% "|u1"))
})

as_data_type <- function(x) {
  if (inherits(x, "zarr_data_type")) return(x)
  if (is.character(x)) return(zarr_data_type$new(x))
  zarr_abort("data_type", "expected a zarr_data_type or the name of a data type")
}

# Make R data fit the array: the engine takes logical, integer, double,
# integer64 and complex vectors and checks ranges itself. `widen = FALSE`:
# the caller's C code widens integers for a floating-point type itself
# (ffi_array_write, in pieces that an interrupt can stop).
coerce_for_dtype <- function(data, dtype, array = NULL, widen = TRUE) {
  if (is_string_dtype(dtype)) {
    if (dtype == "vlen_array") {
      if (is.list(data) && all(vapply(data, function(v) is.null(v) || is.numeric(v) || is.logical(v), TRUE)))
        return(data)
      zarr_abort("value", "vlen-array values are written from a list of numeric vectors", array = array)
    }
    if (dtype %in% c("variable_length_bytes", "bytes")) {
      if (is.raw(data)) data <- list(data)
      if (is.list(data) && all(vapply(data, function(v) is.null(v) || is.raw(v), TRUE))) return(data)
      zarr_abort("value", "variable-length bytes are written from a list of raw vectors", array = array)
    }
    if (is.factor(data)) data <- as.character(data)
    if (is.character(data)) return(enc2utf8(data))
    if (is.logical(data) && all(is.na(data))) return(as.character(data))
    zarr_abort("value", sprintf("values of type %s cannot be stored as %s", typeof(data), dtype), array = array)
  }
  if (identical(dtype_kind(dtype), "x")) return(raw_bits_values(data, dtype, array))
  if (is.character(data))
    zarr_abort("value", sprintf("character values cannot be stored as %s", dtype), array = array)
  if (dtype %in% c("numpy.datetime64", "numpy.timedelta64")) return(data)
  # NA of a logical or integer vector is R's NA in a floating point array too
  if (identical(dtype_kind(dtype), "f") && (is.logical(data) || is.integer(data)))
    return(if (widen) as.double(data) else data)
  if (inherits(data, "integer64")) return(data)
  if (is.factor(data)) zarr_abort("value", "factors cannot be written; convert them first", array = array)
  complex_type <- identical(dtype_kind(dtype), "c")
  if (is.complex(data)) {
    if (!complex_type)
      zarr_abort("value", sprintf("complex values cannot be stored as %s", dtype), array = array)
    return(data)
  }
  if (complex_type) {
    if (!is.numeric(data) && !is.logical(data))
      zarr_abort("value", sprintf("values of type %s cannot be stored as %s", typeof(data), dtype), array = array)
    return(as.complex(data))
  }
  if (is.logical(data) || is.integer(data) || is.double(data)) return(data)
  if (is.raw(data) && dtype == "uint8") return(data) # bytes as they are
  zarr_abort("value", sprintf("values of type %s cannot be stored as %s", typeof(data), dtype), array = array)
}

# Values of a raw bits type (r8, r16, ...): a list of raw vectors of the
# type's size.
raw_bits_values <- function(data, dtype, array = NULL) {
  size <- raw_bits_size(dtype)
  if (!is.list(data) || !all(vapply(data, function(v) is.raw(v) && length(v) == size, TRUE)))
    zarr_abort("value", sprintf("%s values are written from a list of raw vectors of %d bytes", dtype, size),
               array = array)
  data
}

# Set the class of freshly decoded data where R needs one.
finish_rtype <- function(x, rtype) {
  if (identical(rtype, "integer64")) class(x) <- "integer64"
  x
}
