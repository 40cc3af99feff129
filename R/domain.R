#' Zarr domains
#'
#' A domain interprets the attributes of groups and arrays for some field of
#' application and may return its own (descendant) group and array classes for
#' the nodes it recognises. Register a domain with [zarr_register_domain()];
#' when a store is opened, every node is offered to the registered domains
#' first, and nodes that no domain takes become plain [zarr_group] and
#' [zarr_array] objects.
#'
#' @export
zarr_domain <- R6::R6Class("zarr_domain",
  cloneable = FALSE,
  public = list(
    #' @description Create a domain. Called by descendant classes.
    #' @param name The name of the domain, unique in the session.
    #' @return A new domain object.
    initialize = function(name) {
      if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name))
        zarr_abort("argument", "a domain needs a non-empty name")
      private$.name <- name
    },

    #' @description Offer a node to the domain. Descendants return a node
    #'   object when they manage it; the base class declines with `FALSE`.
    #' @param name The name of the node.
    #' @param metadata The metadata of the node.
    #' @param parent The parent group, `NULL` for a root node.
    #' @param store The store.
    #' @return A [zarr_node] descendant, or `FALSE`.
    build = function(name, metadata, parent, store) FALSE,

    #' @description Print the domain.
    print = function() {
      cat("<Zarr domain>", private$.name, "\n")
      invisible(self)
    }
  ),
  active = list(
    #' @field name (read-only) The name of the domain.
    name = function(value) private$.name,
    #' @field can_read (read-only) Whether the domain can read stores.
    can_read = function(value) TRUE,
    #' @field can_write (read-only) Whether the domain can write stores.
    can_write = function(value) TRUE
  ),
  private = list(.name = NULL)
)

domain_registry <- new.env(parent = emptyenv())
domain_registry$domains <- list()

#' Register a Zarr domain for this session
#'
#' @param domain An object of a class descending from [zarr_domain].
#' @return Nothing, invisibly.
#' @export
zarr_register_domain <- function(domain) {
  if (!inherits(domain, "zarr_domain")) zarr_abort("argument", "domain must be a zarr_domain")
  if (domain$name %in% names(domain_registry$domains))
    zarr_abort("argument", sprintf("a domain named '%s' is already registered", domain$name))
  domain_registry$domains[[domain$name]] <- domain
  invisible(NULL)
}

#' Unregister a Zarr domain from this session
#'
#' @param domain The name of the domain to unregister.
#' @return Nothing, invisibly.
#' @export
zarr_unregister_domain <- function(domain) {
  if (inherits(domain, "zarr_domain")) domain <- domain$name
  domain_registry$domains[[domain]] <- NULL
  invisible(NULL)
}

#' List the Zarr domains registered in this session
#'
#' @return A list of [zarr_domain] objects, named by domain.
#' @export
zarr_domains <- function() domain_registry$domains

default_domain <- function() zarr_domain$new("zarr")

# Build the object for one node: registered domains first, then the defaults.
build_node <- function(name, metadata, parent, store) {
  for (d in domain_registry$domains) {
    node <- d$build(name, metadata, parent, store)
    if (inherits(node, "zarr_node")) return(node)
  }
  nt <- metadata[["node_type"]]
  switch(if (is.character(nt) && length(nt) == 1L && !is.na(nt)) nt else "",
    group = zarr_group$new(name, metadata, parent, store),
    array = zarr_array$new(name, metadata, parent, store),
    zarr_abort("metadata", sprintf("unknown node type '%s'", substr(paste(format(nt), collapse = " "), 1L, 100L)),
               array = if (is.null(parent)) "/" else name)
  )
}
