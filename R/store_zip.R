#' Zip file store
#'
#' A Zarr store in a zip file, as written by zarr-python's `ZipStore` or by
#' zipping a store directory with any zip tool, read-only by default and
#' writable when opened with `read_only = FALSE`. The store is either at the
#' top of the zip file ("zipped from within": `zarr.json`, `.zgroup` or
#' `.zarray` at the top) or in its one top-level folder ("zipped from the
#' parent", e.g. `data.zarr/zarr.json`); the latter is detected and that
#' folder becomes the root of the store, so the hierarchy opens the same
#' either way.
#'
#' Reading: the zip file's central directory is read once, when the store is
#' opened. Chunks are then read straight from the zip file by the C engine,
#' in parallel. Members may be stored or deflated (the methods zip tools and
#' Python's `zipfile` use); other compression methods and encrypted members
#' give an error. ZIP64 archives (over 4 GiB or 65535 members) are supported.
#' The CRC-32 checksum of every member read as a whole is verified; a
#' mismatch is a `zarr_error_checksum` error. Member names are taken as UTF-8;
#' names that cannot be store keys (absolute paths, `..` parts, not valid
#' UTF-8) are not keys: they are invisible to the store, and a writable
#' store keeps them, byte for byte, when it rewrites the archive. The
#' central directory is indexed within the `zarr.max_decoded_bytes` budget
#' (see [zarr-options]); a larger one, or one whose end record claims more
#' members than it can hold, is a classed error naming the zip file. A
#' read-only store refuses every change with a
#' `zarr_error_read_only` error. If the zip file is replaced while the store
#' is open, open it again.
#'
#' A single-file OME-Zarr image (`.ozx`, OME-NGFF RFC-9) is such a zip file,
#' zipped from within: `open_zarr("x.ozx")` and `create_zarr("x.ozx")` use
#' this store as for ".zip". RFC-9 requires the root `zarr.json` at the top
#' of the archive, which is how this store writes; it reads an `.ozx` zipped
#' from its parent folder too. Written zip files list the metadata
#' documents first, the root `zarr.json` at the very start and then the
#' others breadth-first, as RFC-9 recommends. The archive comment that RFC-9
#' reserves for its "recommended variant" (which also asks for ZIP64 and
#' sharding, not promised here) is not written, as RFC-9 then requires.
#'
#' Writing (`read_only = FALSE`, also what `create_zarr("x.zip")` and
#' `as_zarr(x, location = "x.zip")` use): a zip file cannot be changed in
#' place safely, so the store keeps its keys in a staging folder next to the
#' zip file (`.<name>.staging-<pid>-<random>`, a [zarr_localstore]; the members of
#' an existing zip file are copied there when the store is opened) and writes
#' the whole archive when it is closed: `$close()`, or when the store is
#' garbage collected or R exits; an existing zip file is rewritten only when
#' something was written or erased. The archive is written to a temporary file
#' in the same folder and renamed over the zip file, so a writer that fails
#' or is killed leaves the previous zip file (or none) intact, never a torn
#' one; a key written twice holds its last value. Members are stored (as
#' zarr-python writes them) or, with `compression = "deflate"`, deflated;
#' ZIP64 records are written past 4 GiB or 65535 members. After `$close()`
#' the store reads the new zip file, read-only. `$discard()` drops the
#' changes instead. A killed writer may leave its staging folder or
#' temporary file (`.<name>.<pid>.partial`) behind; both may be deleted.
#'
#' @seealso [zarr_store], [zarr_localstore], [open_zarr()]
#' @export
#' @examples
#' zipfile <- tempfile(fileext = ".zip")
#' z <- create_zarr(zipfile)
#' a <- z$add_array("/", "x", define_array("int32", c(2, 3)))
#' a[] <- 1:6
#' z$store$close() # writes the zip file
#' z2 <- open_zarr(zipfile)
#' print(z2$store)
#' print(z2[["/x"]][])
#' unlink(zipfile)
zarr_zipstore <- R6::R6Class("zarr_zipstore",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): its file.
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() list(kind = "zip", location = self$root),

    #' @description Open a zip file as a store.
    #' @param path Path of the zip file; "file://" URIs are accepted. For
    #'   writing it need not exist yet (its folder must).
    #' @param read_only `TRUE` (the default) or `FALSE`: whether the store
    #'   may be changed (see the writing section above).
    #' @param compression How a writable store writes members: "stored" (the
    #'   default, as zarr-python does) or "deflate".
    #' @param level The deflate level, 1 to 9.
    #' @return An instance of this class.
    initialize = function(path, read_only = TRUE, compression = c("stored", "deflate"), level = 6L) {
      if (!is.character(path) || length(path) != 1L || is.na(path) || !nzchar(path))
        zarr_abort("argument", "the zip file must be a single path")
      check_read_only(read_only)
      compression <- match.arg(compression)
      if (!is.numeric(level) || length(level) != 1L || is.na(level) || !level %in% 1:9)
        zarr_abort("argument", "level must be a whole number from 1 to 9")
      p <- path.expand(enc2utf8(sub("^file://", "", path)))
      if (dir.exists(p)) zarr_abort("store", sprintf("'%s' is a directory, not a zip file", path))
      if (read_only && !file.exists(p)) zarr_abort("not_found", sprintf("'%s' does not exist", path))
      if (!read_only) {
        if (!dir.exists(dirname(p))) zarr_abort("not_found", sprintf("the folder of '%s' does not exist", path))
        p <- file.path(normalizePath(dirname(p), winslash = "/", mustWork = TRUE), basename(p))
        private$.level <- if (compression == "deflate") as.integer(level) else -1L
        private$open_writable(p)
        return(invisible(self))
      }
      private$open_index(normalizePath(p, winslash = "/", mustWork = TRUE))
      super$initialize(TRUE, private$.version)
    },

    #' @description Print a summary of the store.
    print = function() {
      cat(sprintf("<Zarr zip store>%s\n", if (self$read_only) " (read-only)" else " (writable: written on $close())"))
      cat("File:", redact(private$.path), "\n")
      if (nzchar(private$.prefix)) cat("Root in the zip file:", private$.prefix, "\n")
      invisible(self)
    },

    #' @description Whether a key exists: a member, or a folder (node prefix)
    #'   that holds members.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) {
      if (!is.null(private$.stage)) return(private$.stage$exists(key))
      private$fresh()
      check_key(key)
      key %in% private$.keys || any(startsWith(private$.keys, paste0(key, "/")))
    },

    #' @description Retrieve a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range See [zarr_store].
    #' @return A raw vector, or `NULL` when the key does not exist.
    get = function(key, prototype = NULL, byte_range = NULL) {
      if (!is.null(private$.stage)) return(private$.stage$get(key, prototype, byte_range))
      private$fresh()
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
      if (!is.null(private$.stage)) return(private$.stage$getsize(key))
      private$fresh()
      check_key(key)
      s <- private$.sizes[key]
      if (is.na(s)) NA_real_ else unname(s)
    },

    #' @description The names directly below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector.
    list_dir = function(prefix) {
      if (!is.null(private$.stage)) return(private$.stage$list_dir(prefix))
      private$fresh()
      keys_dir(private$.keys, prefix)
    },

    #' @description All keys below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) {
      if (!is.null(private$.stage)) return(private$.stage$list_prefix(prefix))
      private$fresh()
      keys_below(private$.keys, prefix)
    },

    #' @description Store a value (a writable store; refused otherwise).
    #' @param key The key.
    #' @param value A raw vector.
    set = function(key, value) {
      private$writer()$set(key, value)
      invisible(self)
    },

    #' @description Remove a key (a writable store; refused otherwise).
    #' @param key The key.
    erase = function(key) {
      private$writer()$erase(key)
      invisible(self)
    },

    #' @description Remove every key below a prefix (a writable store;
    #'   refused otherwise).
    #' @param prefix The prefix.
    erase_prefix = function(prefix) {
      private$writer()$erase_prefix(prefix)
      invisible(self)
    },

    #' @description Write the zip file of a writable store: to a temporary
    #'   file in its folder, then renamed over it; an existing zip file in
    #'   which nothing was written or erased is left as it is. The store then
    #'   reads the zip file, read-only. Nothing to do for a read-only store.
    #' @return Self, invisibly.
    close = function() {
      if (is.null(private$.stage)) return(invisible(self))
      staging <- private$.staging
      names <- zip_staged_names(staging)
      if (zip_stage_changed(staging, names, private$.staged)) {
        tmp <- file.path(dirname(private$.path), sprintf(".%s.%d.partial", basename(private$.path), Sys.getpid()))
        unlink(tmp)
        .Call(ffi_zip_write, tmp, staging, enc2utf8(names), private$.level, private$.keep)
        if (!file.rename(tmp, private$.path)) {
          unlink(tmp)
          zarr_abort("io", sprintf("cannot rename the new zip file onto '%s'", private$.path))
        }
      }
      private$.stage <- NULL
      private$.io <- NULL
      private$.keep <- NULL
      unlink(staging, recursive = TRUE)
      private$open_index(private$.path)
      private$.read_only <- TRUE
      invisible(self)
    },

    #' @description Drop the changes of a writable store: its staging folder
    #'   is removed and the zip file left as it was. The store is then
    #'   unusable.
    #' @return Self, invisibly.
    discard = function() {
      if (is.null(private$.stage)) return(invisible(self))
      private$.stage <- NULL
      private$.io <- NULL
      private$.keep <- NULL
      unlink(private$.staging, recursive = TRUE)
      private$.keys <- character()
      private$.sizes <- numeric()
      private$.index <- NULL
      private$.read_only <- TRUE
      invisible(self)
    },

    #' @description How the C engine reaches this store: a read-only store's
    #'   engine reads the members from the zip file itself, through the index
    #'   made when the store was opened (made again when the file was written
    #'   since); a writable one works in its staging folder.
    #' @return A list.
    io_spec = function() {
      if (!is.null(private$.stage)) return(private$.stage$io_spec())
      if (is.null(private$.index)) zarr_abort("store", sprintf("the changes to '%s' were discarded", private$.path))
      private$fresh()
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
    .path = NULL, .index = NULL, .prefix = "", .keys = character(), .sizes = numeric(),
    .stage = NULL, .staging = NULL, .level = -1L, .seen = NULL, .keep = NULL, .staged = NULL,
    # A read-only store reads the zip file through the index made when it
    # was opened; written again since (by another store object or program),
    # the file is indexed again, so that nothing is read at old offsets.
    fresh = function() {
      if (is.null(private$.index) || identical(zip_file_seen(private$.path), private$.seen)) return(invisible())
      if (!file.exists(private$.path)) zarr_abort("not_found", sprintf("'%s' no longer exists", private$.path))
      private$open_index(private$.path)
      private$.io <- NULL
      invisible()
    },
    open_index = function(p) {
      seen <- zip_file_seen(p) # before it is read: a change after this is seen
      index <- .Call(ffi_zip_open, p, max_decoded_bytes())
      private$.seen <- seen
      members <- .Call(ffi_zip_list, index)
      prefix <- zip_store_prefix(members$name)
      inside <- startsWith(members$name, prefix)
      keys <- substring(members$name[inside], nchar(prefix) + 1L)
      private$.path <- p
      private$.index <- index
      private$.prefix <- prefix
      private$.keys <- keys
      private$.sizes <- stats::setNames(members$size[inside], keys)
      private$.version <- if (!"zarr.json" %in% keys && any(c(".zgroup", ".zarray") %in% keys)) 2L else 3L
    },
    # The staging folder, with the members of an existing zip file copied in;
    # the zip file is written at close() or when the store is collected. The
    # index of the existing zip file stays (.keep): its members that are not
    # keys go into the new archive as they are.
    open_writable = function(p) {
      # tempfile() names it without touching the user's random number stream
      staging <- tempfile(sprintf(".%s.staging-%d-", basename(p), Sys.getpid()), tmpdir = dirname(p))
      if (!dir.create(staging)) zarr_abort("io", sprintf("cannot create the staging folder '%s'", staging))
      private$.path <- p
      private$.staging <- staging
      root <- staging
      ok <- FALSE
      on.exit(if (!ok) unlink(staging, recursive = TRUE))
      if (file.exists(p)) {
        private$open_index(p)
        .Call(ffi_zip_extract, private$.index, staging)
        if (nzchar(private$.prefix)) root <- file.path(staging, sub("/$", "", private$.prefix))
        private$.keep <- private$.index
        private$.index <- NULL
        private$.staged <- zip_stage_mark(staging)
      }
      private$.stage <- zarr_localstore$new(root)
      super$initialize(FALSE, private$.stage$version)
      # written when collected, or at the end of the session
      reg.finalizer(self, function(e) try(e$close(), silent = TRUE), onexit = TRUE)
      ok <- TRUE
    },
    writer = function() {
      if (is.null(private$.stage)) private$check_writable()
      private$.stage
    }
  )
)

# What a zip file is as far as R can tell cheaply: its size and modification
# time (to the fraction of a second where the system keeps it).
zip_file_seen <- function(p) {
  i <- file.info(p, extra_cols = FALSE)
  c(i$size, as.numeric(i$mtime), as.numeric(i$ctime))
}

# The files of a staging folder that become members (not a local store's
# unfinished writes): the metadata documents first, the root's first and
# then by depth (the order OME-Zarr's single-file .ozx, NGFF RFC-9, asks
# for, so that a reader finds the hierarchy at the start), then the chunks,
# each part sorted.
zip_staged_names <- function(staging) {
  names <- sort(list.files(staging, recursive = TRUE, all.files = TRUE, no.. = TRUE))
  names <- names[!grepl("[.]partial$", names)]
  meta <- grepl("(^|/)(zarr[.]json|[.]zgroup|[.]zarray|[.]zattrs|[.]zmetadata)$", names)
  depth <- nchar(gsub("[^/]", "", names))
  c(names[meta][order(depth[meta], names[meta])], names[!meta])
}

# The copies of an existing zip file's members get one old time stamp (the
# zip epoch), so that a file written since, by R or by the C engine, differs
# from them in its time stamp, its size, or by being new or gone. NULL when
# the time stamps cannot be set (the archive is then always rewritten).
zip_stage_time <- 315532800 # 1980-01-01 00:00:00 UTC

zip_stage_mark <- function(staging) {
  names <- zip_staged_names(staging)
  paths <- file.path(staging, names)
  if (!all(Sys.setFileTime(paths, .POSIXct(zip_stage_time, tz = "UTC")))) return(NULL)
  list(names = names, size = unname(file.size(paths)))
}

# Whether anything was written or erased in the staging folder since it was
# marked (always TRUE for a new zip file).
zip_stage_changed <- function(staging, names, mark) {
  if (is.null(mark) || !identical(names, mark$names)) return(TRUE)
  info <- file.info(file.path(staging, names), extra_cols = FALSE)
  !(identical(as.numeric(info$size), as.numeric(mark$size)) &&
      all(!is.na(info$mtime) & as.numeric(info$mtime) == zip_stage_time))
}

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
