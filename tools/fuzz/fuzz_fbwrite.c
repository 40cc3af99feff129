/* The flatbuffer writer (src/flatbuf.c, fbw_*), which the package's
 * Icechunk writer builds every object with: the input is a program of
 * tables (each field a u8, u32, u64, 12-byte struct, string, u32 vector or
 * a reference to an earlier table), built with the writer and read back
 * with the reader.
 *
 * Invariants: the buffer is accepted by fb_root(); every field reads back
 * with the value written (absent fields stay absent); every scalar, struct
 * and vector lies at an offset aligned to its size within the buffer (as
 * the official implementation's verifier requires); every refusal of the
 * writer carries an error. */
#include <stdlib.h>
#include <string.h>
#include "flatbuf.h"

#define MAX_TABLES 64

typedef struct {
  int kind[FBW_MAX_FIELDS]; /* 0 absent, 1 u8, 2 u32, 3 u64, 4 struct12, 5 string, 6 u32 vector, 7 table */
  uint64_t v[FBW_MAX_FIELDS];
  const uint8_t *bytes[FBW_MAX_FIELDS];
  size_t len[FBW_MAX_FIELDS];
  int child[FBW_MAX_FIELDS];
} spec;

static const uint8_t *in;
static size_t left;

static uint8_t take(void) {
  if (!left) return 0;
  left--;
  return *in++;
}

static void check_table(const fb_table *t, const spec *sp, const spec *all, const uint8_t *base, int depth) {
  zerr e = {ZE_OK, ""};
  for (int f = 0; f < FBW_MAX_FIELDS; f++) {
    int k = sp->kind[f];
    if (k == 0) {
      uint8_t d;
      if (fb_u8(t, f, 0, &d, &e) != 0) abort();
      continue;
    }
    if (k == 1) {
      uint8_t x;
      if (fb_u8(t, f, 0, &x, &e) != 1 || x != (uint8_t)sp->v[f]) abort();
    } else if (k == 2) {
      uint32_t x;
      if (fb_u32(t, f, 0, &x, &e) != 1 || x != (uint32_t)sp->v[f]) abort();
      const uint8_t *p;
      fb_struct(t, f, 4, &p, &e);
      if ((p - base) % 4) abort();
    } else if (k == 3) {
      uint64_t x;
      if (fb_u64(t, f, 0, &x, &e) != 1 || x != sp->v[f]) abort();
      const uint8_t *p;
      fb_struct(t, f, 8, &p, &e);
      if ((p - base) % 8) abort();
    } else if (k == 4) {
      const uint8_t *p;
      if (fb_struct(t, f, 12, &p, &e) != 1 || memcmp(p, sp->bytes[f], 12) != 0) abort();
    } else if (k == 5) {
      const char *s;
      size_t n;
      int r = fb_string(t, f, &s, &n, &e);
      if (memchr(sp->bytes[f], 0, sp->len[f]) != NULL) { /* the reader refuses strings holding a NUL */
        if (r != -1 || e.kind != ZE_CORRUPT) abort();
        e.kind = ZE_OK;
        continue;
      }
      if (r != 1 || n != sp->len[f] || memcmp(s, sp->bytes[f], n) != 0 || s[n] != 0) abort();
      if (((const uint8_t *)s - base) % 4) abort();
    } else if (k == 6) {
      fb_vec v;
      if (fb_vector(t, f, 4, &v, &e) != 1 || v.count != sp->len[f]) abort();
      if (v.count && (fb_vec_at(&v, 0) - base) % 4) abort();
      for (size_t i = 0; i < v.count; i++)
        if (fb_rd32(fb_vec_at(&v, i)) != (uint32_t)(sp->v[f] + i)) abort();
    } else if (k == 7) {
      fb_table c;
      if (fb_table_at(t, f, &c, &e) != 1) abort();
      if (depth < 8) check_table(&c, &all[sp->child[f]], all, base, depth + 1);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  in = data;
  left = size;
  spec *sp = calloc(MAX_TABLES, sizeof *sp);
  fb_ref refs[MAX_TABLES];
  zerr e = {ZE_OK, ""};
  fbw b;
  fbw_init(&b, &e);
  int nt = 1 + take() % MAX_TABLES;
  uint32_t vec[64];
  for (int t = 0; t < nt; t++) {
    spec *s = &sp[t];
    int nf = take() % (FBW_MAX_FIELDS + 1);
    /* children first: strings, vectors */
    fb_ref pre[FBW_MAX_FIELDS] = {0};
    for (int i = 0; i < nf; i++) {
      int f = take() % FBW_MAX_FIELDS;
      if (s->kind[f]) continue;
      int k = 1 + take() % 7;
      if (k == 7 && t == 0) k = 1;
      s->kind[f] = k;
      uint64_t v = 0;
      for (int j = 0; j < 8; j++) v = (v << 8) | take();
      s->v[f] = v;
      if (k == 4) {
        s->bytes[f] = in;
        if (left < 12) s->kind[f] = 1;
        else { in += 12; left -= 12; }
      } else if (k == 5) {
        size_t n = take() % 40;
        if (n > left) n = left;
        s->bytes[f] = in;
        s->len[f] = n;
        in += n;
        left -= n;
        pre[f] = fbw_string(&b, (const char *)s->bytes[f], n);
      } else if (k == 6) {
        size_t n = take() % 64;
        for (size_t j = 0; j < n; j++) vec[j] = (uint32_t)(v + j);
        s->len[f] = n;
        pre[f] = fbw_vec_u32(&b, vec, n);
      } else if (k == 7) {
        s->child[f] = take() % t;
        pre[f] = refs[s->child[f]];
      }
    }
    fbw_start(&b);
    for (int f = 0; f < FBW_MAX_FIELDS; f++) {
      switch (s->kind[f]) {
      case 1: fbw_u8(&b, f, (uint8_t)s->v[f]); break;
      case 2: fbw_u32(&b, f, (uint32_t)s->v[f]); break;
      case 3: fbw_u64(&b, f, s->v[f]); break;
      case 4: fbw_struct(&b, f, s->bytes[f], 12, 1); break;
      case 5: case 6: case 7: fbw_ref(&b, f, pre[f]); break;
      default: break;
      }
    }
    refs[t] = fbw_end(&b);
  }
  size_t n = 0;
  const uint8_t *out = fbw_finish(&b, refs[nt - 1], &n);
  if (out == NULL) {
    if (e.kind == ZE_OK) abort();
  } else {
    if (n % 4) abort();
    uint8_t *copy = malloc(n); /* the reader's view: a buffer of its own */
    memcpy(copy, out, n);
    fb_buf fb = {copy, n};
    fb_table root;
    if (fb_root(&fb, &root, &e)) abort();
    check_table(&root, &sp[nt - 1], sp, copy, 0);
    free(copy);
  }
  fbw_free(&b);
  free(sp);
  return 0;
}
