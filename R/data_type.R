# The data types this package reads and writes: one row per type, with
# everything the R side knows about it. The C engine's row of the same type
# (src/dtype.c, named by `engine`) holds its size, byte order and conversion
# kernels. Columns:
#   name     the data type's name in v3 metadata
#   size     bytes per element (NA: variable or set by the configuration)
#   kind     "b" bool, "i" signed, "u" unsigned integer, "f" floating point,
#            "c" complex, "s" string, "M"/"m" datetime/timedelta
#   bits     value bits of integer types (4 for int4 held in a byte)
#   rtype    the R storage the C engine produces; 64-bit integers depend on
#            the zarr.int64 option
#   engine   the C engine's row that stores it
#   v2       the Zarr v2 (numpy) dtype code without byte order, NA: none
#   strkind  how the engine holds strings (variable length, UTF-32, fixed bytes)
#   nan      whether a floating point (or complex) type has a NaN: the
#            default fill value is NaN, else 0 (float6 and float4 have none)
dtype_row <- function(name, size, kind, rtype, engine = name, v2 = NA, strkind = NA, bits = size * 8L,
                      nan = TRUE)
  data.frame(name = name, size = as.integer(size), kind = kind, bits = as.integer(bits), rtype = rtype,
             engine = engine, v2 = v2, strkind = strkind, nan = nan, stringsAsFactors = FALSE)

dtype_table <- rbind(
  dtype_row("bool", 1, "b", "logical", v2 = "b1"),
  dtype_row("int8", 1, "i", "integer", v2 = "i1"),
  dtype_row("int16", 2, "i", "integer", v2 = "i2"),
  dtype_row("int32", 4, "i", "integer", v2 = "i4"),
  dtype_row("int64", 8, "i", "integer64", v2 = "i8"),
  dtype_row("uint8", 1, "u", "integer", v2 = "u1"),
  dtype_row("uint16", 2, "u", "integer", v2 = "u2"),
  dtype_row("uint32", 4, "u", "double", v2 = "u4"),
  dtype_row("uint64", 8, "u", "integer64", v2 = "u8"),
  dtype_row("float16", 2, "f", "double", v2 = "f2"),
  dtype_row("float32", 4, "f", "double", v2 = "f4"),
  dtype_row("float64", 8, "f", "double", v2 = "f8"),
  dtype_row("complex64", 8, "c", "complex", v2 = "c8"),
  dtype_row("complex128", 16, "c", "complex", v2 = "c16"),
  dtype_row("bfloat16", 2, "f", "double"),
  dtype_row("float8_e4m3", 1, "f", "double"),
  dtype_row("float8_e5m2", 1, "f", "double"),
  dtype_row("int4", 1, "i", "integer", bits = 4),
  dtype_row("uint4", 1, "u", "integer", bits = 4),
  # the rest of the registry (zarr-developers/zarr-extensions, data-types/)
  dtype_row("int2", 1, "i", "integer", bits = 2),
  dtype_row("uint2", 1, "u", "integer", bits = 2),
  dtype_row("float8_e3m4", 1, "f", "double"),
  dtype_row("float8_e4m3fnuz", 1, "f", "double"),
  dtype_row("float8_e4m3b11fnuz", 1, "f", "double"),
  dtype_row("float8_e5m2fnuz", 1, "f", "double"),
  dtype_row("float8_e8m0fnu", 1, "f", "double"),
  dtype_row("float6_e2m3fn", 1, "f", "double", bits = 6, nan = FALSE),
  dtype_row("float6_e3m2fn", 1, "f", "double", bits = 6, nan = FALSE),
  dtype_row("float4_e2m1fn", 1, "f", "double", bits = 4, nan = FALSE),
  dtype_row("complex_float64", 16, "c", "complex", engine = "complex128"),
  dtype_row("complex_float32", 8, "c", "complex", engine = "complex64"),
  dtype_row("complex_float16", 4, "c", "complex"),
  dtype_row("complex_bfloat16", 4, "c", "complex"),
  dtype_row(paste0("complex_float8_", c("e3m4", "e4m3", "e4m3b11fnuz", "e4m3fnuz", "e5m2", "e5m2fnuz", "e8m0fnu")),
            2, "c", "complex"),
  dtype_row(c("complex_float6_e2m3fn", "complex_float6_e3m2fn"), 2, "c", "complex", bits = 12, nan = FALSE),
  dtype_row("complex_float4_e2m1fn", 2, "c", "complex", bits = 8, nan = FALSE),
  dtype_row("string", NA, "s", "character", engine = "string", strkind = "vlen-utf8"),
  dtype_row("variable_length_bytes", NA, "s", "list", engine = "string", strkind = "vlen-bytes"),
  # the registered name of variable-length bytes; its fill value is bytes
  dtype_row("bytes", NA, "s", "list", engine = "string", strkind = "vlen-bytes"),
  # Zarr v2 object arrays of numcodecs' vlen-array: numeric vectors, as
  # vlen-bytes items the array converts (R/v2.R)
  dtype_row("vlen_array", NA, "s", "list", engine = "string", strkind = "vlen-bytes"),
  dtype_row("fixed_length_utf32", NA, "s", "character", engine = "string", strkind = "utf32"),
  dtype_row("null_terminated_bytes", NA, "s", "character", engine = "string", strkind = "bytes"),
  dtype_row("numpy.datetime64", 8, "M", "POSIXct", engine = "int64"),
  dtype_row("numpy.timedelta64", 8, "m", "difftime", engine = "int64"),
  # records of named fields (R/struct.R): the engine moves each record's bytes
  dtype_row("struct", NA, "t", "data.frame", engine = "string", strkind = "record")
)
dtype_table$signed <- dtype_table$kind %in% c("i", "f", "c", "M", "m")

is_string_dtype <- function(name) name %in% dtype_table$name[dtype_table$kind == "s"]

# The kind of a data type ("b", "i", "u", "f", "c", "s", "M", "m"; "r" for
# data types implemented in R), NA when unknown.
dtype_kind <- function(name) {
  i <- match(name, dtype_table$name)
  if (is.na(i)) return(if (!is.null(r_dtype_get(name))) "r" else if (!is.na(raw_bits_size(name))) "x" else NA_character_)
  dtype_table$kind[i]
}

# The core raw bits types r8, r16, ... (any multiple of 8 bits): bytes per
# element, NA when `name` is not one. Their elements are R raw vectors in a
# list, moved by the engine as fixed-size records (kind "x"); the engine's
# records hold at most 1023 bytes.
raw_bits_size <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !grepl("^r[1-9][0-9]{0,4}$", name))
    return(NA_integer_)
  bits <- as.integer(substring(name, 2L))
  if (bits %% 8L != 0L || bits / 8L > 1023L) NA_integer_ else bits %/% 8L
}

# Default fill values: a value that rarely occurs in real data, so that `NA`
# survives a round trip without turning ordinary values into `NA`: the
# smallest value of signed integers (R's own NA for int32), the largest of
# unsigned integers (as netCDF does), NaN for floating point, false for bool,
# "NA" for variable-length strings (R's own spelling of a missing string;
# fixed-width string types keep "", which every width holds).
dtype_default_fill <- function(name) {
  i <- match(name, dtype_table$name)
  if (is.na(i)) {
    rd <- r_dtype_get(name)
    if (!is.null(rd)) return(rd$fill)
    if (!is.na(raw_bits_size(name))) return(raw(raw_bits_size(name)))
    zarr_abort("data_type", sprintf("unknown data type '%s'", name))
  }
  bits <- dtype_table$bits[i]
  switch(dtype_table$kind[i],
    b = FALSE,
    i = if (bits == 64) "-9223372036854775808" else if (bits == 32) -2^31 else as.integer(-2^(bits - 1)),
    u = if (bits == 64) "18446744073709551615" else if (bits == 32) 2^32 - 1 else as.integer(2^bits - 1),
    f = if (dtype_table$nan[i]) NaN else 0,
    c = if (dtype_table$nan[i]) list(NaN, NaN) else list(0, 0),
    s = if (identical(name, "string")) "NA" else if (identical(name, "bytes")) raw(0) else "",
    M = , m = "-9223372036854775808",
    t = list() # set from the fields (struct_fill_normalize())
  )
}

dtype_info <- function(name) {
  i <- match(name, dtype_table$name)
  if (is.na(i)) {
    rd <- r_dtype_get(name)
    if (!is.null(rd)) return(list(name = name, size = rd$size, signed = FALSE, rtype = "r", strkind = NA))
    n <- raw_bits_size(name)
    if (!is.na(n)) return(list(name = name, size = n, signed = FALSE, rtype = "list", strkind = "record"))
    zarr_abort("data_type", sprintf("unsupported data type '%s'", name))
  }
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
  kind <- dtype_kind(name)
  if (identical(kind, "r")) return(r_dtype_fill(name, value))
  if (identical(name, "bytes")) return(bytes_fill(value))
  if (identical(kind, "x")) { # raw bits: an array of byte values (or raw, from R)
    v <- if (is.raw(value)) value else bytes_fill(if (is.character(value)) list(NA) else value)
    if (length(v) != raw_bits_size(name))
      zarr_abort("fill_value", sprintf("the fill value of %s must be %d byte values", name, raw_bits_size(name)))
    return(v)
  }
  if (kind %in% c("M", "m") && identical(value, "NaT")) return("-9223372036854775808") # NaT is -2^63
  if (identical(kind, "c")) {
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
  if (is.numeric(value) && (kind %in% c("M", "m") || (kind %in% c("i", "u") && dtype_info(name)$size == 8)) &&
      is.finite(value)) {
    # JSON parsers hand large 64-bit values over as doubles: 2^64 - 1 rounds up
    if (name == "uint64" && value >= 18446744073709549568) return("18446744073709551615")
    if (value <= -9223372036854775808) return("-9223372036854775808")
    return(format(value, scientific = FALSE, trim = TRUE))
  }
  value
}

fill_json <- function(name, value) {
  if (is.raw(value)) return(r_dtype_fill_json(name, value))
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
#' and `complex128`, the raw bits types `r8`, `r16`, `r24`, ... (any
#' multiple of 8 bits up to 1023 bytes), the registered extensions
#' `bfloat16`, `float8_e4m3`, `float8_e5m2`, `float8_e3m4`,
#' `float8_e4m3fnuz`, `float8_e4m3b11fnuz`, `float8_e5m2fnuz`,
#' `float8_e8m0fnu`, `float6_e2m3fn`, `float6_e3m2fn`, `float4_e2m1fn`,
#' `int2`, `uint2`, `int4`, `uint4`, `complex_float32`, `complex_float64`
#' and the complex types of the small formats (`complex_float16`,
#' `complex_bfloat16`, `complex_float8_e4m3`, ..., `complex_float4_e2m1fn`),
#' the string types (`string`, `bytes`, also called
#' `variable_length_bytes`, and the fixed-length ones) and the numpy
#' datetime types. In R they appear as logical, integer (also for `int2`
#' to `uint4`), double (also for `uint32` and the floating point types),
#' `bit64::integer64` (for the 64-bit integers, when \pkg{bit64} is
#' installed), complex, and lists of raw vectors (`bytes` and the raw bits
#' types; the fill value of both is a raw vector, stored as an array of byte
#' values). The small floating point formats round to the nearest value,
#' ties to even; those without infinities turn larger values into NaN
#' (`*fnuz`, `float8_e8m0fnu`, which also has no zero or sign: zero and
#' negative values become NaN), and those without NaN (`float6_*`,
#' `float4_e2m1fn`) refuse them, as they refuse NaN; their default fill
#' value is 0. A datetime fill value of `"NaT"` reads as numpy's NaT.
#' Packages can add data types implemented in R with
#' [zarr_register_data_type()].
#'
#' Records: the `struct` data type (zarr-extensions, with its legacy name
#' `structured`) and Zarr v2 structured dtypes (numpy records such as
#' `[["a", "<i4"], ["b", "<f8", [2]]]`) read as a data.frame with one column
#' per field, in field order: numbers as above, fixed-width strings
#' (`null_terminated_bytes`/`|S`, `fixed_length_utf32`/`<U`) as character, a
#' nested struct as a data.frame column, and a v2 subarray field as a matrix
#' column (one row per record; a field of shape `c(2, 3)` has 6 columns in
#' numpy's C order). They are written from a data.frame whose columns are
#' matched to the fields by name. An array of more than one dimension reads
#' as one row per element in R's (column-major) order, with the selection's
#' extent in the attribute `"zarr_shape"`; `x[i, j]` selects and
#' `x[i, j] <- df` writes records that way. A field's values are stored as
#' they are: `NA` is R's own `NA` in `int32`, `int64` and floating point
#' fields, and cannot be written to other fields. The fill value is a named
#' list with a value per field (`list(x = 0, y = -1L)`), stored in v3 as a
#' JSON object and in v2 as the record's bytes in base64, as zarr-python 2
#' does. Fields of datetime or variable-length types are not supported.
#'
#' `NA` in a floating point type (`float16` to `float64`, `bfloat16`,
#' `float8_e4m3`, `float8_e5m2`, `float8_e3m4`) is stored as a NaN of its
#' own bit pattern, apart from `NaN`, and reads back as `NA`; where the fill
#' value stands for `NA` (see the `zarr.fill_as_na` option in
#' [zarr-options]) it is stored as the fill value instead. Other readers see
#' a NaN. Formats with a single NaN (`*fnuz`, `float8_e8m0fnu`) store `NA`
#' as that NaN, and formats without one (`float6_*`, `float4_e2m1fn`) as
#' the fill value. Values that a double cannot hold
#' exactly (64-bit integers read as double) come with a warning.
#' `POSIXct` and `Date` values written to `numpy.datetime64` (and `difftime`
#' to `numpy.timedelta64`) are rounded down to the array's unit, as numpy
#' casts to a coarser unit: 18:00 is still that day in an array of days.
#'
#' @seealso [array_builder] (`data_type`), [zarr_register_data_type()]
#' @examples
#' z <- open_zarr(system.file("extdata", "volcano.zarr", package = "zarr"), read_only = TRUE)
#' a <- z[["/elevation"]]
#' dt <- a$data_type
#' dt
#' @export
zarr_data_type <- R6::R6Class("zarr_data_type",
  inherit = zarr_extension,
  cloneable = FALSE,
  public = list(
    #' @description Create a data type object.
    #' @param data_type The name of the data type, a single character string.
    #' @param fill_value Optionally, the fill value. The default depends on the
    #'   type: the smallest value of signed integers, the largest of unsigned
    #'   integers, `NaN` for floating point, `FALSE` for `bool` and `""` for
    #'   strings. Elements equal to a fill value read as `NA` unless it is
    #'   zero (`0`, `FALSE`, `""`, ...), `NaN` or of type `bool`; see
    #'   `zarr.fill_as_na` in [zarr-options].
    #' @return An instance of this class.
    initialize = function(data_type, fill_value = NULL) {
      if (is.list(data_type)) {
        private$.config <- data_type[["configuration"]]
        data_type <- data_type[["name"]]
      }
      if (identical(data_type, "structured")) data_type <- "struct" # the legacy name, read as struct
      if (identical(data_type, "struct")) {
        private$.layout <- struct_layout(private$.config)
        private$.config <- struct_config_json(private$.layout)
      }
      dtype_info(data_type)
      super$initialize(data_type)
      if (data_type %in% c("numpy.datetime64", "numpy.timedelta64")) time_unit_seconds(private$.config)
      if (data_type %in% c("fixed_length_utf32", "null_terminated_bytes")) {
        n <- suppressWarnings(as.numeric(private$.config[["length_bytes"]]))
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
      fill <- if (!is.null(private$.layout)) struct_fill_json(private$.layout, private$.fill)
        else fill_json(self$data_type, private$.fill)
      list(data_type = dt, fill_value = fill)
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
      if (rt == "r") return(r_dtype_get(private$.name)$rtype)
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
      if (!is.null(private$.layout)) return(private$.layout$size)
      if (is.na(n) && !is.null(private$.config[["length_bytes"]])) n <- as.integer(private$.config[["length_bytes"]])
      n
    },
    #' @field configuration (read-only) Parameters of parametrised types (for
    #'   example `length_bytes` of fixed-length strings), or `NULL`.
    configuration = function(value) private$.config,
    #' @field fill_value The fill value: the value of elements never written.
    fill_value = function(value) {
      if (missing(value)) return(private$.fill)
      if (!is.null(private$.layout)) return(private$.fill <- struct_fill_normalize(private$.layout, value))
      v <- normalize_fill(private$.name, value)
      fill_bytes(private$.name, v) # validates the value
      private$.fill <- v
    }
  ),
  private = list(.fill = NULL, .config = NULL, .layout = NULL)
)

# The fill value of the registry's `bytes` type: a JSON array of byte values
# or base64 text (metadata), or a raw vector (R); kept as a raw vector.
bytes_fill <- function(value) {
  if (is.raw(value)) return(value)
  if (is.character(value) && length(value) == 1L && !is.na(value)) {
    if (!grepl("^[A-Za-z0-9+/]*={0,2}$", value) || nchar(value) %% 4L != 0L)
      zarr_abort("fill_value", "the fill value of a bytes array must be base64 text or byte values")
    return(jsonlite::base64_dec(value))
  }
  v <- suppressWarnings(as.numeric(unlist(value)))
  if ((length(value) && !length(v)) || anyNA(v) || any(v < 0 | v > 255 | v != trunc(v)))
    zarr_abort("fill_value", "the fill value of a bytes array must be byte values from 0 to 255")
  as.raw(v)
}

# The fill value as the C engine wants it: native bytes, or UTF-8 text.
fill_bytes <- function(name, value) {
  if (is.raw(value) && (is_string_dtype(name) || identical(dtype_kind(name), "x"))) return(value) # bytes
  if (is_string_dtype(name)) return(charToRaw(enc2utf8(as.character(value))))
  .Call(ffi_fill_bytes, engine_dtype(name), value)
}

# The element type the C engine stores, and the R type it produces.
engine_dtype <- function(name) {
  i <- match(name, dtype_table$name)
  if (!is.na(i)) return(dtype_table$engine[i])
  if (!is.na(raw_bits_size(name))) return("string") # records of the engine
  rd <- r_dtype_get(name)
  if (!is.null(rd)) return(paste0("r", rd$size * 8L))
  name
}

engine_rtype <- function(dt) {
  # the plain types first, straight from the table (this is on every read)
  i <- match(dt$data_type, dtype_table$name)
  if (!is.na(i) && (rt <- dtype_table$rtype[i]) %in% c("logical", "integer", "double", "complex", "character"))
    return(rt)
  kind <- dtype_kind(dt$data_type)
  if (identical(kind, "r")) return("raw")
  if (identical(kind, "t") || identical(kind, "x")) return("list") # records as raw vectors
  rt <- dt$Rtype
  if (rt %in% c("POSIXct", "Date", "difftime")) "double" else rt
}


fill_is_nan <- function(v) {
  if (is.list(v)) return(any(vapply(v, fill_is_nan, TRUE)))
  (is.numeric(v) && is.nan(v)) || identical(v, "NaN")
}

# Whether elements equal to the fill value of data type `dt` stand for
# missing values: read as NA when fill_as_na is on, and NA written as the fill
# value. The one rule for every read and write path (the C engine gets it as
# the spec's fill_marks_missing). A fill value equal to the type's zero (0,
# -0, "", empty bytes, 0+0i; for datetime64/timedelta64 the epoch, NaT being
# their sentinel) is what zarr-python, zarrs, tensorstore and zarrita write
# for "nothing written here", so in their data it is an ordinary value.
# bool holds no NA; a NaN fill keeps NaN and NA apart (R's NA has NaN bits of
# its own); types implemented in R get their bytes as they are.
fill_is_missing_marker <- function(dt) {
  kind <- dtype_kind(dt$data_type)
  v <- dt$fill_value
  !is.na(kind) && !kind %in% c("b", "r", "t", "x") && !fill_is_nan(v) && !fill_is_zero(dt$data_type, v)
}

# NA written to a type without an NA of its own (integers, strings, times)
# is stored as the fill value; when that is an ordinary value (zero, "") it
# reads back as that value, so the writer is told. (bool's NA -> FALSE is
# documented; floating point types keep R's NA bits.)
warn_na_as_fill <- function(data, dt, marks_missing, path) {
  if (marks_missing || !dtype_kind(dt$data_type) %in% c("i", "u", "s", "M", "m") || !anyNA(data)) return(invisible())
  fill <- dt$fill_value
  fill <- if (is.character(fill) && is_string_dtype(dt$data_type)) encodeString(fill, quote = "\"") else format_fill(fill)
  zarr_warn("na", sprintf(paste("%s NA value(s) written to array '%s' as its fill value %s, which reads back as",
                                "%s, not NA: a fill value of zero or \"\" marks nothing as missing"),
                          format(sum(is.na(data))), path %||% "/", fill, fill))
}

# Whether a fill value is all zero bits, but for the sign of floating point
# zeros.
fill_is_zero <- function(name, value) {
  b <- fill_bytes(name, value)
  kind <- dtype_kind(name)
  if (kind %in% c("f", "c") && length(b)) {
    part <- length(b) %/% if (kind == "c") 2L else 1L
    sign <- if (.Platform$endian == "little") seq(part, length(b), by = part) else seq(1L, length(b), by = part)
    b[sign] <- b[sign] & as.raw(0x7f)
  }
  all(b == as.raw(0))
}

format_fill <- function(v) {
  if (is.raw(v)) return(paste0("0x", paste(as.character(v), collapse = "")))
  if (is.list(v)) {
    parts <- vapply(v, format_fill, "")
    if (!is.null(names(v))) parts <- paste(names(v), "=", parts) # a struct's fields
    return(paste0("(", paste(parts, collapse = ", "), ")"))
  }
  if (is.character(v)) return(v)
  format(v, digits = 15)
}

# The R type a vector of data has, as the C engine names it.
r_storage <- function(x) {
  if (inherits(x, "integer64")) return("integer64")
  switch(typeof(x), logical = "logical", integer = "integer", double = "double",
         complex = "complex", typeof(x))
}

# ---- data types implemented in R ------------------------------------------

r_dtypes <- new.env(parent = emptyenv())

r_dtype_get <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name)) return(NULL)
  get0(name, envir = r_dtypes, inherits = FALSE)
}

#' Register a data type implemented in R
#'
#' Adds a data type that the C engine does not know, so that arrays of it can
#' be created, read and written. The engine moves the elements' bytes (each
#' `size` bytes, as the chunk stores them after the `bytes` codec, with no
#' byte swapping) between chunks and a raw vector in R's element order, on its
#' worker threads; `decode` and `encode` convert between those bytes and R
#' values on the main thread, once per read or write call. This is the slow
#' path: use it for types that are rare or that a package is prototyping.
#'
#' @param name The data type's name in the metadata (`data_type`), which must
#'   not be one of the built-in types.
#' @param size Bytes per element: 1, 2, 4, 8 or 16.
#' @param decode A function of a raw vector (`n * size` bytes) and `n`,
#'   returning an R vector of `n` values.
#' @param encode A function of an R vector, returning a raw vector of
#'   `length(x) * size` bytes.
#' @param fill_value The default fill value as `size` raw bytes.
#' @param rtype The R type `decode` returns, for printing (`"double"`,
#'   `"integer"`, ...).
#' @param fill_to_json,fill_from_json Optionally, functions converting a fill
#'   value (raw bytes) to its metadata form and back. By default the metadata
#'   holds the bytes as an array of integers from 0 to 255.
#' @return `zarr_register_data_type()`: the name, invisibly.
#'   `zarr_unregister_data_type()`: whether the type was registered, invisibly.
#' @examples
#' # a 16-bit fixed-point number with 8 fraction bits, little endian
#' zarr_register_data_type("example.q8_8", 2,
#'   decode = function(raw, n) readBin(raw, "integer", n, size = 2, endian = "little") / 256,
#'   encode = function(x) writeBin(as.integer(round(x * 256)), raw(), size = 2, endian = "little"))
#' z <- create_zarr() # in memory
#' arr <- z$add_array("/", "q", define_array("example.q8_8", 4))
#' arr$write(c(1.5, -2.25, 0, 100))
#' arr$read()
#' zarr_unregister_data_type("example.q8_8")
#' @export
zarr_register_data_type <- function(name, size, decode, encode, fill_value = as.raw(rep(0L, size)),
                                    rtype = "double", fill_to_json = NULL, fill_from_json = NULL) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name))
    zarr_abort("argument", "the name of a data type must be a single string")
  if (name %in% dtype_table$name)
    zarr_abort("argument", sprintf("'%s' is a built-in data type", name))
  if (!is.numeric(size) || length(size) != 1L || !size %in% c(1, 2, 4, 8, 16))
    zarr_abort("argument", "the size of a data type implemented in R must be 1, 2, 4, 8 or 16 bytes")
  if (!is.function(decode) || !is.function(encode))
    zarr_abort("argument", "decode and encode must be functions")
  if (!is.raw(fill_value) || length(fill_value) != size)
    zarr_abort("argument", sprintf("the fill value must be %d raw byte(s)", as.integer(size)))
  assign(name, list(name = name, size = as.integer(size), decode = decode, encode = encode,
                    fill = fill_value, rtype = rtype, fill_to_json = fill_to_json,
                    fill_from_json = fill_from_json), envir = r_dtypes)
  forget_validated() # a definition checked before may now mean something else
  parsed_cache_forget() # metadata parsed before may now mean something else
  invisible(name)
}

#' @rdname zarr_register_data_type
#' @export
zarr_unregister_data_type <- function(name) {
  found <- !is.null(r_dtype_get(name))
  if (found) rm(list = name, envir = r_dtypes)
  forget_validated()
  parsed_cache_forget()
  invisible(found)
}

# A fill value of an R data type: raw bytes (from R, or from the metadata).
r_dtype_fill <- function(name, value) {
  rd <- r_dtype_get(name)
  if (!is.raw(value)) {
    value <- if (is.function(rd$fill_from_json)) rd$fill_from_json(value)
      else suppressWarnings(as.integer(unlist(value)))
    if (!is.raw(value)) {
      if (anyNA(value) || any(value < 0 | value > 255))
        zarr_abort("fill_value", sprintf("the fill value of %s must be %d bytes", name, rd$size))
      value <- as.raw(value)
    }
  }
  if (length(value) != rd$size)
    zarr_abort("fill_value", sprintf("the fill value of %s must be %d bytes", name, rd$size))
  value
}

r_dtype_fill_json <- function(name, value) {
  rd <- r_dtype_get(name)
  if (!is.null(rd) && is.function(rd$fill_to_json)) return(rd$fill_to_json(value))
  json_array(as.integer(value))
}

# R values -> the bytes the engine writes, checked.
r_dtype_encode <- function(name, data, array = NULL) {
  rd <- r_dtype_get(name)
  raw <- rd$encode(data)
  if (!is.raw(raw) || length(raw) != length(data) * rd$size)
    zarr_abort("value", sprintf("the encoder of data type '%s' returned %s, not %s raw bytes", name,
                                if (is.raw(raw)) length(raw) else typeof(raw), format(length(data) * rd$size)),
               array = array)
  raw
}

r_dtype_decode <- function(name, raw, array = NULL) {
  rd <- r_dtype_get(name)
  n <- length(raw) %/% rd$size
  out <- rd$decode(raw, n)
  if (length(out) != n)
    zarr_abort("value", sprintf("the decoder of data type '%s' returned %s value(s), not %s", name,
                                format(length(out)), format(n)), array = array)
  out
}
