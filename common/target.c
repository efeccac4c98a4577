/* target.c: the target table and the occupancy rule. Figures of parts are
   the vendors' published ones (shared/anchors/amd-published.md for AMD).
   The last three columns of AMD parts (LDS bytes/clock/CU, L2 bytes/clock
   per XCD, L2 MiB per XCD) are from AMD's CDNA 2, CDNA 3 and CDNA 4 white
   papers: LDS 128 B/clk (CDNA 2/3), read bandwidth doubled with the 160 KiB
   LDS of CDNA 4; L2 of 16 channels x 128 B/clk per XCD (CDNA 3/4), 8 MiB
   with 32 channels x 64 B/clk per GCD (CDNA 2). NVIDIA rows leave them 0. */
#include "target.h"

#include <string.h>
#include <strings.h>

static const tgt_part tgt_parts_cdna2[] = {
    {"MI210", 104, 1, 1700, 1.6, 181.0, 128, 2048, 8},
    {"MI250X", 110, 1, 1700, 1.6, 191.5, 128, 2048, 8}, /* one GCD: the device a process sees */
};
static const tgt_part tgt_parts_cdna3[] = {
    {"MI300X", 304, 8, 2100, 5.3, 1307.0, 128, 2048, 4},
    {"MI325X", 304, 8, 2100, 6.0, 1307.0, 128, 2048, 4},
};
static const tgt_part tgt_parts_cdna4[] = {
    {"MI350X", 256, 8, 2200, 8.0, 2300.0, 256, 2048, 4},
    {"MI355X", 256, 8, 2400, 8.0, 2517.0, 256, 2048, 4},
};
static const tgt_part tgt_parts_sm90[] = {
    {"H100", 132, 1, 1980, 3.35, 989.0, 0, 0, 0},
    {"H200", 132, 1, 1980, 4.8, 989.0, 0, 0, 0},
};

/* LDS and cache lines (tgt_mem in target.h).
   CDNA2/3: 32 banks of 4 bytes, 128 bytes a cycle (ROCm Compute Profiler's
   LDS model, "Local data share"; its MI200 example: a one-lane ds_read_b32
   takes 2 cycles, so empty passes count); 16-byte reads in 8 passes over
   AMD's lane groups {0-3,20-23} {4-7,16-19} {8-11,28-31} {12-15,24-27} and
   the same +32 (the ROCm blog "Avoiding LDS bank conflicts on AMD GPUs using
   CK-Tile", 2025; measured on MI300, with ds_read_b64 in 4 passes of 16
   consecutive lanes, by the pyhip project's "Measuring bank-conflict
   behaviour" notes), 16-byte writes over consecutive groups of 8 lanes
   (Composable Kernel's "LDS bank conflicts" page). The CDNA2 groups are
   taken as CDNA3's: no source here says otherwise.
   CDNA4: 64 banks; reads serve 256 bytes a pass (ds_read_b64: 2 passes of 32
   consecutive lanes; ds_read_b128: 4 passes, each two of the CDNA3 groups,
   {0-3,12-15,20-23,24-27} {4-11,16-19,28-31} and +32), writes 128 bytes
   (ds_write_b64: 4 passes of 16) - HipKittens' measured phase tables
   (analysis/paper_experiments/phases, MI355X) and AMD's rocRoller notes.
   4-byte accesses and CDNA4's ds_write_b128 follow the pass-bytes rule;
   nobody measured them in the sources found.
   Cache line: 128 bytes, the L2's (CDNA white papers). */
static const tgt_mem tgt_mem_cdna3 = {32, 4, 128, 128, {0, 1, 2, 3, 1, 0, 3, 2, 4, 5, 6, 7, 5, 4, 7, 6}, 128};
static const tgt_mem tgt_mem_cdna4 = {64, 4, 256, 128, {0, 1, 1, 0, 1, 0, 0, 1, 2, 3, 3, 2, 3, 2, 2, 3}, 128};

/* Matrix rates are each part's dense peak / (CUs x 4 SIMDs x clock): they
   give the pass counts of AMD's ISA guides (CDNA 3: v_mfma_f32_32x32x8_bf16
   8 passes of 4 clocks; CDNA 4: v_mfma_f32_32x32x16_bf16 8 passes,
   16x16x32 4), as LLVM's scheduling model (llvm-mca-22) also has them. VALU:
   a wave64 instruction over a 16-lane SIMD, 4 clocks; transcendentals at
   quarter rate on CDNA 2/3 (ISA guides), twice that rate on CDNA 4 (white
   paper). */
static const tgt_rates tgt_rates_cdna2 = {{512, 256, 64}, 4, 16};
static const tgt_rates tgt_rates_cdna3 = {{1024, 512, 64}, 4, 16};
static const tgt_rates tgt_rates_cdna4 = {{2048, 1024, 64}, 4, 8};

#define TGT_PARTS(p) p, (int)(sizeof p / sizeof p[0])
#define TGT_CDNA_REGS 512, 8, 8, 32, 4, 0 /* VGPRs+AGPRs per lane, granule, waves/SIMD, blocks, SIMDs */
#define TGT_CDNA_GRID {0, 0, 0}, {4294967295LL, 4294967295LL, 4294967295LL}
#define TGT_CUDA_GRID {2147483647LL, 65535, 65535}, {0, 0, 0}

static const tgt_info tgt_table[] = {
    {"gfx90a", "cdna2", "hk_cdna.h", "MI210/MI250X", TGT_AMD | TGT_MFMA, 64, 65536, 65536, TGT_CDNA_REGS,
     TGT_CDNA_GRID, 0x3f, 0, 2, 4, "comgr,clang", {"v_mfma", "v_smfmac", NULL}, TGT_PARTS(tgt_parts_cdna2),
     &tgt_mem_cdna3, &tgt_rates_cdna2},
    {"gfx942", "cdna3", "hk_cdna.h", "MI300X/MI325X", TGT_AMD | TGT_MFMA | TGT_FP8_FNUZ, 64, 65536, 65536,
     TGT_CDNA_REGS, TGT_CDNA_GRID, 0x4c, 0, 3, 4, "comgr,clang", {"v_mfma", "v_smfmac", NULL},
     TGT_PARTS(tgt_parts_cdna3), &tgt_mem_cdna3, &tgt_rates_cdna3},
    {"gfx950", "cdna4", "hk_cdna.h", "MI350X/MI355X",
     TGT_AMD | TGT_MFMA | TGT_LDS_DMA | TGT_CVT_PK_BF16 | TGT_FP8_OCP | TGT_LDS_TR, 64, 163840, 163840, TGT_CDNA_REGS,
     TGT_CDNA_GRID, 0x4f, 0, 4, 8, "comgr,clang", {"v_mfma", "v_smfmac", NULL}, TGT_PARTS(tgt_parts_cdna4),
     &tgt_mem_cdna4, &tgt_rates_cdna4},
    /* shared memory per block with the opt-in limit; 228 KiB per SM, of
       which each resident block reserves 1 KiB; 64K registers per SM */
    {"sm_90a", "sm90", "hk_sm90.h", "H100/H200", TGT_WGMMA | TGT_TMA | TGT_FP8_OCP, 32, 232448, 233472, 65536, 256, 64, 32,
     4, 1024, TGT_CUDA_GRID, 0, 90, 0, 0, "nvcc", {"HGMMA", "HMMA", NULL}, TGT_PARTS(tgt_parts_sm90),
     NULL, NULL},
};

#define TGT_N (sizeof tgt_table / sizeof tgt_table[0])

const tgt_info *tgt_all(size_t *n) {
  *n = TGT_N;
  return tgt_table;
}

const tgt_info *tgt_find(const char *name) {
  for (size_t i = 0; name && i < TGT_N; i++)
    if (strcmp(tgt_table[i].name, name) == 0) return &tgt_table[i];
  return NULL;
}

const tgt_info *tgt_from_elf_mach(unsigned mach) {
  for (size_t i = 0; i < TGT_N; i++)
    if (tgt_table[i].elf_mach && tgt_table[i].elf_mach == mach) return &tgt_table[i];
  return NULL;
}

const tgt_info *tgt_from_cuda_cc(int cc) {
  for (size_t i = 0; i < TGT_N; i++)
    if (tgt_table[i].cuda_cc && tgt_table[i].cuda_cc == cc) return &tgt_table[i];
  return NULL;
}

int tgt_has(const tgt_info *t, unsigned features) { return t && (t->features & features) == features; }

int tgt_name_has(const char *target, unsigned features) { return tgt_has(tgt_find(target), features); }

int tgt_is_amd(const tgt_info *t) { return tgt_has(t, TGT_AMD); }

const tgt_part *tgt_largest_part(const tgt_info *t) {
  const tgt_part *best = NULL;
  for (int i = 0; i < t->nparts; i++)
    if (!best || t->parts[i].units > best->units ||
        (t->parts[i].units == best->units && t->parts[i].clock_mhz > best->clock_mhz))
      best = &t->parts[i];
  return best;
}

/* Case does not matter: mi355x names MI355X. */
const tgt_part *tgt_part_find(const char *name, const tgt_info **target) {
  for (size_t i = 0; name && i < TGT_N; i++)
    for (int j = 0; j < tgt_table[i].nparts; j++)
      if (!strcasecmp(tgt_table[i].parts[j].name, name)) {
        if (target) *target = &tgt_table[i];
        return &tgt_table[i].parts[j];
      }
  return NULL;
}

/* NVIDIA: registers are allocated per warp in granules; blocks are limited
   by registers, shared memory (plus the per-block reservation) and the
   block slots; warps by the SM's maximum. */
static int tgt_occupancy_nv(const tgt_info *t, int regs, long lds, int block) {
  int warps = (block + t->wave_size - 1) / t->wave_size;
  int regs_warp = ((regs ? regs : 1) * t->wave_size + t->reg_granule - 1) / t->reg_granule * t->reg_granule;
  int blocks = t->regs / (regs_warp * warps);
  if (lds > 0 && (long)t->lds_unit / (lds + t->lds_reserved) < blocks)
    blocks = (int)((long)t->lds_unit / (lds + t->lds_reserved));
  if (blocks > t->max_blocks) blocks = t->max_blocks;
  int w = blocks * warps;
  return w > t->max_waves ? t->max_waves : w;
}

/* AMD: registers per lane per SIMD in granules bound the waves of a SIMD;
   a workgroup's waves spread over the CU's SIMDs and all must fit; LDS is
   per CU. */
static int tgt_occupancy_amd(const tgt_info *t, int regs, long lds, int block) {
  regs = ((regs ? regs : 1) + t->reg_granule - 1) / t->reg_granule * t->reg_granule;
  int waves = t->regs / regs;
  if (waves > t->max_waves) waves = t->max_waves;
  int wg_waves = (block + t->wave_size - 1) / t->wave_size;
  if (waves * t->simds < wg_waves) return 0;
  if (lds > 0) {
    int wgs = (int)((long)t->lds_unit / lds); /* workgroups per CU */
    int by_lds = wgs * wg_waves / t->simds;
    if (wgs > 0 && by_lds == 0) by_lds = 1; /* one small workgroup still runs */
    if (by_lds < waves) waves = by_lds;
  }
  return waves;
}

int tgt_occupancy(const tgt_info *t, int regs, long lds, int block) {
  return tgt_is_amd(t) ? tgt_occupancy_amd(t, regs, lds, block) : tgt_occupancy_nv(t, regs, lds, block);
}

long long tgt_grid_max(const tgt_info *t, int axis, int block) {
  if (t->grid_blocks[axis]) return t->grid_blocks[axis];
  return t->grid_items[axis] / (block > 0 ? block : 1);
}

int tgt_lds_pass(const tgt_info *t, int write, unsigned bytes, int lane) {
  const tgt_mem *m = t->mem;
  if (!write && bytes == 16) return m->read_b128_quad[(lane & 63) / 4];
  unsigned w = bytes > (unsigned)m->bank_bytes ? bytes : (unsigned)m->bank_bytes;
  unsigned lanes = (unsigned)(write ? m->write_pass_bytes : m->read_pass_bytes) / w;
  return lanes ? (int)((unsigned)lane / lanes) : lane;
}

const char *tgt_default_list(void) { return "gfx942,gfx950"; }
