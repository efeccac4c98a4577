/* compile.c: comgr in process, clang as a process, and the cache. */
#define _GNU_SOURCE
#include "compile.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comgr.h"
#include "sha256.h"
#include "target.h"
#include "util.h"


/* -O3, C++17, no GPU headers: generated sources carry their own prelude. */
static const char *const cc_common_flags[] = {"-O3", "-std=c++17", "-nogpuinc"};

const char *cc_flags_text(void) {
  /* every compiler's flags, the emulator's host build included: a change to
     any of them must miss the cache */
  return "-O3 -std=c++17 -nogpuinc -fuse-cuid=none | nvcc -x cu --cubin -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v"
         " | host -x c++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -DHK_EMULATE -lm";
}

/* Runs argv, capturing stdout+stderr into out (may be NULL). */
int cc_run_argv(char *const argv[], hk_buf *out) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return -1;
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int fds[3] = {null, p[1], p[1]};
  pid_t pid;
  int rc = null < 0 ? errno : fs_spawn(argv, fds, &pid);
  if (null >= 0) close(null);
  close(p[1]);
  if (rc) {
    close(p[0]);
    errno = rc;
    return -1;
  }
  char tmp[8192];
  ssize_t r;
  while ((r = read(p[0], tmp, sizeof tmp)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (out) buf_add(out, tmp, (size_t)r);
  }
  close(p[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* "clang version 22.1.2 (...)" -> identity and major version. */
static int cc_probe_clang(const char *path, char *identity, size_t n) {
  char *argv[] = {(char *)path, "--version", NULL};
  hk_buf out;
  buf_init(&out);
  int rc = cc_run_argv(argv, &out);
  int major = -1;
  if (rc == 0) {
    const char *v = strstr(out.s, "clang version ");
    if (v) {
      major = atoi(v + 14);
      size_t len = strcspn(v, "\n");
      snprintf(identity, n, "%.*s (%s)", (int)len, v, path);
    }
  }
  buf_free(&out);
  return major;
}

static pthread_mutex_t cc_lock = PTHREAD_MUTEX_INITIALIZER;
static char cc_clang_path[512], cc_clang_id[512];
static int cc_clang_probed;
static char cc_nvcc_path[512], cc_nvcc_id[512];
static int cc_nvcc_probed;

/* nvcc: $HKGEN_NVCC, /usr/local/cuda/bin/nvcc, then PATH. Its identity is
   the "Build cuda_..." line of --version. */
static int cc_find_nvcc(void) {
  if (cc_nvcc_probed) return cc_nvcc_path[0] ? 0 : -1;
  cc_nvcc_probed = 1;
  const char *env = getenv("HKGEN_NVCC");
  const char *cands[] = {env && *env ? env : NULL, "/usr/local/cuda/bin/nvcc", "nvcc"};
  for (size_t i = 0; i < 3; i++) {
    if (!cands[i] || (cands[i][0] == '/' && !fs_exists(cands[i]))) continue;
    char *argv[] = {(char *)cands[i], "--version", NULL};
    hk_buf out;
    buf_init(&out);
    int ok = cc_run_argv(argv, &out) == 0;
    const char *b = ok ? strstr(out.s, "Build ") : NULL;
    if (b) {
      snprintf(cc_nvcc_path, sizeof cc_nvcc_path, "%s", cands[i]);
      snprintf(cc_nvcc_id, sizeof cc_nvcc_id, "nvcc %.*s (%s)", (int)strcspn(b + 6, "\n"), b + 6,
               cands[i]);
    }
    buf_free(&out);
    if (b) return 0;
    if (env && i == 0) return -1;
  }
  return -1;
}

/* $HKGEN_CLANG when set and not empty: the user's explicit choice. */
static const char *cc_env_clang(void) {
  const char *env = getenv("HKGEN_CLANG");
  return env && *env ? env : NULL;
}

static int cc_find_clang(void) {
  if (cc_clang_probed) return cc_clang_path[0] ? 0 : -1;
  cc_clang_probed = 1;
  const char *env = cc_env_clang();
  const char *cands[] = {env, "/opt/rocm/llvm/bin/clang", "clang-22",
                         "clang-21", "clang-20", "clang"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    if (!cands[i]) continue;
    if (cands[i][0] == '/' && !fs_exists(cands[i]) && !(env && i == 0)) continue;
    char id[512];
    int major = cc_probe_clang(cands[i], id, sizeof id);
    if (major >= 20) {
      snprintf(cc_clang_path, sizeof cc_clang_path, "%s", cands[i]);
      snprintf(cc_clang_id, sizeof cc_clang_id, "%s", id);
      return 0;
    }
    if (env && i == 0) return -1; /* an explicit choice that does not work is an error */
  }
  return -1;
}

const char *cc_clang(void) {
  pthread_mutex_lock(&cc_lock);
  int ok = cc_find_clang() == 0;
  pthread_mutex_unlock(&cc_lock);
  return ok ? cc_clang_path : NULL;
}

/* The emulator's headers (hk_emu.h): runtime/include in a build tree,
   share/hkgen/include in an installed prefix. NULL when neither holds them. */
const char *cc_runtime_include(void) {
  static char dir[4096];
  static const char *const rels[] = {"../runtime/include", "../../runtime/include", "../share/hkgen/include",
                                     NULL};
  pthread_mutex_lock(&cc_lock);
  const char *r = dir[0] ? dir : fs_data_dir("HKGEN_RUNTIME_INCLUDE", "hk_emu.h", rels, dir, sizeof dir);
  pthread_mutex_unlock(&cc_lock);
  return r;
}

/* The emulator headers' digest: a generated source only #includes them, so
   a change to hk_emu.h must change the cache key some other way. */
static void cc_emu_headers_digest(char hex[17]) {
  static const char *const names[] = {"hk_emu.h", "hk_emu_abi.h"};
  sha256_ctx s;
  unsigned char d[32];
  const char *dir = cc_runtime_include(); /* NULL: the compile fails, saying so */
  sha256_init(&s);
  for (int i = 0; i < 2; i++) {
    char *path = xasprintf("%s/%s", dir ? dir : "", names[i]), *text = NULL;
    size_t len = 0;
    if (dir && fs_read_file(path, 1u << 24, &text, &len) == 0) sha256_update(&s, text, len);
    else sha256_update(&s, "missing", 8);
    free(text);
    free(path);
  }
  sha256_final(&s, d);
  for (int i = 0; i < 8; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int cc_resolve_host(cc_compiler *cc, char *why, size_t n) {
  memset(cc, 0, sizeof *cc);
  pthread_mutex_lock(&cc_lock);
  int have = cc_find_clang() == 0;
  pthread_mutex_unlock(&cc_lock);
  if (!have) {
    snprintf(why, n, "no clang >= 20 for emulator builds (install clang-22, or set HKGEN_CLANG)");
    return -1;
  }
  cc->kind = CC_HOST;
  snprintf(cc->path, sizeof cc->path, "%s", cc_clang_path);
  char hex[17];
  cc_emu_headers_digest(hex);
  snprintf(cc->identity, sizeof cc->identity, "host %.440s, hk_emu.h %s", cc_clang_id, hex);
  return 0;
}

/* A private folder holding one compiler run's input and output. */
typedef struct {
  char *dir, *in, *out;
} cc_tmp;

static int cc_tmp_open(cc_tmp *t, const char *in_name, const char *out_name, char **log) {
  memset(t, 0, sizeof *t);
  t->dir = fs_tmp_template("hkgen");
  if (!mkdtemp(t->dir)) {
    *log = xasprintf("cannot make a temporary folder: %s", strerror(errno));
    free(t->dir);
    t->dir = NULL;
    return -1;
  }
  t->in = fs_join(t->dir, in_name);
  t->out = fs_join(t->dir, out_name);
  return 0;
}

static void cc_tmp_close(cc_tmp *t) {
  unlink(t->in);
  unlink(t->out);
  rmdir(t->dir);
  free(t->in);
  free(t->out);
  free(t->dir);
}

/* Writes src to t->in, runs argv and reads t->out; the compiler's messages
   go to msg. Returns 0 when the compiler succeeded and its output was read. */
static int cc_tmp_run(const cc_tmp *t, char *const argv[], const char *src, size_t len, char **obj,
                      size_t *objlen, hk_buf *msg) {
  if (fs_write_atomic(t->in, src, len) < 0) {
    buf_printf(msg, "cannot write %s: %s", t->in, strerror(errno));
    return -1;
  }
  size_t before = msg->len;
  int st = cc_run_argv(argv, msg);
  if (st < 0) buf_printf(msg, "cannot run %s: %s", argv[0], strerror(errno));
  else if (st > 128) /* cc_run_argv: 128 + the signal that ended it */
    buf_printf(msg, "%s%s was killed by signal %d (%s)", msg->len ? "\n" : "", argv[0], st - 128, strsignal(st - 128));
  else if (st > 0 && msg->len == before)
    buf_printf(msg, "%s exited with status %d and printed nothing", argv[0], st);
  return st == 0 && fs_read_file(t->out, 1u << 30, obj, objlen) == 0 ? 0 : -1;
}

/* The emulated ISA of a target (HK_EMU_ARCH: 2, 3 or 4 for CDNA2/3/4), 0
   for one the emulator does not model. */
static int cc_emu_arch(const char *target) {
  const tgt_info *t = tgt_find(target);
  return t ? t->emu_arch : 0;
}

static int cc_compile_host(const cc_compiler *cc, const char *target, const char *src, size_t len,
                           char **obj, size_t *objlen, char **log) {
  if (!cc_emu_arch(target)) {
    *log = xasprintf("the emulator runs AMD targets only, not %s", target);
    return -1;
  }
  if (!cc_runtime_include()) {
    *log = xasprintf("cannot find the emulator's headers (hk_emu.h) in ../runtime/include or "
                     "../share/hkgen/include next to the hkgen binary; set HKGEN_RUNTIME_INCLUDE");
    return -1;
  }
  cc_tmp t;
  if (cc_tmp_open(&t, "kernel.hip", "kernel.so", log) < 0) return -1;
  char *arch = xasprintf("-DHK_EMU_ARCH=%d", cc_emu_arch(target));
  char *inc = xasprintf("-I%s", cc_runtime_include());
  char *argv[] = {(char *)cc->path, "-x", "c++", "-std=c++17", "-O2", "-fPIC", "-shared",
                  "-fvisibility=hidden", "-DHK_EMULATE", arch, inc, t.in, "-o", t.out,
                  "-lm", /* the module names its libm need: a program linking libhkrt.a alone loads it */
                  NULL};
  hk_buf msg;
  buf_init(&msg);
  int rc = cc_tmp_run(&t, argv, src, len, obj, objlen, &msg);
  *log = rc ? buf_steal(&msg) : NULL;
  buf_free(&msg);
  free(arch);
  free(inc);
  cc_tmp_close(&t);
  return rc;
}

int cc_resolve(const char *target, cc_compiler *cc, char *why, size_t n) {
  const tgt_info *tg = tgt_find(target);
  if (tg && !strcmp(tg->compilers, "nvcc")) {
    memset(cc, 0, sizeof *cc);
    pthread_mutex_lock(&cc_lock);
    int have = cc_find_nvcc() == 0;
    pthread_mutex_unlock(&cc_lock);
    if (!have) {
      snprintf(why, n, "no compiler for %s: nvcc not found (install the CUDA toolkit, or set HKGEN_NVCC)", target);
      return -1;
    }
    cc->kind = CC_NVCC;
    snprintf(cc->path, sizeof cc->path, "%s", cc_nvcc_path);
    snprintf(cc->identity, sizeof cc->identity, "%s", cc_nvcc_id);
    return 0;
  }
  const char *force = getenv("HKGEN_COMPILER");
  int allow_comgr = !force || !*force || !strcmp(force, "comgr");
  int allow_clang = !force || !*force || !strcmp(force, "clang");
  memset(cc, 0, sizeof *cc);
  if (allow_comgr && cg_has_isa(target)) {
    cc->kind = CC_COMGR;
    snprintf(cc->identity, sizeof cc->identity, "%s", cg_identity());
    snprintf(cc->path, sizeof cc->path, "%s", cg_identity());
    return 0;
  }
  pthread_mutex_lock(&cc_lock);
  int have = allow_clang && cc_find_clang() == 0;
  pthread_mutex_unlock(&cc_lock);
  if (have) {
    cc->kind = CC_CLANG;
    snprintf(cc->path, sizeof cc->path, "%s", cc_clang_path);
    snprintf(cc->identity, sizeof cc->identity, "%s", cc_clang_id);
    return 0;
  }
  const char *env = cc_env_clang();
  if (allow_clang && env)
    snprintf(why, n, "no compiler for %s: HKGEN_CLANG=%s does not run as clang >= 20 (unset it to search PATH)",
             target, env);
  else
    snprintf(why, n,
             "no compiler for %s: %s does not list it and no clang >= 20 was found "
             "(install clang-22 and lld-22, or set HKGEN_CLANG; on ROCm, /opt/rocm/llvm/bin/clang)",
             target, cg_identity() ? cg_identity() : "comgr (not found)");
  return -1;
}

static int cc_compile_clang(const cc_compiler *cc, const char *target, const char *src,
                            size_t len, char **obj, size_t *objlen, char **log) {
  cc_tmp t;
  if (cc_tmp_open(&t, "kernel.hip", "kernel.hsaco", log) < 0) return -1;
  char *arch = xasprintf("--offload-arch=%s", target);
  /* -fuse-cuid=none: no symbol named after the (random) temporary path, so
     objects are byte-identical from build to build */
  char *argv[] = {(char *)cc->path, "-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output",
                  arch, "-nogpulib", "-fuse-cuid=none", (char *)cc_common_flags[0],
                  (char *)cc_common_flags[1], (char *)cc_common_flags[2], t.in, "-o", t.out, NULL};
  hk_buf msg;
  buf_init(&msg);
  int rc = cc_tmp_run(&t, argv, src, len, obj, objlen, &msg);
  *log = rc ? buf_steal(&msg) : NULL;
  buf_free(&msg);
  free(arch);
  cc_tmp_close(&t);
  return rc;
}

/* nvcc for sm_90a: the cubin, and ptxas -v's report as meta. */
static int cc_compile_nvcc(const cc_compiler *cc, const char *target, const char *src, size_t len,
                           char **obj, size_t *objlen, char **meta, char **log) {
  cc_tmp t;
  if (cc_tmp_open(&t, "kernel.cu", "kernel.cubin", log) < 0) return -1;
  char *gencode = xasprintf("-gencode=arch=compute_%s,code=%s", target + 3, target); /* sm_90a */
  char *argv[] = {(char *)cc->path, "-x", "cu", "--cubin", gencode, "-O3", "-std=c++17",
                  "-Xptxas", "-v", t.in, "-o", t.out, NULL};
  hk_buf msg;
  buf_init(&msg);
  int rc = cc_tmp_run(&t, argv, src, len, obj, objlen, &msg);
  if (rc == 0) *meta = buf_steal(&msg); /* ptxas -v: registers, shared memory, spills */
  else *log = buf_steal(&msg);
  buf_free(&msg);
  free(gencode);
  cc_tmp_close(&t);
  return rc;
}

int cc_compile(const cc_compiler *cc, const char *target, const char *src, size_t len,
               char **obj, size_t *objlen, char **meta, char **log) {
  *obj = NULL;
  *log = NULL;
  *meta = NULL;
  if (cc->kind == CC_NVCC) return cc_compile_nvcc(cc, target, src, len, obj, objlen, meta, log);
  if (cc->kind == CC_HOST) return cc_compile_host(cc, target, src, len, obj, objlen, log);
  if (cc->kind == CC_COMGR)
    return cg_compile(target, src, len, cc_common_flags, 3, obj, objlen, log);
  if (cc->kind == CC_CLANG) return cc_compile_clang(cc, target, src, len, obj, objlen, log);
  *log = xstrdup("no compiler");
  return -1;
}

void cc_cache_open(cc_cache *c, int enabled) {
  memset(c, 0, sizeof *c);
  const char *d = getenv("HKGEN_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  if (d && *d) snprintf(c->dir, sizeof c->dir, "%s", d);
  else if (x && *x) snprintf(c->dir, sizeof c->dir, "%s/hkgen", x);
  else if (h && *h) snprintf(c->dir, sizeof c->dir, "%s/.cache/hkgen", h);
  else enabled = 0;
  c->enabled = enabled && fs_mkdirs(c->dir) == 0;
}

void cc_cache_key(const cc_compiler *cc, const char *target, const char *src, size_t len,
                  char key[65]) {
  sha256_ctx s;
  unsigned char d[32];
  sha256_init(&s);
  const char *parts[] = {"hkgen-cache-1", cc->identity, target, cc_flags_text()};
  for (int i = 0; i < 4; i++) sha256_update(&s, parts[i], strlen(parts[i]) + 1);
  sha256_update(&s, src, len);
  sha256_final(&s, d);
  sha256_to_hex(d, key);
}

/* A text entry is <key><ext> and <key><ext>.sum (its sha256), checked like
   an object's. */
int cc_cache_get_text(const cc_cache *c, const char *key, const char *ext, char **text, size_t *len) {
  if (!c->enabled) return -1;
  char *p = xasprintf("%s/%s%s", c->dir, key, ext), *sp = xasprintf("%s/%s%s.sum", c->dir, key, ext), *sum = NULL;
  size_t slen;
  char hex[65];
  int rc = fs_read_file(sp, 4096, &sum, &slen);
  if (rc == 0) rc = fs_read_file(p, 1u << 26, text, len);
  if (rc == 0) {
    sha256_hex(*text, *len, hex);
    if (slen != 64 || memcmp(hex, sum, 64)) {
      diag_warn(p, 0, 0, "cache entry does not match its checksum (changed or truncated): generating again");
      free(*text);
      *text = NULL;
      rc = -1;
    }
  }
  free(sum);
  free(sp);
  free(p);
  return rc;
}

void cc_cache_put_text(const cc_cache *c, const char *key, const char *ext, const char *text, size_t len) {
  if (!c->enabled) return;
  char *p = xasprintf("%s/%s%s", c->dir, key, ext), *sp = xasprintf("%s/%s%s.sum", c->dir, key, ext);
  char hex[65];
  sha256_hex(text, len, hex);
  if (fs_write_file(p, text, len, 0) == 0) fs_write_file(sp, hex, 64, 0);
  free(sp);
  free(p);
}

int cc_cache_has(const cc_cache *c, const char *key) {
  if (!c->enabled) return 0;
  char *p = xasprintf("%s/%s.sum", c->dir, key);
  int have = fs_exists(p);
  free(p);
  return have;
}

/* An entry is <key>.obj plus, when the compiler reported resources apart
   from the object, <key>.meta, and last <key>.sum: the sha256 of both. An
   entry whose files do not match its sum (changed, truncated, or written by
   an older hkgen) is a miss, and compiling again replaces it. The sum
   catches corruption; it cannot make a cache that others may write
   trustworthy (docs/SECURITY.md). */
static char *cc_cache_sum(const char *obj, size_t len, const char *meta) {
  char a[65], b[65];
  sha256_hex(obj, len, a);
  sha256_hex(meta ? meta : "", meta ? strlen(meta) : 0, b);
  return xasprintf("hkgen-cache-sum-1 %s %s %s\n", a, meta ? b : "-", meta ? "meta" : "no-meta");
}

int cc_cache_get(const cc_cache *c, const char *key, char **obj, size_t *len, char **meta) {
  *meta = NULL;
  *obj = NULL;
  if (!c->enabled) return -1;
  char *p = xasprintf("%s/%s.obj", c->dir, key), *m = xasprintf("%s/%s.meta", c->dir, key);
  char *sp = xasprintf("%s/%s.sum", c->dir, key), *sum = NULL;
  size_t mlen, slen;
  int rc = fs_read_file(sp, 4096, &sum, &slen);
  if (rc == 0) rc = fs_read_file(p, 1u << 30, obj, len);
  /* the sum says whether the entry has a meta file (build.c keeps other
     figures in a text entry of the same name when it has none) */
  int has_meta = rc == 0 && slen > 6 && !strcmp(sum + slen - 6, " meta\n");
  if (rc == 0 && has_meta && fs_read_file(m, 1u << 20, meta, &mlen) < 0) rc = -1;
  if (rc == 0) {
    char *want = cc_cache_sum(*obj, *len, *meta);
    if (strcmp(want, sum)) {
      diag_warn(p, 0, 0, "cache entry does not match its checksum (changed or truncated): compiling again");
      rc = -1;
    }
    free(want);
  }
  if (rc == 0 && !has_meta && cc_cache_get_text(c, key, ".meta", meta, &mlen) < 0) *meta = NULL;
  if (rc < 0) {
    free(*obj);
    free(*meta);
    *obj = *meta = NULL;
  }
  free(sum);
  free(sp);
  free(p);
  free(m);
  return rc;
}

void cc_cache_put(const cc_cache *c, const char *key, const char *obj, size_t len,
                  const char *meta) {
  if (!c->enabled) return;
  char *p = xasprintf("%s/%s.obj", c->dir, key), *m = xasprintf("%s/%s.meta", c->dir, key);
  char *sp = xasprintf("%s/%s.sum", c->dir, key), *sum = cc_cache_sum(obj, len, meta);
  /* a failed cache write only costs a recompile; the sum goes last */
  if ((!meta || fs_write_file(m, meta, strlen(meta), 0) == 0) && fs_write_file(p, obj, len, 0) == 0)
    fs_write_file(sp, sum, strlen(sum), 0);
  free(sum);
  free(sp);
  free(p);
  free(m);
}

/* Section name of header sh, or NULL when it lies outside the object. */
static const char *cc_elf_name(const char *o, size_t len, const Elf64_Shdr *strs, const Elf64_Shdr *sh) {
  if (strs->sh_offset > len || strs->sh_size > len - strs->sh_offset || sh->sh_name >= strs->sh_size)
    return NULL;
  const char *n = o + strs->sh_offset + sh->sh_name;
  return memchr(n, 0, strs->sh_size - sh->sh_name) ? n : NULL;
}

/* The span of the declared parameters among .nv.info records, each a
   format byte, an attribute byte, then a 16-bit value (EIFMT_HVAL, 3) or the
   size of a payload that follows (EIFMT_SVAL, 4). EIATTR_KPARAM_INFO (0x17)
   describes one parameter: its offset (16 bits at 6) and size (bits 18..31
   of the word at 8). The span starts at the first parameter: ptxas aligns it
   in the constant bank (a 64-byte-aligned struct sits at 48), and libhkrt
   passes it by pointer, so that offset is not ours. */
static int cc_nvinfo_param_size(const unsigned char *p, size_t n) {
  int lo = -1, hi = -1;
  for (size_t i = 0; i + 4 <= n;) {
    unsigned fmt = p[i], attr = p[i + 1], v = p[i + 2] | (unsigned)p[i + 3] << 8;
    const unsigned char *q = p + i + 4;
    if (fmt == 4 && attr == 0x17 && v >= 12 && i + 4 + v <= n) {
      int off = q[6] | q[7] << 8;
      unsigned word = q[8] | (unsigned)q[9] << 8 | (unsigned)q[10] << 16 | (unsigned)q[11] << 24;
      if (lo < 0 || off < lo) lo = off;
      if (off + (int)(word >> 18) > hi) hi = off + (int)(word >> 18);
    }
    i += 4 + (fmt == 4 ? v : 0);
  }
  return lo < 0 ? -1 : hi - lo;
}

int cc_cubin_param_size(const void *obj, size_t len, const char *name) {
  const char *o = obj;
  const Elf64_Ehdr *eh = obj;
  if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
      (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff || eh->e_shstrndx >= eh->e_shnum)
    return -1;
  Elf64_Shdr sh[1], strs[1];
  memcpy(strs, o + eh->e_shoff + (size_t)eh->e_shstrndx * sizeof *sh, sizeof *strs);
  char want[200];
  snprintf(want, sizeof want, ".nv.info.%s", name);
  for (int i = 0; i < eh->e_shnum; i++) {
    memcpy(sh, o + eh->e_shoff + (size_t)i * sizeof *sh, sizeof *sh);
    const char *n = cc_elf_name(o, len, strs, sh);
    if (!n || strcmp(n, want) || sh->sh_offset > len || sh->sh_size > len - sh->sh_offset) continue;
    return cc_nvinfo_param_size((const unsigned char *)o + sh->sh_offset, sh->sh_size);
  }
  return -1;
}
