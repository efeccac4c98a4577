/* attn.h: what the attention ops share (op_attn.c defines it): the parameter
   schema and the cross-parameter check of attn_fwd, which attn_bwd takes as
   they are, and the emulator test's layouts, random data and fp64 forward. */
#ifndef HK_ATTN_H
#define HK_ATTN_H

#include <stddef.h>

#include "emutest.h"
#include "op.h"

/* dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_k */
#define ATTN_NPARAMS 8
extern const op_param attn_params[ATTN_NPARAMS];
/* heads_q a multiple of heads_k; head_dim 64 or 128 on wgmma targets. */
int attn_check(const op_inst *k, char *msg, size_t n);
/* The run-time dimensions, in argument order, and their count. */
extern const char *const attn_dim_names[];
#define ATTN_NDIMS 5

/* Keys row r of a causal mask (bottom-right aligned) sees, of sk. */
double attn_keys_seen(long r, long sq, long sk);

/* `hkgen test`: a case fits when heads_q is a multiple of heads_k. */
int attn_case_fits(const op_inst *k, const long *s);

/* A [batch][seq][heads][head_dim] (BSHD) or [batch][heads][seq][head_dim]
   (BHSD) tensor by element strides, rows padded at random. */
typedef struct {
  long sb, ss, sh, elems;
} attn_layout;
attn_layout attn_make_layout(et_ctx *c, long B, long S, long H, long D, int bhsd);
/* n bf16 uniform in [-2, 2) (malloc'd). */
unsigned short *attn_random(et_ctx *c, long n);
/* Which keys a query sees and how its logits are shaped (attn_fwd's
   features): causal; a sliding window of `left' keys before and `right'
   after the query's bottom-right aligned position (-1: no edge); a soft cap
   cap * tanh(s / cap) of the scaled logit s (0: none); a sink logit that
   joins the softmax's denominator only (NAN: none). */
typedef struct {
  int causal;
  long left, right;
  double softcap, sink;
} attn_mask;
/* fp64 forward of one (b, h) pair under mask mk (see attn_ref_head). */
void attn_ref_head_mask(const unsigned short *q, const unsigned short *kk, const unsigned short *v,
                        const attn_layout *lq, const attn_layout *lk, const attn_layout *lv, long b, long h,
                        long hk, long Sq, long Sk, long D, const attn_mask *mk, double scale, double *out,
                        double *lse);
/* fp64 forward of one (b, h) pair, h reading KV head hk: out[Sq][D], lse[Sq]
   (natural log; -inf for a row with no visible key). */
void attn_ref_head(const unsigned short *q, const unsigned short *kk, const unsigned short *v,
                   const attn_layout *lq, const attn_layout *lk, const attn_layout *lv, long b, long h,
                   long hk, long Sq, long Sk, long D, int causal, double scale, double *out, double *lse);

#endif
