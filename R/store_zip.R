#' Zip file store
#'
#' A read-only Zarr store in a zip file, as written by zarr-python's
#' `ZipStore` or by zipping a store directory with any zip tool. The store is
#' either at the top of the zip file ("zipped from within": `zarr.json`,
#' `.zgroup` or `.zarray` at the top) or in its one top-level folder ("zipped
#' from the parent", e.g. `data.zarr/zarr.json`); the latter is detected and
#' that folder becomes the root of the store, so the hierarchy opens the same
#' either way.
#'
#' The zip file's central directory is read once, when the store is opened.
#' Chunks are then read straight from the zip file by the C engine, in
#' parallel. Members may be stored or deflated (the methods zip tools and
#' Python's `zipfile` use); other compression methods and encrypted members
#' give an error. ZIP64 archives (over 4 GiB or 65535 members) are supported.
#' The CRC-32 checksum of every member read as a whole is verified; a
#' mismatch is a `zarr_error_checksum` error. Member names are taken as UTF-8;
#' names that cannot be store keys (absolute paths, `..` parts, not valid
#' UTF-8) are ignored.
#'
#' The store is always read-only: every attempt to change it gives a
#' `zarr_error_read_only` error. To change the data, unzip the file, open the
#' directory with [zarr_localstore] and zip it again. If the zip file is
#' replaced while the store is open, open it again.
#'
#' @seealso [zarr_store], [zarr_localstore], [open_zarr()]
#' @export
#' @examples
#' if (nzchar(Sys.which("zip"))) {
#'   dir <- tempfile(fileext = ".zarr")
#'   as_zarr(matrix(1:6, 2), location = dir)
#'   # zip the store "from within": its files at the top of the zip file
#'   zipfile <- tempfile(fileext = ".zip")
#'   old <- setwd(dir)
#'   utils::zip(zipfile, list.files(), flags = "-r9Xq")
#'   setwd(old)
#'   z <- open_zarr(zipfile)
#'   print(z$store)
#'   print(z$root[])
#'   unlink(c(dir, zipfile), recursive = TRUE)
#' }
zarr_zipstore <- R6::R6Class("zarr_zipstore",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): its file.
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() list(kind = "zip", location = self$root),

    #' @description Open a zip file as a read-only store.
    #' @param path Path of the zip file; "file://" URIs are accepted.
    #' @return An instance of this class.
    initialize = function(path) {
      if (!is.character(path) || length(path) != 1L || is.na(path) || !nzchar(path))
        zarr_abort("argument", "the zip file must be a single path")
      p <- path.expand(enc2utf8(sub("^file://", "", path)))
      if (dir.exists(p)) zarr_abort("store", sprintf("'%s' is a directory, not a zip file", path))
      if (!file.exists(p)) zarr_abort("not_found", sprintf("'%s' does not exist", path))
      p <- normalizePath(p, winslash = "/", mustWork = TRUE)
      index <- .Call(ffi_zip_open, p)
      members <- .Call(ffi_zip_list, index)
      prefix <- zip_store_prefix(members$name)
      inside <- startsWith(members$name, prefix)
      keys <- substring(members$name[inside], nchar(prefix) + 1L)
      private$.path <- p
      private$.index <- index
      private$.prefix <- prefix
      private$.keys <- keys
      private$.sizes <- stats::setNames(members$size[inside], keys)
      version <- if (!"zarr.json" %in% keys && any(c(".zgroup", ".zarray") %in% keys)) 2L else 3L
      super$initialize(TRUE, version)
    },

    #' @description Print a summary of the store.
    print = function() {
      cat("<Zarr zip store> (read-only)\n")
      cat("File:", redact(private$.path), "\n")
      if (nzchar(private$.prefix)) cat("Root in the zip file:", private$.prefix, "\n")
      invisible(self)
    },

    #' @description Whether a key exists: a member, or a folder (node prefix)
    #'   that holds members.
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
    #' @return A raw vector, or `NULL` when the key does not exist.
    get = function(key, prototype = NULL, byte_range = NULL) {
      check_key(key)
      name <- paste0(private$.prefix, key)
      if (is.null(byte_range)) return(.Call(ffi_zip_read, private$.index, name, NULL))
      size <- self$getsize(key)
      if (is.na(size)) return(NULL)
      rng <- resolve_byte_range(byte_range, size, key)
      .Call(ffi_zip_read, private$.index, name, as.numeric(c(rng[1L], rng[2L] - rng[1L])))
    },

    #' @description Size of a value in bytes (uncompressed).
    #' @param key The key.
    #' @return The size, or `NA` when the key does not exist.
    getsize = function(key) {
      check_key(key)
      s <- private$.sizes[key]
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

    #' @description Refused: zip stores are read-only.
    #' @param key The key.
    #' @param value A raw vector.
    set = function(key, value) private$check_writable(),

    #' @description Refused: zip stores are read-only.
    #' @param key The key.
    erase = function(key) private$check_writable(),

    #' @description How the C engine reaches this store: it reads the members
    #'   from the zip file itself, through the index made when the store was
    #'   opened.
    #' @return A list.
    io_spec = function() {
      if (is.null(private$.io)) private$.io <- .Call(ffi_store_zip, private$.index, private$.prefix)
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Zip file store",
    #' @field root (read-only) The path of the zip file.
    root = function(value) private$.path,
    #' @field uri (read-only) The URI of the zip file.
    uri = function(value) paste0("file://", private$.path),
    #' @field root_in_zip (read-only) The folder in the zip file that holds
    #'   the store: `""` when zipped from within, otherwise e.g. `"data.zarr/"`.
    root_in_zip = function(value) private$.prefix
  ),
  private = list(
    .path = NULL, .index = NULL, .io = NULL, .prefix = "", .keys = character(), .sizes = numeric()
  )
)

# The store's root in a zip file: the top, unless there is no root metadata
# there but exactly one top-level folder has it (zipped from the parent).
zip_store_prefix <- function(names) {
  meta <- c("zarr.json", ".zgroup", ".zarray")
  if (any(meta %in% names)) return("")
  nested <- names[grepl("^[^/]+/[^/]+$", names) & basename(names) %in% meta]
  top <- unique(dirname(nested))
  top <- top[top != "__MACOSX"]
  if (length(top) == 1L) paste0(top, "/") else ""
}
