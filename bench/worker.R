# Peak RSS of one operation, in a fresh R process (started by bench/run.R).
#
# usage: Rscript bench/worker.R <op id | none> <zarr | base> <work dir>
#
# Loads our zarr (ZARR_BENCH_LIB, else .lib/, else the default libraries),
# warms the package up on a tiny in-memory array, makes the input of a write,
# resets the peak RSS (/proc/self/clear_refs) and runs the operation once.
# Prints one line: "RSS <VmHWM kB> <VmRSS before kB> <reset ok> <valid>".
# With op "none" nothing runs: that is the baseline every row subtracts.

args <- commandArgs(TRUE)
if (length(args) != 3L) stop("usage: worker.R <op|none> <zarr|base> <work dir>")
op_id <- args[1]; side <- args[2]; dir <- args[3]

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])),
                 "common.R"))
root <- bench_root()
load_our_zarr(bench_our_lib(root))

# the same warm-up in every worker, baseline included
invisible(as_zarr(matrix(as.double(1:16), 4, 4))$root[, ])
invisible(readBin(writeBin(1:4, raw()), "integer", 4L))

fx <- fixture_paths(dir)
ops <- make_ops(fx)
valid <- NA
if (op_id != "none") {
  op <- ops[[op_id]]
  if (is.null(op)) stop("unknown operation ", op_id)
  inp <- if (side == "zarr") op$input else op$base_input
  if (!is.null(inp)) invisible(get_data(inp))
  if (!is.null(op$open)) op$open()
  out <- file.path(dir, "rss", paste0(op_id, "-", side, if (op$kind == "write" && side == "zarr") ".zarr" else ".bin"))
  dir.create(dirname(out), showWarnings = FALSE, recursive = TRUE)
  unlink(out, recursive = TRUE)
}
invisible(gc(full = TRUE))
pre <- proc_status_kb("VmRSS")
reset_ok <- reset_hwm()
if (op_id != "none") {
  res <- op[[side]](out)
  hwm <- proc_status_kb("VmHWM")
  if (op$kind != "write") valid <- same_values(res, op$expect())
  if (!is.null(op$close)) op$close()
  unlink(out, recursive = TRUE)
} else {
  hwm <- proc_status_kb("VmHWM")
}
cat(sprintf("RSS %.0f %.0f %s %s\n", hwm, pre, reset_ok, valid))
