/* syncline.c: #line directives that point a compiler's message at the
   template line, the way Bison's synclines do. m4 -s cannot: a skeleton body
   is one quoted token, so m4 numbers every line of an expansion after the
   macro call. Instead the skeleton is copied with @L<line>; markers where
   literal template text resumes (@I<line>,<file>; in the files it includes),
   hk.m4 adds @H<header>; and @G; (generated text), and skel_synclines turns
   the markers into #line directives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skel.h"

static int sl_ident(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether word w starts at s[i] as a whole word. */
static int sl_word_at(const char *s, size_t n, size_t i, const char *w) {
  size_t l = strlen(w);
  return i + l <= n && !strncmp(s + i, w, l) && (i == 0 || !sl_ident(s[i - 1])) &&
         (i + l == n || !sl_ident(s[i + l]));
}

/* Whether the quoted string opening at s[i] (after its run of [) holds a
   newline before it closes: only multi-line text needs a marker. */
static int sl_multiline(const char *s, size_t n, size_t i, int depth) {
  for (; i < n && depth > 0; i++) {
    if (s[i] == '[') depth++;
    else if (s[i] == ']') depth--;
    else if (s[i] == '\n') return 1;
  }
  return 0;
}

static size_t sl_copy_line(const char *s, size_t n, size_t i, hk_buf *out) {
  size_t e = i;
  while (e < n && s[e] != '\n') e++;
  buf_add(out, s + i, e - i);
  return e;
}

/* Markers go where quoted text resumes at paren depth 0 (a skeleton body
   after ]macro[) and after a run of [[ that opens multi-line text (a macro
   argument or definition that is output verbatim). m4 comments and m4_dnl
   lines are copied untouched: their brackets are not quotes. */
void skel_annotate(const char *s, size_t n, const char *file, hk_buf *out) {
  int q = 0, paren = 0, comments = 1, line = 1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (q == 0 && ((comments && c == '#') || sl_word_at(s, n, i, "m4_dnl"))) {
      i = sl_copy_line(s, n, i, out) - 1;
      continue;
    }
    if (q == 0 && sl_word_at(s, n, i, "hkm_output_begin")) comments = 0;
    if (q == 0 && sl_word_at(s, n, i, "hkm_output_end")) comments = 1;
    if (c == '\n') line++;
    if (c != '[') {
      if (q == 0 && c == '(') paren++;
      if (q == 0 && c == ')' && paren > 0) paren--;
      if (c == ']' && q > 0) q--;
      buf_add(out, &c, 1);
      continue;
    }
    size_t run = 0;
    while (i + run < n && s[i + run] == '[') run++;
    buf_add(out, s + i, run);
    int body = q == 0 && paren == 0;
    q += (int)run;
    if (body || (run >= 2 && sl_multiline(s, n, i + run, q))) {
      if (file) buf_printf(out, "@I%d,%s;", line, file); /* an included file names itself */
      else buf_printf(out, "@L%d;", line);
    }
    i += run - 1;
  }
}

/* Where the compiler thinks the next line is, and where it really is. */
typedef struct {
  const char *file; /* NULL: the generated source itself */
  int line;
} sl_pos;

typedef struct {
  hk_buf *out;
  const char *tpl, *gen; /* "templates/<skeleton>", "<kernel>.hip" */
  char hdr[160];
  char inc[8][160]; /* "templates/<include>" seen so far: sl_pos points into it */
  int ninc;
  sl_pos want, have;
  int outline;       /* lines written so far */
  int continued;     /* the previous line ended in a backslash */
} sl_state;

/* Reads one marker at s[*i] ('@' seen); returns 0 when it is not one. */
static int sl_marker(sl_state *st, const char *s, size_t n, size_t *i) {
  char kind = *i + 1 < n ? s[*i + 1] : 0;
  size_t e = *i + 2;
  while (e < n && s[e] != ';' && s[e] != '\n') e++;
  if ((kind != 'L' && kind != 'H' && kind != 'G' && kind != 'I') || e >= n || s[e] != ';') return 0;
  if (kind == 'I') {
    char *comma;
    int line = (int)strtol(s + *i + 2, &comma, 10);
    if (*comma != ',' || comma >= s + e) return 0;
    char name[160];
    snprintf(name, sizeof name, "templates/%.*s", (int)(s + e - comma - 1), comma + 1);
    int k = 0;
    while (k < st->ninc && strcmp(st->inc[k], name)) k++;
    if (k == st->ninc && k < 8) snprintf(st->inc[st->ninc++], sizeof st->inc[0], "%s", name);
    st->want.file = k < 8 ? st->inc[k] : NULL; /* past 8 includes: numbered as generated text */
    st->want.line = line;
  } else if (kind == 'L') {
    st->want.file = st->tpl;
    st->want.line = (int)strtol(s + *i + 2, NULL, 10);
  } else if (kind == 'H') {
    snprintf(st->hdr, sizeof st->hdr, "templates/include/%.*s", (int)(e - *i - 2), s + *i + 2);
    st->want.file = st->hdr;
    st->want.line = 1;
  } else {
    st->want.file = NULL;
  }
  *i = e;
  return 1;
}

static int sl_same(const sl_pos *a, const sl_pos *b) {
  if (!a->file || !b->file) return !a->file && !b->file;
  return a->line == b->line && !strcmp(a->file, b->file);
}

/* Writes one output line, preceded by a #line when the compiler's idea of
   the position differs from the marked one. */
static void sl_emit(sl_state *st, const char *text, size_t len, int ended) {
  if (!st->want.file) st->want.line = st->outline + 1; /* the generated source tracks itself */
  int gen_in_sync = !st->want.file && !st->have.file;
  if (!st->continued && !gen_in_sync && !sl_same(&st->want, &st->have)) {
    st->outline++;
    if (!st->want.file) st->want.line = st->outline + 1;
    buf_printf(st->out, "#line %d \"%s\"\n", st->want.line, st->want.file ? st->want.file : st->gen);
    st->have = st->want;
  }
  buf_add(st->out, text, len);
  if (ended) buf_add(st->out, "\n", 1);
  st->outline++;
  st->continued = len > 0 && text[len - 1] == '\\';
  st->want.line++;
  st->have.line++;
}

void skel_synclines(const char *s, size_t n, const char *tpl, const char *gen, hk_buf *out) {
  sl_state st = {out, tpl, gen, "", {{0}}, 0, {NULL, 1}, {NULL, 1}, 0, 0};
  hk_buf ln;
  buf_init(&ln);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '@' && i + 1 < n && s[i + 1] == '@') {
      buf_add(&ln, s + i, 2); /* an escaped @: skel_unescape decodes it */
      i++;
    } else if (s[i] == '@' && sl_marker(&st, s, n, &i)) {
      continue;
    } else if (s[i] == '\n') {
      sl_emit(&st, ln.s ? ln.s : "", ln.len, 1);
      ln.len = 0;
    } else {
      buf_add(&ln, s + i, 1);
    }
  }
  if (ln.len) sl_emit(&st, ln.s, ln.len, 0);
  buf_free(&ln);
}
