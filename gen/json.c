/* json.c: JSON writer. Objects and arrays nest with two-space indentation;
   containers deeper than inline_depth stay on one line to keep the manifest short. */
#include "json.h"

#include <math.h>

#include <stdio.h>
#include <string.h>

void jw_init(jw_t *w) {
  memset(w, 0, sizeof *w);
  buf_init(&w->out);
  w->first[0] = 1;
  w->inline_depth = 1000;
}

static int jw_is_inline(const jw_t *w) { return w->depth >= w->inline_depth; }

static void jw_newline(jw_t *w) {
  if (jw_is_inline(w)) return;
  buf_puts(&w->out, "\n");
  for (int i = 0; i < w->depth; i++) buf_puts(&w->out, "  ");
}

/* Separator before a value that is not the value of a key. */
static void jw_sep(jw_t *w, int keyed) {
  if (keyed) return;
  if (w->depth == 0) return;
  if (!w->first[w->depth]) buf_puts(&w->out, jw_is_inline(w) ? ", " : ",");
  w->first[w->depth] = 0;
  jw_newline(w);
}

void jw_key(jw_t *w, const char *key) {
  jw_sep(w, 0);
  jw_escape(&w->out, key);
  buf_puts(&w->out, ": ");
  w->pending_key = 1;
}

static void jw_value_start(jw_t *w) {
  jw_sep(w, w->pending_key);
  w->pending_key = 0;
}

static void jw_open(jw_t *w, const char *c) {
  jw_value_start(w);
  buf_puts(&w->out, c);
  w->depth++;
  w->first[w->depth] = 1;
}

static void jw_close(jw_t *w, const char *c) {
  int empty = w->first[w->depth], was_inline = jw_is_inline(w);
  w->depth--;
  if (!empty && !was_inline) jw_newline(w);
  buf_puts(&w->out, c);
}

void jw_begin_obj(jw_t *w) { jw_open(w, "{"); }
void jw_end_obj(jw_t *w) { jw_close(w, "}"); }
void jw_begin_arr(jw_t *w) { jw_open(w, "["); }
void jw_end_arr(jw_t *w) { jw_close(w, "]"); }

void jw_escape(hk_buf *b, const char *s) {
  buf_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char tmp[8];
    switch (*p) {
    case '"': buf_puts(b, "\\\""); break;
    case '\\': buf_puts(b, "\\\\"); break;
    case '\n': buf_puts(b, "\\n"); break;
    case '\t': buf_puts(b, "\\t"); break;
    case '\r': buf_puts(b, "\\r"); break;
    default:
      if (*p < 0x20) {
        snprintf(tmp, sizeof tmp, "\\u%04x", *p);
        buf_puts(b, tmp);
      } else {
        buf_add(b, (const char *)p, 1);
      }
    }
  }
  buf_puts(b, "\"");
}

void jw_str(jw_t *w, const char *s) {
  jw_value_start(w);
  jw_escape(&w->out, s);
}

void jw_int(jw_t *w, long long v) {
  jw_value_start(w);
  buf_printf(&w->out, "%lld", v);
}

void jw_num(jw_t *w, double v, int decimals) {
  jw_value_start(w);
  buf_printf(&w->out, isfinite(v) ? "%.*f" : "null", decimals, v);
}

void jw_bool(jw_t *w, int v) {
  jw_value_start(w);
  buf_puts(&w->out, v ? "true" : "false");
}

void jw_null(jw_t *w) {
  jw_value_start(w);
  buf_puts(&w->out, "null");
}

void jw_kstr(jw_t *w, const char *k, const char *s) {
  jw_key(w, k);
  jw_str(w, s);
}

void jw_kint(jw_t *w, const char *k, long long v) {
  jw_key(w, k);
  jw_int(w, v);
}

char *jw_finish(jw_t *w, size_t *len) {
  buf_puts(&w->out, "\n");
  if (len) *len = w->out.len;
  return buf_steal(&w->out);
}
