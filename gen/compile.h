/* compile.h: which compiler serves a target, compiling, and the
   content-addressed cache of code objects. */
#ifndef HK_COMPILE_H
#define HK_COMPILE_H

#include <stddef.h>

#include "util.h"

/* CC_HOST builds a generated source for the CPU emulator (a shared object). */
typedef enum { CC_NONE, CC_COMGR, CC_CLANG, CC_NVCC, CC_HOST } cc_kind;

typedef struct {
  cc_kind kind;
  char path[512];      /* clang executable, or comgr library */
  char identity[512];  /* recorded per code object; part of the cache key */
} cc_compiler;

/* Picks the compiler for target: in-process comgr when it lists the ISA,
   else clang >= 20 ($HKGEN_CLANG, /opt/rocm/llvm/bin/clang, clang-22 ... on
   PATH). $HKGEN_COMPILER=clang|comgr forces one. Fills why on failure. */
int cc_resolve(const char *target, cc_compiler *cc, char *why, size_t n);
/* The host compiler for emulated builds (clang, with runtime/include). */
int cc_resolve_host(cc_compiler *cc, char *why, size_t n);
/* Where hk_emu.h lives: $HKGEN_RUNTIME_INCLUDE, next to the executable, or
   the build-time path. */
const char *cc_runtime_include(void);
/* The clang used for targets comgr does not serve and for host (emulator)
   builds; NULL when none was found. */
const char *cc_clang(void);
/* Runs argv (no shell), collecting its stdout and stderr into out (may be
   NULL). Returns the exit status, or -1 when it could not run. */
int cc_run_argv(char *const argv[], hk_buf *out);
/* The options every compile uses (also part of the cache key). */
const char *cc_flags_text(void);
/* Compiles src for target. *meta receives what the compiler reported about
   resources when the object itself does not carry it (nvcc's ptxas -v), or
   NULL; the caller frees obj, meta and log. */
int cc_compile(const cc_compiler *cc, const char *target, const char *src, size_t len,
               char **obj, size_t *objlen, char **meta, char **log);
/* Bytes of kernel name's declared parameters in a cubin (the end of the
   last, from its .nv.info.<name> section); -1 when the object does not say. */
int cc_cubin_param_size(const void *obj, size_t len, const char *name);

/* Cache: $HKGEN_CACHE_DIR, else $XDG_CACHE_HOME/hkgen, else ~/.cache/hkgen. */
typedef struct {
  char dir[1024];
  int enabled;
} cc_cache;

void cc_cache_open(cc_cache *c, int enabled);
void cc_cache_key(const cc_compiler *cc, const char *target, const char *src, size_t len,
                  char key[65]);
/* Small text entries beside the objects: <key><ext> (e.g. ".src", ".res"). */
int cc_cache_get_text(const cc_cache *c, const char *key, const char *ext, char **text, size_t *len);
void cc_cache_put_text(const cc_cache *c, const char *key, const char *ext, const char *text, size_t len);
/* Whether the cache holds key (no read). */
int cc_cache_has(const cc_cache *c, const char *key);
int cc_cache_get(const cc_cache *c, const char *key, char **obj, size_t *len, char **meta);
void cc_cache_put(const cc_cache *c, const char *key, const char *obj, size_t len,
                  const char *meta);

#endif
