/* comgr.c: the comgr entry points hkgen uses, resolved with dlopen. */
#define _GNU_SOURCE
#include "comgr.h"

#include <amd_comgr.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CG_FUNCS(X)                                                                              \
  X(amd_comgr_get_version) X(amd_comgr_get_isa_count) X(amd_comgr_get_isa_name)                \
  X(amd_comgr_create_data) X(amd_comgr_release_data) X(amd_comgr_set_data)                       \
  X(amd_comgr_set_data_name) X(amd_comgr_get_data) X(amd_comgr_create_data_set)                  \
  X(amd_comgr_destroy_data_set) X(amd_comgr_data_set_add) X(amd_comgr_action_data_count)        \
  X(amd_comgr_action_data_get_data) X(amd_comgr_create_action_info)                              \
  X(amd_comgr_destroy_action_info) X(amd_comgr_action_info_set_isa_name)                         \
  X(amd_comgr_action_info_set_language) X(amd_comgr_action_info_set_option_list)                 \
  X(amd_comgr_action_info_set_logging) X(amd_comgr_do_action) X(amd_comgr_get_data_metadata)    \
  X(amd_comgr_destroy_metadata) X(amd_comgr_get_metadata_kind) X(amd_comgr_get_metadata_string) \
  X(amd_comgr_metadata_lookup) X(amd_comgr_get_metadata_list_size)                               \
  X(amd_comgr_index_list_metadata)

static struct {
#define CG_FIELD(f) __typeof__(&f) f;
  CG_FUNCS(CG_FIELD)
#undef CG_FIELD
  int ok;
  char identity[512];
} cg;

static pthread_once_t cg_once = PTHREAD_ONCE_INIT;

static int cg_try(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
#define CG_SYM(f)                       \
  *(void **)&cg.f = dlsym(h, #f);       \
  if (!cg.f) {                          \
    dlclose(h);                         \
    return -1;                          \
  }
  CG_FUNCS(CG_SYM)
#undef CG_SYM
  size_t major = 0, minor = 0;
  cg.amd_comgr_get_version(&major, &minor);
  if (major < 2) { /* the 1.x API lacks the ISA queries we rely on */
    dlclose(h);
    return -1;
  }
  snprintf(cg.identity, sizeof cg.identity, "comgr %zu.%zu (%s)", major, minor, path);
  cg.ok = 1;
  return 0;
}

/* $HKGEN_COMGR, then ROCm's (newest first), then the system's. */
static void cg_load_once(void) {
  const char *env = getenv("HKGEN_COMGR");
  if (env && *env) {
    cg_try(env);
    return;
  }
  static const char *const paths[] = {
      "/opt/rocm/lib/libamd_comgr.so.3", "/opt/rocm/lib/libamd_comgr.so.2",
      "libamd_comgr.so.3", "libamd_comgr.so.2", NULL};
  for (int i = 0; paths[i]; i++)
    if (cg_try(paths[i]) == 0) return;
}

int cg_load(void) {
  pthread_once(&cg_once, cg_load_once);
  return cg.ok ? 0 : -1;
}

const char *cg_identity(void) { return cg_load() == 0 ? cg.identity : NULL; }

int cg_has_isa(const char *target) {
  if (cg_load() < 0) return 0;
  size_t n = 0;
  if (cg.amd_comgr_get_isa_count(&n)) return 0;
  char want[64];
  snprintf(want, sizeof want, "amdgcn-amd-amdhsa--%s", target);
  for (size_t i = 0; i < n; i++) {
    const char *name = NULL;
    if (cg.amd_comgr_get_isa_name(i, &name) == AMD_COMGR_STATUS_SUCCESS && name &&
        strcmp(name, want) == 0)
      return 1;
  }
  return 0;
}

static char *cg_data_bytes(amd_comgr_data_t d, size_t *len) {
  size_t n = 0;
  if (cg.amd_comgr_get_data(d, &n, NULL)) return NULL;
  char *p = xmalloc(n + 1);
  if (cg.amd_comgr_get_data(d, &n, p)) {
    free(p);
    return NULL;
  }
  p[n] = 0;
  *len = n;
  return p;
}

/* Concatenated logs of a result set, for error messages. */
static char *cg_logs(amd_comgr_data_set_t set) {
  size_t count = 0;
  hk_buf b;
  buf_init(&b);
  if (cg.amd_comgr_action_data_count(set, AMD_COMGR_DATA_KIND_LOG, &count) == 0)
    for (size_t i = 0; i < count; i++) {
      amd_comgr_data_t d;
      if (cg.amd_comgr_action_data_get_data(set, AMD_COMGR_DATA_KIND_LOG, i, &d)) continue;
      size_t n;
      char *s = cg_data_bytes(d, &n);
      if (s) buf_add(&b, s, n);
      free(s);
      cg.amd_comgr_release_data(d);
    }
  return buf_steal(&b);
}

/* One comgr action from set `in` to a fresh set `*out`. */
static int cg_step(amd_comgr_action_kind_t kind, amd_comgr_action_info_t info,
                   amd_comgr_data_set_t in, amd_comgr_data_set_t *out, char **log) {
  if (cg.amd_comgr_create_data_set(out)) return -1;
  amd_comgr_status_t st = cg.amd_comgr_do_action(kind, info, in, *out);
  if (st != AMD_COMGR_STATUS_SUCCESS) {
    *log = cg_logs(*out);
    return -1;
  }
  return 0;
}

static int cg_compile_now(const char *target, const char *src, size_t srclen, const char *const *opts,
                          size_t nopts, char **obj, size_t *objlen, char **log);

/* comgr (Debian's 5.2.3) runs clang and lld in process on LLVM's global
   option and target registries, and two actions at once have corrupted
   them: "Cannot choose between targets \"amdgcn\" and \"amdgcn\"" and
   "Option 'h' registered more than once", both seen in CI. One action runs
   at a time; the targets clang-22 serves still compile in parallel. */
static pthread_mutex_t cg_action_lock = PTHREAD_MUTEX_INITIALIZER;

int cg_compile(const char *target, const char *src, size_t srclen, const char *const *opts,
               size_t nopts, char **obj, size_t *objlen, char **log) {
  pthread_mutex_lock(&cg_action_lock);
  int rc = cg_compile_now(target, src, srclen, opts, nopts, obj, objlen, log);
  pthread_mutex_unlock(&cg_action_lock);
  return rc;
}

static int cg_compile_now(const char *target, const char *src, size_t srclen, const char *const *opts,
                          size_t nopts, char **obj, size_t *objlen, char **log) {
  *obj = NULL;
  *log = NULL;
  if (cg_load() < 0) return -1;
  amd_comgr_data_set_t s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  amd_comgr_action_info_t info;
  amd_comgr_data_t d;
  int rc = -1;
  char isa[64];
  snprintf(isa, sizeof isa, "amdgcn-amd-amdhsa--%s", target);
  if (cg.amd_comgr_create_action_info(&info)) return -1;
  cg.amd_comgr_action_info_set_isa_name(info, isa);
  cg.amd_comgr_action_info_set_language(info, AMD_COMGR_LANGUAGE_HIP);
  cg.amd_comgr_action_info_set_option_list(info, (const char **)opts, nopts);
  cg.amd_comgr_action_info_set_logging(info, 1);
  cg.amd_comgr_create_data_set(&s0);
  cg.amd_comgr_create_data(AMD_COMGR_DATA_KIND_SOURCE, &d);
  cg.amd_comgr_set_data(d, srclen, src);
  cg.amd_comgr_set_data_name(d, "kernel.hip");
  cg.amd_comgr_data_set_add(s0, d);
  cg.amd_comgr_release_data(d);
  if (cg_step(AMD_COMGR_ACTION_COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC, info, s0, &s1, log)) goto out;
  if (cg_step(AMD_COMGR_ACTION_CODEGEN_BC_TO_RELOCATABLE, info, s1, &s2, log)) goto out;
  if (cg_step(AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE, info, s2, &s3, log)) goto out;
  if (cg.amd_comgr_action_data_get_data(s3, AMD_COMGR_DATA_KIND_EXECUTABLE, 0, &d)) goto out;
  *obj = cg_data_bytes(d, objlen);
  cg.amd_comgr_release_data(d);
  rc = *obj ? 0 : -1;
out:
  if (s0.handle) cg.amd_comgr_destroy_data_set(s0);
  if (s1.handle) cg.amd_comgr_destroy_data_set(s1);
  if (s2.handle) cg.amd_comgr_destroy_data_set(s2);
  if (s3.handle) cg.amd_comgr_destroy_data_set(s3);
  cg.amd_comgr_destroy_action_info(info);
  return rc;
}

/* String value of key in map node (numbers are strings in comgr's view). */
static int cg_meta_str(amd_comgr_metadata_node_t map, const char *key, char *out, size_t n) {
  amd_comgr_metadata_node_t v;
  if (cg.amd_comgr_metadata_lookup(map, key, &v)) return -1;
  size_t size = 0;
  int rc = -1;
  if (!cg.amd_comgr_get_metadata_string(v, &size, NULL) && size <= n &&
      !cg.amd_comgr_get_metadata_string(v, &size, out))
    rc = 0;
  cg.amd_comgr_destroy_metadata(v);
  return rc;
}

static int cg_meta_int(amd_comgr_metadata_node_t map, const char *key) {
  char s[64];
  return cg_meta_str(map, key, s, sizeof s) == 0 ? atoi(s) : 0;
}

/* The end of the last explicit argument in the kernel's .args list: the
   runtime appends hidden arguments (value kinds hidden_*) after ours. */
static int cg_meta_args_size(amd_comgr_metadata_node_t k) {
  amd_comgr_metadata_node_t args;
  if (cg.amd_comgr_metadata_lookup(k, ".args", &args)) return -1;
  size_t cnt = 0;
  int end = 0;
  cg.amd_comgr_get_metadata_list_size(args, &cnt);
  for (size_t i = 0; i < cnt; i++) {
    amd_comgr_metadata_node_t a;
    char kind[64] = "";
    if (cg.amd_comgr_index_list_metadata(args, i, &a)) continue;
    cg_meta_str(a, ".value_kind", kind, sizeof kind);
    int e = cg_meta_int(a, ".offset") + cg_meta_int(a, ".size");
    if (strncmp(kind, "hidden_", 7) != 0 && e > end) end = e;
    cg.amd_comgr_destroy_metadata(a);
  }
  cg.amd_comgr_destroy_metadata(args);
  return end;
}

static void cg_meta_kernel(amd_comgr_metadata_node_t k, cg_kernel_meta *m) {
  memset(m, 0, sizeof *m);
  cg_meta_str(k, ".name", m->name, sizeof m->name);
  m->vgpr = cg_meta_int(k, ".vgpr_count");
  m->agpr = cg_meta_int(k, ".agpr_count");
  m->sgpr = cg_meta_int(k, ".sgpr_count");
  m->vgpr_spill = cg_meta_int(k, ".vgpr_spill_count");
  m->sgpr_spill = cg_meta_int(k, ".sgpr_spill_count");
  m->lds = cg_meta_int(k, ".group_segment_fixed_size");
  m->scratch = cg_meta_int(k, ".private_segment_fixed_size");
  m->kernarg_size = cg_meta_int(k, ".kernarg_segment_size");
  m->args_size = cg_meta_args_size(k);
  m->max_wg_size = cg_meta_int(k, ".max_flat_workgroup_size");
  m->wave_size = cg_meta_int(k, ".wavefront_size");
}

int cg_read_meta(const void *obj, size_t len, cg_kernel_meta *out, int max) {
  if (cg_load() < 0) return -1;
  amd_comgr_data_t d;
  amd_comgr_metadata_node_t md, ks;
  int n = -1;
  if (cg.amd_comgr_create_data(AMD_COMGR_DATA_KIND_EXECUTABLE, &d)) return -1;
  if (cg.amd_comgr_set_data(d, len, obj) || cg.amd_comgr_get_data_metadata(d, &md)) {
    cg.amd_comgr_release_data(d);
    return -1;
  }
  if (cg.amd_comgr_metadata_lookup(md, "amdhsa.kernels", &ks) == 0) {
    size_t cnt = 0;
    cg.amd_comgr_get_metadata_list_size(ks, &cnt);
    n = 0;
    for (size_t i = 0; i < cnt && n < max; i++) {
      amd_comgr_metadata_node_t k;
      if (cg.amd_comgr_index_list_metadata(ks, i, &k)) continue;
      cg_meta_kernel(k, &out[n++]);
      cg.amd_comgr_destroy_metadata(k);
    }
    cg.amd_comgr_destroy_metadata(ks);
  }
  cg.amd_comgr_destroy_metadata(md);
  cg.amd_comgr_release_data(d);
  return n;
}
