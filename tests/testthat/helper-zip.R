# Zip files written byte by byte for the zip store tests (test-store-zip.R,
# test-hostile-zip.R): the corners of the format that zip tools do not make.

# Little-endian fields.
le <- function(x, n) {
  x <- as.numeric(x)
  as.raw(vapply(seq_len(n) - 1L, function(i) (x %/% 256^i) %% 256, 0))
}

# CRC-32 (the zip checksum) in plain R, on 16-bit halves since bitwXor()
# works on 32-bit signed integers.
crc_table <- local({
  xor32 <- function(a, b) bitwXor(a %/% 65536, b %/% 65536) * 65536 + bitwXor(a %% 65536, b %% 65536)
  vapply(0:255, function(n) {
    c <- n
    for (k in 1:8) c <- if (c %% 2 == 1) xor32(3988292384, c %/% 2) else c %/% 2
    c
  }, 0)
})
crc32_r <- function(bytes) {
  hi <- 65535L
  lo <- 65535L
  for (b in as.integer(bytes)) {
    t <- crc_table[bitwAnd(bitwXor(lo, b), 255L) + 1L]
    # c = table[(c ^ b) & 0xff] ^ (c >> 8), with c = hi * 65536 + lo
    shr_hi <- hi %/% 256L
    shr_lo <- (hi %% 256L) * 256L + lo %/% 256L
    hi <- bitwXor(as.integer(t %/% 65536), shr_hi)
    lo <- bitwXor(as.integer(t %% 65536), shr_lo)
  }
  (65535 - hi) * 65536 + (65535 - lo)
}

# Raw deflate: memCompress() makes a zlib stream (2-byte header, 4-byte trailer).
raw_deflate <- function(x) {
  z <- memCompress(x, "gzip")
  z[3:(length(z) - 4L)]
}

# Write a zip file from a named list of raw vectors. Knobs for the tests:
# `deflate` (method 8), `zip64` (ZIP64 records and extra fields throughout),
# `comment` (archive comment), `prepend` (bytes before the archive, offsets
# left as if they were not there), `local_extra` (extra field bytes in local
# headers only), per member `method`, `flags` and `crc` overrides.
write_zip <- function(path, members, deflate = FALSE, zip64 = FALSE, comment = "", prepend = raw(),
                      local_extra = 0L, method = list(), flags = list(), crc = list()) {
  local <- central <- vector("list", length(members))
  offset <- 0
  for (i in seq_along(members)) {
    name <- names(members)[i]
    data <- members[[i]]
    nm <- charToRaw(enc2utf8(name))
    m <- method[[name]] %||% if (deflate) 8L else 0L
    body <- if (m == 8L) raw_deflate(data) else data
    cr <- crc[[name]] %||% crc32_r(data)
    fl <- flags[[name]] %||% 0L
    usize <- length(data)
    csize <- length(body)
    z64 <- if (zip64) c(le(1, 2), le(16, 2), le(usize, 8), le(csize, 8)) else raw()
    lx <- c(z64, if (local_extra > 0L) c(le(0xCAFE, 2), le(local_extra, 2), as.raw(rep(7L, local_extra))))
    big <- if (zip64) 4294967295 else NA
    hdr <- c(le(0x04034b50, 4), le(if (zip64) 45 else 20, 2), le(fl, 2), le(m, 2), le(0, 4),
             le(cr, 4), le(if (zip64) big else csize, 4), le(if (zip64) big else usize, 4),
             le(length(nm), 2), le(length(lx), 2), nm, lx)
    local[[i]] <- c(hdr, body)
    cx <- if (zip64) c(le(1, 2), le(24, 2), le(usize, 8), le(csize, 8), le(offset, 8)) else raw()
    central[[i]] <- c(le(0x02014b50, 4), le(if (zip64) 45 else 20, 2), le(if (zip64) 45 else 20, 2),
                         le(fl, 2), le(m, 2), le(0, 4), le(cr, 4),
                         le(if (zip64) big else csize, 4), le(if (zip64) big else usize, 4),
                         le(length(nm), 2), le(length(cx), 2), le(0, 2), le(0, 2), le(0, 2), le(0, 4),
                         le(if (zip64) big else offset, 4), nm, cx)
    offset <- offset + length(local[[i]])
  }
  cd <- unlist(central, use.names = FALSE) %||% raw()
  n <- length(members)
  tail <- raw()
  if (zip64) {
    rec_at <- offset + length(cd)
    tail <- c(le(0x06064b50, 4), le(44, 8), le(45, 2), le(45, 2), le(0, 4), le(0, 4),
              le(n, 8), le(n, 8), le(length(cd), 8), le(offset, 8),
              le(0x07064b50, 4), le(0, 4), le(rec_at, 8), le(1, 4))
  }
  cm <- charToRaw(comment)
  eocd <- c(le(0x06054b50, 4), le(0, 2), le(0, 2),
            le(if (zip64) 65535 else n, 2), le(if (zip64) 65535 else n, 2),
            le(if (zip64) 4294967295 else length(cd), 4), le(if (zip64) 4294967295 else offset, 4),
            le(length(cm), 2), cm)
  writeBin(c(prepend, unlist(local, use.names = FALSE), cd, tail, eocd), path)
  invisible(path)
}

