#' Zarr arrays as DelayedArray objects (Bioconductor)
#'
#' With the Bioconductor package DelayedArray installed, a Zarr array can be
#' used wherever a `DelayedArray` is: `zarr_delayed()` (or
#' `DelayedArray::DelayedArray()` and `as(x, "DelayedArray")` on a
#' [zarr_array]) gives a `ZarrRArray` (a `ZarrRMatrix` for two dimensions)
#' whose seed, a `ZarrRArraySeed`, reads blocks straight from the store, one
#' call to the C engine per block. The class names differ from those of
#' Bioconductor's ZarrArray package (`ZarrArray`, `ZarrArraySeed`), so both
#' packages can be loaded together.
#'
#' The seed holds where the array is, not an open store: the location (a
#' local path, a zip file, an HTTP(S) URL with its query string, an `s3://`
#' location, or a Kerchunk reference file), the path of the array in the
#' store and, for S3, the store options that are not secrets (see
#' `reopen_options` in [zarr_s3store]). The store is opened on first use and
#' the open array kept for the session, one per array (outside the seed, so
#' it is never serialised); a DelayedArray made from a [zarr_array] uses that
#' object. An array whose shape changed since its seed was made is an
#' error. A seed saved with [saveRDS()], or sent to the workers of
#' BiocParallel's `SnowParam`, opens the store again where it is read, read
#' only. S3 credentials are never stored in the seed: where the array is
#' opened again they are found as [zarr_s3store] finds them (the environment
#' variables `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
#' `AWS_SESSION_TOKEN`, or the profile), so a store opened with keys given as
#' arguments needs them in the environment of the other process too. A query
#' string in an HTTP URL (such as a signed URL) is part of the location and
#' is stored. Arrays in memory stores can be used in the session (and forked
#' workers) only, and stay in memory for the session once wrapped.
#'
#' `dim()`, `dimnames()` (the dimension names of the array, as the names of
#' a list; a dimension whose coordinate array, a 1-d string array named by
#' the dimension beside the array as [as_zarr()] writes it, has one label
#' per index gets those labels, the others `NULL`), `type()`, `chunkdim()` (the chunk shape, or the inner
#' chunk shape of sharded arrays, so that block processing decodes each
#' chunk once), `path()` (the location, its secrets shown as `***`) and
#' `is_sparse()` (`FALSE`) work on the seed and on the `ZarrRArray`. Values are as `$read()` returns them (see
#' `zarr.fill_as_na` in [zarr-options]); 64-bit integers and times become
#' doubles, as DelayedArray holds only base R types.
#'
#' `write_zarr_delayed()` writes a `DelayedArray` (or any array-like object
#' DelayedArray can read blocks from, such as a matrix) into a new Zarr array
#' block by block, through a `ZarrRRealizationSink`, so that the whole array
#' is never in memory; each block covers whole chunks of the new array.
#' [as_zarr()] does the same for a `DelayedArray`. As with [as_zarr()],
#' `names(dimnames(x))` become the array's dimension names
#' (`dimension_names` in Zarr v3, `_ARRAY_DIMENSIONS` in v2) and, for an
#' array in a group (`name` given), the labels of the named dimensions
#' become 1-d coordinate arrays beside it, as xarray writes them;
#' `dimnames()` of the result and of `zarr_delayed()` give both back. The new
#' store is Zarr v3; for readers that only know Zarr v2, set
#' `options(zarr.format = 2)` first.
#'
#' @param x For `zarr_delayed()` and `ZarrRArraySeed()`: a [zarr_array]; a
#'   [zarr] object or a [zarr_group] with `name`; or a location (anything
#'   [open_zarr()] opens) with `name`. For `write_zarr_delayed()`: the
#'   `DelayedArray`, matrix or array to write.
#' @param name For `zarr_delayed()` and `ZarrRArraySeed()`: the path of the
#'   array in the store (`"/"` or `NULL` for a store whose root is the
#'   array). For `write_zarr_delayed()`: as for [as_zarr()].
#' @param location As for [as_zarr()]: a [zarr_group], the path of a new store
#'   directory, an `s3://` location holding no keys, or `NULL` for a new
#'   store in memory.
#' @param chunk_shape Optional chunk shape of the new array (see
#'   [array_builder]).
#' @param verbose Passed to DelayedArray's `BLOCK_write_to_sink()`: `TRUE`
#'   reports each block.
#' @return `zarr_delayed()`: a `ZarrRArray` (a `ZarrRMatrix` for a matrix).
#'   `ZarrRArraySeed()`: the seed. `write_zarr_delayed()`: a `ZarrRArray` of
#'   the new Zarr array.
#' @name zarr-delayed
#' @aliases ZarrRArraySeed-class ZarrRArray-class ZarrRMatrix-class
#'   ZarrRRealizationSink-class
#' @examples
#' if (requireNamespace("DelayedArray", quietly = TRUE)) {
#'   fn <- tempfile(fileext = ".zarr")
#'   z <- as_zarr(matrix(1:20000, 200), location = fn)
#'   D <- zarr_delayed(fn, "/")
#'   DelayedArray::chunkdim(D)
#'   sum(D)
#'   D2 <- write_zarr_delayed(D * 2 + 1)
#'   D2[1:2, 1:3]
#'   unlink(fn, recursive = TRUE)
#' }
NULL

#' @rdname zarr-delayed
#' @export
zarr_delayed <- function(x, name = NULL) {
  seed <- ZarrRArraySeed(x, name) # (errors keep their class outside the S4 dispatch)
  delayed_da("DelayedArray")(seed)
}

#' @rdname zarr-delayed
#' @export
ZarrRArraySeed <- function(x, name = NULL) {
  require_delayed()
  arr <- delayed_open_array(x, name)
  new_zarr_seed(arr)
}

#' @rdname zarr-delayed
#' @export
write_zarr_delayed <- function(x, location = NULL, name = NULL, chunk_shape = NULL, verbose = NA) {
  require_delayed()
  delayed_realize(x, location, name, chunk_shape, verbose)$delayed
}

# ---- the array behind a seed ----

# Open arrays by seed key, for the session. Kept out of the seeds so that
# serialising a seed never takes a store handle (or a memory store) along.
# One entry per array (its location and path), so wrapping an array again
# adds nothing.
delayed_state <- new.env(parent = emptyenv())
delayed_state$handles <- new.env(parent = emptyenv())
delayed_state$counter <- 0

# The key of a seed's open array in this process: a forked worker (its own
# process id) opens the store again rather than share the parent's
# connections; the arrays of memory stores are only in (forked) memory.
handle_key <- function(key) if (startsWith(key, "memory|")) key else paste0(Sys.getpid(), "|", key)

delayed_open_array <- function(x, name) {
  if (inherits(x, "zarr_array")) return(x)
  if (is.character(x)) x <- open_zarr(x, read_only = TRUE)
  if (inherits(x, c("zarr", "zarr_group"))) {
    name <- name %||% "/"
    if (inherits(x, "zarr") && !startsWith(name, "/")) name <- paste0("/", name)
    node <- x[[name]]
    # an AnnData sparse matrix is a group of data/indices/indptr arrays
    enc <- if (inherits(node, "zarr_group")) node$attributes[["encoding-type"]]
    if (is.character(enc) && length(enc) == 1L && enc %in% c("csr_matrix", "csc_matrix"))
      zarr_abort("argument", sprintf(paste0("'%s' is an AnnData sparse matrix (%s), a group and not one array: ",
                                            "read it with read_anndata(), or wrap its 'data' array"), name, enc))
    if (!inherits(node, "zarr_array"))
      zarr_abort("not_found", sprintf("there is no array at '%s'", name))
    return(node)
  }
  zarr_abort("argument", "x must be a zarr_array, a zarr object or group, or a location")
}

# How a store opens again in another process: its kind, location and the
# options that are not secrets; NULL for stores that cannot (memory stores,
# stores written in R, references given as a list).
store_reopen_spec <- function(store) store$reopen_spec()

reopen_store <- function(spec) {
  loc <- spec$location
  switch(spec$kind,
    local = zarr_localstore$new(loc, read_only = TRUE),
    zip = zarr_zipstore$new(loc),
    http = zarr_httpstore$new(loc),
    reference = zarr_refstore$new(loc),
    icechunk = do.call(zarr_icechunkstore$new, c(list(loc), spec$options)),
    s3 = {
      u <- s3_parse_url(loc)
      do.call(zarr_s3store$new, c(list(u$bucket, u$prefix), spec$options, list(read_only = TRUE)))
    },
    azure = {
      m <- regmatches(loc, regexec("^az://([^/]+)/?(.*)$", loc))[[1L]]
      do.call(zarr_azurestore$new, c(list(m[2L], m[3L]), spec$options, list(read_only = TRUE)))
    },
    zarr_abort("argument", sprintf("an array in a %s store cannot be opened again", spec$kind)))
}

# The type DelayedArray sees: base R types only.
delayed_type <- function(rtype) {
  if (rtype %in% c("logical", "integer", "double", "complex", "character", "raw")) rtype else "double"
}

# Chunk shape that block processing should follow: the inner chunks of a
# sharded array (a block then decodes each inner chunk once); NULL when the
# chunks are of several sizes (a rectilinear grid: then chunkGrid() gives
# their edges).
delayed_chunkdim <- function(arr) {
  if (inherits(arr$chunking, "chunk_grid_rectilinear")) return(NULL)
  cs <- arr$chunking$chunk_shape
  cd <- Filter(function(cd) identical(cd$name, "sharding_indexed"), arr$codecs)
  while (length(cd)) {
    cs <- cd[[1L]]$inner_shape
    cd <- Filter(function(c) identical(c$name, "sharding_indexed"), cd[[1L]]$codecs)
  }
  as.integer(cs)
}

# `register`: keep `arr` as the seed's open array (a seed that only describes
# the array, such as a sink's, keeps nothing).
new_zarr_seed <- function(arr, register = TRUE) {
  shape <- arr$shape
  if (!length(shape)) zarr_abort("argument", "a 0-d array cannot be a DelayedArray", array = arr$path)
  if (!is.integer(shape)) zarr_abort("argument", "the array is too large for a DelayedArray", array = arr$path)
  spec <- store_reopen_spec(arr$store) %||% list(kind = "memory", location = "")
  key <- if (spec$kind == "memory") memory_array_key(arr) else
    paste(spec$kind, spec$location, arr$path, json_write(spec$options %||% named_list(), pretty = FALSE), sep = "|")
  if (register) assign(handle_key(key), arr, envir = delayed_state$handles)
  # (empty slots stand for NULL)
  dimnames <- if (register) read_dim_labels(arr) %||% list() else {
    dn <- arr$dimension_names
    if (!is.null(dn) && !all(is.na(dn))) stats::setNames(vector("list", length(dn)), ifelse(is.na(dn), "", dn)) else list()
  }
  methods::new("ZarrRArraySeed", location = spec$location, array_path = arr$path, store_kind = spec$kind,
               store_options = spec$options %||% list(), dim = shape, dimnames = dimnames,
               chunkdim = delayed_chunkdim(arr) %||% integer(),
               chunk_edges = if (inherits(arr$chunking, "chunk_grid_rectilinear")) arr$chunking$chunk_edges else list(),
               type = delayed_type(arr$data_type$Rtype), key = key)
}

# A memory store has no location: its arrays are told apart by the store
# object itself (identical() compares environments by identity).
memory_array_key <- function(arr) {
  h <- delayed_state$handles
  for (k in ls(h, pattern = "^memory[|]")) {
    if (identical(h[[k]]$store, arr$store) && identical(h[[k]]$path, arr$path)) return(k)
  }
  delayed_state$counter <- delayed_state$counter + 1
  paste0("memory|", delayed_state$counter)
}

# The open array of a seed: the one of this process, or the store opened again.
seed_array <- function(seed) {
  arr <- delayed_state$handles[[handle_key(seed@key)]]
  if (!is.null(arr)) {
    if (!identical(as.integer(arr$shape), seed@dim)) seed_changed(seed)
    return(arr)
  }
  if (seed@store_kind == "memory")
    zarr_abort("not_found", sprintf("the array '%s' was in a memory store of another R session", seed@array_path))
  store <- reopen_store(list(kind = seed@store_kind, location = seed@location, options = seed@store_options))
  arr <- zarr$new(store)[[seed@array_path]]
  if (!inherits(arr, "zarr_array"))
    zarr_abort("not_found", sprintf("there is no array '%s' in '%s'", seed@array_path, seed@location))
  if (!identical(as.integer(arr$shape), seed@dim)) seed_changed(seed)
  assign(handle_key(seed@key), arr, envir = delayed_state$handles)
  arr
}

seed_changed <- function(seed) {
  zarr_abort("value", sprintf("the array '%s' in '%s' has changed shape since the DelayedArray was made",
                              seed@array_path, if (nzchar(seed@location)) seed@location else "memory"))
}

# extract_array(): one read (one call to the C engine) for the block.
seed_extract <- function(x, index) {
  d <- x@dim
  sel <- lapply(seq_along(d), function(k) {
    i <- index[[k]]
    if (is.null(i)) return(zarr_range(0, d[k]))
    r <- as_range_if_contiguous(as.numeric(i) - 1)
    # a bare pair of indices would be taken by $read() as a range
    if (inherits(r, "zarr_range")) r else structure(r, class = "zarr_index")
  })
  n <- as.integer(sel_lengths(sel))
  if (any(n == 0L)) return(array(vector(x@type, 0L), n))
  out <- seed_array(x)$read(sel)
  if (!identical(typeof(out), x@type) || is.object(out))
    out <- if (inherits(out, "integer64")) as.double(out) else as.vector(unclass(out), x@type)
  # a block of 100 MB is copied by each change of its attributes: only
  # when it has others than its dim
  if (!identical(attributes(out), list(dim = n))) {
    attributes(out) <- NULL
    dim(out) <- n
  }
  out
}

# ---- realisation ----

# A new Zarr array for an array-like x, then its blocks written through a
# ZarrRRealizationSink. `result` is what as_zarr() returns, `delayed` (when
# `wrap`) a ZarrRArray of the new array.
delayed_realize <- function(x, location, name, chunk_shape, verbose = NA, wrap = TRUE) {
  dims <- dim(x)
  if (is.null(dims)) zarr_abort("value", "x must have dimensions")
  type <- delayed_da("type")(x)
  def <- array_def(vector(type, 0L), dims, names(dimnames(x)))
  if (!is.null(chunk_shape)) def$chunk_shape <- chunk_shape
  target <- new_array_at(def, name, location)
  handle <- new.env(parent = emptyenv())
  handle$array <- target$array
  sink <- methods::new("ZarrRRealizationSink", seed = new_zarr_seed(target$array, register = FALSE),
                       handle = handle)
  delayed_da("BLOCK_write_to_sink")(sink, x, verbose = verbose)
  write_dim_labels(target$array, dimnames(x))
  list(result = target$result, delayed = if (wrap) delayed_da("DelayedArray")(new_zarr_seed(target$array)))
}

sink_write_block <- function(sink, viewport, block) {
  starts <- delayed_da("start")(viewport)
  widths <- delayed_da("width")(viewport)
  sel <- Map(zarr_range, starts - 1, widths)
  if (!is.array(block)) block <- as.array(block) # a sparse block
  sink@handle$array$write(block, sel)
  sink
}

is_delayed_array <- function(x) isS4(x) && methods::is(x, "DelayedArray")

# ---- S4 classes and methods, set up once DelayedArray is loaded ----

delayed_da <- function(name) get(name, envir = asNamespace("DelayedArray"))

require_delayed <- function() {
  if (!requireNamespace("DelayedArray", quietly = TRUE))
    zarr_abort("argument", "this needs the Bioconductor package DelayedArray")
  register_delayed()
}

# DelayedArray is only suggested and takes seconds to load, so zarr does not
# load it: the classes and methods are made when it is loaded (a hook set in
# .onLoad), or in .onLoad when it is loaded already. While zarr's namespace is
# being loaded they go there; afterwards (it is locked) into an environment of
# their own that still names zarr as their package, so that a seed read back
# with readRDS() loads zarr to find its class.
register_delayed <- function() {
  if (isTRUE(delayed_state$registered) || !isNamespaceLoaded("DelayedArray")) return(invisible())
  ns <- environment(register_delayed)
  where <- if (environmentIsLocked(ns)) {
    e <- new.env(parent = ns)
    assign(".packageName", "zarr", envir = e)
    delayed_state$where <- e
    e
  } else ns
  delayed_state$registered <- TRUE
  ok <- FALSE
  on.exit(if (!ok) delayed_state$registered <- FALSE)
  define_delayed_classes(where)
  ok <- TRUE
  invisible()
}

define_delayed_classes <- function(where) {
  nsda <- asNamespace("DelayedArray")
  cls <- function(name) methods::getClassDef(name, where = nsda)@className
  gen <- function(name) get(name, envir = nsda)
  set <- function(f, sig, def) methods::setMethod(gen(f), sig, def, where = where)

  methods::setClass("ZarrRArraySeed", contains = cls("Array"), where = where,
    slots = c(location = "character", array_path = "character", store_kind = "character",
              store_options = "list", dim = "integer", dimnames = "list",
              chunkdim = "integer", chunk_edges = "list", type = "character", key = "character"))
  set("extract_array", "ZarrRArraySeed", function(x, index) seed_extract(x, index))
  set("type", "ZarrRArraySeed", function(x) x@type)
  set("chunkdim", "ZarrRArraySeed", function(x) if (length(x@chunkdim)) x@chunkdim)
  set("chunkGrid", "ZarrRArraySeed", function(x) {
    if (length(x@chunkdim)) gen("RegularArrayGrid")(x@dim, x@chunkdim)
    else if (length(x@chunk_edges)) gen("ArbitraryArrayGrid")(lapply(x@chunk_edges, function(e) as.integer(cumsum(e))))
  })
  set("is_sparse", "ZarrRArraySeed", function(x) FALSE)
  # shown, never used to reopen: secrets of the location read *** (redact())
  set("path", "ZarrRArraySeed", function(object, ...) redact(object@location))
  methods::setMethod("dim", "ZarrRArraySeed", function(x) x@dim, where = where)
  methods::setMethod("dimnames", "ZarrRArraySeed", function(x) if (length(x@dimnames)) x@dimnames, where = where)
  methods::setMethod("show", "ZarrRArraySeed", function(object) {
    cat(sprintf("<%s ZarrRArraySeed> %s in %s (%s store)\n", paste(object@dim, collapse = " x "),
                object@array_path, if (nzchar(object@location)) redact(object@location) else "memory", object@store_kind))
  }, where = where)

  methods::setClass("ZarrRArray", contains = cls("DelayedArray"), where = where,
                    slots = c(seed = "ZarrRArraySeed"))
  methods::setClass("ZarrRMatrix", contains = c("ZarrRArray", cls("DelayedMatrix")), where = where)
  set("matrixClass", "ZarrRArray", function(x) "ZarrRMatrix")
  set("DelayedArray", "ZarrRArraySeed",
      function(seed) gen("new_DelayedArray")(seed, Class = "ZarrRArray"))
  methods::setAs("ZarrRArray", "ZarrRMatrix", function(from) methods::new("ZarrRMatrix", from), where = where)
  methods::setAs("ZarrRMatrix", "ZarrRArray", function(from) from, where = where)

  # a zarr_array (an R6 object) straight into DelayedArray() and as()
  methods::setOldClass(zarr_array_s3_classes, where = where)
  set("DelayedArray", "zarr_array", function(seed) zarr_delayed(seed))
  methods::setAs("zarr_array", "DelayedArray", function(from) zarr_delayed(from), where = where)
  methods::setAs("zarr_array", "ZarrRArray", function(from) zarr_delayed(from), where = where)

  # (a sink is not serialised: it holds the array it writes)
  methods::setClass("ZarrRRealizationSink", contains = cls("RealizationSink"), where = where,
                    slots = c(seed = "ZarrRArraySeed", handle = "environment"))
  methods::setMethod("dim", "ZarrRRealizationSink", function(x) x@seed@dim, where = where)
  methods::setMethod("dimnames", "ZarrRRealizationSink", function(x) if (length(x@seed@dimnames)) x@seed@dimnames, where = where)
  set("type", "ZarrRRealizationSink", function(x) x@seed@type)
  set("chunkdim", "ZarrRRealizationSink", function(x) if (length(x@seed@chunkdim)) x@seed@chunkdim)
  set("write_block", "ZarrRRealizationSink", function(sink, viewport, block) sink_write_block(sink, viewport, block))
  methods::setAs("ZarrRRealizationSink", "ZarrRArraySeed", function(from) new_zarr_seed(from@handle$array), where = where)
  methods::setAs("ZarrRRealizationSink", "DelayedArray", function(from) zarr_delayed(from@handle$array), where = where)
  methods::setAs("ZarrRRealizationSink", "ZarrRArray", function(from) zarr_delayed(from@handle$array), where = where)
  methods::setAs("ANY", "ZarrRArray", function(from) write_zarr_delayed(from), where = where)
}
