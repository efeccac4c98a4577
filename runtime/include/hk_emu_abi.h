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
  void (*mfma_16x16_bf16)(int kpl, const unsigned short *a, const unsigned short *b,
                          const float *c, float *d); /* c, d: 4 floats */
} hkemu_api_t;

#ifdef __cplusplus
}
#endif

#endif
