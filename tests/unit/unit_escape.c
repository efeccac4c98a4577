/* unit_escape.c: skel_escape / skel_unescape, alone and through GNU m4.

   For fixed hostile strings and random ones (fresh seed each run):
   - unescape(escape(s)) == s, byte for byte;
   - escape(s) holds no quote ([ ]), no $ and no macro prefix (m4_, hkm_:
     templates/README.md's contract; hk_ is the C names' prefix, not m4's);
   - a real m4 round trip: skel_define_str defines a macro over s, `m4 -P`
     expands prologue + a template that splices it once (]macro[) and once
     more through a second definition (a rescan without quotes), and the
     decoded output equals s. The template defines a macro <prefix>boom, so
     a prefix that is not broken shows up as a mismatch after the rescan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../../gen/skel.h"
#include "../../gen/util.h"
#include "testlib.h"

static const char *const fixed[] = {
    "", "[", "]", "[[", "]]", "][", "[x]", "$", "$1", "$@", "$#", "$*", "$0", "${1}",
    "@", "@@", "@{", "@}", "@S", "@&", "@&_", "@@&", "trailing@", "m4_syscmd(touch PWNED)",
    "m4_esyscmd([touch PWNED])", "m4_syscmd", "m4_", "m4", "_", "m4m4_", "m4__", "xm4_y",
    "hkm_x", "hkm_", "hkm_hkm_x", "hkm", "hk_boom", "x hk_boom(1) y", "hkm_boom", "hkhkm_x",
    "m4_define([x],[y])x", "m4_changequote(<,>)", "m4_dnl gone", "m4_divert(-1)hidden",
    "`quoted'", "# comment", "#", "a,b", "(", ")", "f(a,b)", "\n", "line1\nline2\n",
    "tab\there", "\"double\"", "'single'", "\\", "%s%n", "[$1@m4_hkm_]", "@{@}@S@@@&",
    "\xc3\xa9t\xc3\xa9", "\xff\xfe", "m4_[]syscmd", "m[]4_syscmd", "m4@&_syscmd",
};

static const char *const tokens[] = {
    "[", "]", "$", "$1", "$@", "@", "@@", "@&", "@{", "@}", "@S", "m4_", "m4", "_", "hkm_",
    "hkm", "hk_", "syscmd", "boom", "(", ")", ",", "#", "`", "'", "\n", " ", "a", "Z", "0",
    "dnl", "changequote", "{", "}", "S", "&",
};

/* A random string of tokens and bytes 1..255 (no NUL: specs refuse it). */
static size_t random_string(char *out, size_t cap) {
  size_t n = 0, ntok = t_below(24);
  for (size_t i = 0; i < ntok; i++) {
    char tmp[2] = {0, 0};
    const char *t = tmp;
    if (t_below(4) == 0) tmp[0] = (char)(1 + t_below(255));
    else t = tokens[t_below(sizeof tokens / sizeof tokens[0])];
    size_t l = strlen(t);
    if (n + l + 1 > cap) break;
    memcpy(out + n, t, l);
    n += l;
  }
  out[n] = 0;
  return n;
}

static int escape_roundtrip(const char *s) {
  hk_buf b;
  buf_init(&b);
  skel_escape(&b, s);
  int ok = 1;
  T_CHECK(!strpbrk(b.s, "[]$"), "escape of %s keeps a quote or $: %s", s, b.s);
  T_CHECK(!strstr(b.s, "m4_"), "escape keeps m4_ whole: %s", b.s);
  T_CHECK(!strstr(b.s, "hkm_"), "escape keeps hkm_ whole: %s", b.s);
  size_t n = skel_unescape(b.s, b.len);
  ok = n == strlen(s) && memcmp(b.s, s, n) == 0;
  T_CHECK(ok, "unescape(escape(s)) != s");
  if (!ok) {
    fputs("  input:  ", stderr);
    t_print_c(stderr, s, strlen(s));
    fputs("\n  output: ", stderr);
    t_print_c(stderr, b.s, n);
    fputc('\n', stderr);
  }
  buf_free(&b);
  return ok;
}

/* The name skel_define_str gave its macro: the first m4_define([NAME]. */
static void defined_name(const char *prologue, char *name, size_t cap) {
  const char *p = strstr(prologue, "m4_define([");
  name[0] = 0;
  if (!p) return;
  p += 11;
  size_t n = strcspn(p, "]");
  if (n >= cap) n = cap - 1;
  memcpy(name, p, n);
  name[n] = 0;
}

static int m4_roundtrip(const char *dir, const char *s) {
  skel_prologue p;
  skel_prologue_init(&p);
  skel_define_str(&p, "t", s);
  char name[64], prefix[64];
  defined_name(p.text.s, name, sizeof name);
  T_CHECK(name[0] && name[strlen(name) - 1] == 't', "cannot find the macro in the prologue: %s", p.text.s);
  snprintf(prefix, sizeof prefix, "%.*s", (int)strlen(name) - 1, name);
  /* The shape of hk.m4: [ ] quotes, definitions in diversion -1, comments
     off for the output, body one quoted string with macros spliced in. */
  hk_buf in;
  buf_init(&in);
  buf_puts(&in, "m4_changequote([, ])m4_divert(-1)\n");
  buf_add(&in, p.text.s, p.text.len);
  buf_printf(&in,
             "m4_define([%sboom], [BOOM])\n"
             "m4_define([%stwice], %s)\n"
             "m4_changecom()m4_divert(0)m4_dnl\n"
             "[<1<]%s[>1>\n<2<]%stwice[>2>]m4_divert(-1)\n",
             prefix, prefix, name, name, prefix);
  char *src = fs_join(dir, "in.m4"), *out = fs_join(dir, "out.txt"), *err = fs_join(dir, "err.txt");
  T_CHECK(t_write(src, in.s, in.len) == 0, "cannot write %s", src);
  char *cmd = xasprintf("cd '%s' && timeout 10 m4 -P --fatal-warnings in.m4 >out.txt 2>err.txt", dir);
  int st = system(cmd);
  size_t len = 0;
  char *text = t_read(out, &len);
  char *etext = t_read(err, NULL);
  int ok = st == 0 && text != NULL;
  T_CHECK(ok, "m4 failed (status %d): %s", st, etext ? etext : "");
  if (ok) {
    /* Expected: "<1<" s ">1>\n<2<" s ">2>", all of it escaped text. */
    len = skel_unescape(text, len);
    hk_buf want;
    buf_init(&want);
    buf_puts(&want, "<1<");
    buf_puts(&want, s);
    buf_puts(&want, ">1>\n<2<");
    buf_puts(&want, s);
    buf_puts(&want, ">2>");
    ok = len == want.len && memcmp(text, want.s, len) == 0;
    T_CHECK(ok, "m4 round trip differs");
    if (!ok) {
      fputs("  input:   ", stderr);
      t_print_c(stderr, s, strlen(s));
      fputs("\n  decoded: ", stderr);
      t_print_c(stderr, text, len);
      fputc('\n', stderr);
    }
    buf_free(&want);
  }
  free(text);
  free(etext);
  free(cmd);
  free(src);
  free(out);
  free(err);
  buf_free(&in);
  skel_prologue_free(&p);
  return ok;
}

int main(void) {
  t_seed("unit_escape");
  const char *dir = t_tmpdir();
  size_t nfixed = sizeof fixed / sizeof fixed[0];
  int bad_m4 = 0;
  for (size_t i = 0; i < nfixed; i++) {
    escape_roundtrip(fixed[i]);
    bad_m4 += !m4_roundtrip(dir, fixed[i]);
  }
  char s[512];
  for (int i = 0; i < 20000; i++) {
    random_string(s, sizeof s);
    escape_roundtrip(s);
    if (i < 200) bad_m4 += !m4_roundtrip(dir, s);
  }
  /* Unescape leaves what is not an escape alone. */
  char plain[] = "a@b@ @x@";
  size_t n = skel_unescape(plain, strlen(plain));
  T_CHECK(n == 8 && !strcmp(plain, "a@b@ @x@"), "unescape changed plain text: %s", plain);
  printf("unit_escape: %zu fixed + 20000 random strings, %zu through m4, %d m4 mismatches\n",
         nfixed, nfixed + 200, bad_m4);
  char *rm = xasprintf("rm -rf '%s'", dir);
  if (system(rm) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  free(rm);
  return t_done("unit_escape");
}
