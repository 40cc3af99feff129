#' Zarr conventions
#'
#' A convention is a set of attributes with an agreed meaning for some field
#' of application. A node that uses a convention lists it in its
#' `zarr_conventions` attribute (an array of objects with `uuid`,
#' `schema_url`, `spec_url`, `name` and `description`), and keeps the
#' convention's own properties at the root of its attributes. This base class
#' registers a convention; descendants such as [zarr_convention_ref] and
#' [zarr_convention_uom] also write their properties.
#'
#' Descendants hold the properties of one use of the convention: `set()`
#' sets them, `as_list()` returns them as the list to store under the
#' attributes, `clear()` forgets them (the forms of zarr 1.0.0); `write()`
#' registers the convention in a list of attributes and puts the properties
#' there (the 0.3.0 form). The base class has no properties.
#'
#' @examples
#' # a convention of your own: its name, schema URL and UUID
#' conv <- zarr_convention$new("example", "https://example.org/example/schema.json",
#'                             "7c1f5b2e-3a4d-4f6b-9e21-0b8d5c4a7e13")
#' conv$description <- "An example convention"
#' conv
#' # a node that follows it lists it in its zarr_conventions attribute
#' a <- as_zarr(1:3, name = "x")[["/x"]]
#' a$set_attributes(conv$register(a$attributes))
#' str(a$attributes)
#' conv$register(list(), brief = TRUE)
#' @export
zarr_convention <- R6::R6Class("zarr_convention",
  cloneable = FALSE,
  public = list(
    #' @description The lines that `print()` writes, as a character vector
    #'   (also what [format()] gives).
    #' @param ... Ignored.
    #' @return A character vector.
    format = function(...) format_printed(self),

    #' @description Create a convention agent. Meant for descendant classes.
    #' @param name The name of the convention (with a trailing ":" for
    #'   conventions that prefix their attribute names).
    #' @param schema The URL of the convention's JSON schema.
    #' @param uuid The UUID of the convention.
    #' @return A new convention agent.
    initialize = function(name, schema, uuid) {
      for (a in list(name, schema, uuid))
        if (!is.character(a) || length(a) != 1L || is.na(a))
          zarr_abort("argument", "a convention needs a name, a schema URL and a UUID, each a string")
      private$.name <- name
      private$.schema <- schema
      private$.uuid <- uuid
    },

    #' @description Print the convention.
    print = function() {
      cat("<Zarr convention>", private$.name, "\n")
      cat("UUID  :", private$.uuid, "\n")
      cat("Schema:", private$.schema, "\n")
      if (!is.null(private$.spec)) cat("Spec  :", private$.spec, "\n")
      invisible(self)
    },

    #' @description Register the convention in a list of attributes: add (or
    #'   replace) its entry in `zarr_conventions`.
    #' @param attributes A list with the attributes of a group or array.
    #' @param brief `TRUE` to register only the name and the schema URL;
    #'   `FALSE` (default) for every detail.
    #' @return The updated attributes.
    register = function(attributes, brief = FALSE) {
      if (is.null(attributes)) attributes <- named_list()
      entry <- if (isTRUE(brief)) list(name = private$.name, schema_url = private$.schema)
        else Filter(Negate(is.null), list(uuid = private$.uuid, schema_url = private$.schema,
                                          spec_url = private$.spec, name = private$.name,
                                          description = private$.description))
      known <- attributes[["zarr_conventions"]] %||% list()
      same <- vapply(known, function(k) identical(k$uuid, private$.uuid) ||
                       (identical(k$schema_url, private$.schema) && is.null(k$uuid)), TRUE)
      attributes[["zarr_conventions"]] <- c(known[!same], list(entry))
      attributes
    },

    #' @description Write the properties of the convention into a list of
    #'   attributes. The base class has no properties and returns the
    #'   attributes unchanged.
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) attributes,

    # ---- the 1.0.0 forms
    #' @description Set the properties of this use of the convention. The
    #'   base class has none.
    #' @param ... The properties (see the descendant classes).
    #' @return Self, invisibly.
    set = function(...) invisible(self),

    #' @description The properties as a list, as stored in the attributes.
    #' @return A list (empty for the base class).
    as_list = function() list(),

    #' @description Forget the properties set.
    #' @return Self, invisibly.
    clear = function() invisible(self)
  ),
  active = list(
    #' @field name (read-only) The name of the convention.
    name = function(value) private$.name,
    #' @field schema (read-only) The URL of the convention's JSON schema.
    schema = function(value) private$.schema,
    #' @field uuid (read-only) The UUID of the convention.
    uuid = function(value) private$.uuid,
    #' @field spec The URL of the convention's specification.
    spec = function(value) {
      if (missing(value)) return(private$.spec)
      private$.spec <- as_single_string(value, "spec")
    },
    #' @field description A short description of the convention.
    description = function(value) {
      if (missing(value)) return(private$.description)
      private$.description <- as_single_string(value, "description")
    }
  ),
  private = list(.name = NULL, .schema = NULL, .uuid = NULL, .spec = NULL, .description = NULL)
)

as_single_string <- function(value, what) {
  if (is.null(value)) return(NULL)
  if (!is.character(value) || length(value) != 1L || is.na(value))
    zarr_abort("argument", sprintf("'%s' must be a single string", what))
  value
}

#' Convention "ref": references to other Zarr objects
#'
#' Refers from a group or array to another group, array or attribute, in the
#' same store or in another one (given by `uri`), following the "ref"
#' convention at version 2.0.0. In that version a reference is
#' `{"uri", "node", "attribute"}`: `node` a path to the group or array
#' (relative to the referring node, or absolute in the store at `uri`),
#' `attribute` a JSON pointer into its metadata. Set them with `set()`, read
#' them with `as_list()`. The fields of the 0.3.0 form (`array`, `group`,
#' `attribute`, `index`, `name`) still work and `write()` stores them under
#' the attribute key `ref`. `zarr_conv_ref` is the same class.
#'
#' @examples
#' z <- create_zarr() # in memory
#' data <- z$add_group("/", "data")
#' meta <- z$add_group("/", "meta")
#' ref <- zarr_convention_ref$new()
#' ref$set("../data", attribute = "/attributes/title")
#' ref$as_list()
#' meta$set_attributes(c(ref$register(list()), list(ref = ref$as_list())))
#' str(meta$attributes$ref)
#' ref
#' @export
zarr_convention_ref <- R6::R6Class("zarr_convention_ref",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "ref" convention agent.
    #' @return A new agent.
    initialize = function() {
      k <- known_conventions$ref
      super$initialize(k$name, k$schema, k$uuid)
      private$.spec <- k$spec
      private$.description <- "Referencing Zarr objects external to the current Zarr object"
    },

    #' @description Write the reference into a list of attributes (and
    #'   register the convention).
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) {
      ref <- if (!is.null(private$.node)) self$as_list() else
        Filter(Negate(is.null), list(uri = private$.uri, array = private$.array,
                                     group = private$.group, attribute = private$.attribute,
                                     index = private$.index, name = private$.refname))
      if (!length(ref)) zarr_abort("argument", "set at least one property of the reference")
      attributes <- self$register(attributes)
      attributes[["ref"]] <- ref
      attributes
    },

    #' @description Set the reference (the 1.0.0 form).
    #' @param node The path of the group or array referred to.
    #' @param uri Optional URI of another store.
    #' @param attribute Optional JSON pointer ("/a/b/0") into the metadata of
    #'   `node`.
    #' @return Self, invisibly.
    set = function(node, uri = NULL, attribute = NULL) {
      if (missing(uri)) uri <- NULL # also when a caller passes on its own missing argument
      if (missing(attribute)) attribute <- NULL
      if (!is.character(node) || length(node) != 1L || is.na(node) || !nzchar(node))
        zarr_abort("argument", "argument `node` must be a non-empty string")
      if (!is.null(uri) && (!is.character(uri) || length(uri) != 1L || is.na(uri) || !nzchar(uri)))
        zarr_abort("argument", "argument `uri` must be a non-empty string")
      if (!is.null(attribute)) json_pointer_tokens(attribute)
      private$.node <- node
      private$.uri <- uri
      private$.attribute <- attribute
      invisible(self)
    },

    #' @description The reference as a list: `uri` (when set), `node` and
    #'   `attribute` (when set).
    #' @return A list.
    as_list = function() {
      if (is.null(private$.node)) zarr_abort("argument", "set the node of the reference first")
      Filter(Negate(is.null), list(uri = private$.uri, node = private$.node,
                                   attribute = if (isTRUE(nzchar(private$.attribute))) private$.attribute))
    },

    #' @description Forget the reference.
    #' @return Self, invisibly.
    clear = function() {
      private$.uri <- private$.node <- private$.array <- private$.group <- NULL
      private$.attribute <- private$.index <- private$.refname <- NULL
      invisible(self)
    }
  ),
  active = list(
    #' @field node Path of the referenced group or array (version 2.0.0).
    node = function(value) if (missing(value)) private$.node else private$.node <- as_single_string(value, "node"),
    #' @field uri URI (RFC 3986) of an external Zarr store.
    uri = function(value) if (missing(value)) private$.uri else private$.uri <- as_single_string(value, "uri"),
    #' @field array Path of the referenced array (0.3.0 form).
    array = function(value) if (missing(value)) private$.array else private$.array <- as_single_string(value, "array"),
    #' @field group Path of the referenced group (0.3.0 form).
    group = function(value) if (missing(value)) private$.group else private$.group <- as_single_string(value, "group"),
    #' @field attribute Path to a referenced attribute (a JSON pointer in
    #'   version 2.0.0).
    attribute = function(value) {
      if (missing(value)) private$.attribute else private$.attribute <- as_single_string(value, "attribute")
    },
    #' @field index When `attribute` is an array: the 0-based index into it.
    index = function(value) {
      if (missing(value)) return(private$.index)
      if (!is.null(value) && (!is.numeric(value) || length(value) != 1L || is.na(value) || value < 0 || value != trunc(value)))
        zarr_abort("argument", "'index' must be a single non-negative whole number")
      private$.index <- if (is.null(value)) NULL else as.integer(value)
    },
    #' @field name When `attribute` is an array of objects: the `name` of the one referred to.
    name = function(value) {
      if (missing(value)) return(private$.refname) # the convention itself is "ref"
      private$.refname <- as_single_string(value, "name")
    }
  ),
  private = list(.uri = NULL, .node = NULL, .array = NULL, .group = NULL, .attribute = NULL, .index = NULL,
                 .refname = NULL)
)

#' Convention classes under their 0.3.0 names
#'
#' `zarr_conv_ref` is the class [zarr_convention_ref] and `zarr_conv_uom`
#' the class [zarr_convention_uom], under the names they had in version
#' 0.3.0.
#' @examples
#' identical(zarr_conv_uom, zarr_convention_uom)
#' u <- zarr_conv_uom$new()
#' u$unit <- "m"
#' u$as_list()$ucum$unit
#' @name zarr_conv_aliases
#' @aliases zarr_conv_ref zarr_conv_uom
#' @rawNamespace export(zarr_conv_ref, zarr_conv_uom)
NULL

zarr_conv_ref <- zarr_convention_ref

# The reference tokens of a JSON pointer (RFC 6901); an error when it is not one.
json_pointer_tokens <- function(ptr) {
  if (!is.character(ptr) || length(ptr) != 1L || is.na(ptr))
    zarr_abort("argument", "a JSON pointer must be a single string")
  if (!nzchar(ptr)) return(character())
  if (!startsWith(ptr, "/")) zarr_abort("argument", sprintf("'%s' is not a JSON pointer: it must start with '/'", ptr))
  tok <- strsplit(substring(ptr, 2L), "/", fixed = TRUE)[[1L]]
  if (endsWith(ptr, "/")) tok <- c(tok, "")
  if (any(grepl("~(?![01])", tok, perl = TRUE)))
    zarr_abort("argument", sprintf("'%s' is not a JSON pointer: '~' must be followed by 0 or 1", ptr))
  gsub("~0", "~", gsub("~1", "/", tok, fixed = TRUE), fixed = TRUE)
}

#' Convention "uom": units of measurement
#'
#' Describes the unit of measurement of array data in UCUM notation, written
#' under the attribute key `uom` as `{"ucum": {"version", "unit"},
#' "description"}`. Set the unit with the fields or with `set()`;
#' `as_list()` gives the `uom` value (unit "1" and UCUM version "2.2" when
#' not set). `zarr_conv_uom` is the same class.
#'
#' @examples
#' uom <- zarr_convention_uom$new()
#' uom$set("K", description = "air temperature")
#' uom$as_list()
#' z <- as_zarr(c(280.1, 281.4, 279.9), name = "t2m") # in memory
#' a <- z[["/t2m"]]
#' a$set_attributes(uom$write(a$attributes)) # registers the convention and writes "uom"
#' str(a$attributes$uom)
#' uom$unit
#' @export
zarr_convention_uom <- R6::R6Class("zarr_convention_uom",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "uom" convention agent.
    #' @return A new agent.
    initialize = function() {
      k <- known_conventions$uom
      super$initialize(k$name, k$schema, k$uuid)
      private$.spec <- k$spec
      private$.description <- "Units of measurement for Zarr arrays"
    },

    #' @description Write the unit into a list of attributes (and register
    #'   the convention).
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) {
      if (is.null(private$.unit)) zarr_abort("argument", "set the unit first")
      uom <- list(ucum = Filter(Negate(is.null), list(version = private$.version, unit = private$.unit)))
      if (!is.null(private$.uom_description)) uom[["description"]] <- private$.uom_description
      attributes <- self$register(attributes)
      attributes[["uom"]] <- uom
      attributes
    },

    #' @description Set the unit (the 1.0.0 form).
    #' @param unit The unit in UCUM notation.
    #' @param version Optional UCUM version.
    #' @param description Optional free-text description of the unit.
    #' @return Self, invisibly.
    set = function(unit, version = NULL, description = NULL) {
      if (missing(version)) version <- NULL
      if (missing(description)) description <- NULL
      private$.unit <- as_single_string(unit, "unit")
      if (!is.null(version)) private$.version <- as_single_string(version, "version")
      if (!is.null(description)) private$.uom_description <- as_single_string(description, "description")
      invisible(self)
    },

    #' @description The `uom` value as a list.
    #' @return A list with `ucum` (`version`, `unit`) and `description` when set.
    as_list = function() {
      out <- list(ucum = list(version = private$.version %||% "2.2", unit = private$.unit %||% "1"))
      if (isTRUE(nzchar(private$.uom_description))) out$description <- private$.uom_description
      out
    },

    #' @description Forget the unit, version and description.
    #' @return Self, invisibly.
    clear = function() {
      private$.unit <- private$.version <- private$.uom_description <- NULL
      invisible(self)
    }
  ),
  active = list(
    #' @field version The UCUM version used.
    version = function(value) {
      if (missing(value)) private$.version else private$.version <- as_single_string(value, "version")
    },
    #' @field unit The unit in UCUM notation, for example "m/s" or "Cel".
    unit = function(value) if (missing(value)) private$.unit else private$.unit <- as_single_string(value, "unit"),
    #' @field description A free-text description of the unit.
    description = function(value) {
      if (missing(value)) return(private$.uom_description)
      private$.uom_description <- as_single_string(value, "description")
    }
  ),
  private = list(.version = NULL, .unit = NULL, .uom_description = NULL)
)

zarr_conv_uom <- zarr_convention_uom

#' The Zarr conventions this package knows
#'
#' @return A data frame with one row per convention and the columns `name`,
#'   `schema` (the URL of its JSON schema), `uuid` and `spec` (the URL of its
#'   specification). Domain packages may add their own rows to a copy.
#' @export
#' @examples
#' zarr_conventions()
zarr_conventions <- function() {
  col <- function(f) vapply(known_conventions, function(k) k[[f]], "", USE.NAMES = FALSE)
  data.frame(name = col("name"), schema = col("schema"), uuid = col("uuid"), spec = col("spec"),
             stringsAsFactors = FALSE)
}

known_conventions <- list(
  ref = list(name = "ref", uuid = "d89b30cf-ed8c-43d5-9a16-b492f0cd8786",
             schema = "https://raw.githubusercontent.com/R-CF/zarr_convention_ref/refs/tags/v2.0.0/schema.json",
             spec = "https://github.com/R-CF/zarr_convention_ref/blob/v2.0.0/README.md"),
  uom = list(name = "uom", uuid = "3bbe438d-df37-49fe-8e2b-739296d46dfb",
             schema = "https://raw.githubusercontent.com/clbarnes/zarr-convention-uom/refs/tags/v1/schema.json",
             spec = "https://github.com/clbarnes/zarr-convention-uom/blob/v1/README.md"),
  proj = list(name = "proj:", uuid = "f17cb550-5864-4468-aeb7-f3180cfb622f",
              schema = "https://raw.githubusercontent.com/zarr-experimental/geo-proj/refs/tags/v1/schema.json",
              spec = "https://github.com/zarr-experimental/geo-proj/blob/v1/README.md"),
  spatial = list(name = "spatial:", uuid = "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
                 schema = "https://raw.githubusercontent.com/zarr-conventions/spatial/refs/tags/v1/schema.json",
                 spec = "https://github.com/zarr-conventions/spatial/blob/v1/README.md"),
  multiscales = list(name = "multiscales", uuid = "d35379db-88df-4056-af3a-620245f8e347",
                     schema = "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json",
                     spec = "https://github.com/zarr-conventions/multiscales/blob/v1/README.md")
)
