# Consolidated metadata: a copy of every node's metadata kept at the root
# (v2 ".zmetadata", v3 "consolidated_metadata" inline in the root zarr.json),
# so that a hierarchy opens without listing the store. When this package
# changes a hierarchy that has consolidated metadata, it refreshes the copy.

# The map of node path ("a/b") -> metadata in v3 form, or NULL.
read_consolidated <- function(store, root_meta) {
  cm <- root_meta[["consolidated_metadata"]]
  if (is_json_object(cm) && is_json_object(cm[["metadata"]])) return(cm[["metadata"]])
  if (!identical(as.integer(root_meta$zarr_format), 2L)) return(NULL)
  raw <- tryCatch(store$get(".zmetadata"), zarr_error = function(e) NULL)
  if (is.null(raw)) return(NULL)
  docs <- tryCatch(json_parse(raw, ".zmetadata", key = ".zmetadata"), zarr_error = function(e) NULL)
  if (!is_json_object(docs)) return(NULL) # unusable: the store is listed instead
  docs <- docs[["metadata"]]
  if (!is_json_object(docs)) return(NULL)
  paths <- unique(sub("/?[.](zarray|zgroup|zattrs)$", "", names(docs)))
  paths <- paths[nzchar(paths)]
  out <- list()
  for (p in paths) {
    doc <- function(x) docs[[paste0(p, "/", x)]]
    if (is.null(doc(".zarray")) && is.null(doc(".zgroup"))) next
    # a document that cannot be understood hides only its node
    out[[p]] <- tryCatch(v2_to_v3(doc(".zarray"), doc(".zattrs"), key = paste0(".zmetadata: ", p)),
                         error = function(e) as_metadata_error(e, paste0("/", p)))
  }
  out
}

root_of <- function(node) {
  while (!is.null(node$parent)) node <- node$parent
  node
}

consolidated_map <- function(node) root_of(node)$.__enclos_env__$private$.consolidated

consolidated_children <- function(group) {
  map <- consolidated_map(group)
  if (is.null(map)) return(NULL)
  prefix <- group$prefix
  keys <- names(map)
  kids <- substring(keys[startsWith(keys, prefix)], nchar(prefix) + 1L)
  kids[nzchar(kids) & !grepl("/", kids, fixed = TRUE)]
}

consolidated_metadata_of <- function(group, name) {
  map <- consolidated_map(group)
  if (is.null(map)) return(NULL)
  map[[paste0(group$prefix, name)]]
}

#' Consolidate the metadata of a Zarr hierarchy
#'
#' Collects the metadata of every group and array into the root of the store
#' (`consolidated_metadata` in the root `zarr.json` for Zarr v3, `.zmetadata`
#' for v2), as zarr-python and xarray do. Readers, including this package, then
#' open the hierarchy from that one document without listing the store, which
#' matters for remote stores. Changes this package makes later (new groups or
#' arrays, attributes, deletions) keep the consolidated copy up to date.
#'
#' @param x A [zarr] object, or the path of a local store.
#' @return `x`, invisibly (a reopened [zarr] object when `x` is a path).
#' @export
#' @examples
#' z <- create_zarr()
#' z$add_group("/", "g")
#' zarr_consolidate(z)
#' names(z$root$metadata$consolidated_metadata$metadata)
zarr_consolidate <- function(x) {
  if (is.character(x)) x <- open_zarr(x)
  if (!inherits(x, "zarr")) zarr_abort("argument", "x must be a zarr object or a store path")
  write_consolidated(x$root, force = TRUE)
  invisible(x)
}

# Rebuild the consolidated copy from the store itself (not from the old copy).
write_consolidated <- function(node, force = FALSE) {
  root <- root_of(node)
  if (!inherits(root, "zarr_group")) return(invisible(NULL))
  priv <- root$.__enclos_env__$private
  if (!force && is.null(priv$.consolidated)) return(invisible(NULL))
  store <- root$store
  if (store$read_only) return(invisible(NULL))
  priv$.consolidated <- NULL # list the store below, not the stale copy
  map <- list()
  walk <- function(g) {
    g$build_hierarchy()
    for (k in g$children) {
      if (isTRUE(attr(k$metadata, "zarr_broken"))) next # unreadable: left as it is
      map[[sub("^/", "", k$path)]] <<- k$metadata
      if (inherits(k, "zarr_group")) walk(k)
    }
  }
  walk(root)
  meta <- root$metadata
  if (identical(as.integer(meta$zarr_format), 2L)) {
    docs <- list(.zgroup = list(zarr_format = 2L))
    if (length(meta$attributes)) docs[[".zattrs"]] <- json_prepare(meta$attributes)
    for (p in names(map)) {
      d <- tryCatch(v2_from_v3(map[[p]]), zarr_error = function(e) NULL)
      for (n in names(d)) if (n != ".zattrs" || length(d[[n]])) docs[[paste0(p, "/", n)]] <- d[[n]]
    }
    store$set(".zmetadata", charToRaw(json_write(list(metadata = docs, zarr_consolidated_format = 1L))))
  } else {
    meta$consolidated_metadata <- list(
      kind = "inline", must_understand = FALSE,
      metadata = if (length(map)) lapply(map, json_prepare_metadata) else named_list())
    store$set_metadata("", meta)
    root$.__enclos_env__$private$.metadata <- meta
  }
  priv$.consolidated <- if (length(map)) map else named_list()
  invisible(NULL)
}
