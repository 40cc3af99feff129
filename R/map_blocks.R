#' Chunk-aligned blocks of an array or of a selection
#'
#' Splits a selection of an array into blocks along the array's chunk grid:
#' each block is one chunk (one shard for a sharded array: the chunks of the
#' grid are the shards) or, with `block_shape`, a group of whole chunks. A
#' block is "whole" when it covers every element of each chunk it touches
#' (edge chunks count as whole when the block reaches the end of the array).
#' Writes of whole blocks never read the chunks they replace, so processes
#' writing different whole blocks at the same time cannot overwrite each
#' other's data; a write that covers only part of a chunk reads, merges and
#' rewrites that chunk, which is safe only when no other process writes the
#' same chunk at the same time.
#'
#' @param array A [zarr_array].
#' @param selection `NULL` for the whole array, or a list with one element
#'   per dimension: `NULL` (the whole extent) or a run of consecutive
#'   1-based indices, such as `101:300`.
#' @param block_shape `NULL` for blocks of one chunk, or the number of
#'   elements of a block along each dimension, a multiple of the chunk
#'   shape (or at least the extent of the dimension).
#' @return A list: `block`, `start` and `end`, matrices with one row per
#'   block and one column per dimension (the 1-based block coordinates and
#'   the first and last 1-based index of the block), `whole` (a logical
#'   vector: whether the block covers whole chunks), `grid` (the number of
#'   blocks along each dimension of the selection) and `block_shape`. Rows are
#'   in grid order, the first dimension varying fastest.
#' @seealso [zarr_map_blocks()]
#' @export
#' @examples
#' z <- create_zarr()
#' d <- define_array("float64", c(10, 10))
#' d$chunk_shape <- c(4, 4)
#' a <- z$add_array("/", "a", d)
#' b <- zarr_chunk_blocks(a, list(3:10, NULL))
#' cbind(b$start, b$end, whole = b$whole)
zarr_chunk_blocks <- function(array, selection = NULL, block_shape = NULL) {
  if (!inherits(array, "zarr_array")) zarr_abort("argument", "array must be a zarr_array")
  shape <- array$shape
  nd <- length(shape)
  chunk <- array$chunking$chunk_shape
  bs <- map_block_shape(block_shape, shape, chunk, array$path)
  if (is.null(selection)) selection <- vector("list", nd)
  if (!is.list(selection)) selection <- list(selection)
  if (length(selection) != nd)
    zarr_abort("index", sprintf("the selection has %d element(s), the array has %d dimension(s)",
                                length(selection), nd), array = array$path)
  per_dim <- lapply(seq_len(nd), function(d) {
    s <- selection[[d]]
    if (is.null(s)) { a <- 1; b <- shape[d] } else {
      if (!is.numeric(s) || !length(s) || anyNA(s) || any(s != trunc(s)) ||
          (length(s) > 1L && any(diff(s) != 1)))
        zarr_abort("index", sprintf("dimension %d: a block selection must be a run of consecutive indices", d),
                   array = array$path)
      a <- s[1L]; b <- s[length(s)]
      if (a < 1 || b > shape[d])
        zarr_abort("index", sprintf("subscript out of bounds: dimension %d has extent %s", d, format(shape[d])),
                   array = array$path)
    }
    if (shape[d] == 0) return(list(k = numeric(), start = numeric(), end = numeric(), whole = logical()))
    k <- seq(floor((a - 1) / bs[d]), floor((b - 1) / bs[d]))
    st <- pmax(a, k * bs[d] + 1)
    en <- pmin(b, (k + 1) * bs[d])
    whole <- (st - 1) %% chunk[d] == 0 & (en %% chunk[d] == 0 | en == shape[d])
    list(k = k + 1, start = st, end = en, whole = whole)
  })
  grid <- vapply(per_dim, function(p) length(p$k), 0)
  n <- prod(grid)
  idx <- if (nd) as.matrix(expand.grid(lapply(grid, seq_len), KEEP.OUT.ATTRS = FALSE)) else matrix(1, 1, 0)
  pick <- function(what) {
    m <- matrix(0, n, nd)
    for (d in seq_len(nd)) m[, d] <- per_dim[[d]][[what]][idx[, d]]
    m
  }
  whole <- if (nd) {
    w <- rep(TRUE, n)
    for (d in seq_len(nd)) w <- w & per_dim[[d]]$whole[idx[, d]]
    w
  } else TRUE
  list(block = pick("k"), start = pick("start"), end = pick("end"), whole = whole,
       grid = grid, block_shape = bs)
}

# block_shape: NULL (one chunk) or whole chunks along each dimension.
map_block_shape <- function(block_shape, shape, chunk, path) {
  if (is.null(block_shape)) return(chunk)
  if (!is.numeric(block_shape) || length(block_shape) != length(shape) || anyNA(block_shape) ||
      any(block_shape < 1))
    zarr_abort("argument", "block_shape needs one positive number per dimension", array = path)
  bs <- pmin(block_shape, pmax(shape, chunk))
  bad <- bs %% chunk != 0 & bs < shape
  if (any(bad))
    zarr_abort("argument", sprintf("block_shape (%s) must hold whole chunks (%s) along each dimension",
                                   paste(block_shape, collapse = " x "), paste(chunk, collapse = " x ")),
               array = path)
  ifelse(bs >= shape, pmax(bs, chunk), bs)
}

#' Apply a function to each block of an array
#'
#' Runs `fun` on every block of `array` (one chunk, or a group of whole
#' chunks given by `block_shape`; for sharded arrays a chunk of the grid is a
#' shard), either in this R session or, when [mirai::daemons()] are set, on
#' the mirai daemons: local background processes, or processes on other
#' machines started over SSH or through a cluster scheduler (Slurm, PBS,
#' LSF, SGE) by mirai. Each daemon opens the store itself from its location
#' (a local path, which must be the same on every machine, an HTTP(S) URL or
#' an `s3://` location whose credentials the daemon finds in its own
#' environment): only the locations, the block coordinates, `fun`, the
#' arguments in `...` and the results cross the wire, never the array.
#' Arrays in memory, zip files or references are processed in this session.
#' On daemons, consecutive blocks go out in batches, about 8 per connected
#' daemon, as a mirai task costs about a millisecond of its own.
#' A daemon loads the package from the library this session loaded it from
#' (this session's library paths go first on the daemon's); one that still
#' cannot load it fails with a `zarr_error_daemon` error naming its library
#' paths.
#'
#' Each call of `fun` gets the values of its block as an R array (a vector
#' for 1-d arrays) with the array's dimension names, and two attributes:
#' `index`, a list with the 1-based indices of the block along each
#' dimension (named after the dimensions when they have names), and `block`,
#' the 1-based coordinates of the block in the grid of blocks.
#'
#' Without `output`, the values `fun` returns are collected in grid order
#' (the first dimension varying fastest) into a list whose `dim` is the grid
#' of blocks, or, with `combine`, reduced in grid order with
#' `Reduce(combine, values)`. With `output`, `fun` returns the new values of
#' its block (as many as the block holds), and they are written into the
#' output array at the same place: each block is written by one task, so the
#' tasks never write the same chunk when the chunks of `output` divide the
#' blocks.
#'
#' When a task fails, the other tasks are cancelled and the error is raised
#' here, of class `zarr_error_block` plus the classes of the task's own
#' condition (for example `zarr_error_value`), with a message naming the
#' block and its indices and fields `block`, `start`, `end` and `parent` (the
#' task's condition). Progress is shown with the cli package when it is
#' installed, in interactive sessions or when the `zarr.progress` option is
#' `TRUE` (see [zarr-options]).
#'
#' Metadata are never written by the tasks: resize or append, and set
#' attributes, in one process.
#'
#' @param array A [zarr_array].
#' @param fun A function of the block values and `...`. When it runs on
#'   daemons it is serialized with its enclosing environment (except the
#'   global environment): pass the data it needs in `...` and call package
#'   functions with `pkg::fun()`.
#' @param ... Further arguments of `fun`, sent once with each task.
#' @param block_shape `NULL` for one chunk per block, or the shape of a
#'   block, a multiple of the chunk shape along each dimension.
#' @param output `NULL` to collect the values `fun` returns; a [zarr_array]
#'   of the same shape as `array` to write them into; or an [array_builder]
#'   (its data type and codecs; shape and chunk shape default to those of
#'   `array`) for a new array next to `array` in its group, named
#'   `"<name>_map"`, or `list(builder, "/path/of/new")` to choose its path
#'   in the store of `array`.
#' @param combine `NULL`, or a function of two values that reduces the
#'   results (such as `` `+` ``).
#' @return Without `output`: a list of the values with `dim()` the grid of
#'   blocks, or the value reduced with `combine`. With `output`: the output
#'   array, invisibly.
#' @seealso [zarr_chunk_blocks()]; the "Processing big arrays" vignette.
#' @export
#' @examples
#' z <- create_zarr()
#' d <- define_array("float64", c(20, 30))
#' d$chunk_shape <- c(10, 10)
#' a <- z$add_array("/", "a", d)
#' a$write(matrix(as.numeric(1:600), 20, 30))
#' # per-block sums, then the total
#' s <- zarr_map_blocks(a, sum)
#' dim(s)
#' zarr_map_blocks(a, sum, combine = `+`) == sum(1:600)
#' # a derived array written block by block
#' def <- array_builder$new()
#' def$data_type <- "float64"
#' b <- zarr_map_blocks(a, sqrt, output = def)
#' all.equal(b[], sqrt(a[]))
zarr_map_blocks <- function(array, fun, ..., block_shape = NULL, output = NULL, combine = NULL) {
  if (!inherits(array, "zarr_array")) zarr_abort("argument", "array must be a zarr_array")
  fun <- match.fun(fun)
  if (!is.null(combine)) combine <- match.fun(combine)
  args <- list(...)
  blocks <- zarr_chunk_blocks(array, NULL, block_shape)
  out <- map_output(array, output, blocks)
  if (!is.null(out) && !is.null(combine))
    zarr_abort("argument", "combine cannot be used with output", array = array$path)
  n <- nrow(blocks$start)
  items <- lapply(seq_len(n), function(i)
    list(i = i, start = blocks$start[i, ], end = blocks$end[i, ], block = blocks$block[i, ]))
  token <- paste(Sys.getpid(), format(Sys.time(), "%OS6"), sample.int(1e9, 1L))
  src <- map_location(array, token)
  dst <- if (!is.null(out)) map_location(out, token)
  remote <- requireNamespace("mirai", quietly = TRUE) && mirai::daemons_set() &&
    !is.null(src) && (is.null(out) || !is.null(dst))
  if (remote && !is.null(out)) map_check_aligned(out, blocks)
  results <- if (remote) {
    map_on_daemons(items, src, dst, fun, args, array$path)
  } else {
    map_sequential(items, array, out, fun, args)
  }
  if (!is.null(out)) return(invisible(out))
  if (!is.null(combine)) return(Reduce(combine, results))
  if (length(blocks$grid) > 1L) dim(results) <- blocks$grid
  results
}

# The output array: given, or created from a builder.
map_output <- function(array, output, blocks) {
  if (is.null(output)) return(NULL)
  if (inherits(output, "zarr_array")) {
    if (!identical(as.numeric(output$shape), as.numeric(array$shape)))
      zarr_abort("argument", sprintf("the output array has shape %s, the input %s",
                                     paste(output$shape, collapse = " x "), paste(array$shape, collapse = " x ")),
                 array = output$path)
    if (output$store$read_only) zarr_abort("read_only", "the output array's store is read-only", array = output$path)
    return(output)
  }
  path <- NULL
  if (is.list(output) && !inherits(output, "R6") && length(output) == 2L) {
    path <- output[[2L]]
    output <- output[[1L]]
    if (!is.character(path) || length(path) != 1L || !startsWith(path, "/"))
      zarr_abort("argument", "the path of the output array must be a single string starting with '/'")
  }
  if (!inherits(output, "array_builder"))
    zarr_abort("argument", "output must be NULL, a zarr_array, an array_builder or list(builder, path)")
  if (!output$is_set("shape")) output$shape <- array$shape
  if (!identical(as.numeric(output$shape), as.numeric(array$shape)))
    zarr_abort("argument", "the output array must have the shape of the input array", array = array$path)
  if (!output$is_set("chunk_shape")) output$chunk_shape <- array$chunking$chunk_shape
  if (is.null(path)) {
    if (is.null(array$parent)) zarr_abort("argument", "give the output array, or its path: the input array has no group",
                                          array = array$path)
    return(array$parent$add_array(paste0(array$name, "_map"), output))
  }
  root <- array
  while (!is.null(root$parent)) root <- root$parent
  if (!inherits(root, "zarr_group")) zarr_abort("argument", "the input array's store has no root group", array = array$path)
  parent_path <- dirname(path)
  parent <- if (parent_path == "/") root else root$get_node(sub("^/", "", parent_path))
  if (!inherits(parent, "zarr_group")) zarr_abort("not_found", sprintf("there is no group '%s'", parent_path))
  parent$add_array(basename(path), output)
}

# Concurrent writers must not share output chunks.
map_check_aligned <- function(out, blocks) {
  chunk <- out$chunking$chunk_shape
  shape <- out$shape
  for (d in seq_along(shape)) {
    ok <- (blocks$start[, d] - 1) %% chunk[d] == 0 & (blocks$end[, d] %% chunk[d] == 0 | blocks$end[, d] == shape[d])
    if (!all(ok))
      zarr_abort("argument", sprintf(paste("the chunks of the output array (%s) do not divide the blocks (%s):",
                                           "tasks on daemons would write the same chunks"),
                                     paste(chunk, collapse = " x "), paste(blocks$block_shape, collapse = " x ")),
                 array = out$path)
  }
}

# Where a daemon finds the node: the store's location and the node's path,
# or NULL for stores that only this session can reach.
map_location <- function(node, token) {
  st <- node$store
  spec <- st$reopen_spec()
  if (is.null(spec) || !spec[["kind"]] %in% c("local", "http", "s3", "azure")) return(NULL)
  list(location = spec[["location"]], path = node$path, read_only = st$read_only, token = token)
}

map_cache <- new.env(parent = emptyenv())

# The node a task works on: the object itself (in this session), or the
# node opened from its location (on a daemon; kept for the tasks of the same
# call).
map_node <- function(where) {
  if (inherits(where, "zarr_array")) return(where)
  if (!identical(map_cache$token, where$token)) {
    rm(list = ls(map_cache), envir = map_cache)
    map_cache$token <- where$token
  }
  key <- paste(where$location, where$path, where$read_only, sep = "\r")
  node <- map_cache[[key]]
  if (is.null(node)) {
    node <- open_zarr(where$location, read_only = where$read_only)$get_node(where$path)
    if (!inherits(node, "zarr_array"))
      zarr_abort("not_found", sprintf("there is no array '%s' in '%s'", where$path, where$location))
    assign(key, node, envir = map_cache)
  }
  node
}

# One task: read the block, apply fun, write or return the value. Failures
# are returned (not raised) so that the caller raises them with the block.
map_block_task <- function(item, src, dst, fun, args) {
  tryCatch({
    # Opening is not interrupted: a cancellation landing while a daemon first
    # loads the package's classes left them unusable for its next tasks.
    a <- suspendInterrupts(map_node(src))
    sel <- lapply(seq_along(item$start), function(d) seq(item$start[d], item$end[d]))
    x <- a$read(sel)
    idx <- sel
    dn <- a$dimension_names
    if (!is.null(dn)) {
      names(idx) <- ifelse(is.na(dn), "", dn)
      if (is.null(dimnames(x)) && length(dim(x)) == length(dn))
        dimnames(x) <- stats::setNames(vector("list", length(dn)), names(idx))
    }
    attr(x, "index") <- idx
    attr(x, "block") <- item$block
    val <- do.call(fun, c(list(x), args))
    if (is.null(dst)) return(val)
    n <- prod(item$end - item$start + 1)
    if (length(val) != n)
      zarr_abort("value", sprintf("the function returned %s value(s) for a block of %s element(s)",
                                  format(length(val)), format(n)), array = a$path)
    suspendInterrupts(map_node(dst))$write(val, sel)
    NULL
  }, error = function(e) {
    e$call <- NULL
    structure(list(item = item, condition = e), class = "zarr_map_failure")
  })
}

# Raise a task's failure here, naming the block.
map_raise <- function(f, path) {
  e <- f$condition
  item <- f$item
  cls <- if (inherits(e, "condition")) setdiff(class(e), c("zarr_error", "error", "condition")) else character()
  msg <- if (inherits(e, "condition")) conditionMessage(e) else as.character(e)
  where <- paste(sprintf("%.0f:%.0f", item$start, item$end), collapse = ", ")
  cond <- structure(
    class = unique(c("zarr_error_block", cls, "zarr_error", "error", "condition")),
    list(message = sprintf("block [%s] (elements [%s]) of array '%s' failed: %s",
                           paste(item$block, collapse = ", "), where, path, msg),
         call = NULL, kind = "block", array = path, block = item$block, start = item$start,
         end = item$end, parent = e))
  stop(cond)
}

map_progress <- function(n) {
  progress_wanted() && n > 1L && requireNamespace("cli", quietly = TRUE)
}

map_sequential <- function(items, array, out, fun, args) {
  n <- length(items)
  results <- vector("list", n)
  pb <- if (map_progress(n)) cli::cli_progress_bar("Blocks", total = n, .envir = environment())
  for (i in seq_len(n)) {
    v <- map_block_task(items[[i]], array, out, fun, args)
    if (inherits(v, "zarr_map_failure")) map_raise(v, array$path)
    if (!is.null(v)) results[[i]] <- v
    if (!is.null(pb)) cli::cli_progress_update(id = pb, .envir = environment())
  }
  results
}

# Blocks consecutive in grid order, one batch per task: a mirai task costs a
# millisecond or more of dispatch and daemon clean-up (its `cleanup` runs
# after every task), as much as a small block's work. About 8 tasks per
# connected daemon keep the daemons evenly busy and a failure cancels soon.
map_batches <- function(n) {
  conn <- tryCatch(as.integer(mirai::status()$connections), error = function(e) NA_integer_)
  ntask <- min(n, 8L * max(1L, if (length(conn) == 1L && !is.na(conn)) conn else 1L))
  # runs of nearly equal length (cut() refuses to make a single interval)
  split(seq_len(n), ceiling(seq_len(n) * ntask / n))
}

# One task on a daemon: its blocks in order, stopping at the first failure.
map_batch_task <- function(batch, src, dst, fun, args) {
  out <- vector("list", length(batch))
  for (k in seq_along(batch)) {
    v <- map_block_task(batch[[k]], src, dst, fun, args)
    if (inherits(v, "zarr_map_failure")) return(v)
    if (!is.null(v)) out[[k]] <- v
  }
  out
}

# What a daemon runs. A function of this namespace would reach the daemon as
# the namespace's name, which a daemon that cannot load the package (it runs
# without the library this session found the package in) silently turns
# into its global environment; so this one lives in the global environment,
# puts this session's library paths first, loads the package, and only then
# unserializes the task (whose `fun` may itself refer to the package).
map_daemon_task <- function(batch, lib, payload) {
  if (!isNamespaceLoaded("zarr")) {
    .libPaths(unique(c(lib, .libPaths())))
    why <- tryCatch({
      suspendInterrupts(loadNamespace("zarr")) # (a cancelled task must not leave it half loaded)
      NULL
    }, error = function(e) conditionMessage(e))
    if (!is.null(why)) {
      msg <- sprintf("the daemon (process %d on %s) cannot load the zarr package from its library paths %s: %s",
                     Sys.getpid(), Sys.info()[["nodename"]], paste0("'", .libPaths(), "'", collapse = ", "), why)
      cond <- structure(class = c("zarr_error_daemon", "zarr_error", "error", "condition"),
                        list(message = msg, call = NULL, kind = "daemon"))
      return(structure(list(item = batch[[1L]], condition = cond), class = "zarr_map_failure"))
    }
  }
  get("map_daemon_warm", envir = asNamespace("zarr"))()
  p <- unserialize(payload)
  get("map_batch_task", envir = asNamespace("zarr"))(batch, p$src, p$dst, p$fun, p$args)
}
environment(map_daemon_task) <- globalenv()

# A daemon's first task fetches the package's objects from the lazy-load
# database as it uses them. R registers an environment (a class generator,
# a registry such as the codecs') before filling it, so a task cancelled
# (interrupted: another task failed) in the middle of that could leave the
# daemon with a half-filled one for its later tasks (seen once under R CMD
# check: "unsupported codec"). So the first task fetches them all at once
# (about 0.25 s), with interrupts held until it is done.
map_daemon_warm <- function() {
  if (isTRUE(map_daemon_state$warm)) return(invisible())
  suspendInterrupts({
    ns <- environment(map_daemon_warm)
    invisible(mget(ls(ns, all.names = TRUE), envir = ns))
    map_daemon_state$warm <- TRUE
  })
  invisible()
}
map_daemon_state <- new.env(parent = emptyenv())

# The library paths a daemon needs: the one this package was loaded from,
# then this session's (where its dependencies are).
map_library_paths <- function() {
  unique(c(dirname(getNamespaceInfo("zarr", "path")), .libPaths()))
}

map_on_daemons <- function(items, src, dst, fun, args, path) {
  n <- length(items)
  batches <- map_batches(n)
  payload <- serialize(list(src = src, dst = dst, fun = fun, args = args), NULL)
  m <- mirai::mirai_map(lapply(batches, function(b) items[b]), map_daemon_task,
                        .args = list(lib = map_library_paths(), payload = payload))
  tasks <- unclass(m)
  finished <- FALSE
  # Cancel what is left, and wait until the cancellations have landed, so that
  # none reaches the daemons' next tasks.
  on.exit(if (!finished) {
    mirai::stop_mirai(tasks)
    mirai::call_mirai(tasks)
  }, add = TRUE)
  results <- vector("list", n)
  done <- logical(length(tasks))
  pb <- if (map_progress(n)) cli::cli_progress_bar("Blocks", total = n, .envir = environment())
  repeat {
    for (i in which(!done)) {
      if (mirai::unresolved(tasks[[i]])) next
      done[i] <- TRUE
      v <- tasks[[i]]$data
      if (inherits(v, "zarr_map_failure")) map_raise(v, path)
      if (mirai::is_error_value(v)) {
        cls <- attr(v, "condition.class")
        e <- structure(class = if (length(cls)) cls else c("error", "condition"),
                       list(message = if (mirai::is_mirai_error(v)) as.character(v) else
                              sprintf("the daemon failed (%s)", format(v)), call = NULL))
        map_raise(structure(list(item = items[[batches[[i]][1L]]], condition = e), class = "zarr_map_failure"), path)
      }
      results[batches[[i]]] <- v
    }
    if (!is.null(pb)) cli::cli_progress_update(id = pb, set = sum(lengths(batches)[done]), .envir = environment())
    if (all(done)) break
    mirai::race_mirai(tasks[!done])
  }
  finished <- TRUE
  results
}
