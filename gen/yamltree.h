/* yamltree.h: a YAML document read into a small tree that keeps each node's
   file:line:col, with hard limits so hostile input is refused in bounded time
   and memory. */
#ifndef HK_YAMLTREE_H
#define HK_YAMLTREE_H

#include <stddef.h>

#define YT_MAX_BYTES (1u << 20) /* 1 MiB: a spec is a few lines */
#define YT_MAX_DEPTH 32
#define YT_MAX_NODES 100000

typedef enum { YT_SCALAR, YT_SEQ, YT_MAP } yt_kind;

typedef struct yt_node {
  yt_kind kind;
  int line, col;      /* 1-based */
  char *value;        /* scalar text */
  int quoted;         /* scalar was quoted: never a keyword like `any` */
  struct yt_node **items; /* seq items; for maps: keys at even, values at odd */
  size_t n;           /* number of items (maps: 2 * pairs) */
} yt_node;

typedef struct {
  const char *file;
  yt_node *root;  /* NULL for an empty document */
} yt_doc;

/* Parse a buffer into doc (name is used in messages). Returns 0, or reports
   errors with diag_error and returns -1. */
int yt_load_buffer(const char *name, const char *data, size_t len, yt_doc *doc);
void yt_free(yt_doc *doc);
/* Map lookup by key; NULL when absent. */
yt_node *yt_map_get(const yt_node *map, const char *key);
const char *yt_kind_name(yt_kind k);

#endif
