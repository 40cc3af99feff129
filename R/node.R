#' Zarr hierarchy nodes
#'
#' The common ancestor of [zarr_group] and [zarr_array]: a named node in the
#' hierarchy with a parent, a store, a metadata document and attributes.
#'
#' @seealso [zarr_group], [zarr_array], [zarr_object]
#' @examples
#' z <- as_zarr(1:3, name = "v")
#' n <- z[["/v"]]
#' n$name
#' n$path
#' n$parent
#' @export
zarr_node <- R6::R6Class("zarr_node",
  inherit = zarr_object,
  cloneable = FALSE,
  public = list(
    #' @description Initialize a node.
    #' @param name The name of the node ("" for a root node).
    #' @param metadata List with the metadata of the node.
    #' @param parent The parent group; for a root node missing, `NULL` or
    #'   the [zarr] object that holds it.
    #' @param store The store (ignored when a parent is given).
    initialize = function(name, metadata, parent, store) {
      if (!missing(parent) && inherits(parent, "zarr")) {
        # the 1.0.0 form of a root node: its parent is the zarr object
        private$.zarr <- parent
        store <- parent$store
        parent <- NULL
        name <- ""
      }
      if (!identical(name, "")) check_node_name(name)
      private$.name <- name
      private$.metadata <- node_metadata(metadata)
      if (missing(parent) || is.null(parent)) {
        if (missing(store) || !inherits(store, "zarr_store"))
          zarr_abort("argument", "a root node needs a zarr_store")
        private$.store <- store
      } else {
        private$.parent <- parent
        private$.store <- parent$store
      }
    },

    #' @description Print the attributes of the node that
    #'   `display_attributes()` gives (all of them unless a descendant class
    #'   hides some).
    #' @param ... `width` sets the maximum width of the value column; `dirty`
    #'   marks the title when there are unsaved changes.
    print_attributes = function(...) {
      attrs <- private$display_attributes()
      if (!length(attrs)) return(invisible(self))
      args <- list(...)
      title <- if (isTRUE(args[["dirty"]] %||% private$.dirty)) "Attributes (*)" else "Attributes"
      if (use_cli()) {
        print_attribute_block(attrs, title)
        return(invisible(self))
      }
      width <- args[["width"]] %||% max(20L, getOption("width", 80L) - 24L)
      cat(title, ":\n", sep = "")
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
    #'   digits, underscores and hyphens ("encoding-type", as anndata names
    #'   its attributes), at most 255 characters; a convention's prefix
    #'   may come first ("proj:code"). A path ("a/b/c", numbers indexing JSON
    #'   arrays from 1) sets a member of an object attribute, creating the
    #'   objects on the way.
    #' @param value The value: a string, number, logical, a vector of these,
    #'   or a (named) list.
    #' @return Self, invisibly.
    set_attribute = function(name, value) {
      if (!is.character(name) || length(name) != 1L || is.na(name))
        zarr_abort("argument", sprintf("invalid attribute name '%s'", paste(name, collapse = " ")))
      self$set_attributes(stats::setNames(list(value), name))
    },

    #' @description Set several attributes at once, written in one update of
    #'   the metadata. Every name is checked before any is set.
    #' @param values A named list: names as for `set_attribute()`, each
    #'   element the value of that attribute.
    #' @return Self, invisibly.
    set_attributes = function(values) {
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
      if (!is.list(values) || (length(values) && (is.null(names(values)) || anyNA(names(values)))))
        zarr_abort("argument", "set_attributes() takes a named list of attribute values")
      paths <- lapply(names(values), function(name) {
        path <- attr_path(name)
        for (p in path[!grepl("^[0-9]+$", path)])
          if (!nzchar(name) || nchar(p, type = "bytes") > 255L || !grepl("^[A-Za-z_][A-Za-z0-9_-]*(:[A-Za-z_][A-Za-z0-9_-]*)*\\z", p, perl = TRUE))
            zarr_abort("argument", sprintf("invalid attribute name '%s'", name))
        path
      })
      attrs <- private$.metadata[["attributes"]] %||% named_list()
      for (i in seq_along(values)) attrs <- attr_set(attrs, paths[[i]], values[[i]])
      private$.metadata[["attributes"]] <- attrs
      private$autosave(attributes_only = TRUE)
      invisible(self)
    },

    #' @description Delete attributes; names that are not present are ignored.
    #' @param name Character vector of attribute names.
    #' @return Self, invisibly.
    delete_attributes = function(name) {
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
      attrs <- private$.metadata[["attributes"]]
      if (is.null(attrs)) return(invisible(self))
      keep <- !names(attrs) %in% name
      if (all(keep)) return(invisible(self))
      attrs <- attrs[keep]
      if (!length(attrs)) attrs <- named_list()
      private$.metadata[["attributes"]] <- attrs
      private$autosave(attributes_only = TRUE)
      invisible(self)
    },

    #' @description Write the metadata document of the node to the store.
    #' @return Self, invisibly.
    save = function() {
      private$write_metadata(FALSE)
      invisible(self)
    },

    # ---- the 1.0.0 node API: paths, attribute paths, post_open
    #' @description Run after the node is opened, once the nodes it may
    #'   refer to can be reached. Called for nodes that a registered domain
    #'   builds; a no-op here, for descendant classes to override.
    #' @return Self, invisibly.
    post_open = function() invisible(self),

    #' @description The relative path from this node to another one.
    #' @param to A [zarr_node] or an absolute path.
    #' @return A path such as `"../b/c"`, or `"."` for this node itself.
    relative_path = function(to) {
      if (inherits(to, "zarr_node")) to <- to$path
      if (!is.character(to) || length(to) != 1L || is.na(to))
        zarr_abort("argument", "'to' must be a node or a single path")
      tp <- path_parts(to)
      if (any(tp %in% c(".", ".."))) zarr_abort("argument", sprintf("'%s' is not an absolute path", to))
      fp <- path_parts(self$path)
      n <- min(length(fp), length(tp))
      k <- 0L
      while (k < n && fp[k + 1L] == tp[k + 1L]) k <- k + 1L
      parts <- c(rep("..", length(fp) - k), tp[seq_len(length(tp) - k) + k])
      if (length(parts)) paste(parts, collapse = "/") else "."
    },

    #' @description The absolute path of a path relative to this node.
    #' @param dest A relative path ("." and ".." parts allowed).
    #' @return The absolute path, starting with "/".
    absolute_path = function(dest) {
      if (!is.character(dest) || length(dest) != 1L || is.na(dest))
        zarr_abort("argument", "'dest' must be a single path")
      parts <- path_parts(self$path)
      for (p in strsplit(dest, "/", fixed = TRUE)[[1L]]) {
        if (p == "..") parts <- parts[-length(parts)]
        else if (nzchar(p) && p != ".") parts <- c(parts, p)
      }
      paste0("/", paste(parts, collapse = "/"))
    },

    #' @description Walk the hierarchy from this node by node names.
    #' @param node_names Character vector: ".." for the parent, else the name
    #'   of a child, one step per element.
    #' @return The node reached; an error of class `zarr_error_not_found`
    #'   when a step leads nowhere.
    walk_path = function(node_names) {
      node <- self
      for (p in node_names[nzchar(node_names) & node_names != "."]) {
        nxt <- if (p == "..") node$parent
               else if (inherits(node, "zarr_group")) node$open_child(p)
        if (is.null(nxt))
          zarr_abort("not_found", sprintf("no node '%s' from '%s'", paste(node_names, collapse = "/"), self$path))
        node <- nxt
      }
      node
    },

    #' @description Get an attribute by name or path (`"a/b"`, with numeric
    #'   segments indexing JSON arrays from 1).
    #' @param name The name or path.
    #' @return The value, or `NULL` when there is none.
    attribute = function(name) json_unliteral(attr_get(private$.metadata[["attributes"]], name)),

    #' @description Append a value to an attribute that is a JSON array
    #'   (creating it), and save the metadata when the store is writable.
    #' @param name The name or path of the attribute.
    #' @param value The value to append.
    #' @param after Position after which to insert; `NULL` appends at the end.
    #' @return Self, invisibly.
    append_array_attribute = function(name, value, after = NULL) {
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
      private$.metadata[["attributes"]] <- attr_append(private$.metadata[["attributes"]] %||% named_list(),
                                                  name, value, after)
      private$autosave(attributes_only = TRUE)
      invisible(self)
    },

    #' @description Delete an attribute, a member of an object attribute or
    #'   an element of an array attribute given by a path; absent ones are
    #'   ignored.
    #' @param name The name or path.
    #' @return Self, invisibly.
    delete_attribute = function(name) {
      if (!grepl("/", name, fixed = TRUE)) return(self$delete_attributes(name))
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only")
      attrs <- private$.metadata[["attributes"]]
      if (is.null(attrs)) return(invisible(self))
      new <- attr_delete(attrs, name)
      if (identical(new, attrs)) return(invisible(self))
      private$.metadata[["attributes"]] <- if (length(new)) new else named_list()
      private$autosave(attributes_only = TRUE)
      invisible(self)
    }
  ),
  active = list(
    #' @field name (read-only) The name of the node.
    name = function(value) {
      if (!missing(value)) zarr_abort("read_only", "name is read-only")
      private$.name
    },
    #' @field zarr (read-only) The [zarr] object that holds the hierarchy,
    #'   `NULL` for nodes made outside one.
    zarr = function(value) {
      if (!missing(value)) zarr_abort("read_only", "zarr is read-only")
      if (is.null(private$.parent)) private$.zarr else private$.parent$zarr
    },
    #' @field dirty Whether the metadata has changes not yet written;
    #'   setting `TRUE` makes the next `save()` write it.
    dirty = function(value) {
      if (missing(value)) return(private$.dirty)
      if (!is.logical(value) || length(value) != 1L || is.na(value))
        zarr_abort("argument", "dirty must be TRUE or FALSE")
      private$.dirty <- value
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
      # (name and parent never change: the prefix is worked out once)
      if (is.null(private$.parent)) return("")
      private$.prefix %||% (private$.prefix <- paste0(private$.parent$prefix, private$.name, "/"))
    },
    #' @field metadata The metadata document, a list. Setting a list that does
    #'   not describe this node makes it invalid.
    metadata = function(value) {
      if (missing(value)) return(private$.metadata)
      if (!is.list(value)) zarr_abort("argument", "metadata must be a list")
      private$.metadata <- node_metadata(value)
      private$.dirty <- TRUE
      private$metadata_changed()
    },
    #' @field attributes (read-only) The attributes, as a named list.
    attributes = function(value) {
      if (!missing(value)) zarr_abort("read_only", "use set_attribute() and delete_attributes()")
      json_unliteral(private$.metadata[["attributes"]] %||% named_list())
    }
  ),
  private = list(
    .name = "", .parent = NULL, .store = NULL, .metadata = NULL, .zarr = NULL, .dirty = FALSE, .prefix = NULL,
    # for descendant classes (domain packages): the domain that manages the
    # node, the glyph drawn for it, the extra lines printed and the
    # attributes shown
    .domain = "", .glyph = "#",
    print_details = function(...) invisible(NULL),
    display_attributes = function() private$.metadata[["attributes"]],
    autosave = function(attributes_only = FALSE) {
      if (!private$.store$read_only) private$write_metadata(attributes_only)
    },
    # The node's documents (v2: only .zattrs when only attributes changed),
    # then its entry of the consolidated copy, if there is one.
    write_metadata = function(attributes_only) {
      v2 <- identical(as.integer(private$.metadata[["zarr_format"]]), 2L)
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
      private$.dirty <- FALSE
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

path_parts <- function(p) {
  parts <- strsplit(p, "/", fixed = TRUE)[[1L]]
  parts[nzchar(parts)]
}

# Node metadata as R users (and code written for zarr 1.0.0) see it: JSON
# arrays of scalars are vectors, in the attributes and in the shape, the
# dimension names and the chunk shape. json_prepare_metadata() writes them
# back as arrays.
node_metadata <- function(m) {
  if (!is.list(m) || isTRUE(attr(m, "zarr_broken"))) return(m)
  # A pure function of the value, asked twice per node opened (by
  # build_node() and the node's constructor) and again for each reopen of
  # a document the document cache hands out as the same list: the last few
  # results are kept (identical() of the same list is a pointer test).
  memo <- node_metadata_memo
  for (i in seq_along(memo$inputs)) if (identical(memo$inputs[[i]], m)) return(memo$outputs[[i]])
  out <- node_metadata_normal(m)
  keep <- seq_len(min(length(memo$inputs), node_metadata_memo_max - 2L))
  memo$inputs <- c(list(m, out), memo$inputs[keep])
  memo$outputs <- c(list(out, out), memo$outputs[keep])
  out
}
node_metadata_memo <- new.env(parent = emptyenv())
node_metadata_memo_max <- 8L

node_metadata_normal <- function(m) {
  for (f in c("shape", "dimension_names"))
    if (is.list(m[[f]])) m[[f]] <- json_simplify(m[[f]])
  cs <- m[["chunk_grid"]][["configuration"]][["chunk_shape"]]
  if (is.list(cs)) m[["chunk_grid"]][["configuration"]][["chunk_shape"]] <- json_simplify(cs)
  if (is.list(m[["attributes"]]) && length(m[["attributes"]])) m[["attributes"]] <- json_simplify(m[["attributes"]], literal = TRUE)
  m
}
