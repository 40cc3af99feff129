# Printing styled with cli, as zarr 1.0.0 prints, when cli is installed and
# the theme is made from the style options of zarr_options(); plain text
# otherwise, or with options(zarr.cli = FALSE). Either way the lines go to
# standard output. Descendant classes in domain packages read the theme with
# zarr_options("zarr_theme") and style their details with it when it is a
# list.

use_cli <- function() is.list(zarr_theme())

# The theme is made on first use and kept here; a style change through
# zarr_options() drops it. Domain packages' tests set `zarr_theme` to NULL in
# this environment to print plain text, as they do with zarr 1.0.0.
Zarr.options <- new.env(parent = emptyenv())

zarr_theme <- function() {
  if (isFALSE(getOption("zarr.cli", TRUE))) return(NULL)
  if (!exists("zarr_theme", envir = Zarr.options, inherits = FALSE))
    assign("zarr_theme", if (requireNamespace("cli", quietly = TRUE)) make_zarr_theme(), envir = Zarr.options)
  Zarr.options$zarr_theme
}

forget_zarr_theme <- function() {
  if (exists("zarr_theme", envir = Zarr.options, inherits = FALSE)) rm("zarr_theme", envir = Zarr.options)
}

# The cli theme from the style options: spans .group, .array, .label, .text
# and .minor, as domain packages use them.
make_zarr_theme <- function() {
  style <- function(key, default) {
    s <- zarr_options(key) %||% default
    do.call(cli::combine_ansi_styles, as.list(s))
  }
  list(h1 = list(`margin-top` = 0),
       span.group = list(fmt = style("group_style", c("blue", "bold"))),
       span.array = list(fmt = style("array_style", c("green", "bold"))),
       span.label = list(fmt = style("label_style", "bold")),
       span.text = list(fmt = style("text_style", "blue")),
       span.minor = list(fmt = style("minor_style", "grey")))
}

# Printing follows r-lib: the lines are made first (format_*), then written
# to standard output with cat(), so that capture.output(), sink() and knitr
# see them. With cli they carry the theme's styles (ANSI, when the output
# supports colours); nothing goes through cli's message stream.

# The styling function of one span of the theme (identity without cli).
theme_style <- function(span) {
  th <- zarr_theme()
  f <- if (is.list(th)) th[[paste0("span.", span)]][["fmt"]]
  if (is.function(f)) f else identity
}

# The heading of a summary or block: a rule with the title under cli.
format_heading <- function(title, plain) {
  if (use_cli()) as.character(cli::rule(left = title)) else plain
}

# Lines "label : value" of a node summary under a title.
format_lines <- function(title, labels, values) {
  w <- max(0L, nchar(labels))
  c(format_heading(title, paste(title, "")),
    paste0(theme_style("label")(paste(formatC(labels, width = -w), ":")), " ", theme_style("text")(values)))
}

print_lines <- function(title, labels, values) {
  cat(format_lines(title, labels, values), sep = "\n")
  invisible(NULL)
}

# A block of (nested) attributes.
format_attribute_block <- function(atts, title = "Attributes") {
  if (use_cli()) c(format_heading(title), attribute_lines_cli(atts, 0L))
  else c(paste0(title, ":"), attribute_lines_text(atts, 1L))
}

print_attribute_block <- function(atts, title = "Attributes") {
  cat(format_attribute_block(atts, title), sep = "\n")
  invisible(NULL)
}

# format() of the package's R6 objects (nodes, stores, codecs, data types,
# chunk grids): the lines their print() writes.
format_printed <- function(x) {
  if (!is.function(x$print)) return(sprintf("<%s>", class(x)[1L]))
  utils::capture.output(x$print())
}

attr_scalar_text <- function(v) {
  if (is.null(v)) return("null")
  if (is.list(v)) return(paste0("[", paste(vapply(v, attr_scalar_text, ""), collapse = ", "), "]"))
  if (length(v) == 1L) format(v) else paste0("[", paste(format(v), collapse = ", "), "]")
}

attribute_lines_text <- function(atts, indent) {
  pad <- strrep("  ", indent)
  nm <- names(atts) %||% paste0("[", seq_along(atts), "]")
  w <- max(nchar(nm))
  unlist(lapply(seq_along(atts), function(i) {
    v <- atts[[i]]
    if (is.list(v) && (attr_is_object(v) || any(vapply(v, is.list, TRUE))))
      c(paste0(pad, formatC(nm[i], width = -w), " :"), attribute_lines_text(v, indent + 1L))
    else paste0(pad, formatC(nm[i], width = -w), " : ", attr_scalar_text(v))
  }))
}

# Bullets as cli's lists show them, two spaces deeper per level.
attribute_lines_cli <- function(atts, indent) {
  pad <- strrep("  ", indent)
  bullet <- cli::symbol$bullet
  nm <- names(atts) %||% paste0("[", seq_along(atts), "]")
  label <- theme_style("label")
  text <- theme_style("text")
  unlist(lapply(seq_along(atts), function(i) {
    v <- atts[[i]]
    if (is.list(v) && (attr_is_object(v) || any(vapply(v, is.list, TRUE))))
      c(paste0(pad, bullet, " ", label(paste0(nm[i], ":"))), attribute_lines_cli(v, indent + 1L))
    else paste0(pad, bullet, " ", label(paste0(nm[i], ":")), " ", text(attr_scalar_text(v)))
  }))
}
