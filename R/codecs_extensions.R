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
      private$.bits <- if (name == "bool") 1L else as.integer(dt$size * 8L)
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
    config_list = function() list(padding_encoding = private$.pad, first_bit = private$.first,
                                  last_bit = private$.last),
    c_spec = function() {
      signed <- grepl("^int", private$.dt$data_type)
      list(list(name = "bytes", endian = "little"),
           list(name = "packbits", dtype = sprintf("<%s%d", if (signed) "i" else "u", private$.dt$size),
                bits = private$.bits, first_bit = private$.first, last_bit = private$.last,
                padding = private$.pad))
    }
  )
)
register_codec("packbits", function(config, data_type, chunk_shape) zarr_codec_packbits$new(data_type, config))
