#' Zarr conventions
#'
#' A convention is a set of attributes with an agreed meaning for some field
#' of application. A node that uses a convention lists it in its
#' `zarr_conventions` attribute (an array of objects with `uuid`,
#' `schema_url`, `spec_url`, `name` and `description`), and keeps the
#' convention's own properties at the root of its attributes. This base class
#' registers a convention; descendants such as [zarr_conv_ref] and
#' [zarr_conv_uom] also write their properties.
#'
#' @export
zarr_convention <- R6::R6Class("zarr_convention",
  cloneable = FALSE,
  public = list(
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
      known <- attributes$zarr_conventions %||% list()
      same <- vapply(known, function(k) identical(k$uuid, private$.uuid) ||
                       (identical(k$schema_url, private$.schema) && is.null(k$uuid)), TRUE)
      attributes$zarr_conventions <- c(known[!same], list(entry))
      attributes
    },

    #' @description Write the properties of the convention into a list of
    #'   attributes. The base class has no properties and returns the
    #'   attributes unchanged.
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) attributes
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
#' same store or in another one (given by `uri`). The properties are written
#' under the attribute key `ref`.
#'
#' @export
zarr_conv_ref <- R6::R6Class("zarr_conv_ref",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "ref" convention agent.
    #' @return A new agent.
    initialize = function() {
      super$initialize("ref", "https://raw.githubusercontent.com/R-CF/zarr_convention_ref/main/schema.json",
                       "d89b30cf-ed8c-43d5-9a16-b492f0cd8786")
      private$.spec <- "https://raw.githubusercontent.com/R-CF/zarr_convention_ref/main/README.md"
      private$.description <- "Referencing Zarr objects external to the current Zarr object"
    },

    #' @description Write the reference into a list of attributes (and
    #'   register the convention).
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) {
      ref <- Filter(Negate(is.null), list(uri = private$.uri, array = private$.array,
                                          group = private$.group, attribute = private$.attribute,
                                          index = private$.index, name = private$.refname))
      if (!length(ref)) zarr_abort("argument", "set at least one property of the reference")
      attributes <- self$register(attributes)
      attributes$ref <- ref
      attributes
    }
  ),
  active = list(
    #' @field uri URI (RFC 3986) of an external Zarr store.
    uri = function(value) if (missing(value)) private$.uri else private$.uri <- as_single_string(value, "uri"),
    #' @field array Path of the referenced array.
    array = function(value) if (missing(value)) private$.array else private$.array <- as_single_string(value, "array"),
    #' @field group Path of the referenced group.
    group = function(value) if (missing(value)) private$.group else private$.group <- as_single_string(value, "group"),
    #' @field attribute Path from the root of the metadata to a referenced attribute.
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
  private = list(.uri = NULL, .array = NULL, .group = NULL, .attribute = NULL, .index = NULL,
                 .refname = NULL)
)

#' Convention "uom": units of measurement
#'
#' Describes the unit of measurement of array data in UCUM notation, written
#' under the attribute key `uom` as `{"ucum": {"version", "unit"},
#' "description"}`.
#'
#' @export
zarr_conv_uom <- R6::R6Class("zarr_conv_uom",
  inherit = zarr_convention,
  cloneable = FALSE,
  public = list(
    #' @description Create a "uom" convention agent.
    #' @return A new agent.
    initialize = function() {
      super$initialize("uom", "https://raw.githubusercontent.com/clbarnes/zarr-convention-uom/refs/tags/v1/schema.json",
                       "3bbe438d-df37-49fe-8e2b-739296d46dfb")
      private$.spec <- "https://github.com/clbarnes/zarr-convention-uom/blob/v1/README.md"
      private$.description <- "Units of measurement for Zarr arrays"
    },

    #' @description Write the unit into a list of attributes (and register
    #'   the convention).
    #' @param attributes A list with the attributes of a group or array.
    #' @return The updated attributes.
    write = function(attributes) {
      if (is.null(private$.unit)) zarr_abort("argument", "set the unit first")
      uom <- list(ucum = Filter(Negate(is.null), list(version = private$.version, unit = private$.unit)))
      if (!is.null(private$.uom_description)) uom$description <- private$.uom_description
      attributes <- self$register(attributes)
      attributes$uom <- uom
      attributes
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
