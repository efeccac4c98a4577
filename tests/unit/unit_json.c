/* unit_json.c: the manifest's JSON writer. Its output must parse
   (python3 -m json.tool), decode to the values written (strings with every
   control byte, quotes, backslashes, UTF-8; extreme integers; empty and
   nested containers; one-line containers from inline_depth), and be the same
   bytes every time. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gen/json.h"
#include "../../gen/util.h"
#include "testlib.h"

#define NSTR 200

static char strs[NSTR][96];

static char *write_doc(size_t *len) {
  jw_t w;
  jw_init(&w);
  jw_begin_obj(&w);
  jw_kstr(&w, "hkgen", "0.1.0");
  jw_kint(&w, "min", LLONG_MIN);
  jw_kint(&w, "max", LLONG_MAX);
  jw_kint(&w, "zero", 0);
  jw_key(&w, "t");
  jw_bool(&w, 1);
  jw_key(&w, "f");
  jw_bool(&w, 0);
  jw_key(&w, "nothing");
  jw_null(&w);
  jw_key(&w, "empty_obj");
  jw_begin_obj(&w);
  jw_end_obj(&w);
  jw_key(&w, "empty_arr");
  jw_begin_arr(&w);
  jw_end_arr(&w);
  jw_kstr(&w, "weird \"key\"\n\\", "value");
  jw_key(&w, "nested");
  jw_begin_arr(&w);
  for (int i = 0; i < 3; i++) {
    jw_begin_obj(&w);
    jw_kint(&w, "i", i);
    jw_key(&w, "inline");
    w.inline_depth = w.depth + 1;
    jw_begin_obj(&w);
    jw_kint(&w, "a", i);
    jw_key(&w, "deep");
    jw_begin_arr(&w);
    jw_int(&w, 1);
    jw_begin_arr(&w);
    jw_end_arr(&w);
    jw_str(&w, "x");
    jw_end_arr(&w);
    jw_end_obj(&w);
    w.inline_depth = 1000;
    jw_end_obj(&w);
  }
  jw_end_arr(&w);
  jw_key(&w, "strings");
  jw_begin_arr(&w);
  for (int i = 0; i < NSTR; i++) jw_str(&w, strs[i]);
  jw_end_arr(&w);
  jw_end_obj(&w);
  return jw_finish(&w, len);
}

int main(void) {
  t_seed("unit_json");
  /* Fixed strings first, then random ones over bytes 1..127 and valid UTF-8. */
  static const char *const fixed[] = {"", "\"", "\\", "\\\"", "\n\r\t\b\f", "\x01\x1f\x7f",
                                      "caf\xc3\xa9 \xe8\xa1\x8c\xe5\x88\x97 \xf0\x9f\x98\x80",
                                      "</script>", "\\u0000"};
  size_t nf = sizeof fixed / sizeof fixed[0];
  for (size_t i = 0; i < NSTR; i++) {
    if (i < nf) {
      snprintf(strs[i], sizeof strs[i], "%s", fixed[i]);
      continue;
    }
    size_t n = t_below(60), k = 0;
    while (k < n) {
      if (t_below(8) == 0) k += (size_t)snprintf(strs[i] + k, sizeof strs[i] - k, "\xc3\xa9");
      else strs[i][k++] = (char)(1 + t_below(127));
    }
    strs[i][k] = 0;
  }
  size_t len, len2;
  char *doc = write_doc(&len);
  char *doc2 = write_doc(&len2);
  T_CHECK(len == len2 && !memcmp(doc, doc2, len), "two writes of one document differ");
  T_CHECK(len > 0 && doc[len - 1] == '\n', "the document does not end in a newline");

  const char *dir = t_tmpdir();
  char *json = fs_join(dir, "doc.json"), *hex = fs_join(dir, "strings.hex");
  T_CHECK(t_write(json, doc, len) == 0, "cannot write %s", json);
  /* The strings as hex, one per line, for the checker to compare against. */
  hk_buf h;
  buf_init(&h);
  for (int i = 0; i < NSTR; i++) {
    for (const unsigned char *p = (const unsigned char *)strs[i]; *p; p++) buf_printf(&h, "%02x", *p);
    buf_puts(&h, "\n");
  }
  T_CHECK(t_write(hex, h.s, h.len) == 0, "cannot write %s", hex);
  char *cmd = xasprintf("python3 -m json.tool '%s' >/dev/null", json);
  T_CHECK(system(cmd) == 0, "python3 -m json.tool rejects the writer's output (%s)", json);
  free(cmd);
  cmd = xasprintf(
      "python3 -c '\n"
      "import json, sys\n"
      "d = json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
      "want = [bytes.fromhex(l).decode(\"utf-8\") for l in open(sys.argv[2]).read().split(\"\\n\")[:-1]]\n"
      "bad = []\n"
      "if d[\"strings\"] != want: bad.append(\"strings differ\")\n"
      "if d[\"min\"] != -2**63 or d[\"max\"] != 2**63 - 1 or d[\"zero\"] != 0: bad.append(\"integers\")\n"
      "if d[\"t\"] is not True or d[\"f\"] is not False or d[\"nothing\"] is not None: bad.append(\"literals\")\n"
      "if d[\"empty_obj\"] != {} or d[\"empty_arr\"] != []: bad.append(\"empty containers\")\n"
      "if d[\"weird \\\"key\\\"\\n\\\\\"] != \"value\": bad.append(\"escaped key\")\n"
      "if d[\"nested\"][2] != {\"i\": 2, \"inline\": {\"a\": 2, \"deep\": [1, [], \"x\"]}}: bad.append(\"nesting\")\n"
      "print(\"\\n\".join(bad)); sys.exit(1 if bad else 0)\n"
      "' '%s' '%s'",
      json, hex);
  T_CHECK(system(cmd) == 0, "decoded values differ from the values written");
  free(cmd);
  /* inline_depth: the "inline" objects sit on one line. */
  T_CHECK(strstr(doc, "\"inline\": {\"a\": 0, \"deep\": [1, [], \"x\"]}") != NULL,
          "inline containers are not on one line");
  if (t_failures) fprintf(stderr, "document kept in %s\n", json);
  else {
    char *rm = xasprintf("rm -rf '%s'", dir);
    if (system(rm) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    free(rm);
  }
  free(json);
  free(hex);
  free(doc);
  free(doc2);
  buf_free(&h);
  return t_done("unit_json");
}
