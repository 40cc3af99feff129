# Icechunk repositories written by the official implementation, and what it
# reads back from them: tools/icechunk/make_repos.mjs (the test oracle, see
# tools/icechunk/README.md), run once per test session into a temp dir.
#
#   ice <- icechunk_oracle()   # skips (fails under CI) without node, gcc, the module
#   ice$dir                    # the repositories: file.path(ice$dir, "v2"), ...
#   ice$url                    # the HTTP test server serving ice$dir (for the
#                              # repositories over HTTP and http:// virtual chunks)
#   ice$expected               # expected.json (lists, as written)
# The server lives until the end of the test session.

icechunk_tool_dir <- function() {
  interop <- Sys.getenv("ZARR_INTEROP_DIR", "")
  cands <- c(Sys.getenv("ZARR_ICECHUNK_DIR", ""),
             if (nzchar(interop)) file.path(dirname(interop), "icechunk"),
             "../../tools/icechunk", "../../../tools/icechunk")
  for (d in cands) if (nzchar(d) && file.exists(file.path(d, "make_repos.mjs"))) return(normalizePath(d))
  ""
}

skip_without_icechunk_oracle <- function() {
  testthat::skip_on_cran()
  require_or_skip(nzchar(Sys.which("node")), "node (for the Icechunk oracle)")
  require_or_skip(nzchar(Sys.which("gcc")), "gcc (builds the glibc shim of the Icechunk oracle)")
  require_or_skip(nzchar(Sys.which("bash")), "bash (runs the Icechunk oracle)")
  require_or_skip(requireNamespace("processx", quietly = TRUE), "the processx package (for the Icechunk oracle)")
  dir <- icechunk_tool_dir()
  require_or_skip(nzchar(dir), "tools/icechunk")
  require_or_skip(file.exists(file.path(dir, "node_modules", "@earthmover", "icechunk", "index.js")),
                  "@earthmover/icechunk in tools/icechunk/node_modules (tools/setup.sh installs it)")
}

icechunk_cache <- new.env(parent = emptyenv())

icechunk_oracle <- function() {
  if (!is.null(icechunk_cache$oracle)) return(icechunk_cache$oracle)
  skip_without_icechunk_oracle()
  env <- testthat::teardown_env()
  out <- withr::local_tempdir("icechunk-", .local_envir = env)
  srv <- http_server(out, env = env)
  r <- processx::run("bash", c(file.path(icechunk_tool_dir(), "run.sh"), "make_repos.mjs", out, "--http-url", srv$url),
                     error_on_status = FALSE, timeout = 120)
  if (r$status == 3L)
    require_or_skip(FALSE, sprintf("the Icechunk native module (%s)", trimws(r$stderr)))
  if (r$status != 0L)
    stop("tools/icechunk/make_repos.mjs failed (status ", r$status, "): ", substr(r$stderr, 1, 2000))
  expected <- jsonlite::fromJSON(file.path(out, "expected.json"), simplifyVector = FALSE)
  icechunk_cache$oracle <- list(dir = out, url = srv$url, server = srv, expected = expected)
  icechunk_cache$oracle
}

# The R value of an array as the oracle read it (values flat in C order).
icechunk_expected_array <- function(node) {
  v <- node$values
  v <- switch(node$dtype,
    bool = as.logical(unlist(v)),
    float32 = , float64 = as.double(unlist(v)),
    as.integer(unlist(v)))
  shape <- as.integer(unlist(node$shape))
  c_order_array(v, shape)
}

# The arguments that select a ref of expected.json: list(branch = "dev"), ...
icechunk_ref_args <- function(ref) {
  switch(ref$kind, branch = list(branch = ref$name), tag = list(tag = ref$name), snapshot = list(snapshot = ref$name))
}

# What the official implementation reads of a local repository
# (tools/icechunk/read_repo.mjs): list(branches, tags, history, refs), refs
# by "branch:<name>" / "tag:<name>", each with snapshot and nodes. `write`:
# c(branch, path, n) to commit a group there with it first.
# `s3`: the S3 test server (s3_server()) serving dir, an s3:// location.
icechunk_read_repo <- function(dir, write = NULL, s3 = NULL) {
  skip_without_icechunk_oracle()
  env <- if (!is.null(s3)) c(Sys.getenv(), ICECHUNK_S3_ENDPOINT = s3$endpoint, ICECHUNK_S3_KEY = s3$key,
                             ICECHUNK_S3_SECRET = s3$secret)
  r <- processx::run("bash", c(file.path(icechunk_tool_dir(), "run.sh"), "read_repo.mjs", dir,
                               if (!is.null(write)) c("--write", write)),
                     error_on_status = FALSE, timeout = 120, env = env)
  if (r$status == 3L) require_or_skip(FALSE, sprintf("the Icechunk native module (%s)", trimws(r$stderr)))
  if (r$status != 0L) stop("tools/icechunk/read_repo.mjs failed (status ", r$status, "): ", substr(r$stderr, 1, 2000))
  jsonlite::fromJSON(r$stdout, simplifyVector = FALSE)
}
