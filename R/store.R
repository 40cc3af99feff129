# Keys are relative paths below the store root; prefixes name a node and end
# in "/" (the root's prefix is ""). Node paths, as users see them, start with
# "/".

node_prefix <- function(path) {
  # the usual forms without a regular expression: "a/b", "/a/b" (a node's
  # path) and "a/b/" (a prefix already)
  if (is.character(path) && length(path) == 1L && !is.na(path)) {
    if (startsWith(path, "/") && !startsWith(path, "//")) path <- substring(path, 2L)
    if (!startsWith(path, "/")) {
      if (!endsWith(path, "/")) return(if (nzchar(path)) paste0(path, "/") else "")
      if (!endsWith(path, "//")) return(path)
    }
  }
  path <- sub("^/+", "", path)
  path <- sub("/+$", "", path)
  if (nzchar(path)) paste0(path, "/") else ""
}

prefix_path <- function(prefix) paste0("/", sub("/$", "", prefix))

check_key <- function(key, array = NULL) {
  if (!is.character(key) || length(key) != 1L || is.na(key) || !.Call(ffi_key_is_safe, key))
    zarr_abort("key", sprintf("invalid store key '%s': keys are relative paths without '.', '..' or empty parts",
                              paste(key, collapse = " ")), array = array)
  key
}

# Node names: the rules of the Zarr v3 specification.
check_node_name <- function(name) {
  if (!node_name_ok(name))
    zarr_abort("node_name", sprintf(
      "invalid node name '%s': names must be non-empty, must not contain '/', must not consist of dots only, must not start with '__' and must not be a metadata document's name (zarr.json, .zarray, .zgroup, .zattrs, .zmetadata)",
      paste(name, collapse = " ")))
  name
}

# Metadata documents already parsed and checked, by their bytes: a store
# opened again (a Shiny app per request, a block loop reopening its array)
# reads the same documents, and parsing and checking them cost more than
# reading them. The value depends on the bytes only (keys and paths are only
# in error messages, and errors are not kept); it is a plain list, copied on
# change. Small documents only (a consolidated one is parsed where it is
# read), at most meta_doc_max of them.
meta_doc_cache <- new.env(parent = emptyenv())
meta_doc_cache$keys <- character()
meta_doc_cache$values <- list()
meta_doc_max <- 512L

# The key of a kind of documents ("v3": zarr.json; "v2": .zarray, .zgroup,
# .zattrs) from their bytes (NULL: not kept: a byte 0, which no valid JSON
# text holds, or large documents). Parts are separated by a control byte,
# which valid JSON does not hold either, so documents that would not parse
# never find the entry of others.
meta_doc_key <- function(kind, ...) .Call(ffi_meta_doc_key, kind, list(...))

meta_doc_get <- function(key) {
  if (is.null(key)) return(NULL)
  i <- match(key, meta_doc_cache$keys)
  if (is.na(i)) NULL else meta_doc_cache$values[[i]]
}

meta_doc_put <- function(key, value) {
  if (is.null(key)) return(invisible())
  if (length(meta_doc_cache$keys) >= meta_doc_max) {
    meta_doc_cache$keys <- character()
    meta_doc_cache$values <- list()
  }
  meta_doc_cache$keys <- c(meta_doc_cache$keys, key)
  meta_doc_cache$values[[length(meta_doc_cache$keys)]] <- value
  invisible()
}

# Whether a node name is valid (check_node_name() without the error, for the
# paths that only ask: no condition handler).
node_name_ok <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name)) return(FALSE)
  # names found valid are kept (at most node_names_ok_max): every node
  # opened or created asks about its name, most of them more than once
  if (isTRUE(node_names_ok[[name]])) return(TRUE)
  ok <- node_name_check(name)
  if (ok) {
    if (length(node_names_ok) >= node_names_ok_max) rm(list = ls(node_names_ok, all.names = TRUE), envir = node_names_ok)
    assign(name, TRUE, envir = node_names_ok)
  }
  ok
}
node_names_ok <- new.env(parent = emptyenv())
node_names_ok_max <- 4096L

node_name_check <- function(name) {
  is.character(name) && length(name) == 1L && !is.na(name) && nzchar(name) &&
    # a slash, a control character, dots only ("." and ".." too), a leading "__"
    !grepl("[/[:cntrl:]]|^[.]+$|^__", name) &&
    # a node of a document's name would share its parent's keys: deleting it
    # erased the parent's document
    !name %in% node_documents
}

#' Zarr stores
#'
#' The abstract store: a map from keys (relative paths such as
#' `"group/array/c/0/0"`) to raw values, plus the metadata documents of the
#' groups and arrays in it. Concrete stores ([zarr_localstore],
#' [zarr_memorystore]) implement the key-value primitives; this class builds
#' everything else on them, including reading Zarr v2 metadata as v3.
#'
#' @seealso [zarr_localstore], [zarr_memorystore], [zarr_zipstore],
#'   [zarr_httpstore], [zarr_s3store], [zarr_refstore], [open_zarr()]
#' @examples
#' loc <- tempfile(fileext = ".zarr")
#' z <- as_zarr(1:10, location = loc)
#' s <- z$store
#' s
#' s$list()
#' s$exists("zarr.json")
#' s$read_only
#' unlink(loc, recursive = TRUE)
#' @export
zarr_store <- R6::R6Class("zarr_store",
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again (a
    #'   [zarr_map_blocks()] daemon, a DelayedArray seed): `NULL` for stores that only this session reaches.
    #' @return A list with `kind`, `location` and `options`, or `NULL`.
    reopen_spec = function() NULL,

    #' @description The lines that `print()` writes, as a character vector
    #'   (also what [format()] gives).
    #' @param ... Ignored.
    #' @return A character vector.
    format = function(...) format_printed(self),

    #' @description Create a store. Only descendant classes should call this.
    #' @param read_only Whether the store is read-only.
    #' @param version The Zarr version of the store, 2 or 3.
    #' @return An instance of this class.
    initialize = function(read_only = FALSE, version = 3L) {
      private$.read_only <- isTRUE(read_only)
      private$.version <- as.integer(version)
    },

    #' @description Print a summary of the store.
    print = function() {
      cat(sprintf("<%s>%s\n", self$friendlyClassName, if (self$read_only) " (read-only)" else ""))
      invisible(self)
    },

    #' @description Remove all keys and values from the store.
    #' @return Self, invisibly.
    clear = function() {
      private$check_writable()
      cache_forget(self, prefix = "") # a store written in R may not drop what it erases
      for (k in self$list()) self$erase(k)
      invisible(self)
    },

    #' @description Remove a key from the store.
    #' @param key The key to remove.
    #' @return Self, invisibly.
    erase = function(key) zarr_abort("store", "this store cannot erase keys"),

    #' @description Remove every key below a prefix.
    #' @param prefix The prefix.
    #' @return Self, invisibly.
    erase_prefix = function(prefix) {
      private$check_writable()
      for (k in self$list_prefix(prefix)) self$erase(k)
      invisible(self)
    },

    #' @description The prefixes at or below `prefix` that are links to
    #'   folders elsewhere (a local store's symbolic links): deleting a node
    #'   removes such a link, never what it points to. Stores without links
    #'   have none.
    #' @param prefix The prefix.
    #' @return A character vector of prefixes ending in "/".
    linked_prefixes = function(prefix) character(),

    #' @description Whether a key exists.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) private$not_implemented("exists"),

    #' @description Retrieve the value of a key.
    #' @param key The key.
    #' @param prototype Ignored; values are always raw vectors.
    #' @param byte_range `NULL` for the whole value; a positive number for the
    #'   bytes from that offset to the end; a negative number for that many
    #'   final bytes; `c(start, end)` for a range (end exclusive).
    #' @return A raw vector, or `NULL` if the key does not exist.
    get = function(key, prototype = NULL, byte_range = NULL) private$not_implemented("get"),

    #' @description Size of a value in bytes.
    #' @param key The key.
    #' @return The size, or `NA` if the key does not exist.
    getsize = function(key) {
      v <- self$get(key)
      if (is.null(v)) NA_real_ else length(v)
    },

    #' @description The sizes of all values below a prefix. Stores that list
    #'   sizes with their keys (S3) answer with one listing.
    #' @param prefix The prefix.
    #' @return A numeric vector of sizes in bytes (`NA` where unknown), named
    #'   by full key.
    key_sizes = function(prefix) {
      keys <- self$list_prefix(prefix)
      vapply(stats::setNames(nm = keys), function(k) as.numeric(self$getsize(k)), 0)
    },

    #' @description Total size in bytes of all values below a prefix.
    #' @param prefix The prefix.
    #' @return The size in bytes.
    getsize_prefix = function(prefix) sum(self$key_sizes(prefix), na.rm = TRUE),

    #' @description Whether a group has no children.
    #' @param prefix The prefix of the group.
    #' @return `TRUE` or `FALSE`.
    is_empty = function(prefix) {
      prefix <- node_prefix(prefix)
      kids <- self$list_dir(prefix)
      !any(vapply(kids, function(k) !is.null(self$get_metadata(paste0(prefix, k))), TRUE))
    },

    #' @description All keys in the store.
    #' @return A character vector.
    list = function() self$list_prefix(""),

    #' @description The names directly below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector of names.
    list_dir = function(prefix) private$not_implemented("list_dir"),

    #' @description All keys below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) private$not_implemented("list_prefix"),

    #' @description Store a value.
    #' @param key The key.
    #' @param value A raw vector.
    #' @return Self, invisibly.
    set = function(key, value) zarr_abort("read_only", "this store cannot be written to"),

    #' @description Store a value unless the key exists.
    #' @param key The key.
    #' @param value A raw vector.
    #' @return Self, invisibly.
    set_if_not_exists = function(key, value) {
      if (!self$exists(key)) self$set(key, value)
      invisible(self)
    },

    #' @description The metadata of the node at a prefix, always in Zarr v3
    #'   form (v2 `.zarray`/`.zgroup`/`.zattrs` are converted).
    #' @param prefix The prefix (or path) of the node.
    #' @return A list, or `NULL` if there is no node.
    get_metadata = function(prefix) {
      prefix <- node_prefix(prefix)
      root <- !nzchar(prefix)
      if (root) forget_root_zmetadata()
      docs <- private$node_documents(prefix, root)
      raw <- docs[[1L]]
      if (!is.null(raw)) {
        doc <- meta_doc_key("v3", raw)
        meta <- meta_doc_get(doc)
        if (is.null(meta)) {
          key <- paste0(prefix, "zarr.json")
          meta <- json_parse(raw, "zarr.json", key = key)
          check_node_document(meta, key)
          meta_doc_put(doc, meta)
        }
        # its consolidated entries are kept byte for byte (R/consolidated.R)
        if (!nzchar(prefix) && !is.null(meta[["consolidated_metadata"]])) remember_root_document(meta, raw)
        return(meta)
      }
      if (length(docs) < 4L || (is.null(docs[[2L]]) && is.null(docs[[3L]]))) return(NULL)
      if (root && length(docs) == 5L) remember_root_zmetadata(self, docs[[5L]])
      v2_metadata(prefix, docs[[2L]], docs[[3L]], docs[[4L]])
    },

    #' @description Write the metadata of the node at a prefix.
    #' @param prefix The prefix (or path) of the node.
    #' @param metadata A list in Zarr v3 form, or an [array_builder].
    #' @return Self, invisibly.
    set_metadata = function(prefix, metadata) {
      private$check_writable()
      prefix <- node_prefix(prefix)
      if (inherits(metadata, "array_builder")) metadata <- metadata$metadata()
      if (identical(as.integer(metadata[["zarr_format"]]), 2L)) {
        v2_set_metadata(self, prefix, metadata)
      } else {
        self$set(paste0(prefix, "zarr.json"), charToRaw(json_write(json_prepare_metadata(metadata))))
      }
      invisible(self)
    },

    #' @description Whether a path holds a group.
    #' @param path The path.
    #' @return `TRUE` or `FALSE`.
    is_group = function(path) {
      m <- tryCatch(self$get_metadata(path), zarr_error = function(e) NULL)
      identical(m[["node_type"]], "group")
    },

    #' @description Create a group.
    #' @param parent The path of the parent group (ignored for the root).
    #' @param name The name of the new group, or "" for the root group.
    #' @param format The Zarr format of the group (default: the store's).
    #' @return The metadata of the new group.
    create_group = function(parent, name, format = private$.version) {
      private$check_writable()
      prefix <- private$new_node_prefix(parent, name)
      meta <- list(zarr_format = as.integer(format %||% 3L), node_type = "group", attributes = named_list())
      private$write_new_node(prefix, meta)
      meta
    },

    #' @description Create an array.
    #' @param parent The path of the parent group (ignored for the root).
    #' @param name The name of the new array, or "" for a single-array store.
    #' @param metadata The array metadata (a list or an [array_builder]).
    #' @return The metadata of the new array.
    create_array = function(parent, name, metadata) {
      private$check_writable()
      if (inherits(metadata, "array_builder")) {
        if (!metadata$is_valid()) zarr_abort("metadata", "the array definition is not valid")
        metadata <- metadata$metadata()
      }
      prefix <- private$new_node_prefix(parent, name)
      # nothing is written for invalid metadata; a definition reused for
      # many arrays (one builder in a loop) is checked once, and the arrays
      # made from it parse it when first used
      p <- if (!already_validated(metadata)) parse_array_metadata(metadata, prefix_path(prefix))
      if (!is.null(p)) remember_validated(metadata)
      metadata <- store_key_encoding(self, metadata)
      private$write_new_node(prefix, metadata)
      if (!is.null(p)) {
        p$key_encoding <- array_key_encoding(metadata)
        remember_parsed(node_metadata(metadata), p) # as the array object holds it
      } else {
        remember_parsed(NULL, NULL) # an earlier parse left untaken is no other array's
      }
      metadata
    },

    #' @description Called before the C engine reads or writes chunks of the
    #'   array at a prefix: a store that finds an array's chunks lazily
    #'   ([zarr_icechunkstore]: from its manifests) does so here. Others do
    #'   nothing.
    #' @param prefix The array's prefix (`""` for the root, else ending in `/`).
    #' @return `NULL`, invisibly.
    prepare_chunks = function(prefix) invisible(NULL),

    #' @description How the C engine reaches this store. A store written in
    #'   R is called back on the R thread: once per read with all the keys it
    #'   needs, and once per chunk written.
    #' @return An external pointer to the store's C implementation.
    io_spec = function() {
      if (is.null(private$.io))
        private$.io <- store_io_r(
          get = function(keys) lapply(keys, function(k) self$get(k)),
          set = function(key, value) self$set(key, value),
          erase = function(key) self$erase(key))
      private$.io
    },

    #' @description Requests made by the C engine and bytes they returned
    #'   since the store was opened (local, zip and HTTP stores count reads of
    #'   chunks, shard indexes and byte ranges), and what the decoded-chunk
    #'   cache did for them (see `zarr.chunk_cache_bytes` in [zarr-options]).
    #' @return A named numeric vector: `requests`, `bytes`; `cache_hits` and
    #'   `cache_misses`, the chunks (or inner chunks of shards) of this store
    #'   that reads found and did not find in the cache (reads that select
    #'   whole chunks look only when the cache holds something); `cache_bytes`,
    #'   the bytes the cache holds now, for all stores.
    io_stats = function() .Call(ffi_store_stats, self$io_spec())
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Zarr store",
    #' @field read_only (read-only) Whether the store is read-only.
    read_only = function(value) {
      if (missing(value)) return(private$.read_only)
      zarr_abort("read_only", "read_only cannot be changed")
    },
    #' @field supports_consolidated_metadata Whether metadata can be consolidated.
    supports_consolidated_metadata = function(value) TRUE,
    #' @field supports_deletes Whether keys can be deleted.
    supports_deletes = function(value) !private$.read_only,
    #' @field supports_listing Whether keys can be listed.
    supports_listing = function(value) TRUE,
    #' @field supports_partial_writes Deprecated, always `FALSE`.
    supports_partial_writes = function(value) FALSE,
    #' @field supports_writes Whether values can be written.
    supports_writes = function(value) !private$.read_only,
    #' @field version (read-only) The Zarr version of the store.
    version = function(value) {
      if (missing(value)) return(private$.version)
      zarr_abort("read_only", "version is read-only")
    },
    #' @field separator (read-only) The default chunk key separator for new arrays.
    separator = function(value) private$.separator
  ),
  private = list(
    .read_only = FALSE, .version = 3L, .separator = "/", .io = NULL, .fresh = FALSE,
    # TRUE when nothing is stored at or below a node prefix (no document, no
    # chunk), found without reading documents; FALSE when unknown. A store
    # that can tell at once (a local store: the folder is not there) spares
    # creating a node the reads of documents that are not there.
    node_absent = function(prefix) FALSE,
    # The documents of the node at `prefix` that get_metadata() reads, in
    # its order and no more: list(zarr.json, .zarray, .zgroup, .zattrs),
    # NULL where absent or not read. A store with a C implementation reads
    # them in one call (ffi_store_node_docs), for a `root` group with its
    # .zmetadata as a fifth element (read_consolidated() takes it).
    node_documents = function(prefix, root = FALSE) {
      v3 <- self$get(paste0(prefix, "zarr.json"))
      if (!is.null(v3)) return(list(v3))
      zarray <- self$get(paste0(prefix, ".zarray"))
      zgroup <- if (is.null(zarray)) self$get(paste0(prefix, ".zgroup"))
      if (is.null(zarray) && is.null(zgroup)) return(list(NULL, NULL, NULL, NULL))
      list(NULL, zarray, zgroup, self$get(paste0(prefix, ".zattrs")))
    },
    # The metadata documents of a node new_node_prefix() just cleared (a
    # folder that was not there has no old .zattrs to remove).
    write_new_node = function(prefix, metadata) {
      if (private$.fresh) {
        docs <- new_node_documents(metadata)
        for (k in names(docs)) self$set(paste0(prefix, k), docs[[k]])
      } else {
        self$set_metadata(prefix, metadata)
      }
      private$.fresh <- FALSE
    },
    check_writable = function() {
      if (private$.read_only) zarr_abort("read_only", "the store is read-only")
    },
    not_implemented = function(method) {
      zarr_abort("not_implemented", sprintf("%s does not implement %s(); use a concrete store class",
                                            class(self)[1L], method))
    },
    new_node_prefix = function(parent, name) {
      if (identical(name, "")) {
        if (!is.null(self$get_metadata("")))
          zarr_abort("exists", "the store already has a root group or array")
        return("")
      }
      check_node_name(name)
      prefix <- paste0(node_prefix(parent), name, "/")
      private$.fresh <- private$node_absent(prefix)
      if (private$.fresh) return(prefix) # nothing there: no document, no leftover chunk
      # a document that cannot be read still makes a node (opened, it is an
      # array whose use raises the problem): it is not replaced either
      existing <- tryCatch(self$get_metadata(prefix), zarr_error_key = function(e) NULL,
                           zarr_error_metadata = function(e) e)
      if (!is.null(existing))
        zarr_abort("exists", sprintf("'%s' already exists in group '%s'", name, prefix_path(node_prefix(parent))))
      # chunks of a node whose deletion was interrupted (its metadata went
      # first) must not become the new node's data
      if (self$supports_listing) store_erase_keys(self, leftover_chunk_keys(self$list_prefix(prefix), prefix))
      prefix
    }
  )
)

# The documents (raw JSON texts, named by key below the node's prefix) that
# set_metadata() writes for a node that was not there before, so without an
# empty v2 .zattrs. Many nodes created alike (one builder in a loop) have the
# same documents: the last ones are kept.
new_documents_slot <- new.env(parent = emptyenv())

new_node_documents <- function(metadata) {
  if (!is.null(new_documents_slot$m) && identical(new_documents_slot$m, metadata)) return(new_documents_slot$docs)
  docs <- if (identical(as.integer(metadata[["zarr_format"]]), 2L)) {
    v2 <- v2_from_v3(metadata)
    v2 <- v2[names(v2) != ".zattrs" | lengths(v2) > 0L]
    lapply(v2, function(d) charToRaw(json_write(d)))
  } else {
    list(zarr.json = charToRaw(json_write(json_prepare_metadata(metadata))))
  }
  new_documents_slot$m <- metadata
  new_documents_slot$docs <- docs
  docs
}

# node_metadata() of the metadata of a node just created (kept for the next
# one: many nodes created alike have the same).
new_node_metadata <- function(metadata) {
  if (!is.null(new_documents_slot$node_in) && identical(new_documents_slot$node_in, metadata))
    return(new_documents_slot$node_out)
  out <- node_metadata(metadata)
  new_documents_slot$node_in <- metadata
  new_documents_slot$node_out <- out
  out
}

# The chunk key encoding an array gets in a store: v2 keys for a v2 array,
# else the one its metadata names, or the store's default separator.
store_key_encoding <- function(store, metadata) {
  if (identical(as.integer(metadata[["zarr_format"]]), 2L)) {
    if (!identical(metadata[["chunk_key_encoding"]][["name"]], "v2"))
      metadata[["chunk_key_encoding"]] <- list(name = "v2", configuration = list(separator = "."))
  } else {
    enc <- metadata[["chunk_key_encoding"]]
    sep <- enc[["configuration"]][["separator"]]
    if (is.null(enc) || !(identical(sep, "/") || identical(sep, ".")))
      metadata[["chunk_key_encoding"]] <- list(name = "default", configuration = list(separator = store$separator))
  }
  metadata
}

# Keys below a node prefix that hold chunks (or this package's staging and
# journal keys) rather than node documents or other files.
leftover_chunk_keys <- function(keys, prefix) {
  rel <- substring(keys, nchar(prefix) + 1L)
  keys[grepl("^(c([./][0-9]+)*|[0-9]+([./][0-9]+)*|__zarr_.*)$", rel)]
}

# Listing a store whose keys are all known (zip members, references): the
# keys below a prefix, and the names directly below it.
keys_below <- function(keys, prefix) {
  prefix <- node_prefix(prefix)
  keys[startsWith(keys, prefix)]
}
keys_dir <- function(keys, prefix) {
  prefix <- node_prefix(prefix)
  unique(sub("/.*$", "", substring(keys_below(keys, prefix), nchar(prefix) + 1L)))
}

# A byte_range argument (see zarr_store$get()) as the C stores take it:
# NULL, or c(offset, length) with length -1 for "to the end" and a negative
# offset for a suffix.
c_byte_range <- function(byte_range, key = NULL) {
  if (is.null(byte_range)) return(NULL)
  r <- suppressWarnings(as.numeric(byte_range))
  if (anyNA(r) || !length(r) %in% 1:2 || (length(r) == 2L && (r[1L] < 0 || r[2L] <= r[1L])))
    zarr_abort("argument", "invalid byte range", key = key)
  if (length(r) == 2L) c(r[1L], r[2L] - r[1L]) else if (r >= 0) c(r, -1) else c(r, 0)
}

# The C side of a store written in R: its get(keys), set(key, value) and
# erase(key), called on the R thread only.
store_io_r <- function(get, set, erase) {
  env <- new.env(parent = emptyenv())
  env$get <- get
  env$set <- set
  env$erase <- erase
  .Call(ffi_store_r, env)
}

named_list <- function() structure(list(), names = character())

# Metadata as written: shapes and other vectors stay JSON arrays.
json_prepare_metadata <- function(meta) {
  for (f in c("shape", "dimension_names")) if (!is.null(meta[[f]])) meta[[f]] <- json_array(meta[[f]])
  cs <- meta[["chunk_grid"]][["configuration"]][["chunk_shape"]]
  if (is.atomic(cs) && !is.null(cs)) meta[["chunk_grid"]][["configuration"]][["chunk_shape"]] <- json_array(cs)
  if (!is.null(meta[["attributes"]])) {
    meta[["attributes"]] <- json_prepare(meta[["attributes"]])
    if (!length(meta[["attributes"]])) meta[["attributes"]] <- named_list()
  }
  meta
}

# The C handle of `store` for reading or writing the chunks of the array at
# `prefix`, after the store has prepared them (see
# zarr_store$prepare_chunks(); stores of other classes need not have it).
store_chunk_io <- function(store, prefix) {
  prep <- store$prepare_chunks
  if (is.function(prep)) prep(prefix)
  store$io_spec()
}
