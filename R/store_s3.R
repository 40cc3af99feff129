#' S3 store
#'
#' A Zarr store in an Amazon S3 bucket, or with any service that speaks the
#' S3 protocol (MinIO, Ceph, Cloudflare R2, ...) through `endpoint`.
#' [open_zarr()], [create_zarr()] and [as_zarr()] make one for an
#' `s3://bucket/prefix` location, with the credentials found as described
#' below.
#'
#' Requests are signed with AWS Signature Version 4 by libcurl; chunks are
#' read with many (ranged) requests at a time and written with PUT, through
#' the same C engine, options and retries as [zarr_httpstore] (see
#' [zarr-options]). Values above `getOption("zarr.s3_multipart_size")` bytes
#' (64 MiB by default) are uploaded in parts. Keys are listed with
#' ListObjectsV2, so groups and arrays are found without consolidated
#' metadata.
#'
#' Credentials, the first that gives a key: the arguments `access_key` and
#' `secret_key` (with `session_token`); an explicit `profile` in the shared
#' files; the environment variables `AWS_ACCESS_KEY_ID`,
#' `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`; the profile named by
#' `AWS_PROFILE` (or "default") in `~/.aws/credentials` and `~/.aws/config`
#' (or the files named by `AWS_SHARED_CREDENTIALS_FILE` and
#' `AWS_CONFIG_FILE`); otherwise requests are anonymous, as for public
#' buckets. `anonymous = TRUE` never signs. The region comes from `region`,
#' `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`, else
#' "us-east-1"; the endpoint from `endpoint`, `AWS_ENDPOINT_URL_S3`,
#' `AWS_ENDPOINT_URL` or the profile's `endpoint_url`. With a custom
#' endpoint the bucket is addressed path-style (`endpoint/bucket/key`)
#' unless `path_style = FALSE`; on AWS, virtual-hosted style
#' (`bucket.s3.region.amazonaws.com`).
#'
#' Failures that S3 explains (access denied, no such bucket, a signature
#' that does not match, ...) are conditions of class `zarr_error_s3` (which
#' inherits from `zarr_error_http` and `zarr_error`) with fields `s3_code`
#' and `s3_message`. A chunk that is not there (404, or 403 on anonymous
#' reads) is the fill value.
#'
#' @seealso [zarr_store], [open_zarr()], [s3_list_dir()], [zarr-options] for the
#'   HTTP and S3 options
#' @examples
#' # making the store sends no request: it finds the credentials and the URL
#' st <- zarr_s3store$new("my-bucket", "data/run1.zarr", region = "eu-west-1", anonymous = TRUE)
#' st
#' # an S3-compatible service (MinIO, Ceph, ...) at an endpoint of its own
#' st <- zarr_s3store$new("my-bucket", "run1.zarr", endpoint = "http://127.0.0.1:9000",
#'                        access_key = "minioadmin", secret_key = "minioadmin")
#' st # the secret key is never shown
#' if (interactive()) {
#'   # an OME-NGFF image of the Image Data Resource, on its S3-compatible service
#'   st <- zarr_s3store$new("idr", "zarr/v0.4/idr0062A/6001240.zarr",
#'                          endpoint = "https://uk1s3.embassy.ebi.ac.uk", anonymous = TRUE)
#'   z <- zarr$new(st)
#'   print(z[["/0"]])
#'   # in a bucket of your own (credentials from the environment or ~/.aws)
#'   as_zarr(volcano, name = "volcano", location = "s3://my-bucket/volcano.zarr")
#'   open_zarr("s3://my-bucket/volcano.zarr")[["/volcano"]][1:3, 1:3]
#' }
#' @export
zarr_s3store <- R6::R6Class("zarr_s3store",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): its location and the options that are not
    #'   secrets (keys are found again from the environment or the profile).
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() list(kind = "s3", location = self$root, options = Filter(Negate(is.null), private$.reopen)),

    #' @description Open (or prepare to create) a store in a bucket.
    #' @param bucket The bucket name.
    #' @param prefix The store's root in the bucket ("" for the bucket's root).
    #' @param region,profile,access_key,secret_key,session_token Credentials and
    #'   region; see the Details.
    #' @param endpoint The URL of an S3-compatible service, e.g.
    #'   "http://127.0.0.1:9000".
    #' @param path_style Whether to address the bucket in the path (default:
    #'   with a custom endpoint).
    #' @param anonymous `TRUE` never signs requests; `NULL` (the default)
    #'   signs when credentials are found.
    #' @param read_only Whether the store is read-only.
    #' @return An instance of this class.
    initialize = function(bucket, prefix = "", region = NULL, profile = NULL, access_key = NULL,
                          secret_key = NULL, session_token = NULL, endpoint = NULL, path_style = NULL,
                          anonymous = NULL, read_only = FALSE) {
      if (!is_string(bucket) || !nzchar(bucket) || grepl("[/@]", bucket))
        zarr_abort("argument", "bucket must be a single bucket name")
      if (!is_string(prefix)) zarr_abort("argument", "prefix must be a single string")
      check_read_only(read_only)
      cfg <- s3_config(region = region, profile = profile, access_key = access_key,
                       secret_key = secret_key, session_token = session_token, endpoint = endpoint,
                       anonymous = anonymous)
      prefix <- sub("^/+", "", sub("/+$", "", enc2utf8(prefix)))
      endpoint <- cfg[["endpoint"]]
      path_style <- if (is.null(path_style)) !is.null(endpoint) else isTRUE(path_style)
      if (is.null(endpoint)) endpoint <- sprintf("https://s3.%s.amazonaws.com", cfg[["region"]])
      endpoint <- sub("/+$", "", endpoint)
      if (!grepl("^https?://[^/]+$", endpoint))
        zarr_abort("argument", sprintf("the S3 endpoint '%s' is not an http(s):// URL without a path", endpoint))
      bucket_url <- if (path_style) paste0(endpoint, "/", url_path_encode(bucket)) else
        sub("^(https?://)", paste0("\\1", bucket, "."), endpoint)
      private$.bucket <- bucket
      private$.prefix <- prefix
      private$.bucket_url <- redact(bucket_url)
      private$.cfg <- cfg[c("region", "source", "access_key")]
      # what reopens this store in another process (DelayedArray seeds): never the keys,
      # which are found again from the environment or the profile
      private$.reopen <- list(region = cfg[["region"]], endpoint = cfg[["endpoint"]], path_style = path_style,
                              anonymous = if (isTRUE(anonymous)) TRUE, profile = profile)
      url <- if (nzchar(prefix)) paste0(bucket_url, "/", url_path_encode(prefix)) else bucket_url
      private$.url <- redact(url) # shown only: the C store keeps the real one
      private$.io <- .Call(ffi_store_s3, list(
        bucket_url = bucket_url, url = url,
        region = if (cfg[["anonymous"]]) NULL else cfg[["region"]],
        access_key = cfg[["access_key"]], secret_key = cfg[["secret_key"]], session_token = cfg[["session_token"]],
        read_only = isTRUE(read_only), multipart_size = s3_multipart_size()), http_options())
      super$initialize(read_only = read_only, version = zarr_default_format())
      # which version is there (failures, such as a wrong key, show on first real use)
      has <- function(k) tryCatch(!is.null(self$get(k)), zarr_error = function(e) FALSE)
      if (has("zarr.json")) private$.version <- 3L
      else if (has(".zgroup") || has(".zarray") || has(".zmetadata")) private$.version <- 2L
    },

    #' @description Print a summary of the store.
    print = function() {
      cat(sprintf("<Zarr S3 store>%s\n", if (self$read_only) " (read-only)" else ""))
      cat("Location:", self$root, "\n")
      cat("URL:", self$url, "\n")
      cat("Credentials:", private$.cfg$source, "\n")
      invisible(self)
    },

    #' @description Whether a key exists.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) !is.null(self$get(key)),

    #' @description Fetch a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range `NULL` for the whole value; a positive number for the
    #'   bytes from that offset on; a negative number for that many final
    #'   bytes; `c(start, end)` for a range (end exclusive).
    #' @return A raw vector, or `NULL` when there is no such key.
    get = function(key, prototype = NULL, byte_range = NULL) {
      check_key(key)
      range <- c_byte_range(byte_range, key)
      .Call(ffi_store_get, self$io_spec(), key, range)
    },

    #' @description Store a value (one PUT, or a multipart upload).
    #' @param key The key.
    #' @param value A raw vector.
    #' @return Self, invisibly.
    set = function(key, value) {
      private$check_writable()
      check_key(key)
      if (!is.raw(value)) zarr_abort("argument", "value must be a raw vector", key = key)
      .Call(ffi_store_set, self$io_spec(), key, value)
      invisible(self)
    },

    #' @description Remove a key (absent keys are fine).
    #' @param key The key.
    #' @return Self, invisibly.
    erase = function(key) {
      private$check_writable()
      check_key(key)
      .Call(ffi_store_set, self$io_spec(), key, NULL)
      invisible(self)
    },

    #' @description Remove every key below a prefix; a group there stays, empty.
    #' @param prefix The prefix.
    #' @return Self, invisibly.
    erase_prefix = function(prefix) {
      private$check_writable()
      prefix <- node_prefix(prefix)
      was_group <- nzchar(prefix) && self$is_group(prefix)
      for (k in self$list_prefix(prefix)) self$erase(k)
      if (was_group) self$set_metadata(prefix, list(zarr_format = self$version, node_type = "group",
                                                    attributes = named_list()))
      invisible(self)
    },

    #' @description Remove every key of the store.
    #' @return Self, invisibly.
    clear = function() {
      private$check_writable()
      for (k in self$list_prefix("")) self$erase(k)
      invisible(self)
    },

    #' @description The names directly below a prefix (keys and "directories").
    #' @param prefix The prefix.
    #' @return A character vector of names.
    list_dir = function(prefix) {
      prefix <- node_prefix(prefix)
      l <- self$list_objects(prefix, delimiter = "/")
      n <- nchar(private$key_prefix(prefix))
      sort(unique(c(substring(l$keys, n + 1L), sub("/$", "", substring(l$prefixes, n + 1L)))))
    },

    #' @description All keys below a prefix (ListObjectsV2, page by page).
    #' @param prefix The prefix.
    #' @return A character vector of full keys (relative to the store root).
    list_prefix = function(prefix) {
      prefix <- node_prefix(prefix)
      keys <- self$list_objects(prefix)$keys
      root <- private$key_prefix("")
      sort(substring(keys, nchar(root) + 1L))
    },

    #' @description Size of a value in bytes (from the listing).
    #' @param key The key.
    #' @return The size, or `NA` if the key does not exist.
    getsize = function(key) {
      check_key(key)
      l <- self$list_objects(key)
      full <- private$key_prefix(key)
      i <- match(full, l$keys)
      if (is.na(i)) NA_real_ else l$sizes[i]
    },

    #' @description The sizes of all values below a prefix, from one
    #'   (paginated) listing.
    #' @param prefix The prefix.
    #' @return A numeric vector of sizes in bytes, named by full key.
    key_sizes = function(prefix) {
      l <- self$list_objects(node_prefix(prefix))
      stats::setNames(l$sizes, substring(l$keys, nchar(private$key_prefix("")) + 1L))
    },

    #' @description List the objects below a store prefix (ListObjectsV2,
    #'   following continuation tokens).
    #' @param prefix A store prefix (below the store's own prefix).
    #' @param delimiter `NULL`, or "/" to group keys below the next "/" into
    #'   prefixes.
    #' @return A list with `keys`, `sizes` and `prefixes`: full object keys
    #'   (relative to the bucket).
    list_objects = function(prefix, delimiter = NULL) {
      full <- private$key_prefix(prefix)
      keys <- character()
      sizes <- numeric()
      prefixes <- character()
      token <- NULL
      repeat {
        q <- c(`continuation-token` = token, delimiter = delimiter, `list-type` = "2", prefix = full)
        res <- s3_request(private$.io, "GET", "", s3_query(q), at_bucket = TRUE)
        if (res$status != 200L) s3_fail(res, paste0(self$root, "/", prefix))
        page <- .Call(ffi_s3_parse_list, res$body, paste0(self$root, "/", prefix))
        keys <- c(keys, page$keys)
        sizes <- c(sizes, page$sizes)
        prefixes <- c(prefixes, page$prefixes)
        if (!page$truncated) break
        if (is.null(page$token) || identical(page$token, token))
          zarr_abort("s3", sprintf("S3 listing of %s is truncated without a continuation token", self$root))
        token <- page$token
      }
      list(keys = keys, sizes = sizes, prefixes = prefixes)
    },

    #' @description How the C engine reaches this store: libcurl, with the
    #'   HTTP options as they are set now.
    #' @return An external pointer to the store's C implementation.
    io_spec = function() {
      .Call(ffi_store_s3_options, private$.io, c(http_options(), list(multipart_size = s3_multipart_size())))
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "S3 store",
    #' @field root (read-only) The store's location, "s3://bucket/prefix".
    root = function(value) paste0("s3://", private$.bucket, if (nzchar(private$.prefix)) paste0("/", private$.prefix)),
    #' @field uri (read-only) The same as `root`.
    uri = function(value) self$root,
    #' @field url (read-only) The HTTP(S) URL of the store's root (user-info
    #'   of the endpoint shown as `***`).
    url = function(value) private$.url,
    #' @field credentials (read-only) Where the credentials came from
    #'   ("arguments", "environment", "profile NAME" or "anonymous"), the
    #'   access key id (never the secret) and the region.
    credentials = function(value) private$.cfg,
    #' @field reopen_options (read-only) The arguments of `$new()` besides
    #'   the bucket and prefix that open this store again elsewhere (region,
    #'   endpoint, path style, anonymous, profile): never the access keys,
    #'   which are found again as described in the Details.
    reopen_options = function(value) private$.reopen,
    #' @field separator (read-only) The chunk key separator of new arrays: "/".
    separator = function(value) "/"
  ),
  private = list(
    .bucket = NULL, .prefix = "", .bucket_url = NULL, .url = NULL, .cfg = NULL, .reopen = NULL,
    # The object key (in the bucket) of a store key or prefix.
    key_prefix = function(key) if (nzchar(private$.prefix)) paste0(private$.prefix, "/", key) else key
  )
)

is_string <- function(x) is.character(x) && length(x) == 1L && !is.na(x)

# Percent-encode a path below an endpoint, keeping '/'.
url_path_encode <- function(path) {
  segs <- strsplit(enc2utf8(path), "/", fixed = TRUE)[[1]]
  paste(vapply(segs, utils::URLencode, "", reserved = TRUE, USE.NAMES = FALSE), collapse = "/")
}

# The canonical query string of named values (NULLs dropped): names sorted,
# names and values percent-encoded except A-Z a-z 0-9 - . _ ~ (what
# Signature Version 4 signs, so the request is sent exactly so).
s3_query <- function(q) {
  q <- unlist(q[!vapply(q, is.null, TRUE)])
  if (!length(q)) return("")
  enc <- function(x) vapply(enc2utf8(x), utils::URLencode, "", reserved = TRUE, USE.NAMES = FALSE)
  q <- q[order(names(q), method = "radix")]
  paste0(enc(names(q)), "=", enc(q), collapse = "&")
}

s3_request <- function(io, method, key, query, body = NULL, at_bucket = FALSE, condition = NULL) {
  .Call(ffi_store_s3_request, io, method, key, query, body, at_bucket, condition)
}

# Raise the S3 error of a failed answer.
s3_fail <- function(res, where) {
  code <- .Call(ffi_xml_text, res$body, "Code")
  if (!is.null(code)) {
    msg <- .Call(ffi_xml_text, res$body, "Message") %||% ""
    zarr_abort("s3", sprintf("S3 error %s: %s (HTTP %d) for %s", code, msg, res$status, where))
  }
  zarr_abort("http", sprintf("HTTP %d for %s", res$status, where))
}

s3_multipart_size <- function() zarr_num_option("zarr.s3_multipart_size", 64 * 2^20, 5 * 2^20)

# Where the credentials, region and endpoint come from (see ?zarr_s3store).
s3_config <- function(region = NULL, profile = NULL, access_key = NULL, secret_key = NULL,
                      session_token = NULL, endpoint = NULL, anonymous = NULL) {
  env <- function(n) {
    v <- Sys.getenv(n, "")
    if (nzchar(v)) v else NULL
  }
  explicit_profile <- !is.null(profile)
  profile <- profile %||% env("AWS_PROFILE") %||% env("AWS_DEFAULT_PROFILE") %||% "default"
  cred_file <- path.expand(env("AWS_SHARED_CREDENTIALS_FILE") %||% "~/.aws/credentials")
  conf_file <- path.expand(env("AWS_CONFIG_FILE") %||% "~/.aws/config")
  creds <- ini_section(cred_file, profile)
  conf <- ini_section(conf_file, if (profile == "default") "default" else paste("profile", profile))
  if (!length(conf) && profile != "default") conf <- ini_section(conf_file, profile)
  from_files <- function(k) creds[[k]] %||% conf[[k]]
  out <- list(anonymous = isTRUE(anonymous), source = "anonymous", access_key = NULL,
              secret_key = NULL, session_token = NULL)
  if (!isTRUE(anonymous)) {
    if (!is.null(access_key) || !is.null(secret_key)) {
      if (!is_string(access_key) || !is_string(secret_key))
        zarr_abort("argument", "access_key and secret_key are needed together")
      out[c("access_key", "secret_key", "source")] <- list(access_key, secret_key, "arguments")
      out$session_token <- session_token
    } else if (!explicit_profile && !is.null(env("AWS_ACCESS_KEY_ID")) && !is.null(env("AWS_SECRET_ACCESS_KEY"))) {
      out[c("access_key", "secret_key", "source")] <- list(env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), "environment")
      out$session_token <- session_token %||% env("AWS_SESSION_TOKEN")
    } else if (!is.null(from_files("aws_access_key_id")) && !is.null(from_files("aws_secret_access_key"))) {
      out[c("access_key", "secret_key", "source")] <- list(from_files("aws_access_key_id"),
                                                           from_files("aws_secret_access_key"),
                                                           paste("profile", profile))
      out$session_token <- session_token %||% from_files("aws_session_token")
    } else if (explicit_profile) {
      zarr_abort("argument", sprintf("the AWS profile '%s' has no aws_access_key_id and aws_secret_access_key in %s or %s",
                                     profile, cred_file, conf_file))
    }
  }
  out$anonymous <- is.null(out$access_key)
  out$region <- region %||% env("AWS_REGION") %||% env("AWS_DEFAULT_REGION") %||% from_files("region") %||% "us-east-1"
  out$endpoint <- endpoint %||% env("AWS_ENDPOINT_URL_S3") %||% env("AWS_ENDPOINT_URL") %||% from_files("endpoint_url")
  out
}

# The key = value pairs of one [section] of an INI file (AWS's shared files),
# as a named list; empty when the file or section is not there.
ini_section <- function(file, section) {
  if (!file.exists(file)) return(list())
  lines <- tryCatch(readLines(file, warn = FALSE, encoding = "UTF-8"), error = function(e) character())
  out <- list()
  inside <- FALSE
  for (l in lines) {
    l <- trimws(l)
    if (!nzchar(l) || grepl("^[#;]", l)) next
    if (grepl("^\\[.*\\]$", l)) {
      inside <- identical(trimws(gsub("\\s+", " ", substring(l, 2L, nchar(l) - 1L))), section)
      next
    }
    if (!inside) next
    eq <- regexpr("=", l, fixed = TRUE)
    if (eq < 1L) next
    k <- tolower(trimws(substring(l, 1L, eq - 1L)))
    v <- trimws(sub("\\s+[#;].*$", "", substring(l, eq + 1L)))
    if (nzchar(k) && nzchar(v)) out[[k]] <- v
  }
  out
}

# "s3://bucket/prefix" -> list(bucket, prefix).
s3_parse_url <- function(url) {
  rest <- sub("^s3://", "", url, ignore.case = TRUE)
  bucket <- sub("/.*$", "", rest)
  prefix <- if (grepl("/", rest, fixed = TRUE)) sub("^[^/]*/", "", rest) else ""
  if (!nzchar(bucket)) zarr_abort("argument", sprintf("'%s' names no bucket", url))
  # no bucket name holds '@': user-info, which would be sent (and shown)
  # percent-encoded as part of the bucket
  if (grepl("@", bucket, fixed = TRUE))
    zarr_abort("argument", sprintf("'%s': an s3:// location takes no credentials (see ?zarr_s3store)", url))
  list(bucket = bucket, prefix = sub("/+$", "", prefix))
}

#' List what is directly below a prefix in an S3 bucket
#'
#' Lists the objects and the "directories" (common prefixes) one level below
#' `prefix` in a bucket, whether or not a Zarr store is there: handy to find
#' the stores in a bucket that holds several. The listing is made with
#' ListObjectsV2 and the credentials and endpoint found as for
#' [zarr_s3store].
#'
#' @seealso [zarr_s3store], [open_zarr()]
#' @param bucket The bucket name.
#' @param prefix The prefix to list below (`""`, the default: the top of the
#'   bucket).
#' @param region,profile,access_key,secret_key,session_token,endpoint,path_style,anonymous
#'   As for [zarr_s3store].
#' @return A character vector of object keys and of prefixes (which end in
#'   `/`), relative to the bucket, as S3 gives them.
#' @examples
#' if (interactive()) {
#'   # the folders of the Image Data Resource's OME-NGFF images, on its S3-compatible service
#'   s3_list_dir("idr", "zarr/v0.4/", endpoint = "https://uk1s3.embassy.ebi.ac.uk", anonymous = TRUE)
#' }
#' @export
s3_list_dir <- function(bucket, prefix = "", region = NULL, profile = NULL, access_key = NULL,
                        secret_key = NULL, session_token = NULL, endpoint = NULL, path_style = NULL,
                        anonymous = NULL) {
  if (!is_string(prefix)) zarr_abort("argument", "prefix must be a single string")
  st <- zarr_s3store$new(bucket, prefix, region = region, profile = profile, access_key = access_key,
                         secret_key = secret_key, session_token = session_token, endpoint = endpoint,
                         path_style = path_style, anonymous = anonymous, read_only = TRUE)
  l <- st$list_objects("", delimiter = "/")
  unique(c(l$prefixes, l$keys))
}
