#' Reference store (Kerchunk)
#'
#' A read-only Zarr store whose keys refer to bytes elsewhere: the
#' "references" that Kerchunk (and fsspec's `ReferenceFileSystem`) write to
#' read netCDF-4, HDF5, GRIB or TIFF archives as Zarr v2 without copying
#' them. Each key is either inline data (usually the metadata documents), a
#' byte range of a file (`[url, offset, length]`) or a whole file (`[url]`).
#' [open_zarr()] makes one for `reference+json://` and `reference+parquet://`
#' locations and for `.json` files that hold references.
#'
#' Formats:
#' - JSON version 0: an object mapping keys to values;
#' - JSON version 1: `{"version": 1, "templates": {...}, "gen": [...],
#'   "refs": {...}}`, where `{{name}}` in a URL is replaced from `templates`
#'   and each `gen` entry expands into references over the Cartesian product
#'   of its `dimensions` (ranges `{start, stop, step}` or lists of values;
#'   `{{i}}` and simple arithmetic such as `{{i * 1000 + 8}}` in the key,
#'   URL, offset and length);
#' - Parquet (fsspec's `LazyReferenceMapper` layout): a directory (or URL)
#'   holding `.zmetadata` with the metadata documents and `record_size`, and
#'   `<array>/refs.<k>.parq` files with the columns `path`, `offset`, `size`
#'   and `raw`, read with the \pkg{nanoparquet} package. A row with a path
#'   and null (or zero) offset and size refers to the whole file. A relative
#'   path is taken from the folder of its `.parq` file when the file is there
#'   (as GDAL writes them), otherwise from the folder holding `.zmetadata`
#'   (as fsspec writes them).
#'
#' What references expand into is counted before it is made, within the
#' budget of the option `zarr.max_decoded_bytes` (see [zarr-options]): the
#' JSON document, the keys of `gen` entries, URLs filled from `templates`
#' (in one pass, as fsspec does: a template's value is not expanded again),
#' and the rows of each Parquet file (from its footer; no more than the
#' record size); beyond it opening fails with a `zarr_error_metadata`.
#' Parquet files are looked for locally in the folder, not by every name a
#' shape allows.
#'
#' Inline values are plain strings, `base64:`-prefixed binary data, or JSON
#' objects (metadata documents, written back as JSON). Targets are local
#' paths (relative ones are taken from the directory of the reference file),
#' `file://`, `http://` and `https://` URLs (relative paths of a reference
#' file on a web server are taken from its URL) and `gs://` URLs (read
#' through the public endpoint `https://storage.googleapis.com`) and `s3://`
#' URLs (read by [zarr_s3store], with the credentials it finds in the
#' environment or `~/.aws`). Secrets in the URLs of the reference file and
#' of the targets (user-info, and the signatures and tokens of signed URLs
#' such as `X-Amz-Signature` or `sig`) are used for the requests but shown
#' as `***` by `print()`, the fields and every message. A key without a
#' reference reads as the fill
#' value; a reference to a file that does not exist, or to bytes beyond its
#' end, is an error.
#'
#' Reads are planned in C: the byte ranges of the chunks needed are grouped
#' by file; for files on web servers, ranges closer than `zarr.range_gap`
#' bytes are merged into one request of at most `zarr.range_max` bytes (see
#' [zarr-options]) and the requests run concurrently through the HTTP store
#' (`zarr.http_*` options apply), one HTTP store per host; local files are
#' read chunk by chunk with positioned reads. Files on several hosts (or
#' local and remote files) are read at the same time, and chunks are decoded
#' while the rest are still arriving.
#'
#' @seealso [zarr_store], [open_zarr()], [zarr-options] (`zarr.range_gap`,
#'   `zarr.range_max`)
#' @examples
#' # a file of 12 little-endian int32 values, and references that make it an array
#' bin <- tempfile(fileext = ".bin")
#' writeBin(c(1:6, 101:106), bin, size = 4, endian = "little")
#' refs <- list(
#'   ".zgroup" = list(zarr_format = 2),
#'   "v/.zarray" = list(zarr_format = 2, shape = list(12), chunks = list(6), dtype = "<i4",
#'                      compressor = NULL, filters = NULL, fill_value = NULL, order = "C"),
#'   "v/0" = list(bin, 0, 24), # [file, offset, length]
#'   "v/1" = list(bin, 24, 24))
#' st <- zarr_refstore$new(refs)
#' st
#' z <- zarr$new(st)
#' z[["/v"]][]
#' # the same references in a JSON file (version 1), with a path relative to it
#' json <- tempfile(fileext = ".json")
#' writeLines(sprintf('{"version": 1, "refs": {".zgroup": {"zarr_format": 2},
#'   "v/.zarray": {"zarr_format": 2, "shape": [12], "chunks": [6], "dtype": "<i4",
#'                 "compressor": null, "filters": null, "fill_value": null, "order": "C"},
#'   "v/0": ["%1$s", 0, 24], "v/1": ["%1$s", 24, 24]}}', basename(bin)), json)
#' z <- open_zarr(json)
#' z[["/v"]][4:8]
#' unlink(c(bin, json))
#' @export
zarr_refstore <- R6::R6Class("zarr_refstore",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): the reference file, `NULL` for references
    #'   given as a list.
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() if (!identical(self$root, "(list)")) list(kind = "reference", location = private$.secret$location),

    #' @description Open references as a read-only store.
    #' @param refs The location of the references: a path or `http(s)://`
    #'   URL of a JSON file, or of a directory holding Parquet references
    #'   (optionally with a `reference+json://` or `reference+parquet://`
    #'   prefix); or the references themselves, as a list parsed from JSON.
    #' @param format `"auto"` (from the prefix, or JSON unless the location
    #'   is a directory or holds `.zmetadata`), `"json"` or `"parquet"`.
    #' @param base Where relative target paths are taken from (default: the
    #'   directory or URL holding the references; the working directory for a
    #'   list).
    #' @return An instance of this class.
    initialize = function(refs, format = c("auto", "json", "parquet"), base = NULL) {
      format <- match.arg(format)
      if (is.list(refs)) {
        parsed <- ref_parse_doc(refs, "references")
        private$.location <- "(list)"
        base <- base %||% getwd()
      } else {
        if (!is.character(refs) || length(refs) != 1L || is.na(refs) || !nzchar(refs))
          zarr_abort("argument", "refs must be a single path or URL, or a list of references")
        loc <- enc2utf8(refs)
        if (grepl("^reference[+]json://", loc, ignore.case = TRUE)) {
          format <- "json"
          loc <- sub("^reference[+]json://", "", loc, ignore.case = TRUE)
        } else if (grepl("^reference[+]parquet://", loc, ignore.case = TRUE)) {
          format <- "parquet"
          loc <- sub("^reference[+]parquet://", "", loc, ignore.case = TRUE)
        }
        loc <- sub("^file://", "", loc)
        remote <- grepl("^https?://", loc, ignore.case = TRUE)
        if (!remote) {
          loc <- path.expand(loc)
          if (!file.exists(loc)) zarr_abort("not_found", sprintf("'%s' does not exist", refs))
          loc <- normalizePath(loc, winslash = "/", mustWork = TRUE)
        }
        if (format == "auto") format <- if (!remote && dir.exists(loc)) "parquet" else "json"
        private$.location <- redact(loc) # shown only: requests use `loc`
        private$.secret <- list2env(list(location = loc)) # an environment: str() does not open it
        if (format == "json") {
          if (!remote && dir.exists(loc))
            zarr_abort("argument", sprintf("'%s' is a directory, not a JSON reference file", refs))
          parsed <- ref_parse_doc(ref_fetch(loc), loc)
          base <- base %||% ref_dirname(loc)
        } else {
          base <- base %||% loc
          parsed <- ref_read_parquet(loc)
        }
      }
      private$.format <- format
      private$.init_entries(parsed, base)
    },

    #' @description Print a summary of the store.
    print = function() {
      cat("<Zarr reference store> (read-only)\n")
      cat("References:", self$root, sprintf("(%s, %d keys)", private$.format, length(private$.keys)), "\n")
      n <- length(private$.targets)
      if (n) cat(sprintf("Targets: %d file%s%s\n", n, if (n == 1L) "" else "s",
                         if (n <= 3L) paste0(": ", paste(self$targets, collapse = ", ")) else ""))
      invisible(self)
    },

    #' @description Whether a key has a reference.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) {
      check_key(key)
      key %in% private$.keys || any(startsWith(private$.keys, paste0(key, "/")))
    },

    #' @description Retrieve a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range See [zarr_store].
    #' @return A raw vector, or `NULL` when the key has no reference.
    get = function(key, prototype = NULL, byte_range = NULL) {
      check_key(key)
      range <- c_byte_range(byte_range, key)
      .Call(ffi_store_get, self$io_spec(), key, range)
    },

    #' @description Size of a value in bytes, as the reference says (`NA`
    #'   for whole-file references, whose size is not known in advance).
    #' @param key The key.
    #' @return The size, or `NA`.
    getsize = function(key) {
      check_key(key)
      s <- private$.sizes[match(key, private$.keys)]
      if (is.na(s)) NA_real_ else unname(s)
    },

    #' @description The names directly below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector.
    list_dir = function(prefix) keys_dir(private$.keys, prefix),

    #' @description All keys below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) keys_below(private$.keys, prefix),

    #' @description Refused: reference stores are read-only.
    #' @param key,value Ignored.
    set = function(key, value) private$check_writable(),

    #' @description Refused: reference stores are read-only.
    #' @param key Ignored.
    erase = function(key) private$check_writable(),

    #' @description Refused: reference stores are read-only.
    clear = function() private$check_writable(),

    #' @description Refused: reference stores are read-only.
    #' @param prefix Ignored.
    erase_prefix = function(prefix) private$check_writable(),

    #' @description How the C engine reaches this store: the map of
    #'   references in C, with the merging and HTTP options as set now.
    #' @return An external pointer to the store's C implementation.
    io_spec = function() {
      o <- engine_opts()
      .Call(ffi_store_ref_options, private$.io, c(o$range_gap, o$range_max))
      if (length(private$.http)) {
        ho <- http_options()
        for (h in private$.http) .Call(ffi_store_http_options, h, ho)
      }
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Reference store",
    #' @field root (read-only) Where the references are (secrets in a URL,
    #'   such as the signature of a signed URL, shown as `***`).
    root = function(value) private$.location,
    #' @field uri (read-only) The references as a URI (secrets shown as `***`).
    uri = function(value) paste0("reference+", private$.format, "://", private$.location),
    #' @field targets (read-only) The files the references point into
    #'   (secrets in their URLs shown as `***`).
    targets = function(value) private$.targets
  ),
  private = list(
    .location = NULL, .secret = NULL, .format = "json", .base = NULL, .keys = character(), .sizes = numeric(),
    .targets = character(), .http = list(), .substores = list(),
    check_writable = function() zarr_abort("read_only", "reference stores are read-only"),
    # The store from parsed entries (see ref_parse_doc()); `own` (see
    # .build()) serves targets of a store that holds them (Icechunk).
    .init_entries = function(parsed, base, own = NULL) {
      private$.base <- redact(base)
      private$.build(parsed, base, own)
      keys <- private$.keys
      version <- if (!"zarr.json" %in% keys && any(grepl("(^|/)[.]z(group|array)$", keys))) 2L else 3L
      super$initialize(read_only = TRUE, version = version)
    },
    # `own`: NULL, or list(prefix, store, shown): target URLs starting with
    # `prefix` are keys of `store` (a repository's own chunk objects).
    # `p$last_modified` (optional): the time (seconds since 1970) after
    # which a target must not have been modified, `p$etag` (optional): the
    # ETag it must still have (Icechunk's virtual chunks; NA: no condition);
    # `p$bad_prefix`, `p$bad_msg`: keys without an entry below a prefix fail
    # with the message (an Icechunk array whose manifest is unreadable).
    .build = function(p, base, own = NULL) {
      keys <- p$key
      bad <- !.Call(ffi_key_is_safe, keys)
      if (any(bad))
        zarr_abort("key", sprintf("invalid key in the references: '%s'", keys[which(bad)[1L]]))
      # targets: distinct URLs, each resolved to a sub-store and a key in it
      urls <- p$url
      has <- p$kind != 0L
      tnames <- unique(urls[has])
      tix <- rep(NA_integer_, length(keys))
      tix[has] <- match(urls[has], tnames) - 1L
      # conditions: a target and what it must not have changed since (a
      # modification time or an ETag); entries without one share the target
      since <- p$last_modified %||% rep(NA_real_, length(keys))
      etag <- p$etag %||% rep(NA_character_, length(keys))
      checked <- has & (!is.na(since) | !is.na(etag))
      cid <- paste(tix, since, etag)
      cids <- unique(cid[checked])
      cond <- rep(-1L, length(keys))
      cond[checked] <- match(cid[checked], cids) - 1L
      cfirst <- which(checked)[match(cids, cid[checked])]
      # references (or a repository) fetched from elsewhere may not reach into local files
      local_ok <- isTRUE(getOption("zarr.reference_local_targets", FALSE)) ||
        if (is.null(own)) !grepl("^https?://", private$.secret$location %||% "", ignore.case = TRUE)
        else inherits(own$store, "zarr_localstore")
      res <- lapply(tnames, function(u) {
        if (is.null(own) || !startsWith(u, own$prefix)) return(ref_resolve_target(u, base, local_ok = local_ok))
        key <- substring(u, nchar(own$prefix) + 1L)
        list(group = own$prefix, make = function() own$store$io_spec(), key = key, error = "",
             shown = paste0(own$shown, "/", key))
      })
      groups <- vapply(res, function(r) r$group, "")
      ugroups <- unique(groups[nzchar(groups)])
      # sub-stores made before (a store rebuilt with more entries) are kept
      stores <- lapply(ugroups, function(g) private$.substores[[g]] %||% res[[match(g, groups)]]$make())
      private$.substores <- stats::setNames(stores, ugroups)
      t_store <- ifelse(nzchar(groups), match(groups, ugroups) - 1L, -1L)
      t_key <- vapply(res, function(r) r$key, "")
      t_err <- vapply(res, function(r) r$error, "")
      t_check <- if (!is.null(own) || !is.null(p$last_modified) || !is.null(p$etag))
        list(!is.null(own) & groups == (own$prefix %||% ""), as.character(p$bad_prefix), as.character(p$bad_msg),
             cond, as.integer(tix[cfirst]), as.numeric(since[cfirst]), as.character(etag[cfirst]))
      o <- engine_opts()
      private$.io <- .Call(ffi_store_ref, keys, as.integer(p$kind), as.integer(tix),
                           as.numeric(p$offset), as.numeric(p$length), p$data,
                           as.integer(t_store), t_key, t_err, stores, c(o$range_gap, o$range_max), t_check)
      private$.http <- stores[vapply(ugroups, function(g) grepl("^https?://", g), TRUE)]
      private$.keys <- keys
      sizes <- ifelse(p$kind == 0L, lengths(p$data), ifelse(p$kind == 1L, p$length, NA_real_))
      private$.sizes <- as.numeric(sizes)
      private$.targets <- vapply(res, function(r) r$shown, "") # redacted already
    }
  )
)

# ---- reading the reference documents ----------------------------------------

# The directory (or URL "directory") of a reference file.
ref_dirname <- function(loc) {
  if (grepl("^https?://", loc, ignore.case = TRUE)) {
    u <- sub("[?#].*$", "", loc)
    return(sub("/[^/]*$", "", u))
  }
  dirname(loc)
}

# The bytes of a local file or URL, or of a byte range of a URL (NULL when
# it does not exist and missing_ok).
ref_fetch <- function(loc, missing_ok = FALSE, byte_range = NULL) {
  if (grepl("^https?://", loc, ignore.case = TRUE)) {
    query <- ""
    q <- regexpr("?", loc, fixed = TRUE)
    u <- loc
    if (q > 0) {
      query <- substring(loc, q + 1L)
      u <- substring(loc, 1L, q - 1L)
    }
    m <- regmatches(u, regexec("^(https?://[^/]+)/?(.*)$", u, ignore.case = TRUE))[[1L]]
    h <- .Call(ffi_store_http, url_encode_path(m[2L]), query, http_options())
    value <- .Call(ffi_store_get, h, utils::URLdecode(m[3L]), c_byte_range(byte_range))
    if (is.null(value) && !missing_ok) zarr_abort("not_found", sprintf("'%s' does not exist (HTTP 404)", loc))
    return(value)
  }
  if (!file.exists(loc) || dir.exists(loc)) {
    if (missing_ok) return(NULL)
    zarr_abort("not_found", sprintf("'%s' does not exist", loc))
  }
  readBin(loc, "raw", file.size(loc))
}

# A JSON reference document (raw bytes or a parsed list) -> the entries as
# parallel vectors: key, kind (0 inline, 1 range, 2 whole file), url,
# offset, length, data (raw for inline entries).
ref_parse_doc <- function(x, what) {
  if (is.raw(x)) json_check_budget(x, sprintf("the references '%s'", what), key = what)
  doc <- if (is.raw(x)) json_parse(x, sprintf("references '%s'", what)) else x
  if (!is.list(doc) || (length(doc) && is.null(names(doc))))
    zarr_abort("metadata", sprintf("'%s' does not hold references (a JSON object)", what))
  version <- doc[["version"]]
  if (is.null(version) || is.list(doc[["version"]])) return(ref_entries(doc, what))
  if (!identical(as.integer(version), 1L))
    zarr_abort("unsupported", sprintf("references of version %s are not supported (only 0 and 1)", format(version)),
               key = what)
  templates <- doc[["templates"]] %||% list()
  refs <- doc[["refs"]] %||% named_list()
  if (length(refs) && is.null(names(refs))) zarr_abort("metadata", "'refs' must be a JSON object", key = what)
  out <- ref_entries(refs, what, templates)
  gen <- doc[["gen"]] %||% list()
  if (length(gen)) {
    g <- ref_expand_gen(gen, templates, what)
    # refs win over generated keys
    keep <- !g$key %in% out$key
    out <- ref_bind(lapply(g, function(v) v[keep]), out)
  }
  out
}

ref_bind <- function(a, b) {
  list(key = c(a$key, b$key), kind = c(a$kind, b$kind), url = c(a$url, b$url),
       offset = c(a$offset, b$offset), length = c(a$length, b$length), data = c(a$data, b$data))
}

# Replace {{name}} in URLs from the templates, in one pass as fsspec (jinja2)
# does: a value naming another template is not expanded again. Many holes
# in a long URL filled with a long value still multiply the text, so its
# length after the replacement is counted first, within the budget
# (zarr.max_decoded_bytes).
ref_templates <- function(u, templates, what = "references") {
  if (!length(templates) || !any(grepl("{{", u, fixed = TRUE))) return(u)
  vals <- vapply(names(templates), function(nm) {
    v <- as.character(templates[[nm]])
    if (length(v) != 1L || is.na(v)) zarr_abort("metadata", sprintf("the template '%s' is not a string", nm), key = what)
    v
  }, "")
  m <- gregexpr("\\{\\{[^{}]*\\}\\}", u, perl = TRUE)
  holes <- regmatches(u, m)
  hole <- unlist(holes)
  name <- trimws(substr(hole, 3L, nchar(hole) - 2L))
  known <- name %in% names(vals)
  if (!any(known)) return(u)
  grow <- sum(as.numeric(nchar(vals[name[known]], "bytes")) - nchar(hole[known], "bytes"))
  budget <- max_decoded_bytes()
  if (sum(as.numeric(nchar(u, "bytes"))) + grow > budget)
    zarr_abort("metadata", sprintf(paste("the templates would make the URLs of the references longer than the",
                                         "budget of %.0f bytes (options(zarr.max_decoded_bytes))"), budget), key = what)
  fill <- ifelse(known, vals[name], hole)
  regmatches(u, m) <- utils::relist(fill, holes)
  u
}

ref_entries <- function(refs, what, templates = list()) {
  keys <- names(refs)
  n <- length(refs)
  kind <- integer(n)
  url <- character(n)
  offset <- numeric(n)
  len <- numeric(n)
  data <- vector("list", n)
  for (i in seq_len(n)) {
    v <- refs[[i]]
    if (is.character(v) && length(v) == 1L) {
      data[[i]] <- if (startsWith(v, "base64:")) jsonlite::base64_dec(substring(v, 8L)) else charToRaw(enc2utf8(v))
    } else if (is.list(v) && !is.null(names(v))) {
      data[[i]] <- charToRaw(json_write(v))
    } else if (is.list(v) && length(v) %in% c(1L, 3L) && is.character(v[[1L]]) && length(v[[1L]]) == 1L) {
      url[i] <- v[[1L]]
      if (length(v) == 1L) {
        kind[i] <- 2L
      } else {
        o <- suppressWarnings(as.numeric(v[[2L]]))
        l <- suppressWarnings(as.numeric(v[[3L]]))
        if (length(o) != 1L || length(l) != 1L || is.na(o) || is.na(l) || o < 0 || l < 0)
          zarr_abort("metadata", "a reference needs a non-negative offset and length", key = keys[i])
        kind[i] <- 1L
        offset[i] <- o
        len[i] <- l
      }
      data[i] <- list(raw())
    } else if (is.list(v) && !length(v)) {
      data[[i]] <- charToRaw("[]")
    } else if (is.null(v) || is.numeric(v) || is.logical(v) || is.list(v)) {
      data[[i]] <- charToRaw(json_write(v))
    } else {
      zarr_abort("metadata", "a reference must be a string, an object, [url] or [url, offset, length]",
                 key = keys[i])
    }
  }
  has <- kind != 0L
  url[has] <- ref_templates(url[has], templates, what)
  list(key = keys %||% character(), kind = kind, url = url, offset = offset, length = len, data = data)
}

# A `gen` dimension {start, stop, step} (stop exclusive) as list(start,
# stop, step, n), n its number of values; NULL for a list of values.
ref_gen_range <- function(d, what) {
  if (!is.list(d) || is.null(names(d))) return(NULL)
  num <- function(x) {
    v <- suppressWarnings(as.numeric(x))
    if (length(v) != 1L || !is.finite(v)) NA_real_ else v
  }
  start <- num(d$start %||% 0)
  stop <- num(d$stop)
  step <- num(d$step %||% 1)
  if (anyNA(c(start, stop, step)) || step == 0)
    zarr_abort("metadata", "a gen dimension needs a numeric stop, start and a non-zero step", key = what)
  list(start = start, stop = stop, step = step, n = max(0, ceiling((stop - start) / step)))
}

# The number of values of one `gen` dimension, without making them.
ref_gen_count <- function(d, what) {
  r <- ref_gen_range(d, what)
  if (is.null(r)) length(d) else r$n
}

# Values of one `gen` dimension: {start, stop, step} (stop exclusive) or a list.
ref_gen_values <- function(d, what) {
  r <- ref_gen_range(d, what)
  if (!is.null(r)) {
    if (r$n <= 0) return(numeric())
    return(seq(r$start, r$stop - sign(r$step) * 1e-9 * abs(r$step), by = r$step))
  }
  if (is.list(d)) return(unlist(d))
  d
}

# Every reference entry takes about 256 bytes (in R and in the store's map)
# beyond its strings: `n` entries with `bytes` of strings must fit the
# budget (zarr.max_decoded_bytes) before they are made.
ref_check_budget <- function(n, bytes, what) {
  budget <- max_decoded_bytes()
  if (n * 256 + bytes > budget)
    zarr_abort("metadata", sprintf(paste("the references would expand to %.0f entries, more than the budget of %.0f",
                                         "bytes of memory takes (options(zarr.max_decoded_bytes))"), n, budget),
               key = what)
}

# Evaluate one {{ ... }} expression: a name, a number, or arithmetic on them
# (+ - * / // % and parentheses).
ref_eval <- function(expr, vals, what) {
  e <- trimws(expr)
  if (!is.null(vals[[e]])) return(vals[[e]])
  if (!grepl("^[-+*/%()0-9A-Za-z_. ]+$", e))
    zarr_abort("unsupported", sprintf("template expression '%s' is not supported", expr), key = what)
  e <- gsub("//", "\001", e, fixed = TRUE)
  e <- gsub("%", " %% ", e, fixed = TRUE)
  e <- gsub("\001", " %/% ", e, fixed = TRUE)
  ex <- tryCatch(str2lang(e), error = function(err) NULL)
  ok_fun <- c("+", "-", "*", "/", "%/%", "%%", "(")
  walk <- function(x) {
    if (is.call(x)) {
      f <- as.character(x[[1L]])
      if (!f %in% ok_fun) return(FALSE)
      all(vapply(as.list(x)[-1L], walk, TRUE))
    } else if (is.name(x)) as.character(x) %in% names(vals)
    else is.numeric(x)
  }
  if (is.null(ex) || !walk(ex))
    zarr_abort("unsupported", sprintf("template expression '%s' is not supported", expr), key = what)
  env <- list2env(vals, parent = baseenv())
  eval(ex, env)
}

# Substitute {{...}} in each string of x, elementwise over the value table.
ref_subst <- function(x, tab, what) {
  x <- as.character(x)
  if (!grepl("{{", x, fixed = TRUE)) return(rep(x, nrow(tab)))
  parts <- regmatches(x, gregexpr("\\{\\{.*?\\}\\}", x))[[1L]]
  out <- rep(x, nrow(tab))
  for (p in unique(parts)) {
    val <- ref_eval(substr(p, 3L, nchar(p) - 2L), as.list(tab), what)
    s <- if (is.numeric(val)) ifelse(val == trunc(val) & abs(val) < 1e15, formatC(val, format = "f", digits = 0),
                                      as.character(val)) else as.character(val)
    out <- vapply(seq_along(out), function(i) gsub(p, s[i], out[i], fixed = TRUE), "")
  }
  out
}

ref_expand_gen <- function(gen, templates, what) {
  res <- list(key = character(), kind = integer(), url = character(), offset = numeric(),
              length = numeric(), data = list())
  total <- 0
  strings <- 0
  for (g in gen) {
    if (!is.list(g) || is.null(g$key) || is.null(g$url))
      zarr_abort("metadata", "each gen entry needs a key and a url", key = what)
    dims <- g$dimensions %||% list()
    # a few bytes name billions of keys: counted before any is made
    m <- prod(vapply(dims, ref_gen_count, 0, what = what))
    total <- total + m
    url <- ref_templates(as.character(g$url), templates, what)
    # each {{...}} of the key and URL becomes a value: a number, or a string of a list
    text <- c(as.character(g$key), url)
    longest <- max(25, unlist(lapply(dims, function(d) if (is.null(ref_gen_range(d, what))) nchar(unlist(d), "bytes"))))
    holes <- sum(lengths(regmatches(text, gregexpr("{{", text, fixed = TRUE))))
    strings <- strings + m * (sum(nchar(text, "bytes")) + holes * longest)
    ref_check_budget(total, strings, what)
    vals <- lapply(dims, ref_gen_values, what = what)
    tab <- if (length(vals)) expand.grid(vals, KEEP.OUT.ATTRS = FALSE, stringsAsFactors = FALSE) else data.frame(row.names = 1L)
    if (!nrow(tab)) next
    names(tab) <- names(dims)
    keys <- ref_subst(g$key, tab, what)
    urls <- ref_subst(url, tab, what)
    whole <- is.null(g$offset) && is.null(g$length)
    if (!whole && (is.null(g$offset) || is.null(g$length)))
      zarr_abort("metadata", "a gen entry needs both offset and length, or neither", key = what)
    m <- length(keys)
    off <- if (whole) numeric(m) else as.numeric(ref_subst(g$offset, tab, what))
    len <- if (whole) numeric(m) else as.numeric(ref_subst(g$length, tab, what))
    res <- ref_bind(res, list(key = keys, kind = rep(if (whole) 2L else 1L, m), url = urls,
                              offset = off, length = len, data = rep(list(raw()), m)))
  }
  res
}

# ---- Parquet references ----------------------------------------------------------

ref_read_parquet <- function(loc) {
  if (!requireNamespace("nanoparquet", quietly = TRUE))
    zarr_abort("unsupported", "Parquet references need the nanoparquet package: install.packages(\"nanoparquet\")")
  remote <- grepl("^https?://", loc, ignore.case = TRUE)
  at <- function(name) if (remote) paste0(sub("/+$", "", loc), "/", name) else file.path(loc, name)
  zm <- ref_fetch(at(".zmetadata"), missing_ok = TRUE)
  if (is.null(zm)) zarr_abort("not_found", sprintf("'%s' has no .zmetadata: not Parquet references", loc))
  doc <- json_parse(zm, ".zmetadata", key = ".zmetadata")
  meta <- doc[["metadata"]]
  n_rec <- as.numeric(doc[["record_size"]] %||% 10000)
  if (!is.list(meta) || (length(meta) && is.null(names(meta))) || is.na(n_rec) || n_rec < 1)
    zarr_abort("metadata", "the .zmetadata of Parquet references needs 'metadata' and 'record_size'", key = ".zmetadata")
  out <- ref_entries(meta, ".zmetadata")
  arrays <- names(meta)[grepl("(^|/)[.]zarray$", names(meta))]
  for (ak in arrays) {
    field <- sub("/?[.]zarray$", "", ak)
    za <- meta[[ak]]
    if (is.character(za)) za <- json_parse(charToRaw(za), ak, key = ak)
    shape <- as.numeric(unlist(za[["shape"]]))
    chunks <- as.numeric(unlist(za[["chunks"]]))
    sep <- za[["dimension_separator"]] %||% "."
    nch <- if (length(shape)) ceiling(shape / chunks) else numeric()
    total <- prod(nch)
    if (!is.finite(total) || total == 0) next
    nfiles <- ceiling(total / n_rec)
    dir <- paste0(if (nzchar(field)) paste0(field, "/"))
    # the files that may hold references: locally those present (a huge
    # shape names billions), remotely each is asked for (16 kB of budget each)
    ks <- if (!remote) {
      f <- list.files(file.path(loc, field), pattern = "^refs[.][0-9]+[.]parq$")
      k <- sort(as.numeric(sub("^refs[.]([0-9]+)[.]parq$", "\\1", f)))
      k[k < nfiles]
    } else {
      if (nfiles * 2^14 > max_decoded_bytes())
        zarr_abort("metadata", sprintf(paste("'%s' would be read from %.0f Parquet files, more than the budget of",
                                             "%.0f bytes allows (options(zarr.max_decoded_bytes))"),
                                       ak, nfiles, max_decoded_bytes()), key = ".zmetadata")
      seq_len(nfiles) - 1
    }
    for (k in ks) {
      fname <- paste0(dir, "refs.", format(k, scientific = FALSE), ".parq")
      df <- ref_read_parquet_file(at(fname), remote, n_rec, length(out$key))
      if (is.null(df)) next
      n <- k * n_rec + seq_len(nrow(df)) - 1
      keep <- n < total
      if (!any(keep)) next
      df <- df[keep, , drop = FALSE]
      n <- n[keep]
      # chunk coordinates of the C-order linear index
      ck <- if (!length(nch)) rep("0", length(n)) else {
        idx <- matrix(0, length(n), length(nch))
        rem <- n
        for (d in rev(seq_along(nch))) {
          idx[, d] <- rem %% nch[d]
          rem <- rem %/% nch[d]
        }
        apply(idx, 1L, function(r) paste(format(r, scientific = FALSE, trim = TRUE), collapse = sep))
      }
      keys <- paste0(if (nzchar(field)) paste0(field, "/"), ck)
      rows <- ref_parquet_rows(df, keys, fname)
      rows$url <- ref_parquet_paths(rows$url, loc, field, remote)
      out <- ref_bind(out, rows)
    }
  }
  out
}

# Relative target paths of the rows of <field>/refs.<k>.parq: GDAL writes
# them relative to that file's folder, fsspec (kerchunk) relative to the
# references' root. A path is taken from the .parq file's folder when the
# target is there, else it stays relative (resolved from the root later).
ref_parquet_paths <- function(url, loc, field, remote) {
  rel <- nzchar(url) & ref_is_relative(url)
  if (!any(rel) || !nzchar(field)) return(url) # refs at the root: both folders are one
  cand <- unique(url[rel])
  here <- if (remote) paste0(sub("/+$", "", loc), "/", field, "/", cand) else file.path(loc, field, cand)
  found <- if (remote) {
    vapply(here, function(u) !is.null(ref_fetch(u, missing_ok = TRUE, byte_range = c(0, 1))), TRUE)
  } else {
    file.exists(here) & !dir.exists(here)
  }
  i <- match(url, cand)
  use <- rel & found[i]
  url[use] <- here[i[use]]
  url
}

# Whether target paths are relative (no scheme, not absolute).
ref_is_relative <- function(url) {
  !grepl("^[A-Za-z][A-Za-z0-9+.-]*://", url) & !grepl("^(/|~|[A-Za-z]:[/\\\\])", url)
}

# The rows of one Parquet reference file (NULL when it is missing). Before
# they are read, its footer says how many rows and bytes they are: at most
# `n_rec` rows (the record size), and with the `n_before` entries read
# already within the budget (zarr.max_decoded_bytes). A binary column
# stored as a dictionary may repeat a large value in every row: it counts as
# that many copies.
ref_read_parquet_file <- function(path, remote, n_rec = Inf, n_before = 0) {
  shown <- basename(path)
  if (remote) {
    raw <- ref_fetch(path, missing_ok = TRUE)
    if (is.null(raw)) return(NULL)
    tmp <- tempfile(fileext = ".parq")
    on.exit(unlink(tmp))
    writeBin(raw, tmp)
    path <- tmp
  } else if (!file.exists(path)) {
    return(NULL)
  }
  bad <- function(msg) zarr_abort("metadata", msg, key = shown)
  meta <- tryCatch(nanoparquet::read_parquet_metadata(path),
                   error = function(e) bad(sprintf("cannot read Parquet references: %s", conditionMessage(e))))
  rows <- sum(as.numeric(meta$file_meta_data$num_rows))
  if (rows > n_rec)
    bad(sprintf("a Parquet reference file holds %.0f rows, more than the record size %.0f", rows, n_rec))
  cc <- meta$column_chunks
  # (strings of a dictionary are shared by R's string cache; raw vectors are not)
  rawcol <- vapply(cc$path_in_schema, function(p) identical(unlist(p), "raw"), TRUE)
  dict <- !is.na(cc$dictionary_page_offset) | vapply(cc$encodings, function(e) any(grepl("DICTIONARY", e)), TRUE)
  bytes <- sum(ifelse(rawcol & dict, as.numeric(cc$num_values) * as.numeric(cc$total_uncompressed_size),
                      as.numeric(cc$total_uncompressed_size)))
  budget <- max_decoded_bytes()
  if ((n_before + rows) * 256 + bytes > budget)
    bad(sprintf(paste("Parquet references would take more than %.0f bytes of memory (%.0f rows and %.0f bytes here)",
                      "(the budget of options(zarr.max_decoded_bytes))"), budget, rows, bytes))
  df <- tryCatch(nanoparquet::read_parquet(path),
                 error = function(e) zarr_abort("metadata", sprintf("cannot read Parquet references: %s", conditionMessage(e)),
                                                key = basename(path)))
  # plain vectors (binary columns come as "blob" lists)
  df <- lapply(unclass(df), function(col) if (is.list(col)) unclass(col) else col)
  as.data.frame(lapply(df, I), stringsAsFactors = FALSE)
}

ref_parquet_rows <- function(df, keys, what) {
  m <- length(keys)
  path <- if (is.null(df$path)) rep(NA_character_, m) else as.character(df$path)
  offset <- if (is.null(df$offset)) numeric(m) else as.numeric(df$offset)
  size <- if (is.null(df$size)) numeric(m) else as.numeric(df$size)
  raw <- df$raw
  has_raw <- if (is.null(raw)) rep(FALSE, m) else if (is.list(raw)) !vapply(raw, is.null, TRUE) else !is.na(raw)
  data <- rep(list(raw()), m)
  if (any(has_raw)) {
    data[has_raw] <- if (is.list(raw)) lapply(raw[has_raw], as.raw) else lapply(raw[has_raw], function(s) charToRaw(enc2utf8(s)))
  }
  # a path without offset and size (nulls, or both 0): the whole file
  whole <- (is.na(offset) | offset == 0) & (is.na(size) | size == 0)
  kind <- ifelse(has_raw, 0L, ifelse(is.na(path), -1L, ifelse(whole, 2L, 1L)))
  part <- which(kind == 1L & (is.na(offset) | is.na(size)))
  if (length(part))
    zarr_abort("metadata", sprintf("a Parquet reference row with a path has an offset without a size or a size without an offset (row %d)",
                                   part[1L]), key = keys[part[1L]])
  keep <- kind >= 0L # neither raw nor path: a missing chunk
  offset[is.na(offset)] <- 0
  size[is.na(size)] <- 0
  path[is.na(path)] <- ""
  list(key = keys[keep], kind = kind[keep], url = path[keep], offset = offset[keep],
       length = size[keep], data = data[keep])
}

# ---- targets ----------------------------------------------------------------------------

# What serves a target URL: list(group, make, key, error, shown). `group`
# names the sub-store ("" when none can serve it: then `error` says why);
# `make()` creates it; `key` is the target's key in it.
ref_resolve_target <- function(url, base, local_ok = TRUE) {
  shown <- redact(url)
  none <- function(msg) list(group = "", make = NULL, key = "", error = msg, shown = shown)
  if (!nzchar(url)) return(none("a reference has an empty URL"))
  if (grepl("^file://", url, ignore.case = TRUE)) url <- utils::URLdecode(sub("^file://", "", url, ignore.case = TRUE))
  if (grepl("^gs://", url, ignore.case = TRUE))
    url <- paste0("https://storage.googleapis.com/", sub("^gs://", "", url, ignore.case = TRUE))
  if (grepl("^s3a?://", url, ignore.case = TRUE)) {
    hook <- ref_s3_target(url)
    if (!is.null(hook)) return(c(hook, shown = shown))
    return(none(sprintf("'%s' is not an s3://bucket/key URL", shown)))
  }
  if (grepl("^[A-Za-z][A-Za-z0-9+.-]*://", url) && !grepl("^https?://", url, ignore.case = TRUE))
    return(none(sprintf("targets of the scheme '%s' are not supported: cannot read '%s'",
                        sub("://.*$", "", url), shown)))
  if (ref_is_relative(url)) {
    # relative: from the references' location
    url <- if (grepl("^https?://", base, ignore.case = TRUE)) paste0(sub("/+$", "", base), "/", url)
           else file.path(base, url)
  }
  if (grepl("^https?://", url, ignore.case = TRUE)) {
    query <- ""
    q <- regexpr("?", url, fixed = TRUE)
    if (q > 0) {
      query <- substring(url, q + 1L)
      url <- substring(url, 1L, q - 1L)
    }
    m <- regmatches(url, regexec("^([A-Za-z]+://[^/]+)/?(.*)$", url))[[1L]]
    host <- tolower(m[2L])
    key <- utils::URLdecode(m[3L])
    return(list(group = paste0(host, if (nzchar(query)) paste0("?", query)),
                make = function() .Call(ffi_store_http, url_encode_path(host), query, http_options()),
                key = key, error = "", shown = shown))
  }
  if (!local_ok)
    return(none(sprintf(paste("references read from a remote location may not name the local file '%s'",
                              "(options(zarr.reference_local_targets = TRUE) allows it)"), shown)))
  p <- normalizePath(path.expand(url), winslash = "/", mustWork = FALSE)
  list(group = "file", make = function() .Call(ffi_store_local, "", FALSE),
       key = sub("^/+", "", p), error = "", shown = shown)
}

# An s3:// (or s3a://) target: one S3 sub-store per bucket, with the
# credentials, region and endpoint zarr_s3store finds (arguments cannot be
# given through references: the environment and ~/.aws apply).
ref_s3_target <- function(url) {
  m <- regmatches(url, regexec("^[sS]3[aA]?://([^/?#]+)/?([^?#]*)", url))[[1L]]
  if (!length(m) || !nzchar(m[3L])) return(NULL)
  bucket <- m[2L]
  list(group = paste0("s3://", bucket),
       make = function() zarr_s3store$new(bucket, read_only = TRUE)$io_spec(),
       key = utils::URLdecode(m[3L]), error = "")
}

# Whether a local .json file or a URL ending in .json holds references
# rather than being a store.
ref_is_reference_json <- function(location) {
  grepl("[.]json([?#].*)?$", location, ignore.case = TRUE) &&
    (grepl("^https?://", location, ignore.case = TRUE) || file.exists(sub("^file://", "", location))) &&
    !dir.exists(sub("^file://", "", location))
}

# Whether a directory holds Parquet references: a .zmetadata with
# record_size, and no Zarr metadata of its own.
ref_is_parquet_dir <- function(p) {
  zm <- file.path(p, ".zmetadata")
  if (!file.exists(zm) || any(file.exists(file.path(p, c(".zgroup", ".zarray", "zarr.json"))))) return(FALSE)
  doc <- tryCatch(json_parse(readBin(zm, "raw", file.size(zm)), ".zmetadata"), zarr_error = function(e) NULL)
  is.list(doc) && !is.null(doc[["record_size"]])
}
