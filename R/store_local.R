#' Local file system store
#'
#' A Zarr store in a directory of the local file system (including network
#' mounts). Every key is a file below the root directory. Values are written to
#' a temporary file next to their target and renamed into place, so an
#' interrupted or failed write never leaves a partly written chunk or metadata
#' document behind. A writer that is killed mid-write may leave its temporary
#' file (`<key>.<pid>.<n>.partial`) next to the target: such files are never
#' read as data nor listed as keys, and may be deleted at any time. Reads of
#' chunks go straight from C, in parallel.
#'
#' Writes and erases never leave the root: a folder inside the store that is
#' a symbolic link to a folder elsewhere is read through (a store may link
#' arrays in), but a value written or erased through it is refused with an
#' error of class `zarr_error_key` (erasing the link itself removes the link).
#'
#' @seealso [zarr_store], [open_zarr()], [zarr_zipstore]
#' @examples
#' loc <- tempfile(fileext = ".zarr")
#' z <- as_zarr(volcano, location = loc)
#' z$store
#' list.files(loc, recursive = TRUE)
#' unlink(loc, recursive = TRUE)
#' @export
zarr_localstore <- R6::R6Class("zarr_localstore",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): its folder.
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() list(kind = "local", location = normalizePath(private$.root, mustWork = FALSE)),

    #' @description Create or open a store.
    #'
    #' A root that does not exist is created (an empty directory works too);
    #' write a root group with `$create_group("/", "")` or a root array with
    #' `$create_array("/", "", metadata)` before anything else. An existing
    #' non-empty directory must hold a Zarr store (`zarr.json`, or `.zgroup` /
    #' `.zarray` for Zarr v2).
    #' @param root Path of the store directory; "file://" URIs are accepted.
    #' @param read_only Whether to open the store read-only.
    #' @return An instance of this class.
    initialize = function(root, read_only = FALSE) {
      check_read_only(read_only)
      if (!is.character(root) || length(root) != 1L || is.na(root) || !nzchar(root))
        zarr_abort("argument", "the store root must be a single path")
      if (startsWith(root, "file://")) root <- substring(root, 8L)
      root <- enc2utf8(root)
      # a URL is no folder name: "https://user:pw@host/x" made folders
      # named after it (password included) in the working directory
      if (grepl("://", root, fixed = TRUE) && grepl("^[A-Za-z][A-Za-z0-9+.-]+://", root))
        zarr_abort("argument", sprintf("'%s' is a URL, not a local folder: stores at URLs open with open_zarr() (read-only but for s3://)", root))
      root <- path.expand(root)
      # kind, then whether zarr.json, .zgroup, .zarray, .zmetadata exist
      # (-1: not looked at, one having been found), in one call
      probe <- .Call(ffi_local_probe, root)
      version <- NULL
      if (probe[1L] == 1L) {
        has3 <- probe[2L] == 1L
        has2 <- !has3 && any(probe[3:5] == 1L)
        if (!has3 && !has2 && length(list.files(root, all.files = TRUE, no.. = TRUE)) &&
            !has_nested_metadata(root) && !ic_is_repository_dir(root))
          zarr_abort("store", sprintf("'%s' exists but is not a Zarr store", root))
        if (has3) version <- 3L
        if (has2) version <- 2L
      } else if (probe[1L] == 2L) {
        zarr_abort("store", sprintf("'%s' is a file, not a directory", root))
      } else {
        if (isTRUE(read_only)) zarr_abort("store", sprintf("'%s' does not exist", root))
        if (!dir.create(root, recursive = TRUE, showWarnings = FALSE))
          zarr_abort("io", sprintf("cannot create directory '%s'", root))
      }
      if (is.null(version)) version <- zarr_default_format()
      super$initialize(read_only, version)
      private$.root <- normalizePath(root, winslash = "/", mustWork = TRUE)
      private$.separator <- "."
    },

    #' @description Print a summary of the store.
    print = function() {
      cat(sprintf("<Zarr local store>%s\n", if (self$read_only) " (read-only)" else ""))
      cat("Root:", redact(private$.root), "\n")
      invisible(self)
    },

    #' @description Whether a key exists (a chunk, a metadata document or a
    #'   node directory).
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) {
      file.exists(private$path(key))
    },

    #' @description Remove everything except the root metadata document.
    #'   Symbolic links are removed, not what they point to.
    #' @return `TRUE` when done, invisibly.
    clear = function() {
      private$check_writable()
      keep <- c("zarr.json", ".zgroup", ".zattrs", ".zarray")
      entries <- list.files(private$.root, all.files = TRUE, no.. = TRUE)
      cache_forget(self, prefix = "")
      unlink(file.path(private$.root, setdiff(entries, keep)), recursive = TRUE)
      invisible(TRUE)
    },

    #' @description Remove one key: a chunk, a metadata document or an empty
    #'   group. A node whose folder is a symbolic link is removed by removing
    #'   the link; what it points to stays.
    #' @param key The key.
    #' @return `TRUE` if something was removed, `FALSE` otherwise, invisibly.
    erase = function(key) {
      private$check_writable()
      p <- private$wpath(key)
      cache_forget(self, key, prefix = node_prefix(key))
      if (is_link(p)) return(invisible(unlink(p, recursive = TRUE) == 0L && !is_link(p))) # the link only
      if (dir.exists(p)) {
        # refuse before anything is removed: only the node's own documents
        # (and stale temporary files) may be there
        rest <- list.files(p, all.files = TRUE, no.. = TRUE)
        rest <- rest[!rest %in% c("zarr.json", ".zgroup", ".zattrs", ".zarray") & !grepl("\\.partial$", rest)]
        if (length(rest)) zarr_abort("not_empty", sprintf("'%s' is not empty", key))
        return(invisible(unlink(p, recursive = TRUE) == 0L && !dir.exists(p)))
      }
      if (!file.exists(p)) return(invisible(FALSE))
      invisible(file.remove(p))
    },

    #' @description Remove every key below a prefix. A group at the prefix
    #'   keeps only a basic group document. When the prefix's folder is a
    #'   symbolic link, the link is replaced by a folder of its own: what it
    #'   pointed to stays.
    #' @param prefix The prefix.
    #' @return `TRUE` when done, `FALSE` when there was nothing, invisibly.
    erase_prefix = function(prefix) {
      private$check_writable()
      prefix <- node_prefix(prefix)
      dir <- if (nzchar(prefix)) private$wpath(sub("/$", "", prefix)) else private$.root
      if (!dir.exists(dir)) return(invisible(FALSE))
      was_group <- self$is_group(prefix)
      cache_forget(self, prefix = prefix)
      if (nzchar(prefix) && is_link(dir)) unlink(dir, recursive = TRUE) # the link only
      else unlink(file.path(dir, list.files(dir, all.files = TRUE, no.. = TRUE)), recursive = TRUE)
      if (was_group) self$set_metadata(prefix, list(zarr_format = self$version, node_type = "group",
                                                    attributes = named_list()))
      invisible(TRUE)
    },

    #' @description The names directly below a prefix. Symbolic links to
    #'   folders are listed, except those that lead back to a folder on their
    #'   own path (a loop).
    #' @param prefix The prefix.
    #' @return A character vector.
    list_dir = function(prefix) {
      prefix <- node_prefix(prefix)
      dir <- if (nzchar(prefix)) private$path(sub("/$", "", prefix)) else private$.root
      if (!dir.exists(dir)) return(character())
      out <- list.files(dir, all.files = TRUE, no.. = TRUE)
      out <- out[!grepl("\\.partial$", out)]
      links <- is_link(file.path(dir, out))
      if (!any(links)) return(out)
      # the real folders of the root and of every folder down to this one
      parts <- strsplit(sub("/$", "", prefix), "/", fixed = TRUE)[[1L]]
      up <- c(private$.root, if (length(parts)) file.path(private$.root, Reduce(file.path, parts, accumulate = TRUE)))
      up <- normalizePath(up, winslash = "/", mustWork = FALSE)
      loop <- links
      loop[links] <- normalizePath(file.path(dir, out[links]), winslash = "/", mustWork = FALSE) %in% up
      out[!loop]
    },

    #' @description All keys (files) below a prefix. Symbolic links to
    #'   folders are followed, except those that lead back to a folder on
    #'   their own path (a loop).
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) {
      prefix <- node_prefix(prefix)
      dir <- if (nzchar(prefix)) private$path(sub("/$", "", prefix)) else private$.root
      if (!dir.exists(dir)) return(character())
      out <- sort(.Call(ffi_dir_files, dir, FALSE))
      out <- out[!grepl("\\.partial$", out)]
      if (!length(out)) return(character())
      paste0(prefix, out)
    },

    #' @description The prefixes at or below `prefix` whose folders are
    #'   symbolic links (not followed).
    #' @param prefix The prefix.
    #' @return A character vector of prefixes ending in "/".
    linked_prefixes = function(prefix) {
      prefix <- node_prefix(prefix)
      dir <- if (nzchar(prefix)) private$path(sub("/$", "", prefix)) else private$.root
      if (nzchar(prefix) && is_link(dir)) return(prefix)
      if (!dir.exists(dir)) return(character())
      out <- .Call(ffi_dir_files, dir, TRUE)
      if (length(out)) paste0(prefix, out, "/") else character()
    },

    #' @description Store a value (atomically: temporary file, then rename).
    #' @param key The key, for example "group/array/c.0.0".
    #' @param value A raw vector.
    #' @return Self, invisibly.
    set = function(key, value) {
      private$check_writable()
      if (!is.raw(value)) zarr_abort("value", "store values must be raw vectors", key = key)
      check_key(key)
      .Call(ffi_store_set, self$io_spec(), key, value) # never through a folder linked to elsewhere
      invisible(self)
    },

    #' @description Retrieve a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range See [zarr_store].
    #' @return A raw vector, or `NULL` when the key does not exist.
    get = function(key, prototype = NULL, byte_range = NULL) {
      p <- private$path(key)
      if (is.null(byte_range)) return(.Call(ffi_file_read, p, NULL))
      size <- .Call(ffi_file_size, p)
      if (size < 0) return(NULL)
      rng <- resolve_byte_range(byte_range, size, key)
      .Call(ffi_file_read, p, as.numeric(c(rng[1L], rng[2L] - rng[1L])))
    },

    #' @description Size of a value in bytes.
    #' @param key The key.
    #' @return The size, or `NA` when the key does not exist.
    getsize = function(key) {
      s <- .Call(ffi_file_size, private$path(key))
      if (s < 0) NA_real_ else s
    },

    #' @description How the C engine reaches this store: the files are read
    #'   (whole or by byte range) and written by its worker threads.
    #' @return An external pointer to the store's C implementation.
    io_spec = function() {
      if (is.null(private$.io)) private$.io <- .Call(ffi_store_local, private$.root, TRUE)
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Local file system store",
    #' @field root (read-only) The root directory of the store.
    root = function(value) private$.root,
    #' @field uri (read-only) The URI of the store.
    uri = function(value) paste0("file://", private$.root),
    #' @field separator (read-only) Chunk key separator for new arrays: ".".
    separator = function(value) private$.separator
  ),
  private = list(
    .root = NULL, .io = NULL,
    node_documents = function(prefix, root = FALSE) .Call(ffi_store_node_docs, self$io_spec(), prefix, root),
    # the node's folder is not there (a dangling symbolic link counts as
    # absent: writing through it is refused in src/store_local.c)
    node_absent = function(prefix) nzchar(prefix) && !file.exists(private$path(sub("/$", "", prefix))),
    path = function(key) {
      check_key(key)
      file.path(private$.root, key)
    },
    # The path of a key to be erased: refused when a folder on its way is a
    # symbolic link to outside the store (src/store_local.c)
    wpath = function(key) {
      p <- private$path(key)
      .Call(ffi_store_check_keys, self$io_spec(), key, TRUE)
      p
    }
  )
)

# Whether each path is a symbolic link (whatever it points to, if anything);
# Sys.readlink() gives NA where nothing is.
is_link <- function(path) {
  l <- Sys.readlink(path)
  !is.na(l) & nzchar(l)
}

resolve_byte_range <- function(byte_range, size, key = NULL) {
  r <- suppressWarnings(as.numeric(byte_range))
  if (anyNA(r) || !length(r) %in% 1:2) zarr_abort("argument", "invalid byte range", key = key)
  if (length(r) == 1L) {
    rng <- if (r >= 0) c(r, size) else c(max(0, size + r), size)
  } else {
    rng <- c(r[1L], min(r[2L], size))
  }
  if (rng[1L] >= size || rng[2L] <= rng[1L])
    zarr_abort("argument", sprintf("byte range [%s, %s) is empty or beyond the end of the value (%s bytes)",
                                   format(rng[1L]), format(rng[2L]), format(size)), key = key)
  rng
}

# Whether a directory without root metadata still holds a Zarr hierarchy (an
# implicit root, as some writers leave): metadata documents directly in one of
# its subdirectories or theirs. Only what the store layout names is looked
# at, never following symbolic links, and at most `max_dirs` directories, so
# that opening "/" or "/usr" by mistake is refused at once instead of
# scanning the file system.
has_nested_metadata <- function(root, depth = 2L, max_dirs = 1000L) {
  docs <- c("zarr.json", ".zgroup", ".zarray", ".zmetadata")
  level <- root
  seen <- 0L
  for (d in seq_len(depth)) {
    subdirs <- unlist(lapply(level, function(p) list.dirs(p, full.names = TRUE, recursive = FALSE)))
    subdirs <- subdirs[!nzchar(Sys.readlink(subdirs))] # not through symbolic links
    if (!length(subdirs)) return(FALSE)
    subdirs <- utils::head(subdirs, max_dirs - seen)
    seen <- seen + length(subdirs)
    if (any(file.exists(file.path(rep(subdirs, each = length(docs)), docs)))) return(TRUE)
    if (seen >= max_dirs) return(FALSE)
    level <- subdirs
  }
  FALSE
}
