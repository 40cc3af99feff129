#' Zarr base object
#'
#' The ancestor of [zarr_node] (and so of [zarr_group] and [zarr_array]), and
#' a base for classes of domain packages that need a name and attributes
#' without being a node (coordinate systems, for example). It keeps the name
#' and offers the attribute operations on a list of attributes given as the
#' first argument, because descendants keep their attributes in different
#' places. Nodes override these methods with forms that work on their own
#' attributes.
#'
#' Attribute names may be paths: `"a/b/c"` addresses member `c` of object `b`
#' of attribute `a`; a segment that is a number indexes a JSON array
#' (1-based), as in `"zarr_conventions/2/name"`.
#'
#' Descendants may override the private method `display_attributes()`, which
#' returns the attributes that `print_attributes()` shows.
#'
#' @seealso [zarr_node]
#' @examples
#' # attributes kept in a list, addressed by name or by path
#' o <- zarr_object$new("crs")
#' atts <- o$set_attribute(list(), "projjson/name", "WGS 84")
#' atts <- o$append_array_attribute(atts, "axes", "lat")
#' atts <- o$append_array_attribute(atts, "axes", "lon")
#' str(atts)
#' o$attribute(atts, "projjson/name")
#' o$attribute(atts, "axes/2") # JSON arrays are indexed from 1
#' str(o$delete_attribute(atts, "axes"))
#' o$name
#' @export
zarr_object <- R6::R6Class("zarr_object",
  cloneable = TRUE,
  public = list(
    #' @description The lines that `print()` writes, as a character vector
    #'   (also what [format()] gives).
    #' @param ... Ignored.
    #' @return A character vector.
    format = function(...) format_printed(self),

    #' @description Create an object.
    #' @param name The name: a single string; "" is allowed (a root node).
    #' @return A new object.
    initialize = function(name) {
      if (!object_name_ok(name))
        zarr_abort("node_name", sprintf("invalid name for a Zarr object: '%s'", paste(name, collapse = " ")))
      private$.name <- name
    },

    #' @description Print the attributes that `display_attributes()` gives.
    #' @param dirty Whether the attributes have unsaved changes (shown in the
    #'   title).
    #' @param ... Ignored.
    #' @return Self, invisibly.
    print_attributes = function(dirty = FALSE, ...) {
      atts <- private$display_attributes()
      if (length(atts)) print_attribute_block(atts, if (isTRUE(dirty)) "Attributes (*)" else "Attributes")
      invisible(self)
    },

    #' @description Get an attribute by name or path.
    #' @param atts The list of attributes.
    #' @param name The name or path of the attribute.
    #' @return The value, or `NULL` when there is none.
    attribute = function(atts, name) attr_get(atts, name),

    #' @description Set an attribute, creating the objects on its path.
    #' @param atts The list of attributes.
    #' @param name The name or path of the attribute.
    #' @param value The value.
    #' @return The updated list of attributes.
    set_attribute = function(atts, name, value) attr_set(atts, attr_path(name), value),

    #' @description Append a value to an attribute that is a JSON array
    #'   (creating it when absent).
    #' @param atts The list of attributes.
    #' @param name The name or path of the attribute.
    #' @param value The value to append.
    #' @param after Position after which to insert; `NULL` (default) appends
    #'   at the end, `0` inserts at the front.
    #' @return The updated list of attributes.
    append_array_attribute = function(atts, name, value, after = NULL) attr_append(atts, name, value, after),

    #' @description Delete an attribute, a member of an object attribute or
    #'   an element of an array attribute; absent ones are ignored.
    #' @param atts The list of attributes.
    #' @param name The name or path.
    #' @return The updated list of attributes.
    delete_attribute = function(atts, name) attr_delete(atts, name)
  ),
  active = list(
    #' @field name The name of the object.
    name = function(value) {
      if (missing(value)) return(private$.name)
      if (!object_name_ok(value) || !nzchar(value))
        zarr_abort("node_name", sprintf("invalid name for a Zarr object: '%s'", paste(value, collapse = " ")))
      private$.name <- value
    }
  ),
  private = list(
    .name = "",
    display_attributes = function() NULL
  )
)

object_name_ok <- function(name) {
  is.character(name) && length(name) == 1L && !is.na(name) &&
    (!nzchar(name) || node_name_ok(name))
}

# ---- attribute paths: "a/b/2/c"; numeric segments index JSON arrays

attr_path <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name))
    zarr_abort("argument", "an attribute name must be a single string")
  p <- strsplit(name, "/", fixed = TRUE)[[1L]]
  p <- p[nzchar(p)]
  if (!length(p)) zarr_abort("argument", sprintf("invalid attribute name '%s'", name))
  p
}

attr_is_object <- function(x) is.list(x) && !is.null(names(x)) && any(nzchar(names(x)))

attr_index <- function(lst, key) {
  if (attr_is_object(lst) || !grepl("^[0-9]+$", key)) return(NA_integer_)
  as.integer(key)
}

attr_get <- function(atts, name) {
  if (!length(atts)) return(NULL)
  for (key in attr_path(name)) {
    i <- attr_index(atts, key)
    if (!is.na(i)) {
      if (!(is.list(atts) || is.atomic(atts)) || i < 1L || i > length(atts)) return(NULL)
      atts <- atts[[i]]
    } else {
      if (!is.list(atts) || is.null(atts[[key]])) return(NULL)
      atts <- atts[[key]]
    }
  }
  atts
}

attr_set <- function(lst, path, value) {
  if (is.null(lst)) lst <- named_list()
  key <- path[[1L]]
  i <- attr_index(lst, key)
  if (!is.na(i)) {
    if (i < 1L || i > length(lst) + 1L)
      zarr_abort("argument", sprintf("index %d is out of range for an array of length %d", i, length(lst)))
    if (is.atomic(lst)) lst <- as.list(lst)
    child <- if (i <= length(lst)) lst[[i]] else NULL
    lst[i] <- list(if (length(path) == 1L) value else attr_set(attr_child(child), path[-1L], value))
    return(lst)
  }
  if (!is.list(lst)) lst <- as.list(lst)
  lst[key] <- list(if (length(path) == 1L) value else attr_set(attr_child(lst[[key]]), path[-1L], value))
  lst
}

attr_child <- function(x) {
  if (is.list(x)) x else if (is.atomic(x) && length(x) > 1L) as.list(x) else NULL
}

attr_append <- function(atts, name, value, after = NULL) {
  path <- attr_path(name)
  cur <- attr_get(atts, name)
  new <- if (is.null(cur)) list(value) else {
    if (attr_is_object(cur))
      zarr_abort("argument", sprintf("attribute '%s' is not an array; use set_attribute() to replace it", name))
    cur <- if (is.list(cur)) unname(cur) else as.list(cur)
    append(cur, list(value), after = if (is.null(after)) length(cur) else after)
  }
  attr_set(atts, path, new)
}

attr_delete <- function(atts, name) {
  if (is.null(atts)) return(atts)
  del <- function(lst, path) {
    key <- path[[1L]]
    i <- attr_index(lst, key)
    if (!is.na(i)) {
      if (i < 1L || i > length(lst)) return(lst)
      if (length(path) == 1L) {
        if (is.list(lst)) lst[[i]] <- NULL else lst <- lst[-i]
      } else if (is.list(lst[[i]])) lst[[i]] <- del(lst[[i]], path[-1L])
      return(lst)
    }
    if (!is.list(lst) || is.null(lst[[key]])) return(lst)
    if (length(path) == 1L) lst[[key]] <- NULL
    else if (is.list(lst[[key]])) lst[[key]] <- del(lst[[key]], path[-1L])
    lst
  }
  p <- strsplit(name, "/", fixed = TRUE)[[1L]]
  p <- p[nzchar(p)]
  if (!length(p)) return(atts)
  del(atts, p)
}
