#' Icechunk repository store
#'
#' A read-only store over one snapshot of an
#' [Icechunk](https://icechunk.io) repository: a versioned, transactional
#' layout of Zarr v3 data with branches, tags and a history of commits.
#' Repositories of spec version 1 (Icechunk 1.x: `refs/branch.<name>/ref.json`
#' files) and 2 (Icechunk 2.x: a `repo` object) are read. [open_zarr()]
#' makes one when a location holds a repository, or when it is given a
#' `branch`, `tag` or `snapshot`. On a web server, a location without a
#' `zarr.json` is asked for `.zmetadata` and `repo` in one round trip, so a
#' spec 2 repository opens in four requests (with its snapshot); objects read
#' to recognise a repository are not read again.
#'
#' The snapshot gives the groups and arrays and their metadata; its chunk
#' manifests say where each chunk is: inline in the manifest, an object
#' `chunks/<id>` of the repository ("native"), or a byte range of a file
#' elsewhere ("virtual": local paths, `file://`, `http(s)://`, `s3://` and
#' `gs://` URLs). The store is a [zarr_refstore] built from the manifests,
#' so reads of nearby ranges are merged and run concurrently as for
#' Kerchunk references. A virtual chunk whose file was modified after the
#' time its reference records (the file's modification time, or the
#' `Last-Modified` its server gives), or whose reference records an ETag
#' that its server or bucket no longer gives, is not read: the read fails
#' with a condition of class `zarr_error_icechunk_stale`. Each file is asked
#' once per store (a request for its first bytes). Local files have no
#' ETag: chunks recording one are read unchecked.
#'
#' Repository objects are parsed within the budget of the option
#' `zarr.max_decoded_bytes` (see [zarr-options]): an object whose payload,
#' or what is made of it, would take more memory, or whose flatbuffer lists
#' more entries than its bytes can hold (entries sharing one table), fails
#' with a `zarr_error_icechunk` naming it before the memory is taken; so do
#' an array's chunk references over all its manifests. A snapshot
#' without nodes (a repository's first, "Repository initialized") opens as
#' an empty root group.
#'
#' A malformed, truncated or missing repository object (wrong magic bytes,
#' an unknown spec version, a payload that does not decompress, flatbuffer
#' offsets out of bounds, a missing snapshot or manifest) is an error of
#' class `zarr_error_icechunk` naming the object; an unknown branch, tag or
#' snapshot is a `zarr_error_not_found`.
#'
#' An array's manifests are read when its chunks are first needed (a read,
#' or listing or asking for its chunk keys), not when the snapshot is opened:
#' opening it, listing its groups and arrays and reading their metadata and
#' attributes read the snapshot only. A manifest that cannot be read fails
#' the reads of its arrays' chunks only.
#'
#' This store is read-only (every writer raises `zarr_error_read_only`):
#' repositories are written through sessions, see [zarr_icechunk_create()].
#' Not supported: the repository's
#' configuration (virtual chunk containers and their credentials: every
#' virtual location is read, `s3://` ones with the credentials found in the
#' environment).
#'
#' @seealso [icechunk_history()], [open_zarr()], [zarr_refstore], [zarr_icechunk_create()] to write
#' @examples
#' # the package's example repository: the volcano store, committed once
#' repo <- system.file("extdata", "volcano.icechunk", package = "zarr")
#' z <- open_zarr(repo) # the newest snapshot of branch "main"
#' z
#' z[["/elevation"]][1:3, 1:4]
#' st <- z$store
#' st
#' st$branches()
#' st$history()
#' # a snapshot by its id: the first one of a repository holds no nodes yet
#' first <- open_zarr(repo, snapshot = st$history()$snapshot_id[2])
#' first$root$children
#' # the store object itself
#' zarr_icechunkstore$new(repo, branch = "main")$snapshot_id
#' if (interactive()) {
#'   # a repository in a bucket (the credentials as for zarr_s3store)
#'   z <- open_zarr("s3://my-bucket/climate.icechunk", branch = "main")
#'   print(z$store$history())
#' }
#' @export
zarr_icechunkstore <- R6::R6Class("zarr_icechunkstore",
  inherit = zarr_refstore,
  cloneable = FALSE,
  public = list(
    #' @description How another R process opens this store again.
    #' @return A list with `kind`, `location` and `options`.
    reopen_spec = function() {
      if (!is.character(private$.loc)) return(NULL)
      list(kind = "icechunk", location = private$.loc, options = list(snapshot = private$.snap))
    },

    #' @description Open a snapshot of an Icechunk repository.
    #' @param location The repository: a local path, or a `file://`,
    #'   `http(s)://`, `s3://`, `gs://` or `az://` URL (or a [zarr_store]
    #'   holding it).
    #' @param branch,tag,snapshot Which snapshot: the head of a branch, a tag,
    #'   or a snapshot id (20 characters of Crockford base 32, as Icechunk
    #'   prints it). At most one; the default is the branch "main".
    #' @param ... Passed to the store of the repository's storage (for S3:
    #'   region, credentials, endpoint; see [zarr_s3store]).
    #' @return An instance of this class.
    initialize = function(location, branch = NULL, tag = NULL, snapshot = NULL, ...) {
      given <- !vapply(list(branch, tag, snapshot), is.null, TRUE)
      if (sum(given) > 1L) zarr_abort("argument", "give at most one of branch, tag and snapshot")
      for (a in list(branch, tag, snapshot))
        if (!is.null(a) && (!is.character(a) || length(a) != 1L || is.na(a) || !nzchar(a)))
          zarr_abort("argument", "branch, tag and snapshot must be single strings")
      if (inherits(location, "zarr_store")) {
        private$.storage <- location
        private$.loc <- location$reopen_spec()$location %||% location$root
      } else {
        private$.storage <- ic_storage(location, ...)
        private$.loc <- location
      }
      private$.info <- ic_repo_info(private$.storage)
      if (!given[2L] && !given[3L]) branch <- branch %||% "main"
      private$.branch <- branch
      private$.tag <- tag
      id <- if (!is.null(snapshot)) ic_normalise_id(snapshot)
            else if (!is.null(tag)) private$ref("tag", tag)
            else private$ref("branch", branch)
      private$.snap <- id
      if (!is.null(snapshot) && !ic_has_snapshot(private$.storage, private$.info, id))
        zarr_abort("not_found", sprintf("the repository has no snapshot '%s'", snapshot))
      snap <- ic_read_object(private$.storage, paste0("snapshots/", id), "snapshot")
      ic_check_nodes(snap$nodes, paste0("snapshots/", id))
      private$.nodes <- snap$nodes
      private$.prefixes <- ic_node_prefix(snap$nodes$path)
      private$.parts <- list(ic_node_entries(snap$nodes))
      # arrays whose chunks are in manifests not read yet (see load())
      private$.pending <- which(snap$nodes$is_array & lengths(lapply(snap$nodes$manifests, `[[`, "id")) > 0L)
      private$.manifests <- new.env(parent = emptyenv())
      private$.format <- "icechunk"
      shown <- redact(if (is.character(private$.loc)) private$.loc else "(store)")
      private$.location <- shown
      private$.own <- list(prefix = "icechunk-repository:", store = private$.storage, shown = shown)
      private$.init_entries(private$.parts[[1L]], getwd(), own = private$.own)
    },

    #' @description Read the manifests of the array at a prefix, if not read
    #'   yet (the engine calls this before it reads the array's chunks).
    #' @param prefix The array's prefix.
    #' @return `NULL`, invisibly.
    prepare_chunks = function(prefix) {
      if (length(private$.pending)) private$load(private$.pending[private$.prefixes[private$.pending] == prefix])
      invisible(NULL)
    },

    #' @description Whether a key exists (an array's chunk keys are known
    #'   once its manifests are read, which this does).
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) {
      private$load_for(key, inside = TRUE)
      super$exists(key)
    },

    #' @description Retrieve a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range See [zarr_store].
    #' @return A raw vector, or `NULL`.
    get = function(key, prototype = NULL, byte_range = NULL) {
      private$load_for(key, inside = TRUE)
      super$get(key, prototype, byte_range)
    },

    #' @description Size of a value in bytes.
    #' @param key The key.
    #' @return The size, or `NA`.
    getsize = function(key) {
      private$load_for(key, inside = TRUE)
      super$getsize(key)
    },

    #' @description The names directly below a prefix (below an array: its
    #'   chunk keys, read from its manifests).
    #' @param prefix The prefix.
    #' @return A character vector.
    list_dir = function(prefix) {
      private$load_for(prefix, inside = TRUE)
      super$list_dir(prefix)
    },

    #' @description All keys below a prefix (the manifests of the arrays
    #'   there are read).
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) {
      private$load_for(prefix, inside = TRUE, below = TRUE)
      super$list_prefix(prefix)
    },

    #' @description Requests made by the C engine and bytes they returned
    #'   since the store was opened (see [zarr_store]).
    #' @return A named numeric vector.
    io_stats = function() {
      s <- super$io_stats()
      s[1:4] <- s[1:4] + private$.carried
      s
    },

    #' @description Print a summary of the store.
    print = function() {
      cat("<Zarr Icechunk store> (read-only)\n")
      cat("Repository:", self$root, sprintf("(spec %d)", private$.info$spec_version), "\n")
      at <- if (!is.null(private$.tag)) sprintf("tag '%s'", private$.tag)
            else if (!is.null(private$.branch)) sprintf("branch '%s'", private$.branch) else "snapshot"
      cat("Snapshot:", private$.snap, sprintf("(%s)", at), "\n")
      invisible(self)
    },

    #' @description The history of a branch, or (by default) of the snapshot
    #'   opened: its snapshots, newest first.
    #' @param branch A branch name, or `NULL`.
    #' @return A data.frame with columns `snapshot_id`, `time` (POSIXct, UTC)
    #'   and `message`.
    history = function(branch = NULL) {
      id <- if (is.null(branch)) private$.snap else private$ref("branch", branch)
      ic_history(private$.storage, private$.info, id)
    },

    #' @description The names of the repository's branches.
    #' @return A sorted character vector.
    branches = function() ic_ref_names(private$.storage, private$.info, "branch"),

    #' @description The names of the repository's tags.
    #' @return A sorted character vector.
    tags = function() ic_ref_names(private$.storage, private$.info, "tag")
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Icechunk store",
    #' @field uri (read-only) The repository's location (secrets shown as `***`).
    uri = function(value) private$.location,
    #' @field snapshot_id (read-only) The id of the snapshot opened.
    snapshot_id = function(value) private$.snap,
    #' @field spec_version (read-only) The repository's spec version (1 or 2).
    spec_version = function(value) private$.info$spec_version
  ),
  private = list(
    .storage = NULL, .loc = NULL, .info = NULL, .branch = NULL, .tag = NULL, .snap = NULL,
    .nodes = NULL, .prefixes = character(), .parts = list(), .pending = integer(), .manifests = NULL, .own = NULL,
    .bad_prefix = character(), .bad_msg = character(), .carried = c(0, 0, 0, 0),
    check_writable = function() zarr_abort("read_only", "Icechunk repositories are read-only here"),
    ref = function(kind, name) ic_resolve_ref(private$.storage, private$.info, kind, name),
    # Load the arrays (of .pending) whose chunk keys are at or below `key`
    # (inside: or that hold it; below: or that lie below it).
    load_for = function(key, inside = FALSE, below = FALSE) {
      if (!length(private$.pending) || !is.character(key) || length(key) != 1L || is.na(key)) return(invisible())
      pre <- private$.prefixes[private$.pending]
      hit <- (inside & startsWith(key, pre) & key != paste0(pre, "zarr.json")) | (below & startsWith(pre, key))
      if (any(hit)) private$load(private$.pending[hit])
      invisible()
    },
    # Read the manifests of nodes `i` and rebuild the reference map with
    # their chunks (the sub-stores, and the counts of requests, carry over).
    load = function(i) {
      if (!length(i)) return(invisible())
      private$.pending <- setdiff(private$.pending, i)
      for (k in i) {
        got <- ic_array_entries(private$.storage, private$.nodes, k, private$.manifests)
        private$.parts <- c(private$.parts, got$parts)
        private$.bad_prefix <- c(private$.bad_prefix, got$bad_prefix)
        private$.bad_msg <- c(private$.bad_msg, got$bad_msg)
      }
      entries <- ref_bind_all(private$.parts)
      entries$bad_prefix <- private$.bad_prefix
      entries$bad_msg <- private$.bad_msg
      private$.carried <- private$.carried + .Call(ffi_store_stats, private$.io)[1:4]
      private$.build(entries, getwd(), private$.own)
      invisible()
    }
  )
)

#' History of an Icechunk repository branch
#'
#' The snapshots of a branch, newest first, following each snapshot's
#' parent back to the repository's first.
#'
#' @param location The repository (see [zarr_icechunkstore]).
#' @param branch The branch.
#' @param ... Passed to the store of the repository's storage.
#' @return A data.frame with columns `snapshot_id` (character), `time`
#'   (POSIXct, UTC) and `message`.
#' @seealso [zarr_icechunkstore]
#' @examples
#' repo <- system.file("extdata", "volcano.icechunk", package = "zarr")
#' h <- icechunk_history(repo)
#' h
#' # open the repository as it was at any of these snapshots
#' z <- open_zarr(repo, snapshot = h$snapshot_id[1])
#' z[["/elevation"]]$shape
#' @export
icechunk_history <- function(location, branch = "main", ...) {
  storage <- if (inherits(location, "zarr_store")) location else ic_storage(location, ...)
  info <- ic_repo_info(storage)
  ic_history(storage, info, ic_resolve_ref(storage, info, "branch", branch))
}

# ---- internals ------------------------------------------------------------------

# The store holding a repository's objects.
ic_storage <- function(location, ...) {
  if (!is.character(location) || length(location) != 1L || is.na(location) || !nzchar(location))
    zarr_abort("argument", "location must be a single path or URL")
  if (grepl("^gs://", location, ignore.case = TRUE)) return(zarr_httpstore$new(gcs_url(location)))
  if (grepl("^https?://", location, ignore.case = TRUE)) return(zarr_httpstore$new(location))
  if (is_s3_url(location) || is_azure_url(location)) return(store_for_location(location, read_only = TRUE, ...))
  p <- path.expand(sub("^file://", "", location))
  if (!dir.exists(p)) zarr_abort("not_found", sprintf("'%s' does not exist or is not a directory", location))
  if (!ic_is_repository_dir(p))
    zarr_abort("not_found", sprintf("'%s' is not an Icechunk repository (no 'repo' object, no main branch)", location))
  zarr_localstore$new(p, read_only = TRUE)
}

# What a store holding an Icechunk repository says of itself (see
# ic_repo_info()), or NULL when it holds none (spec 2: no `repo` object;
# spec 1: no main branch). A damaged `repo` object is an error.
ic_probe <- function(store) {
  raw <- ic_get(store, "repo")
  if (!is.null(raw)) return(.Call(ffi_icechunk_repo, raw, "repo", max_decoded_bytes()))
  main <- ic_get(store, "refs/branch.main/ref.json")
  if (!is.null(main)) list(spec_version = 1L, main_ref = main)
}

# The Icechunk store on `store`, whose ic_probe() gave `info`: its
# constructor takes that over instead of asking again.
ic_open_probed <- function(store, info) {
  ic_probed$store <- store
  ic_probed$info <- info
  on.exit(rm(list = c("store", "info"), envir = ic_probed))
  zarr_icechunkstore$new(store)
}
ic_probed <- new.env(parent = emptyenv())

# The same for a local folder, before a store is made for it.
ic_is_repository_dir <- function(root) {
  file.exists(file.path(root, "repo")) || file.exists(file.path(root, "refs", "branch.main", "ref.json"))
}

ic_get <- function(storage, key) {
  tryCatch(storage$get(key), zarr_error_not_found = function(e) NULL)
}

ic_read_object <- function(storage, key, what = c("snapshot", "manifest")) {
  what <- match.arg(what)
  raw <- ic_get(storage, key)
  if (is.null(raw)) zarr_abort("icechunk", sprintf("the %s object is missing from the repository", what), key = key)
  switch(what,
         snapshot = .Call(ffi_icechunk_snapshot, raw, key, max_decoded_bytes()),
         manifest = .Call(ffi_icechunk_manifest, raw, key, max_decoded_bytes()))
}

# What the repository says of itself: list(spec_version, branches, tags,
# snapshots) for spec 2; list(spec_version = 1, main_ref) for spec 1 (refs
# are files; main_ref: the main branch's, read on the way).
ic_repo_info <- function(storage) {
  if (identical(ic_probed$store, storage)) return(ic_probed$info)
  info <- ic_probe(storage)
  if (is.null(info))
    zarr_abort("not_found", sprintf("'%s' is not an Icechunk repository (no 'repo' object, no main branch)",
                                    redact(storage$root)))
  info
}

ic_has_snapshot <- function(storage, info, id) {
  if (info$spec_version >= 2L) return(id %in% info$snapshots$id)
  isTRUE(tryCatch(storage$exists(paste0("snapshots/", id)), zarr_error = function(e) FALSE))
}

ic_normalise_id <- function(id) {
  id <- chartr("ILO", "110", toupper(id))
  if (!grepl("^[0-9A-HJKMNP-TV-Z]{20}$", id)) zarr_abort("not_found", sprintf("'%s' is not a snapshot id", id))
  id
}

# The snapshot id a branch or tag points at.
ic_resolve_ref <- function(storage, info, kind, name) {
  if (info$spec_version >= 2L) {
    refs <- info[[if (kind == "tag") "tags" else "branches"]]
    i <- match(name, refs$name)
    if (is.na(i)) {
      known <- utils::head(encodeString(refs$name), 10L)
      zarr_abort("not_found", sprintf("the repository has no %s '%s' (%s: %s)", kind, name,
                                      if (kind == "tag") "tags" else "branches",
                                      if (length(known)) paste(known, collapse = ", ") else "none"))
    }
    return(info$snapshots$id[refs$snapshot[i]])
  }
  if (grepl("/", name, fixed = TRUE)) zarr_abort("not_found", sprintf("the repository has no %s '%s'", kind, name))
  key <- sprintf("refs/%s.%s/ref.json", kind, name)
  raw <- if (kind == "branch" && name == "main" && !is.null(info$main_ref)) info$main_ref else ic_get(storage, key)
  if (is.null(raw) || (kind == "tag" && !is.null(ic_get(storage, paste0(key, ".deleted")))))
    zarr_abort("not_found", sprintf("the repository has no %s '%s'", kind, name))
  json_check_budget(raw, sprintf("the %s '%s'", kind, name), key = key, class = "icechunk")
  doc <- tryCatch(json_parse(raw, key, key = key), zarr_error = function(e) NULL)
  id <- if (is.list(doc)) doc[["snapshot"]]
  if (!is.character(id) || length(id) != 1L || !grepl("^[0-9A-HJKMNP-TV-Z]{20}$", id))
    zarr_abort("icechunk", sprintf("the %s '%s' is not a valid reference", kind, name), key = key)
  id
}

ic_ref_names <- function(storage, info, kind) {
  if (info$spec_version >= 2L) return(sort(info[[if (kind == "tag") "tags" else "branches"]]$name))
  dirs <- storage$list_dir("refs/")
  pre <- paste0(kind, ".")
  names <- substring(dirs[startsWith(dirs, pre)], nchar(pre) + 1L)
  if (kind == "tag" && length(names)) {
    gone <- vapply(names, function(n) !is.null(ic_get(storage, sprintf("refs/tag.%s/ref.json.deleted", n))), TRUE)
    names <- names[!gone]
  }
  sort(unname(names))
}

# The ancestry of a snapshot, newest first.
ic_history <- function(storage, info, id) {
  if (info$spec_version >= 2L) {
    s <- info$snapshots
    i <- match(id, s$id)
    if (is.na(i)) zarr_abort("icechunk", sprintf("snapshot %s is not in the repository's list", id), key = "repo")
    # linear in the snapshots (a long history: no quadratic search or growth)
    seen <- logical(length(s$id))
    chain <- integer(length(s$id))
    k <- 0L
    while (!is.na(i)) {
      if (seen[i]) zarr_abort("icechunk", "the snapshots' parents form a cycle", key = "repo")
      seen[i] <- TRUE
      k <- k + 1L
      chain[k] <- i
      i <- s$parent[i]
    }
    chain <- chain[seq_len(k)]
    ids <- s$id[chain]
    time <- s$time[chain]
    msg <- s$message[chain]
  } else {
    ids <- character()
    time <- numeric()
    msg <- character()
    while (!is.na(id)) {
      if (id %in% ids) zarr_abort("icechunk", "the snapshots' parents form a cycle", key = paste0("snapshots/", id))
      sn <- ic_read_object(storage, paste0("snapshots/", id), "snapshot")
      ids <- c(ids, sn$id)
      time <- c(time, sn$time)
      msg <- c(msg, sn$message)
      id <- sn$parent
    }
  }
  data.frame(snapshot_id = ids, time = as.POSIXct(time, origin = "1970-01-01", tz = "UTC"), message = msg,
             stringsAsFactors = FALSE)
}

# The store prefix of each node of a snapshot ("" for the root).
ic_node_prefix <- function(path) {
  out <- paste0(sub("^/", "", path), rep_len("/", length(path))) # (paste0() of no path would give one)
  out[path == "/"] <- ""
  out
}

# Nodes are one each: one node id or path twice would take the chunks of a
# manifest once per copy, and one manifest twice for a node its chunks twice.
ic_check_nodes <- function(nodes, key) {
  dup <- function(x, what) {
    if (anyDuplicated(x)) zarr_abort("icechunk", sprintf("malformed snapshot: %s '%s' is listed twice", what,
                                                          x[anyDuplicated(x)]), key = key)
  }
  dup(nodes$node_id, "the node id")
  dup(nodes$path, "the node")
  for (i in which(nodes$is_array)) dup(nodes$manifests[[i]]$id, sprintf("for node '%s', the manifest", nodes$path[i]))
}

# A snapshot's nodes as reference entries (see ref_parse_doc()): every
# node's zarr.json inline. The chunks come from the manifests, array by
# array (ic_array_entries()). A snapshot without nodes (a repository's
# first, "Repository initialized") has no entries: an empty hierarchy.
ic_node_entries <- function(nodes) {
  prefix <- ic_node_prefix(nodes$path)
  list(key = paste0(prefix, rep_len("zarr.json", length(prefix))), kind = integer(length(prefix)), url = character(length(prefix)),
       offset = numeric(length(prefix)), length = numeric(length(prefix)),
       data = lapply(nodes$user_data, function(u) charToRaw(enc2utf8(u))))
}

# The chunk entries of array node `i` from its manifests (parsed ones kept in
# the environment `cache` by id, as several arrays share one): list(parts,
# bad_prefix, bad_msg). A manifest that cannot be read leaves the array's
# metadata readable; reading its chunks fails with the message.
ic_array_entries <- function(storage, nodes, i, cache) {
  prefix <- ic_node_prefix(nodes$path[i])
  m <- nodes$manifests[[i]]
  meta <- json_parse(charToRaw(enc2utf8(nodes$user_data[i])), "metadata", key = paste0(prefix, "zarr.json"))
  enc <- meta[["chunk_key_encoding"]]
  v2 <- identical(enc[["name"]], "v2")
  sep <- enc[["configuration"]][["separator"]] %||% if (v2) "." else "/"
  parts <- list()
  n <- 0
  for (j in seq_along(m$id)) {
    mid <- m$id[j]
    if (is.null(cache[[mid]]))
      cache[[mid]] <- tryCatch(ic_read_object(storage, paste0("manifests/", mid), "manifest"),
                               zarr_error_icechunk = function(e) e)
    if (inherits(cache[[mid]], "error"))
      return(list(parts = parts, bad_prefix = paste0(prefix, if (!v2) "c"), bad_msg = conditionMessage(cache[[mid]])))
    got <- ic_manifest_entries(cache[[mid]], nodes$node_id[i], prefix, sep, v2, m$from[j, ], m$to[j, ],
                               paste0("manifests/", mid))
    # each manifest is within the budget; an array's chunks over all of them too
    # (an entry of the reference map: its key, target and sizes, about 256 bytes)
    n <- n + length(got$key)
    if (n * 256 > max_decoded_bytes())
      return(list(parts = list(), bad_prefix = paste0(prefix, if (!v2) "c"),
                  bad_msg = sprintf(paste("the %.0f chunk references of array '%s' (manifests/%s and before) would take",
                                          "more than %.0f bytes of memory (the budget of options(zarr.max_decoded_bytes))"),
                                    n, nodes$path[i], mid, max_decoded_bytes())))
    parts[[length(parts) + 1L]] <- got
  }
  list(parts = parts, bad_prefix = character(), bad_msg = character())
}

# The entries of one array from one manifest, within the extents its
# snapshot gives that manifest.
ic_manifest_entries <- function(man, node_id, prefix, sep, v2, from, to, key) {
  a <- match(node_id, man$arrays$node_id)
  if (is.na(a) || man$arrays$count[a] == 0L) return(NULL)
  rows <- man$arrays$first[a] - 1L + seq_len(man$arrays$count[a])
  nd <- man$arrays$ndim[a]
  if (length(from) != nd)
    zarr_abort("icechunk", sprintf("the manifest's chunk indexes of node %s have %d dimensions, its extents %d",
                                   node_id, nd, length(from)), key = key)
  before <- seq_len(a - 1L)
  ci <- sum(man$arrays$count[before] * man$arrays$ndim[before])
  idx <- matrix(man$coords[ci + seq_len(length(rows) * nd)], ncol = nd, byrow = TRUE)
  if (nd) {
    inside <- rowSums(idx >= rep(from, each = nrow(idx)) & idx < rep(to, each = nrow(idx))) == nd
    rows <- rows[inside]
    idx <- idx[inside, , drop = FALSE]
  }
  if (!length(rows)) return(NULL)
  ck <- if (nd) do.call(paste, c(lapply(seq_len(nd), function(d) idx[, d]), sep = sep)) else rep(if (v2) "0" else "", length(rows))
  keys <- paste0(prefix, if (v2) ck else if (nd) paste0("c", sep, ck) else "c")
  kind <- man$kind[rows]
  url <- ifelse(kind == 1L, paste0("icechunk-repository:chunks/", man$chunk_id[rows]),
                ifelse(kind == 2L, man$location[rows], ""))
  data <- man$inline[rows]
  data[kind != 0L] <- list(raw())
  list(key = keys, kind = ifelse(kind == 0L, 0L, 1L), url = url, offset = man$offset[rows],
       length = man$length[rows], data = data, last_modified = man$last_modified[rows], etag = man$etag[rows])
}

ref_bind_all <- function(parts) {
  parts <- parts[!vapply(parts, is.null, TRUE)]
  cols <- c("key", "kind", "url", "offset", "length", "data")
  out <- lapply(stats::setNames(nm = cols), function(k) do.call(c, lapply(parts, `[[`, k)))
  out$last_modified <- unlist(lapply(parts, function(p) p$last_modified %||% rep(NA_real_, length(p$key))))
  out$etag <- unlist(lapply(parts, function(p) p$etag %||% rep(NA_character_, length(p$key))))
  out
}
