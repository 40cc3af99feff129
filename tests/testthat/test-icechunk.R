# Icechunk repositories (spec 1 and 2) written by the official implementation
# (tools/icechunk, @earthmover/icechunk 2.2.2 with zarrita 0.7.5) must read
# equal to what that implementation reads back (expected.json, see
# helper-icechunk.R): every array and group at every branch, tag and
# snapshot; the history, branches and tags; locally, over HTTP, from S3 and
# from Azure Blob storage. Corrupted copies and stale virtual chunks must
# give classed errors naming the object.

ice_store <- function(location, ...) zarr_icechunkstore$new(location, ...)

# The snapshot a zarr object on a repository reads.
ice_head <- function(z) z$store$snapshot_id

# The ref of kind/name in a list of refs of expected.json.
ice_find_ref <- function(refs, kind, name) {
  Filter(function(r) r$kind == kind && r$name == name, refs)[[1]]
}

ice_open <- function(location, ref = NULL, ...) {
  zarr$new(do.call(ice_store, c(list(location), if (!is.null(ref)) icechunk_ref_args(ref), list(...))))
}

# Compare what `z` (a zarr object on the repository) holds with one ref of
# expected.json. `what` names the case in failure messages.
ice_expect_ref <- function(z, ref, what, all_nodes = TRUE) {
  if (all_nodes) {
    # the same hierarchy: no node more, none less
    kinds <- vapply(ref$nodes, function(n) n$type %||% "?", "")
    info <- sprintf("%s, %s %s", what, ref$kind, ref$name)
    expect_identical(sort(z$arrays), sort(names(kinds)[kinds == "array"]), info = info)
    expect_identical(sort(z$groups), sort(names(kinds)[kinds == "group"]), info = info)
  }
  for (p in names(ref$nodes)) {
    node <- ref$nodes[[p]]
    label <- sprintf("%s, %s %s, node %s", what, ref$kind, ref$name, p)
    if (!is.null(node$error) && is.null(node$type)) next # the oracle could not open it: corrupted copies only
    n <- z[[p]]
    expect_false(is.null(n), info = label)
    attrs <- node$attributes %||% list()
    expect_equal(n$attributes %||% list(), attrs, info = label)
    if (identical(node$type, "group")) {
      expect_s3_class(n, "zarr_group")
      next
    }
    expect_s3_class(n, "zarr_array")
    expect_identical(as.integer(n$shape), as.integer(unlist(node$shape)), info = label)
    expect_identical(n$data_type$data_type, node$dtype, info = label)
    expect_equal(n$metadata$fill_value, node$fill_value, info = label)
    if (!is.null(node$error)) next
    x <- n$read(fill_as_na = FALSE)
    want <- icechunk_expected_array(node)
    expect_identical(dim(x) %||% length(x), dim(want) %||% length(want), info = label)
    expect_equal(as.vector(x), as.vector(want), tolerance = 0, info = label)
  }
}

# Every ref of repository `name` of expected.json, opened through `location`.
ice_expect_repo <- function(ice, name, location, what = name, kinds = c("branch", "tag", "snapshot")) {
  rep <- ice$expected$repos[[name]]
  for (ref in rep$refs) {
    if (!ref$kind %in% kinds) next
    z <- ice_open(location, ref)
    expect_identical(ice_head(z), ref$snapshot, info = sprintf("%s %s %s", what, ref$kind, ref$name))
    ice_expect_ref(z, ref, what)
  }
}

test_that("Icechunk repositories read equal to the official implementation at every ref (spec 1 and 2)", {
  ice <- icechunk_oracle()
  for (name in c("v1", "v2")) {
    rep <- ice$expected$repos[[name]]
    expect_setequal(vapply(rep$refs, `[[`, "", "kind"), c("branch", "tag", "snapshot"))
    ice_expect_repo(ice, name, file.path(ice$dir, name))
  }
})

test_that("inline, native, virtual (file:// and http://) and sharded chunks read equal to the official implementation", {
  ice <- icechunk_oracle()
  for (name in c("virtual_v1", "virtual_v2", "virtual_compressed")) {
    main <- ice_find_ref(ice$expected$repos[[name]]$refs, "branch", "main")
    # the oracle read every array: nothing here is an expected failure
    expect_true(all(vapply(main$nodes, function(n) is.null(n$error), TRUE)))
    ice_expect_repo(ice, name, file.path(ice$dir, name))
  }
  expect_setequal(names(ice_find_ref(ice$expected$repos$virtual_v2$refs, "branch", "main")$nodes),
                  c("/", "/mixed", "/vfile", "/vhttp"))
  # the chunk refs of /split are spread over several manifests
  expect_gte(length(list.files(file.path(ice$dir, "v2", "manifests"))), 9L)
  # partial reads of a sharded array stored as native chunks, and of a
  # virtual one: only some inner chunks / byte ranges
  v2 <- ice_find_ref(ice$expected$repos$v2$refs, "branch", "main")
  z <- ice_open(file.path(ice$dir, "v2"))
  want <- icechunk_expected_array(v2$nodes[["/sharded"]])
  expect_identical(z[["/sharded"]][30:45, c(1, 64)], want[30:45, c(1, 64)])
  # the empty inner chunk: rows 41:48, columns 9:16
  expect_identical(z[["/sharded"]]$read(list(c(41, 48), c(9, 16)), fill_as_na = FALSE), matrix(-1L, 8, 8))
  expect_true(all(is.na(z[["/sharded"]][41:48, 9:16])))
  expect_identical(z[["/sharded"]][40:49, 8:17][-c(1, 10), -c(1, 10)], matrix(NA_integer_, 8, 8))
  vz <- ice_open(file.path(ice$dir, "virtual_v2"))
  vwant <- icechunk_expected_array(ice_find_ref(ice$expected$repos$virtual_v2$refs, "branch", "main")$nodes[["/vhttp"]])
  expect_identical(vz[["/vhttp"]]$read(list(c(2, 3), c(3, 6)), fill_as_na = FALSE), vwant[2:3, 3:6])
  # neighbouring virtual ranges of one file are merged (vhttp: 3 adjacent
  # chunks; vmany: 16 chunks 16 bytes apart), one request allowed for
  # checking the file's modification time
  for (case in list(c("virtual_v2", "/vhttp", "3"), c("virtual_compressed", "/vmany", "4"))) {
    a <- ice_open(file.path(ice$dir, case[1]))[[case[2]]]
    ice$server$reset()
    a$read()
    log <- ice$server$stats()$log
    n <- sum(log$path == "/http/target.bin")
    expect_gte(n, 1L)
    expect_lte(n, as.integer(case[3]), label = paste(case[2], "requests"))
  }
  # the missing chunk (1, 1) of vfile reads as the fill value -7
  expect_identical(vz[["/vfile"]]$read(list(c(3, 4), c(5, 8)), fill_as_na = FALSE), matrix(-7L, 2, 4))
})

test_that("open_zarr() recognises an Icechunk repository and takes branch, tag and snapshot", {
  ice <- icechunk_oracle()
  path <- file.path(ice$dir, "v2")
  rep <- ice$expected$repos$v2
  for (ref in rep$refs) {
    z <- do.call(open_zarr, c(list(path), icechunk_ref_args(ref)))
    expect_s3_class(z$store, "zarr_icechunkstore")
    ice_expect_ref(z, ref, "open_zarr")
  }
  # no ref: the main branch
  main <- ice_find_ref(rep$refs, "branch", "main")
  z <- open_zarr(path)
  expect_identical(ice_head(z), main$snapshot)
  expect_identical(z$root$attributes$title, "icechunk oracle, third commit")
  expect_false("/bool" %in% z$arrays) # deleted by main's last commit, still in tag v1
  expect_true("/bool" %in% open_zarr(path, tag = "v1")$arrays)
  # dev moved /dev_only to /grp/dev_only_moved (spec 2 moves keep chunks)
  dev <- open_zarr(path, branch = "dev")
  expect_false("/dev_only" %in% dev$arrays)
  expect_identical(dev[["/grp/dev_only_moved"]][], c(0.5, -1.25, 1e10))
  expect_true("/dev_only" %in% open_zarr(file.path(ice$dir, "v1"), branch = "dev")$arrays)
  expect_identical(ice_head(open_zarr(paste0("file://", path), branch = "dev")),
                   ice_find_ref(rep$refs, "branch", "dev")$snapshot)
})

test_that("history, branches and tags equal the official implementation's", {
  ice <- icechunk_oracle()
  for (name in c("v1", "v2", "virtual_v2")) {
    rep <- ice$expected$repos[[name]]
    path <- file.path(ice$dir, name)
    st <- ice_store(path)
    expect_identical(st$branches(), unlist(rep$branches))
    expect_identical(st$tags(), as.character(unlist(rep$tags)))
    for (b in unlist(rep$branches)) {
      want <- rep$history[[b]]
      for (h in list(icechunk_history(path, branch = b), ice_store(path, branch = b)$history())) {
        expect_s3_class(h, "data.frame")
        expect_identical(h$snapshot_id, vapply(want, `[[`, "", "id"), info = paste(name, b))
        expect_identical(h$message, vapply(want, `[[`, "", "message"), info = paste(name, b))
        expect_s3_class(h$time, "POSIXct")
        expect_identical(attr(h$time, "tzone"), "UTC")
        # to the microsecond, as Icechunk records them
        expect_lt(max(abs(as.numeric(h$time) - vapply(want, `[[`, 0, "epoch"))), 2e-6)
        # newest first
        expect_true(all(diff(as.numeric(h$time)) <= 0))
      }
    }
  }
  # the default branch is main; a tag's history starts at its snapshot
  path <- file.path(ice$dir, "v2")
  rep <- ice$expected$repos$v2
  expect_identical(icechunk_history(path)$snapshot_id, vapply(rep$history$main, `[[`, "", "id"))
  # the history of a store is that of the snapshot it opened
  expect_identical(ice_store(path, tag = "v1")$history()$snapshot_id,
                   vapply(rep$history[["tag:v1"]], `[[`, "", "id"))
  first <- ice_find_ref(rep$refs, "snapshot", rep$history$main[[3]]$id)
  expect_identical(ice_store(path, snapshot = first$name)$history()$snapshot_id,
                   vapply(rep$history$main[3:4], `[[`, "", "id"))
  expect_identical(tail(icechunk_history(path)$message, 1), "Repository initialized")
  # main's last commit was amended: the snapshot it replaced is out of the
  # history, yet opens by its id (and reads as the oracle read it)
  snaps <- Filter(function(r) r$kind == "snapshot", rep$refs)
  expect_length(snaps, 2L)
  expect_false(snaps[[2]]$name %in% icechunk_history(path)$snapshot_id)
  expect_match(rep$history$main[[1]]$message, "amended")
  expect_identical(ice_head(ice_open(path, snaps[[2]])), snaps[[2]]$name)
})

test_that("Icechunk stores are read-only", {
  ice <- icechunk_oracle()
  path <- file.path(ice$dir, "v2")
  st <- ice_store(path)
  expect_true(st$read_only)
  expect_false(st$supports_writes)
  expect_error(st$set("x/zarr.json", charToRaw("{}")), class = "zarr_error_read_only")
  expect_error(st$erase("float64/zarr.json"), class = "zarr_error")
  z <- open_zarr(path)
  expect_error(z[["/float64"]]$write(matrix(0, 2, 2), list(1:2, 1:2)), class = "zarr_error_read_only")
  expect_error(z[["/grp"]]$set_attribute("x", 1), class = "zarr_error_read_only")
  # nothing was written into the repository
  before <- tools::md5sum(list.files(path, recursive = TRUE, full.names = TRUE))
  try(st$set("a", as.raw(1)), silent = TRUE)
  expect_identical(tools::md5sum(list.files(path, recursive = TRUE, full.names = TRUE)), before)
})

test_that("unknown branches, tags and snapshots are zarr_error_not_found", {
  ice <- icechunk_oracle()
  path <- file.path(ice$dir, "v2")
  expect_error(ice_store(path, branch = "nope"), class = "zarr_error_not_found")
  expect_error(ice_store(path, tag = "nope"), class = "zarr_error_not_found")
  expect_error(ice_store(path, snapshot = "AAAAAAAAAAAAAAAAAAAA"), class = "zarr_error_not_found")
  expect_error(open_zarr(path, branch = "nope"), class = "zarr_error_not_found")
  expect_error(icechunk_history(path, branch = "nope"), class = "zarr_error_not_found")
  # spec 1 keeps refs as objects of their own
  expect_error(ice_store(file.path(ice$dir, "v1"), tag = "nope"), class = "zarr_error_not_found")
  expect_error(ice_store(file.path(ice$dir, "v1"), branch = "nope"), class = "zarr_error_not_found")
})

test_that("virtual chunks whose target changed after the commit are zarr_error_icechunk_stale", {
  ice <- icechunk_oracle()
  rep <- ice$expected$repos$stale
  main <- ice_find_ref(rep$refs, "branch", "main")
  # the official implementation refuses the file:// one; its http:// check is
  # If-Unmodified-Since, which the test server ignores (it reads the new
  # bytes), but the server's Last-Modified says the file changed
  expect_match(main$nodes[["/vfile"]]$error, "checksum")
  z <- ice_open(file.path(ice$dir, "stale"))
  for (p in c("/vfile", "/vhttp")) {
    e <- tryCatch(z[[p]]$read(), error = identity)
    expect_true(inherits(e, "zarr_error_icechunk_stale") && inherits(e, "zarr_error_icechunk"),
                info = paste(p, if (inherits(e, "error")) conditionMessage(e) else "(no error)"))
    if (inherits(e, "error")) expect_match(conditionMessage(e), "stale[.]bin", info = p)
  }
  # a virtual chunk whose file does not exist: an error, but not a stale one
  expect_false(is.null(main$nodes[["/vmissing"]]$error))
  e <- tryCatch(z[["/vmissing"]]$read(), error = identity)
  expect_true(inherits(e, "zarr_error") && !inherits(e, "zarr_error_icechunk_stale"),
              info = if (inherits(e, "error")) conditionMessage(e) else "(no error)")
})

test_that("an Icechunk repository served over HTTP reads the same", {
  ice <- icechunk_oracle()
  # a repository on a server reads local files (file:// virtual chunks) only when allowed
  zv <- open_zarr(paste0(ice$url, "/virtual_v2"))
  expect_error(zv[["/mixed"]]$read(), class = "zarr_error_store", regexp = "local file")
  withr::local_options(zarr.reference_local_targets = TRUE)
  for (name in c("v2", "virtual_v2")) ice_expect_repo(ice, name, paste0(ice$url, "/", name), paste(name, "over HTTP"))
  # spec 1 over HTTP: refs are found by name (no listing)
  ice_expect_repo(ice, "v1", paste0(ice$url, "/v1"), "v1 over HTTP")
  expect_identical(ice_store(paste0(ice$url, "/v2"))$branches(), c("dev", "main"))
  expect_identical(ice_store(paste0(ice$url, "/v2"))$history()$snapshot_id,
                   vapply(ice$expected$repos$v2$history$main, `[[`, "", "id"))
  z <- open_zarr(paste0(ice$url, "/v2"), tag = "v1")
  expect_s3_class(z$store, "zarr_icechunkstore")
  # recognised without a ref too (spec 2: the repo object; spec 1: main's ref)
  for (name in c("v1", "v2")) {
    z <- open_zarr(paste0(ice$url, "/", name))
    expect_s3_class(z$store, "zarr_icechunkstore")
    expect_identical(ice_head(z), ice_find_ref(ice$expected$repos[[name]]$refs, "branch", "main")$snapshot)
  }
})

test_that("an Icechunk repository in S3 reads the same", {
  ice <- icechunk_oracle()
  s3 <- s3_server()
  for (name in c("v1", "v2", "virtual_v2")) s3_upload_dir(s3$store("private", paste0("ice/", name)), file.path(ice$dir, name))
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key, AWS_SECRET_ACCESS_KEY = s3$secret,
                        AWS_REGION = "us-east-1"))
  expect_error(open_zarr("s3://private/ice/virtual_v2")[["/mixed"]]$read(), class = "zarr_error_store", regexp = "local file")
  withr::local_options(zarr.reference_local_targets = TRUE)
  for (name in c("v1", "v2", "virtual_v2")) {
    loc <- paste0("s3://private/ice/", name)
    ice_expect_repo(ice, name, loc, paste(name, "in S3"))
    rep <- ice$expected$repos[[name]]
    st <- ice_store(loc)
    expect_identical(st$branches(), unlist(rep$branches))
    expect_identical(st$tags(), as.character(unlist(rep$tags)))
    expect_identical(st$history()$snapshot_id, vapply(rep$history$main, `[[`, "", "id"))
  }
  expect_s3_class(open_zarr("s3://private/ice/v2", branch = "dev")$store, "zarr_icechunkstore")
  expect_s3_class(open_zarr("s3://private/ice/v1")$store, "zarr_icechunkstore")
})

test_that("an Icechunk repository in Azure Blob storage (Azurite) reads the same", {
  ice <- icechunk_oracle()
  az <- azure_server()
  for (name in c("v1", "v2")) s3_upload_dir(az$store("private", paste0("ice/", name)), file.path(ice$dir, name))
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = paste0("DefaultEndpointsProtocol=http;AccountName=", az$account,
                                                               ";BlobEndpoint=", az$endpoint, ";AccountKey=", az$key))
  for (name in c("v1", "v2")) {
    loc <- paste0("az://private/ice/", name)
    ice_expect_repo(ice, name, loc, paste(name, "in Azure"))
    rep <- ice$expected$repos[[name]]
    expect_identical(ice_store(loc)$branches(), unlist(rep$branches))
    expect_identical(ice_store(loc)$tags(), unlist(rep$tags))
    expect_s3_class(open_zarr(loc)$store, "zarr_icechunkstore")
  }
})

# An error about a damaged repository names the object.
ice_expect_names_object <- function(e, label) {
  if (inherits(e, "error"))
    expect_match(conditionMessage(e), "snapshots/|manifests/|chunks/|'repo'|refs/", info = label)
}

# Open the ref and read every node the oracle lists (values too): the
# first error, or NULL.
ice_read_all <- function(location, ref) {
  tryCatch({
    z <- ice_open(location, ref)
    for (p in names(ref$nodes)) {
      n <- z[[p]]
      if (inherits(n, "zarr_array")) n$read()
    }
    NULL
  }, error = function(e) e)
}

test_that("corrupted repositories give zarr_error_icechunk (and whatever is intact still reads)", {
  ice <- icechunk_oracle()
  corrupt <- Filter(function(r) isTRUE(r$corrupted), ice$expected$repos)
  expect_gte(length(corrupt), 12L)
  for (name in names(corrupt)) {
    rep <- corrupt[[name]]
    path <- file.path(ice$dir, name)
    must <- unlist(rep$must_fail)
    for (ref in rep$refs) {
      tag <- paste0(ref$kind, ":", ref$name)
      label <- paste(name, tag)
      if (tag %in% must) {
        # every node of the intact repository at this ref, values included
        intact <- ice_find_ref(ice$expected$repos[[paste0("v", rep$spec)]]$refs, ref$kind, ref$name)
        e <- ice_read_all(path, intact)
        expect_true(inherits(e, "zarr_error_icechunk"),
                    info = paste(label, if (inherits(e, "error")) conditionMessage(e) else "(no error)"))
        ice_expect_names_object(e, label)
        next
      }
      if (!is.null(ref$error)) {
        # the oracle failed where a reader need not: if this one fails, classed
        e <- ice_read_all(path, list(kind = ref$kind, name = ref$name, nodes = list()))
        if (!is.null(e)) expect_true(inherits(e, "zarr_error_icechunk"), info = paste(label, conditionMessage(e)))
        next
      }
      z <- tryCatch(ice_open(path, ref), error = function(e) e)
      if (inherits(z, "error")) {
        # a reader may load more when opening than the oracle did (every
        # manifest, say); something it could not read must be broken
        expect_true(any(vapply(ref$nodes, function(n) !is.null(n$error), TRUE)), info = label)
        expect_s3_class(z, "zarr_error_icechunk")
        ice_expect_names_object(z, label)
        next
      }
      for (p in names(ref$nodes)) {
        node <- ref$nodes[[p]]
        if (is.null(node$error)) next
        e <- tryCatch({
          n <- z[[p]]
          if (inherits(n, "zarr_array")) n$read()
          NULL
        }, error = function(e) e)
        expect_true(inherits(e, "zarr_error_icechunk") && !inherits(e, "zarr_error_icechunk_stale"),
                    info = paste(label, p, if (inherits(e, "error")) conditionMessage(e) else "(no error)"))
        ice_expect_names_object(e, paste(label, p))
      }
      # the nodes the oracle read are read equal
      ok <- ref
      ok$nodes <- Filter(function(n) is.null(n$error), ref$nodes)
      ice_expect_ref(z, ok, name, all_nodes = FALSE)
    }
  }
})
