/* target.h: the GPU targets hkgen knows and their limits. */
#ifndef HK_TARGET_H
#define HK_TARGET_H

#include <stddef.h>

typedef struct {
  const char *name;     /* gfx942 */
  const char *arch;     /* cdna3: the family, which picks the tile header */
  const char *header;   /* tile header under templates/include/ */
  const char *product;  /* for docs and `hkgen list` */
  unsigned lds_bytes;   /* LDS a workgroup may allocate */
  unsigned elf_mach;    /* EF_AMDGPU_MACH_* in e_flags; 0 for NVIDIA */
} tgt_info;

const tgt_info *tgt_all(size_t *n);
const tgt_info *tgt_find(const char *name);
const tgt_info *tgt_from_elf_mach(unsigned mach);
/* AMD (code objects with comgr metadata) or NVIDIA (cubins from nvcc). */
int tgt_is_amd(const tgt_info *t);
/* Whether target (a name) is Hopper's sm_90a (wgmma, bulk tensor copies). */
int tgt_is_sm90(const char *target);
/* Targets used when a spec names none. */
const char *tgt_default_list(void);

#endif
