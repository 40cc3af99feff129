#' Array builder
#'
#' Builds (or inspects) the metadata document of an array. Shapes are given
#' in R's terms: `dim()` of the data is the Zarr shape. By default the codec
#' chain is `transpose` (dimensions reversed, so that chunks hold R's own
#' column-major bytes), `bytes` (little endian) and `zstd` compression. Set
#' `portable <- TRUE` to store chunks in C order without a transpose codec,
#' for tools that do not implement it; both read back identically.
#'
#' @seealso [define_array()], [zarr_codec] and its subclasses,
#'   [chunk_grid_regular], [chunk_grid_rectilinear], [zarr_data_type]
#' @examples
#' def <- array_builder$new()
#' def$data_type <- "int16"
#' def$shape <- c(4, 5)
#' def$chunk_shape <- c(2, 5)
#' def$dimension_names <- c("y", "x")
#' def$is_valid()
#' def$codec_info
#' z <- create_zarr() # in memory
#' a <- z$add_array("/", "counts", def)
#' a[] <- matrix(1:20, 4, 5)
#' a[2, ]
#' # another array like it, from its metadata as a template
#' like <- array_builder$new(a$metadata)
#' like$shape <- c(8, 5)
#' b <- z$add_array("/", "more_counts", like)
#' b$chunking
#' @export
array_builder <- R6::R6Class("array_builder",
  cloneable = FALSE,
  public = list(
    #' @description Create a builder, optionally from existing metadata.
    #' @param metadata Optional: a JSON string or list with the metadata of an
    #'   existing array, used as a template. It is not modified.
    #' @return An instance of this class.
    initialize = function(metadata = NULL) {
      private$.codecs <- list(list(name = "bytes", configuration = list(endian = "little")),
                              list(name = "zstd", configuration = codec_defaults$zstd))
      if (is.null(metadata)) return(invisible(self))
      if (is.character(metadata)) metadata <- json_parse(metadata, "array metadata")
      fmt <- as.integer(metadata[["zarr_format"]] %||% 3L)
      private$.format <- fmt
      private$.dt <- zarr_data_type$new(metadata[["data_type"]], metadata[["fill_value"]])
      private$.shape <- check_shape(metadata[["shape"]], "shape")
      private$.chunk <- check_shape(metadata[["chunk_grid"]][["configuration"]][["chunk_shape"]], "chunk shape")
      private$.codecs <- lapply(metadata[["codecs"]], function(cd) list(name = cd[["name"]], configuration = cd[["configuration"]]))
      private$.attributes <- metadata[["attributes"]]
      private$.dimnames <- metadata[["dimension_names"]]
      private$.encoding <- metadata[["chunk_key_encoding"]]
      private$.portable <- !any(vapply(private$.codecs, function(cd) cd[["name"]] == "transpose", TRUE))
    },

    #' @description Print the metadata being built.
    print = function() {
      cat("<Zarr array builder>", if (self$is_valid()) "(valid)" else "(incomplete)", "\n")
      if (self$is_valid()) cat(self$metadata("JSON")) else {
        cat("Data type:", if (is.null(private$.dt)) "-" else private$.dt$data_type, "\n")
        cat("Shape    :", if (is.null(private$.shape)) "-" else paste(private$.shape, collapse = " x "), "\n")
      }
      invisible(self)
    },

    #' @description The metadata document to create the array with.
    #' @param format "list" or "JSON".
    #' @return The metadata.
    metadata = function(format = "list") {
      if (!identical(format, "list")) format <- match.arg(format, c("list", "JSON"))
      dt <- private$.dt
      frag <- if (!is.null(dt)) dt$metadata_fragment()
      # a builder reused for many arrays makes its document once: what it is
      # made from (the data type's fragment, since the data type object can
      # change in place) is compared with the last time
      state <- list(frag, private$.format, private$.shape, private$.chunk, private$.edges, private$.codecs,
                    private$.attributes, private$.dimnames, private$.encoding, validated_slot$generation)
      if (!is.null(private$.made) && identical(private$.made$state, state)) {
        meta <- private$.made$meta
      } else {
        codecs <- private$valid_chain() # validated once per distinct chain (see codec_chain())
        if (is.null(codecs)) zarr_abort("metadata", "the array definition is incomplete (data type and shape are needed)")
        meta <- list(zarr_format = private$.format %||% 3L, node_type = "array", shape = json_array(private$.shape),
                     data_type = frag[["data_type"]],
                     chunk_grid = if (!is.null(private$.edges)) rectilinear_fragment(private$.edges, private$.shape)
                       else list(name = "regular", configuration = list(chunk_shape = json_array(private$chunk_or_default()))),
                     fill_value = frag[["fill_value"]],
                     codecs = codec_chain_fragments(codecs),
                     attributes = private$.attributes %||% named_list())
        if (!is.null(private$.encoding)) meta[["chunk_key_encoding"]] <- private$.encoding
        if (!is.null(private$.dimnames))
          meta[["dimension_names"]] <- lapply(private$.dimnames, function(n) if (is.na(n)) NULL else n)
        private$.made <- list(state = state, meta = meta)
      }
      if (format == "JSON") return(json_write(json_prepare_metadata(meta)))
      meta
    },

    #' @description Whether a part of the definition was set explicitly
    #'   (rather than left to its default).
    #' @param what "format", "shape" or "chunk_shape".
    #' @return `TRUE` or `FALSE`.
    is_set = function(what = c("format", "shape", "chunk_shape")) {
      what <- match.arg(what)
      switch(what, format = !is.null(private$.format), shape = !is.null(private$.shape),
             chunk_shape = !is.null(private$.chunk) || !is.null(private$.edges))
    },

    #' @description Add a codec at the end of the chain, or at `.position`.
    #'   A codec whose kind does not fit at that place is an error of class
    #'   `zarr_error_codec` (the builder is left unchanged). Adding "bytes" reconfigures the one bytes codec (for example
    #'   `list(endian = "big")`). Adding "sharding_indexed" with
    #'   `list(chunk_shape = ...)` turns each chunk into a shard of inner
    #'   chunks of that shape, encoded with the codecs defined so far.
    #' @param codec The codec name, for example "gzip", "zstd", "blosc",
    #'   "crc32c", "transpose" or "bytes".
    #' @param configuration List of its parameters, or `NULL`.
    #' @param .position Optional 1-based position.
    #' @return Self, invisibly.
    add_codec = function(codec, configuration, .position = NULL) {
      if (missing(configuration) || is.null(configuration)) configuration <- list()
      if (is.null(codec_registry[[codec]]))
        zarr_abort("codec", sprintf("unsupported codec '%s'", codec))
      entry <- list(name = codec, configuration = configuration)
      codecs <- private$.codecs
      at <- match(codec, vapply(codecs, function(cd) cd[["name"]], ""))
      trial <- if (codec == "sharding_indexed") { # the chain so far encodes each inner chunk
        if (is.null(configuration[["chunk_shape"]]))
          zarr_abort("codec", "sharding_indexed needs the inner chunk_shape")
        cfg <- configuration
        cfg[["chunk_shape"]] <- json_array(check_shape(cfg[["chunk_shape"]], "inner chunk shape"))
        cfg[["codecs"]] <- cfg[["codecs"]] %||% codecs
        cfg[["index_codecs"]] <- cfg[["index_codecs"]] %||%
          list(list(name = "bytes", configuration = list(endian = "little")), list(name = "crc32c"))
        cfg[["index_location"]] <- cfg[["index_location"]] %||% "end"
        list(list(name = codec, configuration = cfg))
      } else if (codec %in% ab_codec_names &&
                 any(names_ab <- vapply(codecs, function(cd) cd[["name"]] %in% ab_codec_names, TRUE))) {
        # the one array -> bytes codec is reconfigured or replaced
        codecs[[which(names_ab)[1L]]] <- entry
        codecs
      } else {
        pos <- if (is.null(.position)) length(codecs) + 1L else min(max(1L, as.integer(.position)), length(codecs) + 1L)
        append(codecs, list(entry), after = pos - 1L)
      }
      tryCatch(check_codec_order(private$instantiate(trial), ""),
               zarr_error = function(e)
                 zarr_abort("codec", sprintf("codec '%s' cannot be added there: %s", codec, conditionMessage(e))))
      private$.codecs <- trial
      if (codec == "transpose") private$.portable <- FALSE
      invisible(self)
    },

    #' @description Remove a codec. Removing `bytes` is not allowed.
    #' @param codec The name of the codec.
    #' @return Self, invisibly.
    remove_codec = function(codec) {
      if (identical(codec, "bytes")) {
        zarr_warn("codec", "the bytes codec cannot be removed")
        return(invisible(self))
      }
      keep <- vapply(private$.codecs, function(cd) !identical(cd[["name"]], codec), TRUE)
      if (all(keep)) return(invisible(self))
      # the remaining codecs must still form a chain (one array -> bytes codec)
      ok <- tryCatch({
        check_codec_order(private$instantiate(private$.codecs[keep]), "")
        TRUE
      }, zarr_error = function(e) {
        zarr_warn("codec", sprintf("codec '%s' was not removed: %s", codec, conditionMessage(e)))
        FALSE
      })
      if (!ok) return(invisible(self))
      private$.codecs <- private$.codecs[keep]
      if (codec == "transpose") private$.portable <- TRUE
      invisible(self)
    },

    #' @description Whether the builder holds a complete, valid definition.
    #' @return `TRUE` or `FALSE`.
    is_valid = function() !is.null(private$valid_chain())
  ),
  active = list(
    #' @field format The Zarr format, 3 or 2. Unless set, an array takes the
    #'   format of the group it is added to; a format that is set must match it
    #'   (a Zarr v3 reader never sees a v2 array in a v3 group).
    format = function(value) {
      if (missing(value)) return(private$.format %||% 3L)
      value <- suppressWarnings(as.integer(value))
      if (length(value) != 1L || !value %in% c(2L, 3L)) zarr_abort("argument", "the format must be 2 or 3")
      private$.format <- value
    },
    #' @field dimension_names Optional names of the dimensions (a character
    #'   vector with one name per dimension, `NA` for none), or `NULL`.
    dimension_names = function(value) {
      if (missing(value)) return(if (is.null(private$.dimnames)) NULL else unlist(private$.dimnames))
      if (!is.null(value)) {
        if (length(value) != length(private$.shape))
          zarr_abort("argument", "dimension_names needs one name per dimension")
        value <- as.list(as.character(value))
      }
      private$.dimnames <- value
    },
    #' @field portable `FALSE` (default): chunks are stored in R's
    #'   column-major order through a transpose codec. `TRUE`: chunks are
    #'   stored in C order without a transpose codec.
    portable = function(value) {
      if (missing(value)) return(private$.portable)
      if (!is.logical(value) || length(value) != 1L || is.na(value))
        zarr_abort("argument", "portable must be TRUE or FALSE")
      private$.portable <- value
      private$.codecs <- Filter(function(cd) cd[["name"]] != "transpose", private$.codecs)
      if (!value && length(private$.shape) > 1L)
        private$.codecs <- c(list(list(name = "transpose",
                                       configuration = list(order = rev(seq_along(private$.shape) - 1L)))),
                             private$.codecs)
    },
    #' @field data_type The data type (a name such as "float64"); setting it
    #'   resets the fill value to the type's default.
    data_type = function(value) {
      if (missing(value)) return(if (is.null(private$.dt)) NULL else private$.dt$data_type)
      if (inherits(value, "zarr_data_type"))
        value <- if (is.null(value[["configuration"]])) value[["data_type"]] else list(name = value[["data_type"]], configuration = value[["configuration"]])
      private$.dt <- zarr_data_type$new(value)
      # variable-length types need their own array -> bytes codec
      ab <- switch(private$.dt$data_type, string = "vlen-utf8", variable_length_bytes = , bytes = "vlen-bytes",
                   vlen_array = "vlen-array", "bytes")
      is_ab <- vapply(private$.codecs, function(cd) cd[["name"]] %in% c("bytes", "vlen-utf8", "vlen-bytes", "vlen-array"), TRUE)
      if (any(is_ab) && private$.codecs[[which(is_ab)[1L]]]$name != ab)
        private$.codecs[[which(is_ab)[1L]]] <- list(name = ab, configuration = switch(ab, bytes = list(endian = "little"),
          `vlen-array` = list(dtype = "<f8"), named_list())) # vlen-array: doubles unless reconfigured
    },
    #' @field fill_value The value of elements that were never written. Any
    #'   value but zero (`0`, `FALSE`, `""`, ...) and `NaN` also marks missing
    #'   values: they read as `NA` (see `zarr.fill_as_na` in [zarr-options]).
    fill_value = function(value) {
      if (is.null(private$.dt)) zarr_abort("argument", "set the data type first")
      if (missing(value)) return(private$.dt$fill_value)
      private$.dt$fill_value <- value
    },
    #' @field shape The shape of the array. Setting it resets the chunk shape.
    shape = function(value) {
      if (missing(value)) return(private$.shape)
      value <- check_shape(value, "shape")
      had_transpose <- any(vapply(private$.codecs, function(cd) cd[["name"]] == "transpose", TRUE))
      private$.shape <- value
      private$.chunk <- NULL
      private$.edges <- NULL
      if (had_transpose || (!private$.portable && length(value) > 1L)) self$portable <- private$.portable
    },
    #' @field chunk_shape The shape of each chunk (set a vector with one value
    #'   per dimension; reading gives a [chunk_grid_regular]). Setting a list
    #'   with one vector of chunk lengths per dimension (or a single number for
    #'   a dimension of equal chunks) makes a [chunk_grid_rectilinear].
    chunk_shape = function(value) {
      if (missing(value)) {
        if (is.null(private$.shape)) return(NULL)
        if (!is.null(private$.edges)) return(chunk_grid_rectilinear$new(private$.shape, private$.edges))
        return(chunk_grid_regular$new(private$.shape, private$chunk_or_default()))
      }
      if (is.null(private$.shape)) zarr_abort("argument", "set the shape before the chunk shape")
      if (is.list(value)) {
        if (length(value) != length(private$.shape))
          zarr_abort("argument", "the chunk shapes need one element per dimension")
        edges <- lapply(seq_along(value), function(d) rectilinear_edges(value[[d]], private$.shape[d], d))
        private$.edges <- edges
        private$.chunk <- vapply(edges, function(e) max(c(1, e)), 0)
        return(invisible())
      }
      private$.edges <- NULL
      value <- check_shape(value, "chunk shape")
      if (length(value) != length(private$.shape) || any(value < 1))
        zarr_abort("argument", "the chunk shape needs one positive value per dimension")
      private$.chunk <- value
    },
    #' @field codec_info (read-only) A data.frame of the codecs' names and modes.
    codec_info = function(value) {
      cds <- private$codec_chain()
      data.frame(mode = unname(cds$modes), name = unname(cds$names), stringsAsFactors = FALSE)
    },
    #' @field codecs (read-only) The codecs, as codec objects.
    codecs = function(value) codec_chain_objects(private$codec_chain()),
    #' @field data_type_from_storage.mode Set the data type from the
    #'   [storage.mode()] of the R data the array will hold: "logical" (bool),
    #'   "integer" (int32), "double" (float64), "complex" (complex128) or
    #'   "character" (string); like setting `data_type`, this resets the fill
    #'   value. Reading it gives the [zarr_data_type] (or `NULL`).
    data_type_from_storage.mode = function(value) {
      if (missing(value)) return(private$.dt)
      dt <- if (is.character(value) && length(value) == 1L)
        switch(value, logical = "bool", integer = "int32", double = , numeric = "float64",
               complex = "complex128", character = "string", NA_character_) else NA_character_
      if (is.na(dt))
        zarr_abort("argument", sprintf("no Zarr data type for the storage mode '%s'", paste(format(value), collapse = " ")))
      if (is.null(private$.dt) || !identical(private$.dt$data_type, dt)) self$data_type <- dt
    }
  ),
  private = list(
    # .format NULL: the array takes the format of the group it goes into
    .format = NULL, .portable = FALSE, .dt = NULL, .shape = NULL, .chunk = NULL, .edges = NULL,
    .codecs = NULL, # bytes and zstd (set by initialize)
    .attributes = NULL, .dimnames = NULL, .encoding = NULL,
    .made = NULL, # the last document metadata() made, and what from
    chunk_or_default = function() private$.chunk %||% pmax(1, pmin(private$.shape, 100)),
    instantiate = function(entries) {
      dt <- private$.dt %||% zarr_data_type$new("uint8")
      chunk <- if (is.null(private$.shape)) numeric() else private$chunk_or_default()
      codec_chain(entries, data_type = dt, chunk_shape = chunk)
    },
    codec_chain = function() private$instantiate(private$.codecs),
    # The codec chain of a complete, valid definition; NULL otherwise.
    valid_chain = function() {
      if (is.null(private$.dt) || is.null(private$.shape)) return(NULL)
      chain <- tryCatch({
        ch <- private$codec_chain()
        check_codec_order(ch, "")
        ch
      }, zarr_error = function(e) NULL)
      if (is.null(chain) || length(private$chunk_or_default()) != length(private$.shape)) NULL else chain
    }
  )
)

ab_codec_names <- c("bytes", "vlen-utf8", "vlen-bytes", "json2", "vlen-array", "categorize", "n5_default", "packbits", "zfp", "zarrs.zfp")

#' Define a new Zarr array
#'
#' Starts the definition of an array from its data type and shape, with
#' chunks of at most 100 elements along each dimension, R-order storage and
#' zstd compression. Adjust the returned [array_builder] before creating the
#' array with `add_array()`.
#'
#' @seealso [array_builder] for the settings it offers, [zarr_group]
#'   (`add_array()`), [as_zarr()]
#' @param data_type The data type, such as "int32", "float64" or "string";
#'   parametrised types as a list, e.g. `list(name = "numpy.datetime64",
#'   configuration = list(unit = "s", scale_factor = 1))`.
#' @param shape The length of each dimension.
#' @return An [array_builder].
#' @export
#' @examples
#' x <- array(1:120, c(3, 8, 5))
#' def <- define_array("int32", dim(x))
#' def$chunk_shape <- c(4, 4, 4)
#' z <- create_zarr() # in memory
#' arr <- z$add_array("/", "my_array", def)
#' arr$write(x)
#' arr
define_array <- function(data_type, shape) {
  b <- array_builder$new()
  b$data_type <- data_type
  b$shape <- shape
  b
}
