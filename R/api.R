#' Create a Zarr store
#'
#' Creates a new Zarr v3 data set with an empty root group, in a directory on
#' the local file system, in a zip file (a path ending in ".zip", or ".ozx"
#' for OME-Zarr's single-file form, see
#' [zarr_zipstore]: written when `z$store$close()` is called, or when the
#' store is garbage collected or R exits), in an S3 bucket
#' (`s3://bucket/prefix`, see [zarr_s3store]), in an Azure Blob container
#' (`az://container/prefix` or
#' `abfs[s]://container@account.dfs.core.windows.net/prefix`, see
#' [zarr_azurestore]) or, without a location, in memory.
#'
#' The store is Zarr v3, which zarr-python 2 and other older readers cannot
#' open. For them, write Zarr v2: set `options(zarr.format = 2)` before
#' creating the store (its groups and arrays follow the store's format), or
#' copy a store with `z$save_to(path, format = 2)`.
#'
#' @seealso [open_zarr()] to open an existing store, [as_zarr()] to store an R
#'   array, [define_array()] and [zarr] (its `add_array()` and `add_group()`
#'   methods) to build a hierarchy
#' @param location Path of the new store directory (a "file://" URI works
#'   too). By convention it ends in ".zarr". The directory must not exist yet
#'   or be empty. A path ending in ".zip" or ".ozx" makes a zip file, which must not
#'   exist yet. An `s3://bucket/prefix` location must hold no keys yet.
#'   Omit it for an in-memory store.
#' @return A [zarr] object.
#' @export
#' @examples
#' fn <- tempfile(fileext = ".zarr")
#' z <- create_zarr(fn)
#' z$store$root
#' unlink(fn, recursive = TRUE)
create_zarr <- function(location) {
  store <- if (missing(location) || is.null(location)) zarr_memorystore$new() else {
    if (!is.character(location) || length(location) != 1L)
      zarr_abort("argument", "location must be a single path")
    if (is_s3_url(location) || is_azure_url(location)) return(create_s3(location))
    p <- sub("^file://", "", location)
    if (is_zip_path(p)) new_zip_store(p) else {
      if (dir.exists(p) && length(list.files(p, all.files = TRUE, no.. = TRUE)))
        zarr_abort("exists", sprintf("'%s' already exists and is not empty", location))
      zarr_localstore$new(p)
    }
  }
  store$create_group("/", "")
  zarr$new(store)
}

#' Open a Zarr store
#'
#' Opens an existing Zarr data set (v2 or v3) in a local directory, in a
#' zip file (a path ending in ".zip", or ".ozx" for a single-file OME-Zarr
#' image, see [zarr_zipstore]; read-only unless
#' `read_only = FALSE` is given),
#' on a web server (an `http://` or `https://` URL, see [zarr_httpstore];
#' always read-only), in an S3 bucket (`s3://bucket/prefix`, see
#' [zarr_s3store], with the credentials it finds), in an Azure Blob container
#' (`az://container/prefix` or `abfs[s]://container@account.dfs.core.windows.net/prefix`,
#' see [zarr_azurestore], with the credentials it finds), in a public Google Cloud
#' Storage bucket (`gs://bucket/path`, read through
#' `https://storage.googleapis.com/bucket/path` by [zarr_httpstore], or
#' through `$STORAGE_EMULATOR_HOST/bucket/path` when that variable is set),
#' through Kerchunk references to netCDF-4, HDF5 and other files
#' (`reference+json://` or `reference+parquet://` followed by a path or URL,
#' or a path or URL ending in ".json" that holds references; see
#' [zarr_refstore]; always read-only), or in an Icechunk repository at any
#' of these locations (see [zarr_icechunkstore]; read-only, except a branch
#' of a local or S3 repository opened with `read_only = FALSE`, see
#' [zarr_icechunk_create()]).
#'
#' A location without root metadata (no `zarr.json`, `.zgroup` or `.zarray`
#' at its top) opens as an implicit root group when groups or arrays lie
#' directly inside it, so a folder of stores opens as a group of them. When
#' the stores are further down (a folder of folders of stores) there is
#' nothing to open: the error, of class `zarr_error_not_found`, names the
#' location and the stores found below it (up to three levels down).
#'
#' A store whose root is an array (as [as_zarr()] writes one without `name`)
#' holds that array at `"/"`: `z[["/"]]` or `z$root` returns it, and any
#' other path, `z[["/x"]]`, is `NULL`.
#'
#' @seealso [create_zarr()]; the stores it opens: [zarr_localstore],
#'   [zarr_httpstore], [zarr_s3store], [zarr_zipstore], [zarr_refstore]; [zarr]
#'   for what the object offers
#' @param location Path of the store directory or zip file (or a "file://"
#'   URI), the URL of a store on a web server, an `s3://` or `gs://`
#'   location, or the location of references.
#' @param read_only `TRUE` or `FALSE`: whether to open the store read-only.
#'   Zip files open read-only unless `FALSE` is given explicitly; a zip file
#'   opened for writing is rewritten when its store is closed (see
#'   [zarr_zipstore]).
#' @param branch,tag,snapshot For an Icechunk repository: the branch, tag or
#'   snapshot id to open (at most one; default: the branch "main"). A
#'   location holding a repository (a `repo` object, or
#'   `refs/branch.main/ref.json` for spec 1) opens as one without them. A
#'   branch of a spec 2 repository in a local directory or on S3 opens for
#'   writing (a session, see [zarr_icechunk_create()]) when
#'   `read_only = FALSE` is given explicitly.
#' @return A [zarr] object.
#' @export
#' @examples
#' fn <- system.file("extdata", "volcano.zarr", package = "zarr")
#' v <- open_zarr(fn, read_only = TRUE)
#' v
#' # a store written by as_zarr() without `name` holds its array at "/"
#' fn <- tempfile(fileext = ".zarr")
#' invisible(as_zarr(matrix(1:6, 2), location = fn))
#' open_zarr(fn)[["/"]][]
#' unlink(fn, recursive = TRUE)
open_zarr <- function(location, read_only = FALSE, branch = NULL, tag = NULL, snapshot = NULL) {
  if (!is.character(location) || length(location) != 1L || is.na(location))
    zarr_abort("argument", "location must be a single string")
  check_read_only(read_only)
  if (!is.null(branch) || !is.null(tag) || !is.null(snapshot)) {
    # an Icechunk branch opens writable (a session) only when asked explicitly
    if (!missing(read_only) && !read_only && is.null(tag) && is.null(snapshot))
      return(open_existing(zarr_icechunksession$new(location, branch)))
    return(open_existing(zarr_icechunkstore$new(location, branch = branch, tag = tag, snapshot = snapshot)))
  }
  # a plain local directory (no scheme, no name of a file kind opened
  # otherwise) needs none of the pattern tests below
  if (!grepl("://|[.](json|zip|ozx)", location, ignore.case = TRUE, perl = TRUE)) {
    root <- path.expand(enc2utf8(location))
    probe <- .Call(ffi_local_probe, root)
    if (probe[1L] != 1L)
      zarr_abort("not_found", sprintf("'%s' does not exist or is not a directory", location))
    # only a .zmetadata without node documents may be a parquet reference store
    if (probe[5L] == 1L && ref_is_parquet_dir(location))
      return(open_existing(zarr_refstore$new(location, format = "parquet")))
    store <- zarr_localstore$new(location, read_only = read_only)
    # with root metadata there is no Icechunk repository to fall back to
    if (any(probe[2:4] == 1L)) {
      z <- zarr$new(store)
      if (!is.null(z$root)) return(z)
    }
    return(open_existing(store))
  }
  if (grepl("^reference[+](json|parquet)://", location, ignore.case = TRUE) ||
      (grepl("[.]json([?#].*)?$", location, ignore.case = TRUE) &&
       !grepl("(^|/)zarr[.]json([?#].*)?$", location) && ref_is_reference_json(location)))
    return(open_existing(zarr_refstore$new(location)))
  if (grepl("^https?://", location, ignore.case = TRUE))
    return(open_existing(zarr_httpstore$new(location)))
  if (grepl("^gs://", location, ignore.case = TRUE))
    return(open_existing(zarr_httpstore$new(gcs_url(location))))
  if (is_s3_url(location) || is_azure_url(location)) {
    store <- if (is_azure_url(location)) azure_store_for_url(location, read_only = read_only) else {
      u <- s3_parse_url(location)
      zarr_s3store$new(u$bucket, u$prefix, read_only = read_only)
    }
    if (is.null(store$get_metadata(""))) {
      # an Icechunk repository, known before the listing of an implicit root
      # group looks into each of its folders
      info <- ic_probe(store)
      if (!is.null(info)) return(open_existing(ic_open_probed(store, info)))
      if (!length(store$list_dir(""))) zarr_abort("not_found", sprintf("'%s' holds no Zarr store", location))
    }
    return(open_existing(store))
  }
  p <- sub("^file://", "", location)
  if (is_zip_path(p)) {
    if (missing(read_only) || read_only) return(open_existing(zarr_zipstore$new(p)))
    if (!file.exists(p)) zarr_abort("not_found", sprintf("'%s' does not exist", location))
    store <- zarr_zipstore$new(p, read_only = FALSE)
    # a zip file that holds no Zarr store is left as it was
    return(tryCatch(open_existing(store), error = function(e) {
      store$discard()
      stop(e)
    }))
  }
  if (!dir.exists(p)) zarr_abort("not_found", sprintf("'%s' does not exist or is not a directory", location))
  if (ref_is_parquet_dir(p)) return(open_existing(zarr_refstore$new(p, format = "parquet")))
  store <- zarr_localstore$new(p, read_only = read_only)
  open_existing(store)
}

# open_zarr() opens a store that holds a hierarchy: one without a root node
# is an error (zarr$new() gives an object to start one in).
open_existing <- function(store) {
  force(store) # a store that fails to build fails here, not again in the handler below
  z <- tryCatch(zarr$new(store), zarr_error_not_found = function(e) e)
  if (inherits(z, "error") || is.null(z$root)) {
    # a location without root metadata may hold an Icechunk repository
    info <- if (!inherits(store, "zarr_refstore")) ic_probe(store)
    if (!is.null(info)) return(open_existing(ic_open_probed(store, info)))
    if (inherits(z, "error")) stop(z)
    abort_no_root(store)
  }
  z
}

# A store without a root node: say where, and which stores are further down
# (a folder of folders of stores), so the user can open one of those.
abort_no_root <- function(store) {
  where <- if (is.character(store$root)) sprintf("'%s'", store$root) else "the store"
  below <- if (store$supports_listing) sort(stores_below(store)) else character()
  msg <- sprintf("%s has no root group or array (no zarr.json, .zgroup or .zarray at its top)", where)
  if (length(below))
    msg <- sprintf("%s; Zarr stores below it: %s%s (open one of those)", msg,
                   paste0("'", utils::head(below, 5L), "'", collapse = ", "),
                   if (length(below) > 5L) ", ..." else "")
  zarr_abort("not_found", msg)
}

# The folders, up to `depth` levels below the root, that hold a metadata
# document (not the folders inside those); at most `max_dirs` are looked at.
stores_below <- function(store, depth = 3L, max_dirs = 100L) {
  docs <- c("zarr.json", ".zgroup", ".zarray")
  found <- character()
  level <- ""
  seen <- 0L
  for (d in seq_len(depth)) {
    kids <- unlist(lapply(level, function(p) {
      k <- tryCatch(store$list_dir(p), zarr_error = function(e) character())
      k <- k[!k %in% c(docs, ".zattrs", ".zmetadata")]
      if (length(k)) paste0(p, k, "/")
    }))
    kids <- utils::head(kids, max_dirs - seen)
    seen <- seen + length(kids)
    if (!length(kids)) break
    is_store <- vapply(kids, function(k) !is.null(tryCatch(store$get_metadata(k), zarr_error = function(e) "unreadable")),
                       TRUE, USE.NAMES = FALSE)
    found <- c(found, kids[is_store])
    level <- kids[!is_store]
    if (!length(level) || seen >= max_dirs) break
  }
  sub("/$", "", found)
}

# The Zarr data type that holds an R vector without loss.
r_data_type <- function(x) {
  if (inherits(x, "integer64")) return("int64")
  if (inherits(x, "Date")) return(list(name = "numpy.datetime64", configuration = list(unit = "D", scale_factor = 1L)))
  if (inherits(x, "POSIXt")) return(list(name = "numpy.datetime64", configuration = list(unit = "us", scale_factor = 1L)))
  if (inherits(x, "difftime")) return(list(name = "numpy.timedelta64", configuration = list(unit = "us", scale_factor = 1L)))
  if (is.factor(x) || is.character(x)) return("string")
  switch(typeof(x),
    logical = "bool", integer = "int32", double = "float64", complex = "complex128",
    zarr_abort("value", sprintf("R objects of type '%s' cannot be converted to a Zarr array", typeof(x)))
  )
}

#' Convert an R object into a Zarr array
#'
#' Stores an R vector, matrix or array as a Zarr array, with the data type
#' taken from the R type (logical: bool, integer: int32, double: float64,
#' `bit64::integer64`: int64, complex: complex128, character and factor:
#' string, Date: datetime64 in days, POSIXct: datetime64 in microseconds,
#' difftime: timedelta64 in microseconds), chunks of at most 100 elements
#' along each dimension and zstd compression. `names(dimnames(x))` become the
#' array's dimension names. The labels of named dimensions (row and column
#' names, ...) are kept as xarray keeps them when the array is in a group
#' (`name` given): a 1-d string coordinate array per dimension, named by it,
#' beside the array (a name already taken in the group is left as it is);
#' [zarr_delayed()] reads them back as `dimnames()`. A root array has no
#' group to hold them: only its dimension names are kept. A `DelayedArray` (Bioconductor) is written block
#' by block without being held in memory, as by [write_zarr_delayed()].
#'
#' Without `name`, the array is the store's root: it lands at the path `"/"`,
#' not under a name, so `z[["/"]]` (or `z$root`) returns it and
#' `z[["/x"]]` is `NULL`. This holds for every location, a zip file
#' (`as_zarr(x, location = "v.zip")`) as well; give `name` to put the array
#' in a root group under that name.
#'
#' Arrays are written as Zarr v3 (datasets as v2 unless `format = 3`). For
#' readers that only know Zarr v2 (zarr-python 2, older tools), set
#' `options(zarr.format = 2)` first.
#'
#' @seealso [create_zarr()], [auto_chunk()], [zarr_array] and [array-indexing]
#'   for reading the values back
#' A `stars` object, a `SpatRaster`, or a data frame of a regular grid, is
#' written as an xarray dataset instead (see "Datasets" below).
#'
#' @section Datasets:
#' `as_zarr()` of a `stars` object (package \pkg{stars}) or of a data frame
#' holding a regular grid (one column per dimension, one per variable, one
#' row per grid cell, such as `as.data.frame()` of a [zarr_dataset] gives)
#' writes a group as xarray writes one: one array per variable and one
#' 1-d coordinate array per dimension, named by `dimension_names` (Zarr v3)
#' or `_ARRAY_DIMENSIONS` (Zarr v2), times (`Date`, `POSIXct`) with CF
#' `units` "<unit> since <first time>" (calendar proleptic_gregorian),
#' `units` attributes from \pkg{units} values, the CRS of a stars object
#' in a `spatial_ref` variable named by each variable's `grid_mapping`,
#' and consolidated metadata. A stars object's dimensions are written in
#' the reverse order (xarray's `time, lat, lon` for stars' `lon, lat,
#' time`). A data frame's are in the order of its columns, except that
#' when columns are recognisably x and y (named lon, lat, x, y, ..., see
#' [zarr-stars-terra]) they are put in xarray's order, time first and x
#' last: `expand.grid(lon = , lat = , time = )` (the first column varying
#' fastest) is written as `time, lat, lon`; `dims` chooses another order.
#' A `SpatRaster` (package \pkg{terra}) gives one `y, x` variable per layer, named after
#' the layers. When the x and y dimensions are regular, each variable of a
#' stars object or `SpatRaster` also gets the zarr-conventions `proj:`
#' (`proj:code` when the CRS has an EPSG code, and `proj:wkt2`) and
#' `spatial:` attributes (`spatial:dimensions`, `spatial:transform`,
#' `spatial:shape`, `spatial:bbox`), as GDAL 3.13 writes them, beside the
#' CF `grid_mapping`; with a CRS, the variables also get GDAL's own `_CRS`
#' attribute (its WKT), which older GDAL versions read.
#' Values are encoded as the attributes say (see `write()` of
#' [zarr_array]).
#'
#' A data frame or stars object made by `as.data.frame()` or
#' `stars::st_as_stars()` of a [zarr_dataset], [zarr_array] or
#' [zarr_cf_data] remembers where it came from (in its attribute
#' `"zarr_cf"`, which row subsets keep): `as_zarr()` then writes it back as
#' xarray wrote it, with the dimension order, the dataset's attributes
#' (`title`, `Conventions`, ...), the attributes (`units`,
#' `long_name`, `standard_name`, ...; not those about storage or naming
#' other variables, such as `coordinates`), the floating-point type and the
#' packing (`scale_factor`, `add_offset`, `_FillValue`; unless `pack` says
#' otherwise) of each variable and coordinate, and times in their `units`
#' and `calendar`. Times of the calendars other than the standard ones,
#' which reach data frames and stars objects as ISO 8601 strings (such as
#' "2001-02-30" of "360_day"), are written as the dates they name in that
#' calendar. Arguments in `...`:
#' * `pack`: a list named by variable of lists with `scale_factor`,
#'   `add_offset`, `dtype` (default "int16") and optionally `_FillValue`
#'   (default the smallest value of `dtype`): stores the variable packed.
#' * `dims`: for a data frame, the dimension columns, in the order of the
#'   Zarr dimensions (default: those of the source, else the fewest first
#'   columns that tell the rows apart, ordered as said above); grid cells
#'   without a row are `NA`. Coordinate values are in the order they
#'   come, sorted when that order is not monotonic.
#' * `format`: the Zarr format, 2 (default: what xarray with zarr-python 2
#'   reads) or 3.
#' * `chunks`: the chunk shape of the variables (default: automatic).
#' @param x The R vector, matrix or array, a `DelayedArray`, or a `stars`
#'   object, `SpatRaster` or data frame (see "Datasets").
#' @param name Optional name of the array. Without it, the array is the root
#'   of a new single-array store. Not used for datasets.
#' @param location Optional. A [zarr_group] to add the array to (then `name`
#'   is required), the path of a new store directory or zip file (a path
#'   ending in ".zip", written and closed before `as_zarr()` returns), or an
#'   `s3://bucket/prefix` location holding no keys yet. Without it, the store
#'   is in memory.
#' @param ... For datasets: `pack`, `dims`, `format`, `chunks` (see
#'   "Datasets").
#' @return The new [zarr_array] when `location` is a group, otherwise the new
#'   [zarr] object.
#' @export
#' @examples
#' x <- array(1:400, c(5, 20, 4))
#' z <- as_zarr(x)
#' z
#' z[["/"]][1:2, 1:3, 1]
#' # without `name` the array is the root of the store, at "/", also in a zip file
#' fn <- tempfile(fileext = ".zip")
#' z <- as_zarr(x, location = fn)
#' z[["/"]]$shape
#' is.null(z[["/x"]]) # no array under another name
#' open_zarr(fn)$root$shape
#' unlink(fn)
#' # with `name`, the root is a group holding the array under that name
#' z <- as_zarr(x, name = "x")
#' z[["/x"]]$shape
#' # a grid as a data frame: written as xarray's (time, lat, lon)
#' g <- expand.grid(lon = c(5, 7.5), lat = c(40, 45), time = as.Date("2000-01-01") + 0:2)
#' g$tas <- seq_len(nrow(g)) + 270
#' ds <- zarr_dataset(as_zarr(g))
#' ds
#' # and back: as.data.frame() of a dataset is written as the dataset was
#' df <- as.data.frame(ds)
#' zarr_dataset(as_zarr(df[df$lat == 40, ]))
as_zarr <- function(x, name = NULL, location = NULL, ...) {
  if (inherits(x, c("stars", "SpatRaster", "data.frame"))) return(as_zarr_dataset(x, location = location, ...))
  if (is_delayed_array(x)) return(delayed_realize(x, location, name, NULL, wrap = FALSE)$result)
  if (inherits(x, "POSIXlt")) x <- as.POSIXct(x)
  if (!is.atomic(x) || is.null(x)) zarr_abort("value", "x must be a vector, matrix or array")
  target <- new_array_at(array_def(x, dim(x) %||% length(x), names(dimnames(x))), name, location)
  zip_written(target$array$store, {
    target$array$write(x)
    write_dim_labels(target$array, dimnames(x))
  })
  target$result
}

# Evaluate `expr` (the writes into a new store); a zip store is then written
# out, or, when `expr` failed, its staged members are dropped: the zip file
# appears only when all went well.
zip_written <- function(store, expr) {
  if (!inherits(store, "zarr_zipstore")) return(invisible(expr))
  done <- FALSE
  on.exit(if (done) store$close() else store$discard())
  force(expr)
  done <- TRUE
  invisible()
}

# The definition of an array holding R values like x (only its type and
# class matter), with dimension names `dn`.
array_def <- function(x, dims, dn = NULL) {
  def <- define_array(r_data_type(x), dims)
  if (!is.null(dn) && any(nzchar(dn))) def$dimension_names <- ifelse(nzchar(dn), dn, NA)
  def
}

# The labels of dimnames(x) (row and column names, ...) as xarray keeps
# them: a 1-d string coordinate array per named dimension, beside the array
# in its group, as the datasets of as_zarr() write their coordinates. A
# root array has no group to hold them; a name already taken is left as
# it is.
write_dim_labels <- function(arr, dn) {
  g <- arr$parent
  if (!inherits(g, "zarr_group") || is.null(dn) || is.null(names(dn))) return(invisible())
  for (k in seq_along(dn)) {
    nm <- names(dn)[k]
    lab <- dn[[k]]
    if (is.null(lab) || is.na(nm) || !nzchar(nm) || nm == arr$name || !is.null(g$get_node(nm))) next
    cf_write_variable(g, nm, as.character(lab), nm, list(), chunks = length(lab))
  }
  invisible()
}

# The labels of the named dimensions of `arr` from their coordinate arrays
# (1-d string arrays of the dimension's length, named by it, in the
# array's group), as write_dim_labels() writes them: a list of NULLs named
# by dimension, holding the labels found; NULL without dimension names.
read_dim_labels <- function(arr) {
  dn <- arr$dimension_names
  if (is.null(dn) || all(is.na(dn))) return(NULL)
  out <- stats::setNames(vector("list", length(dn)), ifelse(is.na(dn), "", dn))
  g <- arr$parent
  if (!inherits(g, "zarr_group")) return(out)
  for (k in seq_along(dn)) {
    if (is.na(dn[k]) || dn[k] == arr$name) next
    co <- tryCatch(g$get_node(dn[k]), zarr_error = function(e) NULL)
    if (inherits(co, "zarr_array") && length(co$shape) == 1L && co$shape == arr$shape[k] &&
        identical(co$data_type$Rtype, "character")) {
      lab <- tryCatch(co$read(), zarr_error = function(e) NULL)
      if (is.character(lab) && !anyNA(lab)) out[[k]] <- lab
    }
  }
  out
}

# A new array from `def` where as_zarr() puts it: in a group, or as the root
# (or the array `name`) of a new store at `location` (in memory when NULL).
# `result` is what as_zarr() returns, `array` the new zarr_array.
new_array_at <- function(def, name, location) {
  if (inherits(location, "zarr_group")) {
    if (is.null(name)) zarr_abort("argument", "a name is needed to add an array to a group")
    arr <- location$add_array(name, def)
    return(list(result = arr, array = arr))
  }
  z <- if (is.null(location)) NULL else {
    if (!is.character(location) || length(location) != 1L)
      zarr_abort("argument", "location must be a zarr_group or a path")
    if (!is_s3_url(location) && !is_azure_url(location) && dir.exists(location) &&
        length(list.files(location, all.files = TRUE, no.. = TRUE)))
      zarr_abort("exists", sprintf("'%s' already exists and is not empty", location))
    location
  }
  store <- if (is.null(z)) zarr_memorystore$new() else if (is_s3_url(z) || is_azure_url(z)) new_s3_store(z)
           else if (is_zip_path(z)) new_zip_store(z) else zarr_localstore$new(z)
  made <- FALSE # a zip store that failed here leaves nothing behind
  if (inherits(store, "zarr_zipstore")) on.exit(if (!made) store$discard())
  def$format <- store$version
  if (is.null(name)) {
    store$create_array("/", "", def)
    out <- zarr$new(store)
    arr <- out$root
  } else {
    store$create_group("/", "")
    out <- zarr$new(store)
    arr <- out$root$add_array(name, def)
  }
  made <- TRUE
  list(result = out, array = arr)
}

# .ozx is OME-Zarr's single-file form (NGFF RFC-9): a zip file with the root
# zarr.json at the top of the archive, which the zip store reads like any
# zip file "zipped from within".
is_zip_path <- function(p) grepl("[.](zip|ozx)$", p, ignore.case = TRUE) && !dir.exists(p)

# A writable zip store for a zip file that does not exist yet.
new_zip_store <- function(p) {
  if (file.exists(p)) zarr_abort("exists", sprintf("'%s' already exists", p))
  zarr_zipstore$new(p, read_only = FALSE)
}

is_s3_url <- function(x) is.character(x) && length(x) == 1L && !is.na(x) && grepl("^s3://", x, ignore.case = TRUE)

# A writable S3 (Azure) store at an s3:// (az://, abfs[s]://) location that holds no keys yet.
new_s3_store <- function(location) {
  store <- if (is_azure_url(location)) azure_store_for_url(location) else {
    u <- s3_parse_url(location)
    zarr_s3store$new(u$bucket, u$prefix)
  }
  if (length(store$list_dir("")))
    zarr_abort("exists", sprintf("'%s' already exists and is not empty", location))
  store
}

create_s3 <- function(location) {
  store <- new_s3_store(location)
  store$create_group("/", "")
  zarr$new(store)
}

# gs://bucket/path -> the public HTTPS endpoint of Google Cloud Storage.
gcs_url <- function(location) {
  rest <- sub("^gs://", "", location, ignore.case = TRUE)
  if (!nzchar(sub("/.*$", "", rest))) zarr_abort("argument", sprintf("'%s' names no bucket", location))
  # STORAGE_EMULATOR_HOST: a GCS emulator (or test server), as Google's clients use it
  host <- Sys.getenv("STORAGE_EMULATOR_HOST", "")
  if (!nzchar(host)) host <- "https://storage.googleapis.com"
  if (!grepl("^https?://", host)) host <- paste0("http://", host)
  paste0(sub("/+$", "", host), "/", sub("/+$", "", rest))
}
