#' Zarr arrays
#'
#' An array node. Reading and writing take R indices (1-based) and return or
#' accept ordinary R vectors, matrices and arrays whose `dim()` equals the Zarr
#' `shape`, whatever order the chunks are stored in. Element `x[i, j]` is Zarr
#' element `[i-1, j-1]`. See [`[.zarr_array`][array-indexing] for indexing.
#' Arrays whose attributes follow the CF conventions (as xarray writes
#' them) read decoded, and `sel()` selects by coordinate values: see
#' [cf-decoding] and [zarr_dataset()].
#'
#' @seealso [array-indexing] for `[` and `[<-`, [zarr-plot] for `plot()`,
#'   [zarr_group], [cf-decoding],
#'   [zarr_map_blocks()], [zarr_chunk_blocks()], [zarr-options]
#' @aliases sel isel
#' @examples
#' z <- as_zarr(matrix(1:20, 4, 5), name = "m")
#' a <- z[["/m"]]
#' a
#' a$shape
#' a$data_type
#' a[2:3, ] # R indices: rows 2 and 3 are Zarr rows 1 and 2
#' a[1, 1] <- 100L
#' a$read(list(1, 1:2))
#' a$set_attribute("units", "counts")
#' a$attributes
#' @export
zarr_array <- R6::R6Class("zarr_array",
  inherit = zarr_node,
  cloneable = FALSE,
  public = list(
    #' @description Open an array, or create it. In the 0.3.0 form
    #'   (`name, metadata, parent, store`) the array exists in the store. In
    #'   the form of zarr 1.0.0 (`name, metadata, parent`, no store) `parent`
    #'   is a [zarr_group] or, for a single-array store, the [zarr] object;
    #'   the array is created from `metadata` when it is not in the store yet
    #'   and becomes a child of `parent` (or the root of the `zarr` object).
    #' @param name The name of the array.
    #' @param metadata List with the metadata of the array, or an
    #'   [array_builder] (1.0.0 form).
    #' @param parent The parent group, missing or `NULL` for a single-array
    #'   store, or the [zarr] object.
    #' @param store The store (for a root array in the 0.3.0 form).
    #' @return An instance of this class.
    initialize = function(name, metadata, parent, store) {
      if (missing(parent)) parent <- NULL
      created <- FALSE
      form_100 <- missing(store) && !is.null(parent) && !node_opening()
      if (form_100) {
        # the 1.0.0 form
        if (inherits(metadata, "array_builder")) metadata <- metadata$metadata()
        if (inherits(parent, "zarr")) name <- ""
        st <- parent$store
        existing <- if (inherits(parent, "zarr")) st$get_metadata("") else parent$open_child(name)
        if (inherits(existing, "zarr_node")) existing <- existing$metadata
        if (is.null(existing)) {
          if (inherits(parent, "zarr_group")) {
            fmt <- as.integer(parent$metadata[["zarr_format"]] %||% 3L)
            if (!identical(as.integer(metadata[["zarr_format"]] %||% 3L), fmt)) {
              metadata[["zarr_format"]] <- fmt
              metadata[["chunk_key_encoding"]] <- NULL
            }
          }
          metadata <- st$create_array(if (inherits(parent, "zarr")) "/" else parent$path, name,
                                      metadata)
          created <- TRUE
        } else if (!identical(existing[["node_type"]], "array")) {
          zarr_abort("exists", sprintf("a group '%s' already exists", name))
        }
      }
      super$initialize(name, metadata, parent, store)
      # An array this package cannot read still belongs in the hierarchy: the
      # error is raised when its data are used, not when its group is opened.
      # (metadata of the plain form cannot make setup() fail: no condition
      # handler then, they cost more than the rest of opening the array)
      problem <- if (setup_cannot_fail(private$.metadata)) { private$setup(plain = TRUE); NULL } else tryCatch({
        private$setup()
        NULL
      }, error = function(e) as_metadata_error(e, self$path))
      if (!is.null(problem)) private$.problem <- problem
      # a resize or promote interrupted while its chunks moved
      if (is.list(private$.metadata) && !is.null(private$.metadata[[pending_field]]) && is.null(private$.problem))
        private$.problem <- tryCatch({
          recover_structure(self, private)
          NULL
        }, error = function(e) e)
      # a node whose metadata could not be read (broken_node()) keeps its error
      if (!is.null(attr(metadata, "zarr_problem"))) private$.problem <- attr(metadata, "zarr_problem")
      if (form_100) {
        if (inherits(parent, "zarr")) parent$root <- self
        else {
          parent$set_node(self)
          if (created) update_consolidated(self)
        }
      }
    },

    #' @description Print a summary of the array (through cli when it is
    #'   installed and `zarr_options("zarr_theme")` is set; see
    #'   [zarr_options()]; for arrays with CF attributes, "Reads as" says
    #'   what decoded reads return: see [cf-decoding]), then the details a
    #'   descendant class adds (`print_details()`) and the attributes
    #'   (`display_attributes()`).
    print = function() {
      lab <- character()
      val <- character()
      add <- function(l, v) { lab <<- c(lab, l); val <<- c(val, paste(v, collapse = " ")) }
      if (nzchar(private$.domain)) add("Domain", private$.domain)
      if (!is.null(private$.problem)) {
        add("Not readable", conditionMessage(private$.problem))
        print_lines(paste("<Zarr array>", self$path), lab, val)
        return(invisible(self))
      }
      add("Shape", paste(format_dims(self$shape), collapse = " x "))
      if (!is.null(self$dimension_names) && !all(is.na(self$dimension_names)))
        add("Dimensions", paste(ifelse(is.na(self$dimension_names), "-", self$dimension_names), collapse = ", "))
      add("Data type", c(self$data_type$data_type, sprintf("(R: %s)", self$data_type$Rtype)))
      # what read() returns, when decoding changes the stored values
      if (!isFALSE(getOption("zarr.decode_cf", TRUE))) {
        dec <- cf_read_summary(self$attributes, self$data_type, self$path)
        if (!is.null(dec)) add("Reads as", dec)
      }
      add("Fill value", format_fill(self$data_type$fill_value))
      cg <- private$.grid
      add("Chunks", c(if (inherits(cg, "chunk_grid_rectilinear")) "rectilinear, at most", paste(format_dims(cg$chunk_shape), collapse = " x "),
                      sprintf("(grid %s)", paste(format_dims(cg$chunk_grid), collapse = " x "))))
      add("Codecs", paste(vapply(codec_chain_objects(private$.codecs), codec_label, ""), collapse = " -> "))
      add("Format", paste0("Zarr v", self$metadata[["zarr_format"]] %||% 3, ", keys '",
          private$.grid$chunk_keys(matrix(0, 1, max(1L, length(self$shape)))[, seq_along(self$shape), drop = FALSE]),
          "', ..."))
      # a web server cannot list the chunks: their size is unknown, not 0
      size <- if (inherits(private$.store, "zarr_httpstore")) NA else tryCatch({
        sizes <- private$.store$key_sizes(self$prefix)
        sum(sizes[!basename(names(sizes)) %in% c("zarr.json", ".zarray", ".zattrs")], na.rm = TRUE)
      }, error = function(e) NA)
      raw <- prod(self$shape) * self$data_type$size # NA for strings of variable length
      add("Stored", if (is.na(size)) "unknown" else c(format_bytes(size),
          if (isTRUE(raw > 0 && size > 0)) sprintf("(%s uncompressed, ratio %.2f)", format_bytes(raw), raw / size) else ""))
      print_lines(paste("<Zarr array>", self$path), lab, val)
      private$print_details()
      self$print_attributes()
      invisible(self)
    },

    #' @description Print this array as a one-node hierarchy.
    #' @param idx,total Ignored; kept for symmetry with [zarr_group].
    hierarchy = function(idx = 1L, total = 1L) {
      cat(tree_lines(self), sep = "\n")
      invisible(self)
    },

    #' @description Read some or all of the array.
    #'
    #'   A selection here is not the index of `[`: as in zarr 1.0.0, an
    #'   element of two positive numbers is a range, so
    #'   `read(list(c(2, 7)))` reads elements 2 to 7 (six of them), whereas
    #'   `x[c(2, 7)]` reads elements 2 and 7. Use
    #'   [`[`][array-indexing] to index as base R does.
    #' @param selection `NULL` or missing for the whole array, or a list with
    #'   one element per dimension (a vector for a 1-d array), each one of:
    #'   `NULL` for the whole extent; two positive numbers `c(from, to)`,
    #'   the range between them (in either order, both included); a single
    #'   index; or any other vector of indices, taken as base R takes it
    #'   (positive in any order and with repeats, negative to exclude, or
    #'   logical).
    #' @param fill_as_na Whether elements equal to the fill value read as
    #'   `NA`, where the fill value marks missing values; defaults to the
    #'   `zarr.fill_as_na` option (`TRUE`). A fill value equal to zero (`0`,
    #'   `""`, `false`, ...), the default of zarr-python, zarrs, tensorstore
    #'   and zarrita for elements never written, always reads as itself: see
    #'   `zarr.fill_as_na` in [zarr-options].
    #' @param decode Whether to decode the values as the CF conventions say
    #'   (as xarray does), where the attributes of the array ask for it:
    #'   `scale_factor` and `add_offset` unpack (to double), `_Unsigned`
    #'   reinterprets integers, `_FillValue` and `missing_value` mark `NA`
    #'   (compared with the stored values), and `units` of the form "<unit>
    #'   since <date>" make times (see [cf-decoding]). Defaults to the
    #'   `zarr.decode_cf` option (`TRUE`). Arrays without these attributes
    #'   read the same either way; `FALSE` (or the `raw_read` field) gives
    #'   the stored values. `list(valid_range = TRUE)` decodes and also
    #'   reads values outside `valid_min`, `valid_max` or `valid_range` as
    #'   `NA`, as netCDF readers do (xarray, GDAL and terra do not, nor do
    #'   reads here unless the `zarr.decode_valid_range` option is `TRUE`).
    #' @return A vector (0-d and 1-d arrays), matrix or array; decoded times
    #'   are `Date`, `POSIXct` or (other calendars) `CFTime` objects; records
    #'   (`struct` and v2 structured arrays) a data.frame (see
    #'   [zarr_data_type]).
    read = function(selection = NULL, fill_as_na = getOption("zarr.fill_as_na", TRUE),
                    decode = getOption("zarr.decode_cf", TRUE)) {
      on.exit(out <- NULL) # see read_indexed()
      private$check_usable()
      # ranges only (from `[`): nothing to normalize
      sel <- if (.Call(ffi_all_ranges, selection, length(private$.shape))) selection
        else private$normalize_selection(selection)
      raw <- isTRUE(self$raw_read)
      # which fill values mark missing ones is fill_is_missing_marker()'s call
      fill_as_na <- !raw && isTRUE(fill_as_na)
      out <- if (private$.json2) {
        o <- read_json2(self, private$.grid, sel)
        if (fill_as_na) strings_fill_as_na(o, private$.dt) else o
      } else private$.grid$read_selection(sel, fill_as_na)
      enc <- if (!raw) private$cf_read_encoding(decode)
      if (!is.null(enc)) {
        out <- cf_decode(out, enc)
        if (inherits(out, "CFTime")) return(out)
      }
      if (is.null(private$.dimnames)) out else private$decorate(out)
    },

    #' @description The elements of a uint8 array as a raw vector: the bytes
    #'   as stored, a quarter of the memory of the integers that `read()`
    #'   gives, with no conversion. For arrays that hold byte blobs (see
    #'   [zarr-vectors]); `write()` takes a raw vector for such arrays too.
    #' @param selection As for `read()`.
    #' @return A raw vector (0-d and 1-d arrays), matrix or array.
    read_bytes = function(selection = NULL) {
      private$check_usable()
      if (!identical(private$.dt$data_type, "uint8"))
        zarr_abort("value", sprintf("read_bytes() reads uint8 arrays, not %s", private$.dt$data_type), array = self$path)
      out <- private$.grid$read_selection(private$normalize_selection(selection), FALSE, rtype = "raw")
      private$decorate(out)
    },

    #' @description The coordinate values of each dimension, decoded: for an
    #'   array in a group, the 1-d array of the group named as a dimension
    #'   (by `dimension_names`, or xarray's `_ARRAY_DIMENSIONS` in Zarr v2)
    #'   and as long as it holds that dimension's coordinates, as xarray
    #'   takes them. Other coordinate variables (the `coordinates`
    #'   attribute, such as 2-d latitudes) and `bounds` are named in
    #'   `cf()`.
    #' @return A list with one element per dimension, named by the dimension
    #'   names: the coordinate values, or `NULL` where there are none.
    coords = function() {
      lapply(cf_coordinate_arrays(self), function(a) if (!is.null(a)) a$read())
    },

    #' @description What the CF attributes of the array say.
    #' @return A list: `dims` (dimension names), `units`, `calendar` (for
    #'   times, else `NULL`), `time` (whether values decode to times),
    #'   `packed` (whether `scale_factor` or `add_offset` unpack them),
    #'   `coordinates` (names of the auxiliary coordinate variables of the
    #'   `coordinates` attribute), `bounds`, `grid_mapping` (names of
    #'   variables or `NULL`), `coordinate_arrays` (the arrays holding the
    #'   coordinates of each dimension, or `NULL`) and `attributes`.
    cf = function() {
      a <- self$attributes
      enc <- cf_encoding(a, private$.dt, self$path)
      words <- function(v) if (is.character(v) && length(v) == 1L) strsplit(trimws(v), "\\s+")[[1L]]
      ca <- cf_coordinate_arrays(self)
      list(dims = names(ca), units = a[["units"]], calendar = if (!is.null(enc$time)) enc$calendar,
           time = !is.null(enc$time), packed = !is.null(enc$scale) || !is.null(enc$offset),
           coordinates = words(a[["coordinates"]]), bounds = words(a[["bounds"]]),
           grid_mapping = words(a[["grid_mapping"]]), coordinate_arrays = ca, attributes = a)
    },

    #' @description Select by coordinate values, as xarray's `sel()`: only
    #'   the chunks under the selection are read.
    #' @param ... One argument per dimension to select along, named by the
    #'   dimension: two values select the coordinates between them (both
    #'   included, in either order, whatever the direction of the
    #'   coordinates); one value selects the coordinate equal to it (or the
    #'   closest one with `method = "nearest"`). Times are given as `Date`,
    #'   `POSIXct` or strings such as "2020-01-31" or "2020-01-31 12:00"
    #'   (read in the calendar of the coordinate). Dimensions not named are
    #'   read whole.
    #' @param method `NULL` (exact match of single values) or `"nearest"`.
    #' @param decode Whether to decode the values (see `read()`).
    #' @param drop Whether to drop the dimensions of one element (as `[`
    #'   does; see [zarr_cf_data]); `FALSE` (default) keeps every dimension.
    #' @return A [zarr_cf_data] object: values with their coordinates.
    sel = function(..., method = NULL, decode = getOption("zarr.decode_cf", TRUE), drop = FALSE) {
      private$check_usable()
      args <- list(...)
      dims <- cf_check_dim_args(self, args, "sel")
      coords <- self$coords()
      sel <- lapply(seq_along(dims), function(d) {
        v <- if (nzchar(dims[d])) args[[dims[d]]]
        if (is.null(v)) zarr_range(0, private$.shape[d]) else cf_sel_index(coords[[d]], v, method, dims[d], self$path)
      })
      cf_drop(new_cf_data(self, sel, coords, decode), drop)
    },

    #' @description Select by 1-based indices, as xarray's `isel()`.
    #' @param ... One argument per dimension to select along, named by the
    #'   dimension: indices as for `read()` (two numbers are a range).
    #' @param decode Whether to decode the values (see `read()`).
    #' @param drop Whether to drop the dimensions of one element (see
    #'   `sel()`).
    #' @return A [zarr_cf_data] object: values with their coordinates.
    isel = function(..., decode = getOption("zarr.decode_cf", TRUE), drop = FALSE) {
      private$check_usable()
      args <- list(...)
      dims <- cf_check_dim_args(self, args, "isel")
      sel <- private$normalize_selection(lapply(dims, function(d) if (nzchar(d)) args[[d]]))
      cf_drop(new_cf_data(self, sel, self$coords(), decode), drop)
    },

    #' @description Write data into the array.
    #' @param data An R vector, matrix or array; its type must fit the data
    #'   type (values out of range are an error and nothing is written).
    #' @param selection Missing or `NULL` to write `data` at the start of the
    #'   array (its `dim()` gives the extent), or a list with one element per
    #'   dimension as for `read()`.
    #' @param encode Whether to encode the values as the CF conventions say
    #'   (as xarray does), the inverse of `read()`'s `decode`: where the
    #'   attributes of the array ask for it, `data` are decoded values:
    #'   times (`Date`, `POSIXct`, `CFTime` or strings such as
    #'   "2001-02-30 12:00", in the array's calendar) become offsets in its
    #'   `units`; values are packed as `round((data - add_offset) /
    #'   scale_factor)` for integer types; `_Unsigned` numbers get their
    #'   stored bits; `NA` (and `NaN`) become `_FillValue` (or the first
    #'   `missing_value`). Plain numbers written to a time array are taken as
    #'   offsets. Defaults to the `zarr.decode_cf` option (`TRUE`); `FALSE`
    #'   (or the `raw_read` field) writes `data` as stored values.
    #' @return Self, invisibly.
    write = function(data, selection, encode = getOption("zarr.decode_cf", TRUE)) {
      private$check_usable()
      shape <- self$shape
      if (identical(dtype_kind(private$.dt$data_type), "t")) # a data.frame: one raw vector per record
        data <- struct_records(private$.dt, data, private$.codecs, self$path)
      if (missing(selection) || is.null(selection)) {
        d <- dim(data) %||% length(data)
        if (length(shape) == 0L) {
          if (length(data) != 1L) zarr_abort("value", "a 0-d array holds exactly one value", array = self$path)
          d <- integer()
        } else if (length(d) != length(shape)) {
          if (length(shape) == 1L || length(data) == prod(shape)) d <- shape
          else zarr_abort("value", sprintf("data has %d dimension(s), the array has %d",
                                           length(d), length(shape)), array = self$path)
        }
        if (any(d > shape))
          zarr_abort("value", sprintf("data of dimensions %s does not fit an array of shape %s",
                                      paste(d, collapse = " x "), paste(shape, collapse = " x ")),
                     array = self$path)
        sel <- lapply(d, function(n) zarr_range(0, n))
      } else {
        sel <- private$normalize_selection(selection)
      }
      enc <- if (isTRUE(encode) && !isTRUE(self$raw_read)) cf_encoding(private$.metadata[["attributes"]], private$.dt, self$path)
      if (!is.null(enc)) data <- cf_encode(data, enc, self$path)
      if (private$is_json2()) write_json2(self, private$.grid, sel, as_plain_vector(data))
      else private$.grid$write_selection(as_plain_vector(data), sel)
      invisible(self)
    },

    # ---- resize() and append() (issue 11); helpers in R/resize.R
    #' @description Change the shape of the array. Growing adds elements that
    #'   read as the fill value. Shrinking erases the chunks wholly past the
    #'   new edge (found by listing the store, or by trying each key when it
    #'   cannot list) and sets the elements of the chunks cut by the new edge
    #'   that fall past it to the fill value, so that growing the array
    #'   again shows fill values there. A rectilinear chunk grid keeps its
    #'   chunk lengths; growing past them adds chunks of its last length.
    #'
    #'   Give either `new_shape`, or the changes at either end of each
    #'   dimension as `low` and `high`, as `resize(low, high)` of CRAN's
    #'   zarr 1.0.0 does (two unnamed arguments are taken in that order): `high` grows (positive) or shrinks (negative) the
    #'   end of a dimension, and `low` its start, by whole chunks only
    #'   (rounded outward when growing, toward zero when shrinking; not for
    #'   rectilinear grids): the stored chunks are moved in the store
    #'   without being decoded.
    #'
    #'   Safe from interruption: a resize, `append()` or `promote()` that
    #'   stops at any point (an error, a failed write, Ctrl-C, the process
    #'   killed) leaves the array reading its old or its new state. A journal
    #'   (`__zarr_journal.json` beside the chunks) is written first; chunks
    #'   that move are copied to keys the old state never reads; the new
    #'   metadata document, one atomic write, is the commit; then the old
    #'   chunks are removed. When moved chunks still sit at staging keys,
    #'   the metadata carries a field marked `"must_understand": true`:
    #'   opening the array writable finishes the change, a read-only opening
    #'   refuses to read it (class `zarr_error_interrupted`), and other Zarr
    #'   v3 readers should refuse it too (Zarr v2 readers do not know the
    #'   field). Anything else an interrupted change left is never read, and
    #'   is finished or undone by the next resize, `append()` or `promote()`
    #'   of the array. This holds for local, memory and S3 stores (each
    #'   write there replaces a whole value atomically). Another process
    #'   opening the array while the change runs reads the old state, the
    #'   new one, or (while moved chunks are put in place) gets that error
    #'   when read-only; only one process may change an array's structure at
    #'   a time, and no other may open it writable meanwhile. A journal is
    #'   store content: one that is malformed or names keys other than the
    #'   array's chunks and staging keys is not acted on (a warning of class
    #'   `zarr_warning_journal`; nothing is changed, and an array marked as
    #'   mid-change then refuses to be read).
    #' @param new_shape The new shape, one non-negative extent per dimension.
    #' @param low,high Integer vectors, one element per dimension, instead of
    #'   `new_shape`: the change at the start and at the end of each
    #'   dimension (`0` or `NULL`: no change).
    #' @return Self, invisibly.
    resize = function(new_shape = NULL, low = NULL, high = NULL) {
      # CRAN zarr 1.0.0's resize(low, high): two unnamed arguments
      given <- names(sys.call())[-1L] %||% rep("", nargs())
      if (nargs() == 2L && all(given == "")) {
        high <- low
        low <- new_shape
        new_shape <- NULL
      }
      private$check_usable()
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only", array = self$path)
      recover_structure(self, private) # what an interrupted change left, first
      old <- private$.shape
      nd <- length(old)
      if (!nd) zarr_abort("argument", "a 0-d array cannot be resized", array = self$path)
      vec <- function(v, what, lo) {
        if (!is.numeric(v) || length(v) != nd || anyNA(v) || any(v != trunc(v)) || any(v < lo))
          zarr_abort("argument", sprintf("%s needs one whole number per dimension (%d)%s", what, nd,
                                         if (lo == 0) ", none negative" else ""), array = self$path)
        as.numeric(v)
      }
      chunk <- private$.grid$chunk_shape
      if (!is.null(new_shape)) {
        if (!is.null(low) || !is.null(high))
          zarr_abort("argument", "give new_shape, or low and high, not both", array = self$path)
        new_shape <- vec(new_shape, "new_shape", 0)
        shift <- numeric(nd)
      } else {
        low <- if (is.null(low)) numeric(nd) else vec(low, "low", -Inf)
        high <- if (is.null(high)) numeric(nd) else vec(high, "high", -Inf)
        shift <- ifelse(low >= 0, ceiling(low / chunk), -floor(-low / chunk))
        new_shape <- old + shift * chunk + high
        if (any(new_shape < 0))
          zarr_abort("argument", "the new shape would have a negative extent", array = self$path)
      }
      resize_array(self, private, new_shape, shift)
      invisible(self)
    },

    #' @description Append data along one dimension: `x` is written past
    #'   the array's edge along `along`, where the current shape does not
    #'   reach, then the new shape is committed: interrupted, the array reads
    #'   its old shape and values, or the new ones (see `resize()`). One
    #'   process appends (the metadata change is not safe from several at
    #'   once).
    #' @param x An R vector, matrix or array whose extents equal the array's
    #'   along every other dimension; with one dimension fewer than the
    #'   array, it is one slice.
    #' @param along The dimension to grow (1-based), by default the last.
    #' @return Self, invisibly.
    append = function(x, along = length(self$shape)) {
      private$check_usable()
      if (!private$.store$read_only) recover_structure(self, private) # what an interrupted change left, first
      shape <- private$.shape
      nd <- length(shape)
      if (!nd) zarr_abort("argument", "cannot append to a 0-d array", array = self$path)
      if (!is.numeric(along) || length(along) != 1L || is.na(along) || along < 1 || along > nd || along != trunc(along))
        zarr_abort("argument", sprintf("along must be a dimension number between 1 and %d", nd), array = self$path)
      d <- dim(x) %||% length(x)
      if (length(d) == nd - 1L) d <- append(d, 1, after = along - 1L)
      if (nd == 1L) d <- length(x)
      if (length(d) != nd || any(d[-along] != shape[-along]))
        zarr_abort("value", sprintf("data of dimensions %s cannot be appended along dimension %d of an array of shape %s",
                                    paste(dim(x) %||% length(x), collapse = " x "), along,
                                    paste(shape, collapse = " x ")), array = self$path)
      if (d[along] == 0) return(invisible(self))
      n <- shape[along]
      new_shape <- as.numeric(shape)
      new_shape[along] <- n + d[along]
      if (private$.store$read_only) zarr_abort("read_only", "the store is read-only", array = self$path)
      append_array(self, private, x, along, new_shape)
      invisible(self)
    },
    # ---- CRAN zarr 1.0.0 additions: details(), promote(), raw_read, flush() ----

    #' @field raw_read `FALSE` (default): reads follow `fill_as_na` (see
    #'   [zarr-options]). `TRUE`: elements equal to the fill value are
    #'   returned as stored, never as `NA`, whatever `fill_as_na` says (a
    #'   fill value of zero reads as zero either way).
    raw_read = FALSE,

    #' @description A summary of the array as a named character vector.
    #' @return A character vector with elements `name` (the array's name, or
    #'   "(root array)"), `data_type` and `shape` (the lengths, each preceded
    #'   by its dimension name when the array has them; "(scalar)" for a 0-d
    #'   array).
    details = function() {
      nm <- if (nzchar(private$.name)) private$.name else "(root array)"
      shp <- self$shape
      dn <- self$dimension_names
      shape <- if (!length(shp)) "(scalar)" else if (is.null(dn) || all(is.na(dn)))
        paste(format_dims(shp), collapse = ", ") else
        paste(ifelse(is.na(dn), format_dims(shp), paste(dn, format_dims(shp), sep = " = ")), collapse = ", ")
      dt <- if (is.null(private$.dt)) NA_character_ else private$.dt$data_type
      c(name = nm, data_type = dt, shape = shape)
    },

    #' @description Give the array one more dimension, for example a time
    #'   axis in front of a (lat, lon) grid. The elements keep their values at
    #'   index 1 of the new dimension; when `length` is more than 1, the other
    #'   positions along it read as the fill value. The new dimension has
    #'   chunks of length 1, so the stored chunks are only renamed, never
    #'   decoded or rewritten, and safe from interruption as `resize()` is.
    #'   Sharded arrays cannot be promoted. Dimension names get `NA` for the
    #'   new dimension.
    #' @param dimension Where the new dimension goes in the new shape (1-based):
    #'   1 puts it first, the array's rank + 1 last.
    #' @param length The extent of the new dimension (default 1).
    #' @return Self, invisibly.
    promote = function(dimension, length = 1L) {
      private$check_usable()
      promote_array(self, private, dimension, length)
      invisible(self)
    },

    #' @description Write pending changes to the store. Writes reach the store
    #'   when they are made, so there is nothing to do; this is here for code
    #'   written for CRAN zarr 1.0.0.
    #' @return Self, invisibly.
    flush = function() invisible(self)
  ),
  active = list(
    #' @field data_type (read-only) The [zarr_data_type] of the array.
    data_type = function(value) {
      if (!missing(value)) zarr_abort("read_only", "data_type is read-only")
      private$.dt
    },
    #' @field shape (read-only) The shape of the array (R's `dim()` of it).
    shape = function(value) {
      if (!missing(value)) zarr_abort("read_only", "shape is read-only")
      s <- private$.shape
      # integer, as dim() is; extents beyond the integer range stay double
      if (is.double(s) && all(s <= .Machine$integer.max)) as.integer(s) else s
    },
    #' @field children (read-only) Arrays have no children. For code written
    #'   for zarr 1.0.0, whose `as_zarr(x, name, location = group)` returns
    #'   the group where this package returns the new array,
    #'   `as_zarr(...)$children[[name]]` finds the array: this is a list with
    #'   the array itself under its name.
    children = function(value) {
      if (!missing(value)) zarr_abort("read_only", "children is read-only")
      stats::setNames(list(self), private$.name)
    },
    #' @field chunking (read-only) The [chunk_grid_regular] of the array.
    chunking = function(value) {
      if (!missing(value)) zarr_abort("read_only", "chunking is read-only")
      private$.grid
    },
    #' @field chunk_cache_bytes `NULL` (default): the array's decoded chunks
    #'   may fill the decoded-chunk cache up to its size, the option
    #'   `zarr.chunk_cache_bytes` (see [zarr-options]). A number: at most that
    #'   many bytes of this array's chunks are kept (0: none; its reads
    #'   neither use nor fill the cache). Set for this array object, not
    #'   stored.
    chunk_cache_bytes = function(value) {
      if (missing(value)) return(private$.cache_bytes)
      if (!is.null(value) && !is_count(value, 0))
        zarr_abort("argument", "chunk_cache_bytes must be NULL or a number of bytes, at least 0", array = self$path)
      private$.cache_bytes <- value
      if (!is.null(private$.grid)) private$.grid$cache_bytes <- value
    },
    #' @field chunk_separator (read-only) The separator in chunk keys.
    chunk_separator = function(value) {
      if (!missing(value)) zarr_abort("read_only", "chunk_separator is read-only")
      private$.grid$chunk_encoding$separator
    },
    #' @field codecs The codecs of the array, in encoding order.
    codecs = function(value) {
      if (missing(value)) return(codec_chain_objects(private$.codecs))
      zarr_abort("read_only", "the codecs of an existing array cannot be changed")
    },
    #' @field dimension_names The names of the dimensions (character, `NA`
    #'   where a dimension has none), or `NULL`.
    dimension_names = function(value) {
      if (missing(value)) return(private$.dimnames)
      if (!is.null(value)) {
        value <- as.character(value)
        if (length(value) != length(private$.shape))
          zarr_abort("argument", "dimension_names needs one name per dimension", array = self$path)
      }
      private$.dimnames <- value
      private$.metadata[["dimension_names"]] <- if (is.null(value)) NULL else as.list(value)
      if (identical(as.integer(private$.metadata[["zarr_format"]]), 2L))
        private$.metadata[["attributes"]][["_ARRAY_DIMENSIONS"]] <- as.list(value)
      private$autosave(attributes_only = TRUE) # v2: the names are in .zattrs
    }
  ),
  private = list(
    .dt = NULL, .shape = NULL, .grid = NULL, .codecs = NULL, .dimnames = NULL, .problem = NULL, .parts = NULL, .json2 = FALSE,
    .cache_bytes = NULL,

    check_usable = function() if (!is.null(private$.problem)) stop(private$.problem),
    is_json2 = function() private$.json2, # chunks R decodes (see setup())

    # `plain`: the metadata passed setup_cannot_fail()
    setup = function(lazy = TRUE, plain = FALSE) {
      m <- private$.metadata
      # shape and dimension names first: they are shown even for arrays that
      # cannot be read
      shape <- if (is.list(m)) m[["shape"]]
      if (!is.null(shape))
        private$.shape <- if (plain || whole_numbers(shape)) as.numeric(shape)
          else tryCatch(check_shape(shape, "shape"), zarr_error = function(e) NULL)
      dn <- if (is.list(m)) m[["dimension_names"]]
      private$.dimnames <- if (is.null(dn) || !length(dn)) NULL else if (is.character(dn)) unname(dn) else
        vapply(dn, function(x) if (is.null(x)) NA_character_ else as.character(x)[1L], "", USE.NAMES = FALSE)
      # The data type, codecs and chunk grid are objects that cost more than
      # the rest of opening the node: they are made when first used (a node
      # opened for its attributes never needs them). What goes wrong making
      # them is the array's problem, raised when its data are used.
      parsed <- if (!is.null(parsed_slot$m)) take_parsed(m) # (only after a create)
      if (!lazy) parsed <- parsed %||% parse_array_metadata(m, self$path) # raised here
      delayedAssign(".parts", private$make_parts(m, parsed), assign.env = private)
      delayedAssign(".problem", private$.parts[["problem"]], assign.env = private)
      delayedAssign(".dt", private$.parts[["p"]][["data_type"]] %||% private$.parts[["grid"]]$data_type,
                    assign.env = private)
      delayedAssign(".codecs", private$.parts[["p"]][["codecs"]], assign.env = private)
      delayedAssign(".grid", private$.parts[["grid"]], assign.env = private)
      delayedAssign(".json2", any(r_object_codecs %in% private$.codecs$names), assign.env = private)
      if (!lazy && !is.null(private$.parts[["problem"]])) stop(private$.parts[["problem"]])
      invisible()
    },

    make_parts = function(m, p) tryCatch({
      p <- p %||% parsed_array_metadata(m, self$path, lazy = TRUE)
      # (made on the first read: a regular grid of a parse has its fields
      # set directly, without the checks and setters the parse made needless)
      cg <- if (is.null(p$chunk_edges)) chunk_grid_of_parse(p$shape, p$chunk_shape)
        else chunk_grid_rectilinear$new(p$shape, p$chunk_edges)
      if (is.null(p$data_type)) {
        # a kept parse: the data type object is made when first asked for
        # (reads of plain types never ask), for the grid and the array alike
        p$codecs <- lazy_data_type(cg, p$dt_args, p$codecs)
      } else cg$data_type <- p$data_type
      path <- self$path
      chunk_grid_attach(cg, p$codecs, private$.store, p$key_encoding, node_prefix(path), path, private$.cache_bytes)
      if (!is.null(p$spec_box)) share_engine_spec(cg, p$spec_box)
      list(p = p, grid = cg, problem = NULL)
    }, error = function(e) list(problem = as_metadata_error(e, self$path))),

    metadata_changed = function() {
      private$setup(lazy = FALSE)
      private$.problem <- NULL
    },

    # R selection -> list of 0-based indices. Each element of a selection
    # given to read() or write() is a range: c(from, to) (either order), a
    # single index, or a longer vector (a contiguous one is that range; other
    # vectors, negative and logical indices select as in base R). `[` passes
    # indices it has resolved already (zarr_range, zarr_index).
    normalize_selection = function(selection) {
      shape <- private$.shape
      if (is.null(selection)) return(lapply(shape, function(n) zarr_range(0, n)))
      if (inherits(selection, "zarr_points")) return(selection) # from `[` (R/indexing.R)
      if (!is.list(selection)) selection <- list(selection)
      if (length(selection) == length(shape) && all(vapply(selection, inherits, TRUE, "zarr_range")))
        return(selection) # from `[` (R/indexing.R): already checked
      if (length(selection) != length(shape))
        zarr_abort("index", sprintf("the selection has %d element(s), the array has %d dimension(s)",
                                    length(selection), length(shape)), array = self$path)
      # ranges only (what `[` makes of runs such as i:(i + 99)): nothing to resolve
      if (all(vapply(selection, inherits, TRUE, "zarr_range"))) return(selection)
      lapply(seq_along(shape), function(d) {
        e <- selection[[d]]
        if (inherits(e, "zarr_range")) return(e)
        if (inherits(e, "zarr_index")) return(unclass(e))
        if (is.numeric(e) && length(e) == 2L && !anyNA(e) && all(e > 0))
          e <- seq.int(min(e), max(e))
        resolve_index(e, shape[d], d, self$path)
      })
    },

    # The read of `[` for plain runs (zarr_range()s from ffi_index_runs): for
    # a small result of a plain data type (see read_kinds()) whose grid has
    # read before, what $read() and the grid's read_selection() do, in one
    # frame; every other read (the first, large ones, ones that may show a
    # bar, arrays that cannot be read, json2 chunks, raw reads) takes
    # $read() itself.
    read_runs = function(runs, fill_as_na, decode) {
      on.exit(out <- NULL) # see read_indexed()
      if (!is.null(private$.problem) || private$.json2 || isTRUE(self$raw_read))
        return(self$read(runs, fill_as_na = fill_as_na, decode = decode))
      gp <- .subset2(private$.grid, ".__enclos_env__")$private
      spec <- gp$.spec
      kinds <- gp$.kinds
      if (is.null(spec) || is.null(kinds) || !kinds$plain)
        return(self$read(runs, fill_as_na = fill_as_na, decode = decode))
      n <- prod(.Call(ffi_sel_lengths, runs))
      opts <- read_opts(isTRUE(fill_as_na))
      bytes <- n * switch(kinds$rtype, integer = , logical = 4, complex = 16, 8)
      if (n == 0 || bytes >= 2^24 || bytes >= opts$progress_min)
        return(self$read(runs, fill_as_na = fill_as_na, decode = decode))
      spec$rtype <- kinds$rtype
      out <- .Call(ffi_array_read, spec, store_chunk_io(gp$.store, gp$.prefix), runs, opts)
      lost <- attr(out, "zarr_lost")
      if (!is.null(lost)) {
        attr(out, "zarr_lost") <- NULL
        warn_lost_precision(lost, gp$.path)
      }
      enc <- private$cf_read_encoding(decode)
      if (!is.null(enc)) {
        out <- cf_decode(out, enc)
        if (inherits(out, "CFTime")) return(out)
      }
      if (is.null(private$.dimnames)) out else private$decorate(out)
    },

    # The CF encoding reads decode with (NULL: none), kept per array: the
    # attributes are examined again only when they change (a new list, as
    # R copies the one kept here before changing it), the encoding made
    # again when the data type, its fill value or valid_range decoding do.
    .cf = NULL,
    cf_read_encoding = function(decode) {
      attrs <- private$.metadata[["attributes"]]
      kept <- private$.cf
      if (is.null(kept) || !identical(kept$attrs, attrs)) {
        kept <- list(attrs = attrs, any = length(attrs) > 0L && any(names(attrs) %in% cf_attribute_names))
        private$.cf <- kept
      }
      if (!kept$any) { # nothing to decode; a bad `decode` is still an error
        if (is.list(decode)) cf_decode_settings(decode, self$path)
        return(NULL)
      }
      how <- cf_decode_settings(decode, self$path)
      if (is.null(how)) return(NULL)
      dt <- private$.dt
      key <- list(dt, dt$fill_value, how$valid_range)
      if (!identical(kept$key, key)) {
        kept$enc <- cf_encoding(attrs, dt, self$path, how$valid_range)
        kept$key <- key
        private$.cf <- kept
      }
      kept$enc
    },

    decorate = function(out) {
      dn <- private$.dimnames
      if (!is.null(dn) && isTRUE(getOption("zarr.dimnames", FALSE)) && !all(is.na(dn)) && length(dim(out)) == length(dn)) {
        dimnames(out) <- stats::setNames(vector("list", length(dn)), ifelse(is.na(dn), "", dn))
      }
      out
    }
  )
)

check_codec_order <- function(codecs, path) {
  kinds <- if (inherits(codecs, "zarr_codec_chain")) codecs$modes else vapply(codecs, function(cd) cd$mode, "")
  n_ab <- sum(kinds == "array -> bytes")
  if (n_ab != 1L)
    zarr_abort("metadata", "the codec chain needs exactly one array-to-bytes codec (such as 'bytes')", array = path)
  pos <- match("array -> bytes", kinds)
  if (any(kinds[seq_len(pos - 1L)] != "array -> array") || any(kinds[-seq_len(pos)] != "bytes -> bytes"))
    zarr_abort("metadata", "codecs are out of order: array-to-array, then array-to-bytes, then bytes-to-bytes",
               array = path)
}

codec_label <- function(cd) {
  cfg <- cd$configuration
  switch(cd$name,
    transpose = sprintf("transpose(%s)", paste(cd$order, collapse = ",")),
    bytes = if (length(cfg[["endian"]])) sprintf("bytes(%s)", cfg[["endian"]]) else "bytes",
    gzip = sprintf("gzip(%d)", cfg[["level"]]),
    zstd = sprintf("zstd(%d)", cfg[["level"]]),
    blosc = sprintf("blosc(%s, %d, %s)", cfg[["cname"]], cfg[["clevel"]], cfg[["shuffle"]]),
    sharding_indexed = sprintf("sharding(%s: %s)", paste(cd$inner_shape, collapse = "x"),
                               paste(vapply(cd$codecs, codec_label, ""), collapse = " -> ")),
    cd$name
  )
}

format_bytes <- function(x) {
  units <- c("B", "kB", "MB", "GB", "TB")
  i <- if (x > 0) min(length(units), floor(log(x, 1000)) + 1) else 1
  if (i == 1) sprintf("%.0f B", x) else sprintf("%.1f %s", x / 1000^(i - 1), units[i])
}

# Drop attributes but keep the storage (and integer64 class) of data to write.
as_plain_vector <- function(x) {
  # classes that decide how values are stored survive (coerce_for_dtype and
  # the time conversions look at them); dim and dimnames do not
  keep <- intersect(names(attributes(x)), c("class", "levels", "units", "tzone"))
  attributes(x) <- attributes(x)[keep]
  x
}

# A contiguous run of 0-based indices, c(start, count): the C engine plans it
# without materialising one number per index.
zarr_range <- function(start, count) {
  r <- as.numeric(c(start, count))
  class(r) <- "zarr_range" # not structure(): this is on every read's path
  r
}

# 0-based indices -> a zarr_range when they are contiguous and ascending
as_range_if_contiguous <- function(i) {
  n <- length(i)
  if (n > 1L && i[n] - i[1L] == n - 1 && !is.unsorted(i, strictly = TRUE)) zarr_range(i[1L], n) else i
}

sel_lengths <- function(sel) {
  if (inherits(sel, "zarr_points")) return(nrow(sel)) # one element per row
  if (is.list(sel)) return(.Call(ffi_sel_lengths, sel)) # (on every read's path)
  n <- numeric(length(sel))
  for (d in seq_along(sel)) n[d] <- if (inherits(sel[[d]], "zarr_range")) sel[[d]][[2L]] else length(sel[[d]])
  n
}

sel_indices <- function(x) if (inherits(x, "zarr_range")) x[[1L]] + seq_len(x[[2L]]) - 1 else x

# One R index (numeric, negative, logical or missing/NULL) -> 0-based indices.
resolve_index <- function(i, n, d, path = NULL) {
  if (is.null(i)) return(zarr_range(0, n))
  if (is.factor(i) || is.character(i))
    zarr_abort("index", sprintf("dimension %d: character indices are not supported", d), array = path)
  if (is.logical(i)) {
    if (length(i) > n) zarr_abort("index", sprintf("dimension %d: logical index longer than the extent", d), array = path)
    if (anyNA(i)) zarr_abort("index", sprintf("dimension %d: NA in a logical index", d), array = path)
    return(as_range_if_contiguous(which(rep_len(i, n)) - 1))
  }
  if (!is.numeric(i)) zarr_abort("index", sprintf("dimension %d: indices must be numeric or logical", d), array = path)
  if (anyNA(i)) zarr_abort("index", sprintf("dimension %d: NA indices are not supported", d), array = path)
  i <- trunc(as.numeric(i))
  if (any(i < 0)) {
    if (any(i > 0)) zarr_abort("index", "positive and negative indices cannot be mixed", array = path)
    return(as_range_if_contiguous(setdiff(seq_len(n), -i) - 1))
  }
  i <- i[i != 0]
  if (any(i > n))
    zarr_abort("index", sprintf("subscript out of bounds: dimension %d has extent %s", d, format(n)), array = path)
  as_range_if_contiguous(i - 1)
}

#' @rdname zarr_array
#' @param object A `zarr_array`.
#' @param ... Ignored.
#' @export
str.zarr_array <- function(object, ...) {
  cat(sprintf("Zarr array '%s': %s [%s], chunks [%s]\n", object$path, object$data_type$data_type,
              paste(format_dims(object$shape), collapse = ", "),
              paste(format_dims(object$chunking$chunk_shape), collapse = ", ")))
  invisible(NULL)
}

# v2 arrays whose fill value is null read unwritten elements as zero (or "");
# a zero fill value marks nothing as missing (fill_is_missing_marker()).
fill_for_null <- function(name) {
  switch(dtype_kind(name) %|NA|% "", s = "", b = FALSE, c = list(0, 0), x = raw(raw_bits_size(name)), 0)
}

# Validate array metadata (v3 form) and turn it into the objects an array
# needs. Used before anything is written, and when an array is opened.
parse_array_metadata <- function(m, path = NULL) {
  bad <- function(msg) zarr_abort("metadata", msg, array = path)
  if (!is.list(m) || !identical(m[["node_type"]], "array")) bad("metadata does not describe an array")
  check_array_metadata(m, path)
  # No codecs: v3 drafts (GDAL 3.6) left the list out, zarrita writes it empty
  # (Icechunk repositories written through it have these); both read the
  # bytes codec, little endian
  if (!length(m[["codecs"]])) m[["codecs"]] <- list(list(name = "bytes", configuration = list(endian = "little")))
  fmt <- as.integer(m[["zarr_format"]] %||% 3L)
  shape <- check_shape(m[["shape"]], "shape")
  if (length(m[["storage_transformers"]]))
    zarr_abort("unsupported", "storage transformers are not supported", array = path)
  dtname <- m[["data_type"]]
  if (is.list(dtname)) dtname <- dtname[["name"]]
  if (!dtname %in% c(dtype_table$name, "structured") && is.null(r_dtype_get(dtname)) && is.na(raw_bits_size(dtname)))
    zarr_abort("data_type", sprintf("unsupported data type '%s'", dtname), array = path)
  fill <- if (is.null(m[["fill_value"]])) fill_for_null(dtname) else m[["fill_value"]]
  if (dtname %in% c("struct", "structured") && is.character(fill) && is.list(m[["codecs"]]))
    # record bytes in base64 (the legacy form) are in the bytes codec's order
    fill <- tryCatch(struct_fill_normalize(struct_layout(m[["data_type"]][["configuration"]]), fill,
                                           fragments_big_endian(m[["codecs"]])),
                     zarr_error = function(e) bad(sprintf("invalid data type or fill value: %s", conditionMessage(e))))
  dt <- tryCatch(zarr_data_type$new(m[["data_type"]], fill),
                 zarr_error = function(e) bad(sprintf("invalid data type or fill value: %s", conditionMessage(e))))
  grid <- m[["chunk_grid"]]
  edges <- NULL
  if (identical(grid[["name"]], "rectilinear")) {
    cfg <- grid[["configuration"]]
    if (!identical(cfg[["kind"]], "inline"))
      zarr_abort("unsupported", sprintf("unsupported kind '%s' of rectilinear chunk grid", format(cfg[["kind"]])), array = path)
    cs <- cfg[["chunk_shapes"]]
    if (!is.list(cs) && length(cs) == length(shape)) cs <- as.list(cs)
    if (!is.list(cs) || length(cs) != length(shape)) bad("the rectilinear chunk grid needs chunk_shapes for every dimension")
    edges <- tryCatch(lapply(seq_along(shape), function(d) rectilinear_edges(cs[[d]], shape[d], d)),
                      zarr_error = function(e) bad(conditionMessage(e)))
    chunk <- vapply(edges, function(e) max(c(1, e)), 0)
  } else if (!identical(grid[["name"]], "regular")) {
    zarr_abort("unsupported", sprintf("unsupported chunk grid '%s'", grid[["name"]]), array = path)
  } else {
    chunk <- check_shape(grid[["configuration"]][["chunk_shape"]], "chunk shape")
  }
  if (length(chunk) != length(shape) || any(chunk < 1)) bad("the chunk shape does not match the shape")
  check_engine_limits(shape, chunk, length(m[["codecs"]]), bad)
  codecs <- tryCatch(codec_chain(m[["codecs"]], data_type = dt, chunk_shape = chunk, array = path),
                     zarr_error = function(e) {
                       if (is.null(e$array) && !is.null(path)) e$message <- paste0(e$message, " [array '", path, "']")
                       stop(e)
                     })
  check_codec_order(codecs, path)
  key_encoding <- array_key_encoding(m)
  for (fixed in intersect(codecs$names, c("n5_default", "zfp", "zarrs.zfp"))) # their chunk shape is in the codec
    if (!is.null(edges))
      zarr_abort("unsupported", sprintf("%s is not supported with a rectilinear chunk grid", fixed), array = path)
  if (!is.null(edges) && any(codecs$names == "sharding_indexed")) {
    # each shard (chunk) of a rectilinear grid must hold whole inner chunks
    inner <- codec_chain_objects(codecs)[[which(codecs$names == "sharding_indexed")[1L]]]$inner_shape
    for (d in seq_along(edges))
      if (any(edges[[d]] %% inner[d] != 0))
        bad(sprintf("sharding: the inner chunk length %s does not divide every chunk length of dimension %d",
                    format(inner[d]), d))
  }
  list(data_type = dt, shape = shape, chunk_shape = chunk, chunk_edges = edges, codecs = codecs,
       key_encoding = key_encoding, dt_args = list(m[["data_type"]], fill))
}

# The chunk key encoding of (valid) array metadata.
array_key_encoding <- function(m) {
  enc <- m[["chunk_key_encoding"]] %||% list(name = "default")
  enc_name <- enc[["name"]] %||% "default"
  normalize_key_encoding(list(
    name = enc_name,
    separator = enc[["configuration"]][["separator"]] %||% (if (identical(enc_name, "v2")) "." else "/")))
}

# Whether x is a vector of non-negative whole numbers (what check_shape()
# accepts without converting anything), with no condition handler.
whole_numbers <- function(x) is.numeric(x) && !anyNA(x) && all(x >= 0) && all(x == trunc(x))

# Whether a zarr_array's setup() (lazy) can run on metadata `m` without an
# error: a list whose shape is absent or whole numbers and whose dimension
# names are absent or strings (other forms are converted, which may fail).
setup_cannot_fail <- function(m) {
  if (!is.list(m)) return(FALSE)
  shape <- m[["shape"]]
  dn <- m[["dimension_names"]]
  (is.null(shape) || whole_numbers(shape)) && (is.null(dn) || is.character(dn))
}

# The store parses the metadata of an array it creates; the array object
# made from that metadata next takes the result instead of parsing again.
# Taken once: no two arrays share the objects of one parse.
parsed_slot <- new.env(parent = emptyenv())

remember_parsed <- function(m, p) {
  parsed_slot$m <- m
  parsed_slot$p <- p
}

take_parsed <- function(m) {
  if (is.null(parsed_slot$m) || !identical(parsed_slot$m, m)) return(NULL)
  p <- parsed_slot$p
  parsed_slot$m <- NULL
  parsed_slot$p <- NULL
  p
}

# Arrays opened again (a store reopened per request, a block loop reopening
# its array) parse the same metadata again: the result of a successful parse
# is kept, by the node's path, and reused when the metadata are identical
# (the document cache in R/store.R hands out the same list for the same
# bytes, so the comparison is mostly a pointer test). Shape, chunk shape,
# key encoding and the codec chain's description are plain values and are
# shared; the data type object is mutable (`fill_value<-`) and the chain's
# lazily built codec objects hold one, so each array gets its own of both.
# Errors are not kept. At most parsed_cache_max entries; registering a codec
# or a data type empties it (as it does the chain cache).
parsed_cache <- new.env(parent = emptyenv())
parsed_cache_max <- 256L

parsed_cache_forget <- function() {
  rm(list = ls(parsed_cache, all.names = TRUE), envir = parsed_cache)
}

parsed_array_metadata <- function(m, path = NULL, lazy = FALSE) {
  key <- if (is.character(path) && length(path) == 1L && !is.na(path)) path else ""
  hit <- parsed_cache[[key]]
  if (!is.null(hit) && identical(hit$m, m)) {
    p <- hit$p
    if (lazy) { # the caller makes the data type (lazy_data_type())
      p["data_type"] <- list(NULL)
      return(p)
    }
    dt <- zarr_data_type$new(p$dt_args[[1L]], p$dt_args[[2L]])
    p$data_type <- dt
    p$codecs <- codec_chain_for(p$codecs, dt)
    return(p)
  }
  p <- parse_array_metadata(m, path)
  p$spec_box <- new.env(parent = emptyenv())
  if (length(ls(parsed_cache, all.names = TRUE)) >= parsed_cache_max) parsed_cache_forget()
  assign(key, list(m = m, p = p), envir = parsed_cache)
  p$codecs <- codec_chain_for(p$codecs, p$data_type)
  p
}

# The engine's description of a regular grid's array (its private c_spec())
# depends on the parsed metadata but for the array's path, key prefix and
# cache budget: the first array of a parse works it out and leaves it in the
# parse's box, the arrays opened again from that parse take it with their
# own path, prefix and budget. A description that cannot be made is not
# kept (the grid raises its error when data are used).
share_engine_spec <- function(cg, box) {
  if (!identical(class(cg)[1L], "chunk_grid_regular")) return(invisible())
  priv <- cg$.__enclos_env__$private
  if (is.null(box$spec)) {
    box$spec <- tryCatch(priv$c_spec(), error = function(e) NULL)
    box$kinds <- priv$.kinds %||% priv$read_kinds()
    return(invisible())
  }
  spec <- box$spec
  spec$name <- priv$.path
  spec$key_prefix <- priv$.prefix
  spec["cache_bytes"] <- list(priv$.cache_bytes) # (NULL kept as an element, as c_spec() has it)
  priv$.kinds <- box$kinds
  # (what the engine returns is asked again on every read: this is only the default)
  spec$rtype <- box$kinds$rtype %||% engine_rtype(priv$.dt)
  priv$.spec <- spec
  invisible()
}

# The data type of a grid made from a kept parse, made on first use; the
# grid's codec chain (returned) builds its codec objects with it.
lazy_data_type <- function(cg, args, chain) {
  priv <- cg$.__enclos_env__$private
  delayedAssign(".dt", zarr_data_type$new(args[[1L]], args[[2L]]), assign.env = priv)
  priv$.dt_lazy <- TRUE
  codec_chain_for(chain, priv$.dt) # (a promise until the codec objects are built)
}

# The C engine's limits (ZARR_MAX_DIMS, ZARR_MAX_CODECS in src/zarr.h) and
# counts that must fit its 64-bit integers, checked when an array is defined
# or opened. Doubles are exact to 2^53, more than enough for these bounds.
check_engine_limits <- function(shape, chunk, ncodecs, bad) {
  if (length(shape) > 32L) bad(sprintf("the array has %d dimensions; at most 32 are supported", length(shape)))
  if (ncodecs > 16L) bad(sprintf("the array has %d codecs; at most 16 are supported", ncodecs))
  if (prod(shape) >= 2^63) bad("the shape holds more than 2^63 - 1 elements")
  if (prod(ceiling(shape / chunk)) >= 2^63) bad("the array has more than 2^63 - 1 chunks")
  if (prod(chunk) * 16 > 2^52) bad(sprintf("a chunk of %s elements is too large to hold in memory", format(prod(chunk))))
}
