m4_divert(-1)                                                   -*- C -*-
# attn_fwd.sm90.hip.m4 - attention forward, NVIDIA Hopper (sm_90a) version of
# attn_fwd.hip.m4 on warpgroup MMA (wgmma): the same parameters and
# semantics; d128 adds a kernel argument (tmap_q) and has a grid of its own.
#
# The semantics, the parameter checks, the causal limits, the alignment
# predicates and the log-sum-exp epilogue are attn_common.m4's (shared with
# attn_fwd.hip.m4).
#
# Parameters (hkm_p_*): dtype (bf16), head_dim (64|128), causal (baked bool),
# batch, seqlen_q, seqlen_k, heads_q, heads_k (baked or `any'), and the
# serving features (baked; a kernel without one has none of their code and
# compiles to the same object as before them): window_left, window_right (a
# sliding window; -1 no edge, `any' a kernel argument), sinks (bool), softcap
# (0: none), varlen (bool).  Kernel arguments (hkm_kernarg_struct): Q, K, V,
# O, LSE (may be null), element strides {q,k,v,o}_stride_{b,s,h} (head_dim
# contiguous; varlen: _s, _h of the packed [total][heads][head_dim] tensors),
# scale, the run-time ones of the dimensions, then cu_seqlens_q,
# cu_seqlens_k, total_q, total_k (varlen), sinks and the run-time window
# sizes, then the tensor maps.
#
# Features, as attn_fwd.hip.m4 has them:
#   softcap: the scores become tanh(scale s / cap) (hk_tanhf), the softmax
#     then runs on them with cap * log2(e) as its (positive) scale: the FFMA
#     path, whatever the sign of scale.
#   sinks: the head's logit joins each row's sum in the epilogue
#     (attn_store, attn_sink); LSE includes it; a row without keys gets O = 0
#     and LSE = the sink.
#   windows: a tile's keys run from the block holding the first key its
#     first query sees (attn_tile_first; blocks wholly before it are never
#     loaded) to the block of the last key its last query sees
#     (attn_tile_end); K/V block j of a tile is key block t0 + j in every
#     loop form: the cp.async copies read from row t0 BLOCK_N on, the bulk
#     copies (thread 0 of d64, the producer of d128) ask for block t0 + j,
#     the ring positions count the tile's blocks as before, so the producer
#     issues exactly the blocks the consumers consume (both take t0 and
#     n_blocks from attn_tile_at).  Blocks that straddle a row's window edge
#     run masked (the first LOW_J blocks of a tile, which may hold keys below
#     a row's first, and those past wg_full, the last key the warpgroup's
#     first row sees).  Tiles whose rows
#     see no key (a right edge above seqlen_q - seqlen_k) are the empty ones
#     before the busy tiles, as with a causal mask.
#   varlen: seqlen_q and seqlen_k are the longest sequence's; a tile is
#     (sequence, 128 queries, head) with the sequence's token offsets qs, ks
#     and lengths Sq, Sk in attn_tile (the block-per-tile form: also in its
#     attn_grid, made per block from cu_seqlens of sequence z; blocks past
#     the sequence's tiles exit).  The persistent walk (attn_walk_vl) counts
#     the units class by class (the sequences with the most key blocks
#     first), sequence after sequence within a class, its cursor (sequence b,
#     first unit u0, class c) carried in the tile from one call to the next.  The tensor
#     maps are 3-D over the packed tensors ({head_dim, total, heads}): a box
#     that runs past a sequence's end reads the next sequence's rows, keys
#     masked by the sequence's Sk (the masked blocks: those past wg_full <=
#     Sk - 1), queries not stored; past the tensor's end, zeros.  LSE is
#     [heads_q][total_q].
#   The feature code sits under `if constexpr' (or m4 text, where a plain
#   kernel's argument struct lacks the names) so that the plain kernels'
#   code is what it was without it, byte for byte (even a dead call on a
#   tile changed it): tests/pipeline/build_sm90_feat.sh.
#
# Tiles of 128 queries of one head.  d64: a block per tile, grid x =
# cdiv(seqlen_q, 128), y = heads_q, z = batch; without a causal mask block
# (x, y, z) takes query tile last - x of head y, batch z; with one, blocks
# take the tiles of a group of heads whose K and V fit in L2 longest first
# (attn_block_order: at 2K and 8K keys 2-11% faster for d64: docs/PERF.md).
# d128: persistent, min(work, device_units) blocks along x that walk the
# tiles (attn_walk; with a causal mask the work is pairs of tiles of one
# head, the p-th longest and the p-th shortest); the producer loads the
# next tile's Q (tmap_q) and first K/V blocks while the consumers finish
# the current one, so a tile's set-up overlaps the one before (against a
# block per tile: 2K keys 1-10% faster, 128K 1-6% slower; docs/PERF.md).
# Block: two consumer warpgroups (threads 0 .. 255);
# warpgroup w owns queries q0 + 64 w .. q0 + 64 w + 63.  d128 adds a
# producer warpgroup (threads 256 .. 383, 384 in all) whose one thread
# issues the Q and K/V copies; it hands its registers to the consumers
# (setmaxnreg: 40 and 232 per thread, hk_regs_shrink/grow) and measured 1-7%
# faster at 8K-128K keys than thread 0 of a consumer issuing them
# (docs/PERF.md).  d64 keeps 256 threads, so that two blocks share a
# multiprocessor.
#
# Per warpgroup and K/V block of BLOCK_N keys (d64: 64, d128: 128), wgmma
# bf16 -> fp32:
#   S = Q K^T      m64nBLOCK_Nk16, A = Q and B = K from shared memory
#                  (descriptors), both K-major (head_dim innermost), 128-byte
#                  swizzle.  Lane l of warp w (g = l/4, t = l%4) holds rows
#                  16w + g and 16w + g + 8 of S, keys 8i + 2t, 8i + 2t + 1 of
#                  each n8 tile i: the row max and sum are in-lane reductions
#                  plus two shuffles.
#   online softmax in base 2 (log2(e) folded into the scale: one FFMA and
#                  an exp2 per score when scale > 0), fp32; the running max
#                  moves only when a score passes it by more than 2^8, so
#                  most blocks skip the rescale of O (lazy rescaling).
#   O += P V       m64nDk16 with A = P from registers (the S accumulator rounded
#                  to bf16 pairs is the A fragment as is) and B = V from shared
#                  memory, MN-major ([key][d], d innermost: the transpose bit).
# Intra-warpgroup pipelining (FlashAttention-3): iteration j issues S(j) and
# O += P(j-1) V(j-1) together, computes the softmax of S(j) while the P V
# product runs, then waits for it and rescales O.
#
# Shared memory (dynamic, hkm_dynamic_lds bytes: gen/op_attn.c attn_plan_wgmma):
# the Q tile (BLOCK_M x D), a ring of STAGES K tiles and one of STAGES V
# tiles (BLOCK_N x D each); d64: 5 stages, 97 KiB and at most 128 registers, so
# two blocks share a multiprocessor; d128: 3 stages, 225 KiB, one block.  A
# tile is stored as D/64 slabs of 64 columns (128-byte rows); 16-byte chunk c
# of row r of a slab sits at c ^ r % 8 (the wgmma 128-byte swizzle; tiles
# start on 1024-byte boundaries).  K and V: bulk tensor copies (TMA; kernel
# arguments tmap_k and tmap_v, 4-D maps {head_dim, seqlen_k, heads_k, batch}
# that libhkrt builds) issued by the producer (d128) or consumer thread 0
# (d64) and paced by mbarriers, `full' and `empty' per stage and tensor, no
# block barrier (attn_kv_loop_tma, attn_tile_ws), when both bases are
# 16-byte aligned and every K and V stride (d128: and Q stride) is a
# positive multiple of 8 elements (the runtime's conditions for building the
# maps); otherwise asynchronous copies (cp.async, zero fill past seqlen) by
# the consumers, one copy group and one consumer barrier per K/V block
# (attn_kv_loop).  K and V are loaded STAGES - 1 blocks ahead of their use
# (the producer: as far as the rings allow).  Q: d64, copied by the
# consumers (with bulk copies before the block's set-up, so that it lands
# meanwhile); d128, by the producer (tmap_q, q_full and q_empty), or by the
# consumers on the cp.async path, once per tile.  O: a 4 x 4 transpose of
# 32-bit words within each quad (two rounds of shuffles) gives every lane 16
# consecutive bytes of a row, one 16-byte store (attn_store; 4- or 2-byte
# stores where O's strides or base do not allow 16 bytes, and on d128's
# cp.async path, where 16-byte stores made ptxas spill).
# Keys past seqlen_k are zero rows and are masked to -inf; queries past
# seqlen_q are zero rows and are not stored.  Strides that are not multiples
# of 8 (or unaligned bases) take element loads into the same tiles.
# Causal: blocks past the diagonal are never loaded; masking code runs only
# for blocks that straddle the causal diagonal or seqlen_k.

m4_include([attn_common.m4])
hkm_attn_check_params([64], [128])
hkm_if_true([sinks], [], [])hkm_if_true([varlen], [], [])hkm_param([softcap])
# varlen: a tile's own lengths (attn_tile) instead of the launch's
m4_define([hkm_vl_sq], [hkm_fwd_varlen([w.Sq], [g.Sq])])
m4_define([hkm_vl_sk], [hkm_fwd_varlen([w.Sk], [g.Sk])])
m4_ifelse(hkm_block_size, m4_ifelse(hkm_tune([producer]), [1], [384], [256]), [],
      [hkm_fatal([attn_fwd needs hkm_block_size 384 (with a producer warpgroup) or 256, got ]hkm_block_size)])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;   // two consumer warpgroups (and a producer: d128)
static constexpr int CONS_THREADS = 256;                   // the consumers: threads 0 .. 255
static constexpr bool PRODUCER = ]m4_ifelse(hkm_tune([producer]), [1], [true], [false])[;  // a producer warpgroup: threads 256 .. 383
static_assert(ATTN_THREADS == CONS_THREADS + (PRODUCER ? 128 : 0), "the plan's block size");
// d128: blocks stay resident and walk tiles (attn_main_ws); d64: a block per tile
static constexpr bool PERSIST = ]m4_ifelse(hkm_tune([persistent]), [1], [true], [false])[;
static constexpr int CONS_REGS = 232, PROD_REGS = 40;      // registers per thread after the hand-over
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int WGS = CONS_THREADS / 128;             // consumer warpgroups
static constexpr int WG_M = 64;                            // queries per warpgroup
static constexpr int BLOCK_M = WG_M * WGS;                 // queries per block
// keys per K/V tile: d64 takes 64 (at most 128 registers, which
// tests/build_sm90.sh checks, and 97 KiB of shared memory: two blocks per
// multiprocessor), d128 128 (one block)
static constexpr int BLOCK_N = ]hkm_tune([block_n])[;
static constexpr bool FAST_COPY = true;                    // whole tiles: unrolled copies without bounds checks
static constexpr int CHUNKS = D / 8;                       // 16-byte chunks per row
static constexpr int Q_BYTES = BLOCK_M * D * 2;
static constexpr int Q_SLAB = BLOCK_M * 128;               // bytes of one 64-column slab of Q
static constexpr int KV_SLAB = BLOCK_N * 128;              // ... of K or V
static constexpr int KV_TILE_BYTES = BLOCK_N * D * 2;
static constexpr int STAGE_BYTES = 2 * KV_TILE_BYTES;      // one K and one V buffer
static constexpr int DYNAMIC_LDS = ]hkm_dynamic_lds[;
static constexpr int BAR_BYTES = ]hkm_tune([bar_bytes])[;                      // mbarriers of the bulk-copy path
static constexpr int STAGES = ]hkm_tune([stages])[;                        // K/V ring depth
static constexpr int Q_OFF = 0;
static constexpr int K_OFF = Q_BYTES;                      // K ring: STAGES tiles
static constexpr int V_OFF = Q_BYTES + STAGES * KV_TILE_BYTES;  // V ring: STAGES tiles
static constexpr int BAR_OFF = V_OFF + STAGES * KV_TILE_BYTES;  // mbarriers: full and empty of K and V per stage
static constexpr int WARPS = CONS_THREADS / 32;            // consumer warps
static constexpr int K_STEPS = D / 16;                     // k16 steps of Q K^T
static constexpr int PV_STEPS = BLOCK_N / 16;              // k16 steps of P V
static constexpr int S_TILES = BLOCK_N / 8;                // n8 tiles of S
static constexpr int O_TILES = D / 8;                      // n8 tiles of O
static constexpr bool FOLD_SCALE = true;                   // scale > 0: FFMA softmax (attn_softmax POS)
static constexpr float LAZY_LOG2 = 8.0f;                   // rescale O only when the row max grows by > 2^8
// serving features (baked: a kernel without one has none of its code)
static constexpr bool WIN_L = ]hkm_fwd_winl([true], [false])[;      // a window's left edge
static constexpr bool WIN_R = ]hkm_fwd_winr([true], [false])[;      // its right edge
static constexpr bool SINKS = ]hkm_fwd_sinks([true], [false])[;
static constexpr bool SOFTCAP = ]hkm_fwd_softcap([true], [false])[;
static constexpr float CAP = (float)(]hkm_fwd_softcap([hkm_param([softcap])], [0])[);
static constexpr bool VARLEN = ]hkm_fwd_varlen([true], [false])[;
]hkm_attn_common()[
]hkm_attn_window()[
]hkm_attn_sink()[

static_assert(BLOCK_M == 128, "the grid (op_attn.c) assumes 128 queries per block");
static_assert(BLOCK_N == 64 || BLOCK_N == 128, "S is one m64n64 or m64n128 accumulator");
static_assert(STAGES * STAGE_BYTES + Q_BYTES + BAR_BYTES + HK_LDS_DYNAMIC_SLACK == DYNAMIC_LDS,
              "dynamic_lds must hold Q, the K and V rings and the mbarriers (gen/op_attn.c attn_plan_wgmma)");
static_assert((4 * STAGES + 2) * 8 <= BAR_BYTES, "four mbarriers per stage, two for Q");
static_assert(STAGES >= 3, "K: one read, one or more in flight; V: one read, one landed, one or more in flight");
static_assert(Q_BYTES % 1024 == 0 && KV_TILE_BYTES % 1024 == 0, "swizzled tiles on 1024-byte boundaries");

// wgmma shapes by accumulator type (N = 64 or 128)
HK_DEVICE void attn_wgmma_ss(hk_wgmma_acc64_t &d, unsigned long long a, unsigned long long b, int sc) { hk_wgmma_64x64x16(d, a, b, sc); }
HK_DEVICE void attn_wgmma_ss(hk_wgmma_acc128_t &d, unsigned long long a, unsigned long long b, int sc) { hk_wgmma_64x128x16(d, a, b, sc); }
HK_DEVICE void attn_wgmma_rs(hk_wgmma_acc64_t &d, hk_u32x4 a, unsigned long long b, int sc) { hk_wgmma_rs_64x64x16_tb(d, a, b, sc); }
HK_DEVICE void attn_wgmma_rs(hk_wgmma_acc128_t &d, hk_u32x4 a, unsigned long long b, int sc) { hk_wgmma_rs_64x128x16_tb(d, a, b, sc); }
HK_DEVICE void attn_acc_fence(hk_wgmma_acc64_t &d) { hk_wgmma_rs_fence_acc64(d); }
HK_DEVICE void attn_acc_fence(hk_wgmma_acc128_t &d) { hk_wgmma_rs_fence_acc128(d); }
template <int N> struct attn_acc;
template <> struct attn_acc<64> { typedef hk_wgmma_acc64_t t; };
template <> struct attn_acc<128> { typedef hk_wgmma_acc128_t t; };
typedef attn_acc<D>::t o_acc_t;                            // O: 64 x D per warpgroup
typedef attn_acc<BLOCK_N>::t s_acc_t;                      // S: 64 x BLOCK_N per warpgroup

// Byte offset of 16-byte chunk c of row r in a tile of R rows: slab c / 8,
// chunk c % 8 XOR r % 8 within the row's 128 bytes.
template <int R> HK_DEVICE int swz(int r, int c) { return (c >> 3) * (R * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4); }

// 8 bf16 at src (valid: in range; otherwise zeros) into 16 bytes of shared
// memory at off; `base' is any valid address of the same tensor.
template <bool VEC>
HK_DEVICE void attn_copy_chunk(hk_lds_t lds, int off, const hk_bf16 *src, const hk_bf16 *base, bool valid)
{
    if (VEC) {
        hk_async_load_b128(lds, off, valid ? (const void *)src : (const void *)base, valid ? 16 : 0);
    } else {
        const hk_bf16x8 v = hk_global_load_bf16x8(src, valid ? 8 : 0, false);
        hk_u32x4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            w[j] = (unsigned)v[2 * j] | ((unsigned)v[2 * j + 1] << 16);
        hk_lds_store_b128(lds, off, w);
    }
}

// Rows row0 .. row0 + R - 1 of a [seq][D] head (row stride ss, rows >= n read
// as zeros) into the R-row tile at off.  Thread tid copies chunk tid % CHUNKS
// of rows tid / CHUNKS + j * ROWS_PER_J: its source advances by ROWS_PER_J rows
// and its destination by as many 128-byte rows (a multiple of 8: the same
// swizzle), so only the first address is computed.
static constexpr int ROWS_PER_J = CONS_THREADS / CHUNKS;
static_assert(CONS_THREADS % CHUNKS == 0 && ROWS_PER_J % 8 == 0, "copy rows keep the swizzle");
static_assert(ATTN_THREADS == CONS_THREADS + (PRODUCER ? 128 : 0), "a producer warpgroup after the consumers");
// setmaxnreg only moves registers within what the block got at launch:
// ATTN_THREADS x ptxas's count, which __launch_bounds__ caps at 65536 /
// ATTN_THREADS rounded down to 8 (168 at 384 threads) and which a kernel
// with setmaxnreg takes whole.  Asking for more hangs the consumers (seen on
// the H200 with a d64 variant: docs/PERF.md).
static constexpr int LAUNCH_REGS = 65536 / ATTN_THREADS / 8 * 8;
static_assert(!PRODUCER || CONS_THREADS * CONS_REGS + 128 * PROD_REGS <= ATTN_THREADS * LAUNCH_REGS,
              "the registers handed over fit the block's launch allocation");

// A barrier of the consumer warpgroups only (the producer runs on).
HK_DEVICE void attn_sync(void) { hk_barrier_part(1, CONS_THREADS); }
template <bool VEC, int R>
HK_DEVICE void attn_copy_tile(hk_lds_t lds, int off, const hk_bf16 *head, long ss, int row0, int n)
{
    constexpr int PER_THREAD = R * CHUNKS / CONS_THREADS;
    static_assert(R * CHUNKS % CONS_THREADS == 0, "tiles split into 16-byte chunks evenly");
    const int tid = hk_thread_id();
    const int r = tid / CHUNKS, c = tid % CHUNKS;
    const hk_bf16 *src = head + (long)(row0 + r) * ss + c * 8;
    int dst = off + swz<R>(r, c);
    if (FAST_COPY && VEC && row0 + R <= n) {
        // every row in range: no bounds checks, unrolled
        const long step = (long)ROWS_PER_J * ss;
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            hk_async_load_b128(lds, dst, src, 16);
            dst += ROWS_PER_J * 128;
            src += step;
        }
        return;
    }
    // not unrolled: one source pointer and one offset stay live instead of a
    // 64-bit offset per chunk (about 40 registers in the K/V loop)
#pragma unroll 1
    for (int j = 0; j < PER_THREAD; ++j) {
        attn_copy_chunk<VEC>(lds, dst, src, head, row0 + r + j * ROWS_PER_J < n);
        dst += ROWS_PER_J * 128;
        src += ROWS_PER_J * ss;
    }
}

// One copy group: K block tk into K buffer tk % STAGES and V block tv into V
// buffer tv % STAGES (each only if it exists).
template <bool VEC>
HK_DEVICE void attn_load_kv(hk_lds_t lds, const hk_bf16 *Kh, const hk_bf16 *Vh, long k_ss, long v_ss, int tk,
                            int tv, int n_blocks, int Sk)
{
    if (tk < n_blocks)
        attn_copy_tile<VEC, BLOCK_N>(lds, K_OFF + (tk % STAGES) * KV_TILE_BYTES, Kh, k_ss, tk * BLOCK_N, Sk);
    if (tv >= 0 && tv < n_blocks)
        attn_copy_tile<VEC, BLOCK_N>(lds, V_OFF + (tv % STAGES) * KV_TILE_BYTES, Vh, v_ss, tv * BLOCK_N, Sk);
    hk_async_commit();
}

// ---- the launch's tiles --------------------------------------------------------------
// A tile is 128 queries of one head.  Causal with seqlen_q > seqlen_k leaves
// the first nq - nqb query blocks of every head without a key to see; the
// other `busy' tiles (nqb per head) are numbered t = 0 .. busy - 1: query
// block nq - 1 - t % nqb (the last first: causal ones are the longest), head
// t / nqb % Hq, batch t / nqb / Hq.  The grid is at most as many blocks as
// the device holds at once (op_attn.c), so that the producer loads a block's
// next tile while the consumers finish the current one.  Without a causal
// mask blocks take busy tiles x, x + gridDim.x, ... (x = blockIdx.x); with
// one, pairs of a head's tiles whose costs add up to the same (attn_walk).
// The blocks running at once work on a few heads, whose K and V stay in L2,
// as the query blocks of a head come first.  Counts fit an int: 2^31
// tiles would be 2^38 queries.  (d64: one block per tile, grid x = query
// block, y = head, z = batch.)
struct attn_grid {
    int nq, nqb, Hq, hb, busy, group, Sq, Sk;
    int wl, wr;                                       // the window's edges (WIN_L, WIN_R; -1: none)]hkm_fwd_varlen([[
    const int *cu_q, *cu_k;                           // varlen: cumulative lengths, batch + 1 each
    int batch, qs, ks;                                // ... sequences; a block per tile: its first tokens]])[
};
// n_blocks K/V blocks from key block t0 (WIN_L; else 0)
struct attn_tile {
    int q0, hq, b, n_blocks, t0;]hkm_fwd_varlen([[
    int qs, ks, Sq, Sk;                               // varlen: sequence b's first tokens and lengths
    int u0, c;                                        // ... its first unit and class (attn_walk_vl's cursor)]])[
};

// Query blocks with keys: qb * BLOCK_M + BLOCK_M + Sk - Sq > 0 (attn_tile_at's
// kend > 0), all but the lowest (Sq - Sk) / BLOCK_M ones.
HK_DEVICE int attn_busy_blocks(int nq, int Sq, int Sk)
{
    if (Sk <= 0)
        return 0;                                     // no keys: every tile is empty
    const int e = Sq - Sk - BLOCK_M;
    const int empty = !CAUSAL || e < 0 ? 0 : (e / BLOCK_M + 1 < nq ? e / BLOCK_M + 1 : nq);
    return nq - empty;
}

HK_DEVICE attn_grid attn_grid_make(int Sq, int Sk, int heads_q, int heads_k, int batch, int wl, int wr)
{
    attn_grid g;
    g.Sq = Sq;
    g.Sk = Sk;
    if constexpr (WIN_L || WIN_R) {
        g.wl = wl;
        g.wr = wr;
    }
    g.Hq = heads_q;
    g.group = heads_q / heads_k;
    g.nq = (Sq + BLOCK_M - 1) / BLOCK_M;
    g.nqb = attn_busy_blocks(g.nq, Sq, Sk);
    g.hb = heads_q * batch;
    g.busy = g.nqb * g.hb;
    return g;
}

// The end of the keys the tile at q0 sees (its last query's last key + 1;
// attn_key_end without a right edge) and its first key block (its first
// query's first key: 0 without a left edge).
HK_DEVICE int attn_tile_end(const attn_grid &g, int q0)
{
    return WIN_R ? attn_hi(q0 + BLOCK_M - 1, g.Sq, g.Sk, g.wr) + 1 : attn_key_end(q0, g.Sq, g.Sk);
}
HK_DEVICE int attn_tile_first(const attn_grid &g, int q0) { return WIN_L ? attn_lo(q0, g.Sq, g.Sk, g.wl) / BLOCK_N : 0; }

// WIN_L: the tile's blocks start at t0 (n_blocks: its key blocks up to the
// end, then from t0 on).  Called under `if constexpr (WIN_L)' only: even an
// empty call on w changed ptxas's input for the plain kernels.
HK_DEVICE void attn_tile_from(const attn_grid &g, attn_tile &w)
{
    w.t0 = attn_tile_first(g, w.q0);
    w.n_blocks = w.n_blocks > w.t0 ? w.n_blocks - w.t0 : 0;
}

HK_DEVICE attn_tile attn_tile_at(const attn_grid &g, int t)
{
    attn_tile w;
    const int r = t / g.nqb;
    w.q0 = (g.nq - 1 - (t - r * g.nqb)) * BLOCK_M;
    w.hq = r % g.Hq;
    w.b = r / g.Hq;
    w.n_blocks = (attn_key_end(w.q0, g.Sq, g.Sk) + BLOCK_N - 1) / BLOCK_N;  // a busy tile has keys
    return w;
}

// The k-th tile of this block (k = 0, 1, ...); false past its last.  Without
// a causal mask busy tiles x, x + gridDim.x, ... (x = blockIdx.x); with one,
// units x, x + gridDim.x, ... of two tiles of one head, the p-th longest and
// the p-th shortest (tiles k = 2u, 2u + 1), whose costs add up to about the
// same in every unit; the middle tile of an odd count comes once
// (n_blocks = 0 the second time: skipped).
]hkm_fwd_varlen([[HK_DEVICE bool attn_walk_vl(const attn_grid &g, int k, attn_tile &w);
]])[HK_DEVICE bool attn_walk(const attn_grid &g, int k, attn_tile &w)
{]hkm_fwd_varlen([[
    return attn_walk_vl(g, k, w);]])[
    if (!CAUSAL) {
        const int t = hk_block_id_x() + k * hk_grid_dim_x();
        if (t >= g.busy)
            return false;
        w = attn_tile_at(g, t);
        return true;
    }
    const int per_head = (g.nqb + 1) / 2;
    const int unit = hk_block_id_x() + (k >> 1) * hk_grid_dim_x();
    if (unit >= per_head * g.hb)
        return false;
    const int r = unit / per_head, p = unit - r * per_head;
    const int i = (k & 1) ? g.nqb - 1 - p : p;
    w = attn_tile_at(g, r * g.nqb + i);
    if ((k & 1) && i == p)
        w.n_blocks = 0;
    return true;
}

]hkm_fwd_varlen([[// ---- varlen: the walk over packed sequences ----------------------------------------
// Sequence b's first tokens and lengths into w (loads of cu_seqlens, which
// L1 keeps: every thread of the block reads the same words).
HK_DEVICE void attn_vl_seq(const attn_grid &g, attn_tile &w, int b)
{
    w.b = b;
    w.qs = hk_global_load_i32(g.cu_q + b);
    w.Sq = hk_global_load_i32(g.cu_q + b + 1) - w.qs;
    w.ks = hk_global_load_i32(g.cu_k + b);
    w.Sk = hk_global_load_i32(g.cu_k + b + 1) - w.ks;
}
HK_DEVICE int attn_nq(int Sq) { return (Sq + BLOCK_M - 1) / BLOCK_M; }
// Units per head of the sequence in w: its busy tiles (causal: pairs of them).
HK_DEVICE int attn_vl_per_head(const attn_tile &w)
{
    const int nqb = attn_busy_blocks(attn_nq(w.Sq), w.Sq, w.Sk);
    return CAUSAL ? (nqb + 1) / 2 : nqb;
}
// Empty tiles per head of the sequence in w (causal with Sq > Sk, or no keys).
HK_DEVICE int attn_vl_empty(const attn_tile &w)
{
    return attn_nq(w.Sq) - attn_busy_blocks(attn_nq(w.Sq), w.Sq, w.Sk);
}
// A sequence's cost class: floor(log2) of its key blocks (about what one
// of its units costs: a causal pair nq + 1 blocks, a non-causal tile all of
// them), at most top.
HK_DEVICE int attn_vl_class(int Sk, int top)
{
    int c = 0;
    for (int kb = attn_key_blocks(Sk); kb > 1 && c < top; kb >>= 1)
        ++c;
    return c;
}
// VL_ORDER: the busy units go class by class, the costliest first (top: the
// class of seqlen_k, the longest sequence's keys), so that the cheap ones
// fill the end of the launch (as attn_walk's longest tiles first); within a
// class, sequence after sequence.
static constexpr bool VL_ORDER = ]hkm_tune([vl_order])[;
// Moves w's cursor on to the sequence that holds unit u (units counted per
// head by attn_vl_empty when EMPTY, else attn_vl_per_head, times heads, in
// the order above; the empty tiles sequence after sequence); false past the
// last.  k == 0 starts the walk.  A block's units only grow, so the cursor
// only moves forward: a walk reads each sequence's lengths once per class.
template <bool EMPTY>
HK_DEVICE bool attn_vl_seek(const attn_grid &g, int k, int u, attn_tile &w)
{
    constexpr bool CLS = VL_ORDER && !EMPTY;
    const int top = CLS ? attn_vl_class(g.Sk, 30) : 0;
    const auto units = [&](const attn_tile &t) {
        if (EMPTY)
            return attn_vl_empty(t) * g.Hq;
        return !CLS || attn_vl_class(t.Sk, top) == t.c ? attn_vl_per_head(t) * g.Hq : 0;
    };
    if (k == 0) {
        w.u0 = 0;
        w.c = top;
        attn_vl_seq(g, w, 0);
    }
    for (int n = units(w); u >= w.u0 + n; n = units(w)) {
        int next = w.b + 1;
        if (next >= g.batch) {
            if (!CLS || w.c == 0)
                return false;
            --w.c;                                        // the next class, from the first sequence
            next = 0;
        }
        w.u0 += n;
        attn_vl_seq(g, w, next);
    }
    return true;
}
// attn_walk's units over the sequences: unit u = sequence (in the order
// above), head, then p (the pair or tile of the head), tiles as attn_tile_at
// has them per sequence (the last query block first; causal: the p-th
// longest and the p-th shortest).
HK_DEVICE bool attn_walk_vl(const attn_grid &g, int k, attn_tile &w)
{
    const int u = hk_block_id_x() + (CAUSAL ? k >> 1 : k) * hk_grid_dim_x();
    if (!attn_vl_seek<false>(g, k, u, w))
        return false;
    const int per_head = attn_vl_per_head(w), nq = attn_nq(w.Sq), nqb = attn_busy_blocks(nq, w.Sq, w.Sk);
    const int r = (u - w.u0) / per_head, p = u - w.u0 - r * per_head;
    const int i = CAUSAL && (k & 1) ? nqb - 1 - p : p;
    w.q0 = (nq - 1 - i) * BLOCK_M;
    w.hq = r;
    w.t0 = 0;
    w.n_blocks = attn_key_blocks(attn_key_end(w.q0, w.Sq, w.Sk));
    if (CAUSAL && (k & 1) && i == p)
        w.n_blocks = 0;
    return true;
}
]])[
// Empty tile e (0 .. (nq - nqb) hb - 1): query block e % (nq - nqb), head and
// batch from e / (nq - nqb).
HK_DEVICE attn_tile attn_empty_tile_at(const attn_grid &g, int e)
{
    attn_tile w;
    const int ne = g.nq - g.nqb, r = e / ne;
    w.q0 = (e - r * ne) * BLOCK_M;
    w.hq = r % g.Hq;
    w.b = r / g.Hq;
    w.n_blocks = 0;
    return w;
}

// Where this lane's rows stop seeing keys: wg_full, the last key every row of
// the warpgroup sees (warpgroup-uniform: blocks up to it skip the mask); klim,
// the last key of rows row0 and row0 + 8.
HK_DEVICE void attn_tile_limits(const attn_grid &g, const attn_tile &w, int wg, int row0, int &wg_full,
                                int (&klim)[2])
{
    if constexpr (WIN_R) {
        wg_full = attn_hi(w.q0 + wg * WG_M, g.Sq, g.Sk, g.wr);
#pragma unroll
        for (int h = 0; h < 2; ++h)
            klim[h] = attn_hi(w.q0 + row0 + 8 * h, g.Sq, g.Sk, g.wr);
        return;
    }
    wg_full = attn_last_key(w.q0 + wg * WG_M, ]hkm_vl_sq[, ]hkm_vl_sk[);
#pragma unroll
    for (int h = 0; h < 2; ++h)
        klim[h] = attn_last_key(w.q0 + row0 + 8 * h, ]hkm_vl_sq[, ]hkm_vl_sk[);
}

// A window's masks in a tile (WIN_L or WIN_R), from warp-uniform values
// and the lane's row0 (live anyway): row r of the tile sits at key position
// ip0 + r (bottom-right aligned) and sees keys ip0 + r - leff .. min(ip0 + r
// + reff, skm1), an open edge 2^30 away (keys are never negative: no clamp
// at 0).  Per-lane bounds (klim and a low bound per row) made d128's
// cp.async path spill; uniform ones cost no per-thread register.
struct attn_win {
    int ip0, reff, leff, skm1, row0;
};
HK_DEVICE void attn_tile_window(const attn_grid &g, const attn_tile &w, int row0, attn_win &x)
{
    x.ip0 = w.q0 + (g.Sk - g.Sq);
    x.reff = CAUSAL ? 0 : WIN_R && g.wr >= 0 ? g.wr : 1 << 30;
    x.leff = WIN_L && g.wl >= 0 ? g.wl : 1 << 30;
    x.skm1 = g.Sk - 1;
    x.row0 = row0;
}
// The persistent path (PERSIST) has no window (gen/op_attn.c plans window
// kernels a block per tile: with the producer d128's consumers spilled).
static_assert(!PERSIST || !(WIN_L || WIN_R), "windows take a block per tile (op_attn.c attn_plan_wgmma)");
// The tile's first K/V block (w.t0, attn_tile_first): its first row's first key's.
HK_DEVICE int attn_win_t0(const attn_win &x) { return x.ip0 - x.leff > 0 ? (x.ip0 - x.leff) / BLOCK_N : 0; }

// The tile's rows see keys from lo(q0) <= (t0 + 1) BLOCK_N - 1 to lo(q0 +
// BLOCK_M - 1) <= lo(q0) + BLOCK_M - 1: blocks j >= LOW_J (counted from t0)
// lie wholly above every row's first key and skip the low mask, a constant
// instead of a per-warpgroup bound (one register fewer).
static constexpr int LOW_J = 1 + (BLOCK_M - 1 + BLOCK_N - 1) / BLOCK_N;

// ---- bulk tensor copies (TMA) of K and V, paced by mbarriers ------------------------
// Per stage s: k_full(s) / v_full(s) (one arrival with the tile's bytes: the
// copy engine's block landed) and k_empty(s) / v_empty(s) (one arrival per
// warp: its wgmma reading the block has completed).  Block t of a ring uses
// stage t % STAGES, its phase t / STAGES.
HK_DEVICE int k_full(int s) { return BAR_OFF + 8 * s; }
HK_DEVICE int v_full(int s) { return BAR_OFF + 8 * (STAGES + s); }
HK_DEVICE int k_empty(int s) { return BAR_OFF + 8 * (2 * STAGES + s); }
HK_DEVICE int v_empty(int s) { return BAR_OFF + 8 * (3 * STAGES + s); }
HK_DEVICE int q_full() { return BAR_OFF + 8 * (4 * STAGES); }      // d128: Q landed (expect_tx)
HK_DEVICE int q_empty() { return BAR_OFF + 8 * (4 * STAGES + 1); }  // d128: every consumer warp done with Q

// The mbarriers of the bulk-copy path, by one thread: the rings' and, where
// the producer loads Q (d128), q_full and q_empty; a block barrier must
// follow before any thread uses them.
HK_DEVICE void attn_mbar_setup(hk_lds_t lds)
{
    for (int s = 0; s < STAGES; ++s) {
        hk_mbar_init(lds, k_full(s), 1);
        hk_mbar_init(lds, v_full(s), 1);
        hk_mbar_init(lds, k_empty(s), WARPS);
        hk_mbar_init(lds, v_empty(s), WARPS);
    }
    if constexpr (PRODUCER) {
        hk_mbar_init(lds, q_full(), 1);
        hk_mbar_init(lds, q_empty(), WARPS);
    }
    hk_mbar_init_fence();
}

// The copying thread: K/V block blk (keys blk * BLOCK_N .., KV head hkv,
// batch b; varlen: b is the sequence's first key token) as the pos-th block of the ring at ring_off (d64: pos = blk; d128:
// counted over the block's tiles), once the consumers have released the
// stage's previous block (pos - STAGES): D / 64 boxes of 64 columns x
// BLOCK_N keys, the 128-byte swizzle of the slabs; keys past seqlen_k read
// zeros.
HK_DEVICE void attn_tma_fill(hk_lds_t lds, int ring_off, int full0, int empty0, const hk_tmap *map, int pos, int blk,
                             int hkv, int b)
{
    const int s = pos % STAGES;
    if (pos >= STAGES)
        hk_mbar_wait(lds, empty0 + 8 * s, (pos / STAGES + 1) & 1);
    hk_mbar_arrive_expect_tx(lds, full0 + 8 * s, KV_TILE_BYTES);
#pragma unroll
    for (int sl = 0; sl < D / 64; ++sl)
        if constexpr (VARLEN)
            hk_tma_load_3d(lds, ring_off + s * KV_TILE_BYTES + sl * KV_SLAB, map, sl * 64, b + blk * BLOCK_N, hkv,
                           full0 + 8 * s);
        else
            hk_tma_load_4d(lds, ring_off + s * KV_TILE_BYTES + sl * KV_SLAB, map, sl * 64, blk * BLOCK_N, hkv, b,
                           full0 + 8 * s);
}

// ---- the two products of one warpgroup (issued, not waited for) ------------------
// wgmma descriptors, built once before a K/V loop: this warpgroup's rows of
// the Q tile and stage 0 of the K and V rings.  A stage or a k-step is then a
// constant add (hk_wgmma_desc_add), so that no HGMMA waits on a descriptor's
// mask-shift-or chain (the persistent kernels' loops did: docs/PERF.md).
struct attn_descs {
    unsigned long long q, k, v;
};
HK_DEVICE attn_descs attn_descs_make(hk_lds_t lds, int wg)
{
    return {hk_wgmma_desc(lds, Q_OFF + wg * WG_M * 128, 16, 1024, 1), hk_wgmma_desc(lds, K_OFF, 16, 1024, 1),
            hk_wgmma_desc(lds, V_OFF, KV_SLAB, 1024, 1)};
}
HK_DEVICE unsigned long long attn_desc_k(const attn_descs &d, int st)
{
    return hk_wgmma_desc_add(d.k, st * KV_TILE_BYTES);
}
HK_DEVICE unsigned long long attn_desc_v(const attn_descs &d, int st)
{
    return hk_wgmma_desc_add(d.v, st * KV_TILE_BYTES);
}

// S = Q K^T: A = the warpgroup's 64 rows of Q (qd), B = a K tile (kd); a
// k16 step inside a 128-byte row adds 32 bytes to the start address, a slab
// adds the slab's bytes.
HK_DEVICE void attn_issue_s(unsigned long long qd, unsigned long long kd, s_acc_t &s)
{
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk) {
        const int step = (kk & 3) * 32;
        attn_wgmma_ss(s, hk_wgmma_desc_add(qd, (kk >> 2) * Q_SLAB + step),
                      hk_wgmma_desc_add(kd, (kk >> 2) * KV_SLAB + step), kk > 0);
    }
}

// O += P V: A = P (registers), B = a V tile (vd), MN-major: a k16 step is 16
// key rows (2048 bytes), the 64-column slabs are KV_SLAB apart (lbo).
HK_DEVICE void attn_issue_pv(unsigned long long vd, const hk_u32x4 (&p)[PV_STEPS], o_acc_t &o)
{
#pragma unroll
    for (int ks = 0; ks < PV_STEPS; ++ks)
        attn_wgmma_rs(o, p[ks], hk_wgmma_desc_add(vd, ks * 16 * 128), 1);
}

// ---- online softmax of one S block ---------------------------------------------------
// Scale (base 2), mask (MASKED: keys > klim[h] of row h are -inf), row max
// (in lane, then over the quad), P = exp2(S - m) as bf16 A fragments (step
// ks = n8 tiles 2ks (words 0, 1) and 2ks + 1 (words 2, 3)), row sums.
// m_run: running max of the scaled scores of rows g, g + 8; l_run: this
// lane's partial sums (the quad is added at the end); alpha: the factor the
// previous O must be scaled by.  POS (scale > 0): the max of the raw scores
// scales to the max of the scaled ones, and P = exp2(s * c - m) is one FFMA.
// SOFTCAP: c is scale / cap; the scores become tanh(s c), whose base-2
// scale cap * log2(e) is positive: the FFMA form whatever POS says.  WIN_L,
// WIN_R: the bounds come from win (attn_tile_window), not klim.
template <bool MASKED, bool POS>
HK_DEVICE void attn_softmax(s_acc_t &s, float c, int kb, const int (&klim)[2], const attn_win &win,
                            float (&m_run)[2], float (&l_run)[2], float (&alpha)[2], hk_u32x4 (&p)[PV_STEPS])
{
    constexpr bool FOLD = POS || SOFTCAP;                 // P = exp2(s * f - m)
    const float f = SOFTCAP ? CAP * LOG2E : c;
    const int lane = hk_lane_id();
    const float neg_inf = -__builtin_huge_valf();
    float mx[2] = {neg_inf, neg_inf};
    int whi[2] = {0, 0}, wlo[2] = {0, 0};                // a window's bounds of rows row0, row0 + 8
    if constexpr (MASKED && (WIN_L || WIN_R)) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int ip = win.ip0 + win.row0 + 8 * h;
            whi[h] = ip + win.reff < win.skm1 ? ip + win.reff : win.skm1;
            wlo[h] = ip - win.leff;
        }
    }
#pragma unroll
    for (int i = 0; i < S_TILES; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            float x = SOFTCAP ? hk_tanhf(s[4 * i + e] * c) : POS ? s[4 * i + e] : s[4 * i + e] * c;
            if (MASKED) {
                const int key = kb + i * 8 + (lane & 3) * 2 + (e & 1);
                if constexpr (WIN_L || WIN_R) {
                    if (key > whi[e >> 1] || key < wlo[e >> 1])
                        x = neg_inf;
                } else if (key > klim[e >> 1]) {
                    x = neg_inf;
                }
            }
            s[4 * i + e] = x;
            mx[e >> 1] = hk_maxf(mx[e >> 1], x);
        }
    float neg_m[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        mx[h] = hk_maxf(mx[h], hk_shfl_xor_f32(mx[h], 1));
        mx[h] = hk_maxf(mx[h], hk_shfl_xor_f32(mx[h], 2));
        if (FOLD)
            mx[h] *= f;                                       // -inf stays -inf
        // lazy rescaling: the running max moves only when a score exceeds it
        // by more than 2^LAZY_LOG2; P then stays below 2^LAZY_LOG2 (fine in
        // bf16 and fp32), O and l keep their common scale, and most blocks
        // skip the rescale of O (attn_rescale)
        const float m_new = mx[h] > m_run[h] + LAZY_LOG2 ? mx[h] : m_run[h];  // -inf + 8 = -inf
        const float m_use = m_new == neg_inf ? 0.0f : m_new;  // no key seen yet: keep exp2 finite
        alpha[h] = hk_exp2f(m_run[h] - m_use);             // 1 when the max stays (the skip's test)
        neg_m[h] = -m_use;
        m_run[h] = m_new;
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < S_TILES; ++i) {
        const float e0 = hk_exp2f(FOLD ? s[4 * i] * f + neg_m[0] : s[4 * i] + neg_m[0]);
        const float e1 = hk_exp2f(FOLD ? s[4 * i + 1] * f + neg_m[0] : s[4 * i + 1] + neg_m[0]);
        const float e2 = hk_exp2f(FOLD ? s[4 * i + 2] * f + neg_m[1] : s[4 * i + 2] + neg_m[1]);
        const float e3 = hk_exp2f(FOLD ? s[4 * i + 3] * f + neg_m[1] : s[4 * i + 3] + neg_m[1]);
        sum[0] += e0 + e1;
        sum[1] += e2 + e3;
        p[i / 2][(i % 2) * 2] = hk_f32x2_to_bf16x2(e0, e1);
        p[i / 2][(i % 2) * 2 + 1] = hk_f32x2_to_bf16x2(e2, e3);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
        l_run[h] = l_run[h] * alpha[h] + sum[h];
}

// O *= alpha per row, skipped by the whole warp when none of its rows moved
// its max (lazy rescaling, attn_softmax).  Correctness never rests on the
// skip: O and l are scaled by the same alpha whether it is 1 or not.
HK_DEVICE void attn_rescale(o_acc_t &o, const float (&alpha)[2])
{
    if (!hk_warp_any(alpha[0] != 1.0f || alpha[1] != 1.0f))
        return;
#pragma unroll
    for (int i = 0; i < O_TILES; ++i) {
        o[4 * i] *= alpha[0];
        o[4 * i + 1] *= alpha[0];
        o[4 * i + 2] *= alpha[1];
        o[4 * i + 3] *= alpha[1];
    }
}

// ---- the K/V loop of one block ---------------------------------------------------
// Copy groups, one per iteration: iteration i issues K(i + STAGES - 1) and
// V(i + STAGES - 2) (the prologue stands for iterations 1 - STAGES .. -1, Q in
// its first group).  Iteration j needs K(j) and V(j - 1): the group of
// iteration j - STAGES + 1, with STAGES - 2 younger groups allowed pending.
// K(j + STAGES - 1) refills K(j - 1)'s buffer, read by S(j - 1); V(j + STAGES
// - 2) refills V(j - 2)'s, read by P V of iteration j - 1: both complete in
// every warpgroup before iteration j's barrier.  So K is loaded STAGES - 1
// iterations before its use and V as many.
// wg_full: the last key every row of the warpgroup sees (warpgroup-uniform);
// klim: per row of the lane.  WIN_L: the tile's blocks start at key block
// attn_win_t0(win), so K and V are read from that block on (blocks counted from it).
template <bool VEC, bool POS>
HK_DEVICE void attn_kv_loop(hk_lds_t lds, const hk_bf16 *Qh, const hk_bf16 *Kh, const hk_bf16 *Vh, long q_ss,
                            long k_ss, long v_ss, int q0, int Sq, int Sk, int n_blocks, int wg, int wg_full,
                            const int (&klim)[2], const attn_win &win, float c, float (&m_run)[2],
                            float (&l_run)[2], o_acc_t &o)
{
    attn_copy_tile<VEC, BLOCK_M>(lds, Q_OFF, Qh, q_ss, q0, Sq);
    if constexpr (WIN_L) {
        const int kb0 = attn_win_t0(win) * BLOCK_N;
        Kh += (long)kb0 * k_ss;
        Vh += (long)kb0 * v_ss;
        Sk -= kb0;
    }
#pragma unroll
    for (int i = 1 - STAGES; i < 0; ++i)
        attn_load_kv<VEC>(lds, Kh, Vh, k_ss, v_ss, i + STAGES - 1, i + STAGES - 2, n_blocks, Sk);

    hk_u32x4 p[PV_STEPS];
    float alpha[2];
    const attn_descs dsc = attn_descs_make(lds, wg);
    for (int j = 0; j < n_blocks; ++j) {
        int kb = j * BLOCK_N;
        if constexpr (WIN_L)
            kb += attn_win_t0(win) * BLOCK_N;             // the tile's first key block
        hk_async_wait<STAGES - 2>();
        hk_fence_proxy_async();
        attn_sync();

        s_acc_t s;
        hk_wgmma_fence();
        attn_issue_s(dsc.q, attn_desc_k(dsc, j % STAGES), s);
        hk_wgmma_commit();
        if (j > 0)
            attn_issue_pv(attn_desc_v(dsc, (j - 1) % STAGES), p, o);
        hk_wgmma_commit();
        attn_load_kv<VEC>(lds, Kh, Vh, k_ss, v_ss, j + STAGES - 1, j + STAGES - 2, n_blocks, Sk);

        hk_wgmma_wait<1>();                               // S(j)
        attn_acc_fence(s);
        hk_u32x4 pn[PV_STEPS];
        bool masked = kb + BLOCK_N - 1 > wg_full;
        if constexpr (WIN_L)
            masked = masked || j < LOW_J;
        if (masked)
            attn_softmax<true, POS>(s, c, kb, klim, win, m_run, l_run, alpha, pn);
        else
            attn_softmax<false, POS>(s, c, kb, klim, win, m_run, l_run, alpha, pn);
        hk_wgmma_wait<0>();                               // O += P(j - 1) V(j - 1)
        attn_acc_fence(o);
        attn_rescale(o, alpha);
#pragma unroll
        for (int i = 0; i < PV_STEPS; ++i)
            p[i] = pn[i];
    }
    if (n_blocks > 0) {
        // V(n_blocks - 1): the group after the last one waited for
        hk_async_wait<STAGES - 2>();
        hk_fence_proxy_async();
        attn_sync();
        hk_wgmma_fence();
        attn_issue_pv(attn_desc_v(dsc, (n_blocks - 1) % STAGES), p, o);
        hk_wgmma_commit();
        hk_wgmma_wait<0>();
        attn_acc_fence(o);
    }
    hk_async_wait<0>();
}

// ---- the K/V loop with bulk tensor copies (d64: one tile per block) -------------------
// Consumer thread 0 issues K(j + STAGES - 1) and V(j + STAGES - 2) in
// iteration j after the wgmma issues (the first ones before the loop), each
// into its ring's stage once the consumers released the block before it
// there (K(j - 1): S(j - 1) completed in every warp; V(j - 2): P V(j - 2)
// completed).  The consumers wait k_full before S(j) and v_full before P V(j
// - 1), the same products and schedule as attn_kv_loop, without a barrier.
// Q is copied by the consumers (cp.async) once.  (d128: attn_tile_ws, fed
// by the producer warpgroup across tiles.)
// WIN_L: ring position j holds key block attn_win_t0(win) + j.
template <bool POS>
HK_DEVICE void attn_kv_loop_tma(hk_lds_t lds, const hk_tmap *tk, const hk_tmap *tv, int hkv, int b, int n_blocks,
                                int wg, int wg_full, const int (&klim)[2], const attn_win &win, float c,
                                float (&m_run)[2], float (&l_run)[2], o_acc_t &o)
{
    const int lane = hk_lane_id();
    const bool leader = !PRODUCER && hk_thread_id() == 0;
    const int t0 = WIN_L ? attn_win_t0(win) : 0;
    if (leader) {
        hk_tmap_prefetch(tk);
        hk_tmap_prefetch(tv);
        for (int t = 0; t < STAGES - 1 && t < n_blocks; ++t)
            attn_tma_fill(lds, K_OFF, k_full(0), k_empty(0), tk, t, t0 + t, hkv, b);
        for (int t = 0; t < STAGES - 2 && t < n_blocks; ++t)
            attn_tma_fill(lds, V_OFF, v_full(0), v_empty(0), tv, t, t0 + t, hkv, b);
    }
    hk_async_wait<0>();                                 // Q (issued at the kernel's start)
    hk_fence_proxy_async();
    attn_sync();                                        // Q landed

    hk_u32x4 p[PV_STEPS];
    float alpha[2];
    const attn_descs dsc = attn_descs_make(lds, wg);
    for (int j = 0; j < n_blocks; ++j) {
        int kb = j * BLOCK_N;
        if constexpr (WIN_L)
            kb += attn_win_t0(win) * BLOCK_N;             // the tile's first key block
        const int sk = j % STAGES, sv = (j + STAGES - 1) % STAGES;  // stages of K(j), V(j - 1)
        hk_mbar_wait(lds, k_full(sk), (j / STAGES) & 1);

        s_acc_t s;
        hk_wgmma_fence();
        attn_issue_s(dsc.q, attn_desc_k(dsc, sk), s);
        hk_wgmma_commit();
        if (j > 0) {
            hk_mbar_wait(lds, v_full(sv), ((j - 1) / STAGES) & 1);
            attn_issue_pv(attn_desc_v(dsc, sv), p, o);
        }
        hk_wgmma_commit();
        if (leader) {
            if (j + STAGES - 1 < n_blocks)
                attn_tma_fill(lds, K_OFF, k_full(0), k_empty(0), tk, j + STAGES - 1, t0 + j + STAGES - 1, hkv, b);
            if (j + STAGES - 2 < n_blocks)
                attn_tma_fill(lds, V_OFF, v_full(0), v_empty(0), tv, j + STAGES - 2, t0 + j + STAGES - 2, hkv, b);
        }

        hk_wgmma_wait<1>();                               // S(j)
        attn_acc_fence(s);
        if (lane == 0)
            hk_mbar_arrive(lds, k_empty(sk));
        hk_u32x4 pn[PV_STEPS];
        bool masked = kb + BLOCK_N - 1 > wg_full;
        if constexpr (WIN_L)
            masked = masked || j < LOW_J;
        if (masked)
            attn_softmax<true, POS>(s, c, kb, klim, win, m_run, l_run, alpha, pn);
        else
            attn_softmax<false, POS>(s, c, kb, klim, win, m_run, l_run, alpha, pn);
        hk_wgmma_wait<0>();                               // O += P(j - 1) V(j - 1)
        attn_acc_fence(o);
        if (j > 0 && lane == 0)
            hk_mbar_arrive(lds, v_empty(sv));
        attn_rescale(o, alpha);
#pragma unroll
        for (int i = 0; i < PV_STEPS; ++i)
            p[i] = pn[i];
    }
    if (n_blocks > 0) {
        const int sv = (n_blocks - 1) % STAGES;
        hk_mbar_wait(lds, v_full(sv), ((n_blocks - 1) / STAGES) & 1);
        hk_wgmma_fence();
        attn_issue_pv(attn_desc_v(dsc, sv), p, o);
        hk_wgmma_commit();
        hk_wgmma_wait<0>();
        attn_acc_fence(o);
    }
}

// ---- block order ----------------------------------------------------------------
// The hardware starts blocks in linear order (x fastest).  Without a causal
// mask every tile costs the same: x = query tile (last first), y = head, z =
// batch.  With one, tiles cost 1 .. n K/V blocks; taking the heads in groups
// whose K and V fit in L2 (ORDER_L2_BYTES: every block of a group rereads
// them) and, within a group, the longest tiles of all its heads first lets
// the short ones fill the end of the launch (2K and 8K keys: about 5% less
// idle time in a list-scheduling model of 132 multiprocessors).  Query heads
// that share a KV head are adjacent, so a group holds whole KV heads.
static constexpr long ORDER_L2_BYTES = 16L << 20;
HK_DEVICE void attn_block_order(int tiles, int heads_q, int batch, int ratio, int Sk, int &tile, int &hq, int &b)
{
    const int x = hk_block_id_x(), y = hk_block_id_y(), z = hk_block_id_z();
    if (!CAUSAL) {
        tile = tiles - 1 - x;
        hq = y;
        b = z;
        return;
    }
    const long kv_bytes = (long)Sk * D * 4;             // K and V of one KV head, bf16
    const long kv_heads = kv_bytes > 0 ? ORDER_L2_BYTES / kv_bytes : ORDER_L2_BYTES;
    const int heads = heads_q * batch;                  // (batch, query head) pairs, head fastest
    const int group = (int)(kv_heads < 1 ? ratio : kv_heads * ratio < heads ? kv_heads * ratio : heads);
    const int lin = x + tiles * (y + heads_q * z);
    const int g0 = lin / (group * tiles) * group;       // first pair of this block's group
    const int in_group = heads - g0 < group ? heads - g0 : group;
    const int r = lin - g0 * tiles;
    const int pair = g0 + r % in_group;
    tile = tiles - 1 - r / in_group;
    hq = pair % heads_q;
    b = pair / heads_q;
}

// ---- d128: the producer warpgroup and the consumers' tiles ------------------------------
// Q of tile w (D / 64 boxes of 64 columns x 128 queries; queries past
// seqlen_q read zeros) into the Q tile, on q_full.
HK_DEVICE void attn_tma_q(hk_lds_t lds, const hk_tmap *map, const attn_tile &w)
{
    hk_mbar_arrive_expect_tx(lds, q_full(), Q_BYTES);
#pragma unroll
    for (int sl = 0; sl < D / 64; ++sl)]hkm_fwd_varlen([[
        hk_tma_load_3d(lds, Q_OFF + sl * Q_SLAB, map, sl * 64, w.qs + w.q0, w.hq, q_full());]], [[
        hk_tma_load_4d(lds, Q_OFF + sl * Q_SLAB, map, sl * 64, w.q0, w.hq, w.b, q_full());]])[
}

// The producer (one thread): for each of the block's tiles, its K and V
// blocks at ring positions pos, pos + 1, ... (the rings run on from tile to
// tile), and its Q once the consumers are done with the last one (q_empty).
// Q of the first tile goes first; that of a later tile after its first
// STAGES - 1 K/V blocks, whose stages free up while the consumers still work
// on the previous tile, so they load during its last iterations (the later
// ones wait for stages that this tile's own products release, which need
// its Q).
HK_DEVICE void attn_produce_tiles(hk_lds_t lds, const attn_grid &g, const hk_tmap *tq, const hk_tmap *tk,
                                  const hk_tmap *tv)
{
    hk_tmap_prefetch(tq);
    hk_tmap_prefetch(tk);
    hk_tmap_prefetch(tv);
    int pos = 0, it = 0;
    attn_tile w;
    for (int k = 0; attn_walk(g, k, w); ++k) {
        if (w.n_blocks == 0)
            continue;
        const int hkv = w.hq / g.group;
        const int early = it == 0 ? 0 : w.n_blocks < STAGES - 1 ? w.n_blocks : STAGES - 1;
        for (int j = 0; j < w.n_blocks; ++j) {
            if (j == early) {
                if (it > 0)
                    hk_mbar_wait(lds, q_empty(), (it - 1) & 1);
                attn_tma_q(lds, tq, w);
            }
            attn_tma_fill(lds, K_OFF, k_full(0), k_empty(0), tk, pos + j, j, hkv, ]hkm_fwd_varlen([[w.ks]], [[w.b]])[);
            attn_tma_fill(lds, V_OFF, v_full(0), v_empty(0), tv, pos + j, j, hkv, ]hkm_fwd_varlen([[w.ks]], [[w.b]])[);
        }
        if (early == w.n_blocks) {                    // fewer than STAGES - 1 blocks: Q after them
            if (it > 0)
                hk_mbar_wait(lds, q_empty(), (it - 1) & 1);
            attn_tma_q(lds, tq, w);
        }
        pos += w.n_blocks;
        ++it;
    }
}

// One tile of the consumers: the products and schedule of attn_kv_loop_tma
// at ring positions pos .. pos + n_blocks - 1, no copies issued; after the
// tile's last S every consumer warp arrives at q_empty, and after its last
// P V at that stage's v_empty (the producer refills it for the next tile).
// n_blocks > 0.
template <bool POS>
HK_DEVICE void attn_tile_ws(hk_lds_t lds, int pos, int n_blocks, int wg, int wg_full, const int (&klim)[2], float c,
                            float (&m_run)[2], float (&l_run)[2], o_acc_t &o)
{
    const int lane = hk_lane_id();
    attn_win win = {};                                    // no window here (PERSIST)
    hk_u32x4 p[PV_STEPS];
    float alpha[2];
    const attn_descs dsc = attn_descs_make(lds, wg);
    // ring stage and phase of K(j) and of V(j - 1), carried as counters: no
    // division by STAGES in the loop
    int sk = pos % STAGES, ph = (pos / STAGES) & 1, sv = 0, ph_v = 0;
    for (int j = 0; j < n_blocks; ++j) {
        const int kb = j * BLOCK_N;
        hk_mbar_wait(lds, k_full(sk), ph);

        s_acc_t s;
        hk_wgmma_fence();
        attn_issue_s(dsc.q, attn_desc_k(dsc, sk), s);
        hk_wgmma_commit();
        if (j > 0) {
            hk_mbar_wait(lds, v_full(sv), ph_v);
            attn_issue_pv(attn_desc_v(dsc, sv), p, o);
        }
        hk_wgmma_commit();

        hk_wgmma_wait<1>();                               // S(j)
        attn_acc_fence(s);
        if (lane == 0)
            hk_mbar_arrive(lds, k_empty(sk));
        hk_u32x4 pn[PV_STEPS];
        if (kb + BLOCK_N - 1 > wg_full)
            attn_softmax<true, POS>(s, c, kb, klim, win, m_run, l_run, alpha, pn);
        else
            attn_softmax<false, POS>(s, c, kb, klim, win, m_run, l_run, alpha, pn);
        hk_wgmma_wait<0>();                               // O += P(j - 1) V(j - 1)
        attn_acc_fence(o);
        if (j > 0 && lane == 0)
            hk_mbar_arrive(lds, v_empty(sv));
        attn_rescale(o, alpha);
#pragma unroll
        for (int i = 0; i < PV_STEPS; ++i)
            p[i] = pn[i];
        sv = sk;                                          // V(j) is next iteration's V(j - 1)
        ph_v = ph;
        if (++sk == STAGES) {
            sk = 0;
            ph ^= 1;
        }
    }
    if (lane == 0)                                        // the tile's last S is done: Q is free
        hk_mbar_arrive(lds, q_empty());
    hk_mbar_wait(lds, v_full(sv), ph_v);                  // the last V block (n_blocks > 0)
    hk_wgmma_fence();
    attn_issue_pv(attn_desc_v(dsc, sv), p, o);
    hk_wgmma_commit();
    hk_wgmma_wait<0>();
    attn_acc_fence(o);
    if (lane == 0)
        hk_mbar_arrive(lds, v_empty(sv));
}

// The softmax's scale c: scale * log2(e), the scores in base 2; SOFTCAP:
// scale / cap, the tanh's argument (attn_softmax).
HK_DEVICE float attn_scale(float scale) { return SOFTCAP ? scale / CAP : scale * LOG2E; }

// ---- a tile's output ----------------------------------------------------------------------
// The quad's sums, normalise, store rows row0 and row0 + 8 of tile w (lane
// holds O[row][8i + 2t, 8i + 2t + 1] of each n8 tile i) and their log-sum-exp.
// With 16-byte aligned rows a quad's words of four n8 tiles are transposed
// so that lane t stores all of tile 4g + t: a warp's store covers 64
// contiguous bytes of each of its 8 rows (4-byte stores: 16 bytes).  No
// shared memory, so it also serves a persistent block whose Q tile already
// holds the next tile's rows.  SINKS: the head's sink joins each row's sum
// (attn_sink): O is scaled by the factor it returns, LSE includes it.
template <bool WIDE>
HK_DEVICE void attn_store(const hk_args &a, const attn_grid &g, const attn_tile &w, int row0, const o_acc_t &o,
                          const float (&m_run)[2], const float (&l_run)[2])
{
    const int lane = hk_lane_id();
    hk_bf16 *Oh = a.O + ]hkm_fwd_varlen([[(long)w.qs * a.o_stride_s]], [[(long)w.b * a.o_stride_b]])[ + (long)w.hq * a.o_stride_h;
    // inline, not attn_aligned: as a call ptxas compiled the prologue differently (128K 32:8 -6%)
    const bool vec_o = ]hkm_fwd_varlen([[]], [[(a.o_stride_b % 2 == 0) && ]])[(a.o_stride_s % 2 == 0) && (a.o_stride_h % 2 == 0) &&
                       ((unsigned long)a.O % 4 == 0);
    const bool o16 = WIDE && ]hkm_fwd_varlen([[]], [[(a.o_stride_b % 8 == 0) && ]])[(a.o_stride_s % 8 == 0) && (a.o_stride_h % 8 == 0) &&
                     ((unsigned long)a.O % 16 == 0);
    static_assert(O_TILES % 4 == 0, "whole 16-byte chunks per quad");]hkm_fwd_sinks([[
    const float sb = hk_global_load_f32(a.sinks + w.hq) * LOG2E;  // the head's sink in base 2]])[
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = l_run[h];
        l += hk_shfl_xor_f32(l, 1);
        l += hk_shfl_xor_f32(l, 2);
        const int qi = w.q0 + row0 + 8 * h;
        float m = m_run[h], inv = attn_inv_sum(l);]hkm_fwd_sinks([[
        const float alpha = attn_sink(sb, m, l);
        inv = attn_inv_sum(l) * alpha;]])[
        if (a.LSE && (lane & 3) == 0 && qi < ]hkm_vl_sq[) /* the null test first, as the kernel measured had it */
            hk_global_store_f32(a.LSE + ]hkm_fwd_varlen([[(long)w.hq * a.total_q + w.qs]], [[((long)w.b * g.Hq + w.hq) * g.Sq]])[ + qi, attn_lse(m, l));
        if (o16) {
            // lane t holds word t of tiles 4g + k: a 4 x 4 transpose in the
            // quad (xor 2, then xor 1) gives lane t all of tile 4g + t
            const int t = lane & 3;
            hk_bf16 *Oq = Oh + (long)qi * a.o_stride_s + t * 8;
#pragma unroll
            for (int g4 = 0; g4 < O_TILES / 4; ++g4) {
                hk_u32x4 wd;
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    wd[k] = hk_f32x2_to_bf16x2(o[4 * (4 * g4 + k) + 2 * h] * inv, o[4 * (4 * g4 + k) + 2 * h + 1] * inv);
#pragma unroll
                for (int k = 0; k < 2; ++k) {
                    const unsigned r = hk_shfl_xor_u32((t & 2) ? wd[k] : wd[k + 2], 2);
                    if (t & 2)
                        wd[k] = r;
                    else
                        wd[k + 2] = r;
                }
#pragma unroll
                for (int k = 0; k < 4; k += 2) {
                    const unsigned r = hk_shfl_xor_u32((t & 1) ? wd[k] : wd[k + 1], 1);
                    if (t & 1)
                        wd[k] = r;
                    else
                        wd[k + 1] = r;
                }
                if (qi < ]hkm_vl_sq[)
                    hk_global_store_b128(Oq + g4 * 32, wd);
            }
        }
        if (qi >= ]hkm_vl_sq[ || o16)
            continue;
        hk_bf16 *Oq = Oh + (long)qi * a.o_stride_s + (lane & 3) * 2;
#pragma unroll
        for (int i = 0; i < O_TILES; ++i) {
            const float lo = o[4 * i + 2 * h] * inv, hi = o[4 * i + 2 * h + 1] * inv;
            if (vec_o) {
                hk_global_store_b32(Oq + i * 8, hk_f32x2_to_bf16x2(lo, hi));
            } else {
                hk_global_store_bf16(Oq + i * 8, hk_f32_to_bf16(lo));
                hk_global_store_bf16(Oq + i * 8 + 1, hk_f32_to_bf16(hi));
            }
        }
    }
}

HK_DEVICE void attn_o_init(o_acc_t &o, float (&m_run)[2], float (&l_run)[2])
{
#pragma unroll
    for (int i = 0; i < D / 2; ++i)
        o[i] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        m_run[h] = -__builtin_huge_valf();
        l_run[h] = 0.0f;
    }
}

// The output of the tiles without keys (causal, seqlen_q > seqlen_k: rows
// before the first visible key), spread over the blocks: O = 0, LSE = -inf.
// varlen: empty tiles e = (sequence, head, query block) over the sequences.
template <bool WIDE>
HK_DEVICE void attn_store_empty(const hk_args &a, const attn_grid &g, int row0)
{
]hkm_fwd_varlen([[
    if constexpr (VARLEN) {
        attn_tile w = {};
        for (int k = 0, e = hk_block_id_x(); attn_vl_seek<true>(g, k, e, w); ++k, e += hk_grid_dim_x()) {
            const int ne = attn_vl_empty(w), r = (e - w.u0) / ne;
            w.q0 = (e - w.u0 - r * ne) * BLOCK_M;
            w.hq = r;
            w.n_blocks = 0;
            o_acc_t o;
            float m_run[2], l_run[2];
            attn_o_init(o, m_run, l_run);
            attn_store<WIDE>(a, g, w, row0, o, m_run, l_run);
        }
        return;
    }]])[
    for (int e = hk_block_id_x(); e < (g.nq - g.nqb) * g.hb; e += hk_grid_dim_x()) {
        o_acc_t o;
        float m_run[2], l_run[2];
        attn_o_init(o, m_run, l_run);
        attn_store<WIDE>(a, g, attn_empty_tile_at(g, e), row0, o, m_run, l_run);
    }
}

// ---- a block's tiles ----------------------------------------------------------------------
// row0: this lane's first row within a tile (the other is row0 + 8).
HK_DEVICE int attn_row0(void)
{
    const int warp = hk_wave_id();
    return (warp / 4) * WG_M + (warp % 4) * 16 + (hk_lane_id() >> 2);
}

// The consumers' tiles with bulk copies: the ring and the Q tile pass from
// tile to tile without a barrier.  The tiles with keys, then the others: no
// branch around the products, or ptxas serialises every wgmma (its C7520).
template <bool POS>
HK_DEVICE void attn_run_ws_tma(hk_lds_t lds, const hk_args &a, const attn_grid &g, float c)
{
    const int wg = hk_wave_id() / 4, row0 = attn_row0();
    int pos = 0, it = 0;
    attn_tile w;
    for (int k = 0; attn_walk(g, k, w); ++k) {
        if (w.n_blocks == 0)
            continue;
        int wg_full, klim[2];
        attn_tile_limits(g, w, wg, row0, wg_full, klim);
        o_acc_t o;
        float m_run[2], l_run[2];
        attn_o_init(o, m_run, l_run);
        hk_mbar_wait(lds, q_full(), it & 1);
        attn_tile_ws<POS>(lds, pos, w.n_blocks, wg, wg_full, klim, c, m_run, l_run, o);
        pos += w.n_blocks;
        ++it;
        attn_store<true>(a, g, w, row0, o, m_run, l_run);
    }
    attn_store_empty<true>(a, g, row0);
}

// The consumers' tiles with asynchronous copies (attn_kv_loop), a consumer
// barrier between tiles (the next one's copies overwrite what the last one
// read); the producer has left.
template <bool VEC, bool POS>
HK_DEVICE void attn_run_ws_copy(hk_lds_t lds, const hk_args &a, const attn_grid &g, float c)
{
    const int wg = hk_wave_id() / 4, row0 = attn_row0();
    attn_tile w;
    for (int k = 0; attn_walk(g, k, w); ++k) {
        if (w.n_blocks == 0)
            continue;
        const int hkv = w.hq / g.group;
        const hk_bf16 *Qh = a.Q + ]hkm_fwd_varlen([[(long)w.qs * a.q_stride_s]], [[(long)w.b * a.q_stride_b]])[ + (long)w.hq * a.q_stride_h;
        const hk_bf16 *Kh = a.K + ]hkm_fwd_varlen([[(long)w.ks * a.k_stride_s]], [[(long)w.b * a.k_stride_b]])[ + (long)hkv * a.k_stride_h;
        const hk_bf16 *Vh = a.V + ]hkm_fwd_varlen([[(long)w.ks * a.v_stride_s]], [[(long)w.b * a.v_stride_b]])[ + (long)hkv * a.v_stride_h;
        int wg_full, klim[2];
        attn_tile_limits(g, w, wg, row0, wg_full, klim);
        attn_win win = {};                                // no window here (PERSIST)
        o_acc_t o;
        float m_run[2], l_run[2];
        attn_o_init(o, m_run, l_run);
        attn_sync();
        attn_kv_loop<VEC, POS>(lds, Qh, Kh, Vh, a.q_stride_s, a.k_stride_s, a.v_stride_s, w.q0, ]hkm_vl_sq[, ]hkm_vl_sk[,
                               w.n_blocks, wg, wg_full, klim, win, c, m_run, l_run, o);
        attn_store<false>(a, g, w, row0, o, m_run, l_run);
    }
    attn_store_empty<false>(a, g, row0);
}

// The variant a block runs, decided once for both head dims: bulk copies
// (TMA) or asynchronous ones (VEC: 16-byte chunks), and the FFMA softmax
// (POS) when the scale is positive.  run(attn_bool<TMA>, attn_bool<VEC>,
// attn_bool<POS>) instantiates the block's code for it.
template <bool B> struct attn_bool {
    static constexpr bool value = B;
};
// SOFTCAP folds the scale whatever its sign (attn_softmax): POS only.
template <class F>
HK_DEVICE void attn_dispatch(bool use_tma, bool vec, float c, const F &run)
{
    c = SOFTCAP ? 1.0f : c;
    if (use_tma) {
        if (FOLD_SCALE && c > 0.0f)
            run(attn_bool<true>(), attn_bool<true>(), attn_bool<FOLD_SCALE>());
        else
            run(attn_bool<true>(), attn_bool<true>(), attn_bool<false>());
    } else if (FOLD_SCALE && c > 0.0f) {
        if (vec)
            run(attn_bool<false>(), attn_bool<true>(), attn_bool<FOLD_SCALE>());
        else
            run(attn_bool<false>(), attn_bool<false>(), attn_bool<FOLD_SCALE>());
    } else {
        if (vec)
            run(attn_bool<false>(), attn_bool<true>(), attn_bool<false>());
        else
            run(attn_bool<false>(), attn_bool<false>(), attn_bool<false>());
    }
}

// d128: mbarriers, then the warpgroups part: the producer hands registers
// over to the consumers and, with bulk copies, feeds the rings.
HK_DEVICE void attn_main_ws(hk_lds_t lds, const hk_args &a, const attn_grid &g, bool use_tma, bool vec, float c)
{
    if (use_tma && hk_thread_id() == 0)
        attn_mbar_setup(lds);
    hk_barrier();
    if (hk_wave_id() >= WARPS) {
        hk_regs_shrink<PROD_REGS>();
        if (use_tma && hk_thread_id() == CONS_THREADS)
            attn_produce_tiles(lds, g, ]m4_ifelse(hkm_tune([tmap_q]), [1], [&a.tmap_q], [nullptr])[, &a.tmap_k, &a.tmap_v);
        return;
    }
    hk_regs_grow<CONS_REGS>();
    attn_dispatch(use_tma, vec, c, [&](auto tma, auto v, auto pos) {
        if constexpr (decltype(tma)::value)
            attn_run_ws_tma<decltype(pos)::value>(lds, a, g, c);
        else
            attn_run_ws_copy<decltype(v)::value, decltype(pos)::value>(lds, a, g, c);
    });
}

// ---- d64: a block per tile -----------------------------------------------------
// The tile helpers, barrier set-up and dispatch of d128, one tile.
HK_DEVICE void attn_block_tile(hk_lds_t hk_lds, const hk_args &hk_a, const attn_grid &g, int batch, bool use_tma,
                               bool vec)
{
    int tile, hq, b;
    if constexpr (VARLEN) {
        // g is sequence z's (the kernel made it); blocks past its tiles have left
        tile = (g.Sq + BLOCK_M - 1) / BLOCK_M - 1 - hk_block_id_x();
        hq = hk_block_id_y();
        b = hk_block_id_z();
    } else {
        attn_block_order(hk_grid_dim_x(), g.Hq, batch, g.group, g.Sk, tile, hq, b);
    }
    const int q0 = tile * BLOCK_M;
    attn_tile w = {q0, hq, b, attn_key_blocks(attn_key_end(q0, g.Sq, g.Sk)), 0};]hkm_fwd_varlen([[
    w.qs = g.qs;
    w.ks = g.ks;
    w.Sq = g.Sq;
    w.Sk = g.Sk;]])[
    if constexpr (WIN_R)
        w.n_blocks = attn_key_blocks(attn_tile_end(g, q0));
    if constexpr (WIN_L)
        attn_tile_from(g, w);
    const int hkv = hq / g.group;
    const int wg = hk_wave_id() / 4, row0 = attn_row0();

    const hk_bf16 *Qh = hk_a.Q + ]hkm_fwd_varlen([[(long)g.qs * hk_a.q_stride_s]], [[(long)b * hk_a.q_stride_b]])[ + (long)hq * hk_a.q_stride_h;
    const hk_bf16 *Kh = hk_a.K + ]hkm_fwd_varlen([[(long)g.ks * hk_a.k_stride_s]], [[(long)b * hk_a.k_stride_b]])[ + (long)hkv * hk_a.k_stride_h;
    const hk_bf16 *Vh = hk_a.V + ]hkm_fwd_varlen([[(long)g.ks * hk_a.v_stride_s]], [[(long)b * hk_a.v_stride_b]])[ + (long)hkv * hk_a.v_stride_h;
    int wg_full, klim[2];
    attn_tile_limits(g, w, wg, row0, wg_full, klim);
    attn_win win = {};
    if constexpr (WIN_L || WIN_R)                         // called only here: a plain kernel compiles as before
        attn_tile_window(g, w, row0, win);

    // With bulk copies the consumers start Q's copy first, so that it lands
    // while the block sets up (attn_kv_loop_tma waits for it), then the
    // mbarriers.
    if (use_tma && hk_wave_id() < WARPS) {
        attn_copy_tile<true, BLOCK_M>(hk_lds, Q_OFF, Qh, hk_a.q_stride_s, q0, g.Sq);
        hk_async_commit();
    }
    if (use_tma && hk_thread_id() == 0)
        attn_mbar_setup(hk_lds);
    hk_barrier();

    const float c = attn_scale(hk_a.scale);              // scores in base 2 (SOFTCAP: scale / cap)
    o_acc_t o;
    float m_run[2], l_run[2];
    attn_o_init(o, m_run, l_run);
    attn_dispatch(use_tma, vec, c, [&](auto tma, auto v, auto pos) {
        if constexpr (decltype(tma)::value)
            attn_kv_loop_tma<decltype(pos)::value>(hk_lds, &hk_a.tmap_k, &hk_a.tmap_v, hkv, ]hkm_fwd_varlen([[g.ks]], [[b]])[, w.n_blocks, wg,
                                                   wg_full, klim, win, c, m_run, l_run, o);
        else
            attn_kv_loop<decltype(v)::value, decltype(pos)::value>(
                hk_lds, Qh, Kh, Vh, hk_a.q_stride_s, hk_a.k_stride_s, hk_a.v_stride_s, q0, g.Sq, g.Sk, w.n_blocks,
                wg, wg_full, klim, win, c, m_run, l_run, o);
    });
    attn_store<true>(hk_a, g, w, row0, o, m_run, l_run);     // as a persistent block's
}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;]hkm_fwd_sinks([[
    (void)sinks;]])[
    const int Sq = seqlen_q, Sk = seqlen_k;
    // the window's edges (-1: none, also where the kernel has no window)
    const int win_l = ]hkm_fwd_winl([[window_left]], [[-1]])[, win_r = ]hkm_fwd_winr([[window_right]], [[-1]])[;
]hkm_fwd_varlen([[
    (void)varlen;
    // varlen: the packed tensors' strides (no batch stride), the maps' rows
    // (total_q, total_k: the runtime leaves a map of no rows zero)
    const bool vec = (hk_a.q_stride_s % 8 == 0) && (hk_a.q_stride_h % 8 == 0) && ((unsigned long)hk_a.Q % 16 == 0) &&
                     (hk_a.k_stride_s % 8 == 0) && (hk_a.k_stride_h % 8 == 0) && ((unsigned long)hk_a.K % 16 == 0) &&
                     (hk_a.v_stride_s % 8 == 0) && (hk_a.v_stride_h % 8 == 0) && ((unsigned long)hk_a.V % 16 == 0);
    const bool use_tma = vec && hk_a.total_k >= 1 &&
                         (!PERSIST || (hk_a.total_q >= 1 && hk_a.q_stride_s > 0 && hk_a.q_stride_h > 0 &&
                                       hk_a.q_stride_s < (1L << 39) && hk_a.q_stride_h < (1L << 39))) &&
                         hk_a.k_stride_s > 0 && hk_a.k_stride_h > 0 && hk_a.v_stride_s > 0 && hk_a.v_stride_h > 0 &&
                         hk_a.k_stride_s < (1L << 39) && hk_a.k_stride_h < (1L << 39) &&
                         hk_a.v_stride_s < (1L << 39) && hk_a.v_stride_h < (1L << 39);

    HK_LDS_DECLARE_DYNAMIC();
    if constexpr (PERSIST) {
        attn_grid g = attn_grid_make(Sq, Sk, heads_q, heads_k, batch, win_l, win_r);
        g.cu_q = hk_a.cu_seqlens_q;
        g.cu_k = hk_a.cu_seqlens_k;
        g.batch = batch;
        attn_main_ws(hk_lds, hk_a, g, use_tma, vec, attn_scale(hk_a.scale));
    } else {
        // a block per tile of sequence z: its grid, or nothing past its tiles
        const int b = hk_block_id_z();
        const int qs = hk_global_load_i32(hk_a.cu_seqlens_q + b), ks = hk_global_load_i32(hk_a.cu_seqlens_k + b);
        const int sq = hk_global_load_i32(hk_a.cu_seqlens_q + b + 1) - qs;
        if (hk_block_id_x() * BLOCK_M >= sq)             // block-uniform, before any barrier
            return;
        attn_grid g = attn_grid_make(sq, hk_global_load_i32(hk_a.cu_seqlens_k + b + 1) - ks, heads_q, heads_k, 1,
                                     win_l, win_r);
        g.qs = qs;
        g.ks = ks;
        attn_block_tile(hk_lds, hk_a, g, batch, use_tma, vec);
    }
    (void)Sq, (void)Sk;
}
]], [[
    // 16-byte copies need 8-element strides and 16-byte aligned bases
    const bool vec = (hk_a.q_stride_b % 8 == 0) && (hk_a.q_stride_s % 8 == 0) && (hk_a.q_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.Q % 16 == 0) && (hk_a.k_stride_b % 8 == 0) &&
                     (hk_a.k_stride_s % 8 == 0) && (hk_a.k_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.K % 16 == 0) && (hk_a.v_stride_b % 8 == 0) &&
                     (hk_a.v_stride_s % 8 == 0) && (hk_a.v_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.V % 16 == 0);

    // the copy engine takes K and V (d128: and Q) when their bases are
    // 16-byte aligned and every stride is a positive multiple of 8 elements
    // under 2^39 (the runtime built the tensor maps under the same conditions)
    const bool use_tma = vec &&
                         (!PERSIST || (hk_a.q_stride_b > 0 && hk_a.q_stride_s > 0 && hk_a.q_stride_h > 0 &&
                                       hk_a.q_stride_b < (1L << 39) && hk_a.q_stride_s < (1L << 39) &&
                                       hk_a.q_stride_h < (1L << 39))) &&
                         hk_a.k_stride_b > 0 && hk_a.k_stride_s > 0 && hk_a.k_stride_h > 0 &&
                         hk_a.v_stride_b > 0 && hk_a.v_stride_s > 0 && hk_a.v_stride_h > 0 &&
                         hk_a.k_stride_b < (1L << 39) && hk_a.k_stride_s < (1L << 39) &&
                         hk_a.k_stride_h < (1L << 39) && hk_a.v_stride_b < (1L << 39) &&
                         hk_a.v_stride_s < (1L << 39) && hk_a.v_stride_h < (1L << 39);

    HK_LDS_DECLARE_DYNAMIC();
    if constexpr (PERSIST)
        attn_main_ws(hk_lds, hk_a, attn_grid_make(Sq, Sk, heads_q, heads_k, batch, win_l, win_r), use_tma, vec,
                     attn_scale(hk_a.scale));
    else
        attn_block_tile(hk_lds, hk_a, attn_grid_make(Sq, Sk, heads_q, heads_k, batch, win_l, win_r), batch, use_tma,
                        vec);
}
]])[]hkm_output_end()
