#' Regular chunk grid
#'
#' The regular chunk grid of an array: every chunk has the same shape, and
#' chunks at the upper edges extend past the array. This object also drives
#' reading and writing: it hands the whole selection to the C engine, which
#' plans the chunks, fetches, decodes or encodes them in parallel and copies
#' between chunks and the R array in one pass.
#'
#' @seealso [chunk_grid_rectilinear], [array_builder] (`chunk_shape`),
#'   [zarr_array] (`chunking`)
#' @examples
#' a <- as_zarr(matrix(0, 100, 60), name = "m")[["/m"]]
#' a$chunking
#' @export
chunk_grid_regular <- R6::R6Class("chunk_grid_regular",
  inherit = zarr_extension,
  cloneable = FALSE,
  public = list(
    #' @description Create a regular chunk grid.
    #' @param array_shape Integer vector, the shape of the array.
    #' @param chunk_shape Integer vector, the shape of each chunk.
    #' @return An instance of this class.
    initialize = function(array_shape, chunk_shape) {
      super$initialize("regular")
      array_shape <- check_shape(array_shape, "array shape")
      chunk_shape <- check_shape(chunk_shape, "chunk shape")
      if (length(chunk_shape) != length(array_shape))
        zarr_abort("argument", "the chunk shape must have one value per dimension of the array")
      if (any(chunk_shape < 1)) zarr_abort("argument", "chunk sizes must be at least 1")
      private$.shape <- array_shape
      private$.chunk <- chunk_shape
    },

    #' @description Print a short description of the chunk grid.
    print = function() {
      cat("<Zarr regular chunk grid>\n")
      cat("Chunk shape:", paste(private$.chunk, collapse = " x "), "\n")
      cat("Chunk grid :", paste(self$chunk_grid, collapse = " x "),
          sprintf("(%s chunks)", format(prod(self$chunk_grid), big.mark = ",")), "\n")
      invisible(self)
    },

    #' @description The metadata fragment of this chunk grid.
    #' @return A list.
    metadata_fragment = function() {
      list(name = "regular", configuration = list(chunk_shape = json_array(private$.chunk)))
    },

    #' @description Read a rectangular block of the array.
    #' @param start,stop Integer vectors (1-based, inclusive) with one value
    #'   per dimension.
    #' @return A vector, matrix or array.
    read = function(start, stop) {
      sel <- range_selection(start, stop, private$.shape)
      self$read_selection(sel)
    },

    #' @description Write a rectangular block of the array.
    #' @param data An R vector, matrix or array with as many elements as the block.
    #' @param start,stop Integer vectors (1-based, inclusive) with one value
    #'   per dimension.
    #' @return Self, invisibly.
    write = function(data, start, stop) {
      sel <- range_selection(start, stop, private$.shape)
      self$write_selection(data, sel)
      invisible(self)
    },

    #' @description Read the elements at the cross product of per-dimension
    #'   index vectors (0-based), in any order and with repeats.
    #' @param sel A list of numeric vectors of 0-based indices, one per dimension.
    #' @param fill_as_na Whether to read the fill value as `NA` where it marks
    #'   missing values (not when it is zero; see `zarr.fill_as_na` in
    #'   [zarr-options]).
    #' @param rtype The R type of the result; `NULL` (default) for the data
    #'   type's own, "raw" for the bytes of a uint8 array.
    #' @return A vector (0-d and 1-d) or array.
    read_selection = function(sel, fill_as_na = zarr_fill_as_na(), rtype = NULL) {
      on.exit(out <- NULL) # see read_indexed()
      private$check_ready()
      spec <- private$.spec %||% private$c_spec()
      kinds <- private$.kinds %||% private$read_kinds()
      # options such as zarr.int64 apply at once (the plain types depend on none)
      spec$rtype <- rtype %||% kinds$rtype %||% engine_rtype(private$.dt)
      lens <- sel_lengths(sel)
      n <- prod(lens)
      bytes <- n * switch(spec$rtype, integer = , logical = 4, complex = 16, 8)
      # only for the messages: formatting on every call costs as much as a small read
      what <- function() sprintf("%s element(s) (%s)", format(n, big.mark = ",", scientific = FALSE), format_bytes(bytes))
      if (length(lens) > 1L && any(lens > .Machine$integer.max)) { # (an empty selection can have such a dimension)
        if (n > 2^52) # R_XLEN_T_MAX
          zarr_abort("memory", sprintf("the selection holds %s, more than an R vector can", what()),
                     array = private$.path)
        zarr_abort("value", sprintf("the selection is %s: an R array has at most 2^31 - 1 elements per dimension",
                                    paste(format(lens, scientific = FALSE, trim = TRUE), collapse = " x ")),
                   array = private$.path)
      }
      if (bytes >= 2^24) { # the checks of a large result (a small one passes them all)
        if (n > 2^52) # R_XLEN_T_MAX
          zarr_abort("memory", sprintf("the selection holds %s, more than an R vector can", what()),
                     array = private$.path)
        # (reading /proc/meminfo costs as much as a small read: only for big ones)
        mem <- if (bytes >= 2^26) machine_memory() else NA
        if (!is.na(mem) && bytes > mem)
          zarr_abort("memory", sprintf("the selection holds %s, more than this machine's memory (%s)",
                                       what(), format_bytes(mem)), array = private$.path)
        if (bytes > mem.maxVSize() * 2^20)
          zarr_abort("memory", sprintf("cannot allocate the result of %s (mem.maxVSize())", what()), array = private$.path)
      }
      opts <- read_opts(fill_as_na)
      # No condition handler around the call: a frame of tryCatch() or
      # withCallingHandlers() kept each large result alive into the next read
      # (see read_indexed()). The engine returns NULL when it cannot allocate
      # the result. A small read never shows a bar: one comparison, not
      # with_progress()'s checks.
      out <- if (bytes < opts$progress_min)
        .Call(ffi_array_read, spec, store_chunk_io(private$.store, private$.prefix), sel, opts)
      else with_progress(.Call(ffi_array_read, spec, store_chunk_io(private$.store, private$.prefix), sel, opts),
                         bytes, sprintf("Reading %s", private$.path))
      if (is.null(out))
        zarr_abort("memory", sprintf("cannot allocate the result of %s", what()), array = private$.path)
      lost <- attr(out, "zarr_lost") # set only when > 0: removing it copies `out`
      if (!is.null(lost)) {
        attr(out, "zarr_lost") <- NULL
        if (!kinds$time) warn_lost_precision(lost, private$.path)
      }
      if (kinds$plain && is.null(rtype) && n > 0) return(out) # (the engine set dim; not on an empty result)
      if (kinds$time) out <- time_from_storage(out, private$.dt)
      if (spec$rtype == "raw" && is.null(rtype)) out <- r_dtype_decode(private$.dt$data_type, out, private$.path)
      if (kinds$struct) return(struct_read_frame(private$.dt, out, private$.codecs, sel_lengths(sel)))
      if (kinds$vlen_array) out <- vlen_array_from_raw(out, private$vlen_array_dtype())
      out <- finish_rtype(out, spec$rtype)
      # the engine sets dim: setting it here would copy `out` (R code has seen it)
      if (is.list(sel) && length(sel) > 1L && is.null(dim(out))) dim(out) <- sel_lengths(sel)
      out
    },

    #' @description Write R data to the elements at the cross product of
    #'   per-dimension index vectors (0-based).
    #' @param data The values, as many as the selection holds (or one value,
    #'   which is recycled).
    #' @param sel A list of numeric vectors of 0-based indices, one per dimension.
    #' @return Self, invisibly.
    write_selection = function(data, sel) {
      private$check_ready()
      if (private$.store$read_only)
        zarr_abort("read_only", "the store is read-only", array = private$.path)
      spec <- private$c_spec()
      if (private$.dt$data_type %in% c("numpy.datetime64", "numpy.timedelta64"))
        data <- time_to_storage(data, private$.dt, private$.path)
      ndata <- length(data)
      data <- if (identical(dtype_kind(private$.dt$data_type), "r"))
        r_dtype_encode(private$.dt$data_type, data, private$.path)
      else if (identical(dtype_kind(private$.dt$data_type), "t"))
        struct_records(private$.dt, data, private$.codecs, private$.path)
      else coerce_for_dtype(data, private$.dt$data_type, array = private$.path, widen = FALSE)
      if (identical(private$.dt$data_type, "vlen_array")) data <- vlen_array_to_raw(data, private$vlen_array_dtype())
      if (is.character(data) && any(Encoding(data) == "bytes"))
        zarr_abort("value", "strings marked as \"bytes\" cannot be written as text", array = private$.path)
      warn_na_as_fill(data, private$.dt, spec$fill_marks_missing, private$.path)
      spec$rtype <- r_storage(data)
      n <- prod(sel_lengths(sel))
      if (ndata != n && ndata != 1L)
        zarr_abort("value", sprintf("%s value(s) given for a selection of %s element(s)",
                                    format(ndata), format(n)), array = private$.path)
      with_progress(.Call(ffi_array_write, spec, store_chunk_io(private$.store, private$.prefix), sel, data, engine_opts()),
                    n * switch(spec$rtype, integer = , logical = 4, complex = 16, 8),
                    sprintf("Writing %s", private$.path))
      invisible(self)
    },

    #' @description Store keys of the chunks at the given chunk coordinates.
    #' @param coords A matrix of 0-based chunk coordinates, one row per chunk.
    #' @return A character vector of keys.
    chunk_keys = function(coords) {
      coords <- matrix(as.numeric(coords), ncol = length(private$.shape))
      .Call(ffi_chunk_keys, private$c_spec(), coords)
    }
  ),
  active = list(
    #' @field chunk_shape (read-only) The shape of each chunk.
    chunk_shape = function(value) {
      if (!missing(value)) zarr_abort("read_only", "chunk_shape is read-only")
      private$.chunk
    },
    #' @field chunk_grid (read-only) The number of chunks along each dimension.
    chunk_grid = function(value) {
      if (!missing(value)) zarr_abort("read_only", "chunk_grid is read-only")
      ceiling(private$.shape / private$.chunk)
    },
    #' @field chunk_encoding The chunk key encoding: a list with `name`
    #'   ("default" or "v2") and `separator` ("/" or "."). Setting a single
    #'   string sets the separator of the "default" encoding.
    chunk_encoding = function(value) {
      if (missing(value)) return(private$.encoding)
      private$.encoding <- normalize_key_encoding(value)
      private$.spec <- NULL
    },
    #' @field data_type The [zarr_data_type] of the array.
    data_type = function(value) {
      if (missing(value)) return(private$.dt)
      private$.dt <- as_data_type(value)
      private$.dt_lazy <- FALSE
      private$.spec <- NULL
      private$.kinds <- NULL
    },
    #' @field codecs The list of codecs of the array.
    codecs = function(value) {
      if (missing(value)) return(codec_chain_objects(private$.codecs))
      private$.codecs <- value
      private$.spec <- NULL
    },
    #' @field store The [zarr_store] of the array.
    store = function(value) {
      if (missing(value)) return(private$.store)
      private$.store <- value
    },
    #' @field cache_bytes `NULL`, or the most bytes of the array's decoded
    #'   chunks the decoded-chunk cache may hold (the array's
    #'   `chunk_cache_bytes`).
    cache_bytes = function(value) {
      if (missing(value)) return(private$.cache_bytes)
      private$.cache_bytes <- value
      private$.spec <- NULL
    },
    #' @field array_prefix The store prefix of the array (for example "group/array/").
    array_prefix = function(value) {
      if (missing(value)) return(private$.prefix)
      private$.prefix <- value
      private$.path <- if (nzchar(value)) paste0("/", sub("/$", "", value)) else "/"
      private$.spec <- NULL
    }
  ),
  private = list(
    .shape = NULL, .chunk = NULL, .dt = NULL, .codecs = NULL, .store = NULL,
    .prefix = "", .path = "/", .spec = NULL, .cache_bytes = NULL, .kinds = NULL, .dt_lazy = FALSE,
    .encoding = list(name = "default", separator = "/"),
    vlen_array_dtype = function() {
      fr <- if (inherits(private$.codecs, "zarr_codec_chain")) codec_chain_fragments(private$.codecs)
        else lapply(private$.codecs, function(cd) cd$metadata_fragment())
      cd <- Find(function(f) identical(f[["name"]], "vlen-array"), fr)
      cd[["configuration"]][["dtype"]]
    },
    # What a read does after the engine's call, by the data type alone (asked
    # once, not on every read): `rtype` is the R type of the plain types,
    # which no option changes (NULL for the others).
    read_kinds = function() {
      name <- private$.dt$data_type
      i <- match(name, dtype_table$name)
      rt <- if (!is.na(i)) dtype_table$rtype[i] else NA_character_
      private$.kinds <- list(
        rtype = if (rt %in% c("logical", "integer", "double", "complex", "character")) rt,
        time = name %in% c("numpy.datetime64", "numpy.timedelta64"),
        struct = identical(dtype_kind(name), "t"),
        vlen_array = identical(name, "vlen_array"))
      # nothing to do after the engine's call (it sets dim)
      private$.kinds$plain <- !is.null(private$.kinds$rtype) && !private$.kinds$time && !private$.kinds$struct &&
        !private$.kinds$vlen_array
      private$.kinds
    },
    check_ready = function() {
      # (a data type made on first use is there: asking would make it)
      if ((!private$.dt_lazy && is.null(private$.dt)) || is.null(private$.codecs) || is.null(private$.store))
        zarr_abort("state", "the chunk grid is not attached to an array")
    },
    c_spec = function() {
      if (!is.null(private$.spec)) return(private$.spec)
      dt <- private$.dt
      strkind <- dtype_info(dt$data_type)$strkind
      private$.spec <- list(
        name = private$.path,
        shape = as.numeric(private$.shape),
        chunk_shape = as.numeric(private$.chunk),
        dtype = engine_dtype(dt$data_type),
        strkind = strkind,
        stored_size = if (is.na(strkind)) 0 else as.numeric(dt$size %|NA|% 0),
        rtype = engine_rtype(dt),
        fill = if (identical(dtype_kind(dt$data_type), "t"))
          struct_fill_record(struct_layout(dt$configuration), dt$fill_value, struct_big_endian(private$.codecs))
          else fill_bytes(dt$data_type, dt$fill_value),
        fill_marks_missing = fill_is_missing_marker(dt),
        codecs = if (inherits(private$.codecs, "zarr_codec_chain")) codec_chain_spec(private$.codecs)
          else chain_c_spec(private$.codecs),
        key_prefix = private$.prefix,
        key_sep = private$.encoding$separator,
        key_v2 = identical(private$.encoding$name, "v2"),
        cache_bytes = private$.cache_bytes
      )
      private$.spec
    }
  )
)

# The warning of a read whose values R cannot hold exactly (the engine's
# count of them, attribute zarr_lost of its result).
warn_lost_precision <- function(lost, path) {
  zarr_warn("precision", sprintf("%s value(s) of array '%s' could not be represented exactly in R",
                                 format(lost), path))
}

# A regular grid of a validated parse (parse_array_metadata()): its shapes
# need none of initialize()'s checks. Built as $new() builds it (R6's
# constructor for a generator under $debug() or changed with $set()).
chunk_grid_of_parse <- function(shape, chunk) {
  gen <- chunk_grid_regular
  if (is.null(gen$.__r6_new__) || length(gen$debug_names)) return(gen$new(shape, chunk))
  cg <- .Call(ffi_r6_build, r6_plan(gen, gen$classname)$c)
  priv <- .subset2(cg, ".__enclos_env__")$private
  priv$.name <- "regular"
  priv$.shape <- shape
  priv$.chunk <- chunk
  cg
}

# Attach a new grid to its array: what the setters of codecs, store,
# chunk_encoding (normalized by the parse), array_prefix (with the array's
# path, which it gives) and cache_bytes do, without a call each.
chunk_grid_attach <- function(cg, codecs, store, encoding, prefix, path, cache_bytes) {
  priv <- .subset2(cg, ".__enclos_env__")$private
  priv$.codecs <- codecs
  priv$.store <- store
  priv$.encoding <- encoding
  priv$.prefix <- prefix
  priv$.path <- path
  priv$.cache_bytes <- cache_bytes
  priv$.spec <- NULL
  invisible(cg)
}

#' @rdname chunk_grid_regular
#' @param object A `chunk_grid_regular` instance.
#' @param ... Ignored.
#' @export
str.chunk_grid_regular <- function(object, ...) {
  cat(sprintf("Regular chunk grid: chunks %s, grid %s\n",
              paste(object$chunk_shape, collapse = " x "),
              paste(object$chunk_grid, collapse = " x ")))
  invisible(NULL)
}

# Strings follow the rule of the other types: elements equal to a fill value
# that marks missing values (fill_is_missing_marker()) read as NA. The engine
# does this itself; json2 arrays, decoded in R, come here.
strings_fill_as_na <- function(out, dt) {
  if (!is.character(out) || !length(out) || !fill_is_missing_marker(dt)) return(out)
  fill <- dt$fill_value
  if (!is.character(fill) || length(fill) != 1L) return(out)
  hit <- which(out == fill)
  if (length(hit)) out[hit] <- NA_character_
  out
}

normalize_key_encoding <- function(value) {
  if (is.character(value) && length(value) == 1L) value <- list(name = "default", separator = value)
  if (!is.list(value)) zarr_abort("argument", "invalid chunk key encoding")
  name <- value[["name"]] %||% "default"
  sep <- value[["separator"]] %||% value[["configuration"]][["separator"]] %||% (if (name == "v2") "." else "/")
  if (!name %in% c("default", "v2"))
    zarr_abort("metadata", sprintf("unsupported chunk key encoding '%s'", name))
  if (!sep %in% c("/", "."))
    zarr_abort("metadata", sprintf("invalid chunk key separator '%s'", sep))
  list(name = name, separator = sep)
}

check_shape <- function(x, what) {
  if (is.list(x)) x <- unlist(x)
  x <- suppressWarnings(as.numeric(x))
  if (anyNA(x) || any(x < 0) || any(x != trunc(x)))
    zarr_abort("argument", sprintf("%s must be a vector of non-negative whole numbers", what))
  x
}

range_selection <- function(start, stop, shape) {
  start <- check_shape(start, "start")
  stop <- check_shape(stop, "stop")
  if (length(start) != length(shape) || length(stop) != length(shape))
    zarr_abort("argument", "start and stop need one value per dimension")
  if (any(start < 1) || any(stop > shape) || any(stop < start))
    zarr_abort("index", "start and stop must lie within the array, with start <= stop")
  lapply(seq_along(shape), function(d) zarr_range(start[d] - 1, stop[d] - start[d] + 1))
}

# Physical memory plus swap in bytes (Linux, or a cgroup limit when lower);
# NA where unknown. A read larger than this cannot succeed, and trying would
# only wake the out-of-memory killer.
# Read again at most once a minute: reading /proc costs more than opening an
# array.
machine_memory <- function() {
  now <- proc.time()[[3L]]
  cache <- machine_memory_cache
  if (!is.null(cache$at) && now - cache$at < 60) return(cache$value)
  cache$value <- machine_memory_read()
  cache$at <- now
  cache$value
}
machine_memory_cache <- new.env(parent = emptyenv())

machine_memory_read <- function() {
  if (!file.exists("/proc/meminfo")) return(NA_real_)
  info <- tryCatch(readLines("/proc/meminfo", warn = FALSE), error = function(e) character())
  kb <- function(field) {
    v <- grep(paste0("^", field, ":"), info, value = TRUE)
    if (length(v)) as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", v[1])) * 1024 else NA_real_
  }
  total <- kb("MemTotal") + (kb("SwapTotal") %|NA|% 0)
  cg <- suppressWarnings(tryCatch(as.numeric(readLines("/sys/fs/cgroup/memory.max", warn = FALSE)[1]),
                                  error = function(e) NA_real_))
  if (!is.na(cg) && (is.na(total) || cg < total)) total <- cg
  total
}

#' Rectilinear chunk grid
#'
#' The `rectilinear` chunk grid (a registered Zarr extension): along each
#' dimension, chunks have lengths of their own, listed in the metadata. A
#' regular grid is the special case of equal lengths. Reading and writing go
#' through the same C engine as [chunk_grid_regular]; only the chunk lookup
#' differs. To create an array with this grid, set the `chunk_shape` of an
#' [array_builder] to a list with one vector of chunk lengths per dimension
#' (or a single number for a dimension of regular chunks).
#'
#' @seealso [chunk_grid_regular], [array_builder] (`chunk_shape`), [zarr_array]
#'   (`chunking`)
#' @examples
#' # chunks of 2, 3 and 5 rows, and of 3 columns
#' def <- define_array("float64", c(10, 6))
#' def$chunk_shape <- list(c(2, 3, 5), 3)
#' z <- create_zarr() # in memory
#' a <- z$add_array("/", "r", def)
#' a[] <- matrix(1:60, 10, 6)
#' a$chunking
#' a$chunking$chunk_edges
#' a[4:6, 2] # rows 4 to 6 lie in the second chunk of rows
#' # the grid on its own
#' chunk_grid_rectilinear$new(c(10, 6), list(c(2, 3, 5), 3))
#' @export
chunk_grid_rectilinear <- R6::R6Class("chunk_grid_rectilinear",
  inherit = chunk_grid_regular,
  cloneable = FALSE,
  public = list(
    #' @description Create a rectilinear chunk grid.
    #' @param array_shape Integer vector, the shape of the array.
    #' @param chunk_shapes A list with one element per dimension: the lengths
    #'   of its chunks (a vector), or a single number for chunks of one length.
    #'   A `list(V, N)` element inside a dimension's list stands for `N` chunks
    #'   of length `V` (the run-length form of the metadata).
    #' @return An instance of this class.
    initialize = function(array_shape, chunk_shapes) {
      array_shape <- check_shape(array_shape, "array shape")
      if (!is.list(chunk_shapes) || length(chunk_shapes) != length(array_shape))
        zarr_abort("argument", "chunk_shapes must be a list with one element per dimension of the array")
      edges <- lapply(seq_along(array_shape), function(d)
        rectilinear_edges(chunk_shapes[[d]], array_shape[d], d))
      super$initialize(array_shape, vapply(edges, function(e) max(c(1, e)), 0))
      private$.name <- "rectilinear"
      private$.edges <- edges
    },

    #' @description Print a short description of the chunk grid.
    print = function() {
      cat("<Zarr rectilinear chunk grid>\n")
      for (d in seq_along(private$.edges)) {
        e <- private$.edges[[d]]
        cat(sprintf("Dimension %d: %d chunk(s) of %s\n", d, length(e),
                    paste(utils::head(e, 8), collapse = ", ")), if (length(e) > 8) "...")
      }
      invisible(self)
    },

    #' @description The metadata fragment of this chunk grid, with runs of
    #'   equal lengths in their run-length form.
    #' @return A list.
    metadata_fragment = function() {
      rectilinear_fragment(private$.edges, private$.shape)
    }
  ),
  active = list(
    #' @field chunk_edges (read-only) The lengths of the chunks along each
    #'   dimension (a list of numeric vectors).
    chunk_edges = function(value) {
      if (!missing(value)) zarr_abort("read_only", "chunk_edges is read-only")
      private$.edges
    },
    #' @field chunk_grid (read-only) The number of chunks along each dimension.
    chunk_grid = function(value) {
      if (!missing(value)) zarr_abort("read_only", "chunk_grid is read-only")
      vapply(private$.edges, length, 0)
    }
  ),
  private = list(
    .edges = NULL,
    c_spec = function() {
      if (!is.null(private$.spec)) return(private$.spec)
      spec <- super$c_spec()
      spec$chunk_edges <- lapply(private$.edges, as.numeric)
      private$.spec <- spec
      spec
    }
  )
)

#' @rdname chunk_grid_rectilinear
#' @param object A `chunk_grid_rectilinear` instance.
#' @param ... Ignored.
#' @export
str.chunk_grid_rectilinear <- function(object, ...) {
  cat(sprintf("Rectilinear chunk grid: %s chunks\n", paste(object$chunk_grid, collapse = " x ")))
  invisible(NULL)
}

# Most chunks along one dimension of a rectilinear grid: the lengths are
# held in memory, so a hostile run-length encoding must not expand without
# bound.
rectilinear_max_chunks <- 2^24

# One dimension's chunk lengths from the metadata form (a number: regular
# chunks; a list of lengths and c(V, N) runs), up to the first chunk that
# reaches the extent (later chunks hold no element).
rectilinear_edges <- function(x, extent, d = 1L) {
  bad <- function(msg) zarr_abort("metadata", sprintf("rectilinear chunk grid, dimension %d: %s", d, msg))
  whole <- function(v) is.numeric(v) && length(v) == 1L && !is.na(v) && v >= 1 && v < 2^53 && v == trunc(v)
  if (!is.list(x) && length(x) == 1L) {
    if (!whole(x)) bad("a chunk length must be a whole number >= 1")
    n <- ceiling(extent / x)
    if (n > rectilinear_max_chunks) bad("too many chunks")
    return(rep(as.numeric(x), n))
  }
  if (!is.list(x)) x <- as.list(x)
  out <- vector("list", length(x))
  total <- 0
  count <- 0
  for (i in seq_along(x)) {
    if (total >= extent && count > 0) break
    el <- x[[i]]
    if (is.list(el) || length(el) == 2L) {
      el <- unlist(el)
      if (length(el) != 2L || !whole(el[1L]) || !whole(el[2L]))
        bad("a run must be [length, count] with whole numbers >= 1")
      # only as many as reach the extent
      need <- max(1, ceiling((extent - total) / el[1L]))
      n <- min(el[2L], need)
      if (count + n > rectilinear_max_chunks) bad("too many chunks")
      out[[i]] <- rep(as.numeric(el[1L]), n)
      total <- total + n * el[1L]
      count <- count + n
    } else {
      if (!whole(el)) bad("a chunk length must be a whole number >= 1")
      out[[i]] <- as.numeric(el)
      total <- total + el
      count <- count + 1
    }
  }
  if (total < extent)
    bad(sprintf("the chunk lengths add up to %s, less than the extent %s", format(total), format(extent)))
  unlist(out) %||% numeric()
}

# Chunks per dimension of an array of `shape`, from its metadata (v3 form):
# a regular or a rectilinear grid.
metadata_chunk_counts <- function(m, shape) {
  grid <- m[["chunk_grid"]]
  if (identical(grid[["name"]], "rectilinear")) {
    cs <- grid[["configuration"]][["chunk_shapes"]]
    if (!is.list(cs) || length(cs) != length(shape))
      zarr_abort("metadata", "the rectilinear chunk grid needs chunk_shapes for every dimension")
    return(vapply(seq_along(shape), function(d) length(rectilinear_edges(cs[[d]], shape[d], d)), 0))
  }
  chunk <- check_shape(grid[["configuration"]][["chunk_shape"]], "chunk shape")
  ceiling(shape / pmax(1, chunk))
}

# The metadata of a rectilinear grid: per dimension a single number when the
# chunks are regular, else lengths with runs of two or more as [V, N].
rectilinear_fragment <- function(edges, shape) {
  shapes <- lapply(seq_along(edges), function(d) {
    e <- edges[[d]]
    if (length(e) && all(e == e[1L]) && length(e) == ceiling(shape[d] / e[1L])) return(e[1L])
    r <- rle(e)
    lapply(seq_along(r$values), function(i)
      if (r$lengths[i] > 1L) json_array(c(r$values[i], r$lengths[i])) else r$values[i])
  })
  list(name = "rectilinear", configuration = list(kind = "inline", chunk_shapes = shapes))
}
