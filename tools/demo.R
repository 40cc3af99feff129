# A short tour of the zarr package: write a chunked, compressed array to a new
# store, read part of it back, open the store again, then browse the example
# store shipped with the package. Run with: bash tools/demo.sh
library(zarr)

step <- function(...) cat("\n==>", ..., "\n")

cat("zarr", format(utils::packageVersion("zarr")), "from",
    dirname(system.file(package = "zarr")), "\n")
cat("threads used to decode and encode chunks (option zarr.num_threads):",
    getOption("zarr.num_threads", zarr:::zarr_num_threads()), "\n")

path <- file.path(tempdir(), "demo.zarr")
unlink(path, recursive = TRUE)

step("1. Create a new Zarr v3 store at", path)
z <- create_zarr(path)
z$root$set_attribute("title", "zarr demo")

step("2. Add the array /temperature: float64, 200 x 300, chunks of 50 x 50")
def <- define_array("float64", c(200, 300))
def$chunk_shape <- c(50, 50)
print(def$codec_info)
arr <- z$add_array("/", "temperature", def)
arr$set_attribute("units", "degC")

step("3. Write a 200 x 300 matrix")
set.seed(1)
x <- matrix(round(rnorm(200 * 300, mean = 15, sd = 5), 1), 200, 300)
arr[, ] <- x
files <- list.files(path, recursive = TRUE)
cat(length(files), "files in the store:", head(files, 4), "...\n")

step("4. Read the slab temperature[46:55, 98:102]: one call into C, 4 chunks")
slab <- arr[46:55, 98:102]
print(slab[1:3, ])
stopifnot(identical(slab, x[46:55, 98:102]))
cat("identical to x[46:55, 98:102]\n")

step("5. Overwrite a block across chunk borders: temperature[45:55, 1:3] <- NA_real_")
arr[45:55, 1:3] <- NA_real_   # written as the fill value, read back as NA
print(arr[44:46, 1:3])

step("6. Open the store again (read-only) and print it")
z2 <- open_zarr(path, read_only = TRUE)
print(z2)
t2 <- z2[["/temperature"]]
print(t2)
expected <- x
expected[45:55, 1:3] <- NA_real_
stopifnot(identical(t2[, ], expected))
cat("the whole array read back equals what was written\n")

step("7. Open the example store volcano.zarr shipped with the package")
volcano_path <- system.file("extdata", "volcano.zarr", package = "zarr")
v <- open_zarr(volcano_path, read_only = TRUE)
v$hierarchy()
v$root$print_attributes()   # the root group's attributes

step("8. The array /elevation and a slab of it: elevation[1:5, 1:8]")
elev <- v[["/elevation"]]
print(elev)
print(elev[1:5, 1:8])
cat("\ncoordinates: x =", head(v[["/x"]][], 3), "... m, y =", head(v[["/y"]][], 3), "... m\n")
e <- elev[, ]
stopifnot(identical(unname(e), matrix(as.integer(datasets::volcano), 87, 61)))
cat("equal to datasets::volcano; highest point", max(e), "m at x =",
    v[["/x"]][which(e == max(e), arr.ind = TRUE)[1, 1]], "m, y =",
    v[["/y"]][which(e == max(e), arr.ind = TRUE)[1, 2]], "m\n")

unlink(path, recursive = TRUE)
step("Done")
