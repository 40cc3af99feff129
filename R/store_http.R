#' HTTP store
#'
#' A read-only Zarr store on a web server: Zarr v3 or v2, with or without
#' consolidated metadata. [open_zarr()] makes one for an `http://` or
#' `https://` location.
#'
#' Chunks are fetched by the C engine with libcurl, many requests at a time
#' over reused connections (HTTP/2 where the server offers it), with retries
#' on transient failures; see [zarr-options] for the settings. A chunk the
#' server does not have (404) is the fill value; a metadata document it does
#' not have means there is no node there. Reading part of a sharded array
#' fetches each shard's index once (one byte-range request) and then only the
#' inner chunks under the selection.
#'
#' How the hierarchy is found: with consolidated metadata (Zarr v3
#' `consolidated_metadata` in the root `zarr.json`, or the v2 `.zmetadata`
#' document) every group and array is known from that one document.
#' Without it, a web server cannot list what it holds: the children of a
#' group are then unknown, but any node opens by its path, e.g.
#' `z[["/group/array"]]`, which fetches that node's metadata. Metadata
#' documents are fetched once per store object and then kept. When the root
#' has no `zarr.json`, `.zmetadata` is asked for together with an Icechunk
#' repository's `repo` object (one round trip), so that [open_zarr()]
#' recognises a repository without further probes. A query string
#' in the URL (as in signed URLs) is sent with every request; names with
#' spaces or other characters are percent-encoded.
#'
#' Secrets in the URL are used but never shown: a user name and password
#' (`https://user:password@host/...`, sent to that host only, as HTTP Basic
#' authentication) and query parameters that carry credentials (signatures
#' and tokens of signed URLs, e.g. `X-Amz-Signature`, `sig`, `token`) read
#' `***` in `print()`, `root`, `uri`, messages and errors. Redirects are
#' followed (at most 10, never from `https` to `http`) without the user name
#' and password when they lead to another host. Bodies are taken as the
#' server sends them (a `Content-Encoding` is not decoded) and bounded (see
#' `zarr.max_body_bytes` in [zarr-options]).
#'
#' @seealso [zarr_store], [open_zarr()], [zarr_consolidate()], [zarr-options]
#'   for the HTTP options
#' @examples
#' if (interactive()) {
#'   # an OME-NGFF image of the Image Data Resource, served over HTTPS
#'   url <- "https://uk1s3.embassy.ebi.ac.uk/idr/zarr/v0.4/idr0062A/6001240.zarr"
#'   z <- open_zarr(url) # read-only; makes a zarr_httpstore
#'   print(z$store)
#'   print(z)
#'   a <- z[["/0"]] # the full-resolution level, opened by its path
#'   print(dim(a)) # t, c, z, y, x
#'   print(a[1, 1, 100, 1:5, 1:5]) # fetches only the chunks under the selection
#'   str(z$store$io_stats())
#' }
#' @export
zarr_httpstore <- R6::R6Class("zarr_httpstore",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): its URL with its secrets (user-info, signed
    #'   queries), which the result carries: keep it out of sight.
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() list(kind = "http", location = private$real_uri()),

    #' @description Open a store on a web server. Only the root metadata is
    #'   fetched now.
    #' @param url The URL of the store's root, `http://` or `https://`. It may
    #'   contain UTF-8 characters and a query string.
    #' @return An instance of this class.
    initialize = function(url) {
      if (!is.character(url) || length(url) != 1L || is.na(url) || !grepl("^https?://", url))
        zarr_abort("argument", "url must be a single http:// or https:// URL")
      url <- enc2utf8(url)
      query <- ""
      q <- regexpr("?", url, fixed = TRUE)
      if (q > 0) {
        query <- substring(url, q + 1L)
        url <- substring(url, 1L, q - 1L)
      }
      url <- sub("/+$", "", url)
      # the URL with its secrets lives in an environment, which R6's format()
      # and str() do not open; the fields keep the redacted URL
      private$.secret <- list2env(list(url = url, query = query), parent = emptyenv())
      private$.url <- redact(url)
      private$.meta <- new.env(parent = emptyenv())
      private$.io <- .Call(ffi_store_http, url_encode_path(url), query, http_options())
      super$initialize(read_only = TRUE, version = 3L)
      root <- self$get("zarr.json")
      if (!is.null(root)) {
        cm <- tryCatch(json_parse(root, "zarr.json", key = "zarr.json")[["consolidated_metadata"]],
                       zarr_error = function(e) NULL)
        if (is.list(cm) && is.list(cm[["metadata"]]) && length(names(cm[["metadata"]])))
          private$.nodes <- names(cm[["metadata"]])
      } else {
        # v2's consolidated metadata, and in the same round trip the object
        # that makes the location an Icechunk repository (spec 2), which is
        # then recognised without the v2 probes (it has no Zarr documents at
        # its top) and read from what came back (once)
        got <- .Call(ffi_store_get_keys, private$.io, c(".zmetadata", "repo"), 1L)
        zmeta <- got[[1L]]
        assign(".zmetadata", zmeta, envir = private$.meta)
        if (!is.null(zmeta)) private$keep_consolidated_v2(zmeta)
        private$.prefetched <- list(repo = got[[2L]] %||% FALSE) # FALSE: not there
        if (!is.null(got[[2L]])) {
          for (k in c(".zgroup", ".zarray", ".zattrs")) assign(k, NULL, envir = private$.meta)
        } else if (!is.null(self$get(".zgroup")) || !is.null(self$get(".zarray"))) {
          private$.version <- 2L
        }
      }
    },

    #' @description Print a summary of the store.
    print = function() {
      cat("<Zarr HTTP store> (read-only)\n")
      cat("URL:", self$root, "\n")
      invisible(self)
    },

    #' @description Whether a key exists: a metadata document known from the
    #'   consolidated metadata, or any key the server answers for.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) !is.null(self$get(key)),

    #' @description Refused: HTTP stores are read-only.
    clear = function() private$check_writable(),

    #' @description Refused: HTTP stores are read-only.
    #' @param key Ignored.
    erase = function(key) private$check_writable(),

    #' @description Refused: HTTP stores are read-only.
    #' @param prefix Ignored.
    erase_prefix = function(prefix) private$check_writable(),

    #' @description The nodes directly below a prefix, as far as they are
    #'   known: from consolidated metadata. A web server cannot be listed, so
    #'   without consolidated metadata this is empty (with a message, once).
    #' @param prefix The prefix.
    #' @return A character vector of names.
    list_dir = function(prefix) {
      prefix <- node_prefix(prefix)
      if (is.null(private$.nodes)) {
        private$say_unlisted()
        return(character())
      }
      kids <- substring(private$.nodes[startsWith(private$.nodes, prefix)], nchar(prefix) + 1L)
      sort(unique(sub("/.*$", "", kids[nzchar(kids)])))
    },

    #' @description The paths of all nodes below a prefix, as far as they
    #'   are known (see `list_dir()`).
    #' @param prefix The prefix.
    #' @return A character vector of node paths below the prefix.
    list_prefix = function(prefix) {
      prefix <- node_prefix(prefix)
      if (is.null(private$.nodes)) {
        private$say_unlisted()
        return(character())
      }
      nodes <- private$.nodes[startsWith(private$.nodes, prefix) & private$.nodes != sub("/$", "", prefix)]
      sort(nodes)
    },

    #' @description Refused: HTTP stores are read-only.
    #' @param key,value Ignored.
    set = function(key, value) private$check_writable(),

    #' @description Refused: HTTP stores are read-only.
    #' @param key,value Ignored.
    set_if_not_exists = function(key, value) private$check_writable(),

    #' @description Fetch a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range `NULL` for the whole value; a positive number for the
    #'   bytes from that offset on; a negative number for that many final
    #'   bytes; `c(start, end)` for a range (end exclusive).
    #' @return A raw vector, or `NULL` when the server has no such key.
    get = function(key, prototype = NULL, byte_range = NULL) {
      check_key(key)
      if (!is.null(private$.prefetched[[key]]) && is.null(byte_range)) {
        value <- private$.prefetched[[key]]
        private$.prefetched[[key]] <- NULL
        return(if (is.raw(value)) value)
      }
      meta <- is_metadata_key(key) && is.null(byte_range)
      if (meta && exists(key, envir = private$.meta, inherits = FALSE))
        return(get(key, envir = private$.meta, inherits = FALSE))
      if (meta && private$.consolidated_v2) return(NULL)  # .zmetadata knows every document
      range <- c_byte_range(byte_range, key)
      value <- .Call(ffi_store_get, self$io_spec(), key, range)
      if (meta) assign(key, value, envir = private$.meta)
      value
    },

    #' @description Refused: HTTP stores are read-only.
    #' @param prefix,metadata Ignored.
    set_metadata = function(prefix, metadata) private$check_writable(),

    #' @description Refused: HTTP stores are read-only.
    #' @param parent,name,format Ignored.
    create_group = function(parent, name, format = NULL) private$check_writable(),

    #' @description Refused: HTTP stores are read-only.
    #' @param parent,name,metadata Ignored.
    create_array = function(parent, name, metadata) private$check_writable(),

    #' @description How the C engine reaches this store: libcurl, with the
    #'   HTTP options as they are set now.
    #' @return An external pointer to the store's C implementation.
    io_spec = function() {
      .Call(ffi_store_http_options, private$.io, http_options())
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "HTTP store",
    #' @field root (read-only) The URL of the store (without a query string),
    #'   its user name and password shown as `***`.
    root = function(value) private$.url,
    #' @field uri (read-only) The URL of the store, as given, its secrets
    #'   (user-info, signatures and tokens in the query) shown as `***`.
    uri = function(value) redact(private$real_uri()),
    #' @field separator (read-only) The chunk key separator of new arrays: "/".
    separator = function(value) "/",
    #' @field supports_listing Whether keys can be listed: only through
    #'   consolidated metadata.
    supports_listing = function(value) !is.null(private$.nodes)
  ),
  private = list(
    .url = NULL, .secret = NULL, .meta = NULL, .nodes = NULL, .consolidated_v2 = FALSE, .prefetched = list(),
    .said_unlisted = FALSE,
    check_writable = function() zarr_abort("read_only", "HTTP stores are read-only"),
    # The URL with its secrets, for requests only (never shown).
    real_uri = function() {
      s <- private$.secret
      if (nzchar(s$query)) paste0(s$url, "?", s$query) else s$url
    },
    say_unlisted = function() {
      if (private$.said_unlisted) return(invisible())
      private$.said_unlisted <- TRUE
      message(sprintf(paste0("The HTTP store %s has no consolidated metadata: its groups cannot be ",
                             "listed, but nodes open by path, e.g. z[[\"/group/array\"]]."), self$root))
    },
    # .zmetadata holds every v2 document: keep them, and the node paths.
    keep_consolidated_v2 = function(raw) {
      docs <- tryCatch(json_parse(raw, ".zmetadata", key = ".zmetadata")[["metadata"]],
                       zarr_error = function(e) NULL)
      if (!is.list(docs) || is.null(names(docs))) return(invisible())
      for (k in names(docs)) {
        if (!is_metadata_key(k) || !is.list(docs[[k]])) next
        assign(k, charToRaw(json_write(docs[[k]])), envir = private$.meta)
      }
      nodes <- unique(sub("/?[.](zarray|zgroup)$", "", names(docs)[grepl("[.](zarray|zgroup)$", names(docs))]))
      private$.nodes <- nodes[nzchar(nodes)]
      private$.consolidated_v2 <- TRUE
    }
  )
)

is_metadata_key <- function(key) {
  grepl("(^|/)(zarr[.]json|[.]zarray|[.]zgroup|[.]zattrs|[.]zmetadata)$", key)
}

# Percent-encode what a URL path may not hold as it is (spaces, UTF-8, ...);
# what is already encoded stays as it is.
url_encode_path <- function(url) {
  m <- regexpr("^https?://[^/]*", url)
  host <- regmatches(url, m)
  b <- as.integer(charToRaw(enc2utf8(substring(url, attr(m, "match.length") + 1L))))
  keep <- (b >= 0x30 & b <= 0x39) | (b >= 0x41 & b <= 0x5A) | (b >= 0x61 & b <= 0x7A) |
    b %in% as.integer(charToRaw("-._~!$&'()*+,;=:@/%"))
  out <- character(length(b))
  out[keep] <- vapply(b[keep], function(x) rawToChar(as.raw(x)), "")
  out[!keep] <- sprintf("%%%02X", b[!keep])
  paste0(host, paste(out, collapse = ""))
}

# The HTTP settings, read each time a store is used (see ?zarr-options).
http_options <- function() {
  list(concurrency = as.integer(zarr_num_option("zarr.http_concurrency", 32, 1)),
       retries = as.integer(zarr_num_option("zarr.http_retries", 5, 0)),
       backoff = zarr_num_option("zarr.http_backoff", 0.25, 0),
       backoff_max = zarr_num_option("zarr.http_backoff_max", 32, 0),
       connect_timeout = zarr_num_option("zarr.http_connect_timeout", 10, 0),
       low_speed_time = zarr_num_option("zarr.http_low_speed_time", 30, 0),
       max_body = zarr_num_option("zarr.max_body_bytes", 2^31, 1),
       user_agent = sprintf("zarr/%s (R package)", utils::packageVersion("zarr")))
}
