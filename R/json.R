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
  if (!validUTF8(x))
    zarr_abort("metadata", sprintf("malformed JSON in %s: it is not valid UTF-8", what),
               array = array, key = key)
  Encoding(x) <- "UTF-8"
  small <- nchar(x, type = "bytes") <= json_memo_bytes
  if (small && !is.na(i <- match(x, json_memo$texts))) return(json_memo$values[[i]])
  tryCatch({
    lit <- json_protect_literals(x)
    out <- jsonlite::parse_json(lit$text, simplifyVector = FALSE, bigint_as_char = TRUE)
    out <- if (lit$found) json_restore_literals(out) else out
    if (small) json_remember(x, out)
    out
  }, error = function(e) {
    zarr_abort("metadata", sprintf("malformed JSON in %s: %s", what, conditionMessage(e)),
               array = array, key = key)
  })
}

# The parses of the last few small documents (metadata: a store opened again,
# arrays alike), looked up by their text: R values, so callers that change
# theirs change a copy.
json_memo_bytes <- 4096L
json_memo <- new.env(parent = emptyenv())
json_memo$texts <- rep(NA_character_, 64L)
json_memo$values <- vector("list", 64L)
json_memo$at <- 0L

json_remember <- function(text, value) {
  i <- json_memo$at %% length(json_memo$texts) + 1L
  json_memo$texts[i] <- text
  json_memo$values[i] <- list(value)
  json_memo$at <- i
}

# Two kinds of literal are marked in the text before parsing and restored
# after it (outside strings only):
# - integers that a double cannot hold exactly (beyond 2^53) keep every
#   digit: they become strings of class "json_literal", written back as the
#   same bare number (jsonlite returns integers beyond the int64 range as
#   rounded doubles);
# - bare NaN, Infinity and -Infinity, not JSON but what Python's json module
#   writes (zarr-python and xarray attributes, "_FillValue": NaN), become the
#   doubles NaN, Inf and -Inf (jsonlite refuses them).
json_mark <- "\\u001bzarr-int:"
json_mark_num <- "\\u001bzarr-num:"
json_protect_literals <- function(x) {
  big <- grepl("[0-9]{16}", x, perl = TRUE)
  odd <- grepl("NaN|Infinity", x, perl = TRUE)
  if (!big && !odd) return(list(text = x, found = FALSE))
  m <- gregexpr(paste0("\"(?:[^\"\\\\]++|\\\\.)*+\"",
                       if (big) "|(?<![0-9.eE+-])-?[0-9]{16,}(?![.eE0-9])",
                       if (odd) "|(?<![A-Za-z0-9_.+-])(?:-?Infinity|NaN)(?![A-Za-z0-9_])"),
                x, perl = TRUE)
  tok <- regmatches(x, m)[[1L]]
  num <- !startsWith(tok, "\"")
  nonfinite <- num & grepl("[IN]", tok)
  num <- num & !nonfinite
  if (any(num)) {
    digits <- sub("^-", "", tok[num])
    exact <- nchar(digits) < 16L | (nchar(digits) == 16L & digits <= "9007199254740992")
    num[num] <- !exact
  }
  if (!any(num) && !any(nonfinite)) return(list(text = x, found = FALSE))
  tok[num] <- paste0("\"", json_mark, tok[num], "\"")
  tok[nonfinite] <- paste0("\"", json_mark_num, tok[nonfinite], "\"")
  regmatches(x, m) <- list(tok)
  list(text = x, found = TRUE)
}

json_restore_literals <- function(x) {
  if (is.list(x)) return(rapply(x, json_restore_literal, classes = "character", how = "replace"))
  json_restore_literal(x)
}

# (rapply() visits the strings of a parse in C: walking every node of a
# consolidated document in R took longer than parsing it)
json_restore_literal <- function(x) {
  if (length(x) == 1L && is.character(x) && startsWith(x, "\033zarr-")) {
    if (startsWith(x, "\033zarr-int:"))
      return(structure(substring(x, 11L), class = "json_literal"))
    if (startsWith(x, "\033zarr-num:"))
      return(c("NaN" = NaN, "Infinity" = Inf, "-Infinity" = -Inf)[[substring(x, 11L)]])
  }
  x
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
    # whole numbers that a double holds exactly are written as integers
    s <- ifelse(v == trunc(v) & abs(v) <= 2^53, formatC(v, format = "f", digits = 0),
                formatC(v, digits = 15, format = "g"))
    # fall back to 17 significant digits where 15 do not round-trip
    bad <- as.numeric(s) != v
    if (any(bad)) s[bad] <- formatC(v[bad], digits = 17, format = "g")
    out[fin] <- trimws(s)
  }
  out
}

# Strings are written in ASCII, as zarr-python writes them: control and
# non-ASCII characters as \uXXXX escapes (surrogate pairs beyond U+FFFF).
json_str <- function(x) {
  x <- enc2utf8(as.character(x))
  na <- is.na(x)
  if (!any(grepl("[\"\\\\]|[^\x20-\x7e]", x, perl = TRUE, useBytes = TRUE))) { # nothing to escape
    out <- paste0("\"", x, "\"")
    out[na] <- "null"
    return(out)
  }
  x <- gsub("\\", "\\\\", x, fixed = TRUE)
  x <- gsub("\"", "\\\"", x, fixed = TRUE)
  x <- gsub("\n", "\\n", x, fixed = TRUE)
  x <- gsub("\r", "\\r", x, fixed = TRUE)
  x <- gsub("\t", "\\t", x, fixed = TRUE)
  odd <- !na & grepl("[^\x20-\x7e]", x, perl = TRUE, useBytes = TRUE)
  if (any(odd)) {
    bad <- !validUTF8(x[odd])
    if (any(bad))
      zarr_abort("metadata", sprintf("cannot write invalid UTF-8 text as JSON: '%s'",
                                     substr(iconv(x[odd][bad][1L], "UTF-8", "ASCII", sub = "?"), 1L, 60L)))
    x[odd] <- vapply(x[odd], json_escape_ascii, "", USE.NAMES = FALSE)
  }
  out <- paste0("\"", x, "\"")
  out[na] <- "null"
  out
}

# One string -> the same text in printable ASCII; built as bytes, so that
# long texts with many escapes take linear time.
json_escape_ascii <- function(s) {
  cp <- utf8ToInt(s)
  esc <- cp < 0x20L | cp > 0x7eL
  astral <- cp > 0xFFFFL
  start <- cumsum(1L + 5L * esc + 6L * astral) - (1L + 5L * esc + 6L * astral) # 0-based offsets
  out <- raw(start[length(start)] + 1L + 5L * esc[length(esc)] + 6L * astral[length(astral)])
  out[start[!esc] + 1L] <- as.raw(cp[!esc])
  # the \uXXXX units: one per BMP character, two (a surrogate pair) beyond
  bmp <- esc & !astral
  v <- cp[astral] - 0x10000L
  at <- c(start[bmp], start[astral], start[astral] + 6L)
  unit <- c(cp[bmp], 0xD800L + v %/% 1024L, 0xDC00L + v %% 1024L)
  hex <- charToRaw("0123456789abcdef")
  out[at + 1L] <- as.raw(0x5c)
  out[at + 2L] <- as.raw(0x75)
  for (k in 0:3) out[at + 3L + k] <- hex[(unit %/% 16L^(3L - k)) %% 16L + 1L]
  rawToChar(out)
}

json_scalars <- function(x) {
  if (inherits(x, "integer64")) return(ifelse(is.na(x), "null", as.character(x)))
  if (inherits(x, "json_literal")) return(as.character(unclass(x)))
  if (is.logical(x)) return(ifelse(is.na(x), "null", ifelse(x, "true", "false")))
  if (is.integer(x)) return(ifelse(is.na(x), "null", as.character(x)))
  if (is.numeric(x)) return(json_num(x))
  if (is.factor(x)) x <- as.character(x)
  json_str(x)
}

json_is_object <- function(x) is.list(x) && !is.null(names(x))

json_format <- function(x, indent = 0L, pretty = TRUE) {
  if (is.null(x)) return("null")
  # plain scalars, the bulk of a metadata document, go the short way
  if (length(x) == 1L && is.atomic(x) && is.null(attributes(x))) {
    if (is.character(x)) return(json_str(x))
    if (is.double(x)) {
      if (is.finite(x) && x == trunc(x) && abs(x) <= 2^53) return(sprintf("%.0f", x))
      return(json_num(x))
    }
    if (is.logical(x)) return(if (is.na(x)) "null" else if (x) "true" else "false")
    if (is.integer(x)) return(if (is.na(x)) "null" else as.character(x))
  }
  if (inherits(x, "json_literal")) return(as.character(x))
  pad <- if (pretty) strrep("  ", indent + 1L) else ""
  nl <- if (pretty) "\n" else ""
  if (json_is_object(x)) {
    if (!length(x)) return("{}")
    vals <- vapply(x, json_format, "", indent = indent + 1L, pretty = pretty, USE.NAMES = FALSE)
    parts <- paste0(pad, json_str(names(x)), if (pretty) ": " else ":", vals)
    end <- if (pretty) strrep("  ", indent) else ""
    return(paste0("{", nl, paste(parts, collapse = paste0(",", nl)), nl, end, "}"))
  }
  if (is.list(x)) {
    if (!length(x)) return("[]")
    items <- vapply(x, json_format, "", indent = indent + 1L, pretty = pretty, USE.NAMES = FALSE)
    if (!pretty || all(vapply(x, function(e) is.atomic(e) && length(e) == 1L, TRUE)))
      return(paste0("[", paste(items, collapse = ", "), "]"))
    end <- strrep("  ", indent)
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
  # many arrays alike (one definition, hundreds of arrays) make the same
  # document: the last one written is kept
  if (pretty && identical(x, json_memo$last_x)) return(json_memo$last_text)
  text <- paste0(json_format(x, 0L, pretty), if (pretty) "\n" else "")
  if (pretty && nchar(text, type = "bytes") <= 65536L) {
    json_memo$last_x <- x
    json_memo$last_text <- text
  }
  text
}

# Attributes as R users expect them: JSON arrays of scalars become vectors.
# With `literal = TRUE`, integers beyond 2^53 stay "json_literal" values
# (written back as the same bare numbers), else they become their digits.
json_simplify <- function(x, literal = FALSE) {
  if (inherits(x, "json_literal")) return(if (literal) x else unclass(x)) # an integer beyond 2^53
  if (!is.list(x)) return(x)
  if (is.null(names(x)) && length(x) &&
      all(vapply(x, function(e) is.atomic(e) && length(e) == 1L, TRUE))) {
    types <- unique(vapply(x, function(e) class(e)[1L], ""))
    if (length(types) == 1L || all(types %in% c("integer", "numeric")))
      return(unlist(x, use.names = FALSE))
    if (all(vapply(x, is.null, TRUE))) return(x)
  }
  if (is.null(names(x)) && length(x) && all(vapply(x, is.null, TRUE))) return(x)
  out <- lapply(x, json_simplify, literal = literal)
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

# The digits of the "json_literal" integers in a simplified value.
json_unliteral <- function(x) {
  if (inherits(x, "json_literal")) return(unclass(x))
  if (!is.list(x) || !length(x)) return(x)
  rapply(x, unclass, classes = "json_literal", how = "replace")
}

# What parsing the JSON text `raw` would take in R, estimated from its
# structural characters before it is parsed: every value is an R vector of
# about 64 bytes (a list slot, a header) from as little as two bytes of
# text ("0,"), and strings are copied. Refused beyond the budget
# (zarr.max_decoded_bytes) with a `class` error naming `key`. Counted in
# slices, so that the count itself takes little memory.
json_check_budget <- function(raw, what, key = NULL, class = "metadata") {
  n <- length(raw)
  budget <- max_decoded_bytes()
  if (n * 2 <= budget / 64) return(invisible()) # small texts cannot reach it
  values <- 1
  marks <- as.raw(c(0x2c, 0x5b, 0x7b)) # , [ {
  step <- 2^24
  for (from in seq(1, n, by = step)) {
    x <- raw[from:min(n, from + step - 1)]
    values <- values + sum(x %in% marks)
  }
  need <- values * 64 + n
  if (need > budget)
    zarr_abort(class, sprintf(paste("parsing %s would take about %.0f bytes of memory (%.0f JSON values), more than",
                                    "the budget of %.0f bytes (options(zarr.max_decoded_bytes))"),
                              what, need, values, budget), key = key)
  invisible()
}
