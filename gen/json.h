/* json.h: a small JSON writer with stable formatting (the manifest must be
   byte-identical from run to run). */
#ifndef HK_JSON_H
#define HK_JSON_H

#include "util.h"

typedef struct {
  hk_buf out;
  int depth;
  int first[64]; /* no member written yet at this depth */
  int pending_key; /* a key was written; its value comes next */
  int inline_depth; /* depth from which containers are written on one line */
} jw_t;

void jw_init(jw_t *w);
void jw_key(jw_t *w, const char *key);
void jw_begin_obj(jw_t *w);
void jw_end_obj(jw_t *w);
void jw_begin_arr(jw_t *w);
void jw_end_arr(jw_t *w);
void jw_str(jw_t *w, const char *s);
void jw_int(jw_t *w, long long v);
/* A number with that many decimals (null when not finite). */
void jw_num(jw_t *w, double v, int decimals);
void jw_bool(jw_t *w, int v);
void jw_null(jw_t *w);
/* Shorthands for "key": value. */
void jw_kstr(jw_t *w, const char *k, const char *s);
void jw_kint(jw_t *w, const char *k, long long v);
char *jw_finish(jw_t *w, size_t *len);
void jw_escape(hk_buf *b, const char *s);

#endif
