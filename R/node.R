#' Zarr hierarchy nodes
#'
#' The common ancestor of [zarr_group] and [zarr_array]: a named node in the
#' hierarchy with a parent, a store, a metadata document and attributes.
#'
#' @export
zarr_node <- R6::R6Class("zarr_node",
  cloneable = FALSE,
  public = list(
    #' @description Initialize a node.
    #' @param name The name of the node ("" for a root node).
    #' @param metadata List with the metadata of the node.
    #' @param parent The parent group, missing or `NULL` for a root node.
    #' @param store The store (ignored when a parent is given).
    initialize = function(name, metadata, parent, store) {
      if (!identical(name, "")) check_node_name(name)
      private$.name <- name
      private$.metadata <- metadata
      if (missing(parent) || is.null(parent)) {
        if (missing(store) || !inherits(store, "zarr_store"))
          zarr_abort("argument", "a root node needs a zarr_store")
        private$.store <- store
      } else {
        private$.parent <- parent
        private$.store <- parent$store
      }
    },

    #' @description Print the attributes of the node.
    #' @param ... `width` sets the maximum width of the value column.
    print_attributes = function(...) {
      attrs <- self$attributes
      if (!length(attrs)) return(invisible(self))
      args <- list(...)
      width <- args$width %||% max(20L, getOption("width", 80L) - 24L)
      cat("Attributes:\n")
      nm <- names(attrs)
      w <- max(nchar(nm))
      for (i in seq_along(attrs)) {
        txt <- attribute_text(attrs[[i]], width)
        if (nchar(txt) > width) txt <- paste0(substr(txt, 1L, width - 3L), "...")
        cat(sprintf("  %-*s : %s\n", w, nm[i], txt))
      }
      invisible(self)
    },

    #' @description Set an attribute (and save the metadata when the store is
    #'   writable).
    #' @param name The attribute name: a letter or underscore, then letters,
    #'   digits and underscores, at most 255 characters.
    #' @param value The value: a string, number, logical, a vector of these,
    #'   or a (named) list.
    #' @return Self, invisibly.
    set_attribute = function(name, value) {
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
      if (!is.character(name) || length(name) != 1L || is.na(name) ||
          nchar(name, type = "bytes") > 255L || !grepl("^[A-Za-z_][A-Za-z0-9_]*\\z", name, perl = TRUE))
        zarr_abort("argument", sprintf("invalid attribute name '%s'", paste(name, collapse = " ")))
      attrs <- private$.metadata$attributes %||% named_list()
      attrs[name] <- list(value)
      private$.metadata$attributes <- attrs
      private$autosave(attributes_only = TRUE)
      invisible(self)
    },

    #' @description Delete attributes; names that are not present are ignored.
    #' @param name Character vector of attribute names.
    #' @return Self, invisibly.
    delete_attributes = function(name) {
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
      attrs <- private$.metadata$attributes
      if (is.null(attrs)) return(invisible(self))
      keep <- !names(attrs) %in% name
      if (all(keep)) return(invisible(self))
      attrs <- attrs[keep]
      if (!length(attrs)) attrs <- named_list()
      private$.metadata$attributes <- attrs
      private$autosave(attributes_only = TRUE)
      invisible(self)
    },

    #' @description Write the metadata document of the node to the store.
    #' @return Self, invisibly.
    save = function() {
      private$write_metadata(FALSE)
      invisible(self)
    }
  ),
  active = list(
    #' @field name (read-only) The name of the node.
    name = function(value) {
      if (!missing(value)) zarr_abort("read_only", "name is read-only")
      private$.name
    },
    #' @field parent (read-only) The parent group, `NULL` for the root.
    parent = function(value) {
      if (!missing(value)) zarr_abort("read_only", "parent is read-only")
      private$.parent
    },
    #' @field store (read-only) The store of the node.
    store = function(value) {
      if (!missing(value)) zarr_abort("read_only", "store is read-only")
      private$.store
    },
    #' @field path (read-only) The path of the node, "/" for the root.
    path = function(value) {
      if (!missing(value)) zarr_abort("read_only", "path is read-only")
      if (is.null(private$.parent)) return("/")
      pp <- private$.parent$path
      paste0(if (pp == "/") "" else pp, "/", private$.name)
    },
    #' @field prefix (read-only) The store prefix of the node ("" for the root).
    prefix = function(value) {
      if (!missing(value)) zarr_abort("read_only", "prefix is read-only")
      node_prefix(self$path)
    },
    #' @field metadata The metadata document, a list. Setting a list that does
    #'   not describe this node makes it invalid.
    metadata = function(value) {
      if (missing(value)) return(private$.metadata)
      if (!is.list(value)) zarr_abort("argument", "metadata must be a list")
      private$.metadata <- value
      private$metadata_changed()
    },
    #' @field attributes (read-only) The attributes, as a named list.
    attributes = function(value) {
      if (!missing(value)) zarr_abort("read_only", "use set_attribute() and delete_attributes()")
      json_simplify(private$.metadata$attributes %||% named_list())
    }
  ),
  private = list(
    .name = "", .parent = NULL, .store = NULL, .metadata = NULL,
    autosave = function(attributes_only = FALSE) {
      if (!private$.store$read_only) private$write_metadata(attributes_only)
    },
    # The node's documents (v2: only .zattrs when only attributes changed),
    # then its entry of the consolidated copy, if there is one.
    write_metadata = function(attributes_only) {
      v2 <- identical(as.integer(private$.metadata$zarr_format), 2L)
      # a v3 root with consolidated metadata is written once, with the copy
      v3_root <- !v2 && is.null(private$.parent) && consolidated_active(self)
      if (v2 && attributes_only) {
        if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
        v2_set_metadata(private$.store, self$prefix, private$.metadata, only = ".zattrs")
      } else if (!v3_root) {
        private$.store$set_metadata(self$prefix, private$.metadata)
      }
      # a no-op unless the hierarchy has consolidated metadata
      update_consolidated(self)
    },
    metadata_changed = function() invisible(NULL)
  )
)

# The start of an attribute value as one line of text; long values are cut
# before they are formatted (a text of megabytes would take minutes).
attribute_text <- function(v, width) {
  clip <- function(s) {
    s <- utils::head(s, width)
    long <- which(nchar(s, type = "bytes", allowNA = TRUE) > width)
    if (length(long)) s[long] <- substr(s[long], 1L, width + 1L)
    s
  }
  if (is.atomic(v) && !is.null(v)) {
    v <- utils::head(v, width)
    if (is.character(v)) v <- clip(v)
    return(paste(format(v), collapse = ", "))
  }
  v <- rapply(list(v), clip, classes = "character", how = "replace")[[1L]]
  txt <- json_write(json_prepare(v), pretty = FALSE)
  gsub("\\s+", " ", substr(txt, 1L, 4L * width))
}
