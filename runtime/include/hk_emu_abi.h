/* hk_emu_abi.h: the table through which an emulated kernel (a host shared
   object built from a generated source) calls libhkrt's emulator. The
   emulator fills the module's `hkemu_api` after loading it, so the module
   links against nothing and any host program can load it. */
#ifndef HK_EMU_ABI_H
#define HK_EMU_ABI_H

#include <stddef.h>

#define HKEMU_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  unsigned version; /* unused: the module exports hkemu_abi_version */
  int (*thread_id)(void);
  int (*block_id)(int axis);
  void (*barrier)(void);
  unsigned char *(*lds)(unsigned bytes, unsigned *size);
  void (*fault_lds)(unsigned off, unsigned n, unsigned size, int write);
  void (*check_global)(const void *p, size_t n, int write);
  void (*mfma_32x32_bf16)(int kpl, const unsigned short *a, const unsigned short *b,
                          const float *c, float *d);
  /* appended, same ABI version (a module built before leaves them unused) */
  unsigned (*swap_halves_b32)(unsigned v); /* wave collective: v of lane l ^ 32 */
  /* the 32x32x16 fp8 MFMA: formats HKEMU_FP8_* (hk_emu_fp8.h) of A and B, 8 codes
     of A and of B for this lane, c/d: 16 floats */
  void (*mfma_32x32_f8)(int fmt_a, int fmt_b, const unsigned char *a, const unsigned char *b,
                        const float *c, float *d);
  /* statistics (hkrt_emu_stats_enable): a primitive calls note for each
     access while *stats_on; addr is an LDS byte offset or a global address,
     file and line the primitive's call site */
  const int *stats_on;
  void (*note)(int kind, unsigned long long addr, unsigned bytes, const char *file, int line);
  int (*grid_dim)(int axis);               /* workgroups in the grid along axis */
  void (*fault_kernel)(const char *what);  /* a kernel's own check failed: stop the launch */
  void (*mfma_16x16_bf16)(int kpl, const unsigned short *a, const unsigned short *b,
                          const float *c, float *d); /* c, d: 4 floats */
  /* wave collective, gfx950's ds_read_b64_tr_b16: each lane names the LDS
     byte offset of 4 bf16 (checked by the module); lane 16g + i gets element
     i % 4 of lane 16g + 4j + i / 4's, as its element j (out: 4) */
  void (*lds_read_tr16_b64)(unsigned off, unsigned short *out);
} hkemu_api_t;

/* note's kinds */
enum { HKEMU_LDS_READ = 0, HKEMU_LDS_WRITE = 1, HKEMU_GLOBAL_READ = 2, HKEMU_GLOBAL_WRITE = 3 };

#ifdef __cplusplus
}
#endif

#endif
