/* yamltree.c: libyaml events -> yt_node tree. Anchors and aliases are refused
   (no alias bombs), as are NUL bytes, invalid UTF-8, deep nesting, huge files,
   too many nodes, and duplicate keys. */
#include "yamltree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

typedef struct {
  const char *file;
  yaml_parser_t parser;
  size_t nodes;
  int failed;
} yt_reader;

static yt_node *yt_new(yt_kind k, const yaml_mark_t *m) {
  yt_node *n = xcalloc(1, sizeof *n);
  n->kind = k;
  n->line = (int)m->line + 1;
  n->col = (int)m->column + 1;
  return n;
}

static void yt_node_free(yt_node *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) yt_node_free(n->items[i]);
  free(n->items);
  free(n->value);
  free(n);
}

static void yt_push(yt_node *parent, yt_node *child) {
  if ((parent->n & (parent->n - 1)) == 0) /* grow at powers of two */
    parent->items = xrealloc(parent->items, (parent->n ? parent->n * 2 : 4) * sizeof *parent->items);
  parent->items[parent->n++] = child;
}

const char *yt_kind_name(yt_kind k) {
  return k == YT_SCALAR ? "a scalar" : k == YT_SEQ ? "a list" : "a mapping";
}

/* Refuse bytes that are not text before libyaml sees them: its messages for
   these are less clear and NUL would cut strings short. */
static int yt_check_bytes(const char *file, const char *d, size_t len) {
  int line = 1, col = 1;
  for (size_t i = 0; i < len;) {
    unsigned char c = (unsigned char)d[i];
    size_t need = 0;
    if (c == 0) {
      diag_error(file, line, col, "NUL byte in spec: a spec is UTF-8 text");
      return -1;
    }
    /* the second byte's range rules out overlong forms, surrogates and
       code points past U+10FFFF (RFC 3629) */
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80) need = 0;
    else if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      diag_error(file, line, col, "invalid UTF-8 byte 0x%02x: a spec is UTF-8 text", c);
      return -1;
    }
    if (need && i + need >= len) {
      diag_error(file, line, col, "truncated UTF-8 sequence at end of file");
      return -1;
    }
    for (size_t k = 1; k <= need; k++) {
      unsigned char b = (unsigned char)d[i + k];
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) {
        diag_error(file, line, col, "invalid UTF-8 sequence: a spec is UTF-8 text");
        return -1;
      }
    }
    if (c == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
    i += need + 1;
  }
  return 0;
}

static void yt_parse_error(yt_reader *r) {
  yaml_parser_t *p = &r->parser;
  const char *what = p->problem ? p->problem : "malformed YAML";
  if (p->context)
    diag_error(r->file, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1,
               "%s (%s at line %d)", what, p->context, (int)p->context_mark.line + 1);
  else
    diag_error(r->file, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1, "%s", what);
  r->failed = 1;
}

static int yt_next(yt_reader *r, yaml_event_t *ev) {
  if (!yaml_parser_parse(&r->parser, ev)) {
    yt_parse_error(r);
    return -1;
  }
  return 0;
}

static yt_node *yt_read_node(yt_reader *r, yaml_event_t *ev, int depth);

/* Keys seen in one mapping: open addressing over node indices, so a mapping
   of many keys is checked in linear time. */
typedef struct {
  size_t *slot; /* index + 1 of the key node in the map's items; 0 = empty */
  size_t cap, n;
} yt_keyset;

static size_t yt_hash(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static void yt_keyset_grow(yt_keyset *ks, const yt_node *map) {
  size_t cap = ks->cap ? ks->cap * 2 : 16, *slot = xcalloc(cap, sizeof *slot);
  for (size_t i = 0; i < ks->cap; i++)
    if (ks->slot[i]) {
      size_t h = yt_hash(map->items[ks->slot[i] - 1]->value) & (cap - 1);
      while (slot[h]) h = (h + 1) & (cap - 1);
      slot[h] = ks->slot[i];
    }
  free(ks->slot);
  ks->slot = slot;
  ks->cap = cap;
}

static int yt_check_duplicate(yt_reader *r, yt_keyset *ks, yt_node *map, yt_node *key) {
  if (key->kind != YT_SCALAR) {
    diag_error(r->file, key->line, key->col, "mapping keys must be plain words");
    return -1;
  }
  if (2 * (ks->n + 1) > ks->cap) yt_keyset_grow(ks, map);
  size_t h = yt_hash(key->value) & (ks->cap - 1);
  for (; ks->slot[h]; h = (h + 1) & (ks->cap - 1)) {
    const yt_node *prev = map->items[ks->slot[h] - 1];
    if (strcmp(prev->value, key->value) == 0) {
      diag_error(r->file, key->line, key->col, "duplicate key '%s' (first given at line %d)",
                 key->value, prev->line);
      return -1;
    }
  }
  ks->slot[h] = map->n + 1; /* the key is pushed at index map->n next */
  ks->n++;
  return 0;
}

/* Read the children of a sequence or mapping until its end event. */
static int yt_read_children(yt_reader *r, yt_node *n, yaml_event_type_t end, int depth) {
  yt_keyset ks = {0};
  int rc = 0;
  for (;;) {
    yaml_event_t ev;
    if (yt_next(r, &ev) < 0) {
      rc = -1;
      break;
    }
    if (ev.type == end) {
      yaml_event_delete(&ev);
      break;
    }
    yt_node *c = yt_read_node(r, &ev, depth + 1);
    if (!c) {
      rc = -1;
      break;
    }
    if (n->kind == YT_MAP && n->n % 2 == 0 && yt_check_duplicate(r, &ks, n, c) < 0) {
      yt_node_free(c);
      rc = -1;
      break;
    }
    yt_push(n, c);
  }
  free(ks.slot);
  return rc;
}

/* Builds the node that starts with ev (consumed). */
static yt_node *yt_read_node(yt_reader *r, yaml_event_t *ev, int depth) {
  yt_node *n = NULL;
  if (++r->nodes > YT_MAX_NODES) {
    diag_error(r->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
               "spec too large: more than %d YAML nodes", YT_MAX_NODES);
    goto fail;
  }
  if (depth > YT_MAX_DEPTH) {
    diag_error(r->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
               "nesting deeper than %d levels", YT_MAX_DEPTH);
    goto fail;
  }
  switch (ev->type) {
  case YAML_ALIAS_EVENT:
    diag_error(r->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
               "YAML aliases are not supported: use 'defaults:' to share values");
    goto fail;
  case YAML_SCALAR_EVENT:
    if (ev->data.scalar.anchor) goto anchor;
    n = yt_new(YT_SCALAR, &ev->start_mark);
    n->value = xstrdup((const char *)ev->data.scalar.value);
    n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    break;
  case YAML_SEQUENCE_START_EVENT:
    if (ev->data.sequence_start.anchor) goto anchor;
    n = yt_new(YT_SEQ, &ev->start_mark);
    if (yt_read_children(r, n, YAML_SEQUENCE_END_EVENT, depth) < 0) goto fail;
    break;
  case YAML_MAPPING_START_EVENT:
    if (ev->data.mapping_start.anchor) goto anchor;
    n = yt_new(YT_MAP, &ev->start_mark);
    if (yt_read_children(r, n, YAML_MAPPING_END_EVENT, depth) < 0) goto fail;
    break;
  default:
    diag_error(r->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
               "unexpected YAML event");
    goto fail;
  }
  yaml_event_delete(ev);
  return n;
anchor:
  diag_error(r->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
             "YAML anchors are not supported: use 'defaults:' to share values");
fail:
  yaml_event_delete(ev);
  yt_node_free(n);
  r->failed = 1;
  return NULL;
}

static int yt_expect(yt_reader *r, yaml_event_type_t t) {
  yaml_event_t ev;
  if (yt_next(r, &ev) < 0) return -1;
  int ok = ev.type == t;
  if (!ok)
    diag_error(r->file, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
               "a spec holds exactly one YAML document");
  yaml_event_delete(&ev);
  return ok ? 0 : -1;
}

int yt_load_buffer(const char *name, const char *data, size_t len, yt_doc *doc) {
  doc->file = name;
  doc->root = NULL;
  if (len > YT_MAX_BYTES) {
    diag_error(name, 0, 0, "spec is %zu bytes; the limit is %u", len, YT_MAX_BYTES);
    return -1;
  }
  if (yt_check_bytes(name, data, len) < 0) return -1;
  yt_reader r = {.file = name};
  if (!yaml_parser_initialize(&r.parser)) {
    diag_error(name, 0, 0, "cannot initialise the YAML parser");
    return -1;
  }
  yaml_parser_set_input_string(&r.parser, (const unsigned char *)data, len);
  yaml_parser_set_encoding(&r.parser, YAML_UTF8_ENCODING);
  int rc = -1;
  yaml_event_t ev;
  if (yt_expect(&r, YAML_STREAM_START_EVENT) < 0) goto out;
  if (yt_next(&r, &ev) < 0) goto out;
  if (ev.type == YAML_STREAM_END_EVENT) { /* empty file */
    yaml_event_delete(&ev);
    rc = 0;
    goto out;
  }
  yaml_event_delete(&ev); /* document start */
  if (yt_next(&r, &ev) < 0) goto out;
  doc->root = yt_read_node(&r, &ev, 0);
  if (!doc->root) goto out;
  if (yt_expect(&r, YAML_DOCUMENT_END_EVENT) < 0) goto out;
  if (yt_expect(&r, YAML_STREAM_END_EVENT) < 0) goto out;
  rc = 0;
out:
  yaml_parser_delete(&r.parser);
  if (rc < 0) {
    yt_node_free(doc->root);
    doc->root = NULL;
  }
  return rc;
}

void yt_free(yt_doc *doc) {
  yt_node_free(doc->root);
  doc->root = NULL;
}

yt_node *yt_map_get(const yt_node *map, const char *key) {
  if (!map || map->kind != YT_MAP) return NULL;
  for (size_t i = 0; i + 1 < map->n; i += 2)
    if (strcmp(map->items[i]->value, key) == 0) return map->items[i + 1];
  return NULL;
}
