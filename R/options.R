#' Package options
#'
#' The package reads these options with [getOption()] each time they matter,
#' so they can be changed at any moment.
#'
#' * `zarr.num_threads`: Number of threads used to decode and encode
#'   chunks. Defaults to the number of cores, and to at most 2 when the
#'   environment variable `_R_CHECK_LIMIT_CORES_` is set. With 1 thread the
#'   results are identical.
#' * `zarr.fill_as_na`: `TRUE` (default): where an array's fill value
#'   marks missing values, elements equal to it are read as `NA`, and `NA`
#'   is written as the fill value. `FALSE`: the stored values are returned
#'   as they are. Reads and `[` take a `fill_as_na` argument that
#'   overrides this option for one call.
#'
#'   A fill value equal to zero (`0`, `-0`, `0+0i`, `false`, `""`, empty
#'   bytes; for datetime64 and timedelta64 the value 0, whose sentinel is
#'   NaT) never marks missing values: it reads as itself. It is what
#'   zarr-python, zarrs, tensorstore and zarrita write by default for
#'   elements never written, so in data written by other software it is
#'   an ordinary value, and reading it as `NA` would turn every real zero
#'   into `NA`. This is the one deliberate departure from the manual of
#'   zarr 1.0.0 on CRAN, which maps every fill value to `NA`. The fill
#'   values this package chooses by default (the smallest signed integer,
#'   the largest unsigned one, NaT, `"NA"` for variable-length strings) and
#'   other non-zero fill values such as
#'   `-9999` keep the mapping. Floating point arrays whose fill value is
#'   `NaN` keep `NaN` and `NA` apart either way (`NA` is written with R's
#'   own `NA` bits), as do arrays with a fill value of zero; `bool` arrays
#'   cannot hold `NA`. In integer and string arrays whose fill value is
#'   zero or `""`, `NA` is written as that fill value (with a warning of
#'   class `zarr_warning_na`) and reads back as it.
#' * `zarr.missing_chunks`: `"fill"` (default): a chunk that the store
#'   does not hold reads as the fill value, as the Zarr specification says
#'   (writers leave out chunks that hold only the fill value). `"error"`: a
#'   read that needs an absent chunk fails with an error of class
#'   `zarr_error_missing_chunk` naming the array and the chunk's key, as
#'   zarr-python does with `read_missing_chunks = False`: for stores that
#'   should be complete, where an absent chunk means a failed upload or a
#'   lost file. Writes that change part of an absent chunk are not
#'   affected, and neither are inner chunks that a shard's index marks as
#'   empty.
#' * `zarr.decode_cf`: `TRUE` (default): reads of arrays whose
#'   attributes follow the CF conventions (`scale_factor`, `add_offset`,
#'   `_FillValue`, `missing_value`, `_Unsigned`, time `units` "<unit> since
#'   <date>") give the decoded values, as xarray does: see
#'   [cf-decoding]. `FALSE`: the stored values. Reads and `[` take a
#'   `decode` argument that overrides this option for one call. Arrays
#'   without these attributes read the same either way.
#' * `zarr.decode_valid_range`: `FALSE` (default): `valid_min`,
#'   `valid_max` and `valid_range` attributes do not mask values, as in
#'   xarray, GDAL and terra. `TRUE`: decoded reads also read values outside
#'   the valid range as `NA`, as netCDF readers do (for one call:
#'   `decode = list(valid_range = TRUE)`).
#' * `zarr.format`: The Zarr format of new stores made by
#'   [create_zarr()], [as_zarr()], [write_zarr_delayed()] and
#'   [write_ome_ngff()] (then OME-NGFF 0.4): 3 (default) or 2, for readers
#'   that only know Zarr v2 (zarr-python 2, older tools). Groups and arrays
#'   follow the format of their store. An existing store is copied to
#'   another format by `z$save_to(path, format = 2)`. [write_anndata()]
#'   and the datasets of [as_zarr()] take a `format` argument instead
#'   (default 2); Zarr Vectors stores ([write_zarr_vectors()]) are always
#'   Zarr v3.
#' * `zarr.dimnames`: `FALSE` (default): values read from an array
#'   carry no dimnames. `TRUE`: values read from an array of two or more
#'   dimensions whose metadata names its dimensions (`dimension_names` in
#'   Zarr v3, the `_ARRAY_DIMENSIONS` attribute of xarray in v2; see the
#'   `dimension_names` field of [zarr_array]) come with those names as
#'   `names(dimnames(x))` (each dimension's own dimnames stay `NULL`);
#'   values from `[` that drops dimensions carry none. [as_zarr()] stores
#'   the names of `dimnames(x)` either way (and, in a group, their labels
#'   as coordinate arrays, which [zarr_delayed()] reads back).
#' * `zarr.int64`: How 64-bit integers are returned: `"integer64"`
#'   (default when the \pkg{bit64} package is installed) or `"double"`
#'   (with a warning when a value cannot be represented exactly).
#' * `zarr.range_gap`, `zarr.range_max`: How a read of part of a
#'   sharded array asks for the inner chunks it needs, and how a
#'   [zarr_refstore] reads the chunks of a referenced file: byte ranges of
#'   one shard (or file) closer than `zarr.range_gap` bytes (default 1 MiB)
#'   are fetched in one request, up to `zarr.range_max` bytes per request
#'   (default 16 MiB). Smaller values move fewer bytes; larger ones make fewer
#'   requests, which pays off on remote stores.
#' * `zarr.http_concurrency`: HTTP requests in flight at once
#'   (default 32, as tensorstore uses).
#' * `zarr.http_retries`: Further attempts after a request fails on a
#'   connection error, a timeout, a truncated body or a status 408, 429,
#'   500, 502, 503 or 504 (default 5).
#' * `zarr.http_backoff`, `zarr.http_backoff_max`: The wait before the
#'   first retry in seconds (default 0.25), doubled for each further one,
#'   with random jitter, and its cap (default 32). A `Retry-After` header
#'   is honoured up to the cap.
#' * `zarr.http_connect_timeout`, `zarr.http_low_speed_time`: Seconds
#'   to wait for a connection (default 10), and seconds a transfer may go
#'   on without receiving a byte before it is abandoned (default 30).
#'   These apply to S3 stores ([zarr_s3store]) too.
#' * `zarr.max_body_bytes`: The largest HTTP response body accepted
#'   when its length is not bounded by the request (a whole value, or a
#'   range open at its end): default 2 GiB. A larger body (or a
#'   `Content-Length` announcing one) fails with a `zarr_error_http`
#'   naming the URL instead of filling the memory. Byte-range requests
#'   accept at most the bytes asked for. Bodies are taken as the server
#'   stores them: a `Content-Encoding` such as gzip is never inflated.
#' * `zarr.max_decoded_bytes`: The most memory (default 1 GiB, at least
#'   1 MiB) that the parse of one piece of store content may produce: an
#'   Icechunk snapshot or manifest, a Zarr Vectors fragment index or link
#'   record, Kerchunk references, a zip central directory, consolidated
#'   metadata. Such content comes from whoever wrote the store; a small
#'   object that would expand beyond this budget fails with a classed
#'   error before the memory is taken.
#' * `zarr.reference_local_targets`: Whether references read from a
#'   remote location (a Kerchunk file or Parquet folder on a web server, an
#'   Icechunk repository on a server or in a bucket) may name local files as
#'   targets (default `FALSE`). References that someone else wrote could
#'   otherwise read any file this process can read and hand its bytes back
#'   as array data; reading such a target fails with a `zarr_error_store`
#'   naming it. References read from a local file, a list or a repository
#'   on local disk may always name local files.
#' * `zarr.s3_multipart_size`: Values larger than this many bytes
#'   (default 64 MiB, at least 5 MiB) are written to S3 in parts of this
#'   size, uploaded concurrently (a multipart upload).
#' * `zarr.azure_block_size`: Values larger than this many bytes
#'   (default 64 MiB, at least 1 MiB) are written to Azure Blob storage as
#'   blocks of this size, uploaded concurrently (Put Block, then Put Block
#'   List).
#' * `zarr.chunk_cache_bytes`: The size in bytes of the decoded-chunk cache
#'   (default 64 MiB; 0 turns it off), one for the whole session. Reads that
#'   select part of a chunk keep the decoded chunk there (for sharded arrays:
#'   the inner chunks they select part of, and the shard's index), so that
#'   the next read of the same chunk, such as an overlapping window or the
#'   next pixel of a time series, copies it instead of fetching and decoding
#'   it again; the least recently used chunks make room for new ones. Reads
#'   that select every element of a chunk use a chunk the cache holds but do
#'   not keep it, so whole reads never fill the cache. Writes, resizes and
#'   deletions through this package (and a store's `set()`, `erase()`,
#'   `erase_prefix()` and `clear()`) drop the chunks they change, through
#'   whichever store object they are made: a local chunk is cached by its
#'   file, so stores opened at a folder and at one of its groups (or through
#'   a symbolic link) share it. Before a cached local chunk is used, its
#'   file's size and modification time are compared with those it had when
#'   it was read, so changes made by other processes or other software are
#'   seen on the next read. Chunks of remote stores (HTTP, S3, GCS, Azure)
#'   are cached by URL, shared only by stores with the same query string and
#'   credentials, and are not checked with the server: after a change made
#'   elsewhere, call [zarr_clear_cache()]. A
#'   [zarr_array]'s `chunk_cache_bytes` field caps what one array may hold.
#'   The `cache_hits`, `cache_misses` and `cache_bytes` of a store's
#'   `io_stats()` show what the cache did. Strings are not cached.
#' * `zarr.scratch_bytes`: Reads keep the memory they decode chunks in
#'   (a chunk's stored bytes and its decoded values, per thread) for the
#'   next read while it is at most this many bytes (default 256 MiB; 0 frees
#'   it after every read), so that reading chunk by chunk does not ask the
#'   system for fresh memory on every call. It is freed when the package is
#'   unloaded. Likewise the memory of results between 256 KiB and 64 MiB
#'   that R has collected is kept for the next results of about their size
#'   (at most 16 blocks and 64 MiB, or this option's value when smaller;
#'   nothing with 0); [gc()] does not count such results' elements.
#' * `zarr.compact_results`: `TRUE` (default): a read of at least 65,536
#'   elements of a type narrower than the R type it reads as (8- and 16-bit
#'   integers, bool, float16, bfloat16, float32, uint32) returns an ordinary
#'   integer, logical or double vector that keeps the elements at their
#'   stored width in memory (half, or a quarter, of the memory) and
#'   converts them when they are used: one by one or a block at a time
#'   (subsetting, `sum()`, `range()`, `saveRDS()`) without a copy, or all at
#'   once the first time code asks for the whole vector's memory
#'   (arithmetic, most compiled code), after which it is an ordinary vector
#'   (the stored elements are let go). Values are the same either way.
#'   `FALSE` converts every element during the read. The stored elements of
#'   such a result of 64 MiB or more are held outside R's heap (freed when
#'   the result is collected; [gc()] does not count them), so that reading
#'   it does not make R collect all its objects first.
#' * `zarr.progress`: Unset (default): in interactive sessions, reads,
#'   writes, copies ([zarr]'s `save_to()`) and [zarr_map_blocks()] that take
#'   longer than about 2 seconds show a progress bar (with the \pkg{cli}
#'   package, when it is installed); scripts run by `Rscript` or in batch
#'   show none. `TRUE`: in every session, as in interactive ones. `FALSE`:
#'   never.
#' [zarr_options()] lists and sets these options, and [save_options()] keeps
#' them for later sessions.
#' @seealso [zarr_options()], [save_options()], [reset_options()]
#' @examples
#' names(zarr_options())
#' getOption("zarr.format")
#' old <- options(zarr.format = 2) # write Zarr v2 for older readers
#' z <- as_zarr(1:5)
#' z$version
#' options(old)
#' @name zarr-options
NULL

# The cores this process may use, asked once (reads take it on every call).
num_cores <- local({
  n <- NULL
  function() {
    if (is.null(n)) n <<- .Call(ffi_num_cores)
    n
  }
})

zarr_num_threads <- function() {
  n <- getOption("zarr.num_threads")
  if (is.null(n)) {
    n <- num_cores()
    limit <- Sys.getenv("_R_CHECK_LIMIT_CORES_", "")
    if (nzchar(limit) && !identical(tolower(limit), "false")) n <- min(n, 2L)
  }
  # the usual case, a plain count, without the coercion's warning handler
  if (is.numeric(n) && length(n) == 1L && is.finite(n) && n >= 1 && n <= .Machine$integer.max) return(as.integer(n))
  n <- suppressWarnings(as.integer(n))
  if (length(n) != 1L || is.na(n) || n < 1L) 1L else n
}

# The defaults of the numeric engine options (zarr_option_table() gives
# them too) and of the progress bars' threshold, for engine_opts() and for
# ffi_read_opts(), which reads the same options in C (in this order).
engine_opt_defaults <- c(range_gap = 2^20, range_max = 2^24, cache_bytes = 64 * 2^20,
                         scratch_bytes = 256 * 2^20, progress_min = 2^20)

# What the engine is told besides the selection.
engine_opts <- function(fill_as_na = zarr_fill_as_na()) {
  d <- engine_opt_defaults
  list(nthreads = zarr_num_threads(), fill_as_na = fill_as_na, missing_error = zarr_missing_chunks_error(),
       range_gap = zarr_num_option("zarr.range_gap", d[["range_gap"]], 0),
       range_max = zarr_num_option("zarr.range_max", d[["range_max"]], 1),
       cache_bytes = zarr_num_option("zarr.chunk_cache_bytes", d[["cache_bytes"]], 0),
       scratch_bytes = zarr_num_option("zarr.scratch_bytes", d[["scratch_bytes"]], 0),
       compact = !isFALSE(getOption("zarr.compact_results")))
}

# What a read is told and asks (engine_opts() and the progress threshold),
# read in one call; R reads them
# (coercing, or raising the option's error) when one holds a value the C
# reader leaves to it.
read_opts <- function(fill_as_na) {
  opts <- .Call(ffi_read_opts, fill_as_na, engine_opt_defaults)
  if (!is.null(opts)) return(opts)
  opts <- engine_opts(isTRUE(fill_as_na))
  pmin <- progress_min_bytes()
  opts$progress_min <- if (is.numeric(pmin) && length(pmin) == 1L && !is.na(pmin)) pmin else 0
  opts
}

# The parse budget for store content (zarr.max_decoded_bytes), as the C
# parsers take it.
max_decoded_bytes <- function() zarr_num_option("zarr.max_decoded_bytes", 2^30, 2^20)

# A numeric option: its default when unset, an error when not a number >= min.
zarr_num_option <- function(name, default, min = 0) {
  v <- getOption(name)
  # unset (the usual case): the default, without the coercion's warning handler
  if (is.null(v)) return(default)
  if (is.double(v) && length(v) == 1L && !is.na(v) && v >= min) return(v)
  v <- suppressWarnings(as.numeric(v))
  if (length(v) != 1L || is.na(v) || v < min)
    zarr_abort("argument", sprintf("option %s must be a number of at least %s", name, format(min)))
  v
}

zarr_fill_as_na <- function(value = getOption("zarr.fill_as_na", TRUE)) {
  isTRUE(value)
}

# Whether reading an absent chunk is an error (zarr.missing_chunks = "error").
zarr_missing_chunks_error <- function() {
  v <- getOption("zarr.missing_chunks")
  if (is.null(v)) return(FALSE) # unset: "fill"
  if (!is.character(v) || length(v) != 1L || !v %in% c("fill", "error"))
    zarr_abort("argument", "option zarr.missing_chunks must be \"fill\" or \"error\"")
  v == "error"
}

zarr_int64_mode <- function() {
  mode <- getOption("zarr.int64")
  if (is.null(mode)) mode <- if (requireNamespace("bit64", quietly = TRUE)) "integer64" else "double"
  match.arg(mode, c("integer64", "double"))
}

#' Default for `NULL`
#'
#' `x %||% y` is `y` when `x` is `NULL`, else `x`, as in base R from 4.4.0.
#' Exported on older versions of R only, for code (such as domain packages
#' written for R 4.4) that uses the operator of base R.
#' @param x,y Any values.
#' @return `x`, or `y` when `x` is `NULL`.
#' @examples
#' NULL %||% "fallback"
#' "given" %||% "fallback"
#' @name null-default
#' @rawNamespace if (getRversion() < "4.4.0") export("%||%")
`%||%` <- function(x, y) if (is.null(x)) y else x

`%|NA|%` <- function(a, b) if (length(a) != 1L || is.na(a)) b else a

zarr_default_format <- function() {
  f <- suppressWarnings(as.integer(getOption("zarr.format", 3L)))
  if (length(f) != 1L || !f %in% c(2L, 3L)) zarr_abort("argument", "option zarr.format must be 2 or 3")
  f
}

# ---- zarr_options(), save_options(), reset_options() ---------------------------
#
# Every package option is an R option "zarr.<key>" (read with getOption() where
# it matters). The table below names the keys zarr_options() knows, their
# default (NULL: worked out when used) and the check a new value must pass.
# The 1.0.0 keys (chunk_length, min_compress, ...) are kept so that code
# written for that API can set and read them.

is_count <- function(v, min = 1) is.numeric(v) && length(v) == 1L && !is.na(v) && v >= min
is_flag <- function(v) is.logical(v) && length(v) == 1L && !is.na(v)

# The read_only argument of open_zarr(), zarr$new() and the stores: TRUE or FALSE only.
check_read_only <- function(read_only) {
  if (!is_flag(read_only))
    zarr_abort("argument", sprintf("read_only must be TRUE or FALSE, not %s",
                                   paste(deparse(read_only, nlines = 1L), collapse = "")))
  read_only
}
is_text <- function(v) is.character(v) && length(v) >= 1L && !anyNA(v)

zarr_option_table <- function() list(
  num_threads          = list(NULL, function(v) is_count(v, 1)),
  fill_as_na           = list(TRUE, is_flag),
  missing_chunks       = list("fill", function(v) is.character(v) && length(v) == 1L && v %in% c("fill", "error")),
  decode_cf            = list(TRUE, is_flag),
  decode_valid_range   = list(FALSE, is_flag),
  format               = list(3L, function(v) is_count(v) && v %in% c(2, 3)),
  int64                = list(NULL, function(v) is.character(v) && length(v) == 1L && v %in% c("integer64", "double")),
  dimnames             = list(FALSE, is_flag),
  progress             = list(NULL, is_flag),
  range_gap            = list(engine_opt_defaults[["range_gap"]], function(v) is_count(v, 0)),
  range_max            = list(engine_opt_defaults[["range_max"]], function(v) is_count(v, 1)),
  http_concurrency     = list(32L, function(v) is_count(v, 1)),
  http_retries         = list(5L, function(v) is_count(v, 0)),
  http_backoff         = list(0.25, function(v) is_count(v, 0)),
  http_backoff_max     = list(32, function(v) is_count(v, 0)),
  http_connect_timeout = list(10, function(v) is_count(v, 0)),
  http_low_speed_time  = list(30, function(v) is_count(v, 0)),
  max_body_bytes       = list(2^31, function(v) is_count(v, 1)),
  max_decoded_bytes    = list(2^30, function(v) is_count(v, 2^20)),
  reference_local_targets = list(FALSE, is_flag),
  s3_multipart_size    = list(64 * 2^20, function(v) is_count(v, 5 * 2^20)),
  azure_block_size     = list(64 * 2^20, function(v) is_count(v, 2^20)),
  chunk_length         = list(100L, function(v) is_count(v, 1)),
  min_compress         = list(100L, function(v) is_count(v, 1)),
  eps                  = list(sqrt(.Machine$double.eps), function(v) is_count(v, 0) && v > 0),
  chunk_cache_bytes    = list(engine_opt_defaults[["cache_bytes"]], function(v) is_count(v, 0)),
  scratch_bytes        = list(engine_opt_defaults[["scratch_bytes"]], function(v) is_count(v, 0)),
  compact_results      = list(TRUE, is_flag),
  group_style          = list(c("blue", "bold"), is_text),
  array_style          = list(c("green", "bold"), is_text),
  label_style          = list(c("black", "bold"), is_text),
  text_style           = list("blue", is_text),
  minor_style          = list("grey", is_text)
)

# "zarr.num_threads" and "num_threads" name the same option.
option_key <- function(key) {
  if (!is.character(key) || length(key) != 1L || is.na(key))
    zarr_abort("argument", "an option key must be a single string")
  sub("^zarr[.]", "", key)
}

option_value <- function(key, entry) {
  v <- getOption(paste0("zarr.", key))
  if (!is.null(v)) return(v)
  switch(key, num_threads = zarr_num_threads(), int64 = zarr_int64_mode(), progress = progress_wanted(), entry[[1L]])
}

#' Package options as a list, and changing them
#'
#' Reads or sets the options of the package (see [zarr-options]); each is the R
#' option `zarr.<key>`, so `zarr_options("num_threads", 4)` and
#' `options(zarr.num_threads = 4)` do the same. The keys of CRAN zarr 1.0.0
#' are accepted too: `chunk_length` (the longest chunk side chosen by
#' [auto_chunk()]) and the style keys for printing (`group_style`,
#' `array_style`, `label_style`, `text_style`, `minor_style`);
#' `min_compress` and `eps` are kept so that code which sets them runs, but
#' change nothing here.
#' A value that does not suit the option is ignored and the option keeps its
#' value. [save_options()] keeps the options for later sessions.
#'
#' @param key Name of an option, with or without the `"zarr."` prefix.
#'   Missing: every option.
#' @param value Optional. The new value of the option.
#' @return Without `key`, a named list with the value of every option (of
#'   class `zarr_options`, which prints as a table of each option's value,
#'   default and meaning; `as.list()` gives the plain list); with `key`
#'   only, that option's value; with `value`, the previous value, invisibly.
#' @seealso [save_options()], [reset_options()]
#' @export
#' @examples
#' zarr_options()
#' zarr_options()$format
#' zarr_options("fill_as_na")
#' old <- zarr_options("chunk_length", 50)
#' zarr_options("chunk_length")
#' zarr_options("chunk_length", old)
zarr_options <- function(key, value) {
  tab <- zarr_option_table()
  if (missing(key))
    return(structure(c(mapply(option_value, names(tab), tab, SIMPLIFY = FALSE), list(zarr_theme = zarr_theme())),
                     class = "zarr_options"))
  key <- option_key(key)
  if (identical(key, "zarr_theme")) return(zarr_theme()) # read-only, made from the styles
  entry <- tab[[key]]
  if (is.null(entry)) zarr_abort("argument", sprintf("'%s' is not an option of the zarr package", key))
  old <- option_value(key, entry)
  if (missing(value)) return(old)
  if (entry[[2L]](value)) {
    args <- list(value)
    names(args) <- paste0("zarr.", key)
    options(args)
    if (endsWith(key, "_style")) forget_zarr_theme()
  }
  invisible(old)
}

# ---- print(zarr_options()): one line per option -------------------------------
#
# What each option does, in a few words (at most 29 characters, so that the
# table fits 80 columns; ?zarr-options says it in full), for print().
# Keys missing here show no meaning.
zarr_option_meaning <- c(
  num_threads = "threads that decode chunks",
  fill_as_na = "fill value reads as NA",
  missing_chunks = "absent chunk: fill or error",
  decode_cf = "decode CF attributes",
  decode_valid_range = "mask values off valid_range",
  format = "Zarr format of new stores",
  int64 = "how int64 values are read",
  dimnames = "reads carry dimension names",
  progress = "progress bars",
  range_gap = "merge byte ranges this close",
  range_max = "largest merged range request",
  http_concurrency = "HTTP requests at once",
  http_retries = "retries of failed requests",
  http_backoff = "first retry wait (s)",
  http_backoff_max = "longest retry wait (s)",
  http_connect_timeout = "connection timeout (s)",
  http_low_speed_time = "stalled transfer timeout (s)",
  max_body_bytes = "largest unbounded HTTP body",
  max_decoded_bytes = "parse budget of store content",
  reference_local_targets = "remote refs to local files",
  s3_multipart_size = "S3 uploads in parts above",
  azure_block_size = "Azure uploads in blocks above",
  chunk_length = "auto_chunk() longest side",
  min_compress = "unused (zarr 1.0.0)",
  eps = "unused (zarr 1.0.0)",
  chunk_cache_bytes = "decoded-chunk cache size",
  scratch_bytes = "decode memory kept",
  compact_results = "large reads keep stored width",
  group_style = "print style: groups",
  array_style = "print style: arrays",
  label_style = "print style: labels",
  text_style = "print style: text",
  minor_style = "print style: minor text",
  zarr_theme = "print theme (read-only)"
)

# A value as a short string: sizes of whole KiB, MiB or GiB in those units.
format_option_value <- function(key, v) {
  if (is.null(v)) return(if (identical(key, "zarr_theme")) "plain" else "auto")
  if (identical(key, "zarr_theme")) return("cli")
  if (is.numeric(v) && length(v) == 1L && !is.na(v) && v >= 1024 &&
      (endsWith(key, "_bytes") || endsWith(key, "_size") || key %in% c("range_gap", "range_max"))) {
    k <- max(which(v %% 1024^(1:3) == 0), 0L)
    if (k > 0L) return(sprintf("%s %s", format(v / 1024^k), c("KiB", "MiB", "GiB")[k]))
  }
  out <- if (is.character(v)) paste(v, collapse = ", ")
    else if (is.atomic(v) && length(v) <= 3L) paste(format(v, digits = 4L), collapse = ", ")
    else paste0("<", class(v)[1L], ">")
  if (nchar(out) > 20L) paste0(substr(out, 1L, 17L), "...") else out
}

#' @export
format.zarr_options <- function(x, width = getOption("width", 80L), ...) {
  tab <- zarr_option_table()
  keys <- names(x)
  value <- vapply(keys, function(k) format_option_value(k, x[[k]]), "")
  default <- vapply(keys, function(k) {
    if (identical(k, "zarr_theme")) return("")
    e <- tab[[k]]
    if (is.null(e)) "" else format_option_value(k, e[[1L]])
  }, "")
  meaning <- unname(zarr_option_meaning[keys])
  meaning[is.na(meaning)] <- ""
  cols <- list(c("option", keys), c("value", value), c("default", default))
  lines <- do.call(paste, c(lapply(cols, function(col) formatC(col, width = -max(nchar(col)))), sep = "  "))
  room <- max(20L, width - nchar(lines[1L]) - 2L)
  meaning <- c("meaning", ifelse(nchar(meaning) > room, paste0(substr(meaning, 1L, room - 3L), "..."), meaning))
  sub(" +$", "", paste(lines, meaning, sep = "  "))
}

#' @export
print.zarr_options <- function(x, ...) {
  cat("<zarr options> (see ?`zarr-options`)\n")
  cat(format(x, ...), sep = "\n")
  invisible(x)
}

#' @export
as.list.zarr_options <- function(x, ...) unclass(x)

options_file <- function() file.path(tools::R_user_dir("zarr", "config"), "options.rds")

#' Keep the package options for later sessions
#'
#' Writes the options that are set now (see [zarr_options()]) to a file in
#' the user's configuration directory for the package,
#' `tools::R_user_dir("zarr", "config")`. When the package is loaded in a
#' later session, the options in that file are set again, except those the
#' session has already set (in `.Rprofile`, for example).
#'
#' @return The path of the file, invisibly.
#' @seealso [reset_options()]
#' @export
#' @examples
#' # a temporary configuration folder keeps this example away from your own
#' old <- Sys.getenv("R_USER_CONFIG_DIR", unset = NA)
#' Sys.setenv(R_USER_CONFIG_DIR = tempfile())
#' zarr_options("num_threads", 2)
#' f <- save_options()
#' readRDS(f) # what a later session sets when the package is loaded
#' reset_options()
#' if (is.na(old)) Sys.unsetenv("R_USER_CONFIG_DIR") else Sys.setenv(R_USER_CONFIG_DIR = old)
save_options <- function() {
  tab <- zarr_option_table()
  set <- Filter(Negate(is.null), lapply(stats::setNames(nm = names(tab)), function(k) getOption(paste0("zarr.", k))))
  f <- options_file()
  dir.create(dirname(f), recursive = TRUE, showWarnings = FALSE)
  ok <- tryCatch({
    saveRDS(set, f)
    TRUE
  }, error = function(e) FALSE, warning = function(w) FALSE)
  if (!ok) zarr_abort("store", sprintf("cannot write the options file '%s'", f))
  invisible(f)
}

#' Set the package options back to their defaults
#'
#' Unsets every option of the package (see [zarr_options()]), so each takes
#' its default value again, and removes the file written by
#' [save_options()], so later sessions start with the defaults too.
#'
#' @return `NULL`, invisibly.
#' @seealso [save_options()]
#' @export
#' @examples
#' # a temporary configuration folder keeps this example away from your own
#' old <- Sys.getenv("R_USER_CONFIG_DIR", unset = NA)
#' Sys.setenv(R_USER_CONFIG_DIR = tempfile())
#' zarr_options("chunk_length", 50)
#' f <- save_options()
#' reset_options()
#' zarr_options("chunk_length") # the default again
#' file.exists(f) # and later sessions start with the defaults
#' if (is.na(old)) Sys.unsetenv("R_USER_CONFIG_DIR") else Sys.setenv(R_USER_CONFIG_DIR = old)
reset_options <- function() {
  f <- options_file()
  if (file.exists(f)) unlink(f)
  keys <- paste0("zarr.", names(zarr_option_table()))
  options(stats::setNames(vector("list", length(keys)), keys))
  forget_zarr_theme()
  invisible(NULL)
}

# At load: the saved options, except those the session has set already.
load_saved_options <- function(file = options_file()) {
  if (!file.exists(file)) return(invisible(character()))
  saved <- tryCatch(readRDS(file), error = function(e) NULL)
  if (!is.list(saved) || is.null(names(saved))) return(invisible(character()))
  tab <- zarr_option_table()
  done <- character()
  for (k in intersect(names(saved), names(tab))) {
    name <- paste0("zarr.", k)
    if (is.null(getOption(name)) && isTRUE(tab[[k]][[2L]](saved[[k]]))) {
      options(stats::setNames(list(saved[[k]]), name))
      done <- c(done, k)
    }
  }
  invisible(done)
}

.onLoad <- function(libname, pkgname) {
  load_saved_options()
  # the cheaper $new() of this package's classes (R/r6_fast.R) lays objects
  # out as R6 2.x does: another major version of R6 gets R6's own
  r6_check_layout()
  # the DelayedArray backend (R/delayed.R), without loading DelayedArray
  if (isNamespaceLoaded("DelayedArray")) register_delayed()
  else setHook(packageEvent("DelayedArray", "onLoad"), function(...) register_delayed())
  cf_register_converters()
  # OME-NGFF images (R/ome.R), a domain like any other package's
  if (is.null(zarr_domains()[[ome_domain_name]])) zarr_register_domain(zarr_ome_domain$new())
  # Zarr Vectors stores (R/zarr_vectors.R): asked first, as their roots carry
  # `multiscales` too
  if (is.null(zarr_domains()[[zv_domain_name]])) zarr_register_domain(zarr_vectors_domain$new(), first = TRUE)
  # as(<zarr_anndata>, "SingleCellExperiment"/"SummarizedExperiment") (R/anndata.R)
  for (p in anndata_targets)
    if (isNamespaceLoaded(p)) register_anndata_as(p)
    else setHook(packageEvent(p, "onLoad"), local({ pkg <- p; function(...) register_anndata_as(pkg) }))
}
