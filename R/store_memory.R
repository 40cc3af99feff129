#' In-memory store
#'
#' A Zarr store held in R's memory, in an environment keyed by store key.
#' Nothing is persisted: the data are gone when the store is garbage
#' collected.
#'
#' @seealso [zarr_store], [create_zarr()]
#' @examples
#' z <- create_zarr() # no location: a memory store
#' z$store
#' z$root$add_array("v", define_array("float64", 3))
#' z$store$list()
#' @export
zarr_memorystore <- R6::R6Class("zarr_memorystore",
  inherit = zarr_store,
  cloneable = FALSE,
  public = list(
    #' @description Create an empty memory store.
    #' @return An instance of this class.
    initialize = function() {
      super$initialize(FALSE, zarr_default_format())
      private$.data <- new.env(hash = TRUE, parent = emptyenv())
      private$.separator <- "."
    },

    #' @description Print a summary of the store.
    print = function() {
      cat(sprintf("<Zarr memory store> %d keys\n", length(self$keys)))
      invisible(self)
    },

    #' @description Whether a key exists.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) {
      check_key(key)
      exists(key, envir = private$.data, inherits = FALSE)
    },

    #' @description Remove all keys and values, the root metadata included.
    #' @return `TRUE`, invisibly.
    clear = function() {
      private$check_writable()
      cache_forget(self, prefix = "")
      rm(list = ls(private$.data, all.names = TRUE), envir = private$.data)
      invisible(TRUE)
    },

    #' @description Remove a key; for a node prefix, everything below it.
    #' @param key The key.
    #' @return `TRUE`, invisibly.
    erase = function(key) {
      cache_forget(self, key, prefix = node_prefix(key))
      if (self$exists(key)) rm(list = key, envir = private$.data)
      below <- self$list_prefix(node_prefix(key))
      if (length(below) && nzchar(key)) rm(list = below, envir = private$.data)
      invisible(TRUE)
    },

    #' @description Remove every key below a prefix.
    #' @param prefix The prefix.
    #' @return `TRUE`, invisibly.
    erase_prefix = function(prefix) {
      prefix <- node_prefix(prefix)
      was_group <- self$is_group(prefix)
      cache_forget(self, prefix = prefix)
      keys <- self$list_prefix(prefix)
      if (length(keys)) rm(list = keys, envir = private$.data)
      if (was_group) self$set_metadata(prefix, list(zarr_format = self$version, node_type = "group",
                                                    attributes = named_list()))
      invisible(TRUE)
    },

    #' @description The names directly below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector.
    list_dir = function(prefix) {
      prefix <- node_prefix(prefix)
      keys <- self$list_prefix(prefix)
      rest <- substring(keys, nchar(prefix) + 1L)
      unique(sub("/.*$", "", rest))
    },

    #' @description All keys below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) {
      prefix <- node_prefix(prefix)
      # only the keys below are sorted: creating each node of a large store
      # lists its prefix, and sorting every key each time took most of it
      keys <- ls(private$.data, all.names = TRUE, sorted = FALSE)
      sort(keys[startsWith(keys, prefix)])
    },

    #' @description Store a value.
    #' @param key The key.
    #' @param value A raw vector.
    #' @return Self, invisibly.
    set = function(key, value) {
      check_key(key)
      if (!is.raw(value)) zarr_abort("value", "store values must be raw vectors", key = key)
      assign(key, value, envir = private$.data)
      cache_forget(self, key)
      invisible(self)
    },

    #' @description Retrieve a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range See [zarr_store].
    #' @return A raw vector, or `NULL` when the key does not exist.
    get = function(key, prototype = NULL, byte_range = NULL) {
      check_key(key)
      v <- private$.data[[key]]
      if (is.null(v) || is.null(byte_range)) return(v)
      rng <- resolve_byte_range(byte_range, length(v), key)
      v[seq.int(rng[1L] + 1, rng[2L])]
    },

    #' @description How the C engine reaches this store: one call for all keys.
    #' @return A list.
    io_spec = function() {
      if (is.null(private$.io)) {
        env <- private$.data
        private$.io <- store_io_r(
          get = function(keys) unname(mget(keys, envir = env, ifnotfound = list(NULL))),
          set = function(key, value) assign(key, value, envir = env),
          erase = function(key) if (exists(key, envir = env, inherits = FALSE)) rm(list = key, envir = env))
      }
      private$.io
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Memory store",
    #' @field separator (read-only) Chunk key separator for new arrays: ".".
    separator = function(value) private$.separator,
    #' @field keys (read-only) All keys in the store.
    keys = function(value) sort(ls(private$.data, all.names = TRUE))
  ),
  private = list(.data = NULL, .io = NULL)
)
