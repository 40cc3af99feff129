#' Zarr objects
#'
#' A Zarr object is one Zarr data set: a store and the hierarchy of groups
#' and arrays in it. The root is usually a group, but may be a single array.
#'
#' @seealso [open_zarr()], [create_zarr()], [zarr_group], [zarr_array],
#'   [zarr_store], [zarr_consolidate()], [zarr-options]
#' @examples
#' fn <- system.file("extdata", "volcano.zarr", package = "zarr")
#' z <- open_zarr(fn, read_only = TRUE)
#' z
#' z$arrays
#' z$root
#' z[["/elevation"]][1:3, 1:3]
#' @export
zarr <- R6::R6Class("zarr",
  cloneable = TRUE,
  public = list(
    #' @description The lines that `print()` writes, as a character vector
    #'   (also what [format()] gives).
    #' @param ... Ignored.
    #' @return A character vector.
    format = function(...) format_printed(self),

    #' @description Open the hierarchy in a store, or start a new one.
    #' @param store A [zarr_store]; or a location: a directory path (or
    #'   "file://" URI; the directory is created when absent), an `http(s)://`
    #'   URL, an `s3://bucket/prefix` URL or an Azure `az://container/prefix`
    #'   or `abfs[s]://` URL; or `NULL` or missing for a new
    #'   store in memory. A store without a root node gives a zarr object
    #'   whose `root` is `NULL` until a root group or array is made (with
    #'   `zarr_group$new(name = "", parent = z)`, [zarr_array]`$new()` or by
    #'   assigning `root`).
    #' @param read_only For a location: whether to open it read-only. The
    #'   default `NULL` means `FALSE` for a local directory, `TRUE` for a web
    #'   server, S3 or Azure.
    #' @param protocol For a location: "local", "http", "s3" or "azure", when it cannot
    #'   be told from the location (an S3-compatible service at an
    #'   `https://` URL, "https://host/bucket/prefix").
    #' @param ... For S3: further arguments of [zarr_s3store] (`region`,
    #'   `profile`, `access_key`, `secret_key`, `session_token`, `endpoint`,
    #'   `anonymous`); for Azure, of [zarr_azurestore] (`account`, `key`,
    #'   `sas`, `connection_string`, `endpoint`, `anonymous`).
    #' @return A zarr object.
    initialize = function(store, read_only = NULL, protocol = NULL, ...) {
      if (missing(store) || is.null(store)) store <- zarr_memorystore$new()
      else if (!inherits(store, "zarr_store")) store <- store_for_location(store, read_only, protocol, ...)
      private$.store <- store
      private$.domain <- default_domain()
      meta <- store$get_metadata("")
      # an implicit root group: nodes directly below a root without metadata
      # (or none: an Icechunk snapshot is a hierarchy, its first one empty)
      if (is.null(meta) && store$supports_listing && (!store$is_empty("") || inherits(store, c("zarr_icechunkstore", "zarr_icechunksession")))) {
        if (save_marker %in% store$list_dir(""))
          zarr_abort("incomplete", "the store holds an interrupted save_to() copy (its root was not written yet): delete it and save again")
        meta <- list(zarr_format = 3L, node_type = "group", attributes = named_list())
      }
      if (is.null(meta)) {
        # nothing could ever be made in a read-only store without a root
        if (store$read_only) abort_no_root(store)
        return(invisible(self)) # uninitialised: no root yet
      }
      private$open_root(meta)
    },

    #' @description Print a summary of the Zarr object.
    print = function() {
      st <- private$.store
      root <- private$.root
      # the location too for stores other than local ones, its secrets redacted
      loc <- if ("root" %in% names(st)) st$root
      title <- paste("<Zarr object>", if (inherits(st, "zarr_localstore")) st$root
                     else paste0(st$friendlyClassName, if (is.character(loc) && length(loc) == 1L && nzchar(loc)) paste0(" ", redact(loc))))
      version <- paste(self$version, if (st$read_only) "(read-only)" else "")
      # a store that cannot list (HTTP without consolidated metadata) knows
      # only the nodes it was asked for: no count rather than a false "0"
      counts <- if (inherits(root, "zarr_group")) {
        n <- c(length(self$groups), length(self$arrays))
        if (!st$supports_listing) rep("unknown (the store cannot list keys)", 2L) else as.character(n)
      }
      if (use_cli()) {
        lab <- c("Version", if (inherits(root, "zarr_group")) c("Groups", "Arrays"))
        val <- c(version, counts)
        print_lines(title, lab, val)
        if (inherits(root, "zarr_group")) {
          cat(tree_lines(root), sep = "\n")
          root$print_attributes()
        } else if (is.null(root)) {
          cat("(uninitialised: no root group or array yet)\n")
        } else {
          print(root)
        }
        return(invisible(self))
      }
      cat(title, "\n")
      cat("Version:", version, "\n")
      if (inherits(root, "zarr_group")) {
        cat(sprintf("Groups : %s\nArrays : %s\n", counts[1L], counts[2L]))
        cat(tree_lines(root), sep = "\n")
        root$print_attributes()
      } else if (is.null(root)) {
        cat("(uninitialised: no root group or array yet)\n")
      } else {
        print(root)
      }
      invisible(self)
    },

    #' @description Print the hierarchy of groups and arrays as a tree.
    hierarchy = function() {
      if (is.null(private$.root)) cat("(uninitialised)\n") else cat(tree_lines(private$.root), sep = "\n")
      invisible(self)
    },

    #' @description Find a group or array by its path.
    #' @param path The path, starting with "/".
    #' @return A [zarr_group] or [zarr_array], or `NULL` if there is none.
    get_node = function(path) {
      if (!is.character(path) || length(path) != 1L || !startsWith(path, "/"))
        zarr_abort("argument", "a node path must be a single string starting with '/'")
      if (path == "/" || is.null(private$.root)) return(private$.root)
      if (!inherits(private$.root, "zarr_group")) return(NULL)
      private$.root$get_node(substr(path, 2L, nchar(path))) # (no regular expression: the path starts with "/")
    },

    #' @description Add a group.
    #' @param path The path of the parent group.
    #' @param name The name of the new group.
    #' @return The new [zarr_group].
    add_group = function(path, name) {
      parent <- private$group_at(path)
      parent$add_group(name)
    },

    #' @description Add an array.
    #' @param path The path of the parent group.
    #' @param name The name of the new array.
    #' @param metadata The array metadata: a list or an [array_builder].
    #' @return The new [zarr_array].
    add_array = function(path, name, metadata) {
      parent <- private$group_at(path)
      parent$add_array(name, metadata)
    },

    #' @description Add many arrays to one group at once (see the group's
    #'   `add_arrays()`: a consolidated copy of the metadata is written once
    #'   for the batch).
    #' @param path The path of the parent group.
    #' @param names The names of the new arrays.
    #' @param metadata The metadata of every array (a list or an
    #'   [array_builder]), or a list of them, one per name.
    #' @return The new [zarr_array]s, a list named by `names`, invisibly.
    add_arrays = function(path, names, metadata) {
      parent <- private$group_at(path)
      parent$add_arrays(names, metadata)
    },

    #' @description Delete a group. The root group cannot be deleted; with
    #'   `path = "/"` it is emptied (when `recursive = TRUE`) and its
    #'   attributes are removed.
    #' @param path The path of the group.
    #' @param recursive Whether to delete the group's content too; without
    #'   it, deleting a group that is not empty is an error.
    #' @return Self, invisibly.
    delete_group = function(path, recursive = FALSE) {
      node <- private$group_at(path)
      if (length(node$children) && !isTRUE(recursive))
        zarr_abort("not_empty", sprintf("group '%s' is not empty; use recursive = TRUE", node$path))
      if (is.null(node$parent)) node$delete_all()
      else {
        if (isTRUE(recursive)) node$delete_all()
        node$parent$delete(node$name)
      }
      invisible(self)
    },

    #' @description Delete an array. Deleting a root array leaves an empty
    #'   root group.
    #' @param path The path of the array.
    #' @return Self, invisibly.
    delete_array = function(path) {
      node <- self$get_node(path)
      if (!inherits(node, "zarr_array")) zarr_abort("not_found", sprintf("no array at '%s'", path))
      if (is.null(node$parent)) {
        st <- private$.store
        if (st$read_only) zarr_abort("read_only", "the store is read-only")
        # the array becomes an empty group in one step (v3: its zarr.json is
        # replaced; v2: its .zarray goes first), then its chunks go: an
        # interrupted deletion never leaves an array with holes, nor a
        # store without a root
        fmt <- as.integer(node$metadata[["zarr_format"]] %||% 3L)
        for (k in c(".zarray", ".zattrs")) if (st$exists(k)) st$erase(k)
        meta <- list(zarr_format = fmt, node_type = "group", attributes = named_list())
        st$set_metadata("", meta)
        store_erase_keys(st, setdiff(st$list_prefix(""), node_documents))
        private$open_root(meta)
      } else {
        node$parent$delete(node$name)
      }
      invisible(self)
    },

    #' @description Save the whole hierarchy (groups, arrays, attributes and
    #'   chunks) to another store, in Zarr v3 (the default) or v2: this
    #'   converts a v2 store to v3 or back, saves a memory store to disk or
    #'   makes a local copy of a remote store. Chunks are copied as stored,
    #'   without decoding (only their keys change between formats), many at
    #'   a time; in interactive sessions a progress bar shows when the copy takes more than a couple
    #'   of seconds (see `zarr.progress` in [zarr-options]). Consolidated
    #'   metadata is not copied. Each array's metadata is written after its
    #'   chunks and the root's document last, with a key
    #'   `__zarr_saving.json` at the destination's root meanwhile: a copy
    #'   that was interrupted has no root, and opening it is an error of
    #'   class `zarr_error_incomplete` (or finds no hierarchy); delete it and
    #'   save again.
    #' @param location Where to save: the path of a directory that does not
    #'   exist or is empty (or a "file://" URI), an `s3://bucket/prefix`
    #'   location that holds no keys, or a writable [zarr_store] (or [zarr]
    #'   object) without a hierarchy, such as a new [zarr_memorystore].
    #' @param verbose `TRUE` to report each group and array as it is saved.
    #' @param format The Zarr format of the copy, 3 (default) or 2.
    #' @return Self, invisibly.
    save_to = function(location, verbose = FALSE, format = 3L) {
      save_zarr_to(self, location, verbose = verbose, format = format)
      invisible(self)
    }
  ),
  active = list(
    #' @field version (read-only) The Zarr format version of the root node.
    version = function(value) {
      if (is.null(private$.root)) return(as.integer(private$.store$version %||% 3L))
      as.integer(private$.root$metadata[["zarr_format"]] %||% 3L)
    },
    #' @field root The root node (`NULL` while the store has none). Setting
    #'   a [zarr_group] or [zarr_array] of this object's store makes it the
    #'   root (the 1.0.0 constructors do this).
    root = function(value) {
      if (missing(value)) return(private$.root)
      if (!inherits(value, c("zarr_group", "zarr_array")) || !identical(value$store, private$.store) ||
          !is.null(value$parent))
        zarr_abort("argument", "root must be a root group or array of this object's store")
      private$.root <- value
    },
    #' @field store (read-only) The store.
    store = function(value) private$.store,
    #' @field domain (read-only) The [zarr_domain] of this object.
    domain = function(value) private$.domain,
    #' @field groups (read-only) Paths of all groups.
    groups = function(value) {
      if (inherits(private$.root, "zarr_group")) private$.root$groups else character()
    },
    #' @field arrays (read-only) Paths of all arrays.
    arrays = function(value) {
      if (inherits(private$.root, "zarr_group")) private$.root$arrays
      else if (is.null(private$.root)) character() else "/"
    }
  ),
  private = list(
    .store = NULL, .root = NULL, .domain = NULL,
    # A deep clone shares the store (its data are the same) and opens the
    # hierarchy in it anew, so that its nodes are distinct objects.
    deep_clone = function(name, value) {
      if (name == ".root" && !is.null(value)) {
        meta <- private$.store$get_metadata("") %||% value$metadata
        # (this runs with the original object's methods: nothing of it is set)
        root <- build_node("", meta, NULL, private$.store)
        if (inherits(root, "zarr_group")) attach_consolidated(root, private$.store, meta)
        return(root)
      }
      value
    },
    # The root node from its metadata; with a registered domain that asks
    # for it, the whole hierarchy, then post_open() on every node.
    open_root = function(meta) {
      store <- private$.store
      eager <- length(domain_registry$domains) > 0L && domains_want_hierarchy()
      if (eager) {
        old <- node_build$eager
        node_build$eager <- TRUE
        on.exit(node_build$eager <- old)
      }
      root <- build_node("", meta, NULL, store, owner = self, post_open = FALSE)
      if (inherits(root, "zarr_group")) attach_consolidated(root, store, meta)
      private$.root <- root
      if (eager) {
        nodes <- list(root)
        i <- 1L
        while (i <= length(nodes)) { # breadth first: every node is built first
          n <- nodes[[i]]
          if (inherits(n, "zarr_group")) nodes <- c(nodes, unname(n$children))
          i <- i + 1L
        }
        node_build$eager <- old
        for (n in nodes) n$post_open()
      } else {
        run_post_open(root)
      }
      root
    },
    group_at = function(path) {
      node <- self$get_node(path)
      if (!inherits(node, "zarr_group")) zarr_abort("not_found", sprintf("no group at '%s'", path))
      node
    }
  )
)

#' @rdname zarr
#' @param object A zarr object.
#' @param ... Ignored.
#' @export
str.zarr <- function(object, ...) {
  cat(sprintf("Zarr v%d object: %d group(s), %d array(s) in a %s\n", object$version,
              length(object$groups), length(object$arrays), tolower(object$store$friendlyClassName)))
  invisible(NULL)
}

#' Get a group or array from a Zarr object
#'
#' @param x A zarr object.
#' @param i The path of a group or array, starting with "/".
#' @return A [zarr_group] or [zarr_array], or `NULL` if there is none.
#' @export
#' @examples
#' z <- create_zarr()
#' z[["/"]]
`[[.zarr` <- function(x, i) {
  if (identical(i, ".__enclos_env__")) return(.subset2(x, i)) # R6 internals
  x$get_node(i)
}

#' Get a group or array from a Zarr group
#'
#' @param x A zarr_group.
#' @param i A path relative to the group; it may start with ".." parts.
#' @return A [zarr_group] or [zarr_array], or `NULL` if there is none.
#' @export
#' @examples
#' z <- create_zarr()
#' z$add_group("/", "tst")
#' z$add_group("/tst", "subtst")
#' tst <- z[["/tst"]]
#' tst[["subtst"]]
`[[.zarr_group` <- function(x, i) {
  if (identical(i, ".__enclos_env__")) return(.subset2(x, i)) # R6 internals
  x$get_node(i)
}

#' Replacement through a node path
#'
#' Nodes cannot be replaced, but values can be written through them:
#' `z[["/a"]][i] <- v` writes into array `/a` (R calls `[[<-` with the same
#' array after the values are written).
#'
#' @param x A zarr object or a zarr_group.
#' @param i The path of a node.
#' @param value The node at that path.
#' @return `x`.
#' @examples
#' z <- as_zarr(matrix(1:6, 2, 3), name = "m") # in memory
#' z[["/m"]][1, ] <- c(10L, 20L, 30L) # writes into array /m
#' z[["/m"]][]
#' try(z[["/m"]] <- 1:6) # replacing the node itself is an error
#' @name node-replacement
#' @keywords internal
#' @export
`[[<-.zarr` <- function(x, i, value) node_assign(x, i, value)

#' @rdname node-replacement
#' @export
`[[<-.zarr_group` <- function(x, i, value) node_assign(x, i, value)

node_assign <- function(x, i, value) {
  if (!is.character(i) || length(i) != 1L || is.na(i) || identical(i, ".__enclos_env__")) {
    assign(i, value, envir = x) # R6 internals; new names fail as on any R6 object
    return(x)
  }
  node <- tryCatch(x$get_node(i), zarr_error = function(e) NULL)
  if (is.null(node) || !identical(node, value))
    zarr_abort("argument", sprintf(
      "the node at '%s' cannot be replaced; write values into an array with x[[path]][...] <- values", i))
  x
}

# The store for a location given to zarr$new(): a local directory (created
# when absent), a web server or S3.
store_for_location <- function(location, read_only = NULL, protocol = NULL, ...) {
  if (!is.character(location) || length(location) != 1L || is.na(location) || !nzchar(location))
    zarr_abort("argument", "store must be a zarr_store, a single location string or NULL")
  if (is.null(protocol))
    protocol <- if (is_s3_url(location)) "s3" else if (is_azure_url(location)) "azure" else if (grepl("^https?://", location, ignore.case = TRUE)) "http" else "local"
  protocol <- match.arg(protocol, c("local", "http", "s3", "azure"))
  if (is.null(read_only)) read_only <- protocol != "local"
  check_read_only(read_only)
  switch(protocol,
    local = zarr_localstore$new(sub("^file://", "", location), read_only = isTRUE(read_only)),
    http = zarr_httpstore$new(location),
    azure = azure_store_for_url(location, read_only = isTRUE(read_only), ...),
    s3 = {
      if (is_s3_url(location)) {
        u <- s3_parse_url(location)
        zarr_s3store$new(u$bucket, u$prefix, read_only = isTRUE(read_only), ...)
      } else { # an S3-compatible service at https://host/bucket/prefix
        m <- regmatches(location, regexec("^(https?://[^/]+)/([^/]+)/?(.*)$", location))[[1L]]
        if (!length(m)) zarr_abort("argument", sprintf("'%s' is not an S3 location", location))
        zarr_s3store$new(m[3L], sub("/$", "", m[4L]), endpoint = m[2L], read_only = isTRUE(read_only), ...)
      }
    })
}
