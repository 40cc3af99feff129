# The data types this package reads and writes, with their R representation.
# `rtype` is the R storage the C engine produces; 64-bit integers depend on
# the zarr.int64 option.
dtype_table <- data.frame(
  name = c("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"),
  size = c(1L, 1L, 2L, 4L, 8L, 1L, 2L, 4L, 8L, 2L, 4L, 8L, 8L, 16L),
  signed = c(FALSE, TRUE, TRUE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, TRUE, TRUE, TRUE, TRUE, TRUE),
  rtype = c("logical", "integer", "integer", "integer", "integer64", "integer", "integer", "double",
            "integer64", "double", "double", "double", "complex", "complex"),
  stringsAsFactors = FALSE
)

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
    zarr_abort("data_type", sprintf("unknown data type '%s'", name))
  )
}

dtype_info <- function(name) {
  i <- match(name, dtype_table$name)
  if (is.na(i)) zarr_abort("data_type", sprintf("unsupported data type '%s'", name))
  as.list(dtype_table[i, ])
}

# Fill values in memory: numbers, TRUE/FALSE, or character for 64-bit
# integers (every digit kept) and for JSON specials.
normalize_fill <- function(name, value) {
  if (is.null(value)) return(dtype_default_fill(name))
  if (inherits(value, "integer64")) return(as.character(value))
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
  if (name == "bool") {
    if (!is.logical(value) && !(is.numeric(value) && value %in% c(0, 1)))
      zarr_abort("fill_value", "the fill value of a bool array must be TRUE or FALSE")
    return(as.logical(value))
  }
  if (is.character(value)) return(value)
  if (is.numeric(value) && name %in% c("int64", "uint64") && is.finite(value))
    return(format(value, scientific = FALSE, trim = TRUE))
  value
}

fill_json <- function(name, value) {
  if (is.list(value)) return(lapply(value, function(v) fill_json("float64", v)))
  if (is.character(value)) {
    if (grepl("^-?[0-9]+$", value)) return(structure(value, class = "json_literal"))
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
      dtype_info(data_type)
      super$initialize(data_type)
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
      list(data_type = self$data_type, fill_value = fill_json(self$data_type, private$.fill))
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
      dtype_info(private$.name)$size
    },
    #' @field fill_value The fill value: the value of elements never written.
    fill_value = function(value) {
      if (missing(value)) return(private$.fill)
      v <- normalize_fill(private$.name, value)
      .Call(ffi_fill_bytes, private$.name, v) # validates the value
      private$.fill <- v
    }
  ),
  private = list(.fill = NULL)
)


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
