# Install the CRAN 'zarr' package (same name as ours, unrelated code) into
# bench/lib, for the comparison rows of bench/run.R. Never touches .lib/ or
# the system libraries.
#
# usage: Rscript bench/setup-cran-zarr.R        (from the repository root)
#
# 1. install.packages("zarr", lib = "bench/lib") from the configured CRAN
#    repository (its missing dependencies go into bench/lib too).
# 2. When that fails only because this R is too old (zarr 1.0.0 declares
#    R >= 4.4, its dependency blosc R >= 4.3) and ZARR_BENCH_CRAN_FORCE is not
#    "false": fetch the same sources with download.packages(), relax the
#    declared R version, compile the C++ as C++17 (blosc needs it; R 4.2
#    defaults to C++14) and install into bench/lib. Such an install is marked
#    with the DESCRIPTION field BenchNote, which the table prints. At run time
#    the only R >= 4.4 function the package uses, `%||%`, is supplied by
#    bench/cran.R.
# ZARR_BENCH_CRAN_REINSTALL=true reinstalls even when bench/lib has zarr.
# Exit status 0 when bench/lib holds the CRAN zarr afterwards, 1 otherwise.

f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
root <- if (length(f)) normalizePath(file.path(dirname(f[1]), "..")) else normalizePath(".")
lib <- file.path(root, "bench", "lib")
dir.create(lib, recursive = TRUE, showWarnings = FALSE)
lib <- normalizePath(lib)
say <- function(...) cat("setup-cran-zarr:", ..., "\n")
is_true <- function(x) tolower(x) %in% c("true", "1", "yes")

installed_ok <- function() {
  d <- file.path(lib, "zarr", "DESCRIPTION")
  if (!file.exists(d)) return(FALSE)
  desc <- read.dcf(d)
  "Repository" %in% colnames(desc) && desc[1, "Repository"] == "CRAN"
}

# CRAN zarr reads HTTP stores (bench/remote.R) only with the suggested
# 'curl' package: install it into bench/lib when no library has it. A failure
# only drops the remote comparison.
ensure_curl <- function() {
  if (nzchar(system.file(package = "curl", lib.loc = c(lib, .libPaths())))) return(invisible(TRUE))
  say("install.packages('curl') into", lib, "(for CRAN zarr's HTTP store)")
  tryCatch(utils::install.packages("curl", lib = lib, quiet = TRUE),
           error = function(e) say("curl not installed:", conditionMessage(e)))
  invisible(nzchar(system.file(package = "curl", lib.loc = lib)))
}

if (installed_ok() && !is_true(Sys.getenv("ZARR_BENCH_CRAN_REINSTALL"))) {
  say("CRAN zarr", read.dcf(file.path(lib, "zarr", "DESCRIPTION"))[1, "Version"],
      "already in", lib)
  ensure_curl()
  quit(status = 0)
}

unlink(file.path(lib, "zarr"), recursive = TRUE)  # a failed reinstall must not look like success
repos <- getOption("repos")
if (!length(repos) || any(repos == "@CRAN@")) {
  say("no CRAN repository configured (options(repos)); CRAN zarr not installed")
  quit(status = 1)
}
.libPaths(c(lib, .libPaths()))

# ---- 1. the ordinary way
say("install.packages('zarr') into", lib)
msgs <- character()
withCallingHandlers(
  tryCatch(utils::install.packages("zarr", lib = lib, quiet = TRUE),
           error = function(e) msgs <<- c(msgs, conditionMessage(e))),
  warning = function(w) {
    msgs <<- c(msgs, conditionMessage(w))
    invokeRestart("muffleWarning")
  })
if (installed_ok()) {
  say("installed CRAN zarr", read.dcf(file.path(lib, "zarr", "DESCRIPTION"))[1, "Version"])
  ensure_curl()
  quit(status = 0)
}
msgs <- unique(trimws(sub("\n.*", "", msgs[!grepl("PACKAGES", msgs)])))
if (length(msgs)) say("install.packages:", paste(msgs, collapse = "; "))

# ---- 2. too old an R: the same sources with the R requirement relaxed
av <- tryCatch(utils::available.packages(filters = list()), error = function(e) NULL)
if (is.null(av) || !"zarr" %in% rownames(av)) {
  say("zarr is not in the configured repositories: not available")
  quit(status = 1)
}
needs_r <- function(pkg) {
  dep <- av[pkg, "Depends"]
  m <- regmatches(dep, regexpr("R \\(>= *[0-9.]+\\)", dep))
  if (length(m)) package_version(sub("R \\(>= *([0-9.]+)\\)", "\\1", m)) else package_version("0")
}
if (getRversion() >= needs_r("zarr")) {
  say("the install failed for another reason than the R version: not available")
  quit(status = 1)
}
if (identical(tolower(Sys.getenv("ZARR_BENCH_CRAN_FORCE")), "false")) {
  say("zarr", av["zarr", "Version"], "needs R >=", format(needs_r("zarr")),
      "(this is", format(getRversion()), "); ZARR_BENCH_CRAN_FORCE=false: not available")
  quit(status = 1)
}
say("zarr", av["zarr", "Version"], "needs R >=", format(needs_r("zarr")), "but this is R",
    format(getRversion()), ": installing its sources with the R requirement relaxed")

# dependencies: those that are not loadable anywhere go into bench/lib
deps <- tools::package_dependencies("zarr", db = av, which = c("Depends", "Imports", "LinkingTo"),
                                    recursive = TRUE)[["zarr"]]
deps <- setdiff(deps, c(rownames(installed.packages(priority = "base")), "R"))
loadable <- function(p) nzchar(system.file(package = p))
forced <- character()   # packages that need the relaxed R version themselves
for (p in deps) {
  if (loadable(p)) next
  if (getRversion() < needs_r(p)) { forced <- c(forced, p); next }
  say("install.packages('", p, "')", sep = "")
  utils::install.packages(p, lib = lib, quiet = TRUE)
}
forced <- c(forced, "zarr")
# blosc's own dependencies (cpp11) must be in place before it
for (p in setdiff(unlist(tools::package_dependencies(forced, db = av,
                                                      which = c("Depends", "Imports", "LinkingTo"))),
                  c(forced, rownames(installed.packages(priority = "base")), "R"))) {
  if (!loadable(p)) utils::install.packages(p, lib = lib, quiet = TRUE)
}

tmp <- tempfile("cran-zarr-")
dir.create(tmp)
dl <- utils::download.packages(forced, destdir = tmp, available = av, type = "source", quiet = TRUE)
mk <- file.path(tmp, "Makevars")
cxx17 <- trimws(system2(file.path(R.home("bin"), "R"), c("CMD", "config", "CXX17"), stdout = TRUE))
cxx17std <- trimws(system2(file.path(R.home("bin"), "R"), c("CMD", "config", "CXX17STD"), stdout = TRUE))
writeLines(sprintf("CXX = %s %s", cxx17, cxx17std), mk)
ok <- TRUE
for (p in forced) {   # dependencies come first in `forced`
  tarball <- dl[dl[, 1] == p, 2]
  utils::untar(tarball, exdir = tmp)
  src <- file.path(tmp, p)
  kw <- c("Description", "Authors@R", "Author")
  dcf <- read.dcf(file.path(src, "DESCRIPTION"), keep.white = kw)
  old <- dcf[1, "Depends"]
  dcf[1, "Depends"] <- gsub("R \\(>= *[0-9.]+\\)", sprintf("R (>= %s)", getRversion()), old)
  dcf <- cbind(dcf, BenchNote = sprintf(
    "installed by bench/setup-cran-zarr.R on R %s: declared '%s' relaxed, C++ compiled as C++17",
    getRversion(), regmatches(old, regexpr("R \\(>= *[0-9.]+\\)", old))))
  write.dcf(dcf, file.path(src, "DESCRIPTION"), keep.white = kw)
  say("R CMD INSTALL", p, av[p, "Version"])
  st <- system2(file.path(R.home("bin"), "R"), c("CMD", "INSTALL", "--no-multiarch", "-l", shQuote(lib), shQuote(src)),
                env = c(paste0("R_MAKEVARS_USER=", shQuote(mk)), paste0("R_LIBS=", shQuote(lib))),
                stdout = file.path(tmp, paste0(p, ".log")), stderr = file.path(tmp, paste0(p, ".log")))
  if (st != 0) {
    say("R CMD INSTALL", p, "failed:")
    cat(tail(readLines(file.path(tmp, paste0(p, ".log"))), 20), sep = "\n")
    ok <- FALSE
    break
  }
}
unlink(tmp, recursive = TRUE)
if (ok && installed_ok()) {
  say("installed CRAN zarr", read.dcf(file.path(lib, "zarr", "DESCRIPTION"))[1, "Version"],
      "(R requirement relaxed)")
  ensure_curl()
  quit(status = 0)
}
say("CRAN zarr could not be installed: not available")
quit(status = 1)
