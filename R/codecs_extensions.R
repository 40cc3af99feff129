# Codecs from the registry of Zarr extensions (github.com/zarr-developers/
# zarr-extensions). Each is one class and one register_codec() line here, and
# one C file listed in src/codec_list.h.

#' The packbits codec
#'
#' An array -> bytes codec (a registered Zarr extension) that keeps only bits
#' `first_bit` to `last_bit` of each element and packs them one after the
#' other, least significant bit first; `bool` takes one bit per element.
#' Signed integers are sign-extended when read.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' # packbits takes the place of the bytes codec
#' def <- define_array("bool", 20)
#' def$add_codec("packbits")
#' def$codec_info
#' z <- create_zarr() # in memory
#' a <- z$add_array("/", "flags", def)
#' x <- rep(c(TRUE, FALSE, FALSE), length.out = 20)
#' a[] <- x
#' identical(a[], x)
#' a$codecs[[1]]
#' # on its own: nine bool elements (a byte each) become nine bits
#' pb <- zarr_codec_packbits$new("bool")
#' pb$encode(as.raw(c(1, 0, 1, 1, 0, 0, 0, 0, 1)))
#' @export
zarr_codec_packbits <- R6::R6Class("zarr_codec_packbits",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a packbits codec.
    #' @param data_type The [zarr_data_type] of the array: `bool`, an
    #'   integer or a real floating point type.
    #' @param configuration Optional list with `padding_encoding` ("none",
    #'   "first_byte" or "last_byte"), `first_bit` and `last_bit`.
    #' @return An instance of this class.
    initialize = function(data_type, configuration = NULL) {
      super$initialize("packbits", list())
      dt <- as_data_type(data_type)
      name <- dt$data_type
      if (!is.character(name) || !name %in% c("bool", dtype_table$name[grepl("^(u?int|float)", dtype_table$name)]))
        zarr_abort("codec", sprintf("packbits does not support data type '%s'", paste(format(name), collapse = " ")))
      private$.dt <- dt
      # the value bits: 1 for bool, 2 for int2, 4 for int4 and float4, 6 for float6
      private$.bits <- if (name == "bool") 1L else dtype_table$bits[match(name, dtype_table$name)]
      pad <- configuration[["padding_encoding"]] %||% codec_default("packbits", "padding_encoding")
      if (!is_json_string(pad) || !pad %in% c("none", "first_byte", "last_byte"))
        zarr_abort("codec", "packbits padding_encoding must be \"none\", \"first_byte\" or \"last_byte\"")
      private$.pad <- pad
      private$.first <- cfg_int(configuration, "first_bit", 0L, 0, private$.bits - 1L, "packbits")
      private$.last <- cfg_int(configuration, "last_bit", private$.bits - 1L, private$.first,
                               private$.bits - 1L, "packbits")
      private$.from <- "array"
      private$.to <- "bytes"
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_packbits`.
    copy = function() zarr_codec_packbits$new(private$.dt, private$config_list()),
    #' @description Pack elements given as their little-endian bytes.
    #' @param data A raw vector.
    #' @return The packed raw vector.
    encode = function(data) .Call(ffi_codec_encode, private$c_spec()[[2L]], data),
    #' @description Unpack into little-endian element bytes.
    #' @param data A raw vector.
    #' @return A raw vector.
    decode = function(data) .Call(ffi_codec_decode, private$c_spec()[[2L]], data, NULL)
  ),
  private = list(
    .dt = NULL, .bits = 8L, .pad = "none", .first = 0L, .last = 7L,
    # the defaults are left out, as other implementations write them
    config_list = function() {
      c(if (private$.pad != "none") list(padding_encoding = private$.pad),
        if (private$.first != 0L) list(first_bit = private$.first),
        if (private$.last != private$.bits - 1L) list(last_bit = private$.last))
    },
    c_spec = function() {
      signed <- grepl("^int", private$.dt$data_type)
      list(list(name = "bytes", endian = "little"),
           list(name = "packbits", dtype = sprintf("<%s%d", if (signed) "i" else "u", private$.dt$size),
                bits = private$.bits, first_bit = private$.first, last_bit = private$.last,
                padding = private$.pad, bit_order = "little"))
    }
  )
)
register_codec("packbits", function(config, data_type, chunk_shape) zarr_codec_packbits$new(data_type, config))

# Array -> array codecs that act on each element alone. The C chain runs them
# on the serialised elements right after the bytes codec (chain_c_spec()), so
# their encode() and decode() take and give little-endian element bytes.
#' @noRd
zarr_codec_elementwise <- R6::R6Class("zarr_codec_elementwise",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create the codec (for subclasses).
    #' @param name The codec's name.
    #' @param data_type The [zarr_data_type] the codec takes when encoding.
    #' @param types Names of the data types it supports.
    #' @return An instance of this class.
    initialize = function(name, data_type, types) {
      super$initialize(name, list())
      dt <- as_data_type(data_type)
      if (!is.character(dt$data_type) || !dt$data_type %in% types)
        zarr_abort("codec", sprintf("%s does not support data type '%s'", name,
                                    paste(format(dt$data_type), collapse = " ")))
      private$.dt <- dt
      private$.from <- "array"
      private$.to <- "array"
    },
    #' @description Encode elements given as little-endian bytes.
    #' @param data A raw vector.
    #' @return A raw vector.
    encode = function(data) .Call(ffi_codec_encode, private$c_spec(FALSE), data),
    #' @description Decode into little-endian element bytes.
    #' @param data A raw vector.
    #' @return A raw vector.
    decode = function(data) .Call(ffi_codec_decode, private$c_spec(FALSE), data, NULL)
  ),
  private = list(.dt = NULL, .elementwise = TRUE)
)

element_int_types <- c("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
element_num_types <- c(element_int_types, "float32", "float64")

# A scalar in the fill-value encoding of JSON: a number or NaN/Infinity/-Infinity.
json_scalar_num <- function(v, what) {
  if (is.list(v) && length(v) == 1L) v <- v[[1L]]
  if (is.numeric(v) && length(v) == 1L && !is.na(v)) return(as.numeric(v))
  if (is_json_string(v) && v %in% c("NaN", "Infinity", "-Infinity"))
    return(switch(v, "NaN" = NaN, "Infinity" = Inf, -Inf))
  zarr_abort("codec", sprintf("%s must be a number", what))
}

#' The bitround codec
#'
#' An array -> array codec (a registered Zarr extension; `numcodecs.bitround`
#' is its older name) that rounds each value to `keepbits` significant bits:
#' of the mantissa for floating point types, from the highest set bit for
#' integers. The rounding is lossy; it makes data compress better.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("float64", 5)
#' def$add_codec("bitround", list(keepbits = 4), .position = 1)
#' def$codec_info
#' a <- z$add_array("/", "rounded", def)
#' a[] <- c(pi, exp(1), 1 / 3, 100.3, -2.71)
#' a[] # 4 bits of each mantissa kept
#' a$codecs[[1]]
#' a$codecs[[1]]$configuration
#' @export
zarr_codec_bitround <- R6::R6Class("zarr_codec_bitround",
  inherit = zarr_codec_elementwise,
  cloneable = FALSE,
  public = list(
    #' @description Create a bitround codec.
    #' @param data_type The [zarr_data_type] of the array.
    #' @param configuration A list with `keepbits`, at least 1.
    #' @return An instance of this class.
    initialize = function(data_type, configuration = NULL) {
      super$initialize("bitround", data_type, element_num_types)
      if (is.null(configuration[["keepbits"]])) zarr_abort("codec", "bitround needs keepbits")
      private$.keepbits <- cfg_int(configuration, "keepbits", 1L, 1, private$.dt$size * 8, "bitround")
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_bitround`.
    copy = function() zarr_codec_bitround$new(private$.dt, private$config_list())
  ),
  private = list(
    .keepbits = NULL,
    config_list = function() list(keepbits = private$.keepbits),
    c_spec = function(big = FALSE)
      list(name = "bitround", dtype = num_spec(private$.dt$data_type, big), keepbits = private$.keepbits)
  )
)
register_codec("bitround", function(config, data_type, chunk_shape) zarr_codec_bitround$new(data_type, config))

#' The scale_offset codec
#'
#' An array -> array codec (a registered Zarr extension) that stores
#' `(x - offset) * scale` and reads `x / scale + offset`, in the arithmetic of
#' the array's data type. Often followed by `cast_value` to store floating
#' point data as small integers.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' z <- create_zarr() # in memory
#' def <- define_array("float64", 4)
#' def$add_codec("scale_offset", list(offset = 280, scale = 100), .position = 1)
#' a <- z$add_array("/", "t", def)
#' a[] <- c(281.25, 279.5, 280, 283.75)
#' a[] # reads undo the codec
#' so <- a$codecs[[1]]
#' so
#' # what is stored: (x - 280) * 100; the codec takes and gives little-endian elements
#' stored <- so$encode(writeBin(c(281.25, 279.5), raw(), endian = "little"))
#' readBin(stored, "double", 2, endian = "little")
#' @export
zarr_codec_scale_offset <- R6::R6Class("zarr_codec_scale_offset",
  inherit = zarr_codec_elementwise,
  cloneable = FALSE,
  public = list(
    #' @description Create a scale_offset codec.
    #' @param data_type The [zarr_data_type] of the array.
    #' @param configuration Optional list with `offset` (default 0) and
    #'   `scale` (default 1).
    #' @return An instance of this class.
    initialize = function(data_type, configuration = NULL) {
      super$initialize("scale_offset", data_type, element_num_types)
      extra <- setdiff(names(configuration), c("offset", "scale"))
      if (length(extra)) zarr_abort("codec", sprintf("scale_offset: unknown key '%s'", extra[1L]))
      private$.offset <- json_scalar_num(configuration[["offset"]] %||% codec_default("scale_offset", "offset"),
                                         "scale_offset offset")
      private$.scale <- json_scalar_num(configuration[["scale"]] %||% codec_default("scale_offset", "scale"),
                                        "scale_offset scale")
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_scale_offset`.
    copy = function() zarr_codec_scale_offset$new(private$.dt, private$config_list())
  ),
  private = list(
    .offset = 0, .scale = 1,
    config_list = function() list(offset = private$.offset, scale = private$.scale),
    c_spec = function(big = FALSE)
      list(name = "scale_offset", dtype = num_spec(private$.dt$data_type, big),
           scale = private$.scale, offset = private$.offset)
  )
)
register_codec("scale_offset", function(config, data_type, chunk_shape) zarr_codec_scale_offset$new(data_type, config))

cast_roundings <- c("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")

#' The cast_value codec
#'
#' An array -> array codec (a registered Zarr extension) that stores each
#' value converted to another numeric data type, rounding as `rounding` says
#' and handling values beyond the target's range as `out_of_range` says
#' ("clamp" or "wrap"; by default such a value is an error). `scalar_map`
#' maps chosen values (such as NaN) explicitly.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' # heights to a tenth of a metre, stored as 16-bit integers: (x - 100) * 10
#' x <- volcano + 0.25
#' z <- create_zarr() # in memory
#' def <- define_array("float64", dim(x))
#' def$add_codec("scale_offset", list(offset = 100, scale = 10), .position = 2)
#' # the fill value, NaN, has no int16 value: the scalar map stores it as -32768
#' def$add_codec("cast_value", list(data_type = "int16", scalar_map = list(
#'   encode = list(list("NaN", -32768)), decode = list(list(-32768, "NaN")))), .position = 3)
#' def$codec_info
#' a <- z$add_array("/", "heights", def)
#' a[] <- x
#' max(abs(a[] - x)) # rounded to tenths (to the even tenth at a tie)
#' cv <- a$codecs[[3]]
#' c(cv$name, cv$mode)
#' cv$data_type
#' cv$configuration$rounding
#' @export
zarr_codec_cast_value <- R6::R6Class("zarr_codec_cast_value",
  inherit = zarr_codec_elementwise,
  cloneable = FALSE,
  public = list(
    #' @description Create a cast_value codec.
    #' @param data_type The [zarr_data_type] of the array (its fill value
    #'   must survive the cast), or the name of a data type.
    #' @param configuration A list with `data_type` (the stored type) and
    #'   optionally `rounding`, `out_of_range` and `scalar_map`.
    #' @return An instance of this class.
    initialize = function(data_type, configuration = NULL) {
      super$initialize("cast_value", data_type, element_num_types)
      extra <- setdiff(names(configuration), c("data_type", "rounding", "out_of_range", "scalar_map"))
      if (length(extra)) zarr_abort("codec", sprintf("cast_value: unknown key '%s'", extra[1L]))
      target <- configuration[["data_type"]]
      if (!is_json_string(target) || !target %in% element_num_types)
        zarr_abort("codec", "cast_value: data_type must name an integer or float32/float64 type")
      private$.target <- target
      rounding <- configuration[["rounding"]] %||% codec_default("cast_value", "rounding")
      if (!is_json_string(rounding) || !rounding %in% cast_roundings)
        zarr_abort("codec", sprintf("cast_value: rounding must be one of %s", paste(cast_roundings, collapse = ", ")))
      private$.rounding <- rounding
      oor <- configuration[["out_of_range"]] %||% codec_default("cast_value", "out_of_range")
      if (!is_json_string(oor) || !oor %in% c("none", "clamp", "wrap") ||
          (oor == "wrap" && !target %in% element_int_types))
        zarr_abort("codec", "cast_value: out_of_range must be \"clamp\", or \"wrap\" for an integer type")
      private$.oor <- oor
      sm <- configuration[["scalar_map"]]
      for (dir in c("encode", "decode")) {
        pairs <- sm[[dir]] %||% list()
        if (length(pairs) > 3L) zarr_abort("unsupported", "cast_value: at most 3 scalar_map pairs each way")
        private$.map[[dir]] <- lapply(pairs, function(p) {
          if (length(p) != 2L) zarr_abort("codec", "cast_value: a scalar_map entry is a pair")
          c(json_scalar_num(p[[1L]], "a scalar_map value"), json_scalar_num(p[[2L]], "a scalar_map value"))
        })
      }
      private$.sm <- sm
      # the fill value of an array must survive the cast: NaN or an infinity
      # only through the map (a codec made from a type name has no fill value)
      fill <- if (inherits(data_type, "zarr_data_type")) suppressWarnings(as.numeric(data_type$fill_value))
      if (length(fill) == 1L && !is.finite(fill) && target %in% element_int_types &&
          !any(vapply(private$.map$encode, function(p) identical(is.nan(p[1L]), is.nan(fill)) && (is.nan(fill) || p[1L] == fill), TRUE)))
        zarr_abort("codec", sprintf("cast_value: the fill value %s has no %s value; map it in scalar_map",
                                    format(fill), target))
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_cast_value`.
    copy = function() zarr_codec_cast_value$new(private$.dt, private$config_list())
  ),
  active = list(
    #' @field data_type (read-only) The name of the stored data type.
    data_type = function(value) private$.target
  ),
  private = list(
    .target = NULL, .rounding = NULL, .oor = NULL, .sm = NULL, .map = list(),
    config_list = function() {
      c(list(data_type = private$.target, rounding = private$.rounding),
        if (private$.oor != "none") list(out_of_range = private$.oor),
        if (!is.null(private$.sm)) list(scalar_map = private$.sm))
    },
    c_spec = function(big = FALSE) {
      out <- list(name = "cast_value", dtype = num_spec(private$.dt$data_type, big),
                  astype = num_spec(private$.target, big), rounding = private$.rounding,
                  out_of_range = private$.oor)
      for (dir in c("encode", "decode")) {
        pre <- substr(dir, 1L, 3L)
        m <- private$.map[[dir]]
        out[[paste0(pre, "_n")]] <- length(m)
        for (i in seq_along(m)) {
          out[[sprintf("%s_from%d", pre, i)]] <- m[[i]][1L]
          out[[sprintf("%s_to%d", pre, i)]] <- m[[i]][2L]
        }
      }
      out
    }
  )
)
register_codec("cast_value", function(config, data_type, chunk_shape) zarr_codec_cast_value$new(data_type, config))

#' Register a codec written in R
#'
#' Makes a bytes -> bytes codec implemented by two R functions known to the
#' package under `name`: arrays whose metadata names it can be read and
#' written, and [array_builder]'s `add_codec(name, configuration)` adds it to
#' new arrays. The engine calls the functions once per chunk, on the R thread
#' (a chain holding such a codec is not decoded in parallel), so this is the
#' slow path; C codecs are listed in the package's codec table
#' (`src/codec_list.h`). An error in a function becomes a classed error of
#' the chunk (`zarr_error_codec` when encoding, `zarr_error_corrupt_chunk`
#' when decoding).
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @param name The codec's name, as it appears in the metadata (`"name"` in
#'   Zarr v3, `"id"` in Zarr v2). The names of built-in codecs are refused.
#' @param encode A function `(data, configuration)` taking a raw vector and
#'   the codec's configuration (a list) and returning the encoded raw vector.
#' @param decode A function `(data, configuration)` undoing `encode`.
#' @return The name, invisibly.
#' @examples
#' xor_bytes <- function(data, configuration) xor(data, as.raw(configuration$key))
#' register_zarr_codec("example.xor", xor_bytes, xor_bytes)
#' def <- define_array("int32", 10)
#' def$add_codec("example.xor", list(key = 42L))
#' z <- create_zarr()
#' a <- z$add_array("/", "x", def)
#' a[] <- 1:10
#' a[]
#' @export
register_zarr_codec <- function(name, encode, decode) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name))
    zarr_abort("argument", "name must be a single non-empty string")
  if (!is.function(encode) || !is.function(decode))
    zarr_abort("argument", "encode and decode must be functions (data, configuration)")
  known <- codec_registry[[name]]
  if (!is.null(known) && is.null(attr(known, "r_codec")))
    zarr_abort("argument", sprintf("'%s' is a built-in codec", name))
  ctor <- function(config, data_type, chunk_shape) zarr_codec_r$new(name, config, encode, decode)
  attr(ctor, "r_codec") <- TRUE
  register_codec(name, ctor)
  invisible(name)
}

# A bytes -> bytes codec written in R (register_zarr_codec()); C runs it
# through the codec table's "r_codec" row.
zarr_codec_r <- R6::R6Class("zarr_codec_r",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    initialize = function(name, configuration, encode, decode) {
      super$initialize(name, configuration %||% list())
      private$.encode <- encode
      private$.decode <- decode
    },
    copy = function() zarr_codec_r$new(self$name, private$.config, private$.encode, private$.decode),
    encode = function(data) private$bb_encode(data),
    decode = function(data) private$bb_decode(data)
  ),
  private = list(
    .encode = NULL, .decode = NULL,
    c_spec = function() list(name = "r_codec", codec = self$name, encode = private$.encode,
                             decode = private$.decode, configuration = private$.config)
  )
)

#' The reshape codec
#'
#' An array -> array codec (a registered Zarr extension) that gives a chunk
#' another shape with the same elements in the same C order. It moves no
#' bytes, so the engine needs nothing from it; only codecs that depend on the
#' shape could tell, and a `transpose` or `sharding_indexed` codec after it
#' is not supported.
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' # chunks of 3 x 4 elements stored as runs of 12 (the bytes are the same)
#' z <- create_zarr() # in memory
#' def <- define_array("int32", c(6, 4))
#' def$chunk_shape <- c(3, 4)
#' def$add_codec("reshape", list(shape = list(list(0, 1))), .position = 2)
#' def$codec_info
#' a <- z$add_array("/", "m", def)
#' a[] <- matrix(1:24, 6, 4)
#' a[4:6, ]
#' rs <- a$codecs[[2]]
#' rs
#' rs$output_shape
#' @export
zarr_codec_reshape <- R6::R6Class("zarr_codec_reshape",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a reshape codec.
    #' @param chunk_shape The shape of its input (the chunk, after any codec
    #'   before it).
    #' @param configuration A list with `shape`: per output dimension a
    #'   positive size, a list of input dimensions (0-based) whose sizes
    #'   multiply, or -1 (at most once) for the rest.
    #' @return An instance of this class.
    initialize = function(chunk_shape, configuration) {
      super$initialize("reshape", list())
      spec <- configuration[["shape"]]
      if (!is.list(spec) || !length(spec) || !is.null(names(spec)))
        zarr_abort("codec", "reshape needs 'shape', an array")
      a <- as.numeric(chunk_shape)
      out <- numeric(length(spec))
      dims <- list()
      auto <- NA_integer_
      for (i in seq_along(spec)) {
        s <- spec[[i]]
        if (is.list(s) || length(s) > 1L) {
          d <- suppressWarnings(as.integer(unlist(s)))
          if (anyNA(d) || any(d < 0 | d >= length(a)))
            zarr_abort("codec", "reshape: input dimensions out of range")
          dims[[i]] <- d
          out[i] <- prod(a[d + 1L])
        } else if (is.numeric(s) && length(s) == 1L && s == -1 && is.na(auto)) {
          auto <- i
        } else if (is.numeric(s) && length(s) == 1L && s >= 1 && s == trunc(s)) {
          out[i] <- s
        } else {
          zarr_abort("codec", "reshape: each entry of 'shape' is a positive size, a list of input dimensions or -1")
        }
      }
      flat <- unlist(dims)
      if (length(flat) > 1L && any(diff(flat) <= 0))
        zarr_abort("codec", "reshape: input dimensions must be in increasing order")
      if (!is.na(auto)) {
        rest <- prod(a) / prod(out[-auto])
        if (rest != trunc(rest) || rest < 1) zarr_abort("codec", "reshape: the sizes do not divide the chunk")
        out[auto] <- rest
      }
      if (prod(out) != prod(a)) zarr_abort("codec", "reshape: the output must hold as many elements as the input")
      for (i in seq_along(dims)) {
        d <- dims[[i]]
        if (is.null(d) || !length(d)) next
        if (prod(out[seq_len(i - 1L)]) != prod(a[seq_len(d[1L])]) ||
            prod(out[-seq_len(i)]) != prod(a[-seq_len(d[length(d)] + 1L)]))
          zarr_abort("codec", "reshape: input dimensions do not line up with the output")
      }
      private$.spec <- spec
      private$.in <- a
      private$.out <- out
      private$.from <- "array"
      private$.to <- "array"
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_reshape`.
    copy = function() zarr_codec_reshape$new(private$.in, list(shape = private$.spec)),
    #' @description Give data the output shape.
    #' @param data A vector of the chunk's elements in C order.
    #' @return The same vector (C order does not change).
    encode = function(data) data,
    #' @description Give data the input shape.
    #' @param data A vector of the chunk's elements in C order.
    #' @return The same vector.
    decode = function(data) data
  ),
  active = list(
    #' @field output_shape (read-only) The shape of its output.
    output_shape = function(value) private$.out
  ),
  private = list(
    .spec = NULL, .in = NULL, .out = NULL,
    config_list = function() list(shape = private$.spec),
    c_spec = function() NULL
  )
)
register_codec("reshape", function(config, data_type, chunk_shape) zarr_codec_reshape$new(chunk_shape, config))

# The conditional codec (a registered Zarr extension): a bytes -> bytes codec
# holding bytes -> bytes codecs of its own, each applied to a chunk or not, as
# a header before the chunk's bytes says (src/codec_conditional.c). Writing
# applies a codec unless it makes the chunk larger (checksums always).
#' @noRd
zarr_codec_conditional <- R6::R6Class("zarr_codec_conditional",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    initialize = function(data_type, configuration) {
      super$initialize("conditional", list())
      inner <- configuration[["codecs"]]
      if (!is.list(inner) || !is.null(names(inner)))
        zarr_abort("codec", "conditional: 'codecs' must be an array of codecs")
      private$.codecs <- codecs_from_metadata(inner, data_type = data_type, chunk_shape = 1)
      for (cd in private$.codecs)
        if (cd$mode != "bytes -> bytes" || codec_is_elementwise(cd) || inherits(cd, "zarr_codec_r"))
          zarr_abort("codec", sprintf("conditional holds bytes -> bytes codecs written in C, not '%s'", cd$name))
      n <- length(private$.codecs)
      bits <- configuration[["header_bits"]]
      private$.bits_given <- !is.null(bits)
      bits <- if (is.null(bits)) 8L * max(1L, ceiling(n / 8)) else cfg_int(configuration, "header_bits", 8L, 8, 64, "conditional")
      if (bits %% 8L != 0L || bits < n)
        zarr_abort("codec", sprintf("conditional: header_bits must be a multiple of 8 of at least %d", n))
      private$.bits <- bits
    },
    copy = function() self,
    encode = function(data) zarr_abort("codec", "conditional encodes chunks only, through the array"),
    decode = function(data) zarr_abort("codec", "conditional decodes chunks only, through the array")
  ),
  active = list(codecs = function(value) private$.codecs),
  private = list(
    .codecs = NULL, .bits = 8L, .bits_given = FALSE,
    config_list = function() {
      c(list(codecs = lapply(private$.codecs, function(cd) cd$metadata_fragment())),
        if (private$.bits_given) list(header_bits = private$.bits))
    },
    c_spec = function() {
      list(name = "conditional", header_bytes = private$.bits %/% 8L,
           codecs = c(list(list(name = "bytes", endian = "little")), lapply(private$.codecs, codec_c_spec)))
    }
  )
)
register_codec("conditional", function(config, data_type, chunk_shape) zarr_codec_conditional$new(data_type, config))

# The n5_default codec (a registered Zarr extension): chunks stored as N5
# blocks in the default mode. Its configuration holds a transpose that
# reverses the dimensions, a big-endian bytes codec and at most one bytes ->
# bytes codec; the engine runs the first two, and src/codec_n5.c the block
# header and the compressor. N5 holds (u)int8-64 and float32/64.
n5_data_types <- c("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")

#' @noRd
zarr_codec_n5_default <- R6::R6Class("zarr_codec_n5_default",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    initialize = function(data_type, chunk_shape, configuration) {
      super$initialize("n5_default", list())
      dt <- as_data_type(data_type)
      if (!dt$data_type %in% n5_data_types)
        zarr_abort("codec", sprintf("n5_default: N5 has no data type '%s'", dt$data_type))
      inner <- configuration[["codecs"]]
      if (!is.list(inner) || !is.null(names(inner)) || length(inner) < 2L || length(inner) > 3L)
        zarr_abort("codec", "n5_default: 'codecs' must be a transpose, a bytes and at most one more codec")
      n <- length(chunk_shape)
      tr <- inner[[1L]]
      order <- unlist(tr[["configuration"]][["order"]])
      if (!identical(tr[["name"]], "transpose") || !identical(as.integer(order), rev(seq_len(n) - 1L)))
        zarr_abort("codec", "n5_default: the first codec must be a transpose reversing the dimensions")
      by <- inner[[2L]]
      endian <- by[["configuration"]][["endian"]]
      if (!identical(by[["name"]], "bytes") || !(identical(endian, "big") || (is.null(endian) && dt$size == 1L)))
        zarr_abort("codec", "n5_default: the second codec must be bytes, big endian")
      private$.bb <- if (length(inner) == 3L) codecs_from_metadata(inner[3L], data_type = dt, chunk_shape = chunk_shape)
      if (length(private$.bb) && (private$.bb[[1L]]$mode != "bytes -> bytes" || codec_is_elementwise(private$.bb[[1L]]) ||
                                  inherits(private$.bb[[1L]], "zarr_codec_r")))
        zarr_abort("codec", "n5_default: the third codec must be a bytes -> bytes codec written in C")
      private$.dt <- dt
      private$.chunk <- as.numeric(chunk_shape)
      private$.from <- "array"
      private$.to <- "bytes"
    },
    copy = function() self,
    encode = function(data) zarr_abort("codec", "n5_default encodes chunks only, through the array"),
    decode = function(data) zarr_abort("codec", "n5_default decodes chunks only, through the array")
  ),
  private = list(
    .bb = NULL, .dt = NULL, .chunk = NULL,
    config_list = function() {
      n <- length(private$.chunk)
      list(codecs = c(list(list(name = "transpose", configuration = list(order = json_array(rev(seq_len(n) - 1L)))),
                           if (private$.dt$size == 1L) list(name = "bytes")
                           else list(name = "bytes", configuration = list(endian = "big"))),
                      lapply(private$.bb, function(cd) cd$metadata_fragment())))
    },
    c_spec = function() {
      n <- length(private$.chunk)
      fill <- fill_bytes(private$.dt$data_type, private$.dt$fill_value) # native order
      if (.Platform$endian == "little") fill <- rev(fill)
      list(list(name = "transpose", order = rev(seq_len(n) - 1L)),
           list(name = "bytes", endian = "big"),
           list(name = "n5_default", elsize = private$.dt$size, chunk_shape = private$.chunk,
                fill = paste(as.character(fill), collapse = ""),
                codecs = c(list(list(name = "bytes", endian = "big")), lapply(private$.bb, codec_c_spec))))
    }
  )
)
register_codec("n5_default", function(config, data_type, chunk_shape)
  zarr_codec_n5_default$new(data_type, chunk_shape, config))

# The zfp codec (registered Zarr extensions `zfp` and its older name
# `zarrs.zfp`): chunks compressed by the zfp library as one zfp field
# without a header.
# src/codec_zfp.c runs after a little-endian bytes step; without libzfp the
# row refuses with zarr_error_unsupported.
zfp_data_types <- c("float32", "float64", "int32", "int64")
zfp_mode_keys <- list(reversible = character(), fixed_rate = "rate", fixed_precision = "precision",
                      fixed_accuracy = "tolerance", expert = c("minbits", "maxbits", "maxprec", "minexp"))

#' The zfp codec
#'
#' An array -> bytes codec (a registered Zarr extension) that compresses each
#' chunk with the zfp library as one zfp field, without zfp's own header.
#' `mode` is "reversible" (lossless), "fixed_rate" (`rate` bits per value),
#' "fixed_precision" (`precision` bit planes), "fixed_accuracy" (absolute
#' error at most `tolerance`; float32 and float64 only) or "expert"
#' (`minbits`, `maxbits`, `maxprec`, `minexp`, as zfp defines them). Data types
#' float32, float64, int32 and int64; chunks of 0 to 4 dimensions. The older
#' name `zarrs.zfp` (as the zarrs Rust crate writes it) also takes chunks of
#' more dimensions when at most 4 are longer than 1. Needs the zfp library
#' at install time (see [zarr_capabilities()]).
#'
#' @seealso [zarr_codec], [array_builder] (`add_codec()`)
#' @examples
#' # zfp replaces the bytes codec: set it in the metadata of a definition
#' if (!"zfp" %in% names(zarr_capabilities()$missing_codecs)) {
#'   meta <- define_array("float64", c(16, 16))$metadata()
#'   meta$codecs <- list(list(name = "zfp",
#'                            configuration = list(mode = "fixed_accuracy", tolerance = 1e-3)))
#'   z <- create_zarr() # in memory
#'   a <- z$add_array("/", "field", array_builder$new(meta))
#'   x <- outer(1:16, 1:16, function(i, j) sin(i / 3) * cos(j / 4))
#'   a[] <- x
#'   max(abs(a[] - x)) # within the tolerance
#'   a$codecs[[1]]
#' }
#' @export
zarr_codec_zfp <- R6::R6Class("zarr_codec_zfp",
  inherit = zarr_codec,
  cloneable = FALSE,
  public = list(
    #' @description Create a zfp codec.
    #' @param data_type The [zarr_data_type] of the array.
    #' @param chunk_shape The chunk shape (integer vector).
    #' @param configuration A list with `mode` and the mode's parameters.
    #' @param name "zfp" or "zarrs.zfp".
    #' @return An instance of this class.
    initialize = function(data_type, chunk_shape, configuration = NULL, name = "zfp") {
      super$initialize(match.arg(name, c("zfp", "zarrs.zfp")), list())
      dt <- as_data_type(data_type)
      if (!is.character(dt$data_type) || !dt$data_type %in% zfp_data_types)
        zarr_abort("codec", sprintf("zfp does not support data type '%s' (float32, float64, int32, int64)",
                                    paste(format(dt$data_type), collapse = " ")))
      mode <- configuration[["mode"]]
      if (!is_json_string(mode) || !mode %in% names(zfp_mode_keys))
        zarr_abort("codec", sprintf("zfp mode must be one of %s", paste(sprintf("\"%s\"", names(zfp_mode_keys)), collapse = ", ")))
      extra <- setdiff(names(configuration), c("mode", zfp_mode_keys[[mode]]))
      if (length(extra)) zarr_abort("codec", sprintf("zfp: unknown key '%s' for mode \"%s\"", extra[1L], mode))
      if (mode == "fixed_accuracy" && dt$data_type %in% c("int32", "int64"))
        zarr_abort("codec", "zfp: fixed_accuracy is for float32 and float64 only")
      cfg <- list(mode = mode)
      for (key in zfp_mode_keys[[mode]]) {
        v <- configuration[[key]]
        if (is.null(v)) zarr_abort("codec", sprintf("zfp mode \"%s\" needs '%s'", mode, key))
        cfg[[key]] <- switch(key,
          rate = , tolerance = {
            v <- json_scalar_num(v, sprintf("zfp %s", key))
            if (!is.finite(v) || v < 0 || (key == "rate" && v == 0))
              zarr_abort("codec", sprintf("zfp %s must be a positive number", key))
            v
          },
          precision = cfg_int(configuration, key, 0L, 1, 64, "zfp"),
          maxprec = cfg_int(configuration, key, 0L, 1, 64, "zfp"),
          minexp = cfg_int(configuration, key, 0L, -1074, 1100, "zfp"),
          cfg_int(configuration, key, 0L, 0, 16658, "zfp")) # minbits, maxbits: zfp's ZFP_MAX_BITS
      }
      private$.cfg <- cfg
      private$.dt <- dt
      private$.chunk <- as.numeric(chunk_shape)
      if (length(private$.chunk) > 4L && (self$name == "zfp" || sum(private$.chunk > 1) > 4L))
        zarr_abort("codec", sprintf("%s: chunks of %d dimensions (at most 4%s)", self$name, length(private$.chunk),
                                    if (self$name == "zfp") "; 'zarrs.zfp' drops dimensions of length 1"
                                    else " longer than 1"))
      private$.from <- "array"
      private$.to <- "bytes"
    },
    #' @description An independent copy of this codec.
    #' @return A `zarr_codec_zfp`.
    copy = function() zarr_codec_zfp$new(private$.dt, private$.chunk, private$.cfg, self$name),
    #' @description Compress one chunk given as its little-endian element
    #'   bytes in C order.
    #' @param data A raw vector.
    #' @return The zfp stream, a raw vector.
    encode = function(data) .Call(ffi_codec_encode, private$c_spec()[[2L]], data),
    #' @description Decompress one chunk into little-endian element bytes.
    #' @param data A raw vector.
    #' @return A raw vector.
    decode = function(data) .Call(ffi_codec_decode, private$c_spec()[[2L]], data, NULL)
  ),
  private = list(
    .cfg = NULL, .dt = NULL, .chunk = NULL,
    config_list = function() private$.cfg,
    c_spec = function() {
      list(list(name = "bytes", endian = "little"),
           c(list(name = "zfp", dtype = num_spec(private$.dt$data_type, FALSE), chunk_shape = private$.chunk,
                  squeeze = as.integer(self$name == "zarrs.zfp")),
             private$.cfg))
    }
  )
)
register_codec("zfp", function(config, data_type, chunk_shape) zarr_codec_zfp$new(data_type, chunk_shape, config))
register_codec("zarrs.zfp", function(config, data_type, chunk_shape)
  zarr_codec_zfp$new(data_type, chunk_shape, config, "zarrs.zfp"))
