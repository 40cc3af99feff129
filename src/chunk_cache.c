/* The decoded-chunk cache (see chunk_cache.h).
 *
 * Two hash tables under one mutex: entries by (storage key, meta, part) for
 * lookups, and groups by storage key, each listing its entries, so that a
 * write drops everything made from one value at once. Entries sit on one
 * LRU list (head: most recently used). An entry is pinned while a reader
 * copies out of it: dropped or evicted meanwhile, it leaves the tables at
 * once and is freed by its last reader. The cost of an entry is its bytes
 * plus ZCACHE_OVERHEAD, so that even entries of missing values count. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "chunk_cache.h"

#define ZCACHE_OVERHEAD 64

typedef struct zcache_group zcache_group;

struct zcache_entry {
  zcache_entry *hnext;              /* entry table chain */
  zcache_entry *lprev, *lnext;      /* LRU list */
  zcache_entry *gprev, *gnext;      /* its group's list */
  zcache_group *grp;
  uint64_t h, meta, owner;
  int64_t part;
  int refs, linked, missing;
  zstamp stamp;
  size_t n, cost;
  uint8_t *data;
};

struct zcache_group {
  zcache_group *hnext;
  uint64_t h;
  zcache_entry *first;
  char path[]; /* ident key */
};

typedef struct {
  uint64_t owner;
  size_t bytes;
} owner_use;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  zcache_entry **etab;
  zcache_group **gtab;
  size_t ebuckets, gbuckets, nentries, ngroups;
  zcache_entry *head, *tail;
  size_t bytes, cap;
  owner_use *owners;
  size_t nowners, owners_cap;
} C;

uint64_t zcache_hash(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static uint64_t path_hash(const char *ident, const char *key) {
  uint64_t h = zcache_hash(0xcbf29ce484222325ULL, ident, strlen(ident));
  return zcache_hash(h, key, strlen(key));
}

static uint64_t entry_hash(uint64_t ph, uint64_t meta, int64_t part) {
  uint64_t h = zcache_hash(ph, &meta, sizeof meta);
  return zcache_hash(h, &part, sizeof part);
}

static int path_is(const zcache_group *g, const char *ident, const char *key) {
  size_t li = strlen(ident);
  return strncmp(g->path, ident, li) == 0 && strcmp(g->path + li, key) == 0;
}

/* Grow a table of chains to twice its buckets (entries and groups keep
 * their hashes). Failing to grow only makes chains longer. */
static void grow_entries(void) {
  size_t nn = C.ebuckets ? C.ebuckets * 2 : 256;
  zcache_entry **t = calloc(nn, sizeof *t);
  if (t == NULL) return;
  for (size_t i = 0; i < C.ebuckets; i++)
    for (zcache_entry *x = C.etab[i], *next; x != NULL; x = next) {
      next = x->hnext;
      x->hnext = t[x->h & (nn - 1)];
      t[x->h & (nn - 1)] = x;
    }
  free(C.etab);
  C.etab = t;
  C.ebuckets = nn;
}

static void grow_groups(void) {
  size_t nn = C.gbuckets ? C.gbuckets * 2 : 256;
  zcache_group **t = calloc(nn, sizeof *t);
  if (t == NULL) return;
  for (size_t i = 0; i < C.gbuckets; i++)
    for (zcache_group *x = C.gtab[i], *next; x != NULL; x = next) {
      next = x->hnext;
      x->hnext = t[x->h & (nn - 1)];
      t[x->h & (nn - 1)] = x;
    }
  free(C.gtab);
  C.gtab = t;
  C.gbuckets = nn;
}

static owner_use *owner_find(uint64_t owner, int add) {
  for (size_t i = 0; i < C.nowners; i++)
    if (C.owners[i].owner == owner) return &C.owners[i];
  if (!add) return NULL;
  if (C.nowners == C.owners_cap) {
    size_t nc = C.owners_cap ? C.owners_cap * 2 : 16;
    owner_use *o = realloc(C.owners, nc * sizeof *o);
    if (o == NULL) return NULL;
    C.owners = o;
    C.owners_cap = nc;
  }
  C.owners[C.nowners] = (owner_use){owner, 0};
  return &C.owners[C.nowners++];
}

static void entry_free(zcache_entry *en) {
  free(en->data);
  free(en);
}

/* Take an entry out of the tables, the LRU list and its group (freeing the
 * group when it empties); freed now unless a reader holds it. */
static void unlink_entry(zcache_entry *en) {
  zcache_entry **pp = &C.etab[en->h & (C.ebuckets - 1)];
  while (*pp != en) pp = &(*pp)->hnext;
  *pp = en->hnext;
  if (en->lprev) en->lprev->lnext = en->lnext;
  else C.head = en->lnext;
  if (en->lnext) en->lnext->lprev = en->lprev;
  else C.tail = en->lprev;
  zcache_group *g = en->grp;
  if (en->gprev) en->gprev->gnext = en->gnext;
  else g->first = en->gnext;
  if (en->gnext) en->gnext->gprev = en->gprev;
  if (g->first == NULL) {
    zcache_group **gp = &C.gtab[g->h & (C.gbuckets - 1)];
    while (*gp != g) gp = &(*gp)->hnext;
    *gp = g->hnext;
    free(g);
    C.ngroups--;
  }
  __atomic_store_n(&C.nentries, C.nentries - 1, __ATOMIC_RELAXED);
  C.bytes -= en->cost;
  owner_use *o = owner_find(en->owner, 0);
  if (o != NULL) {
    o->bytes -= en->cost;
    if (o->bytes == 0) *o = C.owners[--C.nowners];
  }
  en->linked = 0;
  en->grp = NULL;
  if (en->refs == 0) entry_free(en);
}

static void evict_to(size_t cap) {
  while (C.bytes > cap && C.tail != NULL) unlink_entry(C.tail);
}

void zcache_set_cap(size_t cap) {
  pthread_mutex_lock(&mu);
  C.cap = cap;
  evict_to(cap);
  pthread_mutex_unlock(&mu);
}

size_t zcache_count(void) { return __atomic_load_n(&C.nentries, __ATOMIC_RELAXED); }

static zcache_entry *find(uint64_t h, const char *ident, const char *key, uint64_t meta, int64_t part) {
  if (C.ebuckets == 0) return NULL;
  for (zcache_entry *en = C.etab[h & (C.ebuckets - 1)]; en != NULL; en = en->hnext)
    if (en->h == h && en->meta == meta && en->part == part && path_is(en->grp, ident, key)) return en;
  return NULL;
}

zcache_entry *zcache_get(const char *ident, const char *key, uint64_t meta, int64_t part) {
  uint64_t h = entry_hash(path_hash(ident, key), meta, part);
  pthread_mutex_lock(&mu);
  zcache_entry *en = find(h, ident, key, meta, part);
  if (en != NULL) {
    en->refs++;
    if (en != C.head) { /* most recently used */
      en->lprev->lnext = en->lnext;
      if (en->lnext) en->lnext->lprev = en->lprev;
      else C.tail = en->lprev;
      en->lprev = NULL;
      en->lnext = C.head;
      C.head->lprev = en;
      C.head = en;
    }
  }
  pthread_mutex_unlock(&mu);
  return en;
}

const uint8_t *zcache_data(const zcache_entry *en, size_t *n, int *missing) {
  *n = en->n;
  *missing = en->missing;
  return en->data;
}

const zstamp *zcache_stamp(const zcache_entry *en) { return &en->stamp; }

void zcache_release(zcache_entry *en) {
  if (en == NULL) return;
  pthread_mutex_lock(&mu);
  if (--en->refs == 0 && !en->linked) entry_free(en);
  pthread_mutex_unlock(&mu);
}

void zcache_discard(zcache_entry *en) {
  if (en == NULL) return;
  pthread_mutex_lock(&mu);
  en->refs++; /* held while it leaves the tables */
  if (en->linked) unlink_entry(en);
  en->refs -= 2;
  if (en->refs == 0) entry_free(en);
  pthread_mutex_unlock(&mu);
}

/* Evict the least recently used entries of one owner until it holds at most
 * `keep` bytes. */
static void evict_owner(uint64_t owner, size_t keep) {
  owner_use *o = owner_find(owner, 0);
  zcache_entry *en = C.tail;
  while (o != NULL && o->bytes > keep && en != NULL) {
    zcache_entry *prev = en->lprev;
    if (en->owner == owner) {
      unlink_entry(en);
      o = owner_find(owner, 0);
    }
    en = prev;
  }
}

void zcache_put(const char *ident, const char *key, uint64_t meta, int64_t part, uint64_t owner,
                size_t owner_cap, const zstamp *stamp, uint8_t *data, size_t n, int missing) {
  size_t cost = n + ZCACHE_OVERHEAD;
  uint64_t ph = path_hash(ident, key), h = entry_hash(ph, meta, part);
  pthread_mutex_lock(&mu);
  if (stamp != NULL && stamp->valid && stamp->unknown) goto refuse; /* could never be checked */
  zcache_entry *old = C.cap > 0 ? find(h, ident, key, meta, part) : NULL;
  if (old != NULL && stamp != NULL && !zstamp_same(&old->stamp, stamp)) {
    unlink_entry(old); /* made from what the value was before */
    old = NULL;
  }
  if (cost > C.cap || cost > owner_cap || old != NULL) goto refuse;
  evict_owner(owner, owner_cap - cost);
  evict_to(C.cap - cost);
  zcache_entry *en = calloc(1, sizeof *en);
  owner_use *o = owner_find(owner, 1);
  if (en == NULL || o == NULL) {
    free(en);
    goto refuse;
  }
  if (C.nentries >= C.ebuckets) grow_entries();
  if (C.ngroups >= C.gbuckets) grow_groups();
  if (C.ebuckets == 0 || C.gbuckets == 0) {
    free(en);
    goto refuse;
  }
  zcache_group *g = C.gtab[ph & (C.gbuckets - 1)];
  while (g != NULL && !(g->h == ph && path_is(g, ident, key))) g = g->hnext;
  if (g == NULL) {
    size_t li = strlen(ident), lk = strlen(key);
    g = malloc(sizeof *g + li + lk + 1);
    if (g == NULL) {
      free(en);
      goto refuse;
    }
    g->h = ph;
    g->first = NULL;
    memcpy(g->path, ident, li);
    memcpy(g->path + li, key, lk + 1);
    g->hnext = C.gtab[ph & (C.gbuckets - 1)];
    C.gtab[ph & (C.gbuckets - 1)] = g;
    C.ngroups++;
  }
  *en = (zcache_entry){.h = h, .meta = meta, .owner = owner, .part = part, .linked = 1,
                       .missing = missing, .n = n, .cost = cost, .data = data, .grp = g};
  if (stamp != NULL) en->stamp = *stamp;
  en->hnext = C.etab[h & (C.ebuckets - 1)];
  C.etab[h & (C.ebuckets - 1)] = en;
  en->gnext = g->first;
  if (g->first) g->first->gprev = en;
  g->first = en;
  en->lnext = C.head;
  if (C.head) C.head->lprev = en;
  C.head = en;
  if (C.tail == NULL) C.tail = en;
  C.bytes += cost;
  o->bytes += cost;
  __atomic_store_n(&C.nentries, C.nentries + 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&mu);
  return;
refuse:
  pthread_mutex_unlock(&mu);
  free(data);
}

static void drop_group(zcache_group *g) {
  while (g->first != NULL) {
    zcache_entry *en = g->first;
    int last = en->gnext == NULL; /* unlinking the last entry frees g */
    unlink_entry(en);
    if (last) break;
  }
}

void zcache_drop(const char *ident, const char *key) {
  if (zcache_count() == 0) return;
  uint64_t ph = path_hash(ident, key);
  pthread_mutex_lock(&mu);
  if (C.gbuckets > 0) {
    zcache_group *g = C.gtab[ph & (C.gbuckets - 1)];
    while (g != NULL && !(g->h == ph && path_is(g, ident, key))) g = g->hnext;
    if (g != NULL) drop_group(g);
  }
  pthread_mutex_unlock(&mu);
}

void zcache_drop_prefix(const char *ident, const char *prefix) {
  if (zcache_count() == 0) return;
  size_t li = ident ? strlen(ident) : 0, lp = strlen(prefix);
  pthread_mutex_lock(&mu);
  for (size_t b = 0; b < C.gbuckets; b++) {
    zcache_group *g = C.gtab[b];
    while (g != NULL) {
      zcache_group *next = g->hnext; /* g may be freed below */
      if (ident == NULL ||
          (strncmp(g->path, ident, li) == 0 && strncmp(g->path + li, prefix, lp) == 0))
        drop_group(g);
      g = next;
    }
  }
  pthread_mutex_unlock(&mu);
}

void zcache_stats(size_t *bytes, size_t *entries, size_t *cap) {
  pthread_mutex_lock(&mu);
  *bytes = C.bytes;
  *entries = C.nentries;
  *cap = C.cap;
  pthread_mutex_unlock(&mu);
}
