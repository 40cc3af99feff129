# A cheaper `$new()` for this package's own R6 classes (issue 27).
#
# R6's generator merges the method lists of every level of inheritance and
# their fields anew for each object it makes (`merge_vectors()`,
# `duplicated()`, recursive field merges), and this costs 0.1-0.4 ms for
# the classes behind a plain open (store, zarr object, group, array, chunk
# grid, data type), a third of `open_zarr(p)[["/x"]][i, j]`. Which
# definition wins at each level depends on the class alone, so it is worked
# out once per class here (a "plan"); each object then only gets its own
# environments and its own copies of the methods bound to them, in one call
# to C (ffi_r6_build(), src/r6_fast.c), laid out
# exactly as R6 lays them out (the public and private environments, one
# enclosing environment per level with `self`, `private` and `super`, the
# `super` binding environments, `.__enclos_env__` and `.__active__`, locked
# method bindings, the class vector, finalizers), so that `super$`, active
# bindings, `clone()` and `print()` behave as with R6's own constructor.
#
# Only generators of this package get it, when the package is installed
# (R/zzz_fast_new.R); subclasses made by other packages (geozarr's) keep
# R6's constructor, which reads the same generator fields. A generator
# changed with `$set()` or put under `$debug()` is noticed (the plans are
# remade, or R6's constructor is used), and so is an R6 of another major
# version than the one whose layout this copies (checked when the package
# is loaded: R6 may be updated after this package is installed).

r6_plans <- new.env(parent = emptyenv())
r6_state <- new.env(parent = emptyenv())
r6_state$layout_known <- FALSE
r6_check_layout <- function() r6_state$layout_known <- utils::packageVersion("R6") < "3.0.0"

# The generators, leaf first, then its ancestors.
r6_lineage <- function(gen) {
  out <- list()
  while (!is.null(gen)) {
    out[[length(out) + 1L]] <- gen
    gen <- gen$get_inherit()
  }
  out
}

# Names of a merge of named lists in which a later definition wins, as R6's
# merge_vectors(): the position in the concatenation of each kept element.
r6_merge_index <- function(name_lists) {
  all <- unlist(name_lists, use.names = FALSE)
  if (!length(all)) return(integer())
  which(!duplicated(all, fromLast = TRUE))
}

r6_make_plan <- function(gen) {
  lineage <- r6_lineage(gen)
  root_first <- rev(lineage)
  n <- length(root_first)
  own <- function(g, what) {
    x <- g[[what]]
    if (is.null(x)) list() else x
  }
  pub <- lapply(root_first, own, "public_methods")
  priv <- lapply(root_first, own, "private_methods")
  act <- lapply(root_first, own, "active")
  # for each level k: the indices into the concatenation of levels 1..k
  idx <- function(lists) lapply(seq_len(n), function(k) r6_merge_index(lapply(lists[seq_len(k)], names)))
  fields <- function(what) {
    x <- list()
    for (g in root_first) if (length(g[[what]])) {
      x <- c(x, g[[what]])
      x <- x[!duplicated(names(x), fromLast = TRUE)]
    }
    x
  }
  plan <- list(
    n = n,
    parent_envs = lapply(root_first, function(g) g$parent_env),
    pub = pub, priv = priv, act = act,
    pub_idx = idx(pub), priv_idx = idx(priv), act_idx = idx(act),
    has_act = vapply(seq_len(n), function(k) any(lengths(act[seq_len(k)]) > 0L), TRUE),
    public_fields = fields("public_fields"), private_fields = fields("private_fields"),
    has_priv = gen$has_private(),
    lock_objects = isTRUE(gen$lock_objects),
    classes = if (isTRUE(gen$class)) c(vapply(lineage, function(g) g$classname, ""), "R6"),
    # whether any level has a finalize() method (r6_finalizers() then looks)
    finalizes = "finalize" %in% c(unlist(lapply(pub, names)), unlist(lapply(priv, names)))
  )
  plan$c <- r6_plan_c(plan)
  plan
}

# The plan as ffi_r6_build() (src/r6_fast.c) takes it: for each level, where
# each method of the merged lists comes from (level and position, 0-based)
# and its name, so that building an object concatenates nothing.
r6_plan_c <- function(plan) {
  n <- plan$n
  origin <- function(lists, idx) {
    lev <- rep(seq_along(lists) - 1L, lengths(lists))
    pos <- unlist(lapply(lengths(lists), function(l) seq_len(l) - 1L))
    nm <- unlist(lapply(lists, names))
    list(lev = as.integer(lev[idx]), pos = as.integer(pos[idx]), names = as.character(nm[idx]),
         syms = lapply(as.character(nm[idx]), as.name))
  }
  merged <- lapply(seq_len(n), function(k) list(
    origin(plan$pub[seq_len(k)], plan$pub_idx[[k]]),
    origin(plan$priv[seq_len(k)], plan$priv_idx[[k]]),
    origin(plan$act[seq_len(k)], plan$act_idx[[k]])))
  fields <- function(x) if (length(x)) x else stats::setNames(list(), character())
  list(as.integer(n), plan$parent_envs, plan$pub, plan$priv, plan$act, merged, as.logical(plan$has_act),
       fields(plan$public_fields), fields(plan$private_fields), isTRUE(plan$has_priv), isTRUE(plan$lock_objects),
       plan$classes, lapply(names(plan$public_fields), as.name), lapply(names(plan$private_fields), as.name))
}

r6_plan <- function(gen, key) {
  plan <- r6_plans[[key]]
  if (is.null(plan)) {
    plan <- r6_make_plan(gen)
    assign(key, plan, envir = r6_plans)
  }
  plan
}

# The finalizers R6 registers, for an initialised object.
r6_finalizers <- function(obj) {
  if (is.function(.subset2(obj, "finalize"))) {
    fin <- function(e) .subset2(e, "finalize")()
    environment(fin) <- baseenv()
    reg.finalizer(obj, fin, onexit = TRUE)
  }
  priv <- .subset2(obj, ".__enclos_env__")$private
  if (is.environment(priv) && is.function(.subset2(priv, "finalize"))) {
    fin <- function(e) .subset2(e, ".__enclos_env__")$private$finalize()
    environment(fin) <- baseenv()
    reg.finalizer(obj, fin, onexit = TRUE)
  }
  invisible()
}

# Give a generator of this package the cheaper constructor (R6's own stays
# reachable, for a generator under $debug()).
r6_use_fast_new <- function(gen) {
  if (!isTRUE(gen$portable) || !is.null(gen$.__r6_new__)) return(invisible())
  key <- gen$classname
  r6_new <- gen$new
  gen$.__r6_new__ <- r6_new
  # a method or field added with $set() (here or to a superclass) changes
  # the plans: they are remade
  r6_set <- gen$set
  gen$set <- function(...) {
    rm(list = ls(r6_plans, all.names = TRUE), envir = r6_plans)
    r6_set(...)
  }
  gen$new <- function(...) {
    if (length(gen$debug_names) || !r6_state$layout_known) return(r6_new(...))
    plan <- r6_plan(gen, key)
    obj <- .Call(ffi_r6_build, plan$c)
    init <- .subset2(obj, "initialize")
    if (is.function(init)) init(...)
    else if (...length()) stop("Called new() with arguments, but there is no initialize method.")
    if (plan$finalizes) r6_finalizers(obj)
    obj
  }
  invisible()
}

# Every class of this package (the subclasses other packages make keep
# R6's own constructor): R6's constructor sets the environment of each
# method, which on R < 4.5 drops its byte code, so that the methods of the
# classes it built (codecs, array builders, stores other than local and
# memory ones, conventions, domains) ran uncompiled, up to three times
# slower. The generators get the cheaper constructor when the package is
# installed, so that they are saved with it: giving it to them when the
# package is loaded fetched all 55 from the lazy-load database, whose
# methods (230,000 R objects) then made every full garbage collection of
# the session half as slow again. A test checks that the list names every
# class.
r6_class_names <- c(
  "array_builder", "chunk_grid_rectilinear", "chunk_grid_regular", "zarr", "zarr_array", "zarr_azurestore",
  "zarr_codec", "zarr_codec_bitround", "zarr_codec_blosc", "zarr_codec_bytes", "zarr_codec_cast_value",
  "zarr_codec_conditional", "zarr_codec_crc32c", "zarr_codec_elementwise", "zarr_codec_gzip",
  "zarr_codec_n5_default", "zarr_codec_numcodecs", "zarr_codec_packbits", "zarr_codec_r", "zarr_codec_reshape",
  "zarr_codec_scale_offset", "zarr_codec_sharding", "zarr_codec_transpose", "zarr_codec_vlen", "zarr_codec_zfp",
  "zarr_codec_zstd", "zarr_conv_ref", "zarr_conv_uom", "zarr_convention", "zarr_convention_multiscales",
  "zarr_convention_proj", "zarr_convention_ref", "zarr_convention_spatial", "zarr_convention_uom",
  "zarr_data_type", "zarr_dataset_class", "zarr_domain", "zarr_extension", "zarr_group", "zarr_httpstore",
  "zarr_icechunksession", "zarr_icechunkstore", "zarr_localstore", "zarr_memorystore", "zarr_node",
  "zarr_object", "zarr_ome_domain", "zarr_ome_image", "zarr_ome_level", "zarr_refstore", "zarr_s3store",
  "zarr_store", "zarr_vectors_domain", "zarr_vectors_store", "zarr_zipstore")

r6_fast_classes <- function() unname(mget(r6_class_names, envir = environment(r6_fast_classes)))
