#' Zarr domains
#'
#' A domain interprets the attributes of groups and arrays for some field of
#' application and may return its own (descendant) group and array classes for
#' the nodes it recognises. Register a domain with [zarr_register_domain()];
#' when a store is opened, every node is offered to the registered domains
#' first, and nodes that no domain takes become plain [zarr_group] and
#' [zarr_array] objects.
#'
#' @seealso [zarr_register_domain()], [zarr_domains()], [zarr_group],
#'   [zarr_array]
#' @examples
#' # a domain that gives arrays with a "units" attribute a class of their own
#' unit_array <- R6::R6Class("unit_array", inherit = zarr_array, cloneable = FALSE,
#'   public = list(unit = function() self$attributes$units))
#' unit_domain <- R6::R6Class("unit_domain", inherit = zarr_domain, cloneable = FALSE,
#'   public = list(
#'     initialize = function() super$initialize("example-units"),
#'     build = function(name, metadata, parent) {
#'       if (identical(metadata$node_type, "array") && !is.null(metadata$attributes$units))
#'         unit_array$new(name, metadata, parent)
#'       else
#'         FALSE # not ours: the next domain, and in the end this package, builds it
#'     }))
#' zarr_register_domain(unit_domain$new())
#' path <- tempfile(fileext = ".zarr")
#' z <- create_zarr(path)
#' a <- z$add_array("/", "height", define_array("int16", dim(volcano)))
#' a$set_attribute("units", "m")
#' plain <- z$add_array("/", "plain", define_array("int32", 3))
#' z <- open_zarr(path)
#' class(z[["/height"]])[1]
#' z[["/height"]]$unit()
#' class(z[["/plain"]])[1]
#' zarr_unregister_domain("example-units")
#' unlink(path, recursive = TRUE)
#' @export
zarr_domain <- R6::R6Class("zarr_domain",
  cloneable = FALSE,
  public = list(
    #' @description The lines that `print()` writes, as a character vector
    #'   (also what [format()] gives).
    #' @param ... Ignored.
    #' @return A character vector.
    format = function(...) format_printed(self),

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
    #' @field open_hierarchy (read-only) Whether opening a store, while this
    #'   domain is registered, builds the whole hierarchy and then calls
    #'   `post_open()` on every node (as zarr 1.0.0 does on every open). `TRUE`
    #'   here; a domain whose nodes need nothing beyond themselves can return
    #'   `FALSE`, and its nodes are then built when first used (with their
    #'   `post_open()` right after).
    open_hierarchy = function(value) TRUE,
    #' @field can_read (read-only) Whether the domain can read stores.
    can_read = function(value) TRUE,
    #' @field can_write (read-only) Whether the domain can write stores.
    can_write = function(value) TRUE
  ),
  private = list(.name = NULL)
)

domain_registry <- new.env(parent = emptyenv())
domain_registry$domains <- list()
domain_registry$builtin_only <- TRUE

#' Register a Zarr domain for this session
#'
#' Nodes are offered to the registered domains in turn, and the first domain
#' that claims a node builds it. A domain whose conventions overlap another's
#' (a Zarr Vectors root carries a `multiscales` attribute, as an OME-NGFF
#' image does) can ask to be asked first.
#'
#' @param domain An object of a class descending from [zarr_domain].
#' @param first Whether the domain is offered nodes before the domains
#'   registered already (`FALSE`: after them).
#' @return Nothing, invisibly.
#' @examples
#' tagged <- R6::R6Class("tagged_domain", inherit = zarr_domain, cloneable = FALSE,
#'   public = list(initialize = function() super$initialize("example-tagged")))
#' zarr_register_domain(tagged$new()) # asked after the domains registered already
#' names(zarr_domains())
#' try(zarr_register_domain(tagged$new())) # a name is registered once
#' zarr_unregister_domain("example-tagged")
#' # see ?zarr_domain for a domain that builds nodes of its own classes
#' @export
zarr_register_domain <- function(domain, first = FALSE) {
  if (!inherits(domain, "zarr_domain")) zarr_abort("argument", "domain must be a zarr_domain")
  if (domain$name %in% names(domain_registry$domains))
    zarr_abort("argument", sprintf("a domain named '%s' is already registered", domain$name))
  entry <- stats::setNames(list(domain), domain$name)
  domain_registry$domains <- if (isTRUE(first)) c(entry, domain_registry$domains) else c(domain_registry$domains, entry)
  domains_update_hierarchy()
  invisible(NULL)
}

#' Unregister a Zarr domain from this session
#'
#' @param domain The name of the domain to unregister.
#' @return Nothing, invisibly.
#' @examples
#' tagged <- R6::R6Class("tagged_domain", inherit = zarr_domain, cloneable = FALSE,
#'   public = list(initialize = function() super$initialize("example-tagged")))
#' zarr_register_domain(tagged$new())
#' "example-tagged" %in% names(zarr_domains())
#' zarr_unregister_domain("example-tagged")
#' "example-tagged" %in% names(zarr_domains())
#' @export
zarr_unregister_domain <- function(domain) {
  if (inherits(domain, "zarr_domain")) domain <- domain$name
  domain_registry$domains[[domain]] <- NULL
  domains_update_hierarchy()
  invisible(NULL)
}

#' List the Zarr domains registered in this session
#'
#' @return A list of [zarr_domain] objects, named by domain.
#' @examples
#' doms <- zarr_domains() # this package registers its OME-NGFF and Zarr Vectors domains
#' names(doms)
#' doms[[1]]
#' @export
zarr_domains <- function() domain_registry$domains

# One object for every zarr object: it holds nothing but its name.
default_domain <- function() domain_registry$default %||% (domain_registry$default <- zarr_domain$new("zarr"))

# Nodes being built while a store is opened: the constructors of
# zarr_group and zarr_array then neither look for the node in the store nor
# attach it to its parent (the caller does).
node_build <- new.env(parent = emptyenv())
node_build$depth <- 0L

node_opening <- function() node_build$depth > 0L

# The arguments a domain's build() declares, once per domain object: the
# 0.3.0 form is (name, metadata, parent, store), the 1.0.0 form
# (name, metadata, parent), where the parent of a root node is the zarr object.
domain_args_100 <- c("name", "metadata", "parent")
domain_build_args <- function(d) {
  f <- names(formals(d$build))
  if ("..." %in% f) c("name", "metadata", "parent", "store") else intersect(c("name", "metadata", "parent", "store"), f)
}
# The form as a number: 4 (all four arguments), 3 (the 1.0.0 form), 0 (others).
domain_build_form <- function(wanted) {
  if (length(wanted) == 4L) 4L else if (identical(wanted, domain_args_100)) 3L else 0L
}

# Build the object for one node: registered domains first, then the defaults.
# `owner` is the zarr object a root node belongs to, when there is one. A
# node that a domain builds gets its post_open() call, unless `post_open` is
# FALSE (a group calls it once all of its children are built).
# An error of a domain's build() is a domain's error (class
# zarr_domain_error). With `guarded`, the caller has a condition handler of
# its own and asks domain_failed() there (a handler here would cost more
# than asking the domains).
build_node <- function(name, metadata, parent, store, owner = NULL, post_open = TRUE, guarded = FALSE) {
  metadata <- node_metadata(metadata)
  node_build$depth <- node_build$depth + 1L
  on.exit(node_build$depth <- node_build$depth - 1L)
  domains <- domain_registry$domains
  node <- if (!length(domains) || (domain_registry$builtin_only && builtin_unclaimed(metadata, parent))) NULL
    else if (guarded) {
      # left raised when a build() fails (see domain_failed())
      outer <- node_build$in_domain
      node_build$in_domain <- outer + 1L
      claimed <- domains_claim(domains, name, metadata, parent, store, owner)
      node_build$in_domain <- outer
      claimed
    } else tryCatch(domains_claim(domains, name, metadata, parent, store, owner),
                    error = function(e) stop(as_domain_error(e)))
  if (inherits(node, "zarr_node")) {
    node_build$depth <- node_build$depth - 1L
    on.exit()
    if (isTRUE(post_open)) node$post_open()
    return(node)
  }
  if (is.null(parent) && !is.null(owner)) parent <- owner
  nt <- metadata[["node_type"]]
  switch(if (is.character(nt) && length(nt) == 1L && !is.na(nt)) nt else "",
    group = zarr_group$new(name, metadata, parent, store),
    array = zarr_array$new(name, metadata, parent, store),
    zarr_abort("metadata", sprintf("unknown node type '%s'", substr(paste(format(nt), collapse = " "), 1L, 100L)),
               array = if (is.null(parent) || inherits(parent, "zarr")) "/" else name)
  )
}

# Whether the package's own domains (Zarr Vectors, OME-NGFF) would all
# leave the node alone: the tests their build() methods start with. Asked
# instead of them (and of the condition handler around them, a tenth of
# opening a node) while they are the only ones registered.
builtin_unclaimed <- function(metadata, parent) !zv_claims(metadata) && !ome_may_claim(metadata, parent)
builtin_domain_classes <- c("zarr_vectors_domain", "zarr_ome_domain")

# The node the first registered domain that claims it builds (NULL or
# another non-node when none does).
domains_claim <- function(domains, name, metadata, parent, store, owner) {
  claimed <- NULL
  build_args <- domain_registry$build_args
  forms <- domain_registry$build_forms
  known <- length(build_args) == length(domains) && length(forms) == length(domains)
  for (i in seq_along(domains)) {
    d <- domains[[i]]
    wanted <- if (known) build_args[[i]] else domain_build_args(d)
    form <- if (known) forms[[i]] else domain_build_form(wanted)
    # (the parent of a root node is the zarr object in the 1.0.0 form)
    par <- if (is.null(parent) && form != 4L && !"store" %in% wanted) owner else parent
    # the two forms directly (do.call() for the rest)
    claimed <- if (form == 4L) d$build(name, metadata, par, store)
      else if (form == 3L) d$build(name, metadata, par)
      else do.call(d$build, unname(list(name = name, metadata = metadata, parent = par, store = store)[wanted]))
    if (inherits(claimed, "zarr_node")) break
  }
  claimed
}

# For the condition handler of a caller of build_node(guarded = TRUE): whether
# the error it handles came from a domain's build() (then it gets the class
# zarr_domain_error), `depth` being node_build$in_domain when the caller
# started (an interrupt may have left it raised). Resets the count.
domain_failed <- function(depth) {
  failed <- node_build$in_domain > depth
  node_build$in_domain <- depth
  failed
}
node_build$in_domain <- 0L

as_domain_error <- function(e) {
  class(e) <- unique(c("zarr_domain_error", class(e)))
  e
}

# Whether a node came from a registered domain (its post_open() is called).
domain_node <- function(node) {
  cls <- class(node)[1L]
  cls != "zarr_group" && cls != "zarr_array"
}

with_node_opening <- function(expr) {
  node_build$depth <- node_build$depth + 1L
  on.exit(node_build$depth <- node_build$depth - 1L)
  expr
}

# post_open() of a node a domain built, unless a whole hierarchy is being
# opened (then zarr$new() calls it on every node once all are built).
run_post_open <- function(node) {
  if (!node_build$eager && domain_node(node)) node$post_open()
  invisible(node)
}
node_build$eager <- FALSE

# Whether opening a store builds the whole hierarchy and then calls
# post_open() on every node, as zarr 1.0.0 does: when a registered domain
# asks for it (its `open_hierarchy` field, TRUE unless the domain says not).
domains_want_hierarchy <- function() isTRUE(domain_registry$want_hierarchy)

# Asked once per (un)registration, not per open: the field is read-only, and
# a domain's own active binding may fail (then it asks).
domains_update_hierarchy <- function() {
  # the arguments each build() takes, asked here rather than per node built
  domain_registry$build_args <- lapply(domain_registry$domains, domain_build_args)
  domain_registry$build_forms <- vapply(domain_registry$build_args, domain_build_form, 0L)
  # (the exact classes: a subclass may claim more)
  domain_registry$builtin_only <- all(vapply(domain_registry$domains, function(d) class(d)[1L], "") %in%
                                        builtin_domain_classes)
  domain_registry$want_hierarchy <- any(vapply(domain_registry$domains, function(d)
    !isFALSE(tryCatch(d$open_hierarchy, error = function(e) TRUE)), TRUE))
}
