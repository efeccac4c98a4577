/* json.c: the strict JSON reader of hkrt_json.h. A recursive descent parser
   whose depth is bounded (HKRT_JSON_MAX_DEPTH), so hostile nesting cannot
   overflow the stack; every node and string goes into one arena. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkrt_json.h"

typedef struct hkrt_json_chunk {
  struct hkrt_json_chunk *prev;
  size_t used, cap;
  _Alignas(max_align_t) unsigned char data[];
} hkrt_json_chunk;

struct hkrt_json_doc {
  hkrt_json_chunk *arena;
  hkrt_json *root;
};

typedef struct {
  const char *s, *end;
  const char *line_start;
  int line;
  hkrt_json_doc *doc;
  char *err;
  size_t errlen;
  int failed;
} hkrt_json_parser;

/* ---- arena ------------------------------------------------------------------ */

static void *hkrt_json_alloc(hkrt_json_doc *doc, size_t n) {
  n = (n + 15) & ~(size_t)15;
  hkrt_json_chunk *c = doc->arena;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    hkrt_json_chunk *nc = malloc(sizeof *nc + cap);
    if (!nc) return NULL;
    nc->prev = c;
    nc->used = 0;
    nc->cap = cap;
    doc->arena = c = nc;
  }
  void *p = c->data + c->used;
  c->used += n;
  return p;
}

void hkrt_json_free(hkrt_json_doc *doc) {
  if (!doc) return;
  for (hkrt_json_chunk *c = doc->arena, *prev; c; c = prev) {
    prev = c->prev;
    free(c);
  }
  free(doc);
}

/* ---- errors and positions ---------------------------------------------------- */

static int hkrt_json_col(const hkrt_json_parser *p, const char *at) {
  return (int)(at - p->line_start) + 1;
}

static void hkrt_json_error(hkrt_json_parser *p, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void hkrt_json_error(hkrt_json_parser *p, const char *at, const char *fmt, ...) {
  if (p->failed) return; /* the first error is the one reported */
  p->failed = 1;
  int w = snprintf(p->err, p->errlen, "%d:%d: ", p->line, hkrt_json_col(p, at));
  if (w < 0 || (size_t)w >= p->errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err + w, p->errlen - (size_t)w, fmt, ap);
  va_end(ap);
}

static void hkrt_json_skip_ws(hkrt_json_parser *p) {
  while (p->s < p->end) {
    char c = *p->s;
    if (c == '\n') {
      p->line++;
      p->line_start = p->s + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      return;
    }
    p->s++;
  }
}

static const char *hkrt_json_what(const hkrt_json_parser *p) {
  if (p->s >= p->end) return "the end of the file (truncated?)";
  unsigned char c = (unsigned char)*p->s;
  static _Thread_local char buf[32];
  if (c >= 0x20 && c < 0x7f) snprintf(buf, sizeof buf, "'%c'", c);
  else snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

static hkrt_json *hkrt_json_node(hkrt_json_parser *p, hkrt_json_type t) {
  hkrt_json *n = hkrt_json_alloc(p->doc, sizeof *n);
  if (!n) {
    hkrt_json_error(p, p->s, "out of memory");
    return NULL;
  }
  memset(n, 0, sizeof *n);
  n->type = t;
  n->line = p->line;
  n->col = hkrt_json_col(p, p->s);
  return n;
}

/* ---- strings ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (lead byte >= 0x80), or 0. */
static int hkrt_json_utf8_len(const unsigned char *s, const unsigned char *end) {
  unsigned c = s[0], cp;
  int n;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
  else return 0;
  if (end - s < n) return 0;
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  return n;
}

static int hkrt_json_hex4(const char *s, const char *end, unsigned *out) {
  if (end - s < 4) return -1;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | (unsigned)d;
  }
  *out = v;
  return 0;
}

static char *hkrt_json_put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xc0 | cp >> 6);
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *o++ = (char)(0xe0 | cp >> 12);
    *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *o++ = (char)(0xf0 | cp >> 18);
    *o++ = (char)(0x80 | (cp >> 12 & 0x3f));
    *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  }
  return o;
}

/* \uXXXX at s (after the backslash-u), a surrogate pair included. */
static const char *hkrt_json_unicode(hkrt_json_parser *p, const char *s, char **o) {
  unsigned cp, lo;
  if (hkrt_json_hex4(s, p->end, &cp) < 0) {
    hkrt_json_error(p, s, "\\u needs four hex digits");
    return NULL;
  }
  s += 4;
  if (cp >= 0xd800 && cp <= 0xdbff) {
    if (p->end - s < 6 || s[0] != '\\' || s[1] != 'u' || hkrt_json_hex4(s + 2, p->end, &lo) < 0 ||
        lo < 0xdc00 || lo > 0xdfff) {
      hkrt_json_error(p, s, "a \\u high surrogate without its low half");
      return NULL;
    }
    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    s += 6;
  } else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0) {
    hkrt_json_error(p, s - 6, cp ? "a lone \\u low surrogate" : "\\u0000 (NUL) in a string");
    return NULL;
  }
  *o = hkrt_json_put_utf8(*o, cp);
  return s;
}

static const char *hkrt_json_escape(hkrt_json_parser *p, const char *s, char **o) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  if (s >= p->end) return s;
  if (*s == 'u') return hkrt_json_unicode(p, s + 1, o);
  const char *f = *s ? strchr(from, *s) : NULL;
  if (!f) {
    hkrt_json_error(p, s - 1, "unknown escape '\\%c'", *s);
    return NULL;
  }
  *(*o)++ = to[f - from];
  return s + 1;
}

/* A string at p->s (the opening quote); the decoded text goes into the arena. */
static const char *hkrt_json_string(hkrt_json_parser *p) {
  const char *start = p->s++, *s = p->s;
  const char *close = s;
  while (close < p->end && *close != '"') close += *close == '\\' ? 2 : 1;
  size_t cap = (size_t)(close - s) + 1;
  char *out = hkrt_json_alloc(p->doc, cap), *o = out;
  if (!out) {
    hkrt_json_error(p, start, "out of memory");
    return NULL;
  }
  while (s < p->end && *s != '"') {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20) {
      hkrt_json_error(p, s, c == '\n' ? "a string runs past the end of its line"
                                      : "control character 0x%02x in a string", c);
      return NULL;
    }
    if (c == '\\') {
      if (!(s = hkrt_json_escape(p, s + 1, &o))) return NULL;
    } else if (c >= 0x80) {
      int n = hkrt_json_utf8_len((const unsigned char *)s, (const unsigned char *)p->end);
      if (!n) {
        hkrt_json_error(p, s, "invalid UTF-8 in a string");
        return NULL;
      }
      memcpy(o, s, (size_t)n);
      o += n;
      s += n;
    } else {
      *o++ = *s++;
    }
  }
  if (s >= p->end) {
    hkrt_json_error(p, start, "a string that never ends (truncated?)");
    return NULL;
  }
  *o = 0;
  p->s = s + 1;
  return out;
}

/* ---- numbers and literals ------------------------------------------------------ */

static const char *hkrt_json_digits(const char *s, const char *end) {
  while (s < end && *s >= '0' && *s <= '9') s++;
  return s;
}

static hkrt_json *hkrt_json_number(hkrt_json_parser *p) {
  const char *s = p->s, *q = s;
  if (q < p->end && *q == '-') q++;
  const char *d = q;
  q = hkrt_json_digits(q, p->end);
  if (q == d || (*d == '0' && q - d > 1)) {
    hkrt_json_error(p, s, q == d ? "expected a value, found %s" : "a number with a leading zero",
                    hkrt_json_what(p));
    return NULL;
  }
  int is_int = 1;
  if (q < p->end && *q == '.') {
    const char *f = ++q;
    if ((q = hkrt_json_digits(q, p->end)) == f) goto bad;
    is_int = 0;
  }
  if (q < p->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < p->end && (*q == '+' || *q == '-')) q++;
    const char *e = q;
    if ((q = hkrt_json_digits(q, p->end)) == e) goto bad;
    is_int = 0;
  }
  hkrt_json *n = hkrt_json_node(p, HKRT_JSON_NUMBER);
  char *text = n ? hkrt_json_alloc(p->doc, (size_t)(q - s) + 1) : NULL;
  if (!text) return NULL;
  memcpy(text, s, (size_t)(q - s));
  text[q - s] = 0;
  n->str = text;
  errno = 0;
  n->num = is_int ? strtoll(text, NULL, 10) : 0;
  n->is_int = is_int && errno != ERANGE;
  p->s = q;
  return n;
bad:
  hkrt_json_error(p, s, "a malformed number");
  return NULL;
}

static hkrt_json *hkrt_json_literal(hkrt_json_parser *p) {
  static const struct {
    const char *word;
    hkrt_json_type type;
    int value;
  } words[] = {{"true", HKRT_JSON_BOOL, 1}, {"false", HKRT_JSON_BOOL, 0}, {"null", HKRT_JSON_NULL, 0}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t n = strlen(words[i].word);
    if ((size_t)(p->end - p->s) >= n && !memcmp(p->s, words[i].word, n)) {
      hkrt_json *v = hkrt_json_node(p, words[i].type);
      if (v) v->boolean = words[i].value;
      p->s += n;
      return v;
    }
  }
  hkrt_json_error(p, p->s, "expected a value, found %s", hkrt_json_what(p));
  return NULL;
}

/* ---- arrays and objects ---------------------------------------------------------- */

static hkrt_json *hkrt_json_value(hkrt_json_parser *p, int depth);

/* After an element: ',' (more follow) or the closing bracket. Returns 1 for
   more, 0 at the end, -1 on error. */
static int hkrt_json_more(hkrt_json_parser *p, char close, const hkrt_json *open) {
  hkrt_json_skip_ws(p);
  if (p->s < p->end && *p->s == ',') {
    p->s++;
    return 1;
  }
  if (p->s < p->end && *p->s == close) {
    p->s++;
    return 0;
  }
  hkrt_json_error(p, p->s, "expected ',' or '%c' in the %s opened at %d:%d, found %s", close,
                  close == ']' ? "array" : "object", open->line, open->col, hkrt_json_what(p));
  return -1;
}

static void hkrt_json_append(hkrt_json *parent, hkrt_json **tail, hkrt_json *child) {
  if (*tail) (*tail)->next = child;
  else parent->child = child;
  *tail = child;
  parent->count++;
}

static hkrt_json *hkrt_json_array(hkrt_json_parser *p, int depth) {
  hkrt_json *a = hkrt_json_node(p, HKRT_JSON_ARRAY), *tail = NULL;
  if (!a) return NULL;
  p->s++;
  hkrt_json_skip_ws(p);
  if (p->s < p->end && *p->s == ']') {
    p->s++;
    return a;
  }
  for (int more = 1; more == 1;) {
    hkrt_json *v = hkrt_json_value(p, depth + 1);
    if (!v) return NULL;
    hkrt_json_append(a, &tail, v);
    more = hkrt_json_more(p, ']', a);
    if (more < 0) return NULL;
  }
  return a;
}

static int hkrt_json_member(hkrt_json_parser *p, hkrt_json *o, hkrt_json **tail, int depth) {
  hkrt_json_skip_ws(p);
  if (p->s >= p->end || *p->s != '"') {
    hkrt_json_error(p, p->s, "expected a key (a string) in the object opened at %d:%d, found %s",
                    o->line, o->col, hkrt_json_what(p));
    return -1;
  }
  if (o->count == HKRT_JSON_MAX_MEMBERS) {
    hkrt_json_error(p, p->s, "an object with more than %d members", HKRT_JSON_MAX_MEMBERS);
    return -1;
  }
  const char *at = p->s;
  const char *key = hkrt_json_string(p);
  if (!key) return -1;
  for (const hkrt_json *m = o->child; m; m = m->next)
    if (!strcmp(m->key, key)) {
      hkrt_json_error(p, at, "duplicate key \"%s\" (first at %d:%d)", key, m->line, m->col);
      return -1;
    }
  hkrt_json_skip_ws(p);
  if (p->s >= p->end || *p->s != ':') {
    hkrt_json_error(p, p->s, "expected ':' after the key \"%s\", found %s", key, hkrt_json_what(p));
    return -1;
  }
  p->s++;
  hkrt_json *v = hkrt_json_value(p, depth + 1);
  if (!v) return -1;
  v->key = key;
  hkrt_json_append(o, tail, v);
  return 0;
}

static hkrt_json *hkrt_json_object(hkrt_json_parser *p, int depth) {
  hkrt_json *o = hkrt_json_node(p, HKRT_JSON_OBJECT), *tail = NULL;
  if (!o) return NULL;
  p->s++;
  hkrt_json_skip_ws(p);
  if (p->s < p->end && *p->s == '}') {
    p->s++;
    return o;
  }
  for (int more = 1; more == 1;) {
    if (hkrt_json_member(p, o, &tail, depth) < 0) return NULL;
    more = hkrt_json_more(p, '}', o);
    if (more < 0) return NULL;
  }
  return o;
}

static hkrt_json *hkrt_json_value(hkrt_json_parser *p, int depth) {
  hkrt_json_skip_ws(p);
  if (depth > HKRT_JSON_MAX_DEPTH) {
    hkrt_json_error(p, p->s, "nesting deeper than %d levels", HKRT_JSON_MAX_DEPTH);
    return NULL;
  }
  if (p->s >= p->end) {
    hkrt_json_error(p, p->s, "expected a value, found the end of the file (truncated?)");
    return NULL;
  }
  switch (*p->s) {
  case '{': return hkrt_json_object(p, depth);
  case '[': return hkrt_json_array(p, depth);
  case '"': {
    hkrt_json *n = hkrt_json_node(p, HKRT_JSON_STRING);
    if (n && !(n->str = hkrt_json_string(p))) return NULL;
    return n;
  }
  case '-': case '0': case '1': case '2': case '3': case '4':
  case '5': case '6': case '7': case '8': case '9':
    return hkrt_json_number(p);
  default: return hkrt_json_literal(p);
  }
}

/* ---- entry points ------------------------------------------------------------------ */

hkrt_json_doc *hkrt_json_parse(const char *text, size_t len, char *err, size_t errlen) {
  hkrt_json_doc *doc = calloc(1, sizeof *doc);
  hkrt_json_parser p = {text, text + len, text, 1, doc, err, errlen, 0};
  if (!doc) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (len > HKRT_JSON_MAX_BYTES) {
    hkrt_json_error(&p, text, "the file is over %u bytes", HKRT_JSON_MAX_BYTES);
  } else if (memchr(text, 0, len)) {
    const char *z = memchr(text, 0, len);
    for (const char *c = text; c < z; c++)
      if (*c == '\n') p.line++, p.line_start = c + 1;
    hkrt_json_error(&p, z, "a NUL byte");
  } else if ((doc->root = hkrt_json_value(&p, 1))) {
    hkrt_json_skip_ws(&p);
    if (p.s < p.end) hkrt_json_error(&p, p.s, "%s after the document's end", hkrt_json_what(&p));
  }
  if (p.failed) {
    hkrt_json_free(doc);
    return NULL;
  }
  return doc;
}

hkrt_status hkrt_json_read_file(const char *path, hkrt_json_doc **out) {
  *out = NULL;
  /* non-blocking and a regular file only: a FIFO or a device in the
     manifest's place is an error, not a hang */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return hkrt_fail(HKRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  unsigned char *buf;
  size_t len;
  hkrt_status st = hkrt_read_fd(fd, path, HKRT_JSON_MAX_BYTES, &buf, &len);
  if (st) return st;
  char err[512];
  *out = hkrt_json_parse((const char *)buf, len, err, sizeof err);
  free(buf);
  if (!*out) return hkrt_fail(HKRT_ERR_IO, "%s:%s", path, err);
  return HKRT_OK;
}

const hkrt_json *hkrt_json_root(const hkrt_json_doc *doc) { return doc->root; }

const hkrt_json *hkrt_json_get(const hkrt_json *obj, const char *key) {
  if (!obj || obj->type != HKRT_JSON_OBJECT) return NULL;
  for (const hkrt_json *m = obj->child; m; m = m->next)
    if (!strcmp(m->key, key)) return m;
  return NULL;
}

const char *hkrt_json_type_name(hkrt_json_type t) {
  static const char *const names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  return names[t];
}
