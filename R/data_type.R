# The data types this package reads and writes, with their R representation.
# `rtype` is the R storage the C engine produces; 64-bit integers depend on
# the zarr.int64 option.
dtype_table <- data.frame(
  name = c("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128",
           "string", "variable_length_bytes", "fixed_length_utf32", "null_terminated_bytes",
           "numpy.datetime64", "numpy.timedelta64"),
  size = c(1L, 1L, 2L, 4L, 8L, 1L, 2L, 4L, 8L, 2L, 4L, 8L, 8L, 16L, NA, NA, NA, NA, 8L, 8L),
  signed = c(FALSE, TRUE, TRUE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, TRUE, TRUE, TRUE, TRUE, TRUE,
             FALSE, FALSE, FALSE, FALSE, TRUE, TRUE),
  rtype = c("logical", "integer", "integer", "integer", "integer64", "integer", "integer", "double",
            "integer64", "double", "double", "double", "complex", "complex",
            "character", "list", "character", "character", "POSIXct", "difftime"),
  # how the C engine holds strings: variable length, UTF-32 or bytes of fixed length
  strkind = c(rep(NA, 14), "vlen-utf8", "vlen-bytes", "utf32", "bytes", NA, NA),
  stringsAsFactors = FALSE
)

is_string_dtype <- function(name) name %in% dtype_table$name[!is.na(dtype_table$strkind)]

# Default fill values: a value that rarely occurs in real data, so that `NA`
# survives a round trip without turning ordinary values into `NA`: the
# smallest value of signed integers (R's own NA for int32), the largest of
# unsigned integers (as netCDF does), NaN for floating point, false for bool.
dtype_default_fill <- function(name) {
  switch(name,
    bool = FALSE,
    int8 = -128L, int16 = -32768L, int32 = -2147483648,
    int64 = "-9223372036854775808",
    uint8 = 255L, uint16 = 65535L, uint32 = 4294967295,
    uint64 = "18446744073709551615",
    float16 = , float32 = , float64 = NaN,
    complex64 = , complex128 = list(NaN, NaN),
    string = , fixed_length_utf32 = , null_terminated_bytes = "",
    variable_length_bytes = "",
    numpy.datetime64 = , numpy.timedelta64 = "-9223372036854775808",
    zarr_abort("data_type", sprintf("unknown data type '%s'", name))
  )
}

dtype_info <- function(name) {
  i <- match(name, dtype_table$name)
  if (is.na(i)) zarr_abort("data_type", sprintf("unsupported data type '%s'", name))
  # column by column: indexing a data.frame row is slow on every read
  list(name = name, size = dtype_table$size[i], signed = dtype_table$signed[i],
       rtype = dtype_table$rtype[i], strkind = dtype_table$strkind[i])
}

# Fill values in memory: numbers, TRUE/FALSE, or character for 64-bit
# integers (every digit kept) and for JSON specials.
normalize_fill <- function(name, value) {
  if (is.null(value)) return(dtype_default_fill(name))
  if (inherits(value, "integer64")) return(as.character(value))
  if (inherits(value, "json_literal")) value <- unclass(value) # an integer beyond 2^53, as digits
  if (name %in% c("complex64", "complex128")) {
    if (is.complex(value)) return(list(Re(value), Im(value)))
    if (is.list(value) && length(value) == 2L) return(value)
    zarr_abort("fill_value", sprintf("fill value for %s must be a complex number or a pair", name))
  }
  if (is.list(value)) {
    if (length(value) != 1L) zarr_abort("fill_value", "the fill value must be a single value")
    value <- value[[1L]]
  }
  if (length(value) != 1L) zarr_abort("fill_value", "the fill value must be a single value")
  if (is.logical(value) && is.na(value)) return(dtype_default_fill(name))
  if (is_string_dtype(name)) {
    if (is.character(value)) return(enc2utf8(value))
    if (is.numeric(value) && value == 0) return("") # zarr-python writes 0 for empty strings
    zarr_abort("fill_value", "the fill value of a string array must be a string")
  }
  if (name == "bool") {
    if (!is.logical(value) && !(is.numeric(value) && value %in% c(0, 1)))
      zarr_abort("fill_value", "the fill value of a bool array must be TRUE or FALSE")
    return(as.logical(value))
  }
  if (is.character(value)) return(value)
  if (is.numeric(value) && name %in% c("int64", "uint64", "numpy.datetime64", "numpy.timedelta64") &&
      is.finite(value)) {
    # JSON parsers hand large 64-bit values over as doubles: 2^64 - 1 rounds up
    if (name == "uint64" && value >= 18446744073709549568) return("18446744073709551615")
    if (value <= -9223372036854775808) return("-9223372036854775808")
    return(format(value, scientific = FALSE, trim = TRUE))
  }
  value
}

fill_json <- function(name, value) {
  if (is.list(value)) return(lapply(value, function(v) fill_json("float64", v)))
  if (is.character(value)) {
    if (!is_string_dtype(name) && grepl("^-?[0-9]+$", value)) return(structure(value, class = "json_literal"))
    return(value)
  }
  if (is.numeric(value) && !is.finite(value)) {
    if (is.nan(value)) return("NaN")
    return(if (value > 0) "Infinity" else "-Infinity")
  }
  value
}

#' Zarr data types
#'
#' A data type of a Zarr array, with the fill value that goes with it. The
#' supported types are `bool`, `int8`, `int16`, `int32`, `int64`, `uint8`,
#' `uint16`, `uint32`, `uint64`, `float16`, `float32`, `float64`, `complex64`
#' and `complex128`. In R they appear as logical, integer, double (also for
#' `uint32` and the floating point types), `bit64::integer64` (for the 64-bit
#' integers, when \pkg{bit64} is installed) and complex.
#'
#' @export
zarr_data_type <- R6::R6Class("zarr_data_type",
  inherit = zarr_extension,
  cloneable = FALSE,
  public = list(
    #' @description Create a data type object.
    #' @param data_type The name of the data type, a single character string.
    #' @param fill_value Optionally, the fill value. The default depends on the
    #'   type: the smallest value of signed integers, the largest of unsigned
    #'   integers, `NaN` for floating point and `FALSE` for `bool`.
    #' @return An instance of this class.
    initialize = function(data_type, fill_value = NULL) {
      if (is.list(data_type)) {
        private$.config <- data_type$configuration
        data_type <- data_type$name
      }
      dtype_info(data_type)
      super$initialize(data_type)
      if (data_type %in% c("numpy.datetime64", "numpy.timedelta64")) time_unit_seconds(private$.config)
      if (data_type %in% c("fixed_length_utf32", "null_terminated_bytes")) {
        n <- suppressWarnings(as.numeric(private$.config$length_bytes))
        if (length(n) != 1L || is.na(n) || n < 0 || (data_type == "fixed_length_utf32" && n %% 4 != 0))
          zarr_abort("data_type", sprintf("%s needs a valid length_bytes", data_type))
      }
      self$fill_value <- fill_value
    },

    #' @description Print a summary of the data type.
    print = function() {
      cat("<Zarr data type>", self$data_type, "\n")
      cat("R type    :", self$Rtype, "\n")
      cat("Fill value:", format_fill(self$fill_value), "\n")
      invisible(self)
    },

    #' @description The metadata fragment for this data type and its fill value.
    #' @return A list with elements `data_type` and `fill_value`.
    metadata_fragment = function() {
      dt <- if (length(private$.config)) list(name = self$data_type, configuration = private$.config) else self$data_type
      list(data_type = dt, fill_value = fill_json(self$data_type, private$.fill))
    }
  ),
  active = list(
    #' @field data_type The name of the data type. Setting it also resets the
    #'   fill value to the default of the new type.
    data_type = function(value) {
      if (missing(value)) return(private$.name)
      dtype_info(value)
      private$.name <- value
      private$.fill <- dtype_default_fill(value)
    },
    #' @field Rtype (read-only) The R type that holds the values.
    Rtype = function(value) {
      if (!missing(value)) zarr_abort("read_only", "Rtype is read-only")
      rt <- dtype_info(private$.name)$rtype
      if (rt == "POSIXct" && time_unit_is_calendar(private$.config)) return("Date")
      if (rt == "integer64" && zarr_int64_mode() == "double") "double" else rt
    },
    #' @field signed (read-only) Whether the type is signed.
    signed = function(value) {
      if (!missing(value)) zarr_abort("read_only", "signed is read-only")
      dtype_info(private$.name)$signed
    },
    #' @field size (read-only) Size of one element in bytes.
    size = function(value) {
      if (!missing(value)) zarr_abort("read_only", "size is read-only")
      n <- dtype_info(private$.name)$size
      if (is.na(n) && !is.null(private$.config$length_bytes)) n <- as.integer(private$.config$length_bytes)
      n
    },
    #' @field configuration (read-only) Parameters of parametrised types (for
    #'   example `length_bytes` of fixed-length strings), or `NULL`.
    configuration = function(value) private$.config,
    #' @field fill_value The fill value: the value of elements never written.
    fill_value = function(value) {
      if (missing(value)) return(private$.fill)
      v <- normalize_fill(private$.name, value)
      fill_bytes(private$.name, v) # validates the value
      private$.fill <- v
    }
  ),
  private = list(.fill = NULL, .config = NULL)
)

# The fill value as the C engine wants it: native bytes, or UTF-8 text.
fill_bytes <- function(name, value) {
  if (is_string_dtype(name)) return(charToRaw(enc2utf8(as.character(value))))
  .Call(ffi_fill_bytes, engine_dtype(name), value)
}

# The element type the C engine stores, and the R type it produces.
engine_dtype <- function(name) {
  if (is_string_dtype(name)) return("string")
  if (name %in% c("numpy.datetime64", "numpy.timedelta64")) return("int64")
  name
}

engine_rtype <- function(dt) {
  rt <- dt$Rtype
  if (rt %in% c("POSIXct", "Date", "difftime")) "double" else rt
}


fill_is_nan <- function(v) {
  if (is.list(v)) return(any(vapply(v, fill_is_nan, TRUE)))
  (is.numeric(v) && is.nan(v)) || identical(v, "NaN")
}

format_fill <- function(v) {
  if (is.list(v)) return(paste0("(", paste(vapply(v, format_fill, ""), collapse = ", "), ")"))
  if (is.character(v)) return(v)
  format(v, digits = 15)
}

# The R type a vector of data has, as the C engine names it.
r_storage <- function(x) {
  if (inherits(x, "integer64")) return("integer64")
  switch(typeof(x), logical = "logical", integer = "integer", double = "double",
         complex = "complex", typeof(x))
}
