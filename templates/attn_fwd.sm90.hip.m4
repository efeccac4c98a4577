m4_divert(-1)                                                   -*- C -*-
# attn_fwd.sm90.hip.m4 - attention forward, NVIDIA Hopper (sm_90a) version of
# attn_fwd.hip.m4 on warpgroup MMA (wgmma): the same parameters, kernel
# arguments, grid, block and semantics.
#
#   O[b][i][h][:] = sum_j softmax_j(scale * q_i . k_j) v_j     (keys j of KV head h / (Hq/Hk))
#   LSE[b][h][i]  = log sum_j exp(scale * q_i . k_j)          (fp32, [batch][heads_q][seqlen_q])
#   causal: key j visible iff j <= i + (seqlen_k - seqlen_q) (bottom-right aligned);
#   a row with no visible key gives O = 0 and LSE = -inf.
#
# Parameters (hkm_p_*): dtype (bf16), head_dim (64|128), causal (baked bool),
# batch, seqlen_q, seqlen_k, heads_q, heads_k (baked or `any').  Kernel
# arguments (hkm_kernarg_struct): Q, K, V, O, LSE (may be null), element
# strides {q,k,v,o}_stride_{b,s,h} (head_dim contiguous), scale, then the
# run-time ones of the dimensions.
#
# Grid: x = cdiv(seqlen_q, 128) (walked last tile first, so that the longest
# causal tiles start first), y = heads_q, z = batch.  Block: 256 threads = two
# warpgroups; warpgroup w owns queries q0 + 64 w .. q0 + 64 w + 63.
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
#                  an exp2 per score when scale > 0), fp32.
#   O += P V       m64nDk16 with A = P from registers (the S accumulator rounded
#                  to bf16 pairs is the A fragment as is) and B = V from shared
#                  memory, MN-major ([key][d], d innermost: the transpose bit).
# Intra-warpgroup pipelining (FlashAttention-3): iteration j issues S(j) and
# O += P(j-1) V(j-1) together, computes the softmax of S(j) while the P V
# product runs, then waits for it and rescales O.
#
# Shared memory (dynamic, hkm_dynamic_lds bytes: op_attn.c attn_dynamic_lds):
# the Q tile (BLOCK_M x D), a ring of STAGES K tiles and one of STAGES V
# tiles (BLOCK_N x D each); d64: 5 stages, 97 KiB and about 121 registers, so
# two blocks share a multiprocessor; d128: 3 stages, 225 KiB, one block.  A
# tile is stored as D/64 slabs of 64 columns (128-byte rows); 16-byte chunk c
# of row r of a slab sits at c ^ r % 8 (the wgmma 128-byte swizzle; tiles
# start on 1024-byte boundaries).  K and V: bulk tensor copies (TMA; kernel
# arguments tmap_k and tmap_v, 4-D maps {head_dim, seqlen_k, heads_k, batch}
# that libhkrt builds) issued by thread 0 and paced by mbarriers, `full' and
# `empty' per stage and tensor, no block barrier (attn_kv_loop_tma), when
# both bases are 16-byte aligned and every K and V stride is a positive
# multiple of 8 elements (the runtime's conditions for building the maps);
# otherwise asynchronous copies (cp.async, zero fill past seqlen) by all
# threads, one copy group and one barrier per K/V block (attn_kv_loop).
# Either way K and V are loaded STAGES - 1 blocks ahead of their use; Q is
# copied by all threads once.
# Keys past seqlen_k are zero rows and are masked to -inf; queries past
# seqlen_q are zero rows and are not stored.  Strides that are not multiples
# of 8 (or unaligned bases) take element loads into the same tiles.
# Causal: blocks past the diagonal are never loaded; masking code runs only
# for blocks that straddle the causal diagonal or seqlen_k.

hkm_check_one_of([dtype], [bf16])
hkm_check_one_of([head_dim], [64], [128])
hkm_if_true([causal], [], [])
hkm_param([batch])hkm_param([seqlen_q])hkm_param([seqlen_k])hkm_param([heads_q])hkm_param([heads_k])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([attn_fwd needs hkm_block_size 256, got ]hkm_block_size)])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int WGS = ATTN_THREADS / 128;             // warpgroups
static constexpr int WG_M = 64;                            // queries per warpgroup
static constexpr int BLOCK_M = WG_M * WGS;                 // queries per block
// keys per K/V tile: d64 takes 64 (about 125 registers and 81 KiB of shared
// memory: two blocks per multiprocessor), d128 128 (one block)
static constexpr int BLOCK_N = D == 64 ? 64 : 128;
static constexpr bool FAST_COPY = true;                    // whole tiles: unrolled copies without bounds checks
static constexpr int CHUNKS = D / 8;                       // 16-byte chunks per row
static constexpr int Q_BYTES = BLOCK_M * D * 2;
static constexpr int Q_SLAB = BLOCK_M * 128;               // bytes of one 64-column slab of Q
static constexpr int KV_SLAB = BLOCK_N * 128;              // ... of K or V
static constexpr int KV_TILE_BYTES = BLOCK_N * D * 2;
static constexpr int STAGE_BYTES = 2 * KV_TILE_BYTES;      // one K and one V buffer
static constexpr int DYNAMIC_LDS = ]hkm_dynamic_lds[;
static constexpr int BAR_BYTES = 512;                      // mbarriers, producer walks, grid (op_attn.c ATTN_BAR_BYTES)
static constexpr int STAGES = (DYNAMIC_LDS - HK_LDS_DYNAMIC_SLACK - Q_BYTES - BAR_BYTES) / STAGE_BYTES;
static constexpr int Q_OFF = 0;
static constexpr int K_OFF = Q_BYTES;                      // K ring: STAGES tiles
static constexpr int V_OFF = Q_BYTES + STAGES * KV_TILE_BYTES;  // V ring: STAGES tiles
static constexpr int BAR_OFF = V_OFF + STAGES * KV_TILE_BYTES;  // mbarriers: full and empty of K and V per stage
static constexpr int WARPS = ATTN_THREADS / 32;
static constexpr int K_STEPS = D / 16;                     // k16 steps of Q K^T
static constexpr int PV_STEPS = BLOCK_N / 16;              // k16 steps of P V
static constexpr int S_TILES = BLOCK_N / 8;                // n8 tiles of S
static constexpr int O_TILES = D / 8;                      // n8 tiles of O
static constexpr bool FOLD_SCALE = true;                   // scale > 0: FFMA softmax (attn_softmax POS)
static constexpr float LOG2E = 1.44269504088896340736f;
static constexpr float LN2 = 0.693147180559945309417f;

static_assert(BLOCK_M == 128, "the grid (op_attn.c) assumes 128 queries per block");
static_assert(BLOCK_N == 64 || BLOCK_N == 128, "S is one m64n64 or m64n128 accumulator");
static_assert(STAGES * STAGE_BYTES + Q_BYTES + BAR_BYTES + HK_LDS_DYNAMIC_SLACK == DYNAMIC_LDS,
              "dynamic_lds must hold Q, the K and V rings and the mbarriers (op_attn.c attn_dynamic_lds)");
static_assert((4 * STAGES + 2) * 8 + 64 <= BAR_BYTES && (4 * STAGES + 2) * 8 % 16 == 0,
              "four mbarriers per stage, two for Q, the next tile's descriptor, the grid");
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
static constexpr int ROWS_PER_J = ATTN_THREADS / CHUNKS;
static_assert(ATTN_THREADS % CHUNKS == 0 && ROWS_PER_J % 8 == 0, "copy rows keep the swizzle");
template <bool VEC, int R>
HK_DEVICE void attn_copy_tile(hk_lds_t lds, int off, const hk_bf16 *head, long ss, int row0, int n)
{
    constexpr int PER_THREAD = R * CHUNKS / ATTN_THREADS;
    static_assert(R * CHUNKS % ATTN_THREADS == 0, "tiles split into 16-byte chunks evenly");
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
// t / nqb % Hq, batch t / nqb / Hq.  Block x takes busy tiles x, x +
// gridDim.x, ...: the grid is at most as many blocks as the device holds at
// once (op_attn.c), so a block's next tile loads while it finishes the
// current one; the blocks running at once work on a few heads, whose K and V
// stay in L2, as the query blocks of a head come first.  Counts fit an int:
// 2^31 tiles would be 2^38 queries.
struct attn_grid {
    int nq, nqb, Hq, hb, busy, group, Sq, Sk;
};
struct attn_tile {
    int q0, hq, b, n_blocks;
};

// Query blocks with keys: qb * BLOCK_M + BLOCK_M + Sk - Sq > 0 (attn_tile_at's
// kend > 0), all but the lowest (Sq - Sk) / BLOCK_M ones.
HK_DEVICE int attn_busy_blocks(int nq, int Sq, int Sk)
{
    const int e = Sq - Sk - BLOCK_M;
    const int empty = !CAUSAL || e < 0 ? 0 : (e / BLOCK_M + 1 < nq ? e / BLOCK_M + 1 : nq);
    return nq - empty;
}

HK_DEVICE attn_tile attn_tile_at(const attn_grid &g, int t)
{
    attn_tile w;
    const int r = t / g.nqb;
    w.q0 = (g.nq - 1 - (t - r * g.nqb)) * BLOCK_M;
    w.hq = r % g.Hq;
    w.b = r / g.Hq;
    // causal: key j visible iff j <= i + (Sk - Sq); blocks past the diagonal never load
    const int diag = g.Sk - g.Sq;
    const int kend = CAUSAL ? (w.q0 + BLOCK_M + diag < g.Sk ? w.q0 + BLOCK_M + diag : g.Sk) : g.Sk;
    w.n_blocks = (kend + BLOCK_N - 1) / BLOCK_N;
    return w;
}

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
    const int diag = g.Sk - g.Sq;
    const int wq0 = w.q0 + wg * WG_M;
    wg_full = CAUSAL ? (wq0 + diag < g.Sk - 1 ? wq0 + diag : g.Sk - 1) : g.Sk - 1;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int qi = w.q0 + row0 + 8 * h;
        klim[h] = CAUSAL ? (qi + diag < g.Sk - 1 ? qi + diag : g.Sk - 1) : g.Sk - 1;
    }
}

// ---- bulk tensor copies (TMA) of K and V, paced by mbarriers ------------------------
// Per stage s: k_full(s) / v_full(s) (one arrival with the tile's bytes: the
// copy engine's block landed) and k_empty(s) / v_empty(s) (one arrival per
// warp: its wgmma reading the block has completed).  The pos-th block of a
// ring, counted over all the tiles of a thread block, uses stage pos % STAGES
// in phase pos / STAGES.  Q: q_full (one arrival with the tile's bytes) and
// q_empty (one arrival per warp: the tile's last S completed).
HK_DEVICE int k_full(int s) { return BAR_OFF + 8 * s; }
HK_DEVICE int v_full(int s) { return BAR_OFF + 8 * (STAGES + s); }
HK_DEVICE int k_empty(int s) { return BAR_OFF + 8 * (2 * STAGES + s); }
HK_DEVICE int v_empty(int s) { return BAR_OFF + 8 * (3 * STAGES + s); }
HK_DEVICE int q_full() { return BAR_OFF + 8 * (4 * STAGES); }      // Q landed (expect_tx)
HK_DEVICE int q_empty() { return BAR_OFF + 8 * (4 * STAGES + 1); }  // every warp done with Q

// Producer (one thread): K/V block blk (keys blk * BLOCK_N .., KV head hkv,
// batch b), the pos-th of its ring at ring_off, once the consumers released
// the stage's previous block (pos - STAGES): D / 64 boxes of 64 columns x
// BLOCK_N keys, the 128-byte swizzle of the slabs; keys past seqlen_k read
// zeros.
HK_DEVICE void attn_tma_fill(hk_lds_t lds, int ring_off, int full0, int empty0, const hk_tmap *map, int pos,
                             int blk, int hkv, int b)
{
    const int s = pos % STAGES;
    if (pos >= STAGES)
        hk_mbar_wait(lds, empty0 + 8 * s, (pos / STAGES + 1) & 1);
    hk_mbar_arrive_expect_tx(lds, full0 + 8 * s, KV_TILE_BYTES);
#pragma unroll
    for (int sl = 0; sl < D / 64; ++sl)
        hk_tma_load_4d(lds, ring_off + s * KV_TILE_BYTES + sl * KV_SLAB, map, sl * 64, blk * BLOCK_N, hkv, b,
                       full0 + 8 * s);
}

// The descriptor of the block's next tile, which thread 0 (the producer)
// writes at the start of each tile, outside the K/V loop, so that its steps
// in the loop never divide.  t >= g.busy: no next tile.
struct attn_info {
    int t, n, hq, hkv, b, q0;
};
HK_DEVICE int info_off() { return BAR_OFF + 8 * (4 * STAGES + 2); }

HK_DEVICE void attn_info_put(hk_lds_t lds, const attn_grid &g, int t)
{
    hk_u32x4 v, u;
    v[0] = (unsigned)t, v[1] = v[2] = v[3] = 0;
    u[0] = u[1] = u[2] = u[3] = 0;
    if (t < g.busy) {
        const attn_tile w = attn_tile_at(g, t);
        v[1] = (unsigned)w.n_blocks, v[2] = (unsigned)w.hq, v[3] = (unsigned)(w.hq / g.group);
        u[0] = (unsigned)w.b, u[1] = (unsigned)w.q0;
    }
    hk_lds_store_b128(lds, info_off(), v);
    hk_lds_store_b128(lds, info_off() + 16, u);
}

HK_DEVICE attn_info attn_info_get(hk_lds_t lds)
{
    const hk_u32x4 v = hk_lds_load_b128(lds, info_off()), u = hk_lds_load_b128(lds, info_off() + 16);
    attn_info f;
    f.t = (int)v[0], f.n = (int)v[1], f.hq = (int)v[2], f.hkv = (int)v[3];
    f.b = (int)u[0], f.q0 = (int)u[1];
    return f;
}

// Q of tile f (D / 64 boxes of 64 columns x 128 queries; queries past
// seqlen_q read zeros) into the Q tile, paced by q_full / q_empty.
HK_DEVICE void attn_tma_q(hk_lds_t lds, const hk_tmap *map, const attn_info &f)
{
    hk_mbar_arrive_expect_tx(lds, q_full(), Q_BYTES);
#pragma unroll
    for (int sl = 0; sl < D / 64; ++sl)
        hk_tma_load_4d(lds, Q_OFF + sl * Q_SLAB, map, sl * 64, f.q0, f.hq, f.b, q_full());
}

// First blocks of tile f at ring positions pos ..: K blocks 0 .. nk - 1 and V
// blocks 0 .. nv - 1 (at most f.n).
HK_DEVICE void attn_issue_first(hk_lds_t lds, const hk_tmap *tk, const hk_tmap *tv, const attn_info &f, int pos,
                                int nk, int nv)
{
    for (int i = 0; i < nk && i < f.n; ++i)
        attn_tma_fill(lds, K_OFF, k_full(0), k_empty(0), tk, pos + i, i, f.hkv, f.b);
    for (int i = 0; i < nv && i < f.n; ++i)
        attn_tma_fill(lds, V_OFF, v_full(0), v_empty(0), tv, pos + i, i, f.hkv, f.b);
}

// Every warp is done with the Q tile (lane 0 arrives); the leader then waits
// for all of them and loads the Q of the block's next tile, if any, and,
// unless the loop prefetched them (cross), its first K and V blocks at ring
// positions pos ...  it: the ordinal of the current tile, the phase of
// q_empty.
HK_DEVICE void attn_release_q(hk_lds_t lds, const attn_grid &g, const hk_tmap *tq, const hk_tmap *tk,
                              const hk_tmap *tv, int it, int pos, bool cross, bool leader)
{
    if (hk_lane_id() == 0)
        hk_mbar_arrive(lds, q_empty());
    if (leader) {
        const attn_info f = attn_info_get(lds);
        if (f.t < g.busy) {
            hk_mbar_wait(lds, q_empty(), it & 1);
            attn_tma_q(lds, tq, f);
            if (!cross)
                attn_issue_first(lds, tk, tv, f, pos, STAGES - 1, STAGES - 2);
        }
    }
}

// ---- the two products of one warpgroup (issued, not waited for) ------------------
// S = Q K^T: A = the warpgroup's 64 rows of Q, B = the K tile at k_off; a k16
// step inside a 128-byte row adds 32 bytes to the start address, a slab adds
// the slab's bytes.
HK_DEVICE void attn_issue_s(hk_lds_t lds, int wg, int k_off, s_acc_t &s)
{
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk) {
        const int step = (kk & 3) * 32;
        const unsigned long long da =
            hk_wgmma_desc(lds, Q_OFF + (kk >> 2) * Q_SLAB + wg * WG_M * 128 + step, 16, 1024, 1);
        const unsigned long long db = hk_wgmma_desc(lds, k_off + (kk >> 2) * KV_SLAB + step, 16, 1024, 1);
        attn_wgmma_ss(s, da, db, kk > 0);
    }
}

// O += P V: A = P (registers), B = the V tile at v_off, MN-major: a k16 step
// is 16 key rows (2048 bytes), the 64-column slabs are KV_SLAB apart (lbo).
HK_DEVICE void attn_issue_pv(hk_lds_t lds, int v_off, const hk_u32x4 (&p)[PV_STEPS], o_acc_t &o)
{
#pragma unroll
    for (int ks = 0; ks < PV_STEPS; ++ks) {
        const unsigned long long db = hk_wgmma_desc(lds, v_off + ks * 16 * 128, KV_SLAB, 1024, 1);
        attn_wgmma_rs(o, p[ks], db, 1);
    }
}

// ---- online softmax of one S block ---------------------------------------------------
// Scale (base 2), mask (MASKED: keys > klim[h] of row h are -inf), row max
// (in lane, then over the quad), P = exp2(S - m) as bf16 A fragments (step
// ks = n8 tiles 2ks (words 0, 1) and 2ks + 1 (words 2, 3)), row sums.
// m_run: running max of the scaled scores of rows g, g + 8; l_run: this
// lane's partial sums (the quad is added at the end); alpha: the factor the
// previous O must be scaled by.  POS (scale > 0): the max of the raw scores
// scales to the max of the scaled ones, and P = exp2(s * c - m) is one FFMA.
template <bool MASKED, bool POS>
HK_DEVICE void attn_softmax(s_acc_t &s, float c, int kb, const int (&klim)[2], float (&m_run)[2],
                            float (&l_run)[2], float (&alpha)[2], hk_u32x4 (&p)[PV_STEPS])
{
    const int lane = hk_lane_id();
    const float neg_inf = -__builtin_huge_valf();
    float mx[2] = {neg_inf, neg_inf};
#pragma unroll
    for (int i = 0; i < S_TILES; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            float x = POS ? s[4 * i + e] : s[4 * i + e] * c;
            if (MASKED) {
                const int key = kb + i * 8 + (lane & 3) * 2 + (e & 1);
                if (key > klim[e >> 1])
                    x = neg_inf;
            }
            s[4 * i + e] = x;
            mx[e >> 1] = hk_maxf(mx[e >> 1], x);
        }
    float neg_m[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        mx[h] = hk_maxf(mx[h], hk_shfl_xor_f32(mx[h], 1));
        mx[h] = hk_maxf(mx[h], hk_shfl_xor_f32(mx[h], 2));
        if (POS)
            mx[h] *= c;                                       // -inf stays -inf
        const float m_new = hk_maxf(m_run[h], mx[h]);
        const float m_use = m_new == neg_inf ? 0.0f : m_new;  // no key seen yet: keep exp2 finite
        alpha[h] = hk_exp2f(m_run[h] - m_use);
        neg_m[h] = -m_use;
        m_run[h] = m_new;
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < S_TILES; ++i) {
        const float e0 = hk_exp2f(POS ? s[4 * i] * c + neg_m[0] : s[4 * i] + neg_m[0]);
        const float e1 = hk_exp2f(POS ? s[4 * i + 1] * c + neg_m[0] : s[4 * i + 1] + neg_m[0]);
        const float e2 = hk_exp2f(POS ? s[4 * i + 2] * c + neg_m[1] : s[4 * i + 2] + neg_m[1]);
        const float e3 = hk_exp2f(POS ? s[4 * i + 3] * c + neg_m[1] : s[4 * i + 3] + neg_m[1]);
        sum[0] += e0 + e1;
        sum[1] += e2 + e3;
        p[i / 2][(i % 2) * 2] = hk_f32x2_to_bf16x2(e0, e1);
        p[i / 2][(i % 2) * 2 + 1] = hk_f32x2_to_bf16x2(e2, e3);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
        l_run[h] = l_run[h] * alpha[h] + sum[h];
}

HK_DEVICE void attn_rescale(o_acc_t &o, const float (&alpha)[2])
{
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
// klim: per row of the lane.
template <bool VEC, bool POS>
HK_DEVICE void attn_kv_loop(hk_lds_t lds, const hk_bf16 *Qh, const hk_bf16 *Kh, const hk_bf16 *Vh, long q_ss,
                            long k_ss, long v_ss, int q0, int Sq, int Sk, int n_blocks, int wg, int wg_full,
                            const int (&klim)[2], float c, float (&m_run)[2], float (&l_run)[2], o_acc_t &o)
{
    attn_copy_tile<VEC, BLOCK_M>(lds, Q_OFF, Qh, q_ss, q0, Sq);
#pragma unroll
    for (int i = 1 - STAGES; i < 0; ++i)
        attn_load_kv<VEC>(lds, Kh, Vh, k_ss, v_ss, i + STAGES - 1, i + STAGES - 2, n_blocks, Sk);

    hk_u32x4 p[PV_STEPS];
    float alpha[2];
    for (int j = 0; j < n_blocks; ++j) {
        const int kb = j * BLOCK_N;
        hk_async_wait<STAGES - 2>();
        hk_fence_proxy_async();
        hk_barrier();

        s_acc_t s;
        hk_wgmma_fence();
        attn_issue_s(lds, wg, K_OFF + (j % STAGES) * KV_TILE_BYTES, s);
        hk_wgmma_commit();
        if (j > 0)
            attn_issue_pv(lds, V_OFF + ((j - 1) % STAGES) * KV_TILE_BYTES, p, o);
        hk_wgmma_commit();
        attn_load_kv<VEC>(lds, Kh, Vh, k_ss, v_ss, j + STAGES - 1, j + STAGES - 2, n_blocks, Sk);

        hk_wgmma_wait<1>();                               // S(j)
        attn_acc_fence(s);
        hk_u32x4 pn[PV_STEPS];
        if (kb + BLOCK_N - 1 > wg_full)
            attn_softmax<true, POS>(s, c, kb, klim, m_run, l_run, alpha, pn);
        else
            attn_softmax<false, POS>(s, c, kb, klim, m_run, l_run, alpha, pn);
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
        hk_barrier();
        hk_wgmma_fence();
        attn_issue_pv(lds, V_OFF + ((n_blocks - 1) % STAGES) * KV_TILE_BYTES, p, o);
        hk_wgmma_commit();
        hk_wgmma_wait<0>();
        attn_acc_fence(o);
    }
    hk_async_wait<0>();
}

// Block blk of the next tile (if it has one) at ring position pos.
HK_DEVICE void attn_fill_next(hk_lds_t lds, const attn_grid &g, int ring_off, int full0, int empty0,
                              const hk_tmap *map, int pos, int blk)
{
    const attn_info f = attn_info_get(lds);
    if (f.t < g.busy && blk < f.n)
        attn_tma_fill(lds, ring_off, full0, empty0, map, pos, blk, f.hkv, f.b);
}

// ---- the K/V loop of one tile with bulk tensor copies -------------------------------------
// The same products and schedule as attn_kv_loop, no block barrier: the
// consumers wait k_full before S(j) and v_full before P V(j - 1), and release
// the stages (k_empty after S(j), v_empty after P V(j - 1)); thread 0, after
// each iteration's wgmma issues, issues the next K and the next V block of its
// walks (STAGES - 1 and STAGES - 2 blocks ahead; near a tile's end, the next
// tile's), and after the tile's last S the next tile's Q.  pos: the K/V
// blocks this block consumed before this tile; t, it: the tile and its
// ordinal in this block; next: this block's next tile (g.busy or more:
// none).  n_blocks > 0.
template <bool POS>
HK_DEVICE void attn_tile_tma(hk_lds_t lds, const attn_grid &g, const hk_tmap *tq, const hk_tmap *tk,
                             const hk_tmap *tv, int it, int pos, bool cross, int hkv, int b,
                             int n_blocks, int wg, int wg_full, const int (&klim)[2], float c, float (&m_run)[2],
                             float (&l_run)[2], o_acc_t &o)
{
    const bool leader = hk_thread_id() == 0;
    const int lane = hk_lane_id();
    hk_u32x4 p[PV_STEPS];
    float alpha[2];
    for (int j = 0; j < n_blocks; ++j) {
        const int kb = j * BLOCK_N;
        const int pk = pos + j;
        const int sk = pk % STAGES, sv = (pk + STAGES - 1) % STAGES;  // stages of K(j), V(j - 1)
        hk_mbar_wait(lds, k_full(sk), (pk / STAGES) & 1);

        s_acc_t s;
        hk_wgmma_fence();
        attn_issue_s(lds, wg, K_OFF + sk * KV_TILE_BYTES, s);
        hk_wgmma_commit();
        if (j > 0) {
            hk_mbar_wait(lds, v_full(sv), ((pk - 1) / STAGES) & 1);
            attn_issue_pv(lds, V_OFF + sv * KV_TILE_BYTES, p, o);
        }
        hk_wgmma_commit();
        if (leader) {
            // K(pk + STAGES - 1) and V(pk + STAGES - 2): blocks of this tile,
            // or (cross) the first ones of the next
            const int jk = j + STAGES - 1, jv = j + STAGES - 2;
            if (jk < n_blocks)
                attn_tma_fill(lds, K_OFF, k_full(0), k_empty(0), tk, pk + STAGES - 1, jk, hkv, b);
            else if (cross)
                attn_fill_next(lds, g, K_OFF, k_full(0), k_empty(0), tk, pk + STAGES - 1, jk - n_blocks);
            if (jv < n_blocks)
                attn_tma_fill(lds, V_OFF, v_full(0), v_empty(0), tv, pk + STAGES - 2, jv, hkv, b);
            else if (cross)
                attn_fill_next(lds, g, V_OFF, v_full(0), v_empty(0), tv, pk + STAGES - 2, jv - n_blocks);
        }

        hk_wgmma_wait<1>();                               // S(j)
        attn_acc_fence(s);
        if (lane == 0)
            hk_mbar_arrive(lds, k_empty(sk));
        hk_u32x4 pn[PV_STEPS];
        if (kb + BLOCK_N - 1 > wg_full)
            attn_softmax<true, POS>(s, c, kb, klim, m_run, l_run, alpha, pn);
        else
            attn_softmax<false, POS>(s, c, kb, klim, m_run, l_run, alpha, pn);
        if (j == n_blocks - 1)                            // the tile's last S is done
            attn_release_q(lds, g, tq, tk, tv, it, pos + n_blocks, cross, leader);
        hk_wgmma_wait<0>();                               // O += P(j - 1) V(j - 1)
        attn_acc_fence(o);
        if (j > 0 && lane == 0)
            hk_mbar_arrive(lds, v_empty(sv));
        attn_rescale(o, alpha);
#pragma unroll
        for (int i = 0; i < PV_STEPS; ++i)
            p[i] = pn[i];
    }
    const int pl = pos + n_blocks - 1, sv = pl % STAGES;  // the last V block
    hk_mbar_wait(lds, v_full(sv), (pl / STAGES) & 1);
    hk_wgmma_fence();
    attn_issue_pv(lds, V_OFF + sv * KV_TILE_BYTES, p, o);
    hk_wgmma_commit();
    hk_wgmma_wait<0>();
    attn_acc_fence(o);
    if (lane == 0)
        hk_mbar_arrive(lds, v_empty(sv));
}

// ---- a tile's output ----------------------------------------------------------------------
// The quad's sums, normalise, store rows row0 and row0 + 8 of tile w (lane
// holds O[row][8i + 2t, 8i + 2t + 1] of each n8 tile i) and their log-sum-exp.
HK_DEVICE void attn_store(const hk_args &a, const attn_grid &g, const attn_tile &w, int row0, const o_acc_t &o,
                          const float (&m_run)[2], const float (&l_run)[2])
{
    const int lane = hk_lane_id();
    const float neg_inf = -__builtin_huge_valf();
    hk_bf16 *Oh = a.O + (long)w.b * a.o_stride_b + (long)w.hq * a.o_stride_h;
    const bool vec_o = (a.o_stride_b % 2 == 0) && (a.o_stride_s % 2 == 0) && (a.o_stride_h % 2 == 0) &&
                       ((unsigned long)a.O % 4 == 0);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = l_run[h];
        l += hk_shfl_xor_f32(l, 1);
        l += hk_shfl_xor_f32(l, 2);
        const int qi = w.q0 + row0 + 8 * h;
        if (qi >= g.Sq)
            continue;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
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
        if (a.LSE && (lane & 3) == 0)
            hk_global_store_f32(a.LSE + ((long)w.b * g.Hq + w.hq) * g.Sq + qi,
                                l > 0.0f ? (m_run[h] + hk_log2f(l)) * LN2 : neg_inf);
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
HK_DEVICE void attn_store_empty(const hk_args &a, const attn_grid &g, int row0)
{
    for (int e = hk_block_id_x(); e < (g.nq - g.nqb) * g.hb; e += hk_grid_dim_x()) {
        o_acc_t o;
        float m_run[2], l_run[2];
        attn_o_init(o, m_run, l_run);
        attn_store(a, g, attn_empty_tile_at(g, e), row0, o, m_run, l_run);
    }
}

// ---- a block's tiles ----------------------------------------------------------------------
// row0: this lane's first row within a tile (the other is row0 + 8).
HK_DEVICE int attn_row0(void)
{
    const int warp = hk_wave_id();
    return (warp / 4) * WG_M + (warp % 4) * 16 + (hk_lane_id() >> 2);
}

// Bulk tensor copies: thread 0 sets up the mbarriers and starts the walks
// (Q of the first tile, STAGES - 1 K blocks, STAGES - 2 V blocks); the ring
// and the Q tile then pass from tile to tile without a block barrier.
template <bool POS>
HK_DEVICE void attn_run_tma(hk_lds_t lds, const hk_args &a, const attn_grid &g, float c)
{
    const bool leader = hk_thread_id() == 0;
    const int wg = hk_wave_id() / 4, row0 = attn_row0();
    if (leader) {
        hk_tmap_prefetch(&a.tmap_q);
        hk_tmap_prefetch(&a.tmap_k);
        hk_tmap_prefetch(&a.tmap_v);
        for (int s = 0; s < STAGES; ++s) {
            hk_mbar_init(lds, k_full(s), 1);
            hk_mbar_init(lds, v_full(s), 1);
            hk_mbar_init(lds, k_empty(s), WARPS);
            hk_mbar_init(lds, v_empty(s), WARPS);
        }
        hk_mbar_init(lds, q_full(), 1);
        hk_mbar_init(lds, q_empty(), WARPS);
        hk_mbar_init_fence();
        attn_info_put(lds, g, hk_block_id_x());
        const attn_info f0 = attn_info_get(lds);
        if (f0.t < g.busy) {
            attn_tma_q(lds, &a.tmap_q, f0);
            attn_issue_first(lds, &a.tmap_k, &a.tmap_v, f0, 0, STAGES - 1, STAGES - 2);
        }
    }
    hk_barrier();                                       // mbarriers initialised

    // The tiles with keys, then the others (O = 0, LSE = -inf): no branch
    // around the products, or ptxas serialises every wgmma (its C7520).
    // cross: every tile has the same STAGES - 1 or more blocks (not causal),
    // so the loop of each tile prefetches the next one's first blocks; else
    // they load once the tile's last S is done.
    const bool cross = !CAUSAL && (g.Sk + BLOCK_N - 1) / BLOCK_N >= STAGES - 1;
    int pos = 0, it = 0;
    for (int t = hk_block_id_x(); t < g.busy; t += hk_grid_dim_x(), ++it) {
        const attn_tile w = attn_tile_at(g, t);
        int wg_full, klim[2];
        attn_tile_limits(g, w, wg, row0, wg_full, klim);
        o_acc_t o;
        float m_run[2], l_run[2];
        attn_o_init(o, m_run, l_run);
        if (leader)
            attn_info_put(lds, g, t + hk_grid_dim_x());   // the next tile, for the producer
        hk_mbar_wait(lds, q_full(), it & 1);
        attn_tile_tma<POS>(lds, g, &a.tmap_q, &a.tmap_k, &a.tmap_v, it, pos, cross, w.hq / g.group, w.b,
                           w.n_blocks, wg, wg_full, klim, c, m_run, l_run, o);
        pos += w.n_blocks;
        attn_store(a, g, w, row0, o, m_run, l_run);
    }
    attn_store_empty(a, g, row0);
}

// Asynchronous copies by all threads (cp.async or element loads): one tile at
// a time, a block barrier between tiles (the next tile's copies overwrite
// what the last one's products read).
// The launch's dimensions wait in shared memory (grid_off) between tiles
// rather than in registers: the d64 kernels hold 128 registers.
HK_DEVICE int grid_off() { return BAR_OFF + 8 * (4 * STAGES + 2) + 32; }

HK_DEVICE void attn_grid_put(hk_lds_t lds, const attn_grid &g)
{
    hk_u32x4 v, u;
    v[0] = (unsigned)g.nq, v[1] = (unsigned)g.nqb, v[2] = (unsigned)g.Hq, v[3] = (unsigned)g.hb;
    u[0] = (unsigned)g.busy, u[1] = (unsigned)g.group, u[2] = (unsigned)g.Sq, u[3] = (unsigned)g.Sk;
    hk_lds_store_b128(lds, grid_off(), v);
    hk_lds_store_b128(lds, grid_off() + 16, u);
}

HK_DEVICE attn_grid attn_grid_get(hk_lds_t lds)
{
    const hk_u32x4 v = hk_lds_load_b128(lds, grid_off()), u = hk_lds_load_b128(lds, grid_off() + 16);
    attn_grid g;
    g.nq = (int)v[0], g.nqb = (int)v[1], g.Hq = (int)v[2], g.hb = (int)v[3];
    g.busy = (int)u[0], g.group = (int)u[1], g.Sq = (int)u[2], g.Sk = (int)u[3];
    return g;
}

template <bool VEC, bool POS>
HK_DEVICE void attn_run_copy(hk_lds_t lds, const hk_args &a, const attn_grid &g0, float c)
{
    const int wg = hk_wave_id() / 4, row0 = attn_row0();
    if (hk_thread_id() == 0)
        attn_grid_put(lds, g0);
    for (int t = hk_block_id_x();; t += hk_grid_dim_x()) {
        hk_barrier();
        const attn_grid g = attn_grid_get(lds);
        if (t >= g.busy)
            break;
        const attn_tile w = attn_tile_at(g, t);
        const int hkv = w.hq / g.group;
        const hk_bf16 *Qh = a.Q + (long)w.b * a.q_stride_b + (long)w.hq * a.q_stride_h;
        const hk_bf16 *Kh = a.K + (long)w.b * a.k_stride_b + (long)hkv * a.k_stride_h;
        const hk_bf16 *Vh = a.V + (long)w.b * a.v_stride_b + (long)hkv * a.v_stride_h;
        int wg_full, klim[2];
        attn_tile_limits(g, w, wg, row0, wg_full, klim);
        o_acc_t o;
        float m_run[2], l_run[2];
        attn_o_init(o, m_run, l_run);
        attn_kv_loop<VEC, POS>(lds, Qh, Kh, Vh, a.q_stride_s, a.k_stride_s, a.v_stride_s, w.q0, g.Sq, g.Sk,
                               w.n_blocks, wg, wg_full, klim, c, m_run, l_run, o);
        const attn_grid gs = attn_grid_get(lds);         // reloaded: not live through the loop
        attn_store(a, gs, attn_tile_at(gs, t), row0, o, m_run, l_run);
    }
    attn_store_empty(a, attn_grid_get(lds), row0);
}

// ---- kernel ------------------------------------------------------------------
// d64: two blocks per multiprocessor (at most 128 registers; the grid,
// op_attn.c, launches as many); d128: one.
#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM ]m4_ifelse(hkm_param([head_dim]), [64], [2], [1])[
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;
    attn_grid g;
    g.Sq = seqlen_q;
    g.Sk = seqlen_k;
    g.Hq = heads_q;
    g.group = heads_q / heads_k;
    g.nq = (seqlen_q + BLOCK_M - 1) / BLOCK_M;
    g.hb = heads_q * batch;
    g.nqb = attn_busy_blocks(g.nq, g.Sq, g.Sk);
    g.busy = g.nqb * g.hb;

    // 16-byte copies need 8-element strides and 16-byte aligned bases
    const bool vec = (hk_a.q_stride_b % 8 == 0) && (hk_a.q_stride_s % 8 == 0) && (hk_a.q_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.Q % 16 == 0) && (hk_a.k_stride_b % 8 == 0) &&
                     (hk_a.k_stride_s % 8 == 0) && (hk_a.k_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.K % 16 == 0) && (hk_a.v_stride_b % 8 == 0) &&
                     (hk_a.v_stride_s % 8 == 0) && (hk_a.v_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.V % 16 == 0);

    // the copy engine takes Q, K and V when their bases are 16-byte aligned
    // and every stride is a positive multiple of 8 elements under 2^39 (the
    // runtime built tmap_q, tmap_k and tmap_v under the same conditions)
    const long lim = 1L << 39;
    const bool use_tma = vec && hk_a.q_stride_b > 0 && hk_a.q_stride_s > 0 && hk_a.q_stride_h > 0 &&
                         hk_a.k_stride_b > 0 && hk_a.k_stride_s > 0 && hk_a.k_stride_h > 0 &&
                         hk_a.v_stride_b > 0 && hk_a.v_stride_s > 0 && hk_a.v_stride_h > 0 &&
                         hk_a.q_stride_b < lim && hk_a.q_stride_s < lim && hk_a.q_stride_h < lim &&
                         hk_a.k_stride_b < lim && hk_a.k_stride_s < lim && hk_a.k_stride_h < lim &&
                         hk_a.v_stride_b < lim && hk_a.v_stride_s < lim && hk_a.v_stride_h < lim;

    HK_LDS_DECLARE_DYNAMIC();
    const float c = hk_a.scale * LOG2E;                  // scores in base 2
    if (use_tma) {
        if (FOLD_SCALE && c > 0.0f)
            attn_run_tma<FOLD_SCALE>(hk_lds, hk_a, g, c);
        else
            attn_run_tma<false>(hk_lds, hk_a, g, c);
    } else if (FOLD_SCALE && c > 0.0f) {
        if (vec)
            attn_run_copy<true, FOLD_SCALE>(hk_lds, hk_a, g, c);
        else
            attn_run_copy<false, FOLD_SCALE>(hk_lds, hk_a, g, c);
    } else {
        if (vec)
            attn_run_copy<true, false>(hk_lds, hk_a, g, c);
        else
            attn_run_copy<false, false>(hk_lds, hk_a, g, c);
    }
}
]hkm_output_end()
