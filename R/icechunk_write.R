#' Write Icechunk repositories
#'
#' `zarr_icechunk_create()` makes a new, empty [Icechunk](https://icechunk.io)
#' repository (spec version 2, as Icechunk 2.x writes it, or 1 for
#' Icechunk 1.x) in a local directory or an S3 bucket and returns a [zarr]
#' object writable on its branch `"main"`.
#' `open_zarr(location, branch = "main", read_only = FALSE)` opens an
#' existing repository (spec 1 or 2) for writing on a branch the same way. Its
#' store is a `zarr_icechunksession`: groups, arrays, attributes and chunks
#' are written through the usual API ([as_zarr()], `[<-`, `add_array()`,
#' `add_group()`) and stay in memory, invisible to other readers, until
#' `z$store$commit(message)` writes them as a new snapshot of the branch.
#'
#' A commit writes, as Icechunk does: each new chunk of more than 512 bytes
#' as an object `chunks/<id>` and smaller ones inline in the manifest; one
#' chunk manifest for each array whose chunks changed (its unchanged
#' chunks, inline, native or virtual, carried over); the snapshot; the
#' transaction log; and then the repository's `repo` object, with the new
#' snapshot at the head of the branch, the object it replaces kept in
#' `overwritten/` (spec 1: the branch's file `refs/branch.<name>/ref.json`
#' instead). The session then continues from the new snapshot, so commits
#' follow each other.
#'
#' The branch moves only if its head is still the snapshot the session
#' started from. In a local directory the `repo` object is replaced (by a
#' rename) while a lock directory `repo.lock` is held, after reading it
#' again (the official implementation does not know this lock: do not
#' commit to one local repository from both at once). On S3 it is replaced
#' by a PUT with `If-Match` on the ETag of the object read (a new
#' repository's with `If-None-Match: *`), as Icechunk does: when another
#' writer replaced it in between, it is read again and the branch checked
#' again. When another
#' session committed to the branch in between, `commit()` fails with a
#' condition of class `zarr_error_conflict` naming the branch; nothing is
#' written to the branch, and the session keeps its changes (open the branch
#' again and write them there to retry). Commits to other branches, or new
#' tags, are not conflicts.
#'
#' Branches and tags are made with the session's methods
#' `create_branch(name, snapshot)`, `create_tag(name, snapshot)` and
#' `reset_branch(name, snapshot)` (the snapshot defaults to the session's
#' current one), which update the `repo` object the same way.
#'
#' Not supported: repositories on remote storage other than S3 (they open
#' read-only), moving or renaming
#' nodes, amending commits, deleting branches and tags, and arrays whose
#' chunk grid is not regular.
#'
#' @param location A local directory that does not exist yet or is empty
#'   (a `file://` URL works too), or an `s3://bucket/prefix` location (or a
#'   [zarr_s3store]) that holds no keys yet.
#' @param ... For an `s3://` location: passed to [zarr_s3store] (region,
#'   credentials, endpoint).
#' @param spec_version 2 (the default: Icechunk 2.x, a `repo` object holds
#'   branches, tags and the list of snapshots) or 1 (Icechunk 1.x, which
#'   older readers need: branches and tags are files `refs/<kind>.<name>/ref.json`
#'   and snapshots name their parents). Sessions on an existing repository
#'   write in its spec version.
#' @return A [zarr] object whose store is the session.
#' @seealso [zarr_icechunkstore] to read repositories, [icechunk_history()]
#' @export
#' @examples
#' repo <- tempfile("repo")
#' z <- zarr_icechunk_create(repo)
#' a <- z$root$add_array("t", define_array("int32", c(4, 3)))
#' a[] <- matrix(1:12, 4)
#' first <- z$store$commit("first values")
#' z$store$create_tag("v1")
#' a[1, ] <- 0L
#' z$store$commit("first row zeroed")
#' icechunk_history(repo)
#' open_zarr(repo, tag = "v1")[["/t"]][]
#' open_zarr(repo, branch = "main")[["/t"]][]
#' unlink(repo, recursive = TRUE)
zarr_icechunk_create <- function(location, ..., spec_version = 2L) {
  if (!identical(as.integer(spec_version), 1L) && !identical(as.integer(spec_version), 2L))
    zarr_abort("argument", "spec_version must be 1 or 2")
  spec_version <- as.integer(spec_version)
  t <- ic_target(location, ..., create = TRUE)
  storage <- t$storage
  now <- ic_now()
  id <- ic_initial_snapshot
  empty <- list(path = character(), node_id = character(), user_data = character(), is_array = logical(),
                shape = list(), num_chunks = list(), dimension_names = list(), manifests = list())
  storage$set(paste0("snapshots/", id), .Call(ffi_icechunk_write, 1L, list(
    spec_version = spec_version, id = id, parent = NA_character_, flushed_at = now,
    message = "Repository initialized", nodes = empty,
    manifest_files = list(id = character(), size = numeric(), nrefs = numeric())), NULL))
  if (spec_version == 1L) { # refs are files: the main branch's only if none is there yet
    ic_update_ref(storage, t$dir, "branch", "main", id, function(head) {
      if (!is.null(head)) zarr_abort("exists", sprintf("'%s' already holds an Icechunk repository", t$shown))
    })
    session <- zarr_icechunksession$new(storage, "main")
    session$create_group("/", "")
    return(zarr$new(session))
  }
  storage$set(paste0("transactions/", id), ic_txlog_bytes(id, list(), list()))
  repo <- .Call(ffi_icechunk_write, 6L, list(
    tags = list(name = character(), index = integer()),
    branches = list(name = "main", index = 0L),
    deleted_tags = character(),
    snapshots = list(id = id, parent = -1L, flushed_at = now, message = "Repository initialized"),
    status_at = now,
    updates = list(type = 1L, name = NA_character_, previous = NA_character_, new = NA_character_, at = now,
                   backup = NA_character_),
    before = NA_character_), NULL)
  if (is.null(t$dir)) {
    # S3: the repo object only if none is there yet
    res <- s3_request(storage$io_spec(), "PUT", "repo", "", repo, condition = "If-None-Match: *")
    if (res$status == 412L) zarr_abort("exists", sprintf("'%s' already holds an Icechunk repository", t$shown))
    if (res$status >= 300L) s3_fail(res, paste0(t$shown, "/repo"))
  } else {
    ic_write_file(file.path(t$dir, "repo"), repo)
  }
  session <- zarr_icechunksession$new(storage, "main")
  session$create_group("/", "")
  zarr$new(session)
}

#' Writable session on an Icechunk branch
#'
#' The store of a [zarr] object made by [zarr_icechunk_create()] or by
#' `open_zarr(location, branch = , read_only = FALSE)`: a branch of an
#' Icechunk repository (spec 1 or 2, local or on S3) opened for writing. What
#' is written is kept in memory, over the snapshot the session started from,
#' until `commit()` writes it as the branch's next snapshot; see
#' [zarr_icechunk_create()] for what a commit writes and how conflicts are
#' detected.
#'
#' @seealso [zarr_icechunk_create()], [zarr_icechunkstore]
#' @examples
#' repo <- tempfile("repo")
#' z <- zarr_icechunk_create(repo)
#' x <- z$root$add_array("x", define_array("float64", 5))
#' x[] <- 1:5
#' z$store$commit("x")
#' # two sessions on the same branch: the second commit conflicts
#' s1 <- open_zarr(repo, branch = "main", read_only = FALSE)
#' s2 <- open_zarr(repo, branch = "main", read_only = FALSE)
#' s1[["/x"]][1] <- 10
#' s1$store$commit("from the first session")
#' s2[["/x"]][2] <- 20
#' res <- tryCatch(s2$store$commit("from the second"), zarr_error_conflict = conditionMessage)
#' res
#' open_zarr(repo)[["/x"]][] # the first session's commit
#' unlink(repo, recursive = TRUE)
#' @export
zarr_icechunksession <- R6::R6Class("zarr_icechunksession",
  inherit = zarr_memorystore,
  cloneable = FALSE,
  public = list(
    #' @description Open a writable session on a branch of a local spec 2
    #'   repository.
    #' @param location The repository: a local directory, an `s3://` URL or
    #'   a [zarr_s3store].
    #' @param branch The branch.
    #' @param ... Passed to [zarr_s3store] for an `s3://` URL.
    #' @return An instance of this class.
    initialize = function(location, branch = "main", ...) {
      super$initialize()
      private$.version <- 3L # Icechunk holds Zarr v3
      private$.separator <- "/"
      if (!is.character(branch) || length(branch) != 1L || is.na(branch) || !nzchar(branch))
        zarr_abort("argument", "branch must be a single string")
      t <- ic_target(location, ...)
      private$.dir <- t$dir
      private$.loc <- t$shown
      private$.storage <- t$storage
      info <- ic_repo_info(private$.storage)
      private$.spec <- info$spec_version
      private$.branch <- branch
      private$start(ic_resolve_ref(private$.storage, info, "branch", branch))
    },

    #' @description Print a summary of the session.
    print = function() {
      cat(sprintf("<Icechunk session> %s, branch '%s' at %s, %d changed keys\n", redact(private$.loc),
                  private$.branch, private$.snap, length(ls(private$.data)) + length(private$.deleted)))
      invisible(self)
    },

    #' @description Whether a key exists.
    #' @param key The key.
    #' @return `TRUE` or `FALSE`.
    exists = function(key) {
      super$exists(key) || (!private$gone(key) && private$.base$exists(key))
    },

    #' @description Retrieve a value or a byte range of it.
    #' @param key The key.
    #' @param prototype Ignored.
    #' @param byte_range See [zarr_store].
    #' @return A raw vector, or `NULL`.
    get = function(key, prototype = NULL, byte_range = NULL) {
      if (super$exists(key)) return(super$get(key, prototype, byte_range))
      if (private$gone(key)) return(NULL)
      private$.base$get(key, prototype, byte_range)
    },

    #' @description Store a value (in the session, until `commit()`).
    #' @param key The key.
    #' @param value A raw vector.
    #' @return Self, invisibly.
    set = function(key, value) {
      super$set(key, value)
      private$.deleted <- setdiff(private$.deleted, key)
      invisible(self)
    },

    #' @description Remove a key; for a node prefix, everything below it.
    #' @param key The key.
    #' @return `TRUE`, invisibly.
    erase = function(key) {
      below <- if (nzchar(key)) self$list_prefix(node_prefix(key)) else character()
      private$drop(c(if (self$exists(key)) key, below))
      cache_forget(self, key, prefix = node_prefix(key))
      invisible(TRUE)
    },

    #' @description Remove every key below a prefix.
    #' @param prefix The prefix.
    #' @return `TRUE`, invisibly.
    erase_prefix = function(prefix) {
      prefix <- node_prefix(prefix)
      was_group <- self$is_group(prefix)
      private$drop(self$list_prefix(prefix))
      cache_forget(self, prefix = prefix)
      if (was_group) self$set_metadata(prefix, list(zarr_format = 3L, node_type = "group", attributes = named_list()))
      invisible(TRUE)
    },

    #' @description Remove all keys and values, the root metadata included.
    #' @return `TRUE`, invisibly.
    clear = function() {
      private$drop(self$list_prefix(""))
      cache_forget(self, prefix = "")
      invisible(TRUE)
    },

    #' @description All keys below a prefix.
    #' @param prefix The prefix.
    #' @return A character vector of full keys.
    list_prefix = function(prefix) {
      base <- private$.base$list_prefix(prefix)
      sort(union(super$list_prefix(prefix), setdiff(base, private$.deleted)))
    },

    #' @description Read the manifests of the array at a prefix (see
    #'   [zarr_icechunkstore]).
    #' @param prefix The array's prefix.
    #' @return `NULL`, invisibly.
    prepare_chunks = function(prefix) private$.base$prepare_chunks(prefix),

    #' @description How the C engine reaches this store.
    #' @return A list.
    io_spec = function() {
      if (is.null(private$.io)) {
        private$.io <- store_io_r(
          get = function(keys) lapply(keys, function(k) self$get(k)),
          set = function(key, value) self$set(key, value),
          erase = function(key) self$erase(key))
      }
      private$.io
    },

    #' @description Write the session's changes as a new snapshot of its
    #'   branch (see Details).
    #' @param message The commit message.
    #' @return The new snapshot's id, invisibly.
    commit = function(message) {
      if (!is.character(message) || length(message) != 1L || is.na(message))
        zarr_abort("argument", "message must be a single string")
      if (!length(ls(private$.data, all.names = TRUE)) && !length(private$.deleted))
        zarr_abort("icechunk", "the session has no changes to commit")
      got <- ic_commit(private$.storage, private$.snapshot, private$.data, private$.deleted, message, private$.spec)
      branch <- private$.branch
      base <- private$.snap
      moved <- function(head) {
        zarr_abort("conflict", sprintf(paste("branch '%s' moved to snapshot %s since this session started from %s:",
                                             "the commit is not applied (the session keeps its changes)"),
                                       branch, head, base))
      }
      if (private$.spec < 2L) {
        ic_update_ref(private$.storage, private$.dir, "branch", branch, got$id, function(head) {
          if (!identical(head, base)) moved(head %||% "(none)")
        })
        private$start(got$id)
        return(invisible(got$id))
      }
      ic_update_repo(private$.storage, private$.dir, function(info) {
        head <- ic_resolve_ref(private$.storage, info, "branch", branch)
        if (!identical(head, base)) moved(head)
        info <- ic_info_add_snapshot(info, got$id, base, got$flushed_at, message)
        list(info = ic_info_set_ref(info, "branches", branch, got$id),
             update = list(type = 10L, name = branch, previous = NA_character_, new = got$id))
      })
      private$start(got$id)
      invisible(got$id)
    },

    #' @description Make a branch at a snapshot.
    #' @param name The new branch.
    #' @param snapshot The snapshot id (default: the session's current one).
    #' @return The snapshot id, invisibly.
    create_branch = function(name, snapshot = self$snapshot_id) {
      private$set_ref("branches", name, snapshot, create = TRUE)
    },

    #' @description Make a tag at a snapshot.
    #' @param name The new tag.
    #' @param snapshot The snapshot id (default: the session's current one).
    #' @return The snapshot id, invisibly.
    create_tag = function(name, snapshot = self$snapshot_id) {
      private$set_ref("tags", name, snapshot, create = TRUE)
    },

    #' @description Point an existing branch at another snapshot. Resetting
    #'   the session's own branch starts the session again from there (its
    #'   uncommitted changes are kept).
    #' @param name The branch.
    #' @param snapshot The snapshot id.
    #' @return The snapshot id, invisibly.
    reset_branch = function(name, snapshot) {
      id <- private$set_ref("branches", name, snapshot, create = FALSE)
      if (identical(name, private$.branch)) private$start(id, keep = TRUE)
      invisible(id)
    }
  ),
  active = list(
    #' @field friendlyClassName (read-only) Name of the class for printing.
    friendlyClassName = function(value) "Icechunk session",
    #' @field branch (read-only) The session's branch.
    branch = function(value) private$.branch,
    #' @field snapshot_id (read-only) The snapshot the session's changes
    #'   apply to (the branch's head when it started or last committed).
    snapshot_id = function(value) private$.snap,
    #' @field has_changes (read-only) Whether there is anything to commit.
    has_changes = function(value) length(ls(private$.data, all.names = TRUE)) > 0L || length(private$.deleted) > 0L,
    #' @field keys (read-only) All keys in the session's view.
    keys = function(value) self$list_prefix("")
  ),
  private = list(
    .dir = NULL, .loc = NULL, .storage = NULL, .branch = NULL, .snap = NULL, .base = NULL, .snapshot = NULL,
    .deleted = character(), .spec = 2L,
    gone = function(key) key %in% private$.deleted,
    # Keys erased in the session: gone from its memory and hidden in the base.
    drop = function(keys) {
      private$.deleted <- union(private$.deleted, keys)
      here <- intersect(keys, ls(private$.data, all.names = TRUE))
      if (length(here)) rm(list = here, envir = private$.data)
    },
    # Continue from snapshot `id`: what was committed leaves the session.
    start = function(id, keep = FALSE) {
      private$.snap <- id
      private$.base <- zarr_icechunkstore$new(private$.storage, snapshot = id)
      private$.snapshot <- ic_read_object(private$.storage, paste0("snapshots/", id), "snapshot")
      cache_forget(self, prefix = "")
      if (keep) return(invisible())
      rm(list = ls(private$.data, all.names = TRUE), envir = private$.data)
      private$.deleted <- character()
    },
    set_ref = function(kind, name, snapshot, create) {
      if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name) || grepl("/", name, fixed = TRUE))
        zarr_abort("argument", "a branch or tag name must be a single string without '/'")
      what <- if (kind == "tags") "tag" else "branch"
      id <- ic_normalise_id(snapshot)
      storage <- private$.storage
      if (private$.spec < 2L) {
        if (!isTRUE(storage$exists(paste0("snapshots/", id))))
          zarr_abort("not_found", sprintf("the repository has no snapshot '%s'", id))
        ic_update_ref(storage, private$.dir, what, name, id, function(head) {
          if (create && !is.null(head)) zarr_abort("exists", sprintf("the repository already has a %s '%s'", what, name))
          if (!create && is.null(head)) zarr_abort("not_found", sprintf("the repository has no %s '%s'", what, name))
        })
        return(invisible(id))
      }
      ic_update_repo(private$.storage, private$.dir, function(info) {
        if (!id %in% info$snapshots$id) zarr_abort("not_found", sprintf("the repository has no snapshot '%s'", id))
        has <- name %in% info[[kind]]$name
        if (create && has) zarr_abort("exists", sprintf("the repository already has a %s '%s'", what, name))
        if (!create && !has) zarr_abort("not_found", sprintf("the repository has no %s '%s'", what, name))
        prev <- if (has) ic_resolve_ref(storage, info, what, name) else NA_character_
        list(info = ic_info_set_ref(info, kind, name, id),
             update = list(type = if (!create) 9L else if (kind == "tags") 5L else 7L, name = name, previous = prev,
                           new = NA_character_))
      })
      invisible(id)
    }
  )
)

# ---- internals ------------------------------------------------------------------

# The id Icechunk gives every repository's first snapshot.
ic_initial_snapshot <- "1CECHNKREP0F1RSTCMT0"

# Chunks of at most this many bytes go inline in the manifest (Icechunk's default).
ic_inline_max <- 512

ic_now <- function() floor(as.numeric(Sys.time()) * 1e6)

ic_write_file <- function(path, bytes) {
  tmp <- paste0(path, ".tmp.", .Call(ffi_icechunk_new_id, 8L))
  con <- file(tmp, "wb")
  on.exit(close(con))
  writeBin(bytes, con)
  close(con)
  on.exit()
  if (!file.rename(tmp, path)) {
    unlink(tmp)
    zarr_abort("io", "cannot write the file", key = path)
  }
}

# Where a repository is written: list(storage, dir (NULL for S3), shown).
# `create`: the location must hold nothing yet.
ic_target <- function(location, ..., create = FALSE) {
  if (inherits(location, "zarr_s3store")) {
    storage <- location
  } else if (inherits(location, "zarr_localstore")) {
    return(ic_target(location$root, create = create))
  } else {
    if (!is.character(location) || length(location) != 1L || is.na(location) || !nzchar(location))
      zarr_abort("argument", "location must be a single path or s3:// URL, or a zarr_s3store")
    if (is_s3_url(location) && !is_azure_url(location)) {
      u <- s3_parse_url(location)
      storage <- zarr_s3store$new(u$bucket, u$prefix, ...)
    } else if (grepl("^[a-z][a-z0-9+.-]*://", location, ignore.case = TRUE) && !grepl("^file://", location)) {
      zarr_abort("unsupported", "Icechunk repositories are written in local directories and S3 buckets only")
    } else {
      p <- path.expand(sub("^file://", "", location))
      if (create) {
        if (dir.exists(p) && length(list.files(p, all.files = TRUE, no.. = TRUE)))
          zarr_abort("exists", sprintf("'%s' already exists and is not empty", location))
        if (!dir.exists(p) && !dir.create(p, recursive = TRUE))
          zarr_abort("io", sprintf("cannot create the directory '%s'", location))
      } else if (!dir.exists(p)) {
        zarr_abort("not_found", sprintf("'%s' does not exist or is not a directory", location))
      }
      return(list(storage = zarr_localstore$new(p), dir = p, shown = location))
    }
  }
  if (create && length(storage$list_prefix("")))
    zarr_abort("exists", sprintf("'%s' already holds keys", storage$root))
  list(storage = storage, dir = NULL, shown = redact(storage$root))
}

# Replace the repo object: `change(info)` gives list(info, update) from the
# current repo info (or raises, e.g. a conflict). Conditional: locally,
# under the lock directory, on the repo object read under it; on S3, a PUT
# with If-Match on the ETag of the object read (a 412, when another writer
# replaced it meanwhile, reads it again and asks `change` again).
ic_update_repo <- function(storage, dir, change) {
  if (!is.null(dir)) {
    ic_lock(dir)
    on.exit(unlink(file.path(dir, "repo.lock"), recursive = TRUE))
    path <- file.path(dir, "repo")
    old <- readBin(path, "raw", file.size(path))
    new <- ic_repo_bytes(storage, old, change)
    ic_write_file(path, new)
    return(invisible())
  }
  io <- storage$io_spec()
  where <- paste0(redact(storage$root), "/repo")
  for (i in seq_len(10L)) {
    got <- s3_request(io, "GET", "repo", "")
    if (got$status != 200L) s3_fail(got, where)
    if (!nzchar(got$etag)) zarr_abort("icechunk", "the repo object came without an ETag: it cannot be replaced safely",
                                      key = "repo")
    new <- ic_repo_bytes(storage, got$body, change)
    put <- s3_request(io, "PUT", "repo", "", new, condition = paste("If-Match:", got$etag))
    if (put$status < 300L) return(invisible())
    if (put$status != 412L) s3_fail(put, where)
  }
  zarr_abort("conflict", "the repo object kept changing while it was being replaced (other writers)", key = "repo")
}

# Take the repository's lock (a directory: its creation is atomic).
ic_lock <- function(dir) {
  lock <- file.path(dir, "repo.lock")
  for (i in seq_len(100L)) {
    if (dir.create(lock, showWarnings = FALSE)) return(invisible())
    Sys.sleep(0.05)
  }
  zarr_abort("conflict", sprintf("another writer holds the repository's lock '%s' (remove it if no writer runs)", lock))
}

# Spec 1: point the ref file of a branch or tag at snapshot `id`, after
# `check(head)` (head: the snapshot it points at now, NULL for none) raised
# nothing. Conditional as the repo object of spec 2 (ic_update_repo()).
ic_update_ref <- function(storage, dir, kind, name, id, check) {
  key <- sprintf("refs/%s.%s/ref.json", kind, name)
  body <- charToRaw(sprintf('{"snapshot":"%s"}', id))
  head_of <- function(raw) {
    if (is.null(raw)) return(NULL)
    doc <- tryCatch(json_parse(raw, key, key = key), zarr_error = function(e) NULL)
    h <- if (is.list(doc)) doc[["snapshot"]]
    if (!is.character(h) || length(h) != 1L) zarr_abort("icechunk", sprintf("the %s '%s' is not a valid reference", kind, name), key = key)
    h
  }
  if (!is.null(dir)) {
    ic_lock(dir)
    on.exit(unlink(file.path(dir, "repo.lock"), recursive = TRUE))
    path <- file.path(dir, key)
    check(head_of(if (file.exists(path)) readBin(path, "raw", file.size(path))))
    dir.create(dirname(path), recursive = TRUE, showWarnings = FALSE)
    ic_write_file(path, body)
    return(invisible())
  }
  io <- storage$io_spec()
  where <- paste0(redact(storage$root), "/", key)
  for (i in seq_len(10L)) {
    got <- s3_request(io, "GET", key, "")
    if (got$status != 200L && got$status != 404L) s3_fail(got, where)
    check(head_of(if (got$status == 200L) got$body))
    cond <- if (got$status == 404L) "If-None-Match: *" else paste("If-Match:", got$etag)
    put <- s3_request(io, "PUT", key, "", body, condition = cond)
    if (put$status < 300L) return(invisible())
    if (put$status != 412L) s3_fail(put, where)
  }
  zarr_abort("conflict", sprintf("the %s '%s' kept changing while it was being updated (other writers)", kind, name), key = key)
}

# The new repo object from the old one's bytes and `change` (see
# ic_update_repo()); the old one is kept in overwritten/.
ic_repo_bytes <- function(storage, old, change) {
  info <- .Call(ffi_icechunk_repo, old, "repo", max_decoded_bytes())
  got <- change(info)
  now <- ic_now()
  backup <- sprintf("repo.%.0f.%s", now, .Call(ffi_icechunk_new_id, 12L))
  storage$set(paste0("overwritten/", backup), old)
  info <- got$info
  s <- info$snapshots
  ord <- order(s$id, method = "radix")
  pos <- match(seq_along(s$id), ord) - 1L # old index -> new 0-based
  refs <- function(r) {
    o <- order(r$name, method = "radix")
    list(name = r$name[o], index = pos[r$snapshot[o]])
  }
  up <- got$update
  spec <- list(
    tags = refs(info$tags), branches = refs(info$branches), deleted_tags = character(),
    snapshots = list(id = s$id[ord], parent = ifelse(is.na(s$parent[ord]), -1L, pos[s$parent[ord]]),
                     flushed_at = round(s$time[ord] * 1e6), message = s$message[ord]),
    status_at = now,
    # the list of updates ends with one without a backup: only the new one
    # is listed, the older ones are in the backup
    updates = list(type = up$type, name = up$name, previous = up$previous, new = up$new, at = now,
                   backup = NA_character_),
    before = backup)
  .Call(ffi_icechunk_write, 6L, spec, old)
}

ic_info_add_snapshot <- function(info, id, parent, flushed_at, message) {
  s <- info$snapshots
  info$snapshots <- list(id = c(s$id, id), parent = c(s$parent, match(parent, s$id)),
                         time = c(s$time, flushed_at / 1e6), message = c(s$message, message))
  info
}

ic_info_set_ref <- function(info, kind, name, id) {
  r <- info[[kind]]
  k <- match(id, info$snapshots$id)
  i <- match(name, r$name)
  if (is.na(i)) {
    r$name <- c(r$name, name)
    r$snapshot <- c(r$snapshot, k)
  } else {
    r$snapshot[i] <- k
  }
  info[[kind]] <- r
  info
}

ic_txlog_bytes <- function(id, changes, chunks, spec = 2L) {
  ids <- function(x) sort(as.character(unlist(x)), method = "radix")
  .Call(ffi_icechunk_write, 4L, list(
    spec_version = spec, id = id, new_groups = ids(changes$new_groups), new_arrays = ids(changes$new_arrays),
    deleted_groups = ids(changes$deleted_groups), deleted_arrays = ids(changes$deleted_arrays),
    updated_arrays = ids(changes$updated_arrays), updated_groups = ids(changes$updated_groups),
    updated_chunks = list(node_id = names(chunks) %||% character(), coords = unname(lapply(chunks, `[[`, "coords")),
                          ndim = as.integer(vapply(chunks, `[[`, 0L, "ndim")))), NULL)
}

# The chunk coordinates of chunk keys (relative to their array) under an
# array's encoding: an integer matrix, one row per key; NA rows for keys
# that are not chunk keys of it.
ic_key_coords <- function(rel, meta) {
  nd <- length(meta$shape)
  enc <- meta[["chunk_key_encoding"]]
  v2 <- identical(enc[["name"]], "v2")
  sep <- enc[["configuration"]][["separator"]] %||% if (v2) "." else "/"
  out <- matrix(NA_integer_, length(rel), nd)
  if (nd == 0L) return(structure(out, ok = rel == if (v2) "0" else "c"))
  body <- rel
  if (!v2) {
    body[!startsWith(rel, paste0("c", sep))] <- NA_character_
    body <- substring(body, nchar(sep) + 2L)
  }
  parts <- strsplit(body, sep, fixed = TRUE)
  for (i in seq_along(parts)) {
    p <- parts[[i]]
    if (length(p) == nd && all(grepl("^[0-9]+$", p))) out[i, ] <- as.integer(p)
  }
  structure(out, ok = stats::complete.cases(out))
}

# Write what a session changed on top of snapshot `snap` (as parsed): new
# chunks, manifests, the snapshot and the transaction log. Returns list(id,
# flushed_at). The repo object is not touched.
ic_commit <- function(storage, snap, data, deleted, message, spec = 2L) {
  changed <- ls(data, all.names = TRUE)
  base <- snap$nodes
  bprefix <- ic_node_prefix(base$path)
  # the nodes after the commit: their zarr.json, from the session or the base
  meta_key <- function(prefix) paste0(prefix, "zarr.json")
  new_meta <- changed[changed == "zarr.json" | endsWith(changed, "/zarr.json")]
  prefix <- union(bprefix[!meta_key(bprefix) %in% deleted], substring(new_meta, 1L, nchar(new_meta) - 9L))
  prefix <- sort(prefix, method = "radix")
  path <- ifelse(prefix == "", "/", paste0("/", sub("/$", "", prefix)))
  bi <- match(prefix, bprefix)
  user <- vapply(seq_along(prefix), function(i) {
    k <- meta_key(prefix[i])
    if (exists(k, envir = data, inherits = FALSE)) rawToChar(data[[k]]) else base$user_data[bi[i]]
  }, "")
  meta <- lapply(seq_along(prefix), function(i) json_parse(charToRaw(user[i]), "metadata", key = meta_key(prefix[i])))
  is_array <- vapply(meta, function(m) identical(m[["node_type"]], "array"), TRUE)
  bad <- vapply(meta, function(m) !identical(m[["zarr_format"]], 3L) && !identical(m[["zarr_format"]], 3), TRUE)
  if (any(bad)) zarr_abort("icechunk", sprintf("Icechunk holds Zarr v3 only; '%s' is not", path[bad][1L]))
  # a node whose type changed is a new node
  same <- !is.na(bi) & ((base$is_array[bi] %in% TRUE) == is_array)
  node_id <- ifelse(same, base$node_id[bi], NA_character_)
  for (i in which(is.na(node_id))) node_id[i] <- .Call(ffi_icechunk_new_id, 8L)
  # which node each changed or deleted key belongs to: the longest prefix
  owner <- function(keys) {
    o <- integer(length(keys))
    for (i in order(nchar(prefix))) o[startsWith(keys, prefix[i])] <- i
    o
  }
  chunk_keys <- setdiff(changed, new_meta)
  gone_keys <- setdiff(deleted, meta_key(prefix))
  ck_owner <- owner(chunk_keys)
  gk_owner <- owner(gone_keys)
  # a snapshot holds metadata and chunks only: anything else would be lost
  stray <- chunk_keys[ck_owner == 0L | !is_array[pmax(ck_owner, 1L)] & ck_owner > 0L]
  for (i in which(is_array)) {
    mine <- chunk_keys[ck_owner == i]
    cc <- ic_key_coords(substring(mine, nchar(prefix[i]) + 1L), meta[[i]])
    stray <- c(stray, mine[!attr(cc, "ok")])
  }
  if (length(stray))
    zarr_abort("icechunk", sprintf("an Icechunk snapshot holds only metadata and chunks; %s is neither (%d such keys)",
                                   stray[1L], length(stray)), key = stray[1L])
  manifests <- vector("list", length(prefix))
  num_chunks <- vector("list", length(prefix))
  shape <- vector("list", length(prefix))
  dimn <- vector("list", length(prefix))
  files <- list(id = character(), size = numeric(), nrefs = numeric())
  kept <- character()
  upd_chunks <- list()
  for (i in which(is_array)) {
    m <- meta[[i]]
    sh <- as.numeric(unlist(m$shape))
    grid <- m[["chunk_grid"]]
    if (!identical(grid[["name"]], "regular"))
      zarr_abort("unsupported", sprintf("Icechunk writing supports regular chunk grids only (array '%s')", path[i]))
    cs <- as.numeric(unlist(grid[["configuration"]][["chunk_shape"]]))
    nc <- ifelse(cs > 0, ceiling(sh / cs), 0)
    shape[[i]] <- sh
    num_chunks[[i]] <- nc
    if (!is.null(m[["dimension_names"]]))
      dimn[[i]] <- vapply(m[["dimension_names"]], function(x) if (is.null(x)) NA_character_ else as.character(x), "")
    nd <- length(sh)
    mine <- chunk_keys[ck_owner == i]
    mine_gone <- gone_keys[gk_owner == i]
    new_c <- ic_key_coords(substring(mine, nchar(prefix[i]) + 1L), m)
    gone_c <- ic_key_coords(substring(mine_gone, nchar(prefix[i]) + 1L), m)
    gone_c <- gone_c[attr(gone_c, "ok"), , drop = FALSE]
    old_user <- if (!is.na(bi[i])) base$user_data[bi[i]]
    bm <- if (!is.na(bi[i]) && same[i]) base$manifests[[bi[i]]] else list(id = character(), from = matrix(0, 0, nd),
                                                                        to = matrix(0, 0, nd))
    if (!length(mine) && !nrow(gone_c) && identical(old_user, user[i]) && same[i]) {
      manifests[[i]] <- bm
      kept <- c(kept, bm$id)
      next
    }
    refs <- ic_base_refs(storage, bm, node_id[i], nd)
    ckey <- function(x) if (nd) do.call(paste, c(lapply(seq_len(nd), function(d) x[, d]), sep = ",")) else rep("", nrow(x))
    drop <- ckey(refs$coords) %in% c(ckey(new_c), ckey(gone_c))
    if (nd) drop <- drop | rowSums(refs$coords >= rep(nc, each = nrow(refs$coords))) > 0
    refs <- ic_refs_subset(refs, !drop)
    if (length(mine)) {
      vals <- mget(mine, envir = data)
      n <- lengths(vals)
      native <- n > ic_inline_max
      cid <- rep(NA_character_, length(mine))
      for (k in which(native)) {
        cid[k] <- .Call(ffi_icechunk_new_id, 12L)
        storage$set(paste0("chunks/", cid[k]), vals[[k]])
      }
      inl <- unname(vals)
      inl[native] <- list(raw())
      refs <- ic_refs_bind(refs, list(coords = new_c, kind = ifelse(native, 1L, 0L), inline = inl,
                                      offset = numeric(length(mine)), length = ifelse(native, as.numeric(n), 0),
                                      chunk_id = cid, location = rep(NA_character_, length(mine)),
                                      etag = rep(NA_character_, length(mine)),
                                      last_modified = rep(NA_real_, length(mine))))
    }
    touched <- rbind(new_c, gone_c)
    if (nrow(touched)) {
      o <- if (nd) do.call(order, c(lapply(seq_len(nd), function(d) touched[, d]), method = "radix")) else seq_len(nrow(touched))
      touched <- touched[o, , drop = FALSE]
      upd_chunks[[node_id[i]]] <- list(coords = as.integer(t(touched)), ndim = nd)
    }
    if (!length(refs$kind)) {
      manifests[[i]] <- list(id = character(), from = matrix(0, 0, nd), to = matrix(0, 0, nd))
      next
    }
    o <- if (nd) do.call(order, c(lapply(seq_len(nd), function(d) refs$coords[, d]), method = "radix")) else seq_along(refs$kind)
    refs <- ic_refs_subset(refs, o)
    mid <- .Call(ffi_icechunk_new_id, 12L)
    arr <- refs
    arr$coords <- as.integer(t(refs$coords))
    arr$node_id <- node_id[i]
    arr$ndim <- nd
    bytes <- .Call(ffi_icechunk_write, 2L, list(spec_version = spec, id = mid, arrays = list(arr)), NULL)
    storage$set(paste0("manifests/", mid), bytes)
    files$id <- c(files$id, mid)
    files$size <- c(files$size, length(bytes))
    files$nrefs <- c(files$nrefs, length(refs$kind))
    from <- if (nd) matrix(apply(refs$coords, 2L, min), 1L) else matrix(0, 1L, 0L)
    to <- if (nd) matrix(apply(refs$coords, 2L, max) + 1, 1L) else matrix(0, 1L, 0L)
    manifests[[i]] <- list(id = mid, from = from, to = to)
  }
  # the manifests the snapshot points to: the new ones and those kept
  bf <- snap$manifest_files
  keep <- bf$id %in% kept
  mf <- list(id = c(bf$id[keep], files$id), size = c(bf$size[keep], files$size), nrefs = c(bf$nrefs[keep], files$nrefs))
  o <- order(mf$id, method = "radix")
  mf <- lapply(mf, `[`, o)
  for (i in which(!is_array)) manifests[i] <- list(NULL)
  id <- .Call(ffi_icechunk_new_id, 12L)
  now <- ic_now()
  nodes <- list(path = path, node_id = node_id, user_data = user, is_array = is_array, shape = shape,
                num_chunks = num_chunks, dimension_names = dimn, manifests = manifests)
  storage$set(paste0("snapshots/", id), .Call(ffi_icechunk_write, 1L, list(
    spec_version = spec, id = id, parent = snap$id, flushed_at = now, message = message, nodes = nodes,
    manifest_files = mf), NULL))
  was <- !is.na(bi) & same
  gone_nodes <- !base$node_id %in% node_id
  changes <- list(new_groups = node_id[!was & !is_array], new_arrays = node_id[!was & is_array],
                  deleted_groups = base$node_id[gone_nodes & !base$is_array],
                  deleted_arrays = base$node_id[gone_nodes & base$is_array],
                  updated_arrays = node_id[was & is_array & user != base$user_data[bi]],
                  updated_groups = node_id[was & !is_array & user != base$user_data[bi]])
  if (length(upd_chunks)) upd_chunks <- upd_chunks[order(names(upd_chunks), method = "radix")]
  storage$set(paste0("transactions/", id), ic_txlog_bytes(id, changes, upd_chunks, spec))
  list(id = id, flushed_at = now)
}

# The chunk references of node `node_id` in its manifests `bm` (within each
# manifest's extents), as columns.
ic_base_refs <- function(storage, bm, node_id, nd) {
  out <- list(coords = matrix(integer(), 0L, nd), kind = integer(), inline = list(), offset = numeric(),
              length = numeric(), chunk_id = character(), location = character(), etag = character(),
              last_modified = numeric())
  for (j in seq_along(bm$id)) {
    man <- ic_read_object(storage, paste0("manifests/", bm$id[j]), "manifest")
    a <- match(node_id, man$arrays$node_id)
    if (is.na(a) || man$arrays$count[a] == 0L) next
    rows <- man$arrays$first[a] - 1L + seq_len(man$arrays$count[a])
    if (man$arrays$ndim[a] != nd)
      zarr_abort("icechunk", sprintf("the chunk indexes of node %s have %d dimensions, its array %d", node_id,
                                     man$arrays$ndim[a], nd), key = paste0("manifests/", bm$id[j]))
    before <- seq_len(a - 1L)
    ci <- sum(man$arrays$count[before] * man$arrays$ndim[before])
    idx <- matrix(man$coords[ci + seq_len(length(rows) * nd)], ncol = nd, byrow = TRUE)
    inside <- if (nd) rowSums(idx >= rep(bm$from[j, ], each = nrow(idx)) & idx < rep(bm$to[j, ], each = nrow(idx))) == nd
              else rep(TRUE, length(rows))
    rows <- rows[inside]
    out <- ic_refs_bind(out, list(coords = idx[inside, , drop = FALSE], kind = man$kind[rows], inline = man$inline[rows],
                                  offset = man$offset[rows], length = man$length[rows], chunk_id = man$chunk_id[rows],
                                  location = man$location[rows], etag = man$etag[rows],
                                  last_modified = man$last_modified[rows]))
  }
  out
}

ic_refs_subset <- function(r, i) {
  out <- lapply(r, function(x) if (is.matrix(x)) x[i, , drop = FALSE] else x[i])
  out$inline <- lapply(out$inline, function(x) x %||% raw())
  out
}

ic_refs_bind <- function(a, b) {
  out <- lapply(names(a), function(k) if (is.matrix(a[[k]])) rbind(a[[k]], b[[k]]) else c(a[[k]], b[[k]]))
  names(out) <- names(a)
  storage.mode(out$coords) <- "integer"
  out
}
