#' Azure Blob storage store
#'
#' A Zarr store in a container of Azure Blob storage (or of an emulator
#' such as Azurite, through `endpoint`). [open_zarr()], [create_zarr()] and
#' [as_zarr()] make one for an `az://container/prefix` location (the account
#' from the credentials below) or an
#' `abfs://container@account.dfs.core.windows.net/prefix` location (also
#' `abfss://`; the account and endpoint suffix from the host name).
#'
#' Chunks are read with many (ranged) requests at a time through the same C
#' engine, options and retries as [zarr_httpstore] and [zarr_s3store] (see
#' [zarr-options]). Values are written with Put Blob (block blobs); values
#' above `getOption("zarr.azure_block_size")` bytes (64 MiB by default) go
#' up as blocks, uploaded concurrently and committed with Put Block List.
#' Keys are listed with List Blobs, so groups and arrays are found without
#' consolidated metadata.
#'
#' Credentials, the first that applies: the arguments `key` (the account
#' key: requests are signed with Shared Key) or `sas` (a shared access
#' signature, added to every request); the argument `connection_string`;
#' the environment variable `AZURE_STORAGE_CONNECTION_STRING` (its
#' `AccountName`, `AccountKey`, `SharedAccessSignature`, `BlobEndpoint`,
#' `DefaultEndpointsProtocol` and `EndpointSuffix`, or
#' `UseDevelopmentStorage=true` for a local Azurite); the environment
#' variables `AZURE_STORAGE_KEY` or `AZURE_STORAGE_SAS_TOKEN`; otherwise
#' requests are anonymous, as for containers with public access.
#' `anonymous = TRUE` never sends credentials. The account comes from
#' `account`, the location, the connection string or `AZURE_STORAGE_ACCOUNT`;
#' the endpoint from `endpoint`, the connection string's `BlobEndpoint`,
#' else `https://<account>.blob.core.windows.net`. An endpoint with a path
#' (`http://127.0.0.1:10000/devstoreaccount1`, as emulators serve accounts)
#' addresses containers below that path. Neither the key nor the SAS token
#' is ever shown: not by `print()`, the fields, nor any message.
#'
#' Failures that Azure explains (authentication failed, a SAS that does not
#' allow the operation, no such container, ...) are conditions of class
#' `zarr_error_azure` (which inherits from `zarr_error_http` and
#' `zarr_error`) with fields `azure_code`, `azure_message` and `status`. A
#' chunk that is not there (404, or 403 on anonymous reads) is the fill
#' value.
#'
#' The class inherits its methods for keys (`get()`, `set()`, `erase()`,
#' `list_dir()`, ...) from [zarr_s3store].
#'
#' @seealso [zarr_store], [open_zarr()], [zarr_s3store], [zarr-options]
#' @examples
#' # making the store sends no request: it finds the credentials and the URL
#' st <- zarr_azurestore$new("climate", "era5.zarr", account = "myaccount", anonymous = TRUE)
#' st
#' # with the Azurite emulator's well-known development account
#' st <- zarr_azurestore$new("zarr", "volcano.zarr",
#'                           connection_string = "UseDevelopmentStorage=true")
#' st # the account key is never shown
#' if (interactive()) {
#'   # with Azurite running on this machine and a container "zarr" in it
#'   Sys.setenv(AZURE_STORAGE_CONNECTION_STRING = "UseDevelopmentStorage=true")
#'   as_zarr(volcano, name = "volcano", location = "az://zarr/volcano.zarr")
#'   open_zarr("az://zarr/volcano.zarr")[["/volcano"]][1:3, 1:3]
#' }
#' @export
zarr_azurestore <- R6::R6Class("zarr_azurestore",
  # a container works as a bucket does: reading, writing and listing by
  # names are the S3 store's, on this store's list_objects()
  inherit = zarr_s3store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again: its
    #'   location, account and endpoint; the key or SAS token are found again
    #'   from the environment there.
    #' @return A list with `kind`, `location` and `options`.
    reopen_spec = function() list(kind = "azure", location = self$root, options = Filter(Negate(is.null), private$.reopen)),

    #' @description Open (or prepare to create) a store in a container.
    #' @param container The container name.
    #' @param prefix The store's root in the container ("" for its root).
    #' @param account The storage account name.
    #' @param key The account key (base64), for Shared Key signatures.
    #' @param sas A shared access signature (the query string of a SAS URL,
    #'   with or without its leading "?").
    #' @param connection_string An Azure Storage connection string.
    #' @param endpoint The Blob service URL, e.g.
    #'   "http://127.0.0.1:10000/devstoreaccount1" for Azurite.
    #' @param anonymous `TRUE` never sends credentials; `NULL` (the default)
    #'   uses those found.
    #' @param read_only Whether the store is read-only.
    #' @return An instance of this class.
    initialize = function(container, prefix = "", account = NULL, key = NULL, sas = NULL,
                          connection_string = NULL, endpoint = NULL, anonymous = NULL,
                          read_only = FALSE) {
      if (!is_string(container) || !nzchar(container) || grepl("/", container, fixed = TRUE))
        zarr_abort("argument", "container must be a single container name")
      if (!is_string(prefix)) zarr_abort("argument", "prefix must be a single string")
      check_read_only(read_only)
      cfg <- azure_config(account = account, key = key, sas = sas, connection_string = connection_string,
                          endpoint = endpoint, anonymous = anonymous)
      prefix <- sub("^/+", "", sub("/+$", "", enc2utf8(prefix)))
      container_url <- paste0(cfg$endpoint, "/", url_path_encode(container))
      private$.container <- container
      private$.prefix <- prefix
      private$.cfg <- cfg[c("account", "auth", "source")]
      # what reopens this store in another process: never the key or the SAS
      # token, which are found again from the environment there
      private$.reopen <- list(account = cfg[["account"]], endpoint = endpoint,
                              anonymous = if (isTRUE(anonymous)) TRUE)
      url <- if (nzchar(prefix)) paste0(container_url, "/", url_path_encode(prefix)) else container_url
      private$.url <- redact(url)
      private$.io <- .Call(ffi_store_azure, list(
        container_url = container_url, url = url, account = cfg$account %||% "",
        key = cfg$key, sas = cfg$sas, read_only = isTRUE(read_only),
        multipart_size = azure_block_size()), http_options())
      # zarr_store's initialize() (zarr_s3store's would make an S3 store)
      private$.read_only <- isTRUE(read_only)
      private$.version <- as.integer(zarr_default_format())
      has <- function(k) tryCatch(!is.null(self$get(k)), zarr_error = function(e) FALSE)
      if (has("zarr.json")) private$.version <- 3L
      else if (has(".zgroup") || has(".zarray") || has(".zmetadata")) private$.version <- 2L
    },

    #' @description Print a summary of the store.
    print = function() {
      cat(sprintf("<Zarr Azure Blob store>%s\n", if (self$read_only) " (read-only)" else ""))
      cat("Location:", self$root, "\n")
      cat("URL:", self$url, "\n")
      cat("Credentials:", private$.cfg$auth, paste0("(", private$.cfg$source, ")"), "\n")
      invisible(self)
    },

    #' @description List the blobs below a store prefix (List Blobs,
    #'   following continuation markers).
    #' @param prefix A store prefix (below the store's own prefix).
    #' @param delimiter `NULL`, or "/" to group names below the next "/"
    #'   into prefixes.
    #' @param max_results `NULL` (the service's page size, up to 5000), or
    #'   the most names per page.
    #' @return A list with `keys`, `sizes` and `prefixes`: full blob names
    #'   (relative to the container).
    list_objects = function(prefix, delimiter = NULL, max_results = NULL) {
      full <- private$key_prefix(prefix)
      where <- paste0(self$root, "/", prefix)
      keys <- character()
      sizes <- numeric()
      prefixes <- character()
      marker <- NULL
      repeat {
        q <- list(comp = "list", delimiter = delimiter, marker = marker,
                  maxresults = if (!is.null(max_results)) format(max_results, scientific = FALSE),
                  prefix = full, restype = "container")
        res <- s3_request(private$.io, "GET", "", s3_query(q), at_bucket = TRUE)
        if (res$status != 200L) azure_fail(res, where)
        page <- .Call(ffi_azure_parse_list, res$body, where)
        keys <- c(keys, page$keys)
        sizes <- c(sizes, page$sizes)
        prefixes <- c(prefixes, page$prefixes)
        if (!page$truncated) break
        if (identical(page$token, marker))
          zarr_abort("azure", sprintf("Azure listing of %s repeats its continuation marker", self$root))
        marker <- page$token
      }
      list(keys = keys, sizes = sizes, prefixes = prefixes)
    },

    #' @description How the C engine reaches this store: libcurl, with the
    #'   HTTP options as they are set now.
    #' @return An external pointer to the store's C implementation.
    io_spec = function() {
      .Call(ffi_store_s3_options, private$.io, c(http_options(), list(multipart_size = azure_block_size())))
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Azure Blob store",
    #' @field root (read-only) The store's location, "az://container/prefix".
    root = function(value) paste0("az://", private$.container, if (nzchar(private$.prefix)) paste0("/", private$.prefix)),
    #' @field uri (read-only) The same as `root`.
    uri = function(value) self$root,
    #' @field url (read-only) The HTTP(S) URL of the store's root.
    url = function(value) private$.url,
    #' @field credentials (read-only) The account, how requests are
    #'   authorised ("shared key", "sas" or "anonymous") and where the
    #'   credentials came from ("arguments", "connection string",
    #'   "environment" or "none"); never the key or token.
    credentials = function(value) private$.cfg,
    #' @field separator (read-only) The chunk key separator of new arrays: "/".
    separator = function(value) "/"
  ),
  private = list(
    .container = NULL, .prefix = "", .url = NULL, .cfg = NULL,
    key_prefix = function(key) if (nzchar(private$.prefix)) paste0(private$.prefix, "/", key) else key
  )
)

azure_block_size <- function() zarr_num_option("zarr.azure_block_size", 64 * 2^20, 2^20)

# Raise the Azure error of a failed answer (a listing).
azure_fail <- function(res, where) {
  code <- .Call(ffi_xml_text, res$body, "Code")
  if (!is.null(code)) {
    msg <- .Call(ffi_xml_text, res$body, "Message") %||% ""
    zarr_abort("azure", sprintf("Azure error %s: %s (HTTP %d) for %s", code, msg, res$status, where))
  }
  zarr_abort("http", sprintf("HTTP %d for %s", res$status, where))
}

# The fields of a connection string ("A=1;B=x=y;..."), as a named list.
azure_parse_connection_string <- function(x) {
  parts <- strsplit(x, ";", fixed = TRUE)[[1]]
  parts <- trimws(parts[nzchar(trimws(parts))])
  eq <- regexpr("=", parts, fixed = TRUE)
  if (any(eq < 1L)) zarr_abort("argument", "the Azure connection string has a part without '='")
  stats::setNames(as.list(substring(parts, eq + 1L)), substring(parts, 1L, eq - 1L))
}

# The account, endpoint and credentials (see ?zarr_azurestore).
azure_config <- function(account = NULL, key = NULL, sas = NULL, connection_string = NULL,
                         endpoint = NULL, anonymous = NULL, suffix = NULL) {
  env <- function(n) {
    v <- Sys.getenv(n, "")
    if (nzchar(v)) v else NULL
  }
  for (a in list(account, key, sas, connection_string, endpoint))
    if (!is.null(a) && !is_string(a)) zarr_abort("argument", "Azure credentials and endpoints must be single strings")
  out <- list(account = account, key = NULL, sas = NULL, auth = "anonymous", source = "none")
  cs <- connection_string %||% if (is.null(key) && is.null(sas)) env("AZURE_STORAGE_CONNECTION_STRING")
  f <- if (!is.null(cs)) azure_parse_connection_string(cs) else list()
  if (identical(tolower(f$UseDevelopmentStorage %||% ""), "true")) {
    # Azurite's documented development account
    f$AccountName <- f$AccountName %||% "devstoreaccount1"
    f$AccountKey <- f$AccountKey %||% paste0("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq",
                                             "/K1SZFPTOtr/KBHBeksoGMGw==")
    f$BlobEndpoint <- f$BlobEndpoint %||% paste0("http://127.0.0.1:10000/", f$AccountName)
  }
  if (!isTRUE(anonymous)) {
    if (!is.null(key) || !is.null(sas)) {
      out[c("key", "sas", "source")] <- list(key, sas, "arguments")
    } else if (length(f)) {
      out[c("key", "sas", "source")] <- list(f$AccountKey, f$SharedAccessSignature, "connection string")
    } else if (!is.null(env("AZURE_STORAGE_KEY")) || !is.null(env("AZURE_STORAGE_SAS_TOKEN"))) {
      out[c("key", "sas", "source")] <- list(env("AZURE_STORAGE_KEY"), env("AZURE_STORAGE_SAS_TOKEN"), "environment")
    }
  }
  if (!is.null(out$key)) {
    out$sas <- NULL
    out$auth <- "shared key"
  } else if (!is.null(out$sas)) {
    out$sas <- sub("^[?]", "", out$sas)
    out$auth <- "sas"
  }
  out$account <- account %||% f$AccountName %||% env("AZURE_STORAGE_ACCOUNT")
  endpoint <- endpoint %||% f$BlobEndpoint
  if (is.null(endpoint)) {
    if (is.null(out$account))
      zarr_abort("argument", "no Azure storage account: give `account`, a connection string or AZURE_STORAGE_ACCOUNT")
    endpoint <- sprintf("%s://%s.blob.%s", f$DefaultEndpointsProtocol %||% "https", out$account,
                        suffix %||% f$EndpointSuffix %||% "core.windows.net")
  }
  endpoint <- sub("/+$", "", endpoint)
  if (!grepl("^https?://[^/?#]+(/[^?#]*)?$", endpoint))
    zarr_abort("argument", sprintf("the Azure endpoint '%s' is not an http(s):// URL", redact(endpoint)))
  if (is.null(out$account)) {
    # an emulator's account is the first step of its path; Azure's, the first label of its host
    path <- sub("^https?://[^/]+/?", "", endpoint)
    out$account <- if (nzchar(path)) sub("/.*$", "", path) else sub("^https?://([^./:]+).*$", "\\1", endpoint)
  }
  if (out$auth == "shared key" && !nzchar(out$account))
    zarr_abort("argument", "Shared Key signatures need the storage account name")
  out$endpoint <- endpoint
  out
}

is_azure_url <- function(x) is.character(x) && length(x) == 1L && !is.na(x) && grepl("^(az|abfss?)://", x, ignore.case = TRUE)

# "az://container/prefix" or "abfs[s]://container@account.dfs.SUFFIX/prefix"
# -> list(container, prefix, account, suffix).
azure_parse_url <- function(url) {
  m <- regmatches(url, regexec("^abfss?://([^@/]+)@([^./]+)\\.dfs\\.([^/]+)/?(.*)$", url, ignore.case = TRUE))[[1]]
  if (length(m))
    return(list(container = m[2L], account = m[3L], suffix = m[4L], prefix = sub("/+$", "", m[5L])))
  if (grepl("^abfss?://", url, ignore.case = TRUE))
    zarr_abort("argument", sprintf("'%s' is not of the form abfs[s]://container@account.dfs.core.windows.net/path", redact(url)))
  rest <- sub("^az://", "", url, ignore.case = TRUE)
  container <- sub("/.*$", "", rest)
  if (!nzchar(container)) zarr_abort("argument", sprintf("'%s' names no container", redact(url)))
  prefix <- if (grepl("/", rest, fixed = TRUE)) sub("^[^/]*/", "", rest) else ""
  list(container = container, account = NULL, suffix = NULL, prefix = sub("/+$", "", prefix))
}

# The store at an az:// or abfs[s]:// location.
azure_store_for_url <- function(location, read_only = FALSE, ...) {
  u <- azure_parse_url(location)
  args <- list(...)
  if (!is.null(u$account) && is.null(args$account) && is.null(args$endpoint)) {
    args$account <- u$account
    if (!identical(tolower(u$suffix), "core.windows.net"))
      args$endpoint <- sprintf("https://%s.blob.%s", u$account, u$suffix)
  }
  do.call(zarr_azurestore$new, c(list(u$container, u$prefix, read_only = read_only), args))
}
