# Consolidated metadata: a copy of every node's metadata kept at the root
# (v2 ".zmetadata", v3 "consolidated_metadata" inline in the root zarr.json),
# so that a hierarchy opens without listing the store. When this package
# changes a hierarchy that has consolidated metadata, it refreshes the copy.

# The map of node path ("a/b") -> metadata in v3 form, or NULL.
# The document it came from is kept with it (attribute "zarr_source", the
# bytes and where its entries are), so that the first change rewrites only
# the entry it touches and keeps the others byte for byte.
read_consolidated <- function(store, root_meta) {
  cm <- root_meta[["consolidated_metadata"]]
  if (is_json_object(cm) && is_json_object(cm[["metadata"]])) {
    raw <- take_root_document(root_meta)
    return(structure(cm[["metadata"]], zarr_source = if (!is.null(raw)) list(raw = raw, v2 = FALSE)))
  }
  if (!identical(as.integer(root_meta[["zarr_format"]]), 2L)) return(NULL)
  raw <- take_root_zmetadata(store)
  if (identical(raw, FALSE)) raw <- tryCatch(store$get(".zmetadata"), zarr_error = function(e) NULL)
  if (is.null(raw)) return(NULL)
  # what its parse would take, before it is parsed (a classed error: the budget is the user's to raise)
  json_check_budget(raw, "the consolidated metadata", key = ".zmetadata")
  docs <- tryCatch(json_parse(raw, ".zmetadata", key = ".zmetadata"), zarr_error = function(e) NULL)
  if (!is_json_object(docs)) return(NULL) # unusable: the store is listed instead
  docs <- docs[["metadata"]]
  if (!is_json_object(docs)) return(NULL)
  keys <- names(docs)
  paths <- unique(sub("/?[.](zarray|zgroup|zattrs)$", "", keys))
  paths <- paths[nzchar(paths)]
  at <- function(x) match(paste0(paths, "/", x), keys) # (one lookup for all nodes)
  za <- at(".zarray")
  zt <- at(".zattrs")
  node <- !is.na(za) | !is.na(at(".zgroup"))
  doc <- function(i) if (is.na(i)) NULL else docs[[i]]
  # each node's documents as they are, made v3 metadata when the node is
  # opened (consolidated_meta()): converting all of them here took most of
  # opening a store of many arrays (500: 40 of 58 ms)
  out <- lapply(which(node), function(k)
    structure(list(zarray = doc(za[k]), zattrs = doc(zt[k]), path = paths[k]), class = "zarr_v2_pending"))
  names(out) <- paths[node]
  structure(out, zarr_source = list(raw = raw, v2 = TRUE))
}

# An entry of a consolidated map as v3 metadata: a v2 node's documents are
# converted (a document that cannot be understood hides only its node: its
# entry is then the error).
consolidated_meta <- function(x) {
  if (!inherits(x, "zarr_v2_pending")) return(x)
  tryCatch(v2_to_v3(x$zarray, x$zattrs, key = paste0(".zmetadata: ", x$path)),
           error = function(e) as_metadata_error(e, paste0("/", x$path)))
}

# The .zmetadata of a v2 root group (NULL: absent or unreadable) that the
# store read with its other root documents in get_metadata(""), for the
# read_consolidated() that follows it; forgotten by every get_metadata("")
# (each open reads the root metadata first) and taken once, for that store only.
root_zmetadata_slot <- new.env(parent = emptyenv())

remember_root_zmetadata <- function(store, raw) {
  root_zmetadata_slot$store <- store
  root_zmetadata_slot$raw <- raw
}

forget_root_zmetadata <- function() {
  root_zmetadata_slot$store <- NULL
  root_zmetadata_slot$raw <- NULL
}

# The kept bytes (or NULL) when they are this store's; FALSE when none are kept.
take_root_zmetadata <- function(store) {
  kept <- root_zmetadata_slot$store
  if (is.null(kept) || !identical(kept, store)) return(FALSE)
  raw <- root_zmetadata_slot$raw
  forget_root_zmetadata()
  raw
}

# The bytes of the root zarr.json that the store parsed last, when they are
# those of `meta` (the store's get_metadata("") keeps them, as
# remember_parsed() does for arrays). Taken once.
root_document_slot <- new.env(parent = emptyenv())

remember_root_document <- function(meta, raw) {
  root_document_slot$meta <- meta
  root_document_slot$raw <- raw
}

take_root_document <- function(meta) {
  raw <- if (identical(root_document_slot$meta, meta)) root_document_slot$raw
  root_document_slot$meta <- NULL
  root_document_slot$raw <- NULL
  raw
}

# The members of the JSON object at `path` (member names from the top) in
# the document `raw`: their names and their bytes, each from just after the
# "{" or "," before it (leading white space included) to its last
# non-blank byte. NULL when the document has no such object. In C
# (src/json_scan.c), except for documents whose member names on the way
# hold escapes: json_member_spans_r() decodes those. Both find strings and
# the structural characters only; the nesting depth is a running sum over
# them.
json_member_spans <- function(raw, path) {
  sp <- .Call(ffi_json_member_spans, raw, as.character(path))
  if (!isFALSE(sp)) return(sp)
  json_member_spans_r(raw, path) # member names with escapes, decoded
}

json_member_spans_r <- function(raw, path) {
  txt <- rawToChar(raw)
  m <- gregexpr("\"(?:[^\"\\\\]++|\\\\.)*+\"|[][{},:]", txt, perl = TRUE, useBytes = TRUE)[[1L]]
  if (m[1L] < 0L) return(NULL)
  pos <- as.integer(m)
  len <- attr(m, "match.length")
  ch <- rawToChar(raw[pos], multiple = TRUE)
  delta <- (ch == "{" | ch == "[") - (ch == "}" | ch == "]")
  after <- cumsum(delta)
  before <- after - delta
  name_at <- function(i) { # the decoded text of string token i
    tok <- raw[pos[i] + seq_len(len[i]) - 1L]
    if (any(tok == as.raw(0x5c))) return(jsonlite::parse_json(rawToChar(tok))) # escapes
    s <- rawToChar(tok[-c(1L, length(tok))])
    Encoding(s) <- "UTF-8"
    s
  }
  close_of <- function(o) o + match(before[o], after[(o + 1L):length(after)])
  o <- 1L
  if (ch[o] != "{") return(NULL)
  for (key in path) {
    end <- close_of(o)
    if (is.na(end)) return(NULL)
    cand <- which(seq_along(ch) > o & seq_along(ch) < end & before == after[o] & ch == "\"" &
                  c(ch[-1L], "") == ":" & c(ch[-(1:2)], "", "") == "{")
    hit <- cand[vapply(cand, function(i) identical(name_at(i), key), TRUE)]
    if (length(hit) != 1L) return(NULL)
    o <- hit + 2L
  }
  end <- close_of(o)
  if (is.na(end)) return(NULL)
  inside <- seq.int(o, end)
  seps <- inside[inside == o | (ch[inside] == "," & before[inside] == after[o]) | inside == end]
  if (end == o + 1L) return(list(names = character(), bytes = list()))
  from <- pos[seps[-length(seps)]] + 1L
  to <- pos[seps[-1L]] - 1L
  blank <- as.raw(c(0x20, 0x09, 0x0a, 0x0d))
  repeat { # trailing white space (before a "}" on its own line): a few bytes at most
    w <- which(to >= from & raw[pmax(to, 1L)] %in% blank)
    if (!length(w)) break
    to[w] <- to[w] - 1L
  }
  bytes <- lapply(seq_along(from), function(k) raw[seq.int(from[k], length.out = to[k] - from[k] + 1L)])
  list(names = vapply(seps[-length(seps)] + 1L, name_at, ""), bytes = bytes)
}

root_of <- function(node) {
  while (!is.null(node$parent)) node <- node$parent
  node
}

consolidated_map <- function(node) {
  root <- root_of(node)
  if (inherits(root, "zarr_group")) root$consolidated_state()$map
}

# The paths of a consolidated map, indexed once per map: each group asks
# for its children and each child for its metadata, and scanning the whole
# map each time took time quadratic in the nodes (20,000 groups: 30 s).
# Environments hash: `pos` maps a path to its first position in the map,
# `kids` "p:<prefix>" to the names directly below it.
consolidated_index_cache <- new.env(parent = emptyenv())

consolidated_index <- function(map) {
  keys <- names(map) %||% character()
  idx <- consolidated_index_cache
  if (!identical(idx$keys, keys)) {
    first <- !duplicated(keys) & nzchar(keys)
    idx$pos <- list2env(as.list(stats::setNames(which(first), keys[first])), hash = TRUE)
    slash <- regexpr("/[^/]*$", keys)
    parent <- ifelse(slash > 0L, substr(keys, 1L, slash), "")
    name <- ifelse(slash > 0L, substring(keys, slash + 1L), keys)
    ok <- nzchar(name)
    idx$kids <- list2env(split(name[ok], paste0("p:", parent[ok])), hash = TRUE)
    idx$keys <- keys
  }
  idx
}

consolidated_children <- function(group) {
  map <- consolidated_map(group)
  if (is.null(map)) return(NULL)
  unique(consolidated_index(map)$kids[[paste0("p:", group$prefix)]] %||% character())
}

consolidated_metadata_of <- function(group, name) {
  map <- consolidated_map(group)
  if (is.null(map)) return(NULL)
  i <- consolidated_index(map)$pos[[paste0(group$prefix, name)]]
  if (!is.null(i)) consolidated_meta(map[[i]])
}

#' Consolidate the metadata of a Zarr hierarchy
#'
#' Collects the metadata of every group and array into the root of the store
#' (`consolidated_metadata` in the root `zarr.json` for Zarr v3, `.zmetadata`
#' for v2), as zarr-python and xarray do. Readers, including this package, then
#' open the hierarchy from that one document without listing the store, which
#' matters for remote stores. Changes this package makes later (new groups or
#' arrays, attributes, deletions) keep the consolidated copy up to date: only
#' the entry of the node that changed is written anew, the others stay as they
#' were written (by this package or another tool).
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
    return(stats::setNames(paste0("    ", json_str(paste0(p, "/", keep)), ": ", vals), keep))
  }
  val <- tryCatch(json_format(json_prepare_metadata(meta), 3L), zarr_error = function(e) NULL)
  if (is.null(val)) character() else paste0("      ", json_str(p), ": ", val)
}

consolidated_text <- function(root) {
  st <- root$consolidated_state()
  if (is.null(st$text) || inherits(st$text, "zarr_consolidated_source")) {
    map <- st$map
    v2 <- consolidated_is_v2(root)
    kept <- consolidated_kept_entries(st$text, names(map), v2)
    txt <- lapply(names(map), function(p) {
      meta <- map[[p]]
      # an entry as it was read keeps its bytes, understood or not
      if (!is.null(kept[[p]]) && inherits(meta, "zarr_v2_pending")) return(kept[[p]])
      meta <- consolidated_meta(meta)
      if (!is.null(kept[[p]]) && is.list(meta) && !inherits(meta, "condition") && !isTRUE(attr(meta, "zarr_broken")))
        return(kept[[p]])
      consolidated_entry(p, meta, v2)
    })
    names(txt) <- names(map)
    root$consolidated_state(text = txt)
    return(txt)
  }
  st$text
}

# The consolidated map of a hierarchy as it was opened: the text slot holds
# the document it was read from until the first change needs the entries.
attach_consolidated <- function(root, store, meta) {
  map <- read_consolidated(store, meta)
  src <- attr(map, "zarr_source")
  if (!is.null(src)) attr(map, "zarr_source") <- NULL
  root$consolidated_state(map = map,
                          text = if (!is.null(src$raw)) structure(src, class = "zarr_consolidated_source"))
}

# The entries of the document a hierarchy was opened from, node path ->
# their bytes as consolidated_entry() gives them, when that document still
# has one entry per node of `paths` (else NULL: every entry is formatted).
consolidated_kept_entries <- function(src, paths, v2) {
  if (!inherits(src, "zarr_consolidated_source")) return(NULL)
  sp <- tryCatch(json_member_spans(src$raw, if (v2) "metadata" else c("consolidated_metadata", "metadata")),
                 error = function(e) NULL)
  if (is.null(sp) || anyDuplicated(sp$names)) return(NULL)
  doc <- if (v2) sub("/?[.](zarray|zgroup|zattrs)$", "", sp$names) else sp$names
  ok <- nzchar(doc) & (!v2 | grepl("[.](zarray|zgroup|zattrs)$", sp$names))
  if (!all(paths %in% doc[ok]) || (!v2 && length(paths) != sum(ok))) return(NULL)
  comma <- charToRaw(",")
  bytes <- lapply(sp$bytes[ok], function(x) c(comma, x))
  if (!v2) return(stats::setNames(bytes, doc[ok]))
  names(bytes) <- sub("^.*/", "", sp$names[ok]) # v2: by document, as consolidated_entry() keeps them
  split(bytes, factor(doc[ok], levels = unique(doc[ok])))
}

# The bytes of node `p`'s entry: v3 one member, v2 a list of one per
# document (.zarray or .zgroup, .zattrs), so that of a node whose attributes
# changed, the other document keeps the bytes it had (`old`, for the
# metadata `old_meta`).
consolidated_entry <- function(p, meta, v2, old = NULL, old_meta = NULL) {
  members <- consolidated_members(p, meta, v2)
  if (!v2) return(consolidated_bytes(members))
  out <- lapply(members, consolidated_bytes)
  if (is.list(old) && length(out)) {
    was <- consolidated_members(p, old_meta, v2)
    for (k in intersect(names(out), names(old)))
      if (identical(unname(was[k]), unname(members[k]))) out[[k]] <- old[[k]]
  }
  out
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
    # the first entry's comma becomes the object's "{" (in place: no copy)
    end <- if (length(body)) "\n    }" else "}"
    if (length(body)) body[1L] <- charToRaw("{") else body <- charToRaw("{")
    store$set("zarr.json", c(charToRaw(substr(doc, 1L, at - 1L)), body,
                             charToRaw(paste0(end, substring(doc, at + attr(at, "match.length"))))))
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
        entry <- consolidated_entry(p, meta, consolidated_is_v2(root), old = txt[[p]],
                                    old_meta = consolidated_meta(map[[p]]))
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
