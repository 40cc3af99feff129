# Writing Icechunk repositories (spec 2, local): what R writes, the official
# implementation (tools/icechunk/read_repo.mjs) reads value for value, and
# R reads what it wrote on top.

ic_def <- function(type, shape, chunks) {
  d <- define_array(type, shape)
  d$chunk_shape <- chunks
  d
}

# The R value of an array node of read_repo.mjs's output.
ic_oracle_values <- function(node) {
  icechunk_expected_array(list(values = node$values, dtype = node$dtype, shape = node$shape))
}

ic_new_repo <- function(env = parent.frame()) {
  dir <- withr::local_tempdir("icw-", .local_envir = env)
  unlink(dir, recursive = TRUE)
  dir
}

test_that("a repository R creates and commits to reads back in the official implementation", {
  skip_without_icechunk_oracle()
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  expect_s3_class(z$store, "zarr_icechunksession")
  expect_identical(z$store$branch, "main")
  expect_identical(z$store$snapshot_id, "1CECHNKREP0F1RSTCMT0")
  z$root$set_attribute("title", "written by R")
  small <- matrix(1:12, 4)
  a <- z$root$add_array("small", ic_def("int32", c(4, 3), c(2, 3))) # chunks inline
  a[] <- small
  g <- z$root$add_group("grp")
  g$set_attribute("n", 7L)
  big <- matrix(seq(0.5, by = 1.25, length.out = 2000), 200)
  b <- g$add_array("big", ic_def("float64", c(200, 10), c(100, 10))) # chunks native
  b[] <- big
  d <- ic_def("uint16", c(6, 6), c(3, 3))
  d$fill_value <- 0
  f <- g$add_array("fill", d) # two of four chunks written
  f[1:3, 1:3] <- matrix(1:9, 3)
  f[4:6, 4:6] <- matrix(11:19, 3)
  expect_true(z$store$has_changes)
  id <- z$store$commit("first commit")
  expect_match(id, "^[0-9A-HJKMNP-TV-Z]{20}$")
  expect_false(z$store$has_changes)
  expect_identical(z$store$snapshot_id, id)
  expect_true(length(list.files(file.path(dir, "chunks"))) >= 2L) # the big chunks
  got <- icechunk_read_repo(dir)
  expect_identical(unlist(got$branches), "main")
  h <- got$history$main
  expect_identical(vapply(h, `[[`, "", "id"), c(id, "1CECHNKREP0F1RSTCMT0"))
  expect_identical(vapply(h, `[[`, "", "message"), c("first commit", "Repository initialized"))
  nodes <- got$refs[["branch:main"]]$nodes
  expect_setequal(names(nodes), c("/", "/small", "/grp", "/grp/big", "/grp/fill"))
  expect_identical(nodes[["/"]]$attributes$title, "written by R")
  expect_identical(nodes[["/grp"]]$attributes$n, 7L)
  expect_identical(ic_oracle_values(nodes[["/small"]]), small)
  expect_identical(ic_oracle_values(nodes[["/grp/big"]]), big)
  fv <- matrix(0L, 6, 6)
  fv[1:3, 1:3] <- 1:9
  fv[4:6, 4:6] <- 11:19
  expect_identical(ic_oracle_values(nodes[["/grp/fill"]]), fv)
  # and the package's reader, on a fresh open
  r <- open_zarr(dir, branch = "main")
  expect_identical(r[["/small"]][], small)
  expect_identical(r[["/grp/big"]][], big)
  expect_identical(r[["/grp/fill"]][], fv)
  h2 <- icechunk_history(dir)
  expect_identical(h2$snapshot_id, c(id, "1CECHNKREP0F1RSTCMT0"))
})

test_that("commits follow each other, on repositories R or the official implementation wrote", {
  skip_without_icechunk_oracle()
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  a <- z$root$add_array("v", ic_def("int32", c(10, 4), c(5, 4)))
  a[] <- matrix(1:40, 10)
  first <- z$store$commit("one")
  a[1:5, 1] <- -(1:5) # one chunk rewritten, the other kept
  w <- z$root$add_array("w", ic_def("float64", c(3, 3), c(3, 3)))
  w[] <- diag(3)
  second <- z$store$commit("two")
  z$store$create_tag("one", first)
  # the official implementation commits on top of that
  got <- icechunk_read_repo(dir, write = c("main", "/from_icechunk", "3"))
  # and reads the first snapshot as it was
  expect_identical(got$refs[["tag:one"]]$snapshot, first)
  expect_identical(ic_oracle_values(got$refs[["tag:one"]]$nodes[["/v"]]), matrix(1:40, 10))
  expect_null(got$refs[["tag:one"]]$nodes[["/w"]])
  h <- vapply(got$history$main, `[[`, "", "id")
  expect_identical(h[-1L], c(second, first, "1CECHNKREP0F1RSTCMT0"))
  want <- matrix(1:40, 10)
  want[1:5, 1] <- -(1:5)
  nodes <- got$refs[["branch:main"]]$nodes
  expect_identical(ic_oracle_values(nodes[["/v"]]), want)
  expect_identical(ic_oracle_values(nodes[["/w"]]), diag(3))
  expect_identical(nodes[["/from_icechunk"]]$attributes$n, 3L)
  # R commits on top of the official implementation's commit
  z2 <- open_zarr(dir, branch = "main", read_only = FALSE)
  expect_identical(z2$store$snapshot_id, h[1L])
  expect_identical(z2[["/from_icechunk"]]$attributes$written_by, "icechunk")
  z2[["/v"]][10, 4] <- 1000L
  z2[["/from_icechunk"]]$set_attribute("seen_by", "R")
  third <- z2$store$commit("three")
  got <- icechunk_read_repo(dir)
  expect_identical(vapply(got$history$main, `[[`, "", "id")[1:2], c(third, h[1L]))
  want[10, 4] <- 1000L
  nodes <- got$refs[["branch:main"]]$nodes
  expect_identical(ic_oracle_values(nodes[["/v"]]), want)
  expect_identical(nodes[["/from_icechunk"]]$attributes$seen_by, "R")
  # every snapshot still reads as it was
  expect_identical(open_zarr(dir, snapshot = first)[["/v"]][], matrix(1:40, 10))
  expect_null(open_zarr(dir, snapshot = first)[["/w"]])
})

test_that("R commits on top of a repository the official implementation wrote", {
  ice <- icechunk_oracle()
  dir <- ic_new_repo()
  dir.create(dir)
  file.copy(list.files(file.path(ice$dir, "v2"), full.names = TRUE), dir, recursive = TRUE)
  before <- ice$expected$repos$v2
  main_before <- Filter(function(r) r$kind == "branch" && r$name == "main", before$refs)[[1L]]
  z <- open_zarr(dir, branch = "main", read_only = FALSE)
  z$root$add_group("added_by_r")$set_attribute("k", "v")
  old <- z[["/float64"]][]
  z[["/float64"]][1, 1] <- 99.5
  id <- z$store$commit("R was here")
  got <- icechunk_read_repo(dir)
  expect_setequal(unlist(got$branches), unlist(before$branches))
  expect_setequal(unlist(got$tags), unlist(before$tags))
  expect_identical(got$history$main[[1L]]$id, id)
  expect_identical(got$history$main[[2L]]$id, main_before$snapshot)
  nodes <- got$refs[["branch:main"]]$nodes
  expect_identical(nodes[["/added_by_r"]]$attributes$k, "v")
  want <- old
  want[1, 1] <- 99.5
  expect_identical(ic_oracle_values(nodes[["/float64"]]), want)
  # the other arrays are as the official implementation wrote them
  for (p in setdiff(names(main_before$nodes), "/float64")) {
    n <- main_before$nodes[[p]]
    if (identical(n$type, "array") && is.null(n$error))
      expect_identical(ic_oracle_values(nodes[[p]]), icechunk_expected_array(n), info = p)
  }
  # the other branch and tag did not move
  for (r in Filter(function(r) r$kind != "snapshot" && !(r$kind == "branch" && r$name == "main"), before$refs))
    expect_identical(got$refs[[paste0(r$kind, ":", r$name)]]$snapshot, r$snapshot, info = r$name)
})

test_that("branches and tags made in R are seen by the official implementation", {
  skip_without_icechunk_oracle()
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  a <- z$root$add_array("x", ic_def("int32", 4, 2))
  a[] <- 1:4
  first <- z$store$commit("one")
  z$store$create_tag("v1")
  z$store$create_branch("dev")
  a[] <- 5:8
  second <- z$store$commit("two")
  expect_error(z$store$create_tag("v1"), class = "zarr_error_exists")
  expect_error(z$store$reset_branch("nope", first), class = "zarr_error_not_found")
  expect_error(z$store$create_branch("b2", "AAAAAAAAAAAAAAAAAAAA"), class = "zarr_error_not_found")
  got <- icechunk_read_repo(dir)
  expect_identical(unlist(got$branches), c("dev", "main"))
  expect_identical(unlist(got$tags), "v1")
  expect_identical(got$refs[["tag:v1"]]$snapshot, first)
  expect_identical(got$refs[["branch:dev"]]$snapshot, first)
  expect_identical(got$refs[["branch:main"]]$snapshot, second)
  expect_identical(ic_oracle_values(got$refs[["tag:v1"]]$nodes[["/x"]]), 1:4)
  expect_identical(ic_oracle_values(got$refs[["branch:main"]]$nodes[["/x"]]), 5:8)
  # a commit to dev leaves main alone
  d <- open_zarr(dir, branch = "dev", read_only = FALSE)
  d[["/x"]][1] <- 100L
  on_dev <- d$store$commit("on dev")
  # resetting main moves it back, and the session with it
  z$store$reset_branch("main", first)
  expect_identical(z$store$snapshot_id, first)
  got <- icechunk_read_repo(dir)
  expect_identical(got$refs[["branch:main"]]$snapshot, first)
  expect_identical(vapply(got$history$dev, `[[`, "", "id"), c(on_dev, first, "1CECHNKREP0F1RSTCMT0"))
  expect_identical(ic_oracle_values(got$refs[["branch:dev"]]$nodes[["/x"]]), c(100L, 2:4))
  expect_identical(open_zarr(dir, branch = "main")[["/x"]][], 1:4)
})

test_that("a second session committing to a moved branch gets a conflict and loses nothing", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  x <- z$root$add_array("x", ic_def("int32", 4, 4))
  x[] <- 1:4
  base <- z$store$commit("base")
  s1 <- open_zarr(dir, branch = "main", read_only = FALSE)
  s2 <- open_zarr(dir, branch = "main", read_only = FALSE)
  s1[["/x"]][1] <- 10L
  s2[["/x"]][2] <- 20L
  s2$root$set_attribute("by", "s2")
  won <- s1$store$commit("s1")
  err <- expect_error(s2$store$commit("s2"), class = "zarr_error_conflict")
  expect_match(conditionMessage(err), "branch 'main'", fixed = TRUE)
  # the first commit is intact; the second session still has its changes
  expect_identical(icechunk_history(dir)$snapshot_id[1:2], c(won, base))
  expect_identical(open_zarr(dir, branch = "main")[["/x"]][], c(10L, 2:4))
  expect_true(s2$store$has_changes)
  expect_identical(s2[["/x"]][], c(1L, 20L, 3L, 4L))
  expect_identical(s2$root$attributes$by, "s2")
  expect_false(dir.exists(file.path(dir, "repo.lock")))
  # a commit to another branch is no conflict
  s3 <- open_zarr(dir, branch = "main", read_only = FALSE)
  s3$store$create_branch("side", base)
  s3[["/x"]][3] <- 30L
  expect_no_error(s3$store$commit("s3"))
  expect_identical(open_zarr(dir, branch = "main")[["/x"]][], c(10L, 2L, 30L, 4L))
  if (nzchar(icechunk_tool_dir())) {
    got <- tryCatch(icechunk_read_repo(dir), condition = function(e) NULL)
    if (!is.null(got)) expect_identical(ic_oracle_values(got$refs[["branch:main"]]$nodes[["/x"]]), c(10L, 2L, 30L, 4L))
  }
})

test_that("writing refuses what it cannot do with classed errors", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  expect_error(zarr_icechunk_create(dir), class = "zarr_error_exists")
  expect_error(zarr_icechunk_create("https://example.org/repo"), class = "zarr_error_unsupported")
  empty <- open_zarr(dir, branch = "main", read_only = FALSE)
  expect_error(empty$store$commit("nothing"), class = "zarr_error_icechunk")
  expect_error(z$store$commit(NA_character_), class = "zarr_error_argument")
  expect_error(open_zarr(dir, branch = "nope", read_only = FALSE), class = "zarr_error_not_found")
  # the branch opens read-only unless asked
  expect_true(open_zarr(dir, branch = "main")$store$read_only)
  expect_error(z$store$create_tag("a/b"), class = "zarr_error_argument")
})

test_that("R commits to a spec 1 repository in spec 1 (ref files), which the official implementation reads", {
  ice <- icechunk_oracle()
  before <- ice$expected$repos$v1
  main_before <- Filter(function(r) r$kind == "branch" && r$name == "main", before$refs)[[1L]]
  dir <- ic_new_repo()
  dir.create(dir)
  file.copy(list.files(file.path(ice$dir, "v1"), full.names = TRUE), dir, recursive = TRUE)
  z <- open_zarr(dir, branch = "main", read_only = FALSE)
  other <- open_zarr(dir, branch = "main", read_only = FALSE)
  want <- z[["/float64"]]$read(fill_as_na = FALSE)
  want[1, 1] <- 99.5
  z[["/float64"]][1, 1] <- 99.5
  z$root$add_group("by_r")$set_attribute("k", 1L)
  id <- z$store$commit("R on spec 1")
  z$store$create_tag("r_tag")
  z$store$create_branch("r_branch", main_before$snapshot)
  expect_error(z$store$create_tag("r_tag"), class = "zarr_error_exists")
  # a second session from the old head: a conflict, its changes kept
  other$root$set_attribute("late", TRUE)
  expect_error(other$store$commit("late"), class = "zarr_error_conflict")
  expect_true(other$store$has_changes)
  expect_true(file.exists(file.path(dir, "refs", "branch.r_branch", "ref.json")))
  got <- icechunk_read_repo(dir)
  expect_identical(unlist(got$branches), c("dev", "main", "r_branch"))
  expect_identical(unlist(got$tags), c("r_tag", "v1"))
  expect_identical(got$history$main[[1L]]$id, id)
  expect_identical(got$history$main[[2L]]$id, main_before$snapshot)
  expect_identical(got$refs[["tag:r_tag"]]$snapshot, id)
  expect_identical(got$refs[["branch:r_branch"]]$snapshot, main_before$snapshot)
  nodes <- got$refs[["branch:main"]]$nodes
  expect_identical(ic_oracle_values(nodes[["/float64"]]), want)
  expect_identical(nodes[["/by_r"]]$attributes$k, 1L)
  for (p in setdiff(names(main_before$nodes), "/float64")) {
    n <- main_before$nodes[[p]]
    if (identical(n$type, "array") && is.null(n$error))
      expect_identical(ic_oracle_values(nodes[[p]]), icechunk_expected_array(n), info = p)
  }
  # the official implementation commits on top, and R again
  got <- icechunk_read_repo(dir, write = c("main", "/from_icechunk", "2"))
  z2 <- open_zarr(dir, branch = "main", read_only = FALSE)
  z2[["/from_icechunk"]]$set_attribute("seen", "R")
  last <- z2$store$commit("R again")
  got <- icechunk_read_repo(dir)
  expect_identical(got$history$main[[1L]]$id, last)
  expect_identical(got$refs[["branch:main"]]$nodes[["/from_icechunk"]]$attributes$seen, "R")
  expect_identical(ic_oracle_values(got$refs[["branch:main"]]$nodes[["/float64"]]), want)
})

test_that("resetting the session's branch keeps its uncommitted changes; erasing nodes commits their removal", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  x <- z$root$add_array("x", ic_def("int32", 4, 2))
  x[] <- 1:4
  y <- z$root$add_group("y")
  first <- z$store$commit("one")
  x[1] <- 9L
  second <- z$store$commit("two")
  x[4] <- 40L
  z$store$reset_branch("main", first)
  expect_identical(z$store$snapshot_id, first)
  expect_true(z$store$has_changes)
  expect_identical(z[["/x"]][], c(1L, 2L, 3L, 40L)) # the change over the older snapshot
  z$store$erase("y/zarr.json")
  third <- z$store$commit("three")
  expect_identical(icechunk_history(dir)$snapshot_id, c(third, first, "1CECHNKREP0F1RSTCMT0"))
  r <- open_zarr(dir, branch = "main")
  expect_identical(r[["/x"]][], c(1L, 2L, 3L, 40L))
  expect_null(r[["/y"]])
  expect_identical(open_zarr(dir, snapshot = second)[["/x"]][], c(9L, 2L, 3L, 4L))
  if (nzchar(icechunk_tool_dir())) {
    got <- tryCatch(icechunk_read_repo(dir), condition = function(e) NULL)
    if (!is.null(got)) {
      expect_setequal(names(got$refs[["branch:main"]]$nodes), c("/", "/x"))
      expect_identical(ic_oracle_values(got$refs[["branch:main"]]$nodes[["/x"]]), c(1L, 2L, 3L, 40L))
    }
  }
})

test_that("scalar arrays commit; keys that are neither metadata nor chunks are refused", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  s <- z$root$add_array("s", define_array("float64", integer(0)))
  s[] <- 2.5
  z$store$commit("scalar")
  expect_identical(open_zarr(dir, branch = "main")[["/s"]][], 2.5)
  z$store$set("notes.txt", charToRaw("x"))
  err <- expect_error(z$store$commit("stray"), class = "zarr_error_icechunk")
  expect_match(conditionMessage(err), "notes.txt", fixed = TRUE)
  expect_true(z$store$has_changes) # nothing lost
  if (nzchar(icechunk_tool_dir())) {
    got <- tryCatch(icechunk_read_repo(dir), condition = function(e) NULL)
    if (!is.null(got)) expect_identical(unlist(got$refs[["branch:main"]]$nodes[["/s"]]$values), 2.5)
  }
})

test_that("a commit carries the virtual chunks of an array over to its new manifest", {
  ice <- icechunk_oracle()
  src <- ice$expected$repos$virtual_v2
  main <- Filter(function(r) r$kind == "branch" && r$name == "main", src$refs)[[1L]]
  dir <- ic_new_repo()
  dir.create(dir)
  file.copy(list.files(file.path(ice$dir, "virtual_v2"), full.names = TRUE), dir, recursive = TRUE)
  z <- open_zarr(dir, branch = "main", read_only = FALSE)
  want <- icechunk_expected_array(main$nodes[["/vfile"]])
  z[["/vfile"]][1, 1] <- 42L
  want[1, 1] <- 42L
  mixed <- icechunk_expected_array(main$nodes[["/mixed"]])
  mixed[1] <- mixed[1] + 1L
  z[["/mixed"]][1] <- mixed[1]
  z$store$commit("one chunk of each rewritten")
  r <- open_zarr(dir, branch = "main")
  expect_identical(r[["/vfile"]]$read(fill_as_na = FALSE), want)
  expect_identical(r[["/mixed"]]$read(fill_as_na = FALSE), mixed)
  expect_identical(r[["/vhttp"]]$read(fill_as_na = FALSE), icechunk_expected_array(main$nodes[["/vhttp"]]))
})

test_that("chunks erased in the session (fill-only writes, shrinking) leave the manifest", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  d <- ic_def("int32", 4, 2)
  d$fill_value <- 0
  a <- z$root$add_array("a", d)
  a[] <- 1:4
  z$store$commit("one")
  a[1:2] <- 0L # a chunk of fill values only: erased
  z$store$commit("two")
  r <- open_zarr(dir, branch = "main")
  expect_identical(r$store$list_prefix("a/"), c("a/zarr.json", "a/c/1"))
  expect_identical(r[["/a"]]$read(fill_as_na = FALSE), c(0L, 0L, 3L, 4L))
  a$resize(2)
  z$store$commit("three")
  r <- open_zarr(dir, branch = "main")
  expect_identical(r$store$list_prefix("a/"), "a/zarr.json")
  expect_identical(r[["/a"]]$read(fill_as_na = FALSE), c(0L, 0L))
})

test_that("a lock left by another writer makes the commit a conflict that keeps the changes", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  dir.create(file.path(dir, "repo.lock"))
  err <- expect_error(z$store$commit("blocked"), class = "zarr_error_conflict")
  expect_match(conditionMessage(err), "repo.lock", fixed = TRUE)
  expect_true(z$store$has_changes)
  expect_identical(icechunk_history(dir)$snapshot_id, "1CECHNKREP0F1RSTCMT0")
  unlink(file.path(dir, "repo.lock"), recursive = TRUE)
  id <- z$store$commit("unblocked")
  expect_identical(icechunk_history(dir)$snapshot_id, c(id, "1CECHNKREP0F1RSTCMT0"))
  expect_false(dir.exists(file.path(dir, "repo.lock")))
  if (nzchar(icechunk_tool_dir())) { # a commit of groups only
    got <- tryCatch(icechunk_read_repo(dir), condition = function(e) NULL)
    if (!is.null(got)) expect_identical(names(got$refs[["branch:main"]]$nodes), "/")
  }
})

test_that("repositories on S3: create, commit, branch, conditional writes and conflicts", {
  skip_on_cran()
  s3 <- s3_server()
  z <- zarr_icechunk_create(s3$store("private", "repo.icechunk"))
  x <- z$root$add_array("x", ic_def("int32", c(6, 2), c(3, 2)))
  x[] <- matrix(1:12, 6)
  big <- z$root$add_array("big", ic_def("float64", 200, 100)) # native chunks
  big[] <- seq_len(200) / 4
  first <- z$store$commit("one")
  z$store$create_tag("v1")
  expect_error(zarr_icechunk_create(s3$store("private", "repo.icechunk")), class = "zarr_error_exists")
  rd <- function(...) zarr$new(zarr_icechunkstore$new(s3$store("private", "repo.icechunk"), ...))
  r <- rd(branch = "main")
  expect_identical(r[["/x"]][], matrix(1:12, 6))
  expect_identical(r[["/big"]][], seq_len(200) / 4)
  # two sessions from the same snapshot: the second commit is a conflict
  a <- zarr$new(zarr_icechunksession$new(s3$store("private", "repo.icechunk"), "main"))
  b <- zarr$new(zarr_icechunksession$new(s3$store("private", "repo.icechunk"), "main"))
  a[["/x"]][1, 1] <- 100L
  b[["/x"]][6, 2] <- 600L
  won <- a$store$commit("a")
  expect_error(b$store$commit("b"), class = "zarr_error_conflict")
  expect_true(b$store$has_changes)
  # a tag made in between is no conflict: the repo object is read again
  c <- zarr$new(zarr_icechunksession$new(s3$store("private", "repo.icechunk"), "main"))
  c[["/x"]][2, 1] <- 200L
  c$store$create_tag("between", first)
  c$store$commit("c")
  h <- icechunk_history(s3$store("private", "repo.icechunk"))
  expect_identical(h$snapshot_id[2:4], c(won, first, "1CECHNKREP0F1RSTCMT0"))
  want <- matrix(1:12, 6)
  want[1, 1] <- 100L
  want[2, 1] <- 200L
  expect_identical(rd(branch = "main")[["/x"]][], want)
  expect_identical(rd(tag = "v1")[["/x"]][], matrix(1:12, 6))
  expect_true(length(s3$store("private", "repo.icechunk")$list_prefix("overwritten/")) >= 3L)
  # the writes that guard the repo object are refused when their condition fails
  io <- s3$store("private", "repo.icechunk")$io_spec()
  before <- s3$store("private", "repo.icechunk")$get("repo")
  expect_identical(zarr:::s3_request(io, "PUT", "repo", "", as.raw(1:3), condition = 'If-Match: "0000"')$status, 412L)
  expect_identical(zarr:::s3_request(io, "PUT", "repo", "", as.raw(1:3), condition = "If-None-Match: *")$status, 412L)
  expect_identical(s3$store("private", "repo.icechunk")$get("repo"), before)
  # the official implementation reads the repository over S3, and commits on top
  if (nzchar(icechunk_tool_dir())) {
    got <- icechunk_read_repo("s3://private/repo.icechunk", write = c("main", "/from_icechunk", "5"), s3 = s3)
    expect_identical(unlist(got$tags), c("between", "v1"))
    expect_identical(vapply(got$history$main, `[[`, "", "id")[-1L], h$snapshot_id)
    nodes <- got$refs[["branch:main"]]$nodes
    expect_identical(ic_oracle_values(nodes[["/x"]]), want)
    expect_identical(ic_oracle_values(nodes[["/big"]]), seq_len(200) / 4)
    expect_identical(ic_oracle_values(got$refs[["tag:v1"]]$nodes[["/x"]]), matrix(1:12, 6))
    d <- zarr$new(zarr_icechunksession$new(s3$store("private", "repo.icechunk"), "main"))
    expect_identical(d[["/from_icechunk"]]$attributes$n, 5L)
    d[["/x"]][6, 2] <- 0L
    last <- d$store$commit("after icechunk")
    got <- icechunk_read_repo("s3://private/repo.icechunk", s3 = s3)
    expect_identical(got$history$main[[1L]]$id, last)
    want[6, 2] <- 0L
    expect_identical(ic_oracle_values(got$refs[["branch:main"]]$nodes[["/x"]]), want)
  }
})

test_that("a damaged repo object fails the commit with a classed error and releases the lock", {
  dir <- ic_new_repo()
  z <- zarr_icechunk_create(dir)
  x <- z$root$add_array("x", ic_def("int32", 4, 2))
  x[] <- 1:4
  good <- readBin(file.path(dir, "repo"), "raw", file.size(file.path(dir, "repo")))
  bad <- good
  bad[60:70] <- as.raw(0xff)
  writeBin(bad, file.path(dir, "repo"))
  expect_error(z$store$commit("on a damaged repo"), class = "zarr_error_icechunk")
  expect_false(dir.exists(file.path(dir, "repo.lock")))
  expect_true(z$store$has_changes)
  writeBin(good, file.path(dir, "repo"))
  id <- z$store$commit("repaired")
  expect_identical(open_zarr(dir, branch = "main")[["/x"]][], 1:4)
  expect_identical(icechunk_history(dir)$snapshot_id[1L], id)
})

test_that("a spec 1 repository R creates is read by the official implementation", {
  skip_without_icechunk_oracle()
  dir <- ic_new_repo()
  expect_error(zarr_icechunk_create(dir, spec_version = 3), class = "zarr_error_argument")
  z <- zarr_icechunk_create(dir, spec_version = 1)
  expect_false(file.exists(file.path(dir, "repo")))
  a <- z$root$add_array("a", ic_def("int32", c(3, 2), c(2, 2)))
  a[] <- matrix(1:6, 3)
  id <- z$store$commit("spec 1 first")
  z$store$create_tag("t1")
  expect_error(zarr_icechunk_create(dir, spec_version = 1), class = "zarr_error_exists")
  got <- icechunk_read_repo(dir)
  expect_identical(unlist(got$tags), "t1")
  expect_identical(vapply(got$history$main, `[[`, "", "id"), c(id, "1CECHNKREP0F1RSTCMT0"))
  expect_identical(ic_oracle_values(got$refs[["tag:t1"]]$nodes[["/a"]]), matrix(1:6, 3))
  expect_identical(open_zarr(dir, tag = "t1")$store$spec_version, 1L)
})
