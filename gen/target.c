/* target.c: the target table. */
#include "target.h"

#include <string.h>

static const tgt_info tgt_table[] = {
    {"gfx90a", "cdna2", "hk_cdna.h", "MI210/MI250X", 65536, 0x3f},
    {"gfx942", "cdna3", "hk_cdna.h", "MI300X/MI325X", 65536, 0x4c},
    {"gfx950", "cdna4", "hk_cdna.h", "MI350X/MI355X", 163840, 0x4f},
    /* shared memory per block with the opt-in limit */
    {"sm_90a", "sm90", "hk_sm90.h", "H100/H200", 232448, 0},
};

const tgt_info *tgt_all(size_t *n) {
  *n = sizeof tgt_table / sizeof tgt_table[0];
  return tgt_table;
}

const tgt_info *tgt_find(const char *name) {
  for (size_t i = 0; i < sizeof tgt_table / sizeof tgt_table[0]; i++)
    if (strcmp(tgt_table[i].name, name) == 0) return &tgt_table[i];
  return NULL;
}

const tgt_info *tgt_from_elf_mach(unsigned mach) {
  for (size_t i = 0; i < sizeof tgt_table / sizeof tgt_table[0]; i++)
    if (tgt_table[i].elf_mach && tgt_table[i].elf_mach == mach) return &tgt_table[i];
  return NULL;
}

const char *tgt_default_list(void) { return "gfx942,gfx950"; }

int tgt_is_amd(const tgt_info *t) { return t->elf_mach != 0; }

int tgt_is_sm90(const char *target) {
  const tgt_info *t = tgt_find(target);
  return t && !strcmp(t->arch, "sm90");
}
