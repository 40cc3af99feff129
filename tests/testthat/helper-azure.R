# A real Azure Blob service for the tests: Azurite (npm, installed in
# tools/azurite/node_modules by tools/setup.sh), which checks Shared Key and
# SAS signatures, on 127.0.0.1 with a port of its own choosing, in memory.
#
#   az <- azure_server()   # skips (fails under CI) without node/azurite/processx
#   az$endpoint            # "http://127.0.0.1:<port>/zarrtest" (path-style, as emulators serve)
#   az$account, az$key     # the account Azurite knows, and its key
#   az$sas_read, az$sas_write   # SAS tokens for "private": read+list, everything
#   az$store("private", "prefix", ...)   # a zarr_azurestore signed with the key
#   az$client("put", "private", "a/b", file)   # @azure/storage-blob, independent
# Containers: "private" (credentials needed) and "public" (anonymous reads).
# The server stops when the calling frame ends.

azurite_dir <- function() {
  interop <- Sys.getenv("ZARR_INTEROP_DIR", "")
  cands <- c(Sys.getenv("ZARR_AZURITE_DIR", ""),
             if (nzchar(interop)) file.path(dirname(interop), "azurite"),
             "../../tools/azurite", "../../../tools/azurite")
  for (d in cands) if (nzchar(d) && file.exists(file.path(d, "client.js"))) return(normalizePath(d))
  ""
}

skip_without_azurite <- function() {
  require_or_skip(nzchar(Sys.which("node")), "node (for Azurite)")
  require_or_skip(requireNamespace("processx", quietly = TRUE), "the processx package (for Azurite)")
  dir <- azurite_dir()
  require_or_skip(nzchar(dir), "tools/azurite")
  require_or_skip(file.exists(file.path(dir, "node_modules", "azurite", "dist", "src", "blob", "main.js")),
                  "azurite in tools/azurite/node_modules (tools/setup.sh installs it)")
}

azure_test_key <- "emFyci1henVyaXRlLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OQ=="

azure_server <- function(env = parent.frame(), account = "zarrtest", key = azure_test_key) {
  skip_without_azurite()
  dir <- azurite_dir()
  p <- processx::process$new("node", c(file.path(dir, "node_modules", "azurite", "dist", "src", "blob", "main.js"),
                                       "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
                                       "--skipApiVersionCheck", "--disableTelemetry"),
                             env = c("current", AZURITE_ACCOUNTS = paste0(account, ":", key)),
                             stdin = "|", stdout = "|", stderr = "|", cleanup = TRUE)
  withr::defer(if (p$is_alive()) p$kill(), envir = env)
  withr::local_envvar(c(no_proxy = "127.0.0.1,localhost", NO_PROXY = "127.0.0.1,localhost"), .local_envir = env)
  # the tests choose their credentials themselves: nothing from this machine
  withr::local_envvar(c(AZURE_STORAGE_CONNECTION_STRING = NA, AZURE_STORAGE_ACCOUNT = NA, AZURE_STORAGE_KEY = NA,
                        AZURE_STORAGE_SAS_TOKEN = NA), .local_envir = env)
  port <- NA_integer_
  out <- ""
  deadline <- Sys.time() + 60
  while (is.na(port) && p$is_alive() && Sys.time() < deadline) {
    p$poll_io(200)
    out <- paste0(out, p$read_output())
    m <- regmatches(out, regexec("listens on http://127\\.0\\.0\\.1:([0-9]+)", out))[[1]]
    if (length(m)) port <- as.integer(m[2])
  }
  if (is.na(port)) {
    if (p$is_alive()) p$kill()
    err <- tryCatch(p$read_all_error(), error = function(e) "")
    require_or_skip(FALSE, sprintf("Azurite (it did not start: %s)", substr(paste(out, err), 1, 500)))
  }
  endpoint <- sprintf("http://127.0.0.1:%d/%s", port, account)
  client <- function(...) {
    r <- processx::run("node", c(file.path(dir, "client.js"), endpoint, account, key, ...),
                       error_on_status = FALSE, env = c("current", NODE_NO_WARNINGS = "1"))
    if (r$status != 0) stop("the @azure/storage-blob client failed: ", r$stderr)
    r$stdout
  }
  sas <- jsonlite::fromJSON(client("setup"))
  list(
    endpoint = endpoint, port = port, account = account, key = key, process = p,
    sas_read = sas$sas_read, sas_write = sas$sas_write, client = client,
    store = function(container = "private", prefix = "", ...) {
      zarr_azurestore$new(container, prefix, endpoint = endpoint, account = account, key = key, ...)
    }
  )
}
