# Metadata documents come from files anyone may have written: every field is
# checked for its JSON type before it is used, by exact name (`[[`, never the
# partial matching of `$`), and a mismatch is a zarr_error_metadata naming
# the field.

is_json_object <- function(x) {
  is.list(x) && (!length(x) || (!is.null(names(x)) && all(nzchar(names(x)))))
}

is_json_string <- function(x, max = Inf) {
  is.character(x) && length(x) == 1L && !is.na(x) && nchar(x, type = "bytes") <= max
}

# A JSON array of non-negative integers (a list from JSON, or a vector).
is_json_dims <- function(x) {
  if (is.list(x)) {
    if (!all(vapply(x, function(e) is.numeric(e) && length(e) == 1L, TRUE))) return(FALSE)
    x <- unlist(x)
  }
  if (is.null(x)) return(TRUE) # [] (0-d)
  is.numeric(x) && !anyNA(x) && all(x >= 0) && all(x == trunc(x)) && all(x < 2^53)
}

meta_fail <- function(field, what, array = NULL, key = NULL) {
  zarr_abort("metadata", sprintf("'%s' %s", field, what), array = array, key = key)
}

# Longest codec or data type name accepted (names are short words).
max_name_bytes <- 256L

check_codec_entry <- function(cd, field, array = NULL, key = NULL) {
  if (is_json_string(cd)) cd <- list(name = cd)
  if (!is_json_object(cd)) meta_fail(field, "must be a JSON object or a codec name", array, key)
  nm <- cd[["name"]]
  if (!is_json_string(nm, max_name_bytes) || !nzchar(nm))
    meta_fail(paste0(field, ".name"), sprintf("must be a non-empty string of at most %d bytes", max_name_bytes),
              array, key)
  cfg <- cd[["configuration"]]
  if (!is.null(cfg) && !is_json_object(cfg)) meta_fail(paste0(field, ".configuration"), "must be a JSON object", array, key)
  invisible(cd)
}

# Array metadata in v3 form (also what v2 metadata is converted into).
check_array_metadata <- function(m, array = NULL, key = NULL) {
  fail <- function(field, what) meta_fail(field, what, array, key)
  if (!is_json_object(m)) zarr_abort("metadata", "the array metadata is not a JSON object", array = array, key = key)
  if (!identical(m[["node_type"]], "array")) fail("node_type", "must be \"array\"")
  fmt <- m[["zarr_format"]]
  if (!is.null(fmt) && !(is.numeric(fmt) && length(fmt) == 1L && fmt %in% c(2, 3)))
    fail("zarr_format", "must be 2 or 3")
  if (identical(as.integer(fmt %||% 3L), 3L)) check_v3_extension_fields(m, "array", array, key)
  if (is.null(m[["shape"]])) zarr_abort("metadata", "metadata has no shape", array = array, key = key)
  if (!is_json_dims(m[["shape"]])) fail("shape", "must be an array of non-negative integers")
  n <- length(unlist(m[["shape"]]))
  dt <- m[["data_type"]]
  if (is.list(dt)) {
    if (!is_json_object(dt) || !is_json_string(dt[["name"]], max_name_bytes))
      fail("data_type", "must be a string or an object with a string 'name'")
    if (!is.null(dt[["configuration"]]) && !is_json_object(dt[["configuration"]]))
      fail("data_type.configuration", "must be a JSON object")
  } else if (!is_json_string(dt, max_name_bytes)) {
    fail("data_type", "must be a string or an object with a string 'name'")
  }
  grid <- m[["chunk_grid"]]
  if (!is_json_object(grid) || !is_json_string(grid[["name"]], max_name_bytes))
    fail("chunk_grid", "must be an object with a string 'name'")
  gc <- grid[["configuration"]]
  if (!is.null(gc) && !is_json_object(gc)) fail("chunk_grid.configuration", "must be a JSON object")
  if (identical(grid[["name"]], "regular")) {
    cs <- gc[["chunk_shape"]]
    if (is.null(cs) || !is_json_dims(cs)) fail("chunk_grid.configuration.chunk_shape", "must be an array of positive integers")
    if (length(unlist(cs)) != n) fail("chunk_grid.configuration.chunk_shape", "must have one value per dimension")
  }
  enc <- m[["chunk_key_encoding"]]
  if (!is.null(enc)) {
    if (!is_json_object(enc) || !is_json_string(enc[["name"]], max_name_bytes))
      fail("chunk_key_encoding", "must be an object with a string 'name'")
    ec <- enc[["configuration"]]
    if (!is.null(ec) && !is_json_object(ec)) fail("chunk_key_encoding.configuration", "must be a JSON object")
    if (!is.null(ec[["separator"]]) && !is_json_string(ec[["separator"]]))
      fail("chunk_key_encoding.configuration.separator", "must be a string")
  }
  codecs <- m[["codecs"]]
  # no "codecs" at all: an early v3 draft, read as plain little-endian bytes (parse_array_metadata())
  if (!is.null(codecs) && (!is.list(codecs) || is_json_object(codecs) && length(codecs)))
    fail("codecs", "must be an array of codecs")
  for (i in seq_along(codecs)) check_codec_entry(codecs[[i]], sprintf("codecs[%d]", i), array, key)
  dn <- m[["dimension_names"]]
  if (!is.null(dn)) {
    ok <- if (is.list(dn)) {
      (!length(dn) || is.null(names(dn))) &&
        all(vapply(dn, function(e) is.null(e) || (is.character(e) && length(e) == 1L), TRUE))
    } else is.character(dn)
    if (!ok) fail("dimension_names", "must be an array of strings or nulls")
    if (length(dn) != n) fail("dimension_names", "must have one entry per dimension")
  }
  at <- m[["attributes"]]
  if (!is.null(at) && !is_json_object(at)) fail("attributes", "must be a JSON object")
  st <- m[["storage_transformers"]]
  if (!is.null(st) && !is.list(st)) fail("storage_transformers", "must be an array")
  invisible(m)
}

# Top-level fields a v3 document may carry; pending_field is this package's
# own marker of an interrupted resize (R/resize.R).
v3_known_fields <- list(
  array = c("zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding",
            "fill_value", "codecs", "attributes", "storage_transformers", "dimension_names", "pending"),
  group = c("zarr_format", "node_type", "attributes", "consolidated_metadata"))

# The v3 specification lets a writer add a field that readers may skip only
# when it is an object with "must_understand": false; any other unknown field
# changes the meaning of the data, so the node is refused.
check_v3_extension_fields <- function(m, node_type, array = NULL, key = NULL) {
  known <- v3_known_fields[[node_type]]
  if (identical(node_type, "array")) known[known == "pending"] <- pending_field
  for (f in setdiff(names(m), known)) {
    v <- m[[f]]
    if (!(is_json_object(v) && identical(v[["must_understand"]], FALSE)))
      zarr_abort("metadata", sprintf(
        "unknown metadata field '%s' is not marked \"must_understand\": false; the node cannot be read safely", f),
        array = array, key = key)
  }
  invisible(m)
}

# A zarr.json document of any node.
check_node_document <- function(m, key) {
  if (!is_json_object(m)) zarr_abort("metadata", "zarr.json is not a JSON object", key = key)
  nt <- m[["node_type"]]
  if (is.null(nt)) zarr_abort("metadata", "zarr.json has no node_type", key = key)
  if (!is_json_string(nt) || !nt %in% c("group", "array")) meta_fail("node_type", "must be \"group\" or \"array\"", key = key)
  fmt <- m[["zarr_format"]]
  if (!is.null(fmt) && !(is.numeric(fmt) && length(fmt) == 1L && fmt %in% c(2, 3)))
    meta_fail("zarr_format", "must be 3", key = key)
  at <- m[["attributes"]]
  if (!is.null(at) && !is_json_object(at)) meta_fail("attributes", "must be a JSON object", key = key)
  if (identical(nt, "group")) check_v3_extension_fields(m, "group", key = key)
  invisible(m)
}

# A parsed .zarray document.
check_v2_array <- function(z, key) {
  fail <- function(field, what) meta_fail(field, what, key = key)
  if (!is_json_object(z) || !length(z)) zarr_abort("metadata", ".zarray is not a JSON object", key = key)
  for (f in c("shape", "chunks", "dtype"))
    if (is.null(z[[f]])) zarr_abort("metadata", sprintf(".zarray has no '%s'", f), key = key)
  if (!is.list(z[["shape"]]) || !is_json_dims(z[["shape"]])) fail("shape", "must be an array of non-negative integers")
  if (!is.list(z[["chunks"]]) || !is_json_dims(z[["chunks"]]) || any(unlist(z[["chunks"]]) < 1))
    fail("chunks", "must be an array of positive integers")
  if (length(z[["chunks"]]) != length(z[["shape"]])) fail("chunks", "must have one value per dimension")
  if (!is_json_string(z[["dtype"]], max_name_bytes) && !is.list(z[["dtype"]]))
    fail("dtype", "must be a string (or a list for structured types)")
  check_v2_codec <- function(cd, field) {
    if (!is_json_object(cd) || !length(cd)) fail(field, "must be a JSON object with an 'id'")
    id <- cd[["id"]]
    if (!is_json_string(id, max_name_bytes) || !nzchar(id))
      fail(paste0(field, ".id"), sprintf("must be a non-empty string of at most %d bytes", max_name_bytes))
  }
  if (!is.null(z[["compressor"]])) check_v2_codec(z[["compressor"]], "compressor")
  filters <- z[["filters"]]
  if (!is.null(filters)) {
    if (!is.list(filters) || (is_json_object(filters) && length(filters))) fail("filters", "must be an array or null")
    for (i in seq_along(filters)) check_v2_codec(filters[[i]], sprintf("filters[%d]", i))
  }
  ord <- z[["order"]]
  if (!is.null(ord) && !(is_json_string(ord) && ord %in% c("C", "F"))) fail("order", "must be \"C\" or \"F\"")
  sep <- z[["dimension_separator"]]
  if (!is.null(sep) && !(is_json_string(sep) && sep %in% c(".", "/"))) fail("dimension_separator", "must be \".\" or \"/\"")
  invisible(z)
}

# Convert a non-zarr error met while setting up a node into a metadata error.
as_metadata_error <- function(e, array = NULL) {
  if (inherits(e, "zarr_error")) return(e)
  tryCatch(zarr_abort("metadata", sprintf("invalid metadata: %s", conditionMessage(e)), array = array),
           zarr_error = function(err) err)
}

# Blosc shuffle as numcodecs, GDAL and the v3 spelling give it -> the v3 name.
# -1 (numcodecs' AUTOSHUFFLE): bit shuffle for 1-byte elements, else byte
# shuffle; decoding does not depend on it (each chunk header says).
blosc_shuffle_name <- function(x, typesize = 1L) {
  if (is.list(x) && length(x) == 1L) x <- x[[1L]]
  if (!(is.numeric(x) || is.character(x)) || length(x) != 1L || is.na(x)) return(NA_character_)
  v <- toupper(trimws(as.character(x)))
  if (v %in% c("-1", "AUTOSHUFFLE", "AUTO"))
    return(if (isTRUE(as.numeric(typesize) > 1)) "shuffle" else "bitshuffle")
  switch(v,
    `0` = , NOSHUFFLE = , NONE = "noshuffle",
    `1` = , SHUFFLE = , BYTE = , BYTESHUFFLE = "shuffle",
    `2` = , BITSHUFFLE = , BIT = "bitshuffle",
    NA_character_)
}

#' Whether a name can name a group or an array
#'
#' Checks a node name against the rules of the Zarr v3 specification, the
#' same check made when a group or array is added: a name is not empty, has
#' no `/`, is not made of periods only (`.`, `..`) and does not start with
#' the reserved `__`; this package also refuses control characters and the
#' names of metadata documents (`zarr.json`, `.zarray`, `.zgroup`,
#' `.zattrs`, `.zmetadata`), which would share their parent's keys. Other
#' characters, including any Unicode letter, are allowed; names of letters,
#' digits and `-`, `_`, `.` work in every Zarr implementation and file system.
#'
#' @seealso [zarr_group] (`add_group()`, `add_array()`)
#' @param name The names to check (a character vector).
#' @return A logical vector as long as `name`: `TRUE` where the name is
#'   valid.
#' @export
#' @examples
#' is_valid_node_name(c("temperature", "", "..", "__meta", "a/b"))
is_valid_node_name <- function(name) {
  if (!is.character(name)) return(rep(FALSE, length(name)))
  vapply(name, node_name_ok, TRUE, USE.NAMES = FALSE)
}
