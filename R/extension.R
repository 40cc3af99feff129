#' Zarr extension points
#'
#' Base class of everything in an array's metadata that Zarr defines as an
#' extension point: data types, chunk grids and codecs. It holds the name and
#' produces the metadata fragment that describes the object, including nested
#' extensions (for example the codecs inside a sharding codec).
#'
#' @seealso [zarr_codec], [zarr_data_type], [chunk_grid_regular],
#'   [chunk_grid_rectilinear]
#' @examples
#' # the codecs, data type and chunk grid of an array are extension objects
#' a <- as_zarr(matrix(1:6, 2, 3), name = "m")[["/m"]]
#' vapply(a$codecs, function(cd) cd$name, "")
#' inherits(a$codecs[[1]], "zarr_extension")
#' str(a$chunking$metadata_fragment())
#' # the base class holds a name and gives the simplest metadata fragment
#' e <- zarr_extension$new("example")
#' e$name
#' e$metadata_fragment()
#' @export
zarr_extension <- R6::R6Class("zarr_extension",
  cloneable = FALSE,
  public = list(
    #' @description The lines that `print()` writes, as a character vector
    #'   (also what [format()] gives).
    #' @param ... Ignored.
    #' @return A character vector.
    format = function(...) format_printed(self),

    #' @description Create an extension object.
    #' @param name The name of the extension, a single character string.
    #' @return An instance of this class.
    initialize = function(name) {
      if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name))
        zarr_abort("argument", "an extension name must be a single non-empty string")
      private$.name <- name
    },

    #' @description The metadata fragment of this extension.
    #' @return A list.
    metadata_fragment = function() {
      list(name = private$.name)
    }
  ),
  active = list(
    #' @field name The name of the extension.
    name = function(value) {
      if (missing(value)) return(private$.name)
      private$.name <- value
    }
  ),
  private = list(.name = NULL)
)
