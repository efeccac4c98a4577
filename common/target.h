/* target.h: the one table of GPU targets, read by gen/, libhkrt and the
   emulator: what each ISA can do (feature bits), its register, LDS and wave
   limits (occupancy is computed from them in one place, tgt_occupancy), its
   compiler, its emulator model and the parts (products) that run it. Code
   asks for features, never for a target's name. */
#ifndef HK_TARGET_H
#define HK_TARGET_H

#include <stddef.h>

/* Feature bits. */
#define TGT_AMD (1u << 0)       /* AMD code objects (ELF, comgr metadata) */
#define TGT_MFMA (1u << 1)      /* AMD matrix cores: v_mfma */
#define TGT_WGMMA (1u << 2)     /* warpgroup matrix multiply (Hopper) */
#define TGT_TMA (1u << 3)       /* bulk tensor copies by tensor map */
#define TGT_LDS_DMA (1u << 4)   /* direct global-to-LDS loads of 16 bytes */
#define TGT_CVT_PK_BF16 (1u << 5) /* a packed fp32 -> bf16 conversion instruction */
#define TGT_FP8_FNUZ (1u << 6)  /* fp8 conversions and MFMA on E4M3FNUZ/E5M2FNUZ (docs/FP8.md) */
#define TGT_FP8_OCP (1u << 7)   /* the same on the OCP formats E4M3FN/E5M2 (sm_90a: wgmma e4m3/e5m2) */
#define TGT_LDS_TR (1u << 8)    /* LDS transposing reads of 16-bit elements (ds_read_b64_tr_b16: hk_lds_load_tr_b64) */

/* How the LDS serves one wave's access and how global memory is cached, as
   the emulator's statistics (hkgen test --stats) count them. A ds_read or
   ds_write of W bytes per lane is split into passes; each pass serves
   pass_bytes / max(W, bank_bytes) lanes, consecutive ones except for 16-byte
   reads, whose lane groups are AMD's (read_b128_quad: the pass of each
   group of 4 lanes). In a pass, each bank serves one dword per cycle; lanes
   on the same dword share it (broadcast); a pass without active lanes still
   takes a cycle. Sources in target.c. */
typedef struct {
  int banks;            /* dword banks */
  int bank_bytes;       /* bytes one bank serves per cycle */
  int read_pass_bytes;  /* bytes one pass of a ds_read serves */
  int write_pass_bytes; /* the same for ds_write */
  unsigned char read_b128_quad[16]; /* pass of lanes 4q..4q+3 for ds_read_b128 */
  int line_bytes;       /* global memory: the cache line a request is served in */
} tgt_mem;

/* One product that runs the ISA, with its published figures. */
typedef struct {
  const char *name;   /* MI300X */
  int units;          /* compute units (AMD) or multiprocessors (NVIDIA) */
  int xcds;           /* dies that workgroups are dealt to round robin */
  int clock_mhz;      /* peak engine clock */
  double hbm_tbs;     /* memory bandwidth, TB/s */
  double bf16_tflops; /* dense bf16 matrix peak */
  /* for `hkgen inspect --estimate` (docs/MODEL.md); 0 where not known */
  int lds_bw;         /* LDS bytes per clock per CU */
  int l2_bw;          /* L2 bytes per clock per XCD (all its channels) */
  int l2_mib;         /* L2 per XCD, MiB */
} tgt_part;

/* Issue rates of one ISA, for the estimate: matrix FLOPs per clock per
   SIMD by input width (8-bit, 16-bit, 32-bit and wider), and the clocks a
   wave64 VALU and a transcendental VALU instruction hold a SIMD. */
typedef struct {
  int mma_flops_clk[3];
  int valu_clk, trans_clk;
} tgt_rates;

typedef struct {
  const char *name;    /* gfx942: what specs, manifests and devices say */
  const char *arch;    /* cdna3: the family; picks <op>.<arch>.hip.m4 when one exists */
  const char *header;  /* tile header under templates/include/ */
  const char *product; /* for docs and `hkgen list` */
  unsigned features;   /* TGT_* */
  int wave_size;       /* threads per wave (warp) */
  unsigned lds_bytes;  /* LDS a workgroup may allocate */
  unsigned lds_unit;   /* LDS per compute unit / multiprocessor */
  /* occupancy: AMD counts waves per SIMD (regs: VGPRs+AGPRs per lane per
     SIMD, allocated in granules of reg_granule); NVIDIA counts warps per SM
     (regs: 32-bit registers per SM, allocated per warp in granules). */
  int regs, reg_granule, max_waves, max_blocks, simds;
  unsigned lds_reserved; /* per block, on top of what the kernel asks (NVIDIA: 1 KiB) */
  /* launch limits per grid axis: blocks (NVIDIA: x 2^31-1, y and z 65535),
     or work-items, blocks times block size (AMD: each axis of the dispatch
     packet's grid is a 32-bit count) */
  long long grid_blocks[3], grid_items[3];
  unsigned elf_mach;     /* EF_AMDGPU_MACH_* in e_flags; 0 for NVIDIA */
  int cuda_cc;           /* compute capability x 10 (90); 0 for AMD */
  int emu_arch;          /* HK_EMU_ARCH of the CPU emulator (2, 3, 4); 0: not emulated */
  int emu_kpl;           /* k elements per lane of the 32x32 bf16 MFMA (the emulator's; attention LDS pitches) */
  const char *compilers; /* tried in order: "comgr,clang" or "nvcc" */
  const char *mma_prefix[3]; /* mnemonics of matrix instructions, for hot-loop figures */
  const tgt_part *parts;
  int nparts;
  const tgt_mem *mem;    /* LDS banks and cache lines; NULL where not modelled */
  const tgt_rates *rates; /* AMD: for the estimate; NULL elsewhere */
} tgt_info;

const tgt_info *tgt_all(size_t *n);
const tgt_info *tgt_find(const char *name);
const tgt_info *tgt_from_elf_mach(unsigned mach);
const tgt_info *tgt_from_cuda_cc(int cc);
int tgt_has(const tgt_info *t, unsigned features);
/* Whether target (a name) has all of features; 0 for an unknown name. */
int tgt_name_has(const char *target, unsigned features);
int tgt_is_amd(const tgt_info *t);
/* The target's biggest part: the most units, then the highest clock (the
   emulator sizes device_units by it; explain and inspect estimate on it). */
const tgt_part *tgt_largest_part(const tgt_info *t);
const tgt_part *tgt_part_find(const char *name, const tgt_info **target);
/* Waves per SIMD (AMD) or warps per SM (NVIDIA) of a kernel with regs
   registers per lane (VGPRs+AGPRs on AMD), lds bytes of shared memory per
   block (static + dynamic) and block threads; 0 when one block cannot be
   resident. */
int tgt_occupancy(const tgt_info *t, int regs, long lds, int block);
/* The most blocks a launch may have on axis (0..2) with blocks of block
   threads. */
long long tgt_grid_max(const tgt_info *t, int axis, int block);
/* The LDS pass that lane (0..63) of a wave's access of bytes per lane
   (write: a ds_write) falls in, by t->mem's rule; t must have one. */
int tgt_lds_pass(const tgt_info *t, int write, unsigned bytes, int lane);
/* Targets used when a spec names none. */
const char *tgt_default_list(void);

#endif
