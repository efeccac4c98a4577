/* rt_catalog.c: libhkrt's catalogue API (hkrt.h) through its public calls.
 *
 *   rt_catalog manifest     good and bad manifests, each bad one's message
 *   rt_catalog select       most specialised wins, run-time fallback, "nothing fits" text
 *   rt_catalog pack         packed bytes against structs laid out by hand
 *   rt_catalog args         each argument check and its message
 *   rt_catalog tmap         tensor-map arguments: recipes checked, built only by CUDA, zero when not usable
 *   rt_catalog driver cuda|hip   GPU backends without a driver or device fail cleanly
 *   rt_catalog e2e DIR      an emulated catalogue: select, launch a GEMM, fp64 reference
 *
 * Hand manifests are written into a fresh temporary folder. Exit status 0 when
 * every check passes, 1 otherwise, 2 on a setup error, 77 for a skipped test. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hkrt.h"
#include "../unit/testlib.h"

static char tmpdir[256];

/* the shared counting check of the C tests (unit/testlib.h) */
#define CHECK T_CHECK
#define failures t_failures
#define checks t_checks

/* The call failed with status st and a message containing text. */
#define CHECK_ERR(call, st, text)                                                              \
  do {                                                                                         \
    hkrt_status got_ = (call);                                                                 \
    CHECK(got_ == (st) && strstr(hkrt_error(), (text)), "%s: got %s \"%s\", want %s with \"%s\"", \
          #call, hkrt_status_name(got_), hkrt_error(), hkrt_status_name(st), (text));         \
  } while (0)

/* ---- hand manifests ----------------------------------------------------------------- */

#define GEMM_ARGS_RT                                                                  \
  "{\"size\": 48, \"args\": ["                                                        \
  "{\"name\": \"A\", \"type\": \"const hk_bf16 *\", \"offset\": 0, \"size\": 8},"     \
  "{\"name\": \"B\", \"type\": \"const hk_bf16 *\", \"offset\": 8, \"size\": 8},"     \
  "{\"name\": \"C\", \"type\": \"hk_bf16 *\", \"offset\": 16, \"size\": 8},"          \
  "{\"name\": \"lda\", \"type\": \"int\", \"offset\": 24, \"size\": 4},"              \
  "{\"name\": \"ldb\", \"type\": \"int\", \"offset\": 28, \"size\": 4},"              \
  "{\"name\": \"ldc\", \"type\": \"int\", \"offset\": 32, \"size\": 4},"              \
  "{\"name\": \"M\", \"type\": \"int\", \"offset\": 36, \"size\": 4},"                \
  "{\"name\": \"N\", \"type\": \"int\", \"offset\": 40, \"size\": 4},"                \
  "{\"name\": \"K\", \"type\": \"int\", \"offset\": 44, \"size\": 4}]}"

/* Listed out of offset order on purpose: packing must follow offsets. */
#define GEMM_ARGS_M                                                                   \
  "{\"size\": 40, \"args\": ["                                                        \
  "{\"name\": \"M\", \"type\": \"int\", \"offset\": 36, \"size\": 4},"                \
  "{\"name\": \"C\", \"type\": \"hk_bf16 *\", \"offset\": 16, \"size\": 8},"          \
  "{\"name\": \"A\", \"type\": \"const hk_bf16 *\", \"offset\": 0, \"size\": 8},"     \
  "{\"name\": \"ldc\", \"type\": \"int\", \"offset\": 32, \"size\": 4},"              \
  "{\"name\": \"B\", \"type\": \"const hk_bf16 *\", \"offset\": 8, \"size\": 8},"     \
  "{\"name\": \"ldb\", \"type\": \"int\", \"offset\": 28, \"size\": 4},"              \
  "{\"name\": \"lda\", \"type\": \"int\", \"offset\": 24, \"size\": 4}]}"

/* What hkgen writes for every gemm kernel: the parameters selection may
   leave out, and the launch rules. */
#define GEMM_SELECT(ldb_bound)                                                                     \
  " \"tuning\": [\"tile_m\", \"tile_n\"], \"defaults\": {\"dtype\": \"bf16\"},\n"                    \
  " \"checks\": [{\"rule\": \"lda >= K\", \"why\": \"A is M x K, row-major\"},"                \
  " {\"rule\": \"ldb >= " ldb_bound "\", \"why\": \"B's rows hold " ldb_bound " elements\"},"                 \
  " {\"rule\": \"ldc >= N\", \"why\": \"C is M x N, row-major\"}],\n"

#define GEMM_ANY(layout, ldb_bound, tm, tn)                                                                   \
  "{\"name\": \"gemm_any_" layout "_tm" tm "_tn" tn "\", \"op\": \"gemm\", \"target\": \"gfx942\",\n" \
  " \"params\": {\"dtype\": \"bf16\", \"layout\": \"" layout "\", \"tile_m\": \"" tm              \
  "\", \"tile_n\": \"" tn "\"},\n"                                                                  \
  " \"runtime_params\": [\"M\", \"N\", \"K\"],\n"                                                  \
  GEMM_SELECT(ldb_bound)                                                      \
  " \"file\": \"gfx942/gemm_any_" layout "_tm" tm "_tn" tn ".emu.so\",\n"                          \
  " \"kernarg\": " GEMM_ARGS_RT ",\n"                                                               \
  " \"block\": [256, 1, 1],\n"                                                                      \
  " \"grid\": [\"cdiv(N," tn ")\", \"cdiv(M," tm ")\", \"1\"]}"

#define GEMM_BAKED(name, n, k)                                                                \
  "{\"name\": \"" name "\", \"op\": \"gemm\", \"target\": \"gfx942\",\n"                       \
  " \"params\": {\"dtype\": \"bf16\", \"layout\": \"nt\", \"N\": \"" n "\", \"K\": \"" k        \
  "\", \"tile_m\": \"128\", \"tile_n\": \"128\"},\n"                                           \
  " \"runtime_params\": [\"M\"],\n"                                                            \
  GEMM_SELECT("K")                                                                             \
  " \"file\": \"gfx942/" name ".emu.so\",\n"                                                   \
  " \"kernarg\": " GEMM_ARGS_M ",\n"                                                           \
  " \"block\": [256, 1, 1],\n"                                                                 \
  " \"grid\": [\"cdiv(" n ",128)\", \"cdiv(M,128)\", \"1\"]}"

#define MIXED                                                                                  \
  "{\"name\": \"mixed\", \"op\": \"mixed\", \"target\": \"gfx942\", \"params\": {},\n"         \
  " \"runtime_params\": [\"n\"], \"file\": \"gfx942/mixed.emu.so\",\n"                         \
  " \"kernarg\": {\"size\": 32, \"args\": ["                                                   \
  "{\"name\": \"u\", \"type\": \"unsigned\", \"offset\": 24, \"size\": 4},"                    \
  "{\"name\": \"stride\", \"type\": \"long\", \"offset\": 16, \"size\": 8},"                   \
  "{\"name\": \"n\", \"type\": \"int\", \"offset\": 12, \"size\": 4},"                         \
  "{\"name\": \"scale\", \"type\": \"float\", \"offset\": 8, \"size\": 4},"                    \
  "{\"name\": \"x\", \"type\": \"const float *\", \"offset\": 0, \"size\": 8}]},\n"            \
  " \"block\": [64, 2, 1], \"grid\": [\"n * 3\", \"cdiv(u, 1000000000)\", \"min(n * 100, device_units)\"]}"

#define HEAD "{\"hkgen\": \"test\", \"format\": 1, \"kind\": \"catalogue\", \"backend\": \"emulator\",\n \"kernels\": [\n"

static const char good_manifest[] =
    HEAD GEMM_ANY("nt", "K", "64", "64") ",\n" GEMM_ANY("nn", "N", "64", "64") ",\n" GEMM_ANY("nt", "K", "128", "128") ",\n"
    GEMM_BAKED("llama3_8b_qkv", "6144", "4096") ",\n" MIXED "\n]}\n";

/* No run-time nt kernel: the "nothing fits" message. */
static const char near_manifest[] =
    HEAD GEMM_ANY("nn", "N", "64", "64") ",\n" GEMM_BAKED("llama3_8b_qkv", "6144", "4096") ",\n"
    GEMM_BAKED("llama3_8b_o", "4096", "4096") ",\n" GEMM_BAKED("llama3_8b_down", "4096", "14336") ",\n"
    MIXED "\n]}\n";

/* Three run-time gemm kernels with a cost model each (lowest wins among the
   equally specialised), one without, and a baked one (most specialised
   wins whatever the cost). */
#define GEMM_COST(name, tm, cost)                                                                   \
  "{\"name\": \"" name "\", \"op\": \"gemm\", \"target\": \"gfx942\",\n"                     \
  " \"params\": {\"dtype\": \"bf16\", \"layout\": \"nt\", \"tile_m\": \"" tm "\", \"tile_n\": \"64\"},\n" \
  " \"runtime_params\": [\"M\", \"N\", \"K\"],\n" GEMM_SELECT("K")                                \
  " \"file\": \"gfx942/" name ".emu.so\",\n"                                                       \
  " \"kernarg\": " GEMM_ARGS_RT ",\n"                                                                \
  " \"block\": [256, 1, 1],\n"                                                                       \
  " \"grid\": [\"cdiv(N,64)\", \"cdiv(M," tm ")\", \"1\"]" cost "}"

static const char cost_manifest[] =
    HEAD GEMM_COST("plain", "128", "") ",\n"
    GEMM_COST("big", "128", ", \"cost\": \"max(M,128)*N*K/512 + 2*N*K + 0*device_units\"") ",\n"
    GEMM_COST("small", "64", ", \"cost\": \"max(M,64)*N*K/256\"") ",\n"
    GEMM_COST("tiny", "64", ", \"cost\": \"max(M,tile_m/16)*N*K/64 + 1\"") ",\n"
    GEMM_BAKED("llama3_8b_qkv", "6144", "4096") "\n]}\n";

static char *manifest_dir(const char *text, size_t len) {
  static int n;
  char *dir = malloc(512), path[600];
  snprintf(dir, 512, "%s/cat%d", tmpdir, n++);
  if (mkdir(dir, 0700) < 0) t_die("mkdir %s", dir);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(text, 1, len, f) != len || fclose(f)) t_die("cannot write %s", path);
  return dir;
}

/* text with the first `from` replaced by `to` (which must occur). */
static char *replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) t_die("test bug: '%s' not in the manifest", from);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

static hkrt_device *emu_device(void) {
  hkrt_device *d = NULL;
  if (hkrt_device_open(HKRT_BACKEND_EMU, "gfx942", &d) != HKRT_OK) t_die("cannot open the emulator");
  return d;
}

static hkrt_catalog *open_text(hkrt_device *d, const char *text) {
  char *dir = manifest_dir(text, strlen(text));
  hkrt_catalog *c = NULL;
  if (hkrt_catalog_open(d, dir, &c) != HKRT_OK) t_die("cannot open the catalogue in %s", dir);
  free(dir);
  return c;
}

/* Opens a bad manifest: status st and a message with the path and text. */
static void bad_manifest(hkrt_device *d, const char *text, size_t len, hkrt_status st, const char *want) {
  char *dir = manifest_dir(text, len), path[600];
  hkrt_catalog *c = (hkrt_catalog *)1;
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  hkrt_status got = hkrt_catalog_open(d, dir, &c);
  CHECK(got == st && strstr(hkrt_error(), want) && strstr(hkrt_error(), path) && c == NULL,
        "got %s \"%s\", want %s naming %s with \"%s\"", hkrt_status_name(got), hkrt_error(),
        hkrt_status_name(st), path, want);
  if (got == HKRT_OK) hkrt_catalog_close(c);
  free(dir);
}

/* A bad edit of `base' fails to open with HKRT_ERR_IO and message `want'. */
static void bad_edit_text(hkrt_device *d, const char *base, const char *from, const char *to, const char *want) {
  char *t = replace(base, from, to);
  bad_manifest(d, t, strlen(t), HKRT_ERR_IO, want);
  free(t);
}

static void bad_edit(hkrt_device *d, const char *from, const char *to, hkrt_status st, const char *want) {
  char *t = replace(good_manifest, from, to);
  bad_manifest(d, t, strlen(t), st, want);
  free(t);
}

static void test_manifest(void) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = open_text(d, good_manifest);
  hkrt_kernel *k = NULL;
  CHECK(hkrt_catalog_find(c, "llama3_8b_qkv", NULL, &k) == HKRT_OK && !strcmp(hkrt_kernel_name(k), "llama3_8b_qkv"),
        "%s", hkrt_error());
  CHECK_ERR(hkrt_catalog_find(c, "nope", NULL, &k), HKRT_ERR_NOT_FOUND, "no kernel nope for gfx942");
  hkrt_catalog_close(c);

  const char *grid0 = "\"grid\": [\"cdiv(N,64)\", \"cdiv(M,64)\", \"1\"]}";
  bad_edit(d, ",\n \"grid\": [\"cdiv(N,64)\", \"cdiv(M,64)\", \"1\"]}", "}", HKRT_ERR_IO,
           ":3:1: kernel 0 (gemm_any_nt_tm64_tn64): missing key \"grid\"");
  bad_edit(d, "\"op\": \"gemm\", ", "", HKRT_ERR_IO, "kernel 0 (gemm_any_nt_tm64_tn64): missing key \"op\"");
  bad_edit(d, "{\"name\": \"gemm_any_nt_tm64_tn64\", ", "{", HKRT_ERR_IO, "kernel 0: missing key \"name\"");
  bad_edit(d, "\"size\": 48, ", "", HKRT_ERR_IO, "missing key \"size\"");
  bad_edit(d, "\"offset\": 0, ", "", HKRT_ERR_IO, "missing key \"offset\"");
  bad_edit(d, "\"block\": [256, 1, 1]", "\"block\": \"256\"", HKRT_ERR_IO, "\"block\" must be an array, not a string");
  bad_edit(d, "\"block\": [256, 1, 1]", "\"block\": [256, 1, 1,]", HKRT_ERR_IO,
           ":10:22: expected a value, found ']'");
  bad_edit(d, "\"op\": \"gemm\", ", "\"op\": \"gemm\", \"op\": \"gemm\", ", HKRT_ERR_IO, "duplicate key \"op\"");
  /* the op's knowledge comes from the manifest: launch rules and selection lists */
  bad_edit(d, "\"rule\": \"lda >= K\"", "\"rule\": \"lda >= KK\"", HKRT_ERR_IO,
           "launch rule \"lda >= KK\": 'KK' is not an integer parameter or argument of the kernel");
  bad_edit(d, "\"rule\": \"lda >= K\"", "\"rule\": \"lda >=\"", HKRT_ERR_IO, "unexpected end of the formula");
  bad_edit(d, "\"rule\": \"lda >= K\", ", "", HKRT_ERR_IO, "missing key \"rule\"");
  bad_edit(d, "\"tuning\": [\"tile_m\", \"tile_n\"]", "\"tuning\": \"tile_m\"", HKRT_ERR_IO,
           "\"tuning\" must be an array of names");
  bad_edit(d, "\"defaults\": {\"dtype\": \"bf16\"}", "\"defaults\": {\"dtype\": 1}", HKRT_ERR_IO,
           "defaults: \"dtype\" must be a string");
  bad_edit(d, "\"block\": [256, 1, 1]", "\"block\": [256, 1, 1], \"dynamic_lds\": -1", HKRT_ERR_IO,
           "dynamic_lds must be an integer from 0 to 16777216");
  bad_edit(d, "\"block\": [256, 1, 1]", "\"block\": [256, 1, 1], \"dynamic_lds\": \"4096\"", HKRT_ERR_IO,
           "dynamic_lds must be an integer from 0 to 16777216");
  bad_edit(d, "\"offset\": 24", "\"offset\": 20", HKRT_ERR_IO, "kernel 0 (gemm_any_nt_tm64_tn64): arguments C and lda overlap");
  bad_edit(d, "\"offset\": 24", "\"offset\": 26", HKRT_ERR_IO, "argument lda: offset 26 (size 4) is misaligned");
  bad_edit(d, "\"type\": \"int\"", "\"type\": \"int128\"", HKRT_ERR_IO, "argument lda: unknown type 'int128'");
  bad_edit(d, "gfx942/gemm_any_nt_tm64_tn64.emu.so", "../../lib/evil.so", HKRT_ERR_IO,
           "file \"../../lib/evil.so\" is not a relative path inside the catalogue");
  bad_edit(d, grid0, "\"grid\": [\"cdiv(N,64\", \"cdiv(M,64)\", \"1\"]}", HKRT_ERR_IO,
           "grid[0] \"cdiv(N,64\": expected ')' after cdiv(a,b)");
  bad_edit(d, grid0, "\"grid\": [\"min(N 64)\", \"cdiv(M,64)\", \"1\"]}", HKRT_ERR_IO,
           "grid[0] \"min(N 64)\": expected ',' in min(a,b)");
  bad_edit(d, grid0, "\"grid\": [\"cdiv(Q,64)\", \"cdiv(M,64)\", \"1\"]}", HKRT_ERR_IO,
           "'Q' is not an integer parameter or argument of the kernel");
  bad_edit(d, "\"runtime_params\": [\"M\", \"N\", \"K\"]", "\"runtime_params\": [\"M\", \"N\", \"K\", \"Z\"]",
           HKRT_ERR_IO, "run-time parameter Z is not an integer kernel argument");
  bad_edit(d, "\"backend\": \"emulator\",", "", HKRT_ERR_ARG, "holds GPU code objects");
  bad_edit(d, "\"format\": 1", "\"format\": 2", HKRT_ERR_IO, "format 2 is not one this libhkrt reads");
  bad_edit(d, "\"kind\": \"catalogue\"", "\"kind\": \"sources\"", HKRT_ERR_IO, "kind is not \"catalogue\"");
  bad_edit(d, "_nn_tm64_tn64\", \"op\"", "_nt_tm64_tn64\", \"op\"", HKRT_ERR_IO,
           "kernel gemm_any_nt_tm64_tn64 for gfx942 is listed twice (first at 3:1)");
  bad_edit(d, "\"tile_m\": \"64\"", "\"tile_m\": 64", HKRT_ERR_IO, "params: \"tile_m\" must be a string");

  /* truncated at every 97th byte: never a crash, always a message */
  size_t n = strlen(good_manifest);
  for (size_t cut = 1; cut < n; cut += 97) {
    char *dir = manifest_dir(good_manifest, cut);
    hkrt_catalog *t = NULL;
    CHECK(hkrt_catalog_open(d, dir, &t) == HKRT_ERR_IO && strstr(hkrt_error(), "manifest.json:"),
          "truncated at %zu: %s", cut, hkrt_error());
    free(dir);
  }
  bad_manifest(d, good_manifest, n / 2, HKRT_ERR_IO, "(truncated?)");
  bad_manifest(d, good_manifest, 40, HKRT_ERR_IO, "a string that never ends (truncated?)");

  /* depth: 100000 brackets, refused at 33 levels without recursing further */
  size_t deep = 200000;
  char *brackets = malloc(deep);
  for (size_t i = 0; i < deep; i++) brackets[i] = i < deep / 2 ? '[' : ']';
  bad_manifest(d, brackets, deep, HKRT_ERR_IO, "1:33: nesting deeper than 32 levels");
  free(brackets);

  bad_manifest(d, "{\"kernels\": [] } x", 18, HKRT_ERR_IO, "1:18: 'x' after the document's end");
  bad_manifest(d, "{\"kernels\": [], \"a\": \"\x01\"}", 25, HKRT_ERR_IO, "control character 0x01 in a string");
  bad_manifest(d, "{\"kernels\": [], \"a\": \"\xc0\xaf\"}", 26, HKRT_ERR_IO, "invalid UTF-8");
  bad_manifest(d, "{\"kernels\": [], \"a\": 01}", 24, HKRT_ERR_IO, "a number with a leading zero");
  bad_manifest(d, "{\"kernels\": [], \"a\": \"\\ud800\"}", 30, HKRT_ERR_IO, "without its low half");
  bad_manifest(d, "{\"kernels\": [], \"a\": tru}", 25, HKRT_ERR_IO, "expected a value, found 't'");
  bad_manifest(d, "{\"kernels\": [], \0}", 18, HKRT_ERR_IO, "a NUL byte");
  bad_manifest(d, "[]", 2, HKRT_ERR_IO, "the manifest must be an object");
  bad_manifest(d, "", 0, HKRT_ERR_IO, "found the end of the file (truncated?)");

  hkrt_catalog *none = NULL;
  char missing[600];
  snprintf(missing, sizeof missing, "%s/no-such-folder", tmpdir);
  CHECK_ERR(hkrt_catalog_open(d, missing, &none), HKRT_ERR_IO, "no-such-folder/manifest.json: cannot open");
  /* a FIFO (or any non-file) in the manifest's place is an error, not a hang */
  char fifo_dir[600], fifo[700];
  snprintf(fifo_dir, sizeof fifo_dir, "%s/fifo", tmpdir);
  snprintf(fifo, sizeof fifo, "%s/manifest.json", fifo_dir);
  if (mkdir(fifo_dir, 0700) < 0 || mkfifo(fifo, 0600) < 0) t_die("mkfifo %s", fifo);
  CHECK_ERR(hkrt_catalog_open(d, fifo_dir, &none), HKRT_ERR_IO, "manifest.json: not a regular file");
  unlink(fifo);
  /* a manifest over the reader's limit is refused whole, never cut (a
     sparse file: no disk is used) */
  {
    FILE *big = fopen(fifo, "wb");
    if (!big || ftruncate(fileno(big), (off_t)600 << 20) < 0 || fclose(big)) t_die("sparse manifest");
    CHECK_ERR(hkrt_catalog_open(d, fifo_dir, &none), HKRT_ERR_IO, "manifest.json: the file is over");
    unlink(fifo);
  }
  hkrt_device_close(d);
}

/* ---- selection ----------------------------------------------------------------------- */

static const char *select_name(hkrt_catalog *c, const char *target, const hkrt_param *p, size_t n) {
  hkrt_problem pb = {"gemm", target, p, n};
  hkrt_kernel *k = NULL;
  if (hkrt_select(c, &pb, &k) != HKRT_OK) return hkrt_error();
  return hkrt_kernel_name(k);
}

static void test_select_cost(hkrt_device *d) {
  hkrt_catalog *c = open_text(d, cost_manifest);
  const char *got;
  hkrt_param big[] = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, big, 4), "big"), "lowest cost at M 4096: %s", got);
  hkrt_param small[] = {{"M", "16"}, {"N", "4096"}, {"K", "4096"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, small, 4), "small"), "lowest cost at M 16: %s", got);
  hkrt_param one[] = {{"M", "1"}, {"N", "64"}, {"K", "64"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, one, 4), "tiny"), "lowest cost at M 1 (a baked value in the cost): %s", got);
  /* without M no cost can be evaluated: the first in the manifest, as before costs */
  hkrt_param nom[] = {{"N", "4096"}, {"K", "4096"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, nom, 3), "plain"), "no cost without M: %s", got);
  /* a cost never beats specialisation */
  hkrt_param qkv[] = {{"M", "16"}, {"N", "6144"}, {"K", "4096"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, qkv, 4), "llama3_8b_qkv"), "baked N and K first: %s", got);
  /* a cost that overflows 64 bits is no cost: all three here, so the first */
  hkrt_param huge[] = {{"M", "2147483391"}, {"N", "3"}, {"K", "2147483391"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, huge, 4), "plain"), "overflowing costs: %s", got);
  hkrt_catalog_close(c);
}

static void test_select(void) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = open_text(d, good_manifest);
  const char *got;
  hkrt_param qkv[] = {{"M", "4096"}, {"N", "6144"}, {"K", "4096"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, qkv, 4), "llama3_8b_qkv"), "most specialised: %s", got);
  hkrt_param odd[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nt"}};
  CHECK(!strcmp(got = select_name(c, NULL, odd, 4), "gemm_any_nt_tm64_tn64"), "run-time nt: %s", got);
  hkrt_param nn[] = {{"M", "4096"}, {"N", "6144"}, {"K", "4096"}, {"layout", "nn"}};
  CHECK(!strcmp(got = select_name(c, NULL, nn, 4), "gemm_any_nn_tm64_tn64"), "run-time nn: %s", got);
  hkrt_param tile[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nt"}, {"tile_m", "128"}};
  CHECK(!strcmp(got = select_name(c, NULL, tile, 5), "gemm_any_nt_tm128_tn128"), "named tile: %s", got);
  hkrt_param dtype[] = {{"M", "4096"}, {"N", "6144"}, {"K", "4096.0"}, {"layout", "nt"}, {"dtype", "bf16"}};
  CHECK(!strcmp(got = select_name(c, "gfx942", dtype, 5), "llama3_8b_qkv"), "dtype named: %s", got);

  hkrt_problem pb = {"gemm", NULL, odd, 3}; /* layout left out: no gemm_any fits */
  hkrt_kernel *k = NULL;
  CHECK_ERR(hkrt_select(c, &pb, &k), HKRT_ERR_NOT_FOUND,
            "no gemm kernel for gfx942 fits M=100 N=77 K=93: nearest: gemm_any_nt_tm64_tn64 (bakes "
            "layout=nt, problem does not give layout), gemm_any_nn_tm64_tn64 (bakes layout=nn, problem "
            "does not give layout), gemm_any_nt_tm128_tn128 (bakes layout=nt, problem does not give layout)");
  hkrt_param typo[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nt"}, {"KK", "3"}};
  pb = (hkrt_problem){"gemm", NULL, typo, 5};
  CHECK_ERR(hkrt_select(c, &pb, &k), HKRT_ERR_NOT_FOUND, "gemm_any_nt_tm64_tn64 (has no parameter KK)");
  pb = (hkrt_problem){"gemm", "gfx950", odd, 4};
  CHECK_ERR(hkrt_select(c, &pb, &k), HKRT_ERR_NOT_FOUND,
            "no gemm kernel for gfx950 fits M=100 N=77 K=93 layout=nt: nearest: gemm_any_nt_tm64_tn64 (is for gfx942)");
  pb = (hkrt_problem){"attn_fwd", NULL, odd, 0};
  CHECK_ERR(hkrt_select(c, &pb, &k), HKRT_ERR_NOT_FOUND, "has no attn_fwd kernel");
  hkrt_param twice[] = {{"M", "1"}, {"M", "2"}};
  pb = (hkrt_problem){"gemm", NULL, twice, 2};
  CHECK_ERR(hkrt_select(c, &pb, &k), HKRT_ERR_ARG, "the problem gives M twice");
  CHECK(k == NULL, "a failed select leaves *out NULL");
  hkrt_catalog_close(c);

  c = open_text(d, near_manifest);
  pb = (hkrt_problem){"gemm", NULL, odd, 4};
  CHECK_ERR(hkrt_select(c, &pb, &k), HKRT_ERR_NOT_FOUND,
            "no gemm kernel for gfx942 fits M=100 N=77 K=93 layout=nt: nearest: gemm_any_nn_tm64_tn64 "
            "(bakes layout=nn, problem has layout=nt), llama3_8b_qkv (bakes N=6144, problem has N=77, "
            "bakes K=4096, problem has K=93), llama3_8b_o (bakes N=4096, problem has N=77, bakes K=4096, "
            "problem has K=93)");
  CHECK(strstr(hkrt_error(), "llama3_8b_down") == NULL, "only 3 nearest: %s", hkrt_error());
  hkrt_catalog_close(c);
  test_select_cost(d);
  hkrt_device_close(d);
}

/* ---- packing -------------------------------------------------------------------------- */

struct gemm_m_args { /* the kernarg layout of GEMM_ARGS_M, by hand */
  const void *A, *B;
  void *C;
  int lda, ldb, ldc, M;
};

struct mixed_args { /* MIXED, by hand */
  const float *x;
  float scale;
  int n;
  long stride;
  unsigned u;
};

static void test_pack(void) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = open_text(d, good_manifest);
  static unsigned short a[64], b[64], cc[64];
  static float x[4];
  unsigned char buf[256];
  size_t size = 0;
  unsigned grid[3], block[3];
  hkrt_kernel *k = NULL;

  hkrt_param p[] = {{"M", "100"}, {"N", "6144"}, {"K", "4096"}, {"layout", "nt"}};
  hkrt_problem pb = {"gemm", NULL, p, 4};
  if (hkrt_select(c, &pb, &k) != HKRT_OK) t_die("select");
  hkrt_arg args[] = {HKRT_PTR("C", cc), HKRT_INT("ldb", 4097), HKRT_PTR("A", a), HKRT_INT("lda", 4096),
                     HKRT_INT("ldc", 6150), HKRT_PTR("B", b)};
  memset(buf, 0xab, sizeof buf);
  CHECK(hkrt_kernel_args(k, &pb, args, 6, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
  struct gemm_m_args want;
  memset(&want, 0, sizeof want);
  want.A = a, want.B = b, want.C = cc, want.lda = 4096, want.ldb = 4097, want.ldc = 6150, want.M = 100;
  CHECK(size == sizeof want && !memcmp(buf, &want, sizeof want), "gemm bytes differ (size %zu)", size);
  CHECK(buf[40] == 0xab, "packing wrote past kernarg.size");
  CHECK(grid[0] == 48 && grid[1] == 1 && grid[2] == 1 && block[0] == 256 && block[1] == 1 && block[2] == 1,
        "grid %u %u %u block %u %u %u", grid[0], grid[1], grid[2], block[0], block[1], block[2]);
  /* no "dynamic_lds" (manifests before it): none */
  CHECK(hkrt_kernel_dynamic_lds(k) == 0, "dynamic_lds %u without the key", hkrt_kernel_dynamic_lds(k));
  /* the manifest's "dynamic_lds" reaches the kernel the launch reads it from */
  {
    char *text = replace(good_manifest, "\"block\": [256, 1, 1],\n \"grid\": [\"cdiv(6144,128)\"",
                         "\"block\": [256, 1, 1],\n \"dynamic_lds\": 164864,\n \"grid\": [\"cdiv(6144,128)\"");
    hkrt_catalog *cd = open_text(d, text);
    hkrt_kernel *kd = NULL;
    CHECK(hkrt_select(cd, &pb, &kd) == HKRT_OK && !strcmp(hkrt_kernel_name(kd), "llama3_8b_qkv"), "%s", hkrt_error());
    CHECK(kd && hkrt_kernel_dynamic_lds(kd) == 164864, "dynamic_lds %u, want 164864",
          kd ? hkrt_kernel_dynamic_lds(kd) : 0);
    hkrt_kernel *k0 = NULL;
    CHECK(hkrt_catalog_find(cd, "gemm_any_nt_tm64_tn64", NULL, &k0) == HKRT_OK && hkrt_kernel_dynamic_lds(k0) == 0,
          "another kernel's dynamic_lds");
    hkrt_catalog_close(cd);
    free(text);
  }
  /* the comparison can fail: a struct with lda and ldb swapped differs */
  want.lda = 4097, want.ldb = 4096;
  CHECK(memcmp(buf, &want, sizeof want) != 0, "a wrong layout compared equal");

  if (hkrt_catalog_find(c, "mixed", NULL, &k) != HKRT_OK) t_die("mixed");
  hkrt_param mp[] = {{"n", "-7"}};
  hkrt_problem mpb = {"mixed", NULL, mp, 1};
  hkrt_arg margs[] = {HKRT_INT("u", 4000000000LL), HKRT_INT("stride", 1LL << 40), HKRT_FLOAT("scale", 0.125),
                      HKRT_PTR("x", x)};
  memset(buf, 0xab, sizeof buf);
  CHECK_ERR(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
            "grid[0] = n * 3 = -21, not at least 1");
  mp[0].value = "5";
  CHECK(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
  struct mixed_args mw;
  memset(&mw, 0, sizeof mw);
  mw.x = x, mw.scale = 0.125f, mw.n = 5, mw.stride = 1L << 40, mw.u = 4000000000u;
  CHECK(size == sizeof mw && !memcmp(buf, &mw, sizeof mw), "mixed bytes differ (size %zu)", size);
  /* grid[2]: min(500, the emulated gfx942's 304 compute units) */
  CHECK(grid[0] == 15 && grid[1] == 4 && grid[2] == 304 && block[0] == 64 &&
            block[1] == 2,
        "mixed grid %u %u %u", grid[0], grid[1], grid[2]);
  hkrt_arg ints[] = {HKRT_INT("u", 1), HKRT_INT("stride", 7), HKRT_INT("scale", 3), HKRT_PTR("x", x),
                     HKRT_INT("n", 5)};
  CHECK(hkrt_kernel_args(k, NULL, ints, 5, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
  float three;
  memcpy(&three, buf + offsetof(struct mixed_args, scale), 4);
  CHECK(three == 3.0f && grid[1] == 1, "an integer for a float: %g", three);
  mp[0].value = "2";
  CHECK(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block) == HKRT_OK && grid[2] == 200,
        "min(200, 304) gave %u (%s)", grid[2], hkrt_error());
  /* "align": a pointer the kernel reads 16 bytes at a time (norm's vec: only) is refused 8 bytes off,
     by the packer and by hkrt_kernel_set_pointer, naming it; 16 bytes off passes */
  {
    static const char xarg[] = "{\"name\": \"x\", \"type\": \"const float *\", \"offset\": 0, \"size\": 8}";
    char *text = replace(good_manifest, xarg,
                         "{\"name\": \"x\", \"type\": \"const float *\", \"offset\": 0, \"size\": 8, \"align\": 16}");
    hkrt_catalog *ca = open_text(d, text);
    hkrt_kernel *ka = NULL;
    if (hkrt_catalog_find(ca, "mixed", NULL, &ka) != HKRT_OK) t_die("mixed (align)");
    static float xs[8] __attribute__((aligned(16)));
    hkrt_arg al[] = {HKRT_INT("u", 1), HKRT_INT("stride", 7), HKRT_FLOAT("scale", 1), HKRT_PTR("x", xs + 2)};
    CHECK_ERR(hkrt_kernel_args(ka, &mpb, al, 4, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
              "argument x (");
    CHECK(strstr(hkrt_error(), "is not aligned to 16 bytes, as the kernel's wide accesses"), "%s", hkrt_error());
    CHECK_ERR(hkrt_kernel_set_pointer(ka, buf, sizeof buf, "x", xs + 2), HKRT_ERR_ARG,
              "argument x: misaligned pointer");
    al[3].v.p = xs + 4;
    CHECK(hkrt_kernel_args(ka, &mpb, al, 4, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
    CHECK(hkrt_kernel_args(k, &mpb, (hkrt_arg[]){HKRT_INT("u", 1), HKRT_INT("stride", 7), HKRT_FLOAT("scale", 1),
                                                  HKRT_PTR("x", xs + 1)},
                           4, buf, sizeof buf, &size, grid, block) == HKRT_OK,
          "without \"align\", 4 bytes suffice: %s", hkrt_error());
    hkrt_catalog_close(ca);
    free(text);
    static const struct {
      const char *to, *want;
    } badal[] = {
        {", \"align\": 12}", "argument x: \"align\" 12 is not a power of two that is a multiple of 4"},
        {", \"align\": 2}", "argument x: \"align\" 2 is not a power of two that is a multiple of 4"},
        {", \"align\": 512}", "\"align\" must be an integer from 1 to 256, not 512"},
    };
    for (size_t i = 0; i < sizeof badal / sizeof badal[0]; i++) {
      char to[200];
      snprintf(to, sizeof to, "%.*s%s", (int)strlen(xarg) - 1, xarg, badal[i].to);
      bad_edit_text(d, good_manifest, xarg, to, badal[i].want);
    }
    bad_edit_text(d, good_manifest, "{\"name\": \"n\", \"type\": \"int\", \"offset\": 12, \"size\": 4}",
                  "{\"name\": \"n\", \"type\": \"int\", \"offset\": 12, \"size\": 4, \"align\": 16}",
                  "argument n (int): \"align\" is for pointers");
  }
  /* $HKRT_UNITS stands in for the unit count; a bad value is an error, not ignored */
  setenv("HKRT_UNITS", "3", 1);
  CHECK(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block) == HKRT_OK && grid[2] == 3,
        "min(200, HKRT_UNITS=3) gave %u (%s)", grid[2], hkrt_error());
  const char *bad[] = {"0", "-2", "abc", "4x", "", "1048577"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want_msg[64];
    snprintf(want_msg, sizeof want_msg, "HKRT_UNITS='%s': expected a whole number", bad[i]);
    setenv("HKRT_UNITS", bad[i], 1);
    CHECK_ERR(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG, want_msg);
  }
  unsetenv("HKRT_UNITS");
  /* min's operands are counts a kernel indexes as ints: past 2^31-1 is an error even when
     the other side is small (n * 100 = 3e9 here) */
  mp[0].value = "30000000";
  CHECK_ERR(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
            "min(3000000000,");
  mp[0].value = "2";
  CHECK(hkrt_kernel_args(k, &mpb, margs, 4, buf, sizeof buf, &size, grid, block) == HKRT_OK && grid[2] == 200,
        "after unsetenv: %u", grid[2]);
  hkrt_catalog_close(c);
  hkrt_device_close(d);
}

/* ---- tensor maps (sm_90a bulk copies) -------------------------------------------------- */

#define TMAP(name, tensor, outer, ld, box)                                                        \
  "{\"name\": \"" name "\", \"type\": \"hk_tmap\", \"offset\": OFF_" name ", \"size\": 128,"    \
  " \"tmap\": {\"tensor\": \"" tensor "\", \"dims\": [\"K\", \"" outer "\"], \"strides\": [\"" ld \
  "\"], \"box\": [64, " box "], \"swizzle\": 128}}"

/* A run-time nt GEMM whose A and B come with tensor maps (what hkgen writes for sm_90a),
   here in an emulated catalogue: the emulator cannot build tensor maps. */
static const char tmap_manifest[] =
    HEAD "{\"name\": \"tma\", \"op\": \"gemm\", \"target\": \"gfx942\",\n"
    " \"params\": {\"dtype\": \"bf16\", \"layout\": \"nt\", \"tile_m\": \"128\", \"tile_n\": \"256\"},\n"
    " \"runtime_params\": [\"M\", \"N\", \"K\"], \"file\": \"gfx942/tma.emu.so\",\n"
    " \"kernarg\": {\"size\": 320, \"args\": ["
    "{\"name\": \"A\", \"type\": \"const hk_bf16 *\", \"offset\": 0, \"size\": 8},"
    "{\"name\": \"B\", \"type\": \"const hk_bf16 *\", \"offset\": 8, \"size\": 8},"
    "{\"name\": \"C\", \"type\": \"hk_bf16 *\", \"offset\": 16, \"size\": 8},"
    "{\"name\": \"lda\", \"type\": \"int\", \"offset\": 24, \"size\": 4},"
    "{\"name\": \"ldb\", \"type\": \"int\", \"offset\": 28, \"size\": 4},"
    "{\"name\": \"ldc\", \"type\": \"int\", \"offset\": 32, \"size\": 4},"
    "{\"name\": \"M\", \"type\": \"int\", \"offset\": 36, \"size\": 4},"
    "{\"name\": \"N\", \"type\": \"int\", \"offset\": 40, \"size\": 4},"
    "{\"name\": \"K\", \"type\": \"int\", \"offset\": 44, \"size\": 4},"
    TMAP("tmap_a", "A", "M", "lda", "128") "," TMAP("tmap_b", "B", "N", "ldb", "256") "]},\n"
    " \"block\": [384, 1, 1], \"dynamic_lds\": 197888,\n"
    " \"grid\": [\"cdiv(N,256)\", \"cdiv(M,128)\", \"1\"]}\n]}\n";

static char *tmap_text(void) {
  char *a = replace(tmap_manifest, "OFF_tmap_a", "64"), *b = replace(a, "OFF_tmap_b", "192");
  free(a);
  return b;
}

static void test_tmap(void) {
  hkrt_device *d = emu_device();
  char *text = tmap_text();
  hkrt_catalog *c = open_text(d, text);
  hkrt_kernel *k = NULL;
  if (hkrt_catalog_find(c, "tma", NULL, &k) != HKRT_OK) t_die("find tma: %s", hkrt_error());
  static unsigned short a[4096] __attribute__((aligned(16))), b[4096] __attribute__((aligned(16))), cc[4096];
  unsigned char buf[512];
  size_t size;
  unsigned grid[3], block[3];
  /* tensors the copy engine can take: only a CUDA device builds their maps */
  hkrt_arg ok[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 64),
                   HKRT_INT("ldb", 64), HKRT_INT("ldc", 60), HKRT_INT("M", 50), HKRT_INT("N", 60),
                   HKRT_INT("K", 64)};
  CHECK_ERR(hkrt_kernel_args(k, NULL, ok, 9, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
            "kernel tma (argument tmap_a) takes a tensor map (Hopper bulk copies), which the emulator backend "
            "cannot build");
  /* rows 61 elements apart (not a multiple of 16 bytes): no map, all zeros, packing succeeds and the
     map arguments are not reported missing */
  hkrt_arg odd[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 61),
                    HKRT_INT("ldb", 61), HKRT_INT("ldc", 60), HKRT_INT("M", 50), HKRT_INT("N", 60),
                    HKRT_INT("K", 61)};
  memset(buf, 0xab, sizeof buf);
  CHECK(hkrt_kernel_args(k, NULL, odd, 9, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
  int zero = 1;
  for (int i = 64; i < 320; i++) zero &= buf[i] == 0;
  CHECK(size == 320 && zero && grid[0] == 1 && grid[1] == 1 && block[0] == 384,
        "size %zu, maps zero %d, grid %u %u, block %u", size, zero, grid[0], grid[1], block[0]);
  /* a misaligned base alone also keeps the map out */
  hkrt_arg mis[] = {HKRT_PTR("A", a + 1), HKRT_PTR("B", a + 1), HKRT_PTR("C", cc), HKRT_INT("lda", 64),
                    HKRT_INT("ldb", 64), HKRT_INT("ldc", 60), HKRT_INT("M", 50), HKRT_INT("N", 60),
                    HKRT_INT("K", 64)};
  CHECK(hkrt_kernel_args(k, NULL, mis, 9, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
  /* rank 4 (as the attention kernels' K and V maps): every stride must qualify; ldc = 60 (120 bytes)
     keeps tmap_a zero, tmap_b is still asked for; ldc = 64 asks for tmap_a first */
  {
    char *t4 = replace(text, "\"dims\": [\"K\", \"M\"], \"strides\": [\"lda\"], \"box\": [64, 128]",
                       "\"dims\": [\"K\", \"M\", \"N\", \"K\"], \"strides\": [\"lda\", \"ldb\", \"ldc\"], "
                       "\"box\": [64, 128, 1, 1]");
    hkrt_catalog *c4 = open_text(d, t4);
    hkrt_kernel *k4 = NULL;
    if (hkrt_catalog_find(c4, "tma", NULL, &k4) != HKRT_OK) t_die("find tma (rank 4): %s", hkrt_error());
    CHECK_ERR(hkrt_kernel_args(k4, NULL, ok, 9, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
              "kernel tma (argument tmap_b) takes a tensor map");
    hkrt_arg ok4[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 64),
                      HKRT_INT("ldb", 64), HKRT_INT("ldc", 64), HKRT_INT("M", 50), HKRT_INT("N", 60),
                      HKRT_INT("K", 64)};
    CHECK_ERR(hkrt_kernel_args(k4, NULL, ok4, 9, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
              "kernel tma (argument tmap_a) takes a tensor map");
    memset(buf, 0xab, sizeof buf);
    CHECK(hkrt_kernel_args(k4, NULL, odd, 9, buf, sizeof buf, &size, grid, block) == HKRT_OK, "%s", hkrt_error());
    hkrt_catalog_close(c4);
    free(t4);
  }
  /* the caller never passes a map */
  hkrt_arg given[] = {HKRT_PTR("tmap_a", a)};
  CHECK_ERR(hkrt_kernel_args(k, NULL, given, 1, buf, sizeof buf, &size, grid, block), HKRT_ERR_ARG,
            "argument tmap_a is a tensor map that the runtime builds from A; do not pass it");
  hkrt_catalog_close(c);

  /* recipes are checked when the manifest is read */
  struct {
    const char *from, *to, *want;
  } bad[] = {
      {"\"tensor\": \"A\"", "\"tensor\": \"lda\"", "tensor map tmap_a: lda is not a pointer argument"},
      {"[\"ldb\"]", "[\"B\"]", "tensor map tmap_b: stride B is not an integer argument"},
      {"[64, 256]", "[64, 257]", "argument tmap_b: box sizes must be integers from 1 to 256, not 257"},
      {"[64, 256]", "[64, 256, 1]", "argument tmap_b: 2 dims need 1 strides and 2 box sizes, not 1 and 3"},
      {"[\"ldb\"]", "[]", "argument tmap_b: 2 dims need 1 strides and 2 box sizes, not 0 and 2"},
      {"[\"K\", \"N\"]", "[\"K\"]", "argument tmap_b: a tensor map of rank 1 (allowed: 2 to 4)"},
      {"[\"K\", \"N\"]", "[\"K\", \"N\", \"M\", \"K\", \"N\"]",
       "argument tmap_b: a tensor map of rank 5 (allowed: 2 to 4)"},
      {"[\"K\", \"N\"]", "[\"K\", 3]", "argument tmap_b: \"dims\" must hold names"},
      {"\"swizzle\": 128}}]", "\"swizzle\": 48}}]", "argument tmap_b: swizzle 48 is not 0, 32, 64 or 128"},
      {"\"offset\": 192", "\"offset\": 160", "argument tmap_b: offset 160 (size 128) is misaligned"},
      {"\"backend\": \"emulator\"", "\"backend\": \"gpux\"", "unknown backend (allowed: \"gpu\", \"emulator\")"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) bad_edit_text(d, text, bad[i].from, bad[i].to, bad[i].want);
  /* a GPU catalogue is read, and refused by the emulator device with a message that says so */
  char *gpu = replace(text, "\"backend\": \"emulator\"", "\"backend\": \"gpu\"");
  char *dir = manifest_dir(gpu, strlen(gpu));
  hkrt_catalog *g = NULL;
  CHECK_ERR(hkrt_catalog_open(d, dir, &g), HKRT_ERR_ARG, "holds GPU code objects; the emulator runs catalogues built with hkgen build --emulate");
  free(dir);
  free(gpu);
  free(text);
  hkrt_device_close(d);
}

/* ---- argument checks ------------------------------------------------------------------- */

static hkrt_status gemm_args(hkrt_kernel *k, const hkrt_problem *pb, const hkrt_arg *args, size_t n) {
  unsigned char buf[256];
  size_t size;
  unsigned grid[3], block[3];
  return hkrt_kernel_args(k, pb, args, n, buf, sizeof buf, &size, grid, block);
}

static void test_args(void) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = open_text(d, good_manifest);
  static unsigned short a[64], b[64], cc[64];
  hkrt_kernel *k = NULL, *nnk = NULL, *qkv = NULL;
  hkrt_param p[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nt"}};
  hkrt_problem pb = {"gemm", NULL, p, 4};
  if (hkrt_select(c, &pb, &k) != HKRT_OK) t_die("select");
  hkrt_arg ok[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                   HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK(gemm_args(k, &pb, ok, 6) == HKRT_OK, "%s", hkrt_error());

  hkrt_arg null[] = {HKRT_PTR("A", NULL), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                     HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, null, 6), HKRT_ERR_ARG, "kernel gemm_any_nt_tm64_tn64: argument A is a null pointer");
  hkrt_arg mis[] = {HKRT_PTR("A", a), HKRT_PTR("B", (char *)b + 1), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, mis, 6), HKRT_ERR_ARG, "is not aligned to 2 bytes, as const hk_bf16 * needs");
  CHECK(strstr(hkrt_error(), "argument B ("), "names B: %s", hkrt_error());
  CHECK_ERR(gemm_args(k, &pb, ok, 5), HKRT_ERR_ARG, "kernel gemm_any_nt_tm64_tn64: argument ldc is missing");
  CHECK_ERR(gemm_args(k, &pb, ok, 3), HKRT_ERR_ARG, "arguments lda, ldb, ldc are missing");
  hkrt_arg unk[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77), HKRT_INT("foo", 1)};
  CHECK_ERR(gemm_args(k, &pb, unk, 7), HKRT_ERR_ARG, "kernel gemm_any_nt_tm64_tn64: unknown argument 'foo'");
  hkrt_arg lda[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 50),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, lda, 6), HKRT_ERR_ARG, "lda >= K does not hold: lda = 50, K = 93 (A is M x K, row-major)");
  hkrt_arg ldb[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 92), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, ldb, 6), HKRT_ERR_ARG, "ldb >= K does not hold: ldb = 92, K = 93 (B's rows");
  hkrt_arg ldc[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 76)};
  CHECK_ERR(gemm_args(k, &pb, ldc, 6), HKRT_ERR_ARG, "ldc >= N does not hold: ldc = 76, N = 77 (C is M x N, row-major)");
  hkrt_arg twice[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                      HKRT_INT("ldb", 93), HKRT_INT("ldc", 77), HKRT_INT("lda", 93)};
  CHECK_ERR(gemm_args(k, &pb, twice, 7), HKRT_ERR_ARG, "argument lda is given twice");
  hkrt_arg dis[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77), HKRT_INT("M", 99)};
  CHECK_ERR(gemm_args(k, &pb, dis, 7), HKRT_ERR_ARG, "argument M = 99 disagrees with the problem's M=100");
  hkrt_arg big[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 1LL << 40),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, big, 6), HKRT_ERR_ARG, "argument lda = 1099511627776 does not fit its type int");
  hkrt_arg flt[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_FLOAT("lda", 93),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, flt, 6), HKRT_ERR_ARG, "argument lda is an integer (int); give it with HKRT_INT");
  hkrt_arg iptr[] = {HKRT_INT("A", 4096), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                     HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(k, &pb, iptr, 6), HKRT_ERR_ARG, "argument A is a pointer (const hk_bf16 *)");

  /* run-time parameters as arguments only, with no problem */
  hkrt_arg all[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 93), HKRT_INT("ldc", 77), HKRT_INT("M", 0), HKRT_INT("N", 77), HKRT_INT("K", 93)};
  CHECK_ERR(gemm_args(k, NULL, all, 9), HKRT_ERR_ARG, "grid[1] = cdiv(M,64) = 0, not at least 1");
  all[6] = (hkrt_arg)HKRT_INT("M", 1);
  CHECK(gemm_args(k, NULL, all, 9) == HKRT_OK, "%s", hkrt_error());
  CHECK_ERR(gemm_args(k, NULL, all, 8), HKRT_ERR_ARG, "argument K is missing");

  hkrt_param pnn[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nn"}};
  hkrt_problem pbnn = {"gemm", NULL, pnn, 4};
  if (hkrt_select(c, &pbnn, &nnk) != HKRT_OK) t_die("select nn");
  hkrt_arg nnb[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 93),
                    HKRT_INT("ldb", 76), HKRT_INT("ldc", 77)};
  CHECK_ERR(gemm_args(nnk, &pbnn, nnb, 6), HKRT_ERR_ARG, "ldb >= N does not hold: ldb = 76, N = 77 (B's rows");
  CHECK_ERR(gemm_args(nnk, &pb, ok, 6), HKRT_ERR_ARG,
            "kernel gemm_any_nn_tm64_tn64 does not fit the problem: bakes layout=nn, problem has layout=nt");

  hkrt_param pq[] = {{"M", "100"}, {"N", "6144"}, {"K", "4096"}, {"layout", "nt"}};
  hkrt_problem pbq = {"gemm", NULL, pq, 4};
  if (hkrt_select(c, &pbq, &qkv) != HKRT_OK) t_die("select qkv");
  hkrt_arg qa[] = {HKRT_PTR("A", a), HKRT_PTR("B", b), HKRT_PTR("C", cc), HKRT_INT("lda", 4096),
                   HKRT_INT("ldb", 4096), HKRT_INT("ldc", 6144), HKRT_INT("N", 6144)};
  CHECK(gemm_args(qkv, &pbq, qa, 7) == HKRT_OK, "a baked parameter that agrees: %s", hkrt_error());
  qa[6] = (hkrt_arg)HKRT_INT("N", 77);
  CHECK_ERR(gemm_args(qkv, &pbq, qa, 7), HKRT_ERR_ARG, "kernel llama3_8b_qkv: N is baked to 6144");
  hkrt_catalog_close(c);

  /* the target's grid limits from the manifest: 65535 blocks on y */
  char *lim = replace(good_manifest, "\"block\": [256, 1, 1],\n \"grid\": [\"cdiv(N,64)\"",
                      "\"block\": [256, 1, 1], \"grid_max\": [2147483647, 65535, 65535],\n \"grid\": [\"cdiv(N,64)\"");
  c = open_text(d, lim);
  k = NULL;
  if (hkrt_select(c, &pb, &k) != HKRT_OK) t_die("select limited");
  all[6] = (hkrt_arg)HKRT_INT("M", 64 * 65535);
  CHECK(gemm_args(k, NULL, all, 9) == HKRT_OK, "65535 blocks on y: %s", hkrt_error());
  all[6] = (hkrt_arg)HKRT_INT("M", 64 * 65535 + 1);
  CHECK_ERR(gemm_args(k, NULL, all, 9), HKRT_ERR_ARG,
            "grid[1] = cdiv(M,64) = 65536 blocks, more than gfx942 allows on axis y (65535)");
  free(lim);
  hkrt_catalog_close(c);
  hkrt_device_close(d);
}

/* ---- GPU backends without a driver --------------------------------------------------------- */

static int test_driver(const char *which) {
  int cuda = !strcmp(which, "cuda");
  hkrt_device *d = NULL;
  hkrt_status st = hkrt_device_open(cuda ? HKRT_BACKEND_CUDA : HKRT_BACKEND_HIP, NULL, &d);
  printf("%s: %s: %s\n", which, hkrt_status_name(st), hkrt_error());
  if (st == HKRT_OK) {
    printf("SKIP: a %s device is present\n", which);
    hkrt_device_close(d);
    return 77;
  }
  if (cuda) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      dlclose(lib);
      CHECK(st == HKRT_ERR_NO_DEVICE, "libcuda.so.1 loads, so NO_DEVICE: %s", hkrt_status_name(st));
    } else {
      CHECK(st == HKRT_ERR_NO_DRIVER && strstr(hkrt_error(), "cannot load libcuda.so.1"), "%s: %s",
            hkrt_status_name(st), hkrt_error());
    }
  } else {
    CHECK(st == HKRT_ERR_NO_DRIVER || st == HKRT_ERR_NO_DEVICE, "%s: %s", hkrt_status_name(st), hkrt_error());
    CHECK(strstr(hkrt_error(), "HIP"), "the message names HIP: %s", hkrt_error());
  }
  CHECK(d == NULL, "a failed open leaves *out NULL");
  return -1;
}

/* ---- end to end on the emulator -------------------------------------------------------------- */

static uint64_t rng = 0x243f6a8885a308d3ull; /* t_uniform(&rng): splitmix64 */

static void *dev_upload(hkrt_device *d, const void *h, size_t bytes) {
  void *p = NULL;
  if (hkrt_alloc(d, bytes, &p) != HKRT_OK || hkrt_copy_to_device(d, p, h, bytes) != HKRT_OK) t_die("upload");
  return p;
}

/* One GEMM through select and launch; returns the relative L2 error. */
static double e2e_gemm(hkrt_device *d, hkrt_catalog *c, int nt, long M, long N, long K, const char *want) {
  char ms[32], ns[32], ks[32];
  snprintf(ms, sizeof ms, "%ld", M), snprintf(ns, sizeof ns, "%ld", N), snprintf(ks, sizeof ks, "%ld", K);
  hkrt_param p[] = {{"M", ms}, {"N", ns}, {"K", ks}, {"layout", nt ? "nt" : "nn"}};
  hkrt_problem pb = {"gemm", NULL, p, 4};
  hkrt_kernel *k = NULL;
  if (hkrt_select(c, &pb, &k) != HKRT_OK) t_die("select");
  CHECK(!strcmp(hkrt_kernel_name(k), want), "selected %s, want %s", hkrt_kernel_name(k), want);
  long lda = K + 3, ldb = (nt ? K : N) + 1, ldc = N + 5, brows = nt ? N : K;
  size_t na = (size_t)(M * lda), nb = (size_t)(brows * ldb), nc = (size_t)(M * ldc);
  unsigned short *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
  for (size_t i = 0; i < na; i++) ha[i] = t_to_bf16(t_uniform(&rng));
  for (size_t i = 0; i < nb; i++) hb[i] = t_to_bf16(t_uniform(&rng));
  for (size_t i = 0; i < nc; i++) hc[i] = 0xffff; /* NaN poison */
  void *A = dev_upload(d, ha, na * 2), *B = dev_upload(d, hb, nb * 2), *C = dev_upload(d, hc, nc * 2);
  hkrt_arg args[] = {HKRT_PTR("A", A), HKRT_PTR("B", B), HKRT_PTR("C", C), HKRT_INT("lda", lda),
                     HKRT_INT("ldb", ldb), HKRT_INT("ldc", ldc)};
  hkrt_status st = hkrt_kernel_launch(k, &pb, args, 6, NULL);
  CHECK(st == HKRT_OK, "launch %s: %s", hkrt_kernel_name(k), hkrt_error());
  if (st == HKRT_OK && hkrt_synchronize(d) == HKRT_OK && hkrt_copy_to_host(d, hc, C, nc * 2) != HKRT_OK)
    t_die("download");
  double num = 0, den = 0;
  int outside = 0;
  for (long i = 0; i < M; i++) {
    for (long j = 0; j < N; j++) {
      double s = 0;
      for (long q = 0; q < K; q++)
        s += t_from_bf16(ha[i * lda + q]) * t_from_bf16(nt ? hb[j * ldb + q] : hb[q * ldb + j]);
      double g = t_from_bf16(hc[i * ldc + j]);
      num += (g - s) * (g - s); /* NaN stays NaN */
      den += s * s;
    }
    for (long j = N; j < ldc; j++) outside |= hc[i * ldc + j] != 0xffff;
  }
  CHECK(!outside, "%s wrote C outside its N columns", want);
  hkrt_free(d, A), hkrt_free(d, B), hkrt_free(d, C);
  free(ha), free(hb), free(hc);
  double err = sqrt(num / den);
  printf("%-28s %s M=%ld N=%ld K=%ld rel L2 %.3e\n", hkrt_kernel_name(k), nt ? "nt" : "nn", M, N, K, err);
  return err;
}

static void test_e2e(const char *dir) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = NULL;
  if (hkrt_catalog_open(d, dir, &c) != HKRT_OK) t_die("cannot open %s", dir);
  double e1 = e2e_gemm(d, c, 1, 100, 77, 93, "gemm_any_nt");
  double e2 = e2e_gemm(d, c, 0, 129, 64, 200, "gemm_any_nn");
  double e3 = e2e_gemm(d, c, 1, 37, 96, 80, "rt_e2e_baked");
  double e4 = e2e_gemm(d, c, 1, 3, 77, 93, "gemm_any_nt"); /* module already loaded */
  hkrt_param p[] = {{"M", "1"}, {"N", "96"}, {"K", "80"}, {"layout", "nt"}};
  hkrt_problem pb = {"gemm", "gfx950", p, 4};
  hkrt_kernel *k = NULL;
  hkrt_arg none[] = {HKRT_INT("lda", 80)};
  if (hkrt_select(c, &pb, &k) == HKRT_OK) /* a catalogue with gfx950 kernels too */
    CHECK_ERR(hkrt_kernel_launch(k, &pb, none, 1, NULL), HKRT_ERR_ARG, "is for gfx950; the device runs gfx942");
  CHECK(e1 < 1e-2 && e2 < 1e-2 && e3 < 1e-2 && e4 < 1e-2, "rel L2 %.3e %.3e %.3e %.3e (NaN fails)", e1, e2, e3, e4);
  hkrt_catalog_close(c);
  hkrt_device_close(d);
}

/* ---- main ---------------------------------------------------------------------------------------- */

static void rm_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "rt_catalog: cannot remove %s\n", dir);
}

/* ---- arguments no kernel can serve (an hkgen-built catalogue) ------------------------------- */

static hkrt_kernel *abuse_kernel(hkrt_catalog *c, const char *name) {
  hkrt_kernel *k = NULL;
  if (hkrt_catalog_find(c, name, "gfx942", &k) != HKRT_OK) t_die("find %s: %s", name, hkrt_error());
  return k;
}

static hkrt_status abuse_pack(hkrt_kernel *k, const hkrt_arg *args, size_t n) {
  _Alignas(64) unsigned char buf[4096];
  size_t size;
  unsigned grid[3], block[3];
  return hkrt_kernel_args(k, NULL, args, n, buf, sizeof buf, &size, grid, block);
}

/* Attention: 13 integer arguments after the pointers and the scale; v[]
   gives batch, seqlen_q, seqlen_k, heads_q, heads_k and one stride. */
static hkrt_status abuse_attn(hkrt_kernel *k, long hq, long hk, long batch, long q_ss) {
  static unsigned short buf[64];
  hkrt_arg a[] = {HKRT_PTR("Q", buf), HKRT_PTR("K", buf), HKRT_PTR("V", buf), HKRT_PTR("O", buf),
                  HKRT_PTR("LSE", buf), HKRT_INT("q_stride_b", 0), HKRT_INT("q_stride_s", q_ss),
                  HKRT_INT("q_stride_h", 64), HKRT_INT("k_stride_b", 0), HKRT_INT("k_stride_s", 64),
                  HKRT_INT("k_stride_h", 64), HKRT_INT("v_stride_b", 0), HKRT_INT("v_stride_s", 64),
                  HKRT_INT("v_stride_h", 64), HKRT_INT("o_stride_b", 0), HKRT_INT("o_stride_s", 64),
                  HKRT_INT("o_stride_h", 64), HKRT_FLOAT("scale", 0.125), HKRT_INT("batch", batch),
                  HKRT_INT("seqlen_q", 5), HKRT_INT("seqlen_k", 5), HKRT_INT("heads_q", hq),
                  HKRT_INT("heads_k", hk)};
  return abuse_pack(k, a, sizeof a / sizeof a[0]);
}

/* Attention with run-time window sizes (left, right). */
static hkrt_status abuse_attn_win(hkrt_kernel *k, long left, long right) {
  static unsigned short buf[64];
  hkrt_arg a[] = {HKRT_PTR("Q", buf), HKRT_PTR("K", buf), HKRT_PTR("V", buf), HKRT_PTR("O", buf),
                  HKRT_PTR("LSE", buf), HKRT_INT("q_stride_b", 0), HKRT_INT("q_stride_s", 64),
                  HKRT_INT("q_stride_h", 64), HKRT_INT("k_stride_b", 0), HKRT_INT("k_stride_s", 64),
                  HKRT_INT("k_stride_h", 64), HKRT_INT("v_stride_b", 0), HKRT_INT("v_stride_s", 64),
                  HKRT_INT("v_stride_h", 64), HKRT_INT("o_stride_b", 0), HKRT_INT("o_stride_s", 64),
                  HKRT_INT("o_stride_h", 64), HKRT_FLOAT("scale", 0.125), HKRT_INT("batch", 1),
                  HKRT_INT("seqlen_q", 5), HKRT_INT("seqlen_k", 5), HKRT_INT("heads_q", 2),
                  HKRT_INT("heads_k", 1), HKRT_INT("window_left", left), HKRT_INT("window_right", right)};
  return abuse_pack(k, a, sizeof a / sizeof a[0]);
}

/* Attention backward: attn_fwd's dimensions, five tensors' strides (dO's
   sequence stride do_ss). */
static hkrt_status abuse_attn_bwd(hkrt_kernel *k, long hq, long hk, long do_ss) {
  static unsigned short buf[64];
  static float lse[64];
  hkrt_arg a[] = {HKRT_PTR("Q", buf), HKRT_PTR("K", buf), HKRT_PTR("V", buf), HKRT_PTR("O", buf),
                  HKRT_PTR("dO", buf), HKRT_PTR("LSE", lse), HKRT_PTR("dQ", buf), HKRT_PTR("dK", buf),
                  HKRT_PTR("dV", buf), HKRT_INT("q_stride_b", 0), HKRT_INT("q_stride_s", 64),
                  HKRT_INT("q_stride_h", 64), HKRT_INT("k_stride_b", 0), HKRT_INT("k_stride_s", 64),
                  HKRT_INT("k_stride_h", 64), HKRT_INT("v_stride_b", 0), HKRT_INT("v_stride_s", 64),
                  HKRT_INT("v_stride_h", 64), HKRT_INT("o_stride_b", 0), HKRT_INT("o_stride_s", 64),
                  HKRT_INT("o_stride_h", 64), HKRT_INT("do_stride_b", 0), HKRT_INT("do_stride_s", do_ss),
                  HKRT_INT("do_stride_h", 64), HKRT_FLOAT("scale", 0.125), HKRT_INT("batch", 1),
                  HKRT_INT("seqlen_q", 5), HKRT_INT("seqlen_k", 5), HKRT_INT("heads_q", hq),
                  HKRT_INT("heads_k", hk)};
  return abuse_pack(k, a, sizeof a / sizeof a[0]);
}

static hkrt_status abuse_rope(hkrt_kernel *k, long head_dim, long pos_offset) {
  static unsigned short buf[64];
  static float tab[64];
  hkrt_arg a[] = {HKRT_PTR("q_in", buf), HKRT_PTR("k_in", buf), HKRT_PTR("q_out", buf), HKRT_PTR("k_out", buf),
                  HKRT_PTR("cos_table", tab), HKRT_PTR("sin_table", tab), HKRT_INT("q_in_stride_b", 0),
                  HKRT_INT("q_in_stride_s", 128), HKRT_INT("q_in_stride_h", 128), HKRT_INT("k_in_stride_b", 0),
                  HKRT_INT("k_in_stride_s", 128), HKRT_INT("k_in_stride_h", 128), HKRT_INT("q_out_stride_b", 0),
                  HKRT_INT("q_out_stride_s", 128), HKRT_INT("q_out_stride_h", 128), HKRT_INT("k_out_stride_b", 0),
                  HKRT_INT("k_out_stride_s", 128), HKRT_INT("k_out_stride_h", 128), HKRT_INT("pos_offset", pos_offset),
                  HKRT_INT("batch", 1), HKRT_INT("seq_len", 3), HKRT_INT("heads_q", 2), HKRT_INT("heads_k", 1),
                  HKRT_INT("head_dim", head_dim)};
  return abuse_pack(k, a, sizeof a / sizeof a[0]);
}

static hkrt_status abuse_gemm(hkrt_kernel *k, long m, long n, long kk) {
  static unsigned short buf[64];
  hkrt_arg a[] = {HKRT_PTR("A", buf), HKRT_PTR("B", buf), HKRT_PTR("C", buf), HKRT_INT("lda", kk),
                  HKRT_INT("ldb", kk), HKRT_INT("ldc", n), HKRT_INT("M", m), HKRT_INT("N", n), HKRT_INT("K", kk)};
  return abuse_pack(k, a, sizeof a / sizeof a[0]);
}

static void test_abuse(const char *dir) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = NULL;
  if (hkrt_catalog_open(d, dir, &c) != HKRT_OK) t_die("open %s: %s", dir, hkrt_error());
  hkrt_kernel *at = abuse_kernel(c, "ab_attn"), *ro = abuse_kernel(c, "ab_rope"), *ge = abuse_kernel(c, "ab_gemm");
  CHECK(abuse_attn(at, 12, 4, 1, 64) == HKRT_OK, "attention 12:4: %s", hkrt_error());
  CHECK_ERR(abuse_attn(at, 12, 0, 1, 64), HKRT_ERR_ARG, "heads_k >= 1 && heads_k <= 1024 does not hold: heads_k = 0");
  CHECK_ERR(abuse_attn(at, 8, 3, 1, 64), HKRT_ERR_ARG,
            "heads_q % heads_k == 0 does not hold: heads_q = 8, heads_k = 3 (heads_q must be a multiple of heads_k");
  CHECK_ERR(abuse_attn(at, 8, 16, 1, 64), HKRT_ERR_ARG, "heads_q = 8, heads_k = 16");
  CHECK_ERR(abuse_attn(at, 8, 8, -2, 64), HKRT_ERR_ARG, "batch >= 1 && batch <= 1048576 does not hold: batch = -2");
  CHECK_ERR(abuse_attn(at, 8, 8, 1, -64), HKRT_ERR_ARG, "q_stride_s = -64");
  hkrt_kernel *aw = abuse_kernel(c, "ab_attn_win");
  CHECK(abuse_attn_win(aw, 128, 0) == HKRT_OK, "attention window 128/0: %s", hkrt_error());
  CHECK(abuse_attn_win(aw, -1, -1) == HKRT_OK, "attention window -1/-1 (no edges): %s", hkrt_error());
  CHECK_ERR(abuse_attn_win(aw, -2, 0), HKRT_ERR_ARG,
            "window_left >= -1 && window_left <= 16777216 does not hold: window_left = -2");
  CHECK_ERR(abuse_attn_win(aw, 0, 16777217), HKRT_ERR_ARG, "window_right = 16777217");
  hkrt_kernel *ab = abuse_kernel(c, "ab_attn_bwd");
  CHECK(abuse_attn_bwd(ab, 12, 4, 64) == HKRT_OK, "attention backward 12:4: %s", hkrt_error());
  CHECK_ERR(abuse_attn_bwd(ab, 8, 3, 64), HKRT_ERR_ARG,
            "heads_q % heads_k == 0 does not hold: heads_q = 8, heads_k = 3 (heads_q must be a multiple of heads_k");
  CHECK_ERR(abuse_attn_bwd(ab, 8, 8, -64), HKRT_ERR_ARG, "do_stride_s = -64");
  CHECK(abuse_rope(ro, 128, 0) == HKRT_OK, "rope d128: %s", hkrt_error());
  CHECK_ERR(abuse_rope(ro, 600, 0), HKRT_ERR_ARG, "head_dim >= 2 && head_dim <= 512 does not hold: head_dim = 600");
  CHECK_ERR(abuse_rope(ro, 0, 0), HKRT_ERR_ARG, "head_dim = 0");
  CHECK_ERR(abuse_rope(ro, -64, 0), HKRT_ERR_ARG, "head_dim = -64");
  CHECK_ERR(abuse_rope(ro, 65, 0), HKRT_ERR_ARG, "head_dim % 2 == 0 does not hold: head_dim = 65");
  CHECK_ERR(abuse_rope(ro, 64, -1), HKRT_ERR_ARG, "pos_offset >= 0 does not hold: pos_offset = -1");
  CHECK(abuse_gemm(ge, 100, 77, 93) == HKRT_OK, "gemm: %s", hkrt_error());
  CHECK_ERR(abuse_gemm(ge, 64, 64, 2147483647L), HKRT_ERR_ARG, "K = 2147483647 (M, N and K at most 2^31 - 257");
  CHECK_ERR(abuse_gemm(ge, 0, 64, 64), HKRT_ERR_ARG, "M >= 1 does not hold: M = 0");
  /* sizes that would wrap: an allocation of SIZE_MAX, a copy whose length
     runs past the end of the address space */
  void *huge = NULL, *small = NULL;
  static char src[64];
  CHECK_ERR(hkrt_alloc(d, SIZE_MAX, &huge), HKRT_ERR_NOMEM, "cannot allocate");
  CHECK(hkrt_alloc(d, 64, &small) == HKRT_OK, "alloc 64: %s", hkrt_error());
  CHECK_ERR(hkrt_copy_to_device(d, (char *)small + 8, src, SIZE_MAX - 4), HKRT_ERR_ARG,
            "are not inside one hkrt_alloc block");
  CHECK_ERR(hkrt_copy_to_host(d, src, (char *)small + 8, 57), HKRT_ERR_ARG, "are not inside one hkrt_alloc block");
  CHECK(hkrt_copy_to_host(d, src, (char *)small + 8, 56) == HKRT_OK, "the last 56 bytes: %s", hkrt_error());
  hkrt_free(d, small);
  /* a grid the emulator would run for hours: refused at launch, saying why */
  static unsigned short gbuf[64];
  hkrt_arg big[] = {HKRT_PTR("A", gbuf), HKRT_PTR("B", gbuf), HKRT_PTR("C", gbuf), HKRT_INT("lda", 8),
                    HKRT_INT("ldb", 8), HKRT_INT("ldc", 65536), HKRT_INT("M", 131072), HKRT_INT("N", 65536),
                    HKRT_INT("K", 8)};
  CHECK_ERR(hkrt_kernel_launch(ge, NULL, big, sizeof big / sizeof big[0], NULL), HKRT_ERR_ARG,
            "a grid of 2097152 workgroups; the emulator runs at most 1048576 per launch");
  hkrt_catalog_close(c);
  hkrt_device_close(d);
}

/* Launches ab_gemm (a tiny valid problem) from dir: want "-" for success,
   else a text the loader's error must hold (a swapped, truncated or linked
   code object is never loaded). */
static void test_load(const char *dir, const char *want) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = NULL;
  if (hkrt_catalog_open(d, dir, &c) != HKRT_OK) t_die("open %s: %s", dir, hkrt_error());
  hkrt_kernel *k = abuse_kernel(c, "ab_gemm");
  void *A = NULL, *B = NULL, *C = NULL;
  if (hkrt_alloc(d, 4096, &A) || hkrt_alloc(d, 4096, &B) || hkrt_alloc(d, 4096, &C)) t_die("alloc: %s", hkrt_error());
  hkrt_arg a[] = {HKRT_PTR("A", A), HKRT_PTR("B", B), HKRT_PTR("C", C), HKRT_INT("lda", 8), HKRT_INT("ldb", 8),
                  HKRT_INT("ldc", 8), HKRT_INT("M", 8), HKRT_INT("N", 8), HKRT_INT("K", 8)};
  hkrt_status st = hkrt_kernel_launch(k, NULL, a, sizeof a / sizeof a[0], NULL);
  if (!strcmp(want, "-")) CHECK(st == HKRT_OK, "a verified object: %s", hkrt_error());
  else CHECK_ERR(st, HKRT_ERR_IO, want);
  hkrt_catalog_close(c);
  /* the pre-packed path (hkrt_kernel_function) checks the same, on a fresh catalogue */
  if (hkrt_catalog_open(d, dir, &c) != HKRT_OK) t_die("open %s: %s", dir, hkrt_error());
  hkrt_func *fn = NULL;
  st = hkrt_kernel_function(abuse_kernel(c, "ab_gemm"), &fn);
  if (!strcmp(want, "-")) CHECK(st == HKRT_OK && fn, "hkrt_kernel_function: %s", hkrt_error());
  else CHECK_ERR(st, HKRT_ERR_IO, want);
  hkrt_catalog_close(c);
  hkrt_device_close(d);
}

/* Several threads on one emulated device and one catalogue: allocations,
   copies, launches and frees interleave (the device serialises them); each
   thread's GEMM must still be right. */
typedef struct {
  hkrt_device *d;
  hkrt_kernel *k;
  unsigned seed;
  int bad;
} threads_job;

static void *threads_worker(void *arg) {
  threads_job *j = arg;
  enum { N = 24 };
  for (int round = 0; round < 8 && !j->bad; round++) {
    unsigned short ha[N * N], hb[N * N], hc[N * N];
    uint64_t r = j->seed * 977u + (unsigned)round;
    for (int i = 0; i < N * N; i++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      ha[i] = t_to_bf16((double)((r >> 33) % 5) - 2); /* sums stay under 256: exact in bf16 */
      hb[i] = t_to_bf16((double)((r >> 45) % 5) - 2);
    }
    void *A = NULL, *B = NULL, *C = NULL, *junk = NULL;
    if (hkrt_alloc(j->d, sizeof ha, &A) || hkrt_alloc(j->d, sizeof hb, &B) || hkrt_alloc(j->d, sizeof hc, &C) ||
        hkrt_alloc(j->d, 4096, &junk) || hkrt_copy_to_device(j->d, A, ha, sizeof ha) ||
        hkrt_copy_to_device(j->d, B, hb, sizeof hb)) {
      j->bad = 1;
      break;
    }
    hkrt_arg a[] = {HKRT_PTR("A", A), HKRT_PTR("B", B), HKRT_PTR("C", C), HKRT_INT("lda", N), HKRT_INT("ldb", N),
                    HKRT_INT("ldc", N), HKRT_INT("M", N), HKRT_INT("N", N), HKRT_INT("K", N)};
    hkrt_free(j->d, junk); /* a free in the middle of others' launches */
    if (hkrt_kernel_launch(j->k, NULL, a, sizeof a / sizeof a[0], NULL) ||
        hkrt_copy_to_host(j->d, hc, C, sizeof hc)) {
      j->bad = 1;
      break;
    }
    for (int i = 0; i < N && !j->bad; i++)
      for (int n = 0; n < N; n++) { /* small integers: the bf16 products and sums are exact */
        double s = 0;
        for (int q = 0; q < N; q++) s += t_from_bf16(ha[i * N + q]) * t_from_bf16(hb[n * N + q]);
        if (t_from_bf16(hc[i * N + n]) != s) j->bad = 2;
      }
    hkrt_free(j->d, A);
    hkrt_free(j->d, B);
    hkrt_free(j->d, C);
  }
  return NULL;
}

static void test_threads(const char *dir) {
  hkrt_device *d = emu_device();
  hkrt_catalog *c = NULL;
  if (hkrt_catalog_open(d, dir, &c) != HKRT_OK) t_die("open %s: %s", dir, hkrt_error());
  hkrt_kernel *k = abuse_kernel(c, "ab_gemm");
  enum { T = 6 };
  pthread_t th[T];
  threads_job jobs[T];
  for (int i = 0; i < T; i++) {
    jobs[i] = (threads_job){d, k, (unsigned)i + 1, 0};
    if (pthread_create(&th[i], NULL, threads_worker, &jobs[i])) t_die("pthread_create");
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK(!jobs[i].bad, "thread %d: %s", i, jobs[i].bad == 2 ? "a wrong product" : hkrt_error());
  }
  hkrt_catalog_close(c);
  hkrt_device_close(d);
}

int main(int argc, char **argv) {
  t_prog = "rt_catalog";
  T_DIE_NOTE(hkrt_error);
  if (argc < 2) t_die("usage: rt_catalog manifest|select|pack|args|tmap|driver cuda|hip|e2e DIR");
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/rt_catalog.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmpdir)) t_die("mkdtemp");
  int rc = -1;
  if (!strcmp(argv[1], "manifest")) test_manifest();
  else if (!strcmp(argv[1], "select")) test_select();
  else if (!strcmp(argv[1], "pack")) test_pack();
  else if (!strcmp(argv[1], "args")) test_args();
  else if (!strcmp(argv[1], "tmap")) test_tmap();
  else if (!strcmp(argv[1], "driver") && argc == 3) rc = test_driver(argv[2]);
  else if (!strcmp(argv[1], "e2e") && argc == 3) test_e2e(argv[2]);
  else if (!strcmp(argv[1], "abuse") && argc == 3) test_abuse(argv[2]);
  else if (!strcmp(argv[1], "load") && argc == 4) test_load(argv[2], argv[3]);
  else if (!strcmp(argv[1], "threads") && argc == 3) test_threads(argv[2]);
  else t_die("unknown test '%s'", argv[1]);
  rm_tree(tmpdir);
  if (rc == 77) return 77;
  printf("%s: %d checks, %d failed\n", argv[1], checks, failures);
  return failures ? 1 : 0;
}
