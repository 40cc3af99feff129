# OME-NGFF multiscale images (R/ome.R): 0.4 on Zarr v2 written by
# zarr-python 2, 0.5 on Zarr v3 written by write_ome_ngff().

# The values zarr-python writes for a level: its C-order element numbers
# times (level + 1), modulo 60000, as an R array of the same shape.
ome_level_values <- function(shape, k) {
  n <- prod(shape)
  v <- ((seq_len(n) - 1) * (k + 1)) %% 60000
  aperm(array(v, rev(shape)), rev(seq_along(shape)))
}

# a region's values without its dimension names and coordinates
plain <- function(r) array(as.vector(r), dim(r))

ome_04_script <- '
import zarr, numpy as np
path = sys.argv[1]
root = zarr.open_group(path, mode="w")
shapes = [(2, 4, 64, 48), (2, 4, 32, 24), (2, 4, 16, 12), (2, 4, 8, 6)]
datasets = []
for k, s in enumerate(shapes):
    n = int(np.prod(s))
    root.create_dataset(str(k), data=((np.arange(n) * (k + 1)) % 60000).astype("uint16").reshape(s),
                        chunks=(1, 2, 16, 16))
    datasets.append({"path": str(k), "coordinateTransformations": [
        {"type": "scale", "scale": [1.0, 0.5, 0.25 * 2 ** k, 0.25 * 2 ** k]},
        {"type": "translation", "translation": [0.0, 0.0, 1.0, 2.0]}]})
axes = [{"name": "c", "type": "channel"}, {"name": "z", "type": "space", "unit": "micrometer"},
        {"name": "y", "type": "space", "unit": "micrometer"}, {"name": "x", "type": "space", "unit": "micrometer"}]
root.attrs["multiscales"] = [{"version": "0.4", "name": "cells", "axes": axes, "datasets": datasets,
    "coordinateTransformations": [{"type": "scale", "scale": [1.0, 2.0, 1.0, 1.0]}]}]
root.attrs["omero"] = {"channels": [
    {"label": "DAPI", "color": "0000FF", "active": True, "window": {"min": 0, "max": 65535, "start": 0, "end": 1500}},
    {"label": "GFP", "color": "00FF00", "active": False, "window": {"min": 0, "max": 65535, "start": 10, "end": 4000}}]}
labels = root.create_group("labels")
labels.attrs["labels"] = ["nuclei"]
lab = labels.create_group("nuclei")
lds = []
for k, s in enumerate([(4, 64, 48), (4, 32, 24)]):
    a = np.zeros(s, dtype="uint32")
    a[:, : s[1] // 2, :] = 1
    a[:, s[1] // 2 :, : s[2] // 2] = 2
    lab.create_dataset(str(k), data=a, chunks=(2, 16, 16))
    lds.append({"path": str(k), "coordinateTransformations": [
        {"type": "scale", "scale": [1.0, 0.25 * 2 ** k, 0.25 * 2 ** k]}]})
lab.attrs["multiscales"] = [{"version": "0.4", "name": "nuclei", "datasets": lds, "axes": axes[1:]}]
lab.attrs["image-label"] = {"version": "0.4", "colors": [{"label-value": 1, "rgba": [255, 0, 0, 255]},
                                                         {"label-value": 2, "rgba": [0, 255, 0, 128]}],
                            "source": {"image": "../../"}}
print(json.dumps({"ok": True}))
'

test_that("an OME-NGFF 0.4 image written by zarr-python reads with its levels, axes, channels and labels", {
  skip_without_python_zarr()
  path <- withr::local_tempfile(fileext = ".zarr")
  run_python(ome_04_script, path)
  img <- open_zarr(path, read_only = TRUE)$root
  expect_s3_class(img, "zarr_ome_image")
  expect_identical(img$version, "0.4")
  expect_identical(img$axes$name, c("c", "z", "y", "x"))
  expect_identical(img$axes$type, c("channel", "space", "space", "space"))
  expect_identical(img$axes$unit, c(NA, "micrometer", "micrometer", "micrometer"))
  lv <- img$levels
  expect_identical(lv$path, as.character(0:3))
  shapes <- list(c(2, 4, 64, 48), c(2, 4, 32, 24), c(2, 4, 16, 12), c(2, 4, 8, 6))
  for (k in 1:4) {
    expect_equal(unname(lv$shape[[k]]), shapes[[k]])
    # the dataset's scale times the multiscale's (z doubled); its translation scaled the same way
    expect_equal(unname(lv$scale[[k]]), c(1, 1, 0.25 * 2^(k - 1), 0.25 * 2^(k - 1)))
    expect_equal(unname(lv$translation[[k]]), c(0, 0, 1, 2))
    a <- img$level(k)
    expect_s3_class(a, "zarr_ome_level")
    expect_identical(a$dimension_names, c("c", "z", "y", "x"))
    v <- a[]
    expect_equal(unname(v), ome_level_values(shapes[[k]], k - 1))
  }
  expect_equal(img$level("1")$scale, c(c = 1, z = 1, y = 0.5, x = 0.5))
  expect_identical(img$level(1)$units[["x"]], "micrometer")
  ch <- img$channels
  expect_identical(ch$label, c("DAPI", "GFP"))
  expect_identical(ch$color, c("#0000FF", "#00FF00"))
  expect_equal(ch$window_end, c(1500, 4000))
  expect_identical(ch$active, c(TRUE, FALSE))
  labs <- img$labels
  expect_identical(names(labs), "nuclei")
  nuc <- labs$nuclei
  expect_s3_class(nuc, "zarr_ome_image")
  expect_identical(nrow(nuc$levels), 2L)
  expect_equal(nuc$label_colors$label_value, c(1, 2))
  expect_equal(nuc$label_colors$alpha, c(255, 128))
  l2 <- nuc$level(2)[]
  expect_equal(unique(as.vector(l2[, 1:16, ])), 1)
  expect_equal(unique(as.vector(l2[, 17:32, 1:12])), 2)
  expect_equal(unique(as.vector(l2[, 17:32, 13:24])), 0) # zero fill reads as itself
  # a short summary instead of the attributes
  out <- capture.output(print(img))
  expect_lt(length(out), 16L)
  expect_true(any(grepl("Axes .*c \\(channel\\), z \\(space, micrometer\\)", out)))
  expect_true(any(grepl("2 x 4 x 64 x 48 .*scale 1 x 1 x 0.25 x 0.25", out)))
  expect_true(any(grepl("DAPI #0000FF \\[0, 1500\\]", out)))
  expect_true(any(grepl("Labels .*nuclei", out)))
  expect_false(any(grepl("multiscales|omero", out)))
})

test_that("a region by physical coordinates reads the pixels whose centres lie in it, from the chunks under it only", {
  skip_without_python_zarr()
  path <- withr::local_tempfile(fileext = ".zarr")
  run_python(ome_04_script, path)
  img <- open_zarr(path, read_only = TRUE)$root
  full <- img$level(1)[]
  # level 1: y = 1 + 0.25 i, x = 2 + 0.25 j (i, j from 0)
  idx <- img$region_index(1, y = c(3.5, 6), x = c(2.1, 4), c = 2)
  expect_equal(idx$y, c(11, 21)) # i = 10 .. 20
  expect_equal(idx$x, c(2, 9))   # j = 1 .. 8
  expect_equal(idx$c, c(2, 2))
  expect_equal(idx$z, c(1, 4))
  st <- img$store
  before <- st$io_stats()[["requests"]]
  r <- img$read_region(1, y = c(3.5, 6), x = c(2.1, 4), c = "GFP")
  # chunks (1, 2, 16, 16): 1 channel x 2 z-chunks x 2 y-chunks (rows 11..21) x 1 x-chunk
  expect_equal(st$io_stats()[["requests"]] - before, 4)
  expect_equal(plain(r), unname(full[2, , 11:21, 2:9, drop = FALSE]))
  expect_identical(names(dimnames(r)), c("c", "z", "y", "x"))
  expect_equal(attr(r, "coordinates")$y, 1 + 0.25 * (10:20))
  # a single coordinate: the nearest pixel; level 3 has scale 1 in y and x
  r3 <- img$read_region(3, y = 5.4, x = 7.6, z = 3)
  expect_equal(dim(r3), c(2, 1, 1, 1))
  # level 3: z = 1 k, y = 1 + i, x = 2 + j
  expect_equal(unname(r3[, 1, 1, 1]), unname(img$level(3)[, 4, 5, 7]))
  expect_error(img$read_region(1, y = c(100, 200)), class = "zarr_error_argument")
  expect_error(img$read_region(1, w = 1), class = "zarr_error_argument")
  expect_error(img$read_region(1, c = "RFP"), class = "zarr_error_argument")
  expect_error(img$read_region(9), class = "zarr_error_argument")
})

test_that("an OME-NGFF 0.5 image written by write_ome_ngff() reads back", {
  path <- withr::local_tempfile(fileext = ".zarr")
  x <- array(as.integer(seq_len(3 * 40 * 36) %% 251), c(3, 40, 36))
  img <- write_ome_ngff(x, path, levels = 3, axes = c("c", "y", "x"), scale = c(1, 0.5, 0.25),
                        chunk_shape = c(1, 16, 16), channels = c("a", "b", "c"))
  expect_s3_class(img, "zarr_ome_image")
  expect_identical(img$metadata$zarr_format, 3L)
  img <- open_zarr(path)$root
  expect_identical(img$version, "0.5")
  expect_named(img$attributes, "ome")
  expect_identical(img$axes$unit, c(NA, "micrometer", "micrometer"))
  expect_identical(img$channels$label, c("a", "b", "c"))
  lv <- img$levels
  expect_equal(lapply(lv$shape, unname), list(c(3, 40, 36), c(3, 20, 18), c(3, 10, 9)))
  expect_equal(unname(lv$scale[[3]]), c(1, 2, 1))
  expect_identical(img$level(1)[], x)
  expect_identical(unname(img$level(2)[]), x[, seq(1, 40, 2), seq(1, 36, 2)])
  expect_identical(unname(img$level(3)[]), x[, seq(1, 40, 4), seq(1, 36, 4)])
  # region: y 4..8 -> rows 9..17 (0-based 8..16), x 1..2 -> columns 5..9; 2 x 1 chunks of channel 3
  st <- img$store
  img$level(1)
  before <- st$io_stats()[["requests"]]
  r <- img$read_region(1, y = c(4, 8), x = c(1, 2), c = 3)
  expect_equal(st$io_stats()[["requests"]] - before, 2)
  expect_identical(plain(r), x[3, 9:17, 5:9, drop = FALSE])
  expect_true(any(grepl("OME-NGFF +: 0.5", capture.output(print(img)))))
})

test_that("hostile OME-NGFF metadata gives classed errors, and the store still opens and prints", {
  path <- withr::local_tempfile(fileext = ".zarr")
  write_ome_ngff(array(1:64, c(8, 8)), path, levels = 2, axes = c("y", "x"))
  z <- open_zarr(path)
  ome <- z$root$attributes$ome
  bad <- ome
  bad$multiscales[[1]]$datasets[[2]]$path <- NULL
  z$root$set_attribute("ome", bad)
  img <- open_zarr(path)$root
  expect_s3_class(img, "zarr_ome_image")
  expect_error(img$levels, class = "zarr_error_metadata")
  expect_error(img$read_region(1, x = c(1, 2)), "dataset 2 has no path", class = "zarr_error_metadata")
  expect_true(any(grepl("OME-NGFF.*no path", capture.output(print(img)))))
  # the arrays stay plain arrays, readable
  expect_identical(img[["0"]][], array(1:64, c(8, 8)))

  bad <- ome
  bad$multiscales[[1]]$axes <- c(bad$multiscales[[1]]$axes, list(list(name = "z", type = "space")))
  for (k in 1:2) bad$multiscales[[1]]$datasets[[k]]$coordinateTransformations[[1]]$scale <- list(1, 1, 1)
  open_zarr(path)$root$set_attribute("ome", bad)
  img <- open_zarr(path)$root
  expect_error(img$levels, "2 dimensions but the image has 3 axes", class = "zarr_error_metadata")
  expect_error(img$read_region(1, z = 1), class = "zarr_error_metadata")

  bad <- ome
  bad$multiscales[[1]]$datasets[[1]]$coordinateTransformations[[1]]$scale <- list(1)
  open_zarr(path)$root$set_attribute("ome", bad)
  expect_error(open_zarr(path)$root$axes, "needs 2 numbers", class = "zarr_error_metadata")
  bad$multiscales[[1]]$axes <- list("y", 3)
  open_zarr(path)$root$set_attribute("ome", bad)
  expect_error(open_zarr(path)$root$levels, class = "zarr_error_metadata")
  bad$multiscales[[1]]$axes <- 7
  open_zarr(path)$root$set_attribute("ome", bad)
  expect_error(open_zarr(path)$root$levels, class = "zarr_error_metadata")
  bad$multiscales[[1]]$datasets <- list(1, "x")
  open_zarr(path)$root$set_attribute("ome", bad)
  img <- open_zarr(path)$root
  expect_error(img$levels, class = "zarr_error_metadata")
  expect_identical(img[["1"]][], array(1:64, c(8, 8))[c(1, 3, 5, 7), c(1, 3, 5, 7)])
  bad$multiscales <- "nope"
  open_zarr(path)$root$set_attribute("ome", bad)
  expect_error(open_zarr(path)$root$levels, class = "zarr_error_metadata")
})

test_that("the OME-NGFF domain can be unregistered for the session", {
  path <- withr::local_tempfile(fileext = ".zarr")
  write_ome_ngff(array(1:16, c(4, 4)), path, levels = 1, axes = c("y", "x"))
  zarr_unregister_domain("OME-NGFF")
  withr::defer(zarr_register_domain(zarr:::zarr_ome_domain$new()))
  expect_identical(class(open_zarr(path)$root)[1], "zarr_group")
})

test_that("a subclass of the package's own domain still decides for nodes the built-in domains would pass over", {
  path <- withr::local_tempfile(fileext = ".zarr")
  z <- create_zarr(path)
  z$add_group("/", "plain")
  z$add_array("/plain", "a", define_array("int32", c(2, 2)))
  expect_identical(class(open_zarr(path)[["/plain/a"]])[1], "zarr_array")
  claims_all <- R6::R6Class("claims_all", inherit = zarr:::zarr_ome_domain, cloneable = FALSE,
    public = list(build = function(name, metadata, parent, store) {
      if (identical(metadata[["node_type"]], "array")) stop("claimed by the subclass")
      FALSE
    }))
  zarr_unregister_domain("OME-NGFF")
  withr::defer({
    zarr_unregister_domain("OME-NGFF")
    zarr_register_domain(zarr:::zarr_ome_domain$new())
  })
  zarr_register_domain(claims_all$new())
  # an array without attributes in a plain group: asked of the subclass
  expect_error(open_zarr(path)[["/plain/a"]], class = "zarr_domain_error", regexp = "claimed by the subclass")
})

test_that("an OME-NGFF image on a web server opens by its metadata and a region fetches only its chunks", {
  dir <- withr::local_tempdir()
  x <- array(as.integer(seq_len(2 * 64 * 64) %% 97), c(2, 64, 64))
  write_ome_ngff(x, file.path(dir, "img.zarr"), levels = 3, axes = c("c", "y", "x"),
                 scale = c(1, 0.5, 0.5), chunk_shape = c(1, 16, 16), channels = c("a", "b"))
  srv <- http_server(dir)
  img <- open_zarr(paste0(srv$url, "/img.zarr"))$root
  expect_s3_class(img, "zarr_ome_image")
  expect_equal(unname(img$levels$scale[[2]]), c(1, 1, 1))
  img$level(1)
  srv$reset()
  # y 8..15.5 -> rows 17..32 (one chunk row), x 0..7.5 -> columns 1..16 (one chunk column), channel b
  r <- img$read_region(1, y = c(8, 15.5), x = c(0, 7.5), c = "b")
  expect_identical(plain(r), x[2, 17:32, 1:16, drop = FALSE])
  expect_identical(srv$stats()$requests, 1L)
})

test_that("write_ome_ngff() of a level keeps its axes, scale, translation, units and omero channels", {
  path <- withr::local_tempfile(fileext = ".zarr")
  x <- array(as.integer(seq_len(2 * 3 * 16 * 12) %% 97), c(2, 3, 16, 12))
  img <- write_ome_ngff(x, path, levels = 2, axes = c("c", "z", "y", "x"), scale = c(1, 3, 0.5, 0.25),
                        units = c(NA, "nanometer", "nanometer", "nanometer"), name = "cells",
                        channels = data.frame(label = c("DAPI", "GFP"), color = c("#0000FF", "#00FF00"),
                                              window_start = c(0, 10), window_end = c(90, 80)))
  expect_identical(img$channels$color, c("#0000FF", "#00FF00"))
  path2 <- withr::local_tempfile(fileext = ".zarr")
  img2 <- write_ome_ngff(img$level(2), path2, levels = 1)
  img2 <- open_zarr(path2)$root
  expect_identical(img2$axes$name, c("c", "z", "y", "x"))
  expect_identical(img2$axes$unit, c(NA, "nanometer", "nanometer", "nanometer"))
  expect_equal(img2$levels$scale[[1]], c(c = 1, z = 6, y = 1, x = 0.5))
  expect_identical(img2$channels$label, c("DAPI", "GFP"))
  expect_identical(img2$channels$color, c("#0000FF", "#00FF00"))
  expect_identical(img2$channels$window_end, c(90, 80))
  expect_identical(img2$ome$multiscales[[1]]$name, "cells")
  expect_identical(unname(img2$level(1)[]), unname(img$level(2)[]))
  # a translation is kept too, and given values override the level's
  lv <- img2$level(1)
  path3 <- withr::local_tempfile(fileext = ".zarr")
  img3 <- write_ome_ngff(lv, path3, levels = 1, scale = c(1, 1, 1, 1), channels = c("a", "b"))
  expect_equal(unname(img3$levels$scale[[1]]), c(1, 1, 1, 1))
  expect_identical(img3$channels$label, c("a", "b"))
  expect_error(write_ome_ngff(lv, withr::local_tempfile(fileext = ".zarr"), channels = "one"),
               class = "zarr_error_argument")
})

test_that("write_ome_ngff(downsample = c(\"y\", \"x\")) keeps z, c and t at every level", {
  path <- withr::local_tempfile(fileext = ".zarr")
  x <- array(as.numeric(seq_len(2 * 2 * 4 * 16 * 16)), c(2, 2, 4, 16, 16))
  img <- write_ome_ngff(x, path, levels = 3, axes = c("t", "c", "z", "y", "x"), scale = c(1, 1, 2, 0.5, 0.5),
                        downsample = c("y", "x"))
  lv <- img$levels
  expect_equal(unname(lv$shape[[3]]), c(2, 2, 4, 4, 4))
  expect_equal(unname(lv$scale[[3]]), c(1, 1, 2, 2, 2))
  expect_identical(unname(img$level(3)[]), x[, , , c(1, 5, 9, 13), c(1, 5, 9, 13)])
  # by default every space axis, z too
  img <- write_ome_ngff(x, withr::local_tempfile(fileext = ".zarr"), levels = 2, axes = c("t", "c", "z", "y", "x"))
  expect_equal(unname(img$levels$shape[[2]]), c(2, 2, 2, 8, 8))
  expect_error(write_ome_ngff(x, withr::local_tempfile(fileext = ".zarr"), axes = c("t", "c", "z", "y", "x"),
                              downsample = "c"), class = "zarr_error_argument")
})

test_that("channels are numbered from 1 in arguments and results; $levels prints one line per level", {
  path <- withr::local_tempfile(fileext = ".zarr")
  x <- array(as.integer(seq_len(3 * 8 * 8)), c(3, 8, 8))
  img <- write_ome_ngff(x, path, levels = 2, axes = c("c", "y", "x"), channels = c("r", "g", "b"))
  r <- img$read_region(1, c = c(2, 3), y = 0)
  expect_identical(attr(r, "coordinates")$c, 2:3)
  expect_identical(plain(r), x[2:3, 1, , drop = FALSE])
  r <- img$read_region(1, c = "b")
  expect_identical(attr(r, "coordinates")$c, 3L)
  expect_identical(img$channels$label[attr(r, "coordinates")$c], "b")
  lv <- img$levels
  expect_s3_class(lv, "data.frame")
  out <- capture.output(print(lv))
  expect_length(out, 3L)
  expect_match(out[1], "shape [c y x]", fixed = TRUE)
  expect_match(out[3], "3 x 4 x 4", fixed = TRUE)
})

test_that("with options(zarr.format = 2) the image is OME-NGFF 0.4 in Zarr v2, which zarr-python 2 reads", {
  path <- withr::local_tempfile(fileext = ".zarr")
  x <- array(as.integer(seq_len(2 * 8 * 6)), c(2, 8, 6))
  withr::with_options(list(zarr.format = 2), {
    img <- write_ome_ngff(x, path, levels = 2, axes = c("c", "y", "x"), scale = c(1, 0.5, 0.5),
                          channels = c("DAPI", "GFP"))
  })
  img <- open_zarr(path)$root
  expect_identical(img$metadata$zarr_format, 2L)
  expect_identical(img$version, "0.4")
  expect_setequal(names(img$attributes), c("multiscales", "omero"))
  expect_identical(img$channels$label, c("DAPI", "GFP"))
  expect_identical(img$level(2)[], x[, c(1, 3, 5, 7), c(1, 3, 5)])
  skip_on_cran()
  skip_without_python_zarr()
  got <- run_python('
path = sys.argv[1]
d = dump(path)
ms = d["groups"]["/"]["multiscales"][0]
emit({"version": ms["version"], "axes": [a["name"] for a in ms["axes"]],
      "paths": [x["path"] for x in ms["datasets"]],
      "scale1": ms["datasets"][1]["coordinateTransformations"][0]["scale"],
      "labels": [c["label"] for c in d["groups"]["/"]["omero"]["channels"]],
      "shape1": d["arrays"]["/1"]["shape"], "data1": d["arrays"]["/1"]["data"]})
', path)
  expect_identical(got$version, "0.4")
  expect_identical(unlist(got$axes), c("c", "y", "x"))
  expect_identical(unlist(got$paths), c("0", "1"))
  expect_equal(unlist(got$scale1), c(1, 1, 1))
  expect_identical(unlist(got$labels), c("DAPI", "GFP"))
  expect_equal(unlist(got$shape1), c(2, 4, 3))
  # C order of the R array's level 2
  expect_identical(as.integer(unlist(got$data1)), as.integer(aperm(x[, c(1, 3, 5, 7), c(1, 3, 5)], 3:1)))
})

test_that("write_ome_ngff() of a level of an image whose omero channels do not match leaves them out", {
  path <- withr::local_tempfile(fileext = ".zarr")
  img <- write_ome_ngff(array(1:32, c(2, 4, 4)), path, levels = 1, axes = c("c", "y", "x"), channels = c("a", "b"))
  o <- img$ome
  o$omero$channels <- o$omero$channels[1]
  img$set_attribute("ome", o)
  img <- open_zarr(path)$root
  img2 <- write_ome_ngff(img$level(1), withr::local_tempfile(fileext = ".zarr"), levels = 1)
  expect_null(img2$channels)
  expect_identical(img2$axes$name, c("c", "y", "x"))
})
