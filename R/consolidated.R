# Consolidated metadata: a copy of every node's metadata kept at the root
# (v2 ".zmetadata", v3 "consolidated_metadata" inline in the root zarr.json),
# so that a hierarchy opens without listing the store. When this package
# changes a hierarchy that has consolidated metadata, it refreshes the copy.

# The map of node path ("a/b") -> metadata in v3 form, or NULL.
read_consolidated <- function(store, root_meta) {
  cm <- root_meta[["consolidated_metadata"]]
  if (is_json_object(cm) && is_json_object(cm[["metadata"]])) return(cm[["metadata"]])
  if (!identical(as.integer(root_meta[["zarr_format"]]), 2L)) return(NULL)
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

consolidated_map <- function(node) {
  root <- root_of(node)
  if (inherits(root, "zarr_group")) root$consolidated_state()$map
}

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
#' @seealso [zarr], [zarr_httpstore]
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
  write_consolidated(x$root)
  invisible(x)
}

# Rebuild the consolidated copy from the store itself (not from the old copy):
# the whole hierarchy is listed and read.
write_consolidated <- function(node) {
  root <- root_of(node)
  if (!inherits(root, "zarr_group")) return(invisible(NULL))
  if (root$store$read_only) return(invisible(NULL))
  root$consolidated_state(map = NULL, text = NULL) # list the store below, not the stale copy
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
  root$consolidated_state(map = if (length(map)) map else named_list())
  consolidated_write(root)
  invisible(NULL)
}

# Changes made through this package update the consolidated copy without
# reading the hierarchy again: the root group keeps the map of node metadata
# (`.consolidated`) and, once the copy has been written, the formatted JSON of
# every entry (`.consolidated_text`, node path -> the bytes of its members,
# each preceded by ",\n"), so that a change formats only the entries of the
# node it touches and writes the document once. Bytes, not strings: R would
# hash every document-sized string it makes.

consolidated_is_v2 <- function(root) identical(as.integer(root$metadata[["zarr_format"]]), 2L)

# Whether `node` is the root of a hierarchy with consolidated metadata that
# can be written: then the v3 root document is written with the copy in it.
consolidated_active <- function(node) {
  root <- root_of(node)
  inherits(root, "zarr_group") && !is.null(root$consolidated_state()$map) &&
    !root$store$read_only
}

# The members ("key": value, indented) of the consolidated document for node
# path `p` with metadata `meta`; none for metadata that cannot be written.
consolidated_members <- function(p, meta, v2) {
  if (!is.list(meta) || inherits(meta, "condition") || isTRUE(attr(meta, "zarr_broken"))) return(character())
  if (v2) {
    d <- tryCatch(v2_from_v3(meta), zarr_error = function(e) NULL)
    keep <- names(d)[names(d) != ".zattrs" | vapply(d, length, 0L) > 0L]
    if (!length(keep)) return(character())
    vals <- vapply(keep, function(n) json_format(d[[n]], 2L), "", USE.NAMES = FALSE)
    return(paste0("    ", json_str(paste0(p, "/", keep)), ": ", vals))
  }
  val <- tryCatch(json_format(json_prepare_metadata(meta), 3L), zarr_error = function(e) NULL)
  if (is.null(val)) character() else paste0("      ", json_str(p), ": ", val)
}

consolidated_text <- function(root) {
  st <- root$consolidated_state()
  if (is.null(st$text)) {
    map <- st$map
    v2 <- consolidated_is_v2(root)
    txt <- lapply(names(map), function(p) consolidated_bytes(consolidated_members(p, map[[p]], v2)))
    names(txt) <- names(map)
    root$consolidated_state(text = txt)
    return(txt)
  }
  st$text
}

consolidated_bytes <- function(members) {
  if (!length(members)) raw() else charToRaw(paste0(",\n", members, collapse = ""))
}

# Write the consolidated document from the cached map (one write).
consolidated_write <- function(root) {
  st <- root$consolidated_state()
  store <- root$store
  body <- unlist(consolidated_text(root), use.names = FALSE)
  if (is.null(body)) body <- raw()
  meta <- st$metadata
  if (consolidated_is_v2(root)) {
    head <- paste0("{\n  \"metadata\": {\n    \".zgroup\": ", json_format(list(zarr_format = 2L), 2L))
    if (length(meta[["attributes"]]))
      head <- paste0(head, ",\n    \".zattrs\": ", json_format(json_prepare(meta[["attributes"]]), 2L))
    store$set(".zmetadata", c(charToRaw(head), body, charToRaw("\n  },\n  \"zarr_consolidated_format\": 1\n}\n")))
  } else {
    mark <- "\001zarr-consolidated-entries\001"
    meta[["consolidated_metadata"]] <- list(kind = "inline", must_understand = FALSE,
                                       metadata = structure(mark, class = "json_literal"))
    doc <- json_write(json_prepare_metadata(meta))
    at <- regexpr(mark, doc, fixed = TRUE)
    obj <- if (length(body)) c(charToRaw("{"), body[-1L], charToRaw("\n    }")) else charToRaw("{}")
    store$set("zarr.json", c(charToRaw(substr(doc, 1L, at - 1L)), obj,
                             charToRaw(substring(doc, at + attr(at, "match.length")))))
    map <- st$map
    meta[["consolidated_metadata"]][["metadata"]] <- if (length(map)) map else named_list()
    root$consolidated_state(metadata = meta)
  }
  invisible(NULL)
}

# Record a change of one node in the consolidated copy and write it: the
# node's metadata (added or changed), or with `removed` the node and
# everything below it gone, with `below` everything below it gone. A no-op
# without consolidated metadata.
drop_consolidated_below <- function(group) update_consolidated(group, below = TRUE, write = FALSE)

update_consolidated <- function(node, removed = FALSE, below = FALSE, write = TRUE) {
  if (!consolidated_active(node)) return(invisible(NULL))
  root <- root_of(node)
  if (!identical(node, root) || below) {
    txt <- consolidated_text(root)
    map <- root$consolidated_state()$map
    p <- sub("^/", "", node$path)
    sub_prefix <- if (nzchar(p)) paste0(p, "/") else ""
    # the entries below go only with the node (or its children); a group
    # whose own metadata changed keeps them. An array has none to keep.
    drop_below <- removed || below || inherits(node, "zarr_array")
    gone <- names(map)[(drop_below & startsWith(names(map), sub_prefix)) | (removed & names(map) == p)]
    if (length(gone)) {
      map[gone] <- NULL
      txt[gone] <- NULL
    }
    if (!removed && nzchar(p)) {
      meta <- node$metadata
      if (isTRUE(attr(meta, "zarr_broken"))) {
        map[[p]] <- NULL
        txt[[p]] <- NULL
      } else {
        entry <- consolidated_bytes(consolidated_members(p, meta, consolidated_is_v2(root)))
        if (is.null(map[[p]])) { # a new node: where a rebuild would put it
          k <- consolidated_position(names(map), p)
          map <- append(map, stats::setNames(list(meta), p), after = k)
          txt <- append(txt, stats::setNames(list(entry), p), after = k)
        } else {
          map[[p]] <- meta
          txt[[p]] <- entry
        }
      }
    }
    root$consolidated_state(map = if (length(map)) map else named_list(), text = txt)
  }
  if (write) consolidated_write(root)
  invisible(NULL)
}

# Where a new node's entry goes among `paths` (in the order of a rebuild: each
# group, then its children in sort() order, each followed by what is below
# it): the number of entries before it.
consolidated_position <- function(paths, p) {
  parent <- sub("/?[^/]*$", "", p)
  pre <- if (nzchar(parent)) paste0(parent, "/") else ""
  rest <- substring(paths, nchar(pre) + 1L)
  sib <- paths[startsWith(paths, pre) & nzchar(rest) & !grepl("/", rest, fixed = TRUE)]
  s <- sort(c(sib, p))
  i <- match(p, s)
  if (i == 1L) return(if (nzchar(parent)) match(parent, paths, nomatch = length(paths)) else 0L)
  prev <- s[i - 1L]
  after <- which(paths == prev | startsWith(paths, paste0(prev, "/")))
  if (length(after)) max(after) else length(paths)
}
