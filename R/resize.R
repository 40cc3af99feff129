# Structural changes of an array (zarr_array$resize(), $append(),
# $promote()): the chunk work behind them, and the journal that makes each
# one a single step for readers.
#
# Before anything changes, a journal (<array prefix>__zarr_journal.json)
# records the new metadata and the chunk keys to move and erase. Then:
# - chunks that move are copied to keys the old state never reads: their new
#   keys when no old key is among them or in their way (promote), else
#   staging keys (<prefix>__zarr_stage.<n>); values of an append are written
#   past the old edge. Nothing the old state reads changes.
# - the commit: the new metadata document (one atomic write). When chunks
#   were staged, the document carries a marker (pending_field, with
#   "must_understand": true) until they are at their new keys: this package
#   finishes the change when it opens such an array (or refuses to read it
#   from a read-only store), and other readers that follow the Zarr v3
#   specification refuse it.
# - after the commit: old keys erased, staged chunks copied to their new keys,
#   chunks past the new edges erased or cleared, the clean metadata written,
#   the staging keys and the journal erased.
# Whether a journal found was committed is read from the metadata: marked,
# or (nothing staged) the new shape. An uncommitted journal costs readers
# nothing (what it left is never read); the next structural change of the
# array, a failure in the same session, or opening a marked array, finishes
# it (committed) or undoes it. Every step can be repeated.

pending_field <- "zarr_r_pending_move"

journal_key <- function(prefix) paste0(prefix, "__zarr_journal.json")

# Stores this package can write keep journals; a web server or a reference
# store is never written, so it is not asked for one.
journal_store <- function(store) !inherits(store, c("zarr_httpstore", "zarr_refstore"))

store_erase_keys <- function(store, keys) {
  if (length(keys)) .Call(ffi_store_erase, store$io_spec(), as.character(keys))
  invisible()
}

store_copy_keys <- function(store, from, to) {
  if (length(from)) .Call(ffi_store_copy, store$io_spec(), store$io_spec(), from, to, zarr_num_threads())
  invisible()
}

# The journal: key lists can be long, so it is written by jsonlite (the
# new metadata inside it as the exact text of its document).
write_journal <- function(store, key, j) {
  store$set(key, charToRaw(enc2utf8(as.character(jsonlite::toJSON(j, auto_unbox = TRUE, digits = NA)))))
}

# The journal found in a store is store content, untrusted: it is acted on
# only when well formed and every key it names is one its change would use:
# chunk keys of this array (its key encoding, below its prefix) and the
# staging keys structural_change() makes; and when the store itself accepts
# each for erasing or writing (keys that would leave it through a symbolic
# link are refused: src/store_local.c). Else a warning (class
# zarr_warning_journal) and NULL: nothing it names is touched.
read_journal <- function(arr, priv, raw, key) {
  refuse <- function(why) {
    zarr_warn("journal", sprintf("the journal '%s' of array '%s' was not acted on: %s",
                                 key, arr$path, why))
    NULL
  }
  # its parse is bounded (zarr.max_decoded_bytes) before it is made
  j <- tryCatch({
    json_check_budget(raw, "the journal", key = key)
    json_parse(raw, "journal", key = key)
  }, zarr_error = function(e) e)
  if (inherits(j, "error")) return(refuse(conditionMessage(j)))
  if (!is.list(j) || is.null(names(j)) || !identical(j[["format"]], 1L) ||
      !(is.character(j[["operation"]]) && length(j[["operation"]]) == 1L &&
        j[["operation"]] %in% c("resize", "append", "promote")) ||
      !is.character(j[["metadata"]]) || length(j[["metadata"]]) != 1L || is.na(j[["metadata"]]))
    return(refuse("it is not a journal of this package"))
  # each list field: scalars of one kind only (a parsed JSON array)
  field <- function(nm, type) {
    x <- j[[nm]]
    if (is.null(x)) return(type)
    if (!is.list(x) || !all(vapply(x, function(el) length(el) == 1L && !is.list(el), TRUE))) return(NULL)
    v <- unlist(x, use.names = FALSE)
    if (!length(v)) return(type)
    if (is.character(type)) { if (is.character(v) && !anyNA(v)) v }
    else if (is.numeric(v) && all(is.finite(v)) && all(v >= 0 & v == trunc(v))) as.numeric(v)
  }
  f <- list(from = character(), to = character(), staging = character(), erase = character(),
            old_shape = numeric(), new_shape = numeric(), had = numeric(), clip = numeric(), undo_clip = numeric())
  for (nm in names(f)) {
    v <- field(nm, f[[nm]])
    if (is.null(v)) return(refuse(sprintf("its field '%s' is malformed", nm)))
    f[[nm]] <- v
  }
  if (!is.null(j[["trim"]]) && !(is.logical(j[["trim"]]) && length(j[["trim"]]) == 1L && !is.na(j[["trim"]])))
    return(refuse("its field 'trim' is malformed"))
  meta <- tryCatch({
    m <- node_metadata(json_parse(j[["metadata"]], "journal", array = arr$path))
    parse_array_metadata(m, arr$path)
    m
  }, zarr_error = function(e) e)
  if (inherits(meta, "error")) return(refuse(paste("its metadata cannot be used:", conditionMessage(meta))))
  nd_new <- length(f$new_shape)
  nd <- min(length(f$old_shape), nd_new)
  if (!nd_new || abs(length(f$old_shape) - nd_new) > 1L ||
      !identical(f$new_shape, check_shape(meta[["shape"]], "shape")) ||
      length(f$from) != length(f$to) || !length(f$had) %in% c(0L, nd_new) ||
      !all(c(f$clip, f$undo_clip) %in% seq_len(nd)))
    return(refuse("its shapes, dimensions or key lists do not agree"))
  prefix <- arr$prefix
  if (length(f$staging) && !identical(f$staging, paste0(prefix, "__zarr_stage.", seq_along(f$from))))
    return(refuse("it names staging keys this package does not use"))
  # chunk keys of this array, in its key encoding, of any number of dimensions
  enc <- priv$.grid$chunk_encoding
  if (is.null(enc)) return(refuse("the array's chunk keys are not known"))
  sep <- if (identical(enc[["separator"]], "/")) "/" else "\\."
  pattern <- if (identical(enc[["name"]], "v2")) sprintf("^[0-9]+(%s[0-9]+)*$", sep) else sprintf("^c(%s[0-9]+)*$", sep)
  keys <- c(f$from, f$to, f$erase)
  rel <- substring(keys, nchar(prefix) + 1L)
  bad <- !startsWith(keys, prefix) | !grepl(pattern, rel)
  if (any(bad)) return(refuse(sprintf("its key '%s' is not a chunk key of this array", keys[which(bad)[1L]])))
  # and the store's own word on each, before anything is changed
  ok <- tryCatch({
    .Call(ffi_store_check_keys, priv$.store$io_spec(), c(keys, f$staging, key), TRUE)
    TRUE
  }, zarr_error = function(e) conditionMessage(e))
  if (!isTRUE(ok)) return(refuse(ok))
  j[names(f)] <- f
  j[["trim"]] <- isTRUE(j[["trim"]])
  j
}

# A character or numeric vector from a parsed JSON array (NULL: empty).
json_vec <- function(x, type = character()) {
  if (is.null(x) || !length(x)) return(type)
  v <- unlist(x, use.names = FALSE)
  if (is.character(type)) as.character(v) else as.numeric(v)
}

# Apply a structural change. meta: the new metadata; from/to: chunks that
# move; erase: old keys to erase once committed (never one of `to`);
# direct: `to` keys are never read in the old state, so chunks are copied to
# them at once; clip/had: the dimensions along which the chunks cut by the
# new edge must be cleared after the commit, and how far the old data reach
# (new coordinates); undo_clip: the same before the commit, for undoing
# (append); before_commit: run with the new metadata in place in this
# object only (append writes its values).
structural_change <- function(arr, priv, operation, meta, from = character(), to = character(),
                              erase = character(), direct = FALSE, trim = FALSE, clip = integer(),
                              had = NULL, undo_clip = integer(), before_commit = NULL) {
  store <- priv$.store
  prefix <- arr$prefix
  moving <- from != to
  from <- from[moving]
  to <- to[moving]
  staged <- length(from) > 0L && !direct
  new_shape <- check_shape(meta[["shape"]], "shape")
  j <- list(format = 1L, operation = operation, old_shape = I(as.numeric(priv$.shape)), new_shape = I(new_shape),
            metadata = json_write(json_prepare_metadata(meta), pretty = FALSE),
            from = I(from), to = I(to),
            staging = I(if (staged) paste0(prefix, "__zarr_stage.", seq_along(from)) else character()),
            erase = I(setdiff(erase, to)), trim = isTRUE(trim),
            clip = I(as.integer(clip)), had = I(as.numeric(had %||% new_shape)), undo_clip = I(as.integer(undo_clip)))
  key <- journal_key(prefix)
  old_meta <- priv$.metadata
  write_journal(store, key, j)
  done <- FALSE
  on.exit(if (!done) structural_failed(arr, priv, old_meta))
  store_copy_keys(store, from, if (staged) json_vec(j[["staging"]]) else to)
  if (!is.null(before_commit)) {
    priv$.metadata <- meta
    priv$metadata_changed()
    before_commit()
  }
  if (staged) {
    priv$.metadata <- meta
    priv$.metadata[[pending_field]] <- list(must_understand = TRUE, journal = "__zarr_journal.json")
    priv$metadata_changed()
    priv$write_metadata(FALSE)
  }
  finish_structure(arr, priv, j)
  done <- TRUE
  invisible()
}

# After a failure (an error or an interrupt) in this session: finish or undo
# the change now, as a later opening would; if that fails too, this object
# refuses to be used until the array is opened again.
structural_failed <- function(arr, priv, old_meta) {
  priv$.metadata <- old_meta
  fail <- function(e) {
    priv$.problem <- tryCatch(zarr_abort("interrupted", sprintf(
      "a resize, append or promote was interrupted and could not be completed (%s); open the store again to finish it",
      conditionMessage(e)), array = arr$path), zarr_error = function(cond) cond)
  }
  tryCatch({
    priv$metadata_changed()
    recover_structure(arr, priv)
  }, error = fail, interrupt = fail)
}

# A structural change left unfinished by an interrupted call: finished when
# committed, else undone. Called before each structural change, after a
# failure, and when an array whose metadata carries the pending marker is
# opened: a read-only store is then not changed, and the array refuses to be
# read until a writable opening finishes the change.
recover_structure <- function(arr, priv) {
  store <- priv$.store
  if (!journal_store(store)) return(invisible())
  key <- journal_key(arr$prefix)
  marked <- !is.null(priv$.metadata[[pending_field]])
  if (marked && store$read_only)
    zarr_abort("interrupted", "an interrupted resize or promote of this array left its chunks half moved; open the store writable to finish it",
               array = arr$path)
  raw <- store$get(key)
  if (is.null(raw)) {
    if (marked) zarr_abort("interrupted", sprintf("the array's metadata says a change is under way, but its journal '%s' is missing", key),
                           array = arr$path)
    return(invisible())
  }
  j <- read_journal(arr, priv, raw, key)
  if (is.null(j)) { # refused (a warning said why): nothing it names is touched
    if (marked) zarr_abort("interrupted", sprintf(
      "the array's metadata says a change is under way, but its journal '%s' cannot be trusted", key), array = arr$path)
    return(invisible())
  }
  staged <- length(j[["staging"]]) > 0L
  cur <- store$get_metadata(arr$prefix)
  cur_shape <- if (is.list(cur)) json_vec(cur[["shape"]], numeric())
  new_shape <- json_vec(j[["new_shape"]], numeric())
  # committed: the metadata is marked (staged moves) or has the new shape
  # (the shape changes whenever nothing is staged); a staged change whose
  # metadata is not marked is undone, which after its end erases only the
  # staging keys
  committed <- marked || (is.list(cur) && !is.null(cur[[pending_field]])) ||
    (!staged && identical(cur_shape, new_shape) && !identical(new_shape, json_vec(j[["old_shape"]], numeric())))
  if (!is.list(cur)) # the array was deleted since: only what the change added goes
    store_erase_keys(store, c(json_vec(j[["staging"]]), if (!staged) json_vec(j[["to"]]), key))
  else if (committed) finish_structure(arr, priv, j)
  else undo_structure(arr, priv, j)
  invisible()
}

finish_structure <- function(arr, priv, j) {
  store <- priv$.store
  priv$.metadata <- node_metadata(json_parse(j[["metadata"]], "journal", array = arr$path))
  priv$metadata_changed()
  staging <- json_vec(j[["staging"]])
  clip <- function() clear_past_edge(arr, json_vec(j[["clip"]], numeric()), json_vec(j[["had"]], numeric()),
                                     trim = isTRUE(j[["trim"]]), limit = json_vec(j[["old_shape"]], numeric()))
  if (length(staging)) {
    # everything but erasing the staging keys before the clean metadata
    # (the end of the marked state): undoing after that erases only them
    store_erase_keys(store, json_vec(j[["erase"]]))
    store_copy_keys(store, staging, json_vec(j[["to"]]))
    clip()
    priv$write_metadata(FALSE)
  } else {
    priv$write_metadata(FALSE)
    store_erase_keys(store, json_vec(j[["erase"]]))
    clip()
  }
  store_erase_keys(store, c(staging, journal_key(arr$prefix)))
}

undo_structure <- function(arr, priv, j) {
  store <- priv$.store
  staging <- json_vec(j[["staging"]])
  # chunks copied straight to their new keys are not read in the old state
  store_erase_keys(store, if (length(staging)) staging else json_vec(j[["to"]]))
  undo <- json_vec(j[["undo_clip"]], numeric())
  if (length(undo))
    clear_past_edge(arr, undo, arr$shape, trim = TRUE, limit = json_vec(j[["new_shape"]], numeric()))
  store_erase_keys(store, journal_key(arr$prefix))
}

# The lengths of the chunks along dimension d that hold elements.
grid_edges <- function(grid, d) {
  if (inherits(grid, "chunk_grid_rectilinear")) return(grid$chunk_edges[[d]])
  rep(grid$chunk_shape[d], grid$chunk_grid[d])
}

# Leave nothing past the array's edges: with `trim`, erase the stored chunks
# outside its grid; along the dimensions `dims`, clear the elements past the edge in
# the chunks it cuts (reading their kept part and writing it back as whole
# edge chunks stores the fill value there), so that growing the array later
# shows fill values, whatever the data type. had: how far data may reach
# (an edge chunk starting past it holds none); limit: a shape whose grid
# bounds where chunks may be, for stores that cannot list.
clear_past_edge <- function(arr, dims, had, trim = FALSE, limit = NULL) {
  grid <- arr$chunking
  shape <- arr$shape
  if (trim) {
    counts <- vapply(seq_along(shape), function(d) length(grid_edges(grid, d)), 0)
    limit <- if (length(limit) == length(shape)) pmax(limit, shape) else shape
    st <- stored_chunks(arr, pmax(counts, ceiling(limit / grid$chunk_shape)))
    if (length(st$keys)) {
      out <- rowSums(st$coords >= rep(counts, each = nrow(st$coords))) > 0
      store_erase_keys(arr$store, st$keys[out])
    }
  }
  if (any(shape == 0) || any(had <= 0)) return(invisible())
  for (d in dims) {
    e <- grid_edges(grid, d)
    start <- sum(e[-length(e)])
    if (sum(e) <= shape[d] || had[d] <= start) next
    sel <- lapply(seq_along(shape), function(k) if (k == d) seq(start + 1, shape[d]) else seq_len(shape[k]))
    arr$write(arr$read(sel, fill_as_na = FALSE, decode = FALSE), sel, encode = FALSE)
  }
  invisible()
}

# The stored chunks of an array: their keys and 0-based grid coordinates
# (one row per chunk). Listed from the store when it can list keys, else
# generated from the grid `limit` (the chunks that may exist).
stored_chunks <- function(arr, limit = NULL) {
  grid <- arr$chunking
  nd <- length(arr$shape)
  store <- arr$store
  if (isTRUE(tryCatch(store$supports_listing, error = function(e) FALSE))) {
    st <- stored_chunk_keys(store, arr$prefix, grid$chunk_encoding, nd)
    if (length(st$keys)) { # keys that are not this array's canonical chunk keys are left alone
      same <- grid$chunk_keys(st$coords) == st$keys
      st <- list(keys = st$keys[same], coords = st$coords[same, , drop = FALSE])
    }
    return(st)
  }
  limit <- limit %||% grid$chunk_grid
  if (prod(limit) > 1e6)
    zarr_abort("unsupported", "the store cannot list its keys, and the array has too many chunks to try each",
               array = arr$path)
  coords <- if (prod(limit) == 0) matrix(0, 0, nd) else
    as.matrix(expand.grid(lapply(limit, function(n) seq_len(n) - 1), KEEP.OUT.ATTRS = FALSE))
  keys <- grid$chunk_keys(coords)
  have <- vapply(keys, function(k) isTRUE(store$exists(k)), TRUE)
  list(keys = keys[have], coords = coords[have, , drop = FALSE])
}

# The metadata of a rectilinear grid grown to `shape`: a dimension whose
# listed chunk lengths no longer reach its extent gets more chunks of its
# last listed length.
rectilinear_grow <- function(m, shape) {
  cs <- m[["chunk_grid"]][["configuration"]][["chunk_shapes"]]
  if (!is.list(cs)) cs <- as.list(cs)
  for (d in seq_along(shape)) {
    x <- cs[[d]]
    if (!is.list(x) && length(x) == 1L) next # regular along d
    x <- as.list(x)
    runs <- lapply(x, function(el) as.numeric(unlist(el)))
    total <- sum(vapply(runs, function(r) if (length(r) == 2L) r[1L] * r[2L] else r[1L], 0))
    if (total >= shape[d]) next
    last <- runs[[length(runs)]][1L]
    n <- ceiling((shape[d] - total) / last)
    cs[[d]] <- c(x, list(if (n > 1) json_array(c(last, n)) else last))
  }
  m[["chunk_grid"]][["configuration"]][["chunk_shapes"]] <- cs
  m
}

# zarr_array$resize() once its arguments are checked: shift, the whole
# chunks added (positive) or removed (negative) at the start of each
# dimension.
resize_array <- function(arr, priv, new_shape, shift) {
  old <- priv$.shape
  if (identical(new_shape, as.numeric(old)) && all(shift == 0)) return(invisible())
  grid <- priv$.grid
  rect <- inherits(grid, "chunk_grid_rectilinear")
  if (rect && any(shift != 0))
    zarr_abort("unsupported", "the start of an array with a rectilinear chunk grid cannot move (low)", array = arr$path)
  m <- priv$.metadata
  m[["shape"]] <- json_array(new_shape)
  if (rect) m <- rectilinear_grow(m, new_shape)
  p <- parse_array_metadata(m, arr$path) # within the engine's limits, before any chunk changes
  chunk <- grid$chunk_shape
  reach <- old + shift * chunk # where the old data end, in new coordinates
  if (all(shift == 0) && all(new_shape >= old)) { # nothing is past the new edges: one write
    priv$.metadata <- m
    priv$metadata_changed()
    priv$write_metadata(FALSE)
    return(invisible())
  }
  had <- pmin(new_shape, reach)
  clip <- if (all(had > 0)) which(new_shape < reach) else integer()
  from <- to <- erase <- character()
  trim <- all(shift == 0)
  if (!trim) {
    st <- stored_chunks(arr)
    new_grid <- if (is.null(p[["chunk_edges"]])) ceiling(new_shape / chunk) else lengths(p[["chunk_edges"]])
    dest <- st$coords + rep(shift, each = nrow(st$coords))
    inside <- rowSums(dest < 0 | dest >= rep(new_grid, each = nrow(dest))) == 0
    from <- st$keys[inside]
    to <- grid$chunk_keys(dest[inside, , drop = FALSE])
    erase <- setdiff(st$keys, to)
  }
  structural_change(arr, priv, "resize", m, from, to, erase, trim = trim, clip = clip, had = had)
}

# zarr_array$append() once its arguments are checked: the values are
# written past the old edge (never read in the old state), then the new
# shape is committed.
append_array <- function(arr, priv, x, along, new_shape) {
  old <- priv$.shape
  m <- priv$.metadata
  m[["shape"]] <- json_array(new_shape)
  if (inherits(priv$.grid, "chunk_grid_rectilinear")) m <- rectilinear_grow(m, new_shape)
  parse_array_metadata(m, arr$path)
  sel <- vector("list", length(new_shape))
  sel[[along]] <- seq(old[along] + 1, new_shape[along])
  structural_change(arr, priv, "append", m, undo_clip = along,
                    before_commit = function() arr$write(x, sel))
}

# Rename stored values `from[i]` to `to[i]` of an array: the chunk moves of a
# structural change (see structural_change()), for callers that change no
# metadata of their own.
move_chunks <- function(arr, priv, meta, from, to, operation) {
  moving <- from != to
  # copied straight to their new keys when none of those is an old key or
  # in the way of one (a file where a directory must go, with "/" keys)
  n <- nchar(arr$prefix)
  with_ancestors <- function(k) {
    k <- substring(k, n + 1L)
    out <- k
    while (length(k <- k[grepl("/", k, fixed = TRUE)])) {
      k <- sub("/[^/]*$", "", k)
      out <- c(out, k)
    }
    out
  }
  direct <- !length(intersect(with_ancestors(to[moving]), with_ancestors(from)))
  structural_change(arr, priv, operation, meta, from, to, erase = setdiff(from, to), direct = direct)
}
