# JSON in and out. Documents are parsed into plain lists (objects -> named
# lists, arrays -> unnamed lists) and written back by a small serializer of our
# own, because Zarr metadata needs exact control over arrays of length one
# ("shape": [500]), full double precision and the NaN/Infinity spellings.

json_parse <- function(x, what = "metadata", array = NULL, key = NULL) {
  if (is.raw(x)) {
    # rawToChar() refuses NUL bytes with a base R error; no JSON text holds one
    if (any(x == as.raw(0L)))
      zarr_abort("metadata", sprintf("malformed JSON in %s: it holds a NUL byte", what),
                 array = array, key = key)
    x <- rawToChar(x)
  }
  Encoding(x) <- "UTF-8"
  tryCatch(
    jsonlite::parse_json(x, simplifyVector = FALSE, bigint_as_char = TRUE),
    error = function(e) {
      zarr_abort("metadata", sprintf("malformed JSON in %s: %s", what, conditionMessage(e)),
                 array = array, key = key)
    }
  )
}

#' Mark a vector so it is always written as a JSON array.
#' @noRd
json_array <- function(x) {
  if (is.list(x)) return(unname(x))
  as.list(x)
}

json_num <- function(x) {
  out <- character(length(x))
  na <- is.na(x) & !is.nan(x)
  out[na] <- "null"
  out[is.nan(x)] <- "\"NaN\""
  out[!na & is.infinite(x) & x > 0] <- "\"Infinity\""
  out[!na & is.infinite(x) & x < 0] <- "\"-Infinity\""
  fin <- is.finite(x)
  if (any(fin)) {
    v <- x[fin]
    s <- ifelse(v == trunc(v) & abs(v) < 1e15, formatC(v, format = "f", digits = 0),
                formatC(v, digits = 15, format = "g"))
    # fall back to 17 significant digits where 15 do not round-trip
    bad <- as.numeric(s) != v
    if (any(bad)) s[bad] <- formatC(v[bad], digits = 17, format = "g")
    out[fin] <- trimws(s)
  }
  out
}

json_str <- function(x) {
  x <- enc2utf8(as.character(x))
  x <- gsub("\\", "\\\\", x, fixed = TRUE)
  x <- gsub("\"", "\\\"", x, fixed = TRUE)
  x <- gsub("\n", "\\n", x, fixed = TRUE)
  x <- gsub("\r", "\\r", x, fixed = TRUE)
  x <- gsub("\t", "\\t", x, fixed = TRUE)
  ctrl <- grepl("[\001-\037]", x, useBytes = TRUE)
  if (any(ctrl)) {
    x[ctrl] <- vapply(x[ctrl], function(s) {
      cp <- utf8ToInt(s)
      paste(ifelse(cp < 32, sprintf("\\u%04x", cp), vapply(cp, intToUtf8, "")), collapse = "")
    }, "")
  }
  out <- paste0("\"", x, "\"")
  out[is.na(x)] <- "null"
  out
}

json_scalars <- function(x) {
  if (inherits(x, "integer64")) return(as.character(x))
  if (is.logical(x)) return(ifelse(is.na(x), "null", ifelse(x, "true", "false")))
  if (is.integer(x)) return(ifelse(is.na(x), "null", as.character(x)))
  if (is.numeric(x)) return(json_num(x))
  if (is.factor(x)) x <- as.character(x)
  json_str(x)
}

json_is_object <- function(x) is.list(x) && !is.null(names(x))

json_format <- function(x, indent = 0L, pretty = TRUE) {
  pad <- if (pretty) strrep("  ", indent + 1L) else ""
  end <- if (pretty) strrep("  ", indent) else ""
  nl <- if (pretty) "\n" else ""
  sep <- if (pretty) ": " else ":"
  if (is.null(x)) return("null")
  if (inherits(x, "json_literal")) return(as.character(x))
  if (json_is_object(x)) {
    if (!length(x)) return("{}")
    parts <- vapply(seq_along(x), function(i) {
      paste0(pad, json_str(names(x)[i]), sep, json_format(x[[i]], indent + 1L, pretty))
    }, "")
    return(paste0("{", nl, paste(parts, collapse = paste0(",", nl)), nl, end, "}"))
  }
  if (is.list(x)) {
    if (!length(x)) return("[]")
    simple <- all(vapply(x, function(e) is.atomic(e) && length(e) == 1L, TRUE))
    items <- vapply(x, json_format, "", indent = indent + 1L, pretty = pretty)
    if (simple || !pretty) return(paste0("[", paste(items, collapse = ", "), "]"))
    return(paste0("[", nl, paste0(pad, items, collapse = paste0(",", nl)), nl, end, "]"))
  }
  if (is.atomic(x)) {
    if (!length(x)) return("[]")
    if (length(x) == 1L && is.null(attr(x, "json_array"))) return(json_scalars(x))
    return(paste0("[", paste(json_scalars(x), collapse = ", "), "]"))
  }
  zarr_abort("metadata", sprintf("cannot write an object of class '%s' as JSON", class(x)[1L]))
}

json_write <- function(x, pretty = TRUE) {
  paste0(json_format(x, 0L, pretty), if (pretty) "\n" else "")
}

# Attributes as R users expect them: JSON arrays of scalars become vectors.
json_simplify <- function(x) {
  if (!is.list(x)) return(x)
  if (is.null(names(x)) && length(x) &&
      all(vapply(x, function(e) is.atomic(e) && length(e) == 1L, TRUE))) {
    types <- unique(vapply(x, function(e) class(e)[1L], ""))
    if (length(types) == 1L || all(types %in% c("integer", "numeric")))
      return(unlist(x, use.names = FALSE))
    if (all(vapply(x, is.null, TRUE))) return(x)
  }
  if (is.null(names(x)) && length(x) && all(vapply(x, is.null, TRUE))) return(x)
  out <- lapply(x, json_simplify)
  names(out) <- names(x)
  out
}

# The reverse for writing: vectors of length != 1 become JSON arrays.
json_prepare <- function(x) {
  if (is.null(x)) return(NULL)
  if (is.list(x)) {
    out <- lapply(x, json_prepare)
    if (!is.null(names(x))) names(out) <- names(x)
    return(out)
  }
  if (is.atomic(x) && length(x) != 1L) {
    attr(x, "json_array") <- TRUE
    return(x)
  }
  x
}
