/* emu_mfma.c: CDNA matrix instructions as the ISA documents them.
 *
 * v_mfma_f32_32x32x8[_]bf16[_1k] (CDNA2/3, 4 k per lane) and
 * v_mfma_f32_32x32x16_bf16 (CDNA4, 8 k per lane), one block, no broadcast:
 *   A (32 x K): lane l, element j holds A[l % 32][(l / 32) * kpl + j]
 *   B (K x 32): lane l, element j holds B[(l / 32) * kpl + j][l % 32]
 *   C/D (32 x 32): lane l, register r holds D[(r / 4) * 8 + (l / 32) * 4 + r % 4][l % 32]
 * The CDNA2/3 forms are checked entry by entry against AMD's matrix
 * instruction calculator (shared/mfma-layouts, tests/emu_layout). CDNA4's
 * double-K form follows the CDNA4 ISA guide: the same placement with 8 k per
 * lane.
 *
 * v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8} (CDNA3 on the FNUZ formats, CDNA4 on
 * the OCP ones; hk_emu_fp8.h), 8 codes per lane: the placement above with
 * kpl 8, as AMD's calculator gives it for CDNA3 (tests/emu_layout checks the
 * tables cdna3.v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8}). Every product of two fp8 values is
 * exact in fp32; they are summed in k order onto the accumulator, as the bf16
 * form does.
 *
 * v_mfma_f32_16x16x16[_]bf16[_1k] (CDNA2/3, 4 k per lane) and
 * v_mfma_f32_16x16x32_bf16 (CDNA4, 8 k per lane), one block:
 *   A (16 x K): lane l, element j holds A[l % 16][(l / 16) * kpl + j]
 *   B (K x 16): lane l, element j holds B[(l / 16) * kpl + j][l % 16]
 *   C/D (16 x 16): lane l, register r holds D[(l / 16) * 4 + r][l % 16]
 * (AMD's calculator tables cdna3.v_mfma_f32_16x16x16_bf16.*; CDNA4 as above). */
#include <string.h>

#include "hk_emu_fp8.h"
#include "hkrt_int.h"

#ifdef HKEMU_MUTATE_LAYOUT
#define EMU_MUTANT 1 /* a deliberately wrong A layout, for the mutation test */
#else
#define EMU_MUTANT 0
#endif

void hkemu_mfma_layout(emu_operand which, int kpl, int lane, int i, int *row, int *col) {
  switch (which) {
  case EMU_OPERAND_A:
    *row = lane % 32;
    *col = (lane / 32) * kpl + i;
    if (EMU_MUTANT) *col = i * 2 + lane / 32; /* k interleaved across the lane halves */
    break;
  case EMU_OPERAND_B:
    *row = (lane / 32) * kpl + i;
    *col = lane % 32;
    break;
  case EMU_OPERAND_D:
    *row = (i / 4) * 8 + (lane / 32) * 4 + i % 4;
    *col = lane % 32;
    break;
  }
}

void hkemu_mfma16_layout(emu_operand which, int kpl, int lane, int i, int *row, int *col) {
  switch (which) {
  case EMU_OPERAND_A:
    *row = lane % 16;
    *col = (lane / 16) * kpl + i;
    if (EMU_MUTANT) *col = i * 4 + lane / 16; /* k interleaved across the lane groups */
    break;
  case EMU_OPERAND_B:
    *row = (lane / 16) * kpl + i;
    *col = lane % 16;
    break;
  case EMU_OPERAND_D:
    *row = (lane / 16) * 4 + i;
    *col = lane % 16;
    break;
  }
}

static float emu_bf16(unsigned short x) {
  unsigned u = (unsigned)x << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Products of two bf16 are exact in fp32; they are summed in k order onto
   the fp32 accumulator. */
void hkemu_mfma_wave_32x32_bf16(int kpl, const unsigned short (*a)[8], const unsigned short (*b)[8],
                                const float (*c)[16], float (*d)[16]) {
  int K = 2 * kpl;
  float A[32][16], B[16][32];
  for (int l = 0; l < 64; l++)
    for (int j = 0; j < kpl; j++) {
      int r, k;
      hkemu_mfma_layout(EMU_OPERAND_A, kpl, l, j, &r, &k);
      A[r][k] = emu_bf16(a[l][j]);
      hkemu_mfma_layout(EMU_OPERAND_B, kpl, l, j, &k, &r);
      B[k][r] = emu_bf16(b[l][j]);
    }
  for (int l = 0; l < 64; l++)
    for (int i = 0; i < 16; i++) {
      int r, col;
      hkemu_mfma_layout(EMU_OPERAND_D, kpl, l, i, &r, &col);
      float s = c[l][i];
      for (int k = 0; k < K; k++) s += A[r][k] * B[k][col];
      d[l][i] = s;
    }
}

void hkemu_mfma_wave_32x32_f8(int fmt_a, int fmt_b, const unsigned char (*a)[16],
                              const unsigned char (*b)[16], const float (*c)[16], float (*d)[16]) {
  enum { KPL = 8, K = 16 };
  float A[32][K], B[K][32];
  for (int l = 0; l < 64; l++)
    for (int j = 0; j < KPL; j++) {
      int r, k;
      hkemu_mfma_layout(EMU_OPERAND_A, KPL, l, j, &r, &k);
      A[r][k] = hkemu_fp8_decode(a[l][j], fmt_a);
      hkemu_mfma_layout(EMU_OPERAND_B, KPL, l, j, &k, &r);
      B[k][r] = hkemu_fp8_decode(b[l][j], fmt_b);
    }
  for (int l = 0; l < 64; l++)
    for (int i = 0; i < 16; i++) {
      int r, col;
      hkemu_mfma_layout(EMU_OPERAND_D, KPL, l, i, &r, &col);
      float s = c[l][i];
      for (int k = 0; k < K; k++) s += A[r][k] * B[k][col];
      d[l][i] = s;
    }
}

/* The 16x16 form: K = 4 * kpl, products exact, summed in k order. */
void hkemu_mfma_wave_16x16_bf16(int kpl, const unsigned short (*a)[8], const unsigned short (*b)[8],
                                const float (*c)[16], float (*d)[16]) {
  int K = 4 * kpl;
  float A[16][32], B[32][16];
  for (int l = 0; l < 64; l++)
    for (int j = 0; j < kpl; j++) {
      int r, k;
      hkemu_mfma16_layout(EMU_OPERAND_A, kpl, l, j, &r, &k);
      A[r][k] = emu_bf16(a[l][j]);
      hkemu_mfma16_layout(EMU_OPERAND_B, kpl, l, j, &k, &r);
      B[k][r] = emu_bf16(b[l][j]);
    }
  for (int l = 0; l < 64; l++)
    for (int i = 0; i < 4; i++) {
      int r, col;
      hkemu_mfma16_layout(EMU_OPERAND_D, kpl, l, i, &r, &col);
      float s = c[l][i];
      for (int k = 0; k < K; k++) s += A[r][k] * B[k][col];
      d[l][i] = s;
    }
}
