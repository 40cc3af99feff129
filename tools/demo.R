# A short tour of the zarr package: write a chunked array to a new local
# store, open the store again, read a slab back and compare, then browse the
# example store shipped with the package. Run with: bash tools/demo.sh
library(zarr)

step <- function(...) cat("\n==>", ..., "\n")

path <- file.path(tempdir(), "demo.zarr")
unlink(path, recursive = TRUE)

step("Creating a new Zarr store at", path)
z <- create_zarr(path)

x <- matrix(rnorm(200 * 300), 200, 300)
step("Adding array /temperature: float64, 200 x 300, chunks of 50 x 50")
def <- define_array("float64", dim(x))
def$chunk_shape <- c(50, 50)
arr <- z$add_array("/", "temperature", def)

step("Writing a 200 x 300 matrix of random numbers")
arr$write(x)
chunks <- list.files(path, recursive = TRUE)
cat(length(chunks), "files in the store, e.g.", head(chunks, 3), "\n")

step("Opening the store again and reading temperature[51:60, 101:105]")
z2 <- open_zarr(path)
slab <- z2[["/temperature"]][51:60, 101:105]
stopifnot(isTRUE(all.equal(slab, x[51:60, 101:105])))
cat("The slab equals the same slab of the matrix in memory. First rows:\n")
print(slab[1:3, ])

step("Opening the example store volcano.zarr shipped with the package")
v <- open_zarr(system.file("extdata", "volcano.zarr", package = "zarr"))
v$hierarchy()

step("The array /elevation")
print(v[["/elevation"]])

unlink(path, recursive = TRUE)
step("Done")
