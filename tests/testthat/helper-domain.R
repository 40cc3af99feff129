# A small domain package, written the way a package built on zarr 1.0.0 (such
# as geozarr) is: a convention, a zarr_object descendant, and group and array
# classes that a registered domain builds when a node lists the convention.

tiny_convention <- R6::R6Class("tiny_convention",
  inherit = zarr::zarr_convention,
  cloneable = FALSE,
  private = list(.unit = NULL),
  public = list(
    initialize = function() {
      super$initialize(name = "tiny", schema = "https://example.org/tiny/v1/schema.json",
                       uuid = "0d3f5a52-7d0e-4c4e-9a43-6f1d2c3b4a59")
      private$.spec <- "https://example.org/tiny/v1/README.md"
      private$.description <- "A convention of the test domain"
    },
    set = function(unit) {
      private$.unit <- unit
      invisible(self)
    },
    as_list = function() {
      if (is.null(private$.unit)) stop("set the unit first", call. = FALSE)
      list(`tiny:unit` = private$.unit)
    },
    clear = function() {
      private$.unit <- NULL
      invisible(self)
    }
  )
)

# Attributes of a node that use the convention: registered, then its values.
tiny_attributes <- function(unit, extra = list()) {
  conv <- tiny_convention$new()$set(unit)
  c(conv$register(extra), conv$as_list())
}

uses_tiny <- function(metadata)
  any(vapply(metadata$attributes$zarr_conventions %||% list(),
             function(cv) identical(cv$name, "tiny"), TRUE))

# Not a node: a named object with attributes of its own.
tiny_label <- R6::R6Class("tiny_label",
  inherit = zarr::zarr_object,
  private = list(
    .attributes = list(),
    display_attributes = function() private$.attributes
  ),
  public = list(
    initialize = function(name, attributes = list()) {
      super$initialize(name)
      private$.attributes <- attributes
    },
    add = function(name, value) {
      private$.attributes <- self$set_attribute(private$.attributes, name, value)
      invisible(self)
    },
    get = function(name) self$attribute(private$.attributes, name)
  )
)

tiny_group <- R6::R6Class("tiny_group",
  inherit = zarr::zarr_group,
  cloneable = FALSE,
  private = list(
    print_details = function() cat("Tiny group of unit", private$.metadata$attributes[["tiny:unit"]], "\n"),
    display_attributes = function() {
      atts <- private$.metadata[["attributes"]]
      atts[!(startsWith(names(atts), "tiny:") | names(atts) == "zarr_conventions")]
    }
  ),
  public = list(
    initialize = function(name, metadata, parent) {
      super$initialize(name, metadata, parent)
      private$.domain <- "Tiny"
      private$.glyph <- "T"
    }
  )
)

tiny_array <- R6::R6Class("tiny_array",
  inherit = zarr::zarr_array,
  cloneable = FALSE,
  private = list(
    .unit = NULL,
    .sibling_names = NULL,
    print_details = function() cat("Tiny unit :", private$.unit, "\n"),
    display_attributes = function() {
      atts <- private$.metadata[["attributes"]]
      atts[!(startsWith(names(atts), "tiny:") | names(atts) == "zarr_conventions")]
    }
  ),
  public = list(
    post_opened = 0L,
    initialize = function(name, metadata, parent, unit = NULL) {
      super$initialize(name, metadata, parent)
      private$.domain <- "Tiny"
      private$.glyph <- "t"
      private$.unit <- unit
    },
    # Runs once the hierarchy is in place: the siblings can be reached.
    post_open = function() {
      self$post_opened <- self$post_opened + 1L
      private$.unit <- private$.metadata$attributes[["tiny:unit"]]
      if (inherits(private$.parent, "zarr_group"))
        private$.sibling_names <- setdiff(names(private$.parent$children), private$.name)
      invisible(self)
    }
  ),
  active = list(
    unit = function(value) private$.unit,
    sibling_names = function(value) private$.sibling_names
  )
)

# The 1.0.0 form of build(): no store argument; the parent of a root node is
# the zarr object.
tiny_domain <- R6::R6Class("tiny_domain",
  inherit = zarr::zarr_domain,
  cloneable = FALSE,
  public = list(
    calls = NULL,
    initialize = function() super$initialize("Tiny"),
    build = function(name, metadata, parent) {
      self$calls <- c(self$calls, list(list(name = name, parent = parent)))
      if (!uses_tiny(metadata)) return(FALSE)
      if (identical(metadata$node_type, "group")) tiny_group$new(name, metadata, parent)
      else tiny_array$new(name, metadata, parent)
    }
  )
)

# The 0.3.0 form: build(name, metadata, parent, store); claims nothing.
observer_domain <- R6::R6Class("observer_domain",
  inherit = zarr::zarr_domain,
  cloneable = FALSE,
  public = list(
    seen = NULL,
    initialize = function() super$initialize("Observer"),
    build = function(name, metadata, parent, store) {
      self$seen <- c(self$seen, list(list(name = name, parent = parent, store = store)))
      FALSE
    }
  )
)

# Register a domain for the calling test only.
local_domain <- function(domain, env = parent.frame()) {
  zarr::zarr_register_domain(domain)
  withr::defer(zarr::zarr_unregister_domain(domain$name), envir = env)
  domain
}

# The hierarchy of a zarr object opened anew from its store.
open_zarr_of <- function(z) zarr::zarr$new(z$store)
