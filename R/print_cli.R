# Printing through cli, as zarr 1.0.0 prints, when cli is installed and the
# theme is made from the style options of zarr_options(); plain text
# otherwise, or with options(zarr.cli = FALSE). Descendant classes in domain
# packages read the theme with zarr_options("zarr_theme") and print their
# details with cli when it is a list.

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

# Lines "label : value" of a node summary, through cli or cat().
print_lines <- function(title, labels, values) {
  if (use_cli()) {
    div <- cli::cli_div(theme = zarr_theme())
    cli::cli_h1(title)
    # padded with no-break spaces: cli squeezes ordinary ones
    padded <- gsub(" ", "\u00a0", formatC(labels, width = -max(nchar(labels))), fixed = TRUE)
    for (i in seq_along(labels))
      cli::cli_text("{.label {padded[i]} :} {.text {values[i]}}")
    cli::cli_end(div)
  } else {
    cat(title, "\n")
    w <- max(nchar(labels))
    for (i in seq_along(labels)) cat(sprintf("%-*s : %s\n", w, labels[i], values[i]))
  }
  invisible(NULL)
}

# A block of (nested) attributes, through cli or cat().
print_attribute_block <- function(atts, title = "Attributes") {
  if (use_cli()) {
    div <- cli::cli_div(theme = zarr_theme())
    cli::cli_rule(title)
    print_attribute_levels_cli(atts)
    cli::cli_end(div)
  } else {
    cat(title, ":\n", sep = "")
    print_attribute_levels_text(atts, 1L)
  }
  invisible(NULL)
}

attr_scalar_text <- function(v) {
  if (is.null(v)) return("null")
  if (is.list(v)) return(paste0("[", paste(vapply(v, attr_scalar_text, ""), collapse = ", "), "]"))
  if (length(v) == 1L) format(v) else paste0("[", paste(format(v), collapse = ", "), "]")
}

print_attribute_levels_text <- function(atts, indent) {
  pad <- strrep("  ", indent)
  nm <- names(atts) %||% paste0("[", seq_along(atts), "]")
  w <- max(nchar(nm))
  for (i in seq_along(atts)) {
    v <- atts[[i]]
    if (is.list(v) && (attr_is_object(v) || any(vapply(v, is.list, TRUE)))) {
      cat(pad, formatC(nm[i], width = -w), " :\n", sep = "")
      print_attribute_levels_text(v, indent + 1L)
    } else {
      cat(pad, formatC(nm[i], width = -w), " : ", attr_scalar_text(v), "\n", sep = "")
    }
  }
}

print_attribute_levels_cli <- function(atts) {
  nm <- names(atts) %||% paste0("[", seq_along(atts), "]")
  ul <- cli::cli_ul()
  for (i in seq_along(atts)) {
    v <- atts[[i]]
    if (is.list(v) && (attr_is_object(v) || any(vapply(v, is.list, TRUE)))) {
      cli::cli_li("{.label {nm[i]}:}")
      print_attribute_levels_cli(v)
    } else {
      cli::cli_li("{.label {nm[i]}:} {.text {attr_scalar_text(v)}}")
    }
  }
  cli::cli_end(ul)
}
