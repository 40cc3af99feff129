# Writes the example store inst/extdata/volcano.zarr with the package itself.
#
# usage, from the repository root, after installing the package (for example
# with tools/demo.sh, which installs into .lib/):
#   R_LIBS=.lib Rscript tools/make-extdata.R
#
# The store holds R's datasets::volcano (Maunga Whau, Auckland, on a 10 m x
# 10 m grid) as a Zarr v3 hierarchy:
#   /            root group; attributes title, source, description, license
#   /elevation   int16 87 x 61, chunks 30 x 30, zstd; units "m"; dimensions x, y
#   /x           float64 87, the grid coordinate along the rows (10 m ... 870 m)
#   /y           float64 61, the grid coordinate along the columns (10 m ... 610 m)
# with consolidated metadata in the root zarr.json.
# The store is rewritten from scratch each time; the output is deterministic.
library(zarr)

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", grep("^--file=", args, value = TRUE)[1])
repo <- if (is.na(script)) getwd() else normalizePath(file.path(dirname(script), ".."))
out <- file.path(repo, "inst", "extdata", "volcano.zarr")
unlink(out, recursive = TRUE)
dir.create(dirname(out), recursive = TRUE, showWarnings = FALSE)

elev <- datasets::volcano  # 87 x 61 matrix of whole metres (stored as double in R)
stopifnot(identical(dim(elev), c(87L, 61L)), all(elev == round(elev)))
storage.mode(elev) <- "integer"

z <- create_zarr(out)
root <- z$root
root$set_attribute("title", "Topographic information on Auckland's Maunga Whau volcano")
root$set_attribute("source", "R datasets::volcano, Maunga Whau (Mt Eden), Auckland")
root$set_attribute("description", paste(
  "Heights of Maunga Whau on a 10 m by 10 m grid, digitised by Ross Ihaka from a",
  "topographic map of the volcano (not to be regarded as accurate). Rows (x) are",
  "grid lines running east to west, columns (y) grid lines running south to north."))
root$set_attribute("license", paste(
  "The volcano data set is part of R's datasets package, distributed with R",
  "under the GNU General Public License (GPL-2 | GPL-3)."))
root$set_attribute("created_by", "tools/make-extdata.R of the zarr R package")

# The elevation grid: int16 holds 94..195 m; 30 x 30 chunks give a 3 x 3 grid
# with ragged edge chunks, which makes the example a little more instructive.
def <- define_array("int16", dim(elev))
def$chunk_shape <- c(30, 30)
a <- z$add_array("/", "elevation", def)
a$write(elev)
a$dimension_names <- c("x", "y")
a$set_attribute("long_name", "height above sea level")
a$set_attribute("units", "m")

# Coordinates, as the dataset's documentation draws them:
# image(x = 10 * (1:87), y = 10 * (1:61), volcano)
coord <- function(name, n, long_name) {
  d <- define_array("float64", n)
  arr <- z$add_array("/", name, d)
  arr$write(10 * seq_len(n))
  arr$dimension_names <- name
  arr$set_attribute("long_name", long_name)
  arr$set_attribute("units", "m")
  invisible(arr)
}
coord("x", nrow(elev), "grid distance along the rows (east-west grid lines)")
coord("y", ncol(elev), "grid distance along the columns (south-north grid lines)")

# Consolidated metadata: a copy of every node's metadata in the root
# zarr.json, so that readers open the hierarchy without listing the store.
zarr_consolidate(z)

# Check the result by opening it again.
v <- open_zarr(out, read_only = TRUE)
e <- v[["/elevation"]][, ]
stopifnot(identical(unname(e), elev),
          identical(v[["/x"]][], 10 * seq_len(87)),
          identical(v[["/y"]][], 10 * seq_len(61)))
files <- list.files(out, recursive = TRUE, all.files = TRUE)
size <- sum(file.size(file.path(out, files)))
cat(sprintf("wrote %s: %d files, %.1f kB\n", out, length(files), size / 1000))
v$hierarchy()
