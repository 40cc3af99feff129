# The API of zarr 1.0.0 as an addition to the 0.3.0 manual: the zarr object
# and the node constructors in both forms, domains and conventions as a
# domain package uses them (helper-domain.R), paths, attributes, selections.

test_that("zarr$new() takes a store, a path or nothing", {
  z <- zarr$new()
  expect_s3_class(z$store, "zarr_memorystore")
  expect_null(z$root)
  expect_identical(z$arrays, character())
  g <- zarr_group$new(name = "", parent = z) # the 1.0.0 form makes the root group
  expect_identical(z$root, g)
  expect_identical(g$zarr, z)
  expect_null(g$parent)
  expect_false(is.null(z$store$get_metadata("")))

  path <- file.path(withr::local_tempdir(), "new.zarr")
  z2 <- zarr$new(path) # created on disk
  expect_true(dir.exists(path))
  expect_null(z2$root)
  zarr_group$new(name = "", parent = z2)
  expect_true(file.exists(file.path(path, "zarr.json")))
  z3 <- zarr$new(path, read_only = TRUE)
  expect_s3_class(z3$root, "zarr_group")
  expect_true(z3$store$read_only)
  expect_identical(z3$root$zarr, z3)

  z4 <- zarr$new(zarr_memorystore$new())
  expect_null(z4$root)
  expect_error(z4$root <- "x", class = "zarr_error_argument")
  expect_error(zarr$new(42), class = "zarr_error_argument")
})

test_that("zarr_array$new() and zarr_group$new() in the 1.0.0 form create and attach", {
  z <- create_zarr()
  root <- z$root
  g <- zarr_group$new("g", parent = root)
  expect_identical(root$children$g, g)
  expect_identical(g$path, "/g")
  a <- zarr_array$new("a", define_array("int32", c(3, 4)), g)
  expect_identical(g$children$a, a)
  expect_identical(z[["/g/a"]]$shape, c(3L, 4L))
  a$write(matrix(1:12, 3))
  expect_identical(open_zarr_of(z)[["/g/a"]]$read(), matrix(1:12, 3))
  # an existing node is opened, not replaced
  again <- zarr_array$new("a", a$metadata, g)
  expect_identical(again$read(), matrix(1:12, 3))
  expect_error(zarr_array$new("g", define_array("int32", 2), root), class = "zarr_error_exists")
  # a single-array store from the zarr object
  z1 <- zarr$new()
  arr <- zarr_array$new("", define_array("float64", 5), z1)
  expect_identical(z1$root, arr)
  arr$write(c(1, 2, 3, 4, 5))
  expect_identical(z1[["/"]]$read(), c(1, 2, 3, 4, 5))
})

test_that("the 0.3.0 constructor form still opens existing nodes", {
  z <- as_zarr(array(1:24, c(2, 3, 4)))
  st <- z$store
  a <- zarr_array$new("", st$get_metadata(""), NULL, st)
  expect_identical(a$read(), array(1:24, c(2, 3, 4)))
  expect_null(a$zarr)
  g <- create_zarr()
  grp <- zarr_group$new("", g$store$get_metadata(""), NULL, g$store)
  expect_s3_class(grp, "zarr_group")
  expect_error(zarr_group$new("", list(node_type = "group"), NULL), class = "zarr_error_argument")
})

test_that("a domain package's nodes are built, post-opened and printed", {
  dom <- local_domain(tiny_domain$new())
  path <- withr::local_tempdir()
  z <- create_zarr(file.path(path, "t.zarr"))
  root <- z$root
  m <- root$metadata
  m$attributes <- tiny_attributes("m", list(title = "demo"))
  root$metadata <- m
  expect_true(root$dirty)
  root$save()
  expect_false(root$dirty)
  def <- define_array("float64", c(2, 3))$metadata()
  def$attributes <- tiny_attributes("K", list(long_name = "temperature"))
  z$add_array("/", "temp", def)
  z$add_array("/", "plain", define_array("int32", 4))

  dom$calls <- NULL
  z2 <- open_zarr(file.path(path, "t.zarr"))
  expect_s3_class(z2$root, "tiny_group")
  expect_s3_class(z2$root, "zarr_group")
  # build() was called as declared: three arguments, the zarr object as the
  # parent of the root
  expect_identical(dom$calls[[1L]]$parent, z2)
  temp <- z2[["/temp"]]
  expect_s3_class(temp, "tiny_array")
  expect_false(inherits(z2[["/plain"]], "tiny_array"))
  expect_identical(temp$post_opened, 1L) # once, after the hierarchy was built
  expect_identical(temp$unit, "K")
  expect_identical(temp$sibling_names, "plain")
  expect_identical(temp$zarr, z2)

  out <- capture.output(print(temp))
  expect_true(any(grepl("^Domain +: Tiny", out)))
  expect_true(any(grepl("Tiny unit : K", out, fixed = TRUE)))
  expect_true(any(grepl("long_name", out)))
  expect_false(any(grepl("tiny:unit|zarr_conventions", out)))
  out <- capture.output(print(z2$root))
  expect_true(any(grepl("Tiny group of unit m", out, fixed = TRUE)))
  expect_true(any(grepl("title", out)))
  expect_false(any(grepl("zarr_conventions", out)))
})

test_that("a domain's new nodes in the 1.0.0 form take their own arguments", {
  local_domain(tiny_domain$new())
  z <- create_zarr()
  def <- define_array("int32", 3)$metadata()
  def$attributes <- tiny_attributes("m")
  a <- tiny_array$new("x", def, z$root, unit = "cm")
  expect_identical(a$unit, "cm")
  expect_identical(z$root$children$x, a)
  expect_s3_class(z[["/x"]], "tiny_array")
})

test_that("a domain with the 0.3.0 build() gets the store and a NULL parent for the root", {
  obs <- local_domain(observer_domain$new())
  z <- as_zarr(1:3, name = "v")
  obs$seen <- NULL
  z2 <- zarr$new(z$store)
  expect_null(obs$seen[[1L]]$parent)
  expect_identical(obs$seen[[1L]]$store, z$store)
  z2[["/v"]]
  expect_identical(obs$seen[[2L]]$parent, z2$root)
})

test_that("a domain's error while building a node is raised", {
  bad <- R6::R6Class("bad_domain", inherit = zarr_domain,
    public = list(initialize = function() super$initialize("Bad"),
                  build = function(name, metadata, parent) {
                    if (identical(name, "a")) stop("node a is not acceptable") else FALSE
                  }))
  z <- as_zarr(1:3, name = "a")
  local_domain(bad$new())
  expect_error(zarr$new(z$store), "node a is not acceptable")
})

test_that("a child opened by path: a domain's error is raised, malformed metadata opens a broken node", {
  # the error of a domain's build() is told apart from the node's own errors
  # by the one condition handler of the child's opening
  bad <- R6::R6Class("bad_child_domain", inherit = zarr_domain,
    public = list(initialize = function() super$initialize("BadChild"),
                  build = function(name, metadata, parent) {
                    if (identical(name, "a")) stop("node a is not acceptable") else FALSE
                  }),
    active = list(open_hierarchy = function(value) FALSE))
  p <- withr::local_tempfile(fileext = ".zarr")
  z <- create_zarr(p)
  g <- z$add_group("/", "g")
  g$add_array("a", define_array("int32", 3))
  g$add_array("b", define_array("int32", 3))$write(1:3)
  g$add_array("c", define_array("int32", 3))
  writeLines('{"zarr_format": 3, "node_type": "array", "shape": [3', file.path(p, "g", "c", "zarr.json"))
  local_domain(bad$new())
  z2 <- open_zarr(p)
  err <- tryCatch(z2[["/g/a"]], error = function(e) e)
  expect_s3_class(err, "zarr_domain_error")
  expect_match(conditionMessage(err), "node a is not acceptable")
  # after the domain's error: a malformed child is a broken node, a good one opens
  broken <- z2[["/g/c"]]
  expect_s3_class(broken, "zarr_array")
  expect_error(broken[], class = "zarr_error_metadata")
  expect_output(print(broken), "Not readable")
  expect_identical(z2[["/g/b"]][], 1:3)
  expect_null(z2[["/g/none"]])
  # paths that are not a child's name take the long way
  g2 <- z2[["/g"]]
  expect_identical(g2$get_node(""), g2)
  expect_identical(g2[["./b"]], z2[["/g/b"]])
  expect_identical(g2[["../g/b"]], z2[["/g/b"]])
  expect_null(g2[["b/x"]])
})

test_that("zarr_object keeps a name and works on attribute lists", {
  lab <- tiny_label$new("label", list(a = 1))
  expect_s3_class(lab, "zarr_object")
  expect_identical(lab$name, "label")
  lab$add("b/c", "x")
  lab$add("b/d", 2)
  expect_identical(lab$get("b/c"), "x")
  expect_identical(lab$get("b"), list(c = "x", d = 2))
  expect_null(lab$get("b/zz"))
  out <- capture.output(lab$print_attributes())
  expect_true(any(grepl("^  a +: 1$", out)))
  expect_true(any(grepl("^    c +: x$", out)))
  expect_error(tiny_label$new("a/b"), class = "zarr_error_node_name")
  obj <- zarr_object$new("o")
  expect_identical(obj$append_array_attribute(list(), "l", 1), list(l = list(1)))
  expect_identical(obj$delete_attribute(list(l = list(1, 2, 3)), "l/2"), list(l = list(1, 3)))
})

test_that("node attributes: paths, arrays, deletion, dirty", {
  z <- create_zarr()
  g <- z$add_group("/", "g")
  g$set_attribute("a/b/c", 1L)
  expect_identical(g$attribute("a/b/c"), 1L)
  expect_identical(g$attributes$a, list(b = list(c = 1L)))
  g$append_array_attribute("items", list(name = "x"))
  g$append_array_attribute("items", list(name = "y"))
  g$append_array_attribute("items", list(name = "w"), after = 0)
  expect_identical(g$attribute("items/1/name"), "w")
  expect_identical(g$attribute("items/3/name"), "y")
  g$delete_attribute("items/2")
  expect_identical(vapply(g$attributes$items, function(i) i$name, ""), c("w", "y"))
  g$delete_attribute("a/b")
  expect_identical(g$attributes$a, structure(list(), names = character()))
  expect_false(g$dirty) # saved at once
  reread <- open_zarr_of(z)[["/g"]]
  expect_identical(reread$attribute("items/2/name"), "y")
  expect_error(g$set_attribute("bad name", 1), class = "zarr_error_argument")
  expect_error(g$set_attribute("a/b c", 1), class = "zarr_error_argument")
  g$set_attribute("proj:code", "EPSG:4326") # a convention's prefixed name
  expect_identical(g$attribute("proj:code"), "EPSG:4326")
  g$dirty <- TRUE
  expect_true(g$dirty)
  g$save()
  expect_false(g$dirty)
})

test_that("node paths: relative, absolute, walked", {
  z <- create_zarr()
  z$add_group("/", "a")
  z$add_group("/a", "b")
  z$add_array("/a/b", "x", define_array("int32", 2))
  z$add_group("/", "c")
  x <- z[["/a/b/x"]]
  expect_identical(x$relative_path("/c"), "../../../c")
  expect_identical(x$relative_path(z[["/a"]]), "../..")
  expect_identical(x$relative_path("/a/b/x"), ".")
  expect_identical(z[["/a"]]$relative_path("/a/b/x"), "b/x")
  expect_identical(x$absolute_path("../../../c"), "/c")
  expect_identical(z[["/a"]]$absolute_path("b/./x"), "/a/b/x")
  expect_identical(z$root$walk_path(c("a", "b", "x"))$path, "/a/b/x")
  expect_identical(x$walk_path(c("..", "..", "..", "c"))$path, "/c")
  expect_error(x$walk_path(c("..", "nope")), class = "zarr_error_not_found")
  expect_identical(x$zarr, z)
})

test_that("selections of read() and write() are ranges; `[` indexes as base R", {
  x <- matrix(as.numeric(1:80), 8, 10)
  z <- as_zarr(x)
  arr <- z$root
  expect_identical(arr$shape, c(8L, 10L))
  expect_type(arr$shape, "integer")
  expect_identical(arr$read(list(c(2, 7), c(3, 4))), x[2:7, 3:4])
  expect_identical(arr$read(list(c(7, 2), 5)), x[2:7, 5, drop = FALSE])
  expect_identical(arr$read(list(2:7, NULL)), x[2:7, ])
  expect_identical(arr[c(2, 7), c(3, 4)], x[c(2, 7), c(3, 4)]) # `[` picks elements
  expect_identical(arr[c(8, 1, 1), -1], x[c(8, 1, 1), -1])
  arr$write(matrix(0, 3, 2), list(c(1, 3), c(9, 10)))
  x[1:3, 9:10] <- 0
  expect_identical(arr$read(), x)
  arr[c(1, 8), 1] <- c(-1, -8)
  x[c(1, 8), 1] <- c(-1, -8)
  expect_identical(arr$read(), x)
  expect_error(arr$read(list(c(0, 9), 1)), class = "zarr_error_index")
})

test_that("metadata holds simplified vectors; length-1 shapes stay JSON arrays", {
  path <- file.path(withr::local_tempdir(), "m.zarr")
  z <- create_zarr(path)
  def <- define_array("int32", 5)
  def$dimension_names <- "x"
  def <- def$metadata()
  def$attributes <- list(tags = c("a", "b"))
  z$add_array("/", "v", def)
  v <- open_zarr(path)[["/v"]]
  expect_identical(v$metadata$shape, 5L)
  expect_identical(v$metadata$dimension_names, "x")
  expect_identical(v$metadata$attributes$tags, c("a", "b"))
  m <- v$metadata
  m$attributes$units <- "m"
  v$metadata <- m
  v$save()
  doc <- jsonlite::read_json(file.path(path, "v", "zarr.json"))
  expect_identical(doc$shape, list(5L))
  expect_identical(doc$dimension_names, list("x"))
  expect_identical(doc$chunk_grid$configuration$chunk_shape, list(5L))
  expect_identical(doc$attributes$units, "m")
  txt <- readLines(file.path(path, "v", "zarr.json"))
  expect_true(any(grepl('"shape": \\[', txt)))
  expect_null(dimnames(z[["/v"]]$read()))
})

test_that("conventions: the list (ref, uom and the GeoZarr ones), ref v2.0.0 and uom, in both forms", {
  conv <- zarr_conventions()
  expect_identical(conv$name, c("ref", "uom", "proj:", "spatial:", "multiscales"))
  expect_true(all(c("name", "schema", "uuid", "spec") %in% names(conv)))
  expect_match(conv$schema[conv$name == "ref"], "v2.0.0")
  expect_identical(zarr_conv_ref, zarr_convention_ref)
  expect_identical(zarr_conv_uom, zarr_convention_uom)

  ref <- zarr_convention_ref$new()
  ref$set("../lat", attribute = "/attributes/units")
  expect_identical(ref$as_list(), list(node = "../lat", attribute = "/attributes/units"))
  ref$set("/lat", "s3://bucket/other.zarr")
  expect_identical(ref$as_list(), list(uri = "s3://bucket/other.zarr", node = "/lat"))
  expect_error(ref$set(""), "`node`")
  expect_error(ref$set("x", attribute = "no-slash"), class = "zarr_error_argument")
  ref$clear()
  expect_error(ref$as_list(), class = "zarr_error_argument")

  uom <- zarr_convention_uom$new()
  expect_identical(uom$as_list(), list(ucum = list(version = "2.2", unit = "1")))
  uom$set("K", description = "kelvin")
  expect_identical(uom$as_list(), list(ucum = list(version = "2.2", unit = "K"), description = "kelvin"))
  uom$clear()
  expect_null(uom$unit)

  # written into a node and read back
  z <- create_zarr()
  a <- z$add_array("/", "t", define_array("float32", 3))
  ref$set("../lat")
  atts <- ref$register(list())
  atts$ref <- ref$as_list()
  uom$set("Cel")
  atts <- uom$register(atts)
  atts$uom <- uom$as_list()
  for (n in names(atts)) a$set_attribute(n, atts[[n]])
  back <- open_zarr_of(z)[["/t"]]
  expect_identical(vapply(back$attributes$zarr_conventions, function(c) c$name, ""), c("ref", "uom"))
  expect_identical(back$attribute("ref/node"), "../lat")
  expect_identical(back$attribute("uom/ucum/unit"), "Cel")
  expect_identical(back$attribute("zarr_conventions/1/uuid"), conv$uuid[1L])
})

test_that("a domain's convention is written and read back", {
  conv <- tiny_convention$new()
  expect_s3_class(conv, "zarr_convention")
  atts <- tiny_attributes("m/s", list(note = "n"))
  expect_identical(atts[["tiny:unit"]], "m/s")
  expect_identical(atts$zarr_conventions[[1L]]$uuid, conv$uuid)
  expect_identical(conv$register(atts), atts) # registered once
  z <- create_zarr()
  g <- z$add_group("/", "g")
  for (n in names(atts)) g$set_attribute(n, atts[[n]])
  back <- open_zarr_of(z)[["/g"]]
  expect_true(uses_tiny(back$metadata))
  expect_identical(back$attribute("tiny:unit"), "m/s")
})

test_that("printing goes through cli when it is installed and asked for", {
  skip_if_not_installed("cli")
  withr::local_options(zarr.cli = TRUE, cli.num_colors = 1)
  expect_type(zarr_options("zarr_theme"), "list")
  z <- as_zarr(matrix(1:6, 2))
  z$root$set_attribute("title", "demo")
  out <- capture.output(print(z$root))
  expect_true(any(grepl("Shape[[:space:]\u00a0]+: 2 x 3", out)))
  expect_true(any(grepl("title: demo", out, fixed = TRUE)))
  g <- create_zarr()
  g$add_group("/", "sub")
  out <- capture.output(print(g))
  expect_true(any(grepl("Groups[[:space:]\u00a0]+: 2", out)))
  expect_true(any(grepl("sub", out, fixed = TRUE)))
  withr::local_options(zarr.cli = FALSE)
  expect_null(zarr_options("zarr_theme"))
  out <- capture.output(print(z$root))
  expect_true(any(grepl("^Shape +: 2 x 3", out)))
})
