#' Zarr groups
#'
#' A group is a node that contains other groups and arrays. Its children are
#' discovered from the store the first time they are needed (from consolidated
#' metadata when the store has it, otherwise by listing).
#'
#' @seealso [zarr_array], [zarr] (the whole hierarchy), [define_array()],
#'   [zarr_node]
#' @examples
#' z <- create_zarr()
#' g <- z$root$add_group("obs")
#' g$add_array("age", define_array("int32", 10))
#' g
#' names(g$children)
#' z[["/obs/age"]]$shape
#' @export
zarr_group <- R6::R6Class("zarr_group",
  inherit = zarr_node,
  cloneable = FALSE,
  public = list(
    #' @description Open a group, or create it. In the 0.3.0 form
    #'   (`name, metadata, parent, store`) the group exists in the store. In
    #'   the form of zarr 1.0.0 (`name, metadata, parent`, no store) `parent`
    #'   is a [zarr_group] or, for the root group, the [zarr] object; the
    #'   group is created in the store when it is not there yet (with
    #'   `metadata`, when given) and becomes a child of `parent` (or the root
    #'   of the `zarr` object).
    #' @param name The name of the group ("" for the root group).
    #' @param metadata List with the metadata of the group; may be missing in
    #'   the 1.0.0 form.
    #' @param parent The parent group, missing or `NULL` for the root, or the
    #'   [zarr] object.
    #' @param store The store (for a root group in the 0.3.0 form).
    #' @return An instance of this class.
    initialize = function(name, metadata, parent, store) {
      if (missing(parent)) parent <- NULL
      if (!missing(store) || is.null(parent) || node_opening()) {
        super$initialize(name, metadata, parent, store)
        return(invisible(self))
      }
      # the 1.0.0 form
      if (inherits(parent, "zarr")) name <- ""
      if (!missing(metadata) && !is.null(metadata) &&
          (!is.list(metadata) || !identical(metadata[["node_type"]], "group")))
        zarr_abort("metadata", "the metadata does not describe a group")
      st <- parent$store
      prefix <- if (inherits(parent, "zarr")) "" else paste0(parent$prefix, name, "/")
      existing <- if (nzchar(prefix)) parent$open_child(name) else st$get_metadata("")
      if (inherits(existing, "zarr_node")) existing <- existing$metadata
      created <- is.null(existing)
      if (created) {
        fmt <- if (inherits(parent, "zarr_group")) parent$metadata[["zarr_format"]] else NULL
        existing <- st$create_group(if (inherits(parent, "zarr")) "/" else parent$path, name,
                                    fmt %||% st$version)
      }
      if (missing(metadata) || is.null(metadata)) metadata <- existing
      super$initialize(name, metadata, parent)
      if (created && length(metadata[["attributes"]])) self$save()
      if (inherits(parent, "zarr")) parent$root <- self
      else {
        parent$set_node(self)
        if (created) update_consolidated(self)
      }
    },

    # ---- 1.0.0 API: attaching nodes, the consolidated copy of a root group
    #' @description Make a node a child of this group, in place of a child
    #'   of the same name that this object knows (the store is not changed).
    #' @param node A [zarr_group] or [zarr_array] whose parent is this group.
    #' @return Self, invisibly.
    set_node = function(node) {
      if (!inherits(node, "zarr_node") || !identical(node$parent, self))
        zarr_abort("argument", "set_node() takes a node whose parent is this group")
      private$.children[[node$name]] <- node
      invisible(self)
    },

    #' @description Internal: the consolidated metadata a root group keeps
    #'   (its map of node metadata and their formatted JSON) and the group's
    #'   own metadata document. Arguments given replace the values.
    #' @param map,text,metadata New values.
    #' @return A list with `map`, `text` and `metadata`, invisibly.
    consolidated_state = function(map, text, metadata) {
      if (!missing(map)) private$.consolidated <- map
      if (!missing(text)) private$.consolidated_text <- text
      if (!missing(metadata)) private$.metadata <- metadata
      invisible(list(map = private$.consolidated, text = private$.consolidated_text,
                     metadata = private$.metadata))
    },

    #' @description Print a summary of the group.
    print = function() {
      kids <- self$children
      n_g <- sum(vapply(kids, inherits, TRUE, "zarr_group"))
      lab <- c(if (nzchar(private$.domain)) "Domain", "Children")
      # a store that cannot list (HTTP without consolidated metadata) knows only
      # the children opened by path: say so rather than count them as all
      listed <- private$.store$supports_listing || !is.null(consolidated_map(self))
      n <- sprintf("%d group(s), %d array(s)", n_g, length(kids) - n_g)
      if (!listed) n <- sprintf("unknown (the store cannot list keys; %s opened by path)", n)
      val <- c(if (nzchar(private$.domain)) private$.domain, n)
      if (use_cli()) print_lines(paste("<Zarr group>", self$path), lab, val)
      else {
        cat("<Zarr group>", self$path, "\n")
        cat(sprintf("%s: %s\n", lab, val), sep = "")
      }
      private$print_details()
      self$print_attributes()
      invisible(self)
    },

    #' @description Print the hierarchy below this group as a tree.
    #' @param idx,total Position of this group among its siblings; both 1 when
    #'   called interactively.
    hierarchy = function(idx = 1L, total = 1L) {
      cat(tree_lines(self), sep = "\n")
      invisible(self)
    },

    #' @description Discover the children of this group in the store (done
    #'   automatically when they are first needed).
    #' @return Self, invisibly.
    build_hierarchy = function() {
      store <- private$.store
      prefix <- self$prefix
      kids <- list()
      names_found <- consolidated_children(self)
      if (is.null(names_found)) names_found <- store$list_dir(prefix)
      # documents and names no node can have (a hostile or foreign entry
      # such as "__x") are skipped: they made the whole hierarchy fail
      names_found <- names_found[is_valid_node_name(names_found)]
      # the first time, children already opened by path are kept as they are
      known <- if (private$.built) list() else private$.children
      for (nm in sort(names_found)) {
        kid <- known[[nm]] %||% private$child_from_store(nm, consolidated_metadata_of(self, nm))
        if (!is.null(kid)) kids[[nm]] <- kid
      }
      # children opened by path in a store that cannot be listed stay known
      kids <- c(kids, private$.children[setdiff(names(private$.children), names(kids))])
      new_kids <- kids[!names(kids) %in% names(private$.children)]
      private$.children <- kids
      private$.built <- TRUE
      for (k in new_kids) run_post_open(k)
      invisible(self)
    },

    #' @description Open a child by name from its metadata in the store, for
    #'   stores whose children cannot be listed (a web server without
    #'   consolidated metadata). `get_node()` and `[[` do this by themselves.
    #' @param name The name of the child.
    #' @return A [zarr_group] or [zarr_array], or `NULL` when there is none.
    open_child = function(name) {
      if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name) ||
          (!isTRUE(node_names_ok[[name]]) && grepl("/", name, fixed = TRUE))) # (a valid name has none)
        return(NULL)
      kid <- private$.children[[name]]
      if (!is.null(kid)) return(kid)
      store <- private$.store
      # the consolidated map is looked up once (the root keeps it)
      map <- if (is.null(private$.parent)) private$.consolidated else consolidated_map(self)
      if (!is.null(map) || store$supports_listing) {
        # as listing would find it: only this child's metadata is read (an
        # invalid name, "." and ".." and documents' names among them, is none)
        if (private$.built || !node_name_ok(name)) return(NULL)
        meta <- NULL
        if (!is.null(map)) {
          meta <- consolidated_metadata_of(self, name)
          if (is.null(meta)) return(NULL)
        }
        kid <- private$child_from_store(name, meta)
      } else {
        meta <- store$get_metadata(paste0(self$prefix, name, "/"))
        if (is.null(meta)) return(NULL)
        kid <- build_node(name, meta, self, store, post_open = FALSE)
      }
      if (!is.null(kid)) {
        private$.children[[name]] <- kid
        # (post_open() is only for nodes that registered domains build)
        if (length(domain_registry$domains)) run_post_open(kid)
      }
      kid
    },

    #' @description Find a node by a path relative to this group. The path
    #'   may start with ".." parts to go up.
    #' @param path The relative path.
    #' @return A [zarr_group] or [zarr_array], or `NULL`.
    get_node = function(path) {
      if (!is.character(path) || length(path) != 1L) return(NULL)
      # a child's name (a name found valid before): `z[["/a"]]`, `g[["x"]]`
      if (!is.na(path) && nzchar(path) && isTRUE(node_names_ok[[path]])) return(self$open_child(path))
      parts <- strsplit(path, "/", fixed = TRUE)[[1L]]
      node <- self
      for (p in parts[nzchar(parts) & parts != "."]) {
        if (p == "..") {
          node <- node$parent
        } else {
          if (!inherits(node, "zarr_group")) return(NULL)
          node <- node$open_child(p) # reads this child only, not its siblings
        }
        if (is.null(node)) return(NULL)
      }
      node
    },

    #' @description Count the arrays in this group.
    #' @param recursive Whether to include arrays in sub-groups.
    #' @return An integer.
    count_arrays = function(recursive = TRUE) {
      kids <- self$children
      n <- sum(vapply(kids, inherits, TRUE, "zarr_array"))
      if (recursive)
        for (k in kids) if (inherits(k, "zarr_group")) n <- n + k$count_arrays(TRUE)
      as.integer(n)
    },

    #' @description Add a group below this group.
    #' @param name The name of the new group.
    #' @return The new [zarr_group].
    add_group = function(name) {
      private$check_new_child(name)
      meta <- private$.store$create_group(self$path, name, private$.metadata[["zarr_format"]])
      node <- build_node(name, meta, self, private$.store)
      private$.children[[name]] <- node
      update_consolidated(node)
      node
    },

    #' @description Add an array below this group.
    #' @param name The name of the new array.
    #' @param metadata The array metadata: a list or an [array_builder].
    #' @return The new [zarr_array].
    add_array = function(name, metadata) private$new_array(name, metadata),

    #' @description Add many arrays below this group at once: what a loop of
    #'   `add_array()` does, except that a store with consolidated metadata
    #'   has its consolidated copy written once at the end (also when an
    #'   error stops the batch, so that it lists the arrays made until then)
    #'   instead of once per array.
    #' @param names The names of the new arrays, a character vector.
    #' @param metadata The metadata of every array (a list or an
    #'   [array_builder]), or a list of them, one per name.
    #' @return The new [zarr_array]s, a list named by `names`, invisibly.
    add_arrays = function(names, metadata) {
      if (!is.character(names) || anyNA(names) || anyDuplicated(names))
        zarr_abort("argument", "the names of the arrays must be distinct strings")
      one <- inherits(metadata, "array_builder") || (is.list(metadata) && !is.null(metadata[["node_type"]]))
      if (!one && (!is.list(metadata) || length(metadata) != length(names)))
        zarr_abort("argument", "give one array definition for all names, or a list of one per name")
      out <- stats::setNames(vector("list", length(names)), names)
      if (consolidated_active(self)) on.exit(consolidated_write(root_of(self)))
      for (i in seq_along(names))
        out[[i]] <- private$new_array(names[[i]], if (one) metadata else metadata[[i]], consolidate = FALSE)
      invisible(out)
    },

    #' @description Delete a child array, or a child group that is empty.
    #'   The node vanishes in one step (its entry in the consolidated
    #'   metadata, then its metadata document, go first); its chunks are
    #'   erased after that. Chunks an interrupted deletion left behind are
    #'   never read, and are erased when a node of the same name is created.
    #' @param name The name of a child, or the path of a node below this
    #'   group ("a/x"; a path starting with "/" starts at the root).
    #' @return Self, invisibly.
    delete = function(name) {
      if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name))
        zarr_abort("argument", "the node to delete is given by a single name or path")
      if (grepl("/", name, fixed = TRUE)) {
        node <- if (startsWith(name, "/")) root_of(self)$get_node(sub("^/+", "", name)) else self$get_node(name)
        if (is.null(node) || is.null(node$parent))
          zarr_abort("not_found", sprintf("'%s' is not a node below group '%s'", name, self$path))
        if (!identical(node$parent, self)) {
          node$parent$delete(node$name)
          return(invisible(self))
        }
        name <- node$name
      }
      node <- self$children[[name]]
      if (is.null(node)) zarr_abort("not_found", sprintf("'%s' is not in group '%s'", name, self$path))
      if (inherits(node, "zarr_group") && length(node$children))
        zarr_abort("not_empty", sprintf("group '%s' is not empty", node$path))
      store <- private$.store
      if (store$read_only) zarr_abort("read_only", "the store is read-only")
      # the node vanishes at once (from the consolidated copy, then its own
      # document); an interruption after that leaves only chunks that no
      # node reads (a new node there erases them)
      update_consolidated(node, removed = TRUE)
      erase_node_documents(store, node$prefix)
      store$erase_prefix(node$prefix)
      store$erase(sub("/$", "", node$prefix))
      private$.children[[name]] <- NULL
      invisible(self)
    },

    #' @description Delete everything below this group, including its
    #'   attributes. The nodes below vanish first (their consolidated
    #'   entries, then their metadata documents), the group stays.
    #' @return Self, invisibly.
    delete_all = function() {
      store <- private$.store
      if (store$read_only) zarr_abort("read_only", "the store is read-only")
      prefix <- self$prefix
      # every node below vanishes at once (from the consolidated copy, then
      # their documents), this group staying; then what they leave is erased
      update_consolidated(self, below = TRUE)
      if (prefix %in% store$linked_prefixes(prefix)) {
        store$erase_prefix(prefix) # the link only, replaced by a folder of its own
      } else {
        erase_node_documents(store, prefix, below = TRUE)
        for (k in setdiff(store$list_dir(prefix), node_documents)) {
          store$erase_prefix(paste0(prefix, k, "/"))
          store$erase(paste0(prefix, k))
        }
      }
      private$.metadata <- list(zarr_format = private$.metadata[["zarr_format"]] %||% 3L,
                                node_type = "group", attributes = named_list())
      private$.children <- list()
      private$.built <- TRUE
      self$save()
      invisible(self)
    }
  ),
  active = list(
    #' @field children (read-only) The child groups and arrays, a named list.
    children = function(value) {
      if (!missing(value)) zarr_abort("read_only", "children is read-only")
      if (!private$.built) self$build_hierarchy()
      private$.children
    },
    #' @field groups (read-only) Paths of all groups from this group down.
    groups = function(value) {
      out <- self$path
      for (k in self$children) if (inherits(k, "zarr_group")) out <- c(out, k$groups)
      out
    },
    #' @field arrays (read-only) Paths of all arrays from this group down.
    arrays = function(value) {
      out <- character()
      for (k in self$children) {
        if (inherits(k, "zarr_array")) out <- c(out, k$path)
        else out <- c(out, k$arrays)
      }
      out
    }
  ),
  private = list(
    .children = list(), .built = FALSE, .consolidated = NULL, .consolidated_text = NULL,
    # add_array(); `consolidate = FALSE` leaves the consolidated copy to be
    # written by the caller (add_arrays(): once for the batch)
    new_array = function(name, metadata, consolidate = TRUE) {
      private$check_new_child(name)
      # an array takes the format of its group unless its builder sets one
      fmt <- as.integer(private$.metadata[["zarr_format"]] %||% 3L)
      explicit <- TRUE
      if (inherits(metadata, "array_builder")) {
        explicit <- metadata$is_set("format")
        metadata <- metadata$metadata()
      }
      if (!identical(as.integer(metadata[["zarr_format"]] %||% 3L), fmt)) {
        if (explicit)
          zarr_abort("format", sprintf(
            "a Zarr v%d array cannot be added to the Zarr v%d group '%s'; create the store with options(zarr.format = %d)",
            as.integer(metadata[["zarr_format"]] %||% 3L), fmt, self$path, as.integer(metadata[["zarr_format"]] %||% 3L)))
        metadata[["zarr_format"]] <- fmt
        metadata[["chunk_key_encoding"]] <- NULL
      }
      meta <- private$.store$create_array(self$path, name, metadata)
      node <- build_node(name, new_node_metadata(meta), self, private$.store)
      private$.children[[name]] <- node
      update_consolidated(node, write = consolidate)
      node
    },

    # A child about to be added must not exist: one known here (opened, or in
    # the consolidated copy) is refused now; the store looks at its own
    # content once when it creates the node (zarr_store's new_node_prefix()).
    check_new_child = function(name) {
      check_node_name(name)
      # (the consolidated map by its names: its index is rebuilt after each
      # change, which a batch of creates makes once per array)
      map <- if (is.null(private$.children[[name]])) consolidated_map(self)
      if (!is.null(private$.children[[name]]) || paste0(self$prefix, name) %in% names(map))
        zarr_abort("exists", sprintf("'%s' already exists in group '%s'", name, self$path))
    },
    # A child from its metadata (consolidated, when given, or in the store),
    # NULL when there is none; metadata that cannot be understood hides only
    # that node: it opens as an array whose use raises the error. One
    # condition handler for reading and building (a broken node is rare;
    # handlers cost more than the rest of opening a node).
    child_from_store = function(nm, meta = NULL) {
      store <- private$.store
      reading <- is.null(meta)
      in_domain <- node_build$in_domain
      tryCatch({
        if (reading) {
          meta <- store$get_metadata(paste0(self$prefix, nm, "/"))
          reading <- FALSE
        }
        if (!is.null(meta)) build_node(nm, meta, self, store, post_open = FALSE, guarded = TRUE)
      }, error = function(e) {
        # a domain's refusal is raised
        if (domain_failed(in_domain)) stop(as_domain_error(e))
        if (reading) {
          if (inherits(e, "zarr_error_key")) return(NULL)
          prefix <- self$prefix
          return(broken_node(nm, as_metadata_error(e, paste0(prefix_path(prefix), if (nzchar(prefix)) "/", nm)),
                             self, store))
        }
        if (inherits(e, "zarr_domain_error")) stop(e) # (from a node a domain opened)
        broken_node(nm, as_metadata_error(e), self, store)
      })
    }
  )
)

node_documents <- c("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")

# Erase the metadata documents of the node at `prefix` (with `below`, of the
# nodes below it instead): the documents that make a node exist go first, so
# each node vanishes in one step.
# Documents behind a link to a folder elsewhere are not this store's to erase:
# the link goes (with erase_prefix()), what it points to stays.
erase_node_documents <- function(store, prefix, below = FALSE) {
  links <- store$linked_prefixes(prefix)
  if (prefix %in% links) return(invisible())
  if (below) {
    keys <- store$list_prefix(prefix)
    docs <- keys[basename(keys) %in% node_documents]
    docs <- docs[dirname(docs) != sub("/$", "", if (nzchar(prefix)) prefix else ".")]
    for (l in links) docs <- docs[!startsWith(docs, l)]
  } else {
    docs <- paste0(prefix, node_documents)
  }
  defining <- basename(docs) %in% c("zarr.json", ".zarray", ".zgroup")
  store_erase_keys(store, c(docs[defining], docs[!defining]))
}

# A tree drawing of the hierarchy, one line per node.
tree_lines <- function(node, lead = "", last = TRUE, top = TRUE) {
  label <- if (top) node$path else node$name
  if (inherits(node, "zarr_array")) {
    dt <- if (is.null(node$data_type)) "(unreadable)" else node$data_type$data_type
    label <- sprintf("%s  %s %s", label, dt,
                     if (is.null(node$shape)) "[?]" else paste0("[", paste(format_dims(node$shape), collapse = " x "), "]"))
  }
  line <- if (top) label else paste0(lead, if (last) "\u2514\u2500 " else "\u251c\u2500 ", label)
  if (!inherits(node, "zarr_group")) return(line)
  kids <- node$children
  sub_lead <- if (top) "" else paste0(lead, if (last) "   " else "\u2502  ")
  out <- line
  for (i in seq_along(kids))
    out <- c(out, tree_lines(kids[[i]], sub_lead, i == length(kids), FALSE))
  out
}

format_dims <- function(x) format(x, scientific = FALSE, trim = TRUE, big.mark = "")

#' @rdname zarr_group
#' @param object A `zarr_group`.
#' @param ... Ignored.
#' @export
str.zarr_group <- function(object, ...) {
  kids <- object$children
  n_g <- sum(vapply(kids, inherits, TRUE, "zarr_group"))
  cat(sprintf("Zarr group '%s': %d group(s), %d array(s), %d attribute(s)\n", object$path, n_g,
              length(kids) - n_g, length(object$metadata[["attributes"]])))
  invisible(NULL)
}

# A node whose metadata could not be read: an array that raises `err` when used.
broken_node <- function(name, err, parent, store) {
  meta <- structure(list(node_type = "array"), zarr_broken = TRUE, zarr_problem = err)
  with_node_opening(zarr_array$new(name, meta, parent, store))
}
