# CF decoding (the netCDF Climate and Forecast conventions, as xarray applies
# them to Zarr): packed values, missing values and times. The raw values are
# read by the engine in one call; everything here works on whole vectors.

# ---- what an array's attributes say ----

# The `decode` argument of reads: TRUE, FALSE, or a list of settings that
# decodes with them: list(valid_range = TRUE) applies valid_min, valid_max
# and valid_range (as netCDF does; xarray, GDAL and terra do not, nor does
# this package unless asked, here or by the zarr.decode_valid_range option).
cf_decode_settings <- function(decode, path = NULL) {
  valid <- isTRUE(getOption("zarr.decode_valid_range", FALSE))
  if (is.list(decode)) {
    bad <- setdiff(names(decode) %||% rep("", length(decode)), "valid_range")
    if (length(bad) || !is.null(decode$valid_range) && !is_flag(decode$valid_range))
      zarr_abort("argument", "decode must be TRUE, FALSE or a list such as list(valid_range = TRUE)", array = path)
    return(list(valid_range = decode$valid_range %||% valid))
  }
  if (isTRUE(decode)) list(valid_range = valid)
}

# The CF encoding of an array, or NULL when its attributes hold none (a raw
# read is then returned as it is). `dt` is its zarr_data_type; the valid
# range is part of it only when `valid_range` (see cf_decode_settings()).
cf_encoding <- function(attrs, dt, path = NULL, valid_range = FALSE) {
  if (!length(attrs) || !any(names(attrs) %in% cf_attribute_names)) return(NULL)
  if (!isTRUE(valid_range)) attrs[c("valid_min", "valid_max", "valid_range")] <- NULL
  kind <- dtype_kind(dt$data_type)
  if (is.na(kind) || !kind %in% c("i", "u", "f")) return(NULL)
  num <- function(a) {
    v <- attrs[[a]]
    if (is.null(v)) return(NULL)
    v <- suppressWarnings(as.numeric(unlist(json_unliteral(v))))
    if (!length(v) || all(is.na(v) & !is.nan(v))) NULL else v
  }
  units <- attrs[["units"]]
  units <- if (is.character(units) && length(units) == 1L) units else NULL
  time <- if (!is.null(units) && grepl("\\ssince\\s", units)) cf_parse_units(units, path) else NULL
  unsigned <- attrs[["_Unsigned"]]
  unsigned <- if (is.null(unsigned)) NA else tolower(as.character(unsigned)[1L]) %in% c("true", "1")
  enc <- list(scale = num("scale_factor")[1L], offset = num("add_offset")[1L],
              fill = num("_FillValue"), missing = num("missing_value"),
              valid_min = num("valid_min")[1L], valid_max = num("valid_max")[1L],
              valid_range = num("valid_range"), unsigned = unsigned, time = time,
              calendar = tolower(as.character(attrs[["calendar"]] %||% "standard")[1L]),
              units = units, kind = kind, bits = dtype_info(dt$data_type)$size * 8L)
  has <- !is.null(enc$scale) || !is.null(enc$offset) || !is.null(enc$fill) || !is.null(enc$missing) ||
    !is.null(enc$valid_min) || !is.null(enc$valid_max) || !is.null(enc$valid_range) ||
    !is.na(enc$unsigned) || !is.null(time)
  if (!has) return(NULL)
  if (!is.null(time)) cf_calendar_kind(enc$calendar, path)
  # xarray takes the Zarr fill value as _FillValue; here only one that marks
  # missing values does (a fill value of zero is an ordinary value)
  if (fill_is_missing_marker(dt) && !is.null(dt$fill_value))
    enc$fill <- unique(c(enc$fill, suppressWarnings(as.numeric(unlist(dt$fill_value)))))
  enc
}

cf_attribute_names <- c("scale_factor", "add_offset", "_FillValue", "missing_value", "valid_min", "valid_max",
                        "valid_range", "_Unsigned", "units")

# What a decoded read of an array returns, for print(): the R type and what
# decoding does, such as "double: int16 * 0.01 + 285, -32767 -> NA; units
# K", or NULL when reads return the stored values.
cf_read_summary <- function(attrs, dt, path = NULL) {
  enc <- tryCatch(cf_encoding(attrs, dt, path), error = function(e) NULL)
  if (is.null(enc)) return(NULL)
  num <- function(v) format(v, digits = 15)
  packed <- !is.null(enc$scale) || !is.null(enc$offset)
  unsigned <- (isTRUE(enc$unsigned) && enc$kind == "i") || (identical(enc$unsigned, FALSE) && enc$kind == "u")
  markers <- unique(c(enc$fill, enc$missing))
  type <- if (!is.null(enc$time)) {
    if (cf_calendar_kind(enc$calendar) %in% c("standard", "gregorian")) "Date or POSIXct" else "CFTime or ISO 8601 strings"
  } else if (packed || unsigned) "double" else dt$Rtype
  how <- c(if (unsigned) sprintf("%s as %s", dt$data_type, if (enc$kind == "i") "unsigned" else "signed"),
           if (packed) sprintf("stored * %s + %s", num(enc$scale %||% 1), num(enc$offset %||% 0)),
           if (length(markers)) sprintf("%s -> NA", paste(num(markers), collapse = ", ")),
           if (!is.null(enc$time)) sprintf("%s, calendar %s", enc$units, enc$calendar)
           else if (!is.null(enc$units)) sprintf("units %s", enc$units))
  paste0(type, if (length(how)) paste0(" (", paste(how, collapse = "; "), ")"))
}

# Decode raw values read from an array (any shape; dim kept).
cf_decode <- function(x, enc) {
  d <- dim(x)
  # _Unsigned: the stored bits of a signed integer are an unsigned number
  # (and "false" on an unsigned type: a signed one, as netCDF-3 bytes)
  to_unsigned <- isTRUE(enc$unsigned) && enc$kind == "i"
  to_signed <- identical(enc$unsigned, FALSE) && enc$kind == "u"
  flip <- function(v) {
    if (is.null(v)) return(v)
    m <- 2^enc$bits
    if (to_unsigned) ifelse(!is.na(v) & v < 0, v + m, v) else ifelse(!is.na(v) & v >= m / 2, v - m, v)
  }
  if (to_unsigned || to_signed) {
    x <- flip(as.double(x))
    enc$fill <- flip(enc$fill)
    enc$missing <- flip(enc$missing)
  }
  # missing values, compared with the packed values as netCDF does (one
  # pass per marker: there are a few, and `==` is much faster than %in%)
  lo <- enc$valid_min %||% if (length(enc$valid_range) == 2L) min(enc$valid_range)
  hi <- enc$valid_max %||% if (length(enc$valid_range) == 2L) max(enc$valid_range)
  # packed integers or doubles: masking and unpacking in one pass in C (the
  # R expressions below allocate three times as much and take 5x longer)
  if ((!is.null(enc$scale) || !is.null(enc$offset)) && (is.integer(x) || (is.double(x) && !is.object(x)))) {
    x <- .Call(ffi_cf_unpack, x, as.double(enc$scale %||% 1), as.double(enc$offset %||% 0),
               as.double(unique(c(enc$fill, enc$missing))), as.double(c(lo %||% NA, hi %||% NA)))
    if (!is.null(enc$time)) return(cf_time(x, enc$time, enc$calendar, d))
    if (!is.null(d) && length(d) > 1L) dim(x) <- d
    return(x)
  }
  # (an integer marker is compared as an integer: no double copy of x)
  same_type <- function(m) if (is.integer(x) && !is.na(m) && m == trunc(m) && abs(m) <= .Machine$integer.max) as.integer(m) else m
  miss <- c(unlist(lapply(unique(c(enc$fill, enc$missing)), function(m) which(x == same_type(m)))),
            if (!is.null(lo)) which(x < same_type(lo)), if (!is.null(hi)) which(x > same_type(hi)))
  if (length(miss)) x[miss] <- NA
  # integer * double is a double, in one allocation (integer64 stays
  # integer64 in bit64's arithmetic, so it is converted first)
  if (inherits(x, "integer64") && (!is.null(enc$scale) || !is.null(enc$offset))) x <- as.double(x)
  # in one expression, `+` reuses the temporary of `*`
  if (!is.null(enc$scale) || !is.null(enc$offset)) x <- x * (enc$scale %||% 1) + (enc$offset %||% 0)
  if (!is.null(enc$time)) return(cf_time(x, enc$time, enc$calendar, d))
  if (!is.null(d) && length(d) > 1L) dim(x) <- d
  x
}

# Encode values to be written (the inverse of cf_decode(), as xarray
# encodes): times -> offsets in the units and calendar, packing as
# round((v - add_offset) / scale_factor) for integer types, _Unsigned back to
# the signed bits, NA -> _FillValue (or the first missing_value). Values that
# are not times are taken as decoded values; plain numbers written to a time
# array are taken as offsets already.
cf_encode <- function(x, enc, path = NULL) {
  d <- dim(x)
  if (!is.null(enc$time) && (inherits(x, c("Date", "POSIXt", "CFTime")) || is.character(x))) {
    if (inherits(x, "CFTime")) x <- x$as_timestamp()
    u <- enc$time
    origin <- cf_cal_days(u$year, u$month, u$day, enc$calendar) * 86400 + u$sod - u$tz
    t <- if (is.character(x)) {
      bad <- !is.na(x) & !grepl("^\\s*[+-]?[0-9]{1,6}-[0-9]{1,2}-[0-9]{1,2}", x)
      if (any(bad)) zarr_abort("value", sprintf("'%s' is not a time", x[bad][1L]), array = path)
      out <- rep(NA_real_, length(x))
      ok <- !is.na(x)
      if (any(ok)) out[ok] <- cf_user_time(x[ok], enc$calendar, path)
      out
    } else cf_user_time(x, enc$calendar, path)
    x <- (t - origin) / u$seconds
  } else if (inherits(x, "integer64")) {
    if (is.null(enc$scale) && is.null(enc$offset) && !isTRUE(enc$unsigned)) return(x)
    x <- as.double(x)
  }
  if (is.logical(x)) x <- as.double(x)
  if (!is.numeric(x)) return(x)
  na <- is.na(x) # NaN too: a missing value to xarray
  if (!is.null(enc$scale) || !is.null(enc$offset)) x <- (x - (enc$offset %||% 0)) / (enc$scale %||% 1)
  if (enc$kind %in% c("i", "u") && is.double(x)) x <- round(x)
  # _Unsigned: unsigned numbers stored in a signed type (and the reverse)
  m <- 2^enc$bits
  if (isTRUE(enc$unsigned) && enc$kind == "i") x <- ifelse(!na & x >= m / 2, x - m, x)
  if (identical(enc$unsigned, FALSE) && enc$kind == "u") x <- ifelse(!na & x < 0, x + m, x)
  marker <- c(enc$fill, enc$missing)[1L]
  if (any(na) && !is.null(marker) && !is.na(marker)) x[na] <- marker
  if (enc$kind %in% c("i", "u") && is.double(x) && enc$bits <= 32L && !(enc$kind == "u" && enc$bits == 32L) &&
      all(is.na(x) | abs(x) <= .Machine$integer.max)) x <- as.integer(x)
  if (!is.null(d)) dim(x) <- d
  x
}

# ---- time ----

cf_unit_seconds <- c(days = 86400, day = 86400, d = 86400, hours = 3600, hour = 3600, hr = 3600, hrs = 3600,
                     h = 3600, minutes = 60, minute = 60, min = 60, mins = 60, seconds = 1, second = 1,
                     sec = 1, secs = 1, s = 1, milliseconds = 1e-3, millisecond = 1e-3, msec = 1e-3,
                     msecs = 1e-3, ms = 1e-3, microseconds = 1e-6, microsecond = 1e-6, usec = 1e-6,
                     usecs = 1e-6, us = 1e-6, nanoseconds = 1e-9, nanosecond = 1e-9, ns = 1e-9)

# "<unit> since <date>[ <time>][ <zone>]" -> its parts, or NULL when these
# are not time units (an origin that cannot be read is an error: a date
# decoded from it would be wrong).
cf_parse_units <- function(units, path = NULL) {
  m <- regmatches(units, regexec(paste0(
    "^\\s*([A-Za-z]+)\\s+since\\s+([+-]?[0-9]{1,6})-([0-9]{1,2})-([0-9]{1,2})",
    "(?:[T ]\\s*([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2}(?:[.][0-9]*)?))?)?",
    "\\s*(Z|UTC|GMT|[+-][0-9]{1,2}(?::?[0-9]{2})?)?\\s*$"), units, perl = TRUE))
  ok <- lengths(m) == 9L
  m <- matrix(unlist(lapply(m, function(p) if (length(p) == 9L) p else rep("", 9L))), ncol = 9L, byrow = TRUE)
  unit <- tolower(m[, 2L])
  bad <- !ok | is.na(cf_unit_seconds[unit])
  if (any(bad)) zarr_abort("value", sprintf("time units '%s' cannot be read%s", units[bad][1L], cf_raw_hint(path)), array = path)
  num <- function(s) ifelse(nzchar(s), suppressWarnings(as.numeric(s)), 0)
  # zone offsets: "+5", "+05", "+0530", "+05:30", "-06:30"
  z <- sub(":", "", substring(m[, 9L], 2L))
  long <- nchar(z) > 2L
  hm <- num(ifelse(long, substr(z, 1L, nchar(z) - 2L), z)) * 3600 + num(ifelse(long, substring(z, nchar(z) - 1L), "")) * 60
  tz <- ifelse(grepl("^[+-]", m[, 9L]), ifelse(substr(m[, 9L], 1L, 1L) == "-", -hm, hm), 0)
  list(unit = unit, seconds = unname(cf_unit_seconds[unit]), year = num(m[, 3L]), month = num(m[, 4L]),
       day = num(m[, 5L]), sod = num(m[, 6L]) * 3600 + num(m[, 7L]) * 60 + num(m[, 8L]), tz = tz,
       origin = trimws(sub("^\\s*[A-Za-z]+\\s+since\\s+", "", units)))
}

# Days since 1970-01-01 of a date, and the date of such a day count, in each
# calendar (vectorised; Gregorian and Julian by their 400- and 4-year cycles,
# counted from March so that the leap day is the last of a year).
cf_cal_days <- function(y, m, d, calendar) {
  switch(cf_calendar_kind(calendar),
    gregorian = {
      y <- y - (m <= 2); era <- floor(y / 400); yoe <- y - era * 400
      doy <- (153 * ((m + 9) %% 12) + 2) %/% 5 + d - 1
      era * 146097 + yoe * 365 + yoe %/% 4 - yoe %/% 100 + doy - 719468
    },
    julian = {
      y <- y - (m <= 2); era <- floor(y / 4); yoe <- y - era * 4
      doy <- (153 * ((m + 9) %% 12) + 2) %/% 5 + d - 1
      era * 1461 + yoe * 365 + doy - 719470
    },
    standard = {
      jul <- y < 1582 | (y == 1582 & (m < 10 | (m == 10 & d < 15)))
      ifelse(jul, cf_cal_days(y, m, d, "julian"), cf_cal_days(y, m, d, "proleptic_gregorian"))
    },
    noleap = (y - 1970) * 365 + c(0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)[m] + d - 1,
    all_leap = (y - 1970) * 366 + c(0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335)[m] + d - 1,
    `360_day` = (y - 1970) * 360 + (m - 1) * 30 + d - 1
  )
}

cf_cal_date <- function(z, calendar) {
  month_of <- function(doy, cum) {
    m <- findInterval(doy, cum)
    list(m = m, d = doy - cum[m] + 1)
  }
  switch(cf_calendar_kind(calendar),
    gregorian = {
      z <- z + 719468; era <- floor(z / 146097); doe <- z - era * 146097
      yoe <- (doe - doe %/% 1460 + doe %/% 36524 - doe %/% 146096) %/% 365
      doy <- doe - (365 * yoe + yoe %/% 4 - yoe %/% 100)
      mp <- (5 * doy + 2) %/% 153
      m <- ifelse(mp < 10, mp + 3, mp - 9)
      list(y = yoe + era * 400 + (m <= 2), m = m, d = doy - (153 * mp + 2) %/% 5 + 1)
    },
    julian = {
      z <- z + 719470; era <- floor(z / 1461); doe <- z - era * 1461
      yoe <- pmin(doe %/% 365, 3)
      doy <- doe - 365 * yoe
      mp <- (5 * doy + 2) %/% 153
      m <- ifelse(mp < 10, mp + 3, mp - 9)
      list(y = yoe + era * 4 + (m <= 2), m = m, d = doy - (153 * mp + 2) %/% 5 + 1)
    },
    standard = {
      g <- cf_cal_date(z, "proleptic_gregorian")
      j <- cf_cal_date(z, "julian")
      jul <- z < cf_gregorian_start
      list(y = ifelse(jul, j$y, g$y), m = ifelse(jul, j$m, g$m), d = ifelse(jul, j$d, g$d))
    },
    noleap = c(list(y = 1970 + z %/% 365), month_of(z %% 365, c(0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334))),
    all_leap = c(list(y = 1970 + z %/% 366), month_of(z %% 366, c(0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335))),
    `360_day` = list(y = 1970 + z %/% 360, m = (z %% 360) %/% 30 + 1, d = z %% 30 + 1)
  )
}

# 1582-10-15, the first day of the Gregorian calendar, in days since 1970
cf_gregorian_start <- -141427

cf_calendar_kind <- function(calendar, path = NULL) {
  switch(calendar,
    standard = , gregorian = "standard",
    proleptic_gregorian = "gregorian", julian = "julian",
    noleap = , `365_day` = "noleap", all_leap = , `366_day` = "all_leap",
    `360_day` = "360_day", none = "none",
    zarr_abort("value", sprintf("unknown calendar '%s'%s", calendar, cf_raw_hint(path)), array = path))
}

# errors of decoding say how to read the stored values anyway
cf_raw_hint <- function(path) if (is.null(path)) "" else " (decode = FALSE reads the stored values)"

# Offsets in the time unit -> seconds (exact for integer64: whole seconds and
# their fraction are taken apart before anything becomes a double).
cf_offset_seconds <- function(x, u) {
  if (inherits(x, "integer64")) {
    per <- round(1 / u$seconds)
    if (u$seconds < 1 && per > 1) {
      p <- bit64::as.integer64(per)
      return(as.double(x %/% p) + as.double(x %% p) / per)
    }
    x <- as.double(x)
  }
  as.double(x) * u$seconds
}

# Times: POSIXct (UTC) in the standard calendars, Date when the unit is days
# from a midnight and every value is a whole day; other calendars (and
# standard dates before 1582-10-15, Julian there) give CFtime objects, or ISO
# 8601 strings without the CFtime package; calendar "none" keeps the numbers.
cf_time <- function(x, u, calendar, d = NULL) {
  kind <- cf_calendar_kind(calendar)
  if (kind == "none") return(x)
  secs <- cf_offset_seconds(x, u)
  origin <- cf_cal_days(u$year, u$month, u$day, calendar) * 86400 + u$sod - u$tz
  t <- origin + secs
  keep_dim <- function(v) {
    if (!is.null(d) && length(d) > 1L) dim(v) <- d
    v
  }
  if (kind == "gregorian" || (kind == "standard" && all(is.na(t) | t >= cf_gregorian_start * 86400))) {
    if (u$seconds == 86400 && u$sod == 0 && u$tz == 0 && all(is.na(x) | x == trunc(x)))
      return(keep_dim(structure(t / 86400, class = "Date")))
    return(keep_dim(structure(t, class = c("POSIXct", "POSIXt"), tzone = "UTC")))
  }
  # CFtime objects are series: arrays of more dimensions (bounds) are strings
  # (CFtime takes no missing offsets)
  if ((is.null(d) || length(d) < 2L) && !anyNA(x) && requireNamespace("CFtime", quietly = TRUE)) {
    # CFtime knows days to seconds; finer units are given in seconds
    unit <- if (u$seconds >= 1) u$unit else "seconds"
    return(withCallingHandlers(
      CFtime::CFtime(paste(unit, "since", u$origin), calendar, if (u$seconds >= 1) as.double(x) else secs),
      warning = function(w) if (grepl("monoton", conditionMessage(w))) invokeRestart("muffleWarning")))
  }
  keep_dim(cf_format_time(t, calendar))
}

# seconds since 1970-01-01 of a calendar -> "YYYY-MM-DDTHH:MM:SS"
cf_format_time <- function(t, calendar) {
  day <- floor(t / 86400)
  s <- t - day * 86400
  ymd <- cf_cal_date(day, calendar)
  out <- sprintf("%04d-%02d-%02dT%02d:%02d:%s", as.integer(ymd$y), as.integer(ymd$m), as.integer(ymd$d),
                 as.integer(s %/% 3600), as.integer(s %% 3600 %/% 60),
                 ifelse(s %% 60 == trunc(s %% 60), sprintf("%02d", as.integer(s %% 60)), sprintf("%09.6f", s %% 60)))
  out[is.na(t)] <- NA_character_
  out
}

# Times given by a user (character, Date, POSIXct) -> seconds since
# 1970-01-01 in `calendar`, the scale cf_time_key() gives coordinates.
# A date the calendar does not have (2001-02-29 in "standard", 2001-02-30
# outside "360_day", a day of the 1582 Gregorian gap) is an error naming the
# date and the calendar, never moved to another day.
cf_user_time <- function(v, calendar, path = NULL) {
  if (inherits(v, "Date")) return(as.numeric(v) * 86400)
  if (inherits(v, "POSIXt")) return(as.numeric(as.POSIXct(v)))
  if (is.numeric(v)) return(as.numeric(v))
  p <- cf_parse_units(paste("seconds since", sub("T", " ", as.character(v), fixed = TRUE)))
  days <- cf_cal_days(p$year, p$month, p$day, calendar)
  back <- cf_cal_date(days, calendar)
  bad <- which(is.na(days) | p$month < 1 | p$month > 12 | back$y != p$year | back$m != p$month | back$d != p$day)
  if (length(bad))
    zarr_abort("value", sprintf("'%s' is not a date of the '%s' calendar", as.character(v)[bad[1L]], calendar), array = path)
  days * 86400 + p$sod - p$tz
}

# The numbers coordinates are compared on: times as seconds since 1970 in
# their calendar, anything else as it is.
cf_time_key <- function(v) {
  if (inherits(v, "Date")) return(as.numeric(v) * 86400)
  if (inherits(v, "POSIXt")) return(as.numeric(v))
  if (inherits(v, "CFTime")) return(cf_user_time(v$as_timestamp(), v$cal$name))
  v
}

# ---- coordinates and selection ----

# The arrays that hold the coordinate values of an array's dimensions: 1-d
# arrays of the same group named as the dimension, as long as it.
cf_coordinate_arrays <- function(x) {
  dn <- x$dimension_names
  shape <- x$shape
  out <- stats::setNames(vector("list", length(shape)), if (is.null(dn)) rep("", length(shape)) else ifelse(is.na(dn), "", dn))
  parent <- x$parent
  if (is.null(dn) || !inherits(parent, "zarr_group")) return(out)
  for (d in seq_along(shape)) {
    if (is.na(dn[d])) next
    # a coordinate variable is its own coordinate
    cand <- if (identical(dn[d], x$name)) x else tryCatch(parent$get_node(dn[d]), error = function(e) NULL)
    if (inherits(cand, "zarr_array") && length(cand$shape) == 1L && cand$shape == shape[d]) out[[d]] <- cand
  }
  out
}

# The dimension names of an array, after checking that every argument of
# sel() or isel() names one of them.
cf_check_dim_args <- function(x, args, what) {
  dims <- x$dimension_names %||% rep(NA_character_, length(x$shape))
  dims[is.na(dims)] <- ""
  if (length(args) && (is.null(names(args)) || !all(names(args) %in% dims[nzchar(dims)])))
    zarr_abort("index", sprintf("%s() takes arguments named by the dimensions (%s)", what, paste(dims, collapse = ", ")),
               array = x$path)
  dims
}

# User values for one dimension -> 0-based indices (a zarr_range when the
# coordinates are monotonic and a range is asked).
cf_sel_index <- function(coord, v, method, dim_name, path) {
  if (is.null(coord)) zarr_abort("index", sprintf("dimension '%s' has no coordinate values", dim_name), array = path)
  cal <- if (inherits(coord, "CFTime")) coord$cal$name else "proleptic_gregorian"
  key <- cf_time_key(coord)
  is_time <- inherits(coord, "CFTime") || inherits(coord, c("Date", "POSIXt"))
  if (is_time) v <- cf_user_time(v, cal, path)
  # what the coordinate holds, for the messages: its range (and calendar)
  span <- if (!is.numeric(key) || !length(key) || all(is.na(key))) "" else {
    r <- range(key, na.rm = TRUE)
    r <- if (is_time) cf_format_time(r, cal) else format(r, trim = TRUE)
    sprintf(" (the coordinate runs from %s to %s%s)", r[1L], r[2L], if (is_time) sprintf(", calendar '%s'", cal) else "")
  }
  shown <- function(x) if (is_time) cf_format_time(x, cal) else format(x)
  if (!is.numeric(key) || !is.numeric(v)) zarr_abort("index", sprintf("dimension '%s': values of another kind than its coordinates", dim_name), array = path)
  n <- length(key)
  if (length(v) == 2L) {
    lo <- min(v); hi <- max(v)
    i <- which(key >= lo & key <= hi)
    if (!length(i)) zarr_abort("index", sprintf("dimension '%s': no coordinate between %s and %s%s", dim_name, shown(lo), shown(hi), span), array = path)
    return(as_range_if_contiguous(i - 1))
  }
  if (length(v) != 1L) zarr_abort("index", sprintf("dimension '%s': give one value or a range of two", dim_name), array = path)
  if (identical(method, "nearest")) return(zarr_range(which.min(abs(key - v)) - 1, 1))
  i <- which(key == v)
  if (!length(i)) zarr_abort("index", sprintf("dimension '%s': no coordinate equals %s%s; method = \"nearest\" takes the closest", dim_name, shown(v), span), array = path)
  zarr_range(i[1L] - 1, 1)
}

# Elements of coordinate values (CFtime objects too)
cf_subset <- function(cv, i) {
  if (inherits(cv, "CFTime")) CFtime::CFtime(cv$cal$definition, cv$cal$name, cv$offsets[i]) else cv[i]
}

# A decoded selection of an array: what converters to other classes take.
new_cf_data <- function(x, sel, coords, decode) {
  sel <- lapply(sel, function(s) if (inherits(s, "zarr_range")) s else structure(as.numeric(s), class = "zarr_index"))
  values <- x$read(sel, decode = decode)
  if (length(x$shape) == 1L && is.null(dim(values)) && !inherits(values, "CFTime")) dim(values) <- length(values)
  idx <- lapply(sel, function(s) as.numeric(unclass(sel_indices(s))) + 1)
  cs <- lapply(seq_along(idx), function(d) {
    cv <- coords[[d]]
    if (is.null(cv)) NULL else cf_subset(cv, idx[[d]])
  })
  names(cs) <- names(coords)
  dims <- names(coords)
  enc <- cf_encoding(x$attributes, x$data_type, x$path)
  # what converters need from other arrays: the axes of the coordinates and
  # the grid mapping's attributes (CRS)
  ca <- cf_coordinate_arrays(x)
  gm <- x$attributes[["grid_mapping"]]
  gm <- if (is.character(gm) && length(gm) == 1L && inherits(x$parent, "zarr_group"))
    tryCatch(x$parent$get_node(strsplit(trimws(gm), "[[:space:]:]+")[[1L]][1L])$attributes, error = function(e) NULL)
  structure(list(name = x$name, values = values, dims = dims, coords = cs, index = stats::setNames(idx, dims),
                 units = x$attributes[["units"]], calendar = if (!is.null(enc$time)) enc$calendar,
                 attributes = x$attributes, path = x$path,
                 axes = cf_axes(dims, lapply(ca, function(a) if (!is.null(a)) a$attributes)), grid_mapping = gm,
                 geo = geo_node_props(x),
                 # stored values are not what as_zarr() writes back as the source
                 sources = if (!isFALSE(decode)) cf_sources_of(x, ca)),
            class = "zarr_cf_data")
}

# drop = TRUE of sel() and isel(): the dimensions of one element leave
# values, dims, coords, index and axes; their coordinate (or index) goes to
# `dropped`, as xarray keeps a scalar coordinate.
cf_drop <- function(x, drop) {
  if (!is_flag(drop)) zarr_abort("argument", "drop must be TRUE or FALSE", array = x$path)
  one <- lengths(x$index) == 1L
  if (!drop || !any(one) || inherits(x$values, "CFTime")) return(x)
  keep <- !one
  x$dropped <- stats::setNames(lapply(which(one), function(d) cf_dim_values(x, d)),
                               ifelse(nzchar(x$dims[one]), x$dims[one], paste0("dim", which(one))))
  v <- x$values
  dim(v) <- if (sum(keep)) unname(lengths(x$index)[keep])
  x$values <- v
  x$dims <- x$dims[keep]
  x$coords <- x$coords[keep]
  x$index <- x$index[keep]
  if (!is.null(x$axes)) x$axes <- x$axes[keep]
  x
}

# What as_zarr() needs of the array, its coordinate arrays and its group
# (see cf_sources())
cf_sources_of <- function(x, ca) {
  ca <- ca[!vapply(ca, is.null, TRUE)]
  vars <- lapply(ca, cf_source_of)
  vars[[cf_value_name(x)]] <- cf_source_of(x)
  group <- if (inherits(x$parent, "zarr_group")) tryCatch(x$parent$attributes, error = function(e) NULL)
  list(variables = vars, group = group)
}

#' Decoded values with their coordinates
#'
#' What [`zarr_array`][zarr_array]'s `sel()` and `isel()` and [zarr_dataset]'s
#' `sel()` return: the decoded values of a selection with the coordinate values
#' of each of its dimensions. A list of class `zarr_cf_data` with elements
#' `name`, `path`, `values` (an array whose dimensions are those of the
#' Zarr array, in the same order), `dims` (the dimension names), `coords` (a
#' list, one element per dimension named by it: the decoded coordinate
#' values of the selected elements, `NULL` for a dimension without a
#' coordinate variable), `index` (the 1-based indices selected along each
#' dimension), `units`, `calendar` (for times) and `attributes` (all
#' attributes of the array). With `drop = TRUE`, the dimensions selected at
#' a single element are left out of `values`, `dims`, `coords` and `index`
#' (a single dimension left stays a 1-d array), and `dropped` holds their
#' coordinate values (or indices), named by dimension.
#'
#' `as.data.frame()` gives one row per element: a column per dimension (its
#' coordinate values, or the index where there are none) and one with the
#' values, named after the array. `as.array()` gives the values with the
#' coordinates as dimnames.
#'
#' The data frame remembers the arrays it came from (in its attribute
#' `"zarr_cf"`): [as_zarr()] writes it back as they were (see "Datasets"
#' there).
#' @param x A `zarr_cf_data` object.
#' @param row.names,optional Ignored.
#' @param ... Ignored.
#' @return `as.data.frame()`: a data frame; `as.array()`: an array.
#' @examples
#' z <- open_zarr(system.file("extdata", "volcano.zarr", package = "zarr"), read_only = TRUE)
#' v <- z[["/elevation"]]$isel(x = 1:3, y = 1:2)
#' v
#' v$coords
#' head(as.data.frame(v))
#' @name zarr_cf_data
#' @seealso [zarr_array], [zarr_dataset], [zarr-plot] (`plot()` of a
#'   selection)
NULL

cf_coord_column <- function(cv, idx) {
  if (is.null(cv)) return(idx)
  if (inherits(cv, "CFTime")) return(cv$as_timestamp())
  cv
}

#' @rdname zarr_cf_data
#' @export
as.data.frame.zarr_cf_data <- function(x, row.names = NULL, optional = FALSE, ...) {
  cols <- lapply(seq_along(x$dims), function(d) cf_coord_column(x$coords[[d]], x$index[[d]]))
  names(cols) <- ifelse(nzchar(x$dims), x$dims, paste0("dim", seq_along(x$dims)))
  df <- expand.grid(cols, KEEP.OUT.ATTRS = FALSE, stringsAsFactors = FALSE)
  df[[cf_value_name(x)]] <- cf_value_column(x$values)
  cf_set_sources(df, list(x))
}

cf_value_name <- function(x) if (nzchar(x$name)) x$name else "value"

# values as a plain vector, keeping time classes (CFtime: ISO strings)
cf_value_column <- function(v) {
  if (inherits(v, "CFTime")) return(v$as_timestamp())
  dim(v) <- NULL
  v
}

#' @rdname zarr_cf_data
#' @export
as.array.zarr_cf_data <- function(x, ...) {
  v <- x$values
  if (inherits(v, "CFTime")) v <- v$as_timestamp()
  dn <- lapply(seq_along(x$dims), function(d) as.character(cf_coord_column(x$coords[[d]], x$index[[d]])))
  if (is.null(dim(v))) dim(v) <- length(v)
  dimnames(v) <- stats::setNames(dn, x$dims)
  v
}

#' @export
print.zarr_cf_data <- function(x, ...) {
  cat(sprintf("<decoded Zarr array> %s: %s\n", x$path, paste(sprintf("%s = %d", x$dims, lengths(x$index)), collapse = ", ")))
  if (!is.null(x$units)) cat("Units:", x$units, if (!is.null(x$calendar)) paste0("(calendar ", x$calendar, ")"), "\n")
  for (d in seq_along(x$dims)) {
    cv <- x$coords[[d]]
    if (is.null(cv)) next
    txt <- if (inherits(cv, "CFTime")) cv$as_timestamp() else format(cv)
    cat(sprintf("  %s: %s\n", x$dims[d], if (length(txt) > 4L) paste(txt[1L], "...", txt[length(txt)]) else paste(txt, collapse = ", ")))
  }
  if (length(x$dropped))
    cat("Dropped:", paste(names(x$dropped), "=", vapply(x$dropped, function(v) format(v)[1L], ""), collapse = ", "), "\n")
  v <- x$values
  cat("Values: ")
  if (inherits(v, "CFTime")) utils::str(v$as_timestamp(), give.head = FALSE) else utils::str(v, give.head = FALSE)
  invisible(x)
}

#' @rdname zarr_cf_data
#' @export
as.data.frame.zarr_array <- function(x, row.names = NULL, optional = FALSE, ...) as.data.frame(x$sel())

# ---- datasets ----

#' An xarray dataset: the arrays of a group, decoded
#'
#' A Zarr group written by xarray (or any group whose arrays name their
#' dimensions) seen as a dataset: its data variables, its coordinate
#' variables (1-d arrays named as a dimension, the variables named by
#' `coordinates` attributes) and their bounds (named by `bounds`
#' attributes). Variables read decoded (see [cf-decoding]).
#'
#' `as.data.frame()` of a dataset gives the long format: one row per
#' element, one column per dimension with its coordinate values and one per
#' variable. The variables must have the same dimensions; by default they
#' are the data variables with the dimensions of the first data variable
#' that has the most.
#' @param x A [zarr] object, a [zarr_group], or the location of a store
#'   (opened read-only, as [open_zarr()] does).
#' @return `zarr_dataset()`: a `zarr_dataset` object.
#' @seealso [zarr_cf_data], [zarr_array] (its `sel()`, `coords()` and `cf()`
#'   methods), [cf-decoding]
#' @export
#' @examples
#' z <- create_zarr()
#' b <- define_array("float64", 3)
#' b$dimension_names <- "lat"
#' z$root$add_array("lat", b)$write(c(10, 20, 30))
#' b <- define_array("int16", c(2, 3))
#' b$dimension_names <- c("time", "lat")
#' t2 <- z$root$add_array("t2m", b)
#' t2$write(matrix(1:6, 2))
#' t2$set_attribute("scale_factor", 0.5)
#' ds <- zarr_dataset(z)
#' ds
#' as.data.frame(ds)
zarr_dataset <- function(x) {
  if (is.character(x)) x <- open_zarr(x, read_only = TRUE)
  if (inherits(x, "zarr")) x <- x$root
  if (!inherits(x, "zarr_group")) zarr_abort("argument", "a dataset is a zarr_group (or a zarr object, or a store location)")
  zarr_dataset_class$new(x)
}

#' The class of datasets
#'
#' The R6 class of the objects [zarr_dataset()] makes: use that function to
#' make one.
#' @seealso [zarr_dataset()]
#' @examples
#' z <- open_zarr(system.file("extdata", "volcano.zarr", package = "zarr"), read_only = TRUE)
#' ds <- zarr_dataset(z)
#' ds
#' names(ds)
#' s <- ds$sel(x = c(100, 200), y = c(100, 150))
#' dim(s$elevation$values)
#' @keywords internal
zarr_dataset_class <- R6::R6Class("zarr_dataset",
  cloneable = FALSE,
  public = list(
    #' @field group The [zarr_group].
    group = NULL,
    #' @description Internal: use [zarr_dataset()].
    #' @param group A [zarr_group].
    initialize = function(group) self$group <- group,
    #' @description The decoded coordinate values of each dimension of the
    #'   dataset.
    #' @return A named list.
    coords = function() {
      arrs <- private$arrays()
      dims <- unique(unlist(lapply(arrs, function(a) a$dimension_names)))
      dims <- dims[!is.na(dims) & dims %in% names(arrs)]
      stats::setNames(lapply(dims, function(d) arrs[[d]]$read()), dims)
    },
    #' @description Select the data variables by coordinate values (see
    #'   `sel()` of [zarr_array]); each variable is selected along the
    #'   dimensions it has.
    #' @param ... Values per dimension, named by it.
    #' @param method `NULL` or `"nearest"`.
    #' @param vars The variables (default: the data variables).
    #' @param drop Whether to drop the dimensions of one element (see
    #'   [zarr_cf_data]); `FALSE` (default) keeps them.
    #' @return A list of [zarr_cf_data] objects named by variable.
    sel = function(..., method = NULL, vars = self$data_vars, drop = FALSE) {
      args <- list(...)
      out <- lapply(vars, function(v) {
        a <- self[[v]]
        dn <- a$dimension_names
        do.call(a$sel, c(args[names(args) %in% dn], list(method = method, drop = drop)))
      })
      structure(stats::setNames(out, vars), class = "zarr_cf_dataset")
    },
    #' @description Print the variables of the dataset.
    print = function() {
      arrs <- private$arrays()
      line <- function(n) {
        a <- arrs[[n]]
        u <- a$attributes[["units"]]
        # packed variables: the type of the decoded values too
        dec <- cf_read_summary(a$attributes, a$data_type)
        dec <- if (!is.null(dec) && startsWith(dec, "double")) " -> double" else ""
        sprintf("  %-12s (%s) %s%s%s", n, paste(a$dimension_names %||% "", collapse = ", "), a$data_type$data_type,
                dec, if (is.character(u)) paste0(" [", u, "]") else "")
      }
      cat("<Zarr dataset>", self$group$path, "\n")
      cat("Coordinates:\n"); cat(vapply(self$coord_names, line, ""), sep = "\n")
      cat("Data variables:\n"); cat(vapply(self$data_vars, line, ""), sep = "\n")
      invisible(self)
    }
  ),
  active = list(
    #' @field variables (read-only) The names of all arrays of the group.
    variables = function() names(private$arrays()),
    #' @field coord_names (read-only) The coordinate variables: arrays
    #'   named as a dimension, named by a `coordinates` attribute (auxiliary
    #'   coordinates such as 2-d latitudes) or by a `bounds` attribute.
    coord_names = function() {
      arrs <- private$arrays()
      dims <- unlist(lapply(arrs, function(a) a$dimension_names))
      words <- function(v) if (is.character(v) && length(v) == 1L) strsplit(trimws(v), "\\s+")[[1L]]
      named <- unlist(lapply(arrs, function(a) c(words(a$attributes[["coordinates"]]), words(a$attributes[["bounds"]]))))
      intersect(names(arrs), c(dims, named))
    },
    #' @field data_vars (read-only) The other arrays.
    data_vars = function() setdiff(self$variables, self$coord_names)
  ),
  private = list(
    arrays = function() {
      ch <- self$group$children
      ch[vapply(ch, inherits, TRUE, "zarr_array")]
    }
  )
)

#' @rdname zarr_dataset
#' @param i The name of a variable.
#' @return `[[`: the [zarr_array].
#' @export
`[[.zarr_dataset` <- function(x, i) {
  a <- x$group$children[[i]]
  if (!inherits(a, "zarr_array")) zarr_abort("not_found", sprintf("the dataset has no variable '%s'", i))
  a
}

#' @export
names.zarr_dataset <- function(x) x$variables

#' @rdname zarr_dataset
#' @param row.names,optional Ignored.
#' @param vars The variables to put in columns.
#' @param ... Selection by coordinate values, as for the `sel()` method.
#' @details `as.data.frame()` has a column per dimension, then one per
#'   auxiliary coordinate along those dimensions (such as 2-d latitudes and
#'   longitudes, or a scalar coordinate: repeated on every row), then one
#'   per variable, as xarray's `to_dataframe()` followed by
#'   `reset_index()`; its rows are in R's order (the first dimension
#'   varies fastest). The data frame remembers the dataset's dimensions
#'   and variables: [as_zarr()] writes it back as the dataset was (see
#'   "Datasets" there).
#' @export
as.data.frame.zarr_dataset <- function(x, row.names = NULL, optional = FALSE, ..., vars = NULL) {
  parts <- x$sel(..., vars = vars %||% cf_default_vars(x))
  df <- as.data.frame(parts)
  cf_set_sources(cf_add_aux_coords(x, parts[[1L]], df), unclass(parts))
}

# The auxiliary coordinates of a dataset whose dimensions are all among those
# of `part` (a zarr_cf_data), as columns of `df` (its rows: expand.grid() of
# part's dimensions) inserted after the dimension columns.
cf_add_aux_coords <- function(x, part, df) {
  dims <- part$dims
  if (!length(dims) || !all(nzchar(dims))) return(df)
  n <- lengths(part$index)
  aux <- setdiff(x$coord_names, c(dims, names(df), unlist(lapply(x$variables, function(v) x[[v]]$dimension_names))))
  rows <- seq_len(nrow(df)) - 1
  cols <- list()
  for (nm in aux) {
    a <- x[[nm]]
    ad <- a$dimension_names %||% character()
    if (length(ad) != length(a$shape) || !all(ad %in% dims)) next
    v <- a$read(if (length(ad)) lapply(part$index[ad], function(i) structure(i - 1, class = "zarr_index")))
    if (inherits(v, "CFTime")) v <- v$as_timestamp()
    cols[[nm]] <- if (!length(ad)) rep(v, nrow(df)) else {
      # each row's position along each of the coordinate's dimensions
      pos <- vapply(match(ad, dims), function(j) rows %/% prod(n[seq_len(j - 1L)]) %% n[j] + 1, rows)
      if (is.null(dim(pos))) pos <- matrix(pos, ncol = length(ad))
      if (length(ad) == 1L) as.vector(v)[pos[, 1L]] else v[pos]
    }
  }
  if (!length(cols)) return(df)
  k <- length(dims)
  cbind(df[seq_len(k)], as.data.frame(cols, optional = TRUE), df[-seq_len(k)])
}

#' @export
as.data.frame.zarr_cf_dataset <- function(x, row.names = NULL, optional = FALSE, ...) {
  dims <- lapply(x, `[[`, "dims")
  if (!all(vapply(dims, identical, TRUE, dims[[1L]])))
    zarr_abort("value", "variables with different dimensions cannot share the rows of one data frame")
  df <- as.data.frame(x[[1L]])
  for (v in x[-1L]) df[[cf_value_name(v)]] <- cf_value_column(v$values)
  cf_set_sources(df, unclass(x))
}

#' CF decoding of Zarr arrays
#'
#' Reads decode the values of arrays whose attributes follow the CF
#' conventions, as xarray does after reading a Zarr store, unless
#' `decode = FALSE` is given (to `read()`, `[`, `sel()`) or the option
#' `zarr.decode_cf` is `FALSE`. Arrays without these attributes are not
#' changed.
#'
#' * `_Unsigned = "true"` on a signed integer type: the stored bits are an
#'   unsigned number (`"false"` on an unsigned type: a signed one).
#' * `_FillValue`, `missing_value` (one value or several): stored values
#'   equal to one of them read as `NA`. They are compared with the stored
#'   (packed) values. A Zarr fill value that marks missing values counts as
#'   `_FillValue`, as in xarray (a fill value of zero does not: see
#'   `zarr.fill_as_na` in [zarr-options]).
#' * `valid_min`, `valid_max`, `valid_range`: by default they mask
#'   nothing, as in xarray, GDAL and terra (GDAL writes a `valid_range`
#'   that its own reads ignore). netCDF readers (the netCDF-C library,
#'   \pkg{ncdf4}, \pkg{RNetCDF}) read stored values outside the valid range
#'   as `NA`; so do reads here with `decode = list(valid_range = TRUE)` or
#'   the option `zarr.decode_valid_range = TRUE`, comparing them with the
#'   stored (packed) values.
#' * `scale_factor`, `add_offset`: values are `stored * scale_factor +
#'   add_offset`, doubles.
#' * `units = "<unit> since <date>"` (units days, hours, minutes, seconds,
#'   milliseconds, microseconds, nanoseconds and their CF abbreviations; the
#'   date as "2000-01-01", "2000-1-1 12:00:00.5" or "2000-01-01T12:00Z",
#'   with an optional offset from UTC such as "+05:30"), in the calendar of
#'   the `calendar` attribute (default "standard"):
#'   * "proleptic_gregorian", and "standard" or "gregorian" (Julian before
#'     1582-10-15) for dates from 1582-10-15 on: `Date` when the unit is
#'     days from a midnight in UTC and every value is a whole number,
#'     otherwise `POSIXct` in UTC. 64-bit integer times (xarray's default)
#'     are decoded from their exact values.
#'   * "julian", "noleap"/"365_day", "all_leap"/"366_day", "360_day", and
#'     standard dates before 1582-10-15: a `CFTime` object of the
#'     \pkg{CFtime} package for one dimension (a time series), or ISO 8601
#'     strings such as "2001-02-30T00:00:00" (with the dimensions of the
#'     array) for arrays of more dimensions (such as time bounds), when
#'     some times are missing, and without that package. No date is moved
#'     to another calendar.
#'   * "none": the numbers, not decoded.
#'
#' Units such as "days" without "since" stay numbers (xarray makes them
#' time differences).
#' @examples
#' # packed values: stored * scale_factor + add_offset, -1 marks missing values
#' z <- as_zarr(c(0L, 25L, 50L, -1L), name = "temp") # in memory
#' a <- z[["/temp"]]
#' a$set_attributes(list(scale_factor = 0.5, add_offset = 10, `_FillValue` = -1L,
#'                       units = "degC"))
#' a[]
#' a$read(decode = FALSE) # the stored values
#' a # "Reads as" says what a read returns
#' # times: numbers since an origin, in a calendar
#' z <- as_zarr(c(0, 31, 59), name = "time")
#' tm <- z[["/time"]]
#' tm$set_attribute("units", "days since 2001-01-01")
#' tm[] # Date
#' tm$set_attribute("calendar", "360_day") # 30-day months: 2001-02-30 exists
#' tm[] # a CFTime object with the CFtime package, else strings
#' old <- options(zarr.decode_cf = FALSE)
#' tm[]
#' options(old)
#' @name cf-decoding
#' @seealso [zarr_array] (`read()`, `sel()`, `coords()`, `cf()`),
#'   [zarr_dataset()], [zarr-options]
NULL
