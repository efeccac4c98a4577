m4_divert(-1)                                                   -*- C -*-
# attn_bwd.sm90.hip.m4 - attention backward, NVIDIA Hopper (sm_90a) version of
# attn_bwd.hip.m4 on warpgroup MMA (wgmma) and bulk tensor copies (TMA): the
# same parameters, semantics and arguments, plus a caller-sized fp32
# workspace and counter array for dQ (gen/op_attn_bwd.c attn_bwd_plan_wgmma).
#
# Semantics (gen/op_attn_bwd.c): P = exp(scale Q K^T - LSE) under attn_fwd's
# bottom-right causal mask, D = rowsum(dO * O), dS = P * (dO V^T - D),
# dV = P^T dO, dK = scale dS^T Q, dQ = scale dS K; dK and dV summed over the
# query heads of a KV head.  A row with LSE = -inf (no visible key) gets P = 0
# and so exactly zero dQ; query blocks where no row sees a key are zeroed.
#
# Arguments (hkm_kernarg_struct): attn_bwd's (Q, K, V, O, dO, LSE, dQ, dK, dV,
# {q,k,v,o,do}_stride_{b,s,h}, scale, the run-time dimensions), then
# workspace (fp32, workspace_bytes), counters (counters_len, zero before the
# first launch; every launch leaves them zero) and the tensor maps tmap_q,
# tmap_k, tmap_v, tmap_o, tmap_do that libhkrt builds.  Every base 16-byte
# aligned and every stride a positive multiple of 8 elements (the launch rules
# check the strides; a misaligned base traps).
#
# FlashAttention-3's scheme made deterministic.  A block per BLOCK_N = 128
# keys of one KV head (grid x = key block fastest, then KV head, then batch):
# two consumer warpgroups, warpgroup w owning keys 64 w .. 64 w + 63 of the
# block, keep dK and dV in registers and walk every query head of the group
# and every 64-query step that sees the block, from the last step down.  The
# producer warpgroup (setmaxnreg hands most of its registers to the
# consumers, as in attn_fwd.sm90.hip.m4) has four jobs: warp 0 (one thread)
# copies K and V once and each step's Q, dO and O tiles into a ring of STAGES
# stages (bwd_produce; O_SLOT: O into one slot of its own); warp 3 computes
# each step's row terms D = rowsum(dO * O) and LSE log2 e (bwd_rows;
# D_SHARED: key block 0 publishes D per query block, the other key blocks
# read it and load no O; D_PRE: blocks ahead of all key blocks sum and
# publish D for every query block, bwd_d_block, and no key block loads O);
# warps 1 and 2 are the dQ writers of the even and
# the odd steps (bwd_dq_writer).  Per step and consumer warpgroup, wgmma
# bf16 -> fp32:
#   S^T  = K_w Q^T        m64n64, A = K (smem, K-major), B = Q (K-major)
#   dP^T = V_w dO^T       the same with V and dO
#   P^T  = exp2(S^T scale log2 e - LSE log2 e), dS^T = P^T (dP^T - D)
#   dV_w += P^T dO,  dK_w += dS^T Q    m64nDk16, A = P^T / dS^T from registers
#                         (the accumulator as bf16 pairs), B = dO / Q MN-major
#   dS^T to shared memory ([key][query], 128-byte swizzle; DS_BUFS tiles, by
#                         step parity, or one behind a second consumer
#                         barrier), a consumer barrier
#   dQ   = dS K           m64n64k16 with A = dS^T and B = K both MN-major
#                         (hk_wgmma_64x64x16_tatb): d128, warpgroup w takes
#                         columns 64 w .. 64 w + 63 over the block's keys;
#                         d64, all columns over its own 64 keys
# and writes its 64 x 64 fp32 dQ share into the step's dQ buffer (DQ_BUFS of
# them, 32 KiB each: both warpgroups' shares), so the consumers go on to the
# next step at once.  At d64 the registers allow two more things: K_w and
# V_w stay in registers as the A fragments of S^T and dP^T (KV_REGS), and
# the next step's S^T and dP^T are issued before the dQ share is written
# (PIPE).  dQ is summed over the key blocks in the fp32
# workspace in key-block order: the step's workspace tile is the buffer's
# image, a half per consumer warpgroup (d128: its 64 columns; d64: its keys'
# partial sum of all 64); the step's writer waits until the tile's counter
# says that every earlier key block's shares are in, adds the buffer with
# one 32 KiB bulk fp32 reduce (the first key block: a bulk copy), frees the
# buffer once the copy engine has read it, completes the writes, fences and
# adds 1 to the counter (a release add); at the last key block the finished
# sum is loaded back into the buffer and written as bf16 dQ (d64: both
# halves added, in a fixed order), and the counter goes back to 0.  So the
# sums have one order whatever the schedule: the same bits run to run.  A
# writer only waits for blocks of lower index (earlier key blocks of its
# own head), and so does a D_SHARED row warp (key block 0 of its head) or a
# D_PRE one (the D blocks: the launch's first), which the hardware starts no
# later than its own, so no schedule
# deadlocks; two writers taking the steps by parity overlap one
# step's wait for its sum to land with the next's.  The workspace tile is
# [half][64 rows][64 columns] with 16-byte chunks XOR row % 8 (bwd_dq_off).
# Scratch: batch x heads_q x cdiv(seqlen_q, 64) x (64 x 128 floats (both
# head dims) + D's 64) and twice as many counters (a turn and a D flag).
#
# Measured on the H200: docs/PERF.md "attn_bwd" (and what was tried there).

m4_include([attn_common.m4])
hkm_attn_check_params([64], [128])
m4_ifelse(hkm_block_size, [384], [],
      [hkm_fatal([attn_bwd for sm_90a needs hkm_block_size 384, got ]hkm_block_size)])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;   // two consumer warpgroups and a producer
static constexpr int CONS_THREADS = 256;
// registers per thread after the hand-over (the plan's cons_regs; 240 spilled
// in the producer warpgroup, whose writers need more than 24), the producer
// warpgroup keeping the rest of the block's launch allocation
static constexpr int LAUNCH_REGS = 65536 / ATTN_THREADS / 8 * 8;
static constexpr int CONS_REGS = ]hkm_tune([cons_regs])[;
static constexpr int PROD_REGS = (ATTN_THREADS * LAUNCH_REGS - CONS_THREADS * CONS_REGS) / 128 / 8 * 8;
static constexpr int D = ]hkm_param([head_dim])[;
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int BLOCK_N = ]hkm_tune([kv_block])[;     // keys per block
static constexpr int BLOCK_M = ]hkm_tune([q_step])[;       // queries per step
static constexpr int WG_N = 64;                            // keys per consumer warpgroup
static constexpr int STAGES = ]hkm_tune([stages])[;        // Q / dO / O ring depth
static constexpr int DYNAMIC_LDS = ]hkm_dynamic_lds[;
static constexpr int BAR_BYTES = ]hkm_tune([bar_bytes])[;
static constexpr int WARPS = CONS_THREADS / 32;
static constexpr int CHUNKS = D / 8;                       // 16-byte chunks per row
static constexpr int K_STEPS = D / 16;                     // k16 steps over head_dim
static constexpr int M_STEPS = BLOCK_M / 16;               // k16 steps over a step's queries
static constexpr int S_TILES = BLOCK_M / 8;                // n8 tiles of S^T (queries)
static constexpr int G_TILES = D / 8;                      // n8 tiles of dK, dV
static constexpr int DQ_N = 64;                            // dQ columns per product
// d128: warpgroup w takes dQ columns 64 w .. over all 128 keys; d64: all
// columns over its own 64 keys (two partial sums per block, each summed in
// its half of the workspace tile)
static constexpr bool DQ_SPLIT = D == 128;
static constexpr int DQ_KEYS = DQ_SPLIT ? BLOCK_N : WG_N;  // keys of a dQ product
static constexpr int Q_SLAB = BLOCK_M * 128;               // one 64-column slab of a step tile
static constexpr int KV_SLAB = BLOCK_N * 128;
static constexpr int Q_TILE = BLOCK_M * D * 2;
static constexpr int KV_TILE = BLOCK_N * D * 2;
static constexpr int K_OFF = 0, V_OFF = KV_TILE;
static constexpr int ST_OFF = 2 * KV_TILE;                 // stage s: Q, dO, O
// O_SLOT: O in one slot of its own (freed by the row warp once D is summed),
// not in every stage
static constexpr bool O_SLOT = ]hkm_tune([o_slot])[;
// D_PRE: the launch's first blocks (the D blocks) sum D for every query tile
// and publish it as key block 0 does under D_SHARED; then no key block loads
// O or waits for another's step to have D.  1: every launch has D blocks (no
// O in the ring); 2: the grid formula (gen/op_attn_bwd.c) says, per problem,
// whether it holds them (else D_SHARED or each block's own D), and the
// kernel reads it off the grid's size (bwd_grid_make): the rule in one place
static constexpr int D_PRE = ]hkm_tune([d_pre])[;
static constexpr int STAGE_BYTES = (O_SLOT || D_PRE == 1 ? 2 : 3) * Q_TILE;
static constexpr int O_SLOT_OFF = ST_OFF + STAGES * STAGE_BYTES;
static constexpr int DS_OFF = O_SLOT_OFF + (O_SLOT ? Q_TILE : 0);  // dS^T [key][query]
static constexpr int DS_TILE = BLOCK_N * BLOCK_M * 2;
// 2: one per step parity; 1: a consumer barrier before each step's store
// (every warpgroup's dQ product of the step before is done)
static constexpr int DS_BUFS = ]hkm_tune([ds_bufs])[;
static constexpr int DS_BYTES = DS_BUFS * DS_TILE;
// D_SHARED: key block 0 of each KV head sums D = rowsum(dO * O) for every
// query block and publishes it (in the workspace tile, a flag per tile in
// the second half of the counters); the other key blocks load no O and
// read D from there
static constexpr bool D_SHARED = ]hkm_tune([d_shared])[;
static constexpr bool D_READ = D_SHARED || D_PRE;          // the workspace tile holds D, a flag per tile
static constexpr int WS_TILE = BLOCK_M * 128 + (D_READ ? BLOCK_M : 0);  // floats per 64 queries
static constexpr int ROW_OFF = DS_OFF + DS_BYTES;          // per stage: LSE log2 e, then D, per query
static constexpr int ROW_BYTES = STAGES * 2 * BLOCK_M * 4;
static constexpr int DQ_OFF = ROW_OFF + ROW_BYTES;         // dQ buffers: a 64 x 64 fp32 share per warpgroup
static constexpr int DQ_BUF = 2 * 64 * 64 * 4;             // one step's shares, the workspace tile's image
// 1: the step's writer frees it once read; more: step s fills buffer s % DQ_BUFS
static constexpr int DQ_BUFS = ]hkm_tune([dq_bufs])[;
static constexpr int DQ_BARS = DQ_BUFS == 1 ? 2 : DQ_BUFS;  // dq_full / dq_empty pairs: step s's is s % DQ_BARS
// KV_REGS (d64): each consumer warp holds its 16 keys of K and V as wgmma A
// fragments (32 registers), so S^T and dP^T read only Q and dO from shared
// memory.  PIPE (d64): the next step's S^T and dP^T are issued behind the
// step's dQ product, before its share goes to the buffer.
static constexpr bool KV_REGS = ]hkm_tune([kv_regs])[;
static constexpr bool PIPE = ]hkm_tune([pipe])[;
static constexpr int DQ_BYTES = DQ_BUFS * DQ_BUF;
static constexpr int BAR_OFF = DQ_OFF + DQ_BYTES;
]hkm_attn_limits()[

static_assert(BLOCK_N == 2 * WG_N && BLOCK_M == 64, "two warpgroups of 64 keys, steps of 64 queries");
static_assert(D == 64 || D == 128, "head_dim 64 or 128");
static_assert(BAR_OFF + BAR_BYTES + HK_LDS_DYNAMIC_SLACK == DYNAMIC_LDS,
              "dynamic_lds holds K, V, the ring, dS^T, the row terms and the mbarriers (gen/op_attn_bwd.c)");
static_assert(STAGES * 2 * BLOCK_M * 4 <= ROW_BYTES, "row terms per stage");
static_assert((3 * STAGES + 2 * DQ_BARS + 6) * 8 <= BAR_BYTES,
              "three mbarriers per stage, one for K and V, two per dQ buffer, one per dQ writer, two for O");
static_assert(DS_BUFS == 1 || DS_BUFS == 2, "one or two dS^T tiles");
static_assert(DQ_BUFS >= 1 && DQ_BUFS <= 4, "one to four dQ buffers");
static_assert((!KV_REGS && !PIPE) || D == 64, "K and V in registers, and the pipelined step, fit at head_dim 64 only");
static_assert(Q_TILE % 1024 == 0 && KV_TILE % 1024 == 0 && DS_TILE % 1024 == 0, "swizzled tiles on 1024-byte boundaries");
static_assert(CONS_THREADS * CONS_REGS + 128 * PROD_REGS <= ATTN_THREADS * LAUNCH_REGS,
              "the registers handed over fit the block's launch allocation");

template <int N> struct bwd_acc;
template <> struct bwd_acc<64> { typedef hk_wgmma_acc64_t t; };
template <> struct bwd_acc<128> { typedef hk_wgmma_acc128_t t; };
typedef bwd_acc<D>::t g_acc_t;                            // dK, dV: 64 keys x D per warpgroup
typedef hk_wgmma_acc64_t s_acc_t;                         // S^T, dP^T: 64 keys x 64 queries; dQ: 64 x 64
HK_DEVICE void bwd_wgmma_rs(hk_wgmma_acc64_t &d, hk_u32x4 a, unsigned long long b) { hk_wgmma_rs_64x64x16_tb(d, a, b, 1); }
HK_DEVICE void bwd_wgmma_rs(hk_wgmma_acc128_t &d, hk_u32x4 a, unsigned long long b) { hk_wgmma_rs_64x128x16_tb(d, a, b, 1); }
HK_DEVICE void bwd_fence(hk_wgmma_acc64_t &d) { hk_wgmma_rs_fence_acc64(d); }
HK_DEVICE void bwd_fence(hk_wgmma_acc128_t &d) { hk_wgmma_rs_fence_acc128(d); }

// A barrier of the consumer warpgroups only.
HK_DEVICE void bwd_sync(void) { hk_barrier_part(1, CONS_THREADS); }

// mbarriers: per stage q_full (the copying thread's arrival and the tile
// bytes), q_empty (one arrival per consumer warp) and rows_full (the row
// warp's 32 lanes); kv_full for K and V; for step s, at s % DQ_BARS,
// dq_full (the 256 consumer threads wrote the step's shares) and dq_empty
// (its writer is done with the buffer); per dQ writer k (the steps of
// parity k) dq_load (the finished sum landed back in shared memory).
HK_DEVICE int q_full(int s) { return BAR_OFF + 8 * s; }
HK_DEVICE int q_empty(int s) { return BAR_OFF + 8 * (STAGES + s); }
HK_DEVICE int rows_full(int s) { return BAR_OFF + 8 * (2 * STAGES + s); }
HK_DEVICE int kv_full() { return BAR_OFF + 8 * (3 * STAGES); }
HK_DEVICE int dq_full(int s) { return BAR_OFF + 8 * (3 * STAGES + 1 + s % DQ_BARS); }
HK_DEVICE int dq_empty(int s) { return BAR_OFF + 8 * (3 * STAGES + 1 + DQ_BARS + s % DQ_BARS); }
HK_DEVICE int dq_phase(int s) { return (s / DQ_BARS) & 1; }
HK_DEVICE int dq_load(int k) { return BAR_OFF + 8 * (3 * STAGES + 1 + 2 * DQ_BARS + k); }
HK_DEVICE int o_full() { return BAR_OFF + 8 * (3 * STAGES + 4 + 2 * DQ_BARS); }   // O_SLOT: O landed
HK_DEVICE int o_empty() { return BAR_OFF + 8 * (3 * STAGES + 5 + 2 * DQ_BARS); }  // O_SLOT: the row warp's 32 lanes read it
// Byte offset of step s's O tile (stage st).
HK_DEVICE int o_tile(int st) { return O_SLOT ? O_SLOT_OFF : ST_OFF + st * STAGE_BYTES + 2 * Q_TILE; }
// The dQ buffer of step s (byte offset).
HK_DEVICE int dq_buf(int s) { return DQ_OFF + (s % DQ_BUFS) * DQ_BUF; }
// Float offset of dQ element (row, col) in a 64 x 64 tile (col 0 .. 63 of the
// warpgroup's columns): 16-byte chunks XOR row % 8.
HK_DEVICE int bwd_dq_off(int row, int col) { return row * 64 + ((((col >> 2) ^ (row & 7))) << 2) + (col & 3); }

// ---- the launch's work --------------------------------------------------------
struct bwd_grid {
    int Sq, Sk, Hq, Hk, group, nq, nkv;
    long tiles;                         // batch x heads_q x nq: the counters of the dQ sums
    int nd;                             // D blocks ahead of the key blocks (D_PRE)
    bool pre;                           // nd > 0: every key block reads D from them
};
struct bwd_block {
    int j, hkv, b, first, n_i, steps;   // key block, KV head, batch; its query steps per head, all steps
};

HK_DEVICE bwd_grid bwd_grid_make(int Sq, int Sk, int Hq, int Hk, int batch)
{
    const int nq = (Sq + BLOCK_M - 1) / BLOCK_M, nkv = (Sk + BLOCK_N - 1) / BLOCK_N;
    bwd_grid g = {Sq, Sk, Hq, Hk, Hq / Hk, nq, nkv, (long)batch * Hq * nq, 0, false};
    // the grid: the D blocks, then a block per key block (at least one) of each KV head and batch
    g.nd = D_PRE ? (int)(hk_grid_dim_x() - (long)(nkv > 0 ? nkv : 1) * Hk * batch) : 0;
    g.pre = g.nd > 0;
    return g;
}

// Block x (grid x = max(nkv, 1) x Hk x batch): key block x % nkv of head x /
// nkv, or, at d128, key block x / heads of head x % heads when causal (the
// longest blocks of every head first: GQA 32:8 and 12:4 at 8K 1.5x faster on
// the H200, MHA 8K 1.11x, 2K and 32K 2-3% slower; d64 8K 8% and 26% slower,
// so not there) or when at most KEY_FIRST_HEADS KV heads x batch share the
// grid (non-causal 8K 16:16 B2, 32 of them: 1.09x; HipKittens' 64:8 B16 / B15,
// 128 and 120: 0.76-0.91x at 4K / 16K, each row of key blocks reading all
// heads' Q and dO from DRAM again), and the query steps that see it: from
// the first whose last row sees key 128 j to the last.
static constexpr int KEY_FIRST_HEADS = 32;
HK_DEVICE bwd_block bwd_block_make(const bwd_grid &g, int x, int nblocks)
{
    const int per = g.nkv > 0 ? g.nkv : 1;
    bwd_block w;
    if (D == 128 && (CAUSAL || nblocks / per <= KEY_FIRST_HEADS)) {
        // key block first across all heads: every head's longest blocks
        // (j = 0) start first; still only lower indices are waited for
        const int heads = nblocks / per, r = x % heads;
        w.j = x / heads;
        w.hkv = r % g.Hk;
        w.b = r / g.Hk;
    } else {
        w.j = x % per;
        w.hkv = (x / per) % g.Hk;
        w.b = x / per / g.Hk;
    }
    const int lo = w.j * BLOCK_N - (g.Sk - g.Sq) - (BLOCK_M - 1);
    w.first = !CAUSAL || lo <= 0 ? 0 : (lo + BLOCK_M - 1) / BLOCK_M;
    w.n_i = w.j < g.nkv && w.first < g.nq ? g.nq - w.first : 0;
    w.steps = w.n_i * g.group;
    return w;
}

// Step s of the block: Q_MAJOR, query block from the last down, the group's
// query heads in turn at each (so every key block of a KV head takes a query
// tile at the same step index as key block 0, which under D_SHARED publishes
// its D: a shorter causal block never runs ahead onto the next head's tiles
// and waits); else each head's query blocks from the last down in turn.
static constexpr bool Q_MAJOR = ]hkm_tune([q_major])[;
HK_DEVICE void bwd_step_at(const bwd_grid &g, const bwd_block &w, int s, int &hq, int &qi)
{
    const int gi = Q_MAJOR ? s % g.group : s / w.n_i;
    hq = w.hkv * g.group + gi;
    qi = g.nq - 1 - (Q_MAJOR ? s / g.group : s - gi * w.n_i);
}

// The last key block that any row of query block qi sees (qi has keys).
HK_DEVICE int bwd_last_block(const bwd_grid &g, int qi)
{
    if (!CAUSAL)
        return g.nkv - 1;
    const int last = (qi * BLOCK_M + BLOCK_M - 1 + g.Sk - g.Sq) / BLOCK_N;
    return last < g.nkv - 1 ? last : g.nkv - 1;
}

// Query blocks in which no row sees a key: the first ones (causal, seqlen_q >
// seqlen_k), or all when there are no keys.
HK_DEVICE int bwd_empty_blocks(const bwd_grid &g)
{
    if (g.Sk <= 0)
        return g.nq;
    if (!CAUSAL || g.Sq <= g.Sk)
        return 0;
    const int e = (g.Sq - g.Sk) / BLOCK_M;
    return e < g.nq ? e : g.nq;
}

// ---- the producer ------------------------------------------------------------------
// One thread: K and V of the block once, then per step its Q, dO and O tiles
// (D / 64 boxes of 64 columns x 64 queries each; rows past seqlen_q read
// zeros) into stage s % STAGES once the consumers released it.
HK_DEVICE void bwd_tma_rows(hk_lds_t lds, int off, const hk_tmap *map, int q0, int hq, int b, int bar)
{
#pragma unroll
    for (int sl = 0; sl < D / 64; ++sl)
        hk_tma_load_4d(lds, off + sl * Q_SLAB, map, sl * 64, q0, hq, b, bar);
}

HK_DEVICE void bwd_produce(hk_lds_t lds, const hk_args &a, const bwd_grid &g, const bwd_block &w)
{
    hk_tmap_prefetch(&a.tmap_q);
    hk_tmap_prefetch(&a.tmap_do);
    hk_tmap_prefetch(&a.tmap_o);
    if (w.steps == 0)
        return;
    hk_mbar_arrive_expect_tx(lds, kv_full(), 2 * KV_TILE);
#pragma unroll
    for (int sl = 0; sl < D / 64; ++sl) {
        hk_tma_load_4d(lds, K_OFF + sl * KV_SLAB, &a.tmap_k, sl * 64, w.j * BLOCK_N, w.hkv, w.b, kv_full());
        hk_tma_load_4d(lds, V_OFF + sl * KV_SLAB, &a.tmap_v, sl * 64, w.j * BLOCK_N, w.hkv, w.b, kv_full());
    }
    const bool no_o = g.pre || (D_SHARED && w.j > 0);  // D comes from the D blocks or key block 0
    for (int s = 0; s < w.steps; ++s) {
        int hq, qi;
        bwd_step_at(g, w, s, hq, qi);
        const int st = s % STAGES;
        if (s >= STAGES)
            hk_mbar_wait(lds, q_empty(st), (s / STAGES + 1) & 1);
        hk_mbar_arrive_expect_tx(lds, q_full(st), no_o || O_SLOT ? 2 * Q_TILE : STAGE_BYTES);
        const int off = ST_OFF + st * STAGE_BYTES;
        bwd_tma_rows(lds, off, &a.tmap_q, qi * BLOCK_M, hq, w.b, q_full(st));
        bwd_tma_rows(lds, off + Q_TILE, &a.tmap_do, qi * BLOCK_M, hq, w.b, q_full(st));
        if (no_o) {
        } else if (!O_SLOT) {
            bwd_tma_rows(lds, o_tile(st), &a.tmap_o, qi * BLOCK_M, hq, w.b, q_full(st));
        } else {                                        // once the row warp read step s - 1's
            if (s > 0)
                hk_mbar_wait(lds, o_empty(), (s - 1) & 1);
            hk_mbar_arrive_expect_tx(lds, o_full(), Q_TILE);
            bwd_tma_rows(lds, O_SLOT_OFF, &a.tmap_o, qi * BLOCK_M, hq, w.b, o_full());
        }
    }
}

// ---- one step of the consumers ------------------------------------------------------
// Byte offset of 16-byte chunk c of row r in a step tile (64 rows, D / 64 slabs).
HK_DEVICE int swz_q(int r, int c) { return (c >> 3) * Q_SLAB + r * 128 + (((c & 7) ^ (r & 7)) << 4); }

// The row warp (producer warp 3): per step, D = rowsum(dO * O) and LSE
// log2 e (+inf for a row past seqlen_q or with no visible key: its P is 0)
// of the step's 64 rows, two per lane, into the stage's row buffer.
// D_SHARED: step s's D (rows lane and lane + 32) from key block 0's
// publication, once all its lanes counted in.
HK_DEVICE void bwd_rows_fetch(const hk_args &a, const bwd_grid &g, const bwd_block &w, int s, int lane, float (&d)[2])
{
    int hq, qi;
    bwd_step_at(g, w, s, hq, qi);
    const long tile = ((long)w.b * g.Hq + hq) * g.nq + qi;
    const unsigned *flag = (const unsigned *)a.counters + g.tiles + tile;
    if (lane == 0)
        while (hk_load_acquire_gpu(flag) < 32u)
            hk_sleep_ns(32);
    hk_syncwarp();
    const float *dws = a.workspace + tile * WS_TILE + BLOCK_M * 128;
#pragma unroll
    for (int k = 0; k < 2; ++k)
        d[k] = hk_global_load_f32_l2(dws + lane + 32 * k);
}

HK_DEVICE void bwd_rows(hk_lds_t lds, const hk_args &a, const bwd_grid &g, const bwd_block &w)
{
    const int lane = hk_lane_id();
    const bool sub = g.pre || (D_SHARED && w.j > 0), pub = D_SHARED && !g.pre && w.j == 0;
    for (int s = 0; s < w.steps; ++s) {
        int hq, qi;
        bwd_step_at(g, w, s, hq, qi);
        const int st = s % STAGES, off = ST_OFF + st * STAGE_BYTES;
        const long tile = ((long)w.b * g.Hq + hq) * g.nq + qi;
        float lse[2];                                   // loaded before the tiles land
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int q = qi * BLOCK_M + lane + 32 * k;
            lse[k] = q < g.Sq ? hk_global_load_f32(a.LSE + ((long)w.b * g.Hq + hq) * g.Sq + q) : -__builtin_huge_valf();
        }
        float sums[2] = {0.0f, 0.0f};
        if (sub)                                        // before the tiles land (the row warp runs ahead)
            bwd_rows_fetch(a, g, w, s, lane, sums);
        hk_mbar_wait(lds, q_full(st), (s / STAGES) & 1);   // (sub: the stage's row buffer is free)
        if (!sub) {
            if (O_SLOT)
                hk_mbar_wait(lds, o_full(), s & 1);
#pragma unroll
            for (int k = 0; k < 2; ++k) {
                const int r = lane + 32 * k;
                float sum = 0.0f;
#pragma unroll 2
                for (int c = 0; c < CHUNKS; ++c) {
                    const hk_u32x4 x = hk_lds_load_b128(lds, off + Q_TILE + swz_q(r, c));
                    const hk_u32x4 y = hk_lds_load_b128(lds, o_tile(st) + swz_q(r, c));
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        sum += hk_u32_as_f32(x[e] << 16) * hk_u32_as_f32(y[e] << 16);
                        sum += hk_u32_as_f32(x[e] & 0xffff0000u) * hk_u32_as_f32(y[e] & 0xffff0000u);
                    }
                }
                sums[k] = sum;
            }
            if (O_SLOT)
                hk_mbar_arrive(lds, o_empty());         // this lane is done with O
        }
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int r = lane + 32 * k;
            const float l2 = lse[k] == -__builtin_huge_valf() ? __builtin_huge_valf() : lse[k] * LOG2E;
            hk_lds_store_b32(lds, ROW_OFF + st * 512 + r * 4, hk_f32_as_u32(l2));
            hk_lds_store_b32(lds, ROW_OFF + st * 512 + BLOCK_M * 4 + r * 4, hk_f32_as_u32(sums[k]));
        }
        hk_mbar_arrive(lds, rows_full(st));
        if (pub && bwd_last_block(g, qi) > 0) {         // publish D: each lane its rows, then counts in
            float *dws = a.workspace + tile * WS_TILE + BLOCK_M * 128;
#pragma unroll
            for (int k = 0; k < 2; ++k)
                hk_global_store_f32(dws + lane + 32 * k, sums[k]);
            hk_red_add_release_gpu((unsigned *)a.counters + g.tiles + tile, 1);
        }
    }
}

// S^T = K_w Q^T or dP^T = V_w dO^T: A = 64 key rows of the K (V) tile, B = the
// step tile; a k16 step inside a 128-byte row adds 32 bytes, a slab its bytes.
HK_DEVICE void bwd_issue_t(unsigned long long kd, unsigned long long qd, s_acc_t &s)
{
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk) {
        const int step = (kk & 3) * 32;
        hk_wgmma_64x64x16(s, hk_wgmma_desc_add(kd, (kk >> 2) * KV_SLAB + step),
                          hk_wgmma_desc_add(qd, (kk >> 2) * Q_SLAB + step), kk > 0);
    }
}

// The same with A = the warp's 16 keys of K (V) in registers (KV_REGS).
HK_DEVICE void bwd_issue_t_rs(const hk_u32x4 (&ka)[K_STEPS], unsigned long long qd, s_acc_t &s)
{
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk)
        hk_wgmma_rs_64x64x16(s, ka[kk], hk_wgmma_desc_add(qd, (kk >> 2) * Q_SLAB + (kk & 3) * 32), kk > 0);
}

// Rows key0 + 16 w + g (+ 8) of the K (V) tile at off as the A fragments of
// the k16 steps over head_dim (lane (g, t): columns 16 kk + 2 t (+ 8)).
HK_DEVICE void bwd_load_a(hk_lds_t lds, int off, int key0, hk_u32x4 (&ka)[K_STEPS])
{
    const int lane = hk_lane_id(), r0 = key0 + (hk_wave_id() % 4) * 16 + (lane >> 2);
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = r0 + 8 * (i & 1), c = 2 * kk + (i >> 1);     // row, 16-byte chunk
            ka[kk][i] = hk_lds_load_b32(lds, off + (c >> 3) * KV_SLAB + r * 128 + (((c & 7) ^ (r & 7)) << 4) + (lane & 3) * 4);
        }
}

// S^T and dP^T of step s (stage s % STAGES), once its tiles landed.
HK_DEVICE void bwd_issue_sdp(hk_lds_t lds, int s, unsigned long long kd, unsigned long long vd, unsigned long long st0,
                             const hk_u32x4 (&ka)[K_STEPS], const hk_u32x4 (&va)[K_STEPS], s_acc_t &sa, s_acc_t &dpa)
{
    const int st = s % STAGES, sto = st * STAGE_BYTES;
    hk_mbar_wait(lds, q_full(st), (s / STAGES) & 1);
    hk_wgmma_fence();
    if constexpr (KV_REGS) {
        bwd_issue_t_rs(ka, hk_wgmma_desc_add(st0, sto), sa);
        bwd_issue_t_rs(va, hk_wgmma_desc_add(st0, sto + Q_TILE), dpa);
    } else {
        bwd_issue_t(kd, hk_wgmma_desc_add(st0, sto), sa);
        bwd_issue_t(vd, hk_wgmma_desc_add(st0, sto + Q_TILE), dpa);
    }
    hk_wgmma_commit();
}

// G += A B with A from registers (P^T or dS^T, k = the step's queries) and B a
// step tile MN-major (k16 = 16 query rows, 2048 bytes).
HK_DEVICE void bwd_issue_g(unsigned long long bd, const hk_u32x4 (&p)[M_STEPS], g_acc_t &acc)
{
#pragma unroll
    for (int ks = 0; ks < M_STEPS; ++ks)
        bwd_wgmma_rs(acc, p[ks], hk_wgmma_desc_add(bd, ks * 2048));
}

// dQ (64 queries x 64 columns) = dS K: A = dS^T [key][query] MN-major, B = the
// K tile's slab MN-major; k16 = 16 keys (2048 bytes in both).
HK_DEVICE void bwd_issue_dq(unsigned long long dsd, unsigned long long kd, s_acc_t &dq)
{
#pragma unroll
    for (int kk = 0; kk < DQ_KEYS / 16; ++kk)
        hk_wgmma_64x64x16_tatb(dq, hk_wgmma_desc_add(dsd, kk * 2048), hk_wgmma_desc_add(kd, kk * 2048), kk > 0);
}

// P^T and dS^T of the warpgroup's 64 keys (rows) x 64 queries (columns) as
// bf16 A fragments (k step ks = n8 tiles 2 ks, 2 ks + 1).  Lane (g, t) of
// warp w holds keys 16 w + g (+ 8) and queries 8 i + 2 t (+ 1); the row
// terms are at byte ro of shared memory.  MASKED: keys past seqlen_k or past
// the query's last visible key give P = 0.
template <bool MASKED>
HK_DEVICE void bwd_softmax(hk_lds_t lds, s_acc_t &s, s_acc_t &dp, float c, int key0, int q0, const bwd_grid &g,
                           int ro, hk_u32x4 (&p)[M_STEPS], hk_u32x4 (&ds)[M_STEPS])
{
    const int lane = hk_lane_id();
    const int krow = key0 + (hk_wave_id() % 4) * 16 + (lane >> 2);
    // row h of the lane (key krow + 8 h) sees query column col + e iff
    // 8 h < kend and 8 h - col - e <= kdiag (two registers for the mask)
    const int kend = g.Sk - krow, kdiag = q0 + g.Sk - g.Sq - krow;
#pragma unroll
    for (int i = 0; i < S_TILES; ++i) {
        const int col = 8 * i + 2 * (lane & 3);
        const hk_u32x2 l2 = hk_lds_load_b64(lds, ro + col * 4);
        const hk_u32x2 dd = hk_lds_load_b64(lds, ro + BLOCK_M * 4 + col * 4);
        float pv[4], dv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            float x = hk_exp2f(s[4 * i + e] * c - hk_u32_as_f32(l2[e & 1]));
            if (MASKED) {
                const int dk = 8 * (e >> 1);
                if (dk >= kend || (CAUSAL && dk - col - (e & 1) > kdiag))
                    x = 0.0f;
            }
            pv[e] = x;
            dv[e] = x * (dp[4 * i + e] - hk_u32_as_f32(dd[e & 1]));
        }
        p[i / 2][(i % 2) * 2] = hk_f32x2_to_bf16x2(pv[0], pv[1]);
        p[i / 2][(i % 2) * 2 + 1] = hk_f32x2_to_bf16x2(pv[2], pv[3]);
        ds[i / 2][(i % 2) * 2] = hk_f32x2_to_bf16x2(dv[0], dv[1]);
        ds[i / 2][(i % 2) * 2 + 1] = hk_f32x2_to_bf16x2(dv[2], dv[3]);
    }
}

// dS^T of the warpgroup's keys into [key][query] tile buf (one 128-byte
// swizzled row per key): lane (g, t) writes word t of chunk i of keys
// key0 + 16 w + g and + 8.
HK_DEVICE void bwd_store_ds(hk_lds_t lds, int key0, const hk_u32x4 (&ds)[M_STEPS], int buf)
{
    const int lane = hk_lane_id();
    const int r0 = key0 + (hk_wave_id() % 4) * 16 + (lane >> 2);
#pragma unroll
    for (int i = 0; i < S_TILES; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = r0 + 8 * h;
            hk_lds_store_b32(lds, DS_OFF + buf * DS_TILE + r * 128 + ((i ^ (r & 7)) << 4) + (lane & 3) * 4, ds[i / 2][(i % 2) * 2 + h]);
        }
}

// dQ writer k (a warp; lane 0 but for the final conversion) takes the
// steps of parity k, so that one step's wait for the sum to land overlaps
// the next step's: wait until the consumers wrote both shares (dq_full) and
// its turn came (the counter says that every earlier key block's shares
// are in), add the step's buffer (both halves: 32 KiB) to the workspace
// tile with one bulk fp32 reduce (the first key block: a bulk copy), free
// the buffer once read (dq_empty: the consumers go on), complete the
// writes and count the block in (a release add).  At the step's last key
// block the finished sum goes back into the buffer, all 32 lanes write it
// as bf16 dQ (d64: the two halves added, in a fixed order), then the
// buffer is freed and the counter put back to 0; a tile with a single key
// block goes from the buffer to dQ without the workspace.
HK_DEVICE void bwd_dq_writer(hk_lds_t lds, const hk_args &a, const bwd_grid &g, const bwd_block &w, int k)
{
    const int lane = hk_lane_id();
    int nfin = 0;                                       // this writer's conversions
    for (int s = k; s < w.steps; s += 2) {
        int hq, qi;
        bwd_step_at(g, w, s, hq, qi);
        const int last = bwd_last_block(g, qi);
        const bool final = w.j == last, first = w.j == 0, single = last == 0;   // single: one key block
        const long tile = ((long)w.b * g.Hq + hq) * g.nq + qi;
        const int buf = dq_buf(s);
        unsigned *cnt = (unsigned *)a.counters + tile;
        float *ws = a.workspace + tile * WS_TILE;
        hk_mbar_wait(lds, dq_full(s), dq_phase(s));
        // lane 0 alone waits for its turn and issues the copies; the other
        // lanes wait at hk_syncwarp, not on an mbarrier (lanes spinning on
        // mbarrier waits while lane 0 was away hung the H200 runs)
        if (lane == 0) {
            if (w.j > 0)
                while (hk_load_acquire_gpu(cnt) < (unsigned)w.j)
                    hk_sleep_ns(32);
            hk_fence_proxy_async_global();
            if (!single) {
                if (first)
                    hk_bulk_store(ws, lds, buf, DQ_BUF);
                else
                    hk_bulk_reduce_add_f32(ws, lds, buf, DQ_BUF);
                hk_bulk_commit();
                if (!final) {                           // read: the consumers may refill the buffer
                    hk_bulk_wait_read<0>();
                    hk_mbar_arrive(lds, dq_empty(s));
                }
                hk_bulk_wait<0>();
                hk_fence_proxy_async_global();
                if (!final) {
                    hk_red_add_release_gpu(cnt, 1);
                } else {                                // the sum is complete: back into the buffer
                    hk_mbar_arrive_expect_tx(lds, dq_load(k), DQ_BUF);
                    hk_bulk_load(lds, buf, ws, DQ_BUF, dq_load(k));
                    hk_mbar_wait(lds, dq_load(k), nfin & 1);
                }
            }
        }
        hk_syncwarp();
        if (final) {
            if (!single)                                // complete already: every lane sees the load
                hk_mbar_wait(lds, dq_load(k), nfin & 1);
            ++nfin;
            // bf16 dQ: lane l takes 8-column groups l, l + 32, ... (d128:
            // group c8 in half c8 / 8; d64: the two halves' sum)
            for (int e = lane; e < BLOCK_M * CHUNKS; e += 32) {
                const int row = e / CHUNKS, c8 = e % CHUNKS, q = qi * BLOCK_M + row;
                const int src = buf + (DQ_SPLIT ? (c8 >> 3) * 16384 : 0), c = 8 * (c8 & 7);
                hk_u32x4 x = hk_lds_load_b128(lds, src + 4 * bwd_dq_off(row, c));
                hk_u32x4 y = hk_lds_load_b128(lds, src + 4 * bwd_dq_off(row, c + 4));
                if (!DQ_SPLIT) {
                    const hk_u32x4 x1 = hk_lds_load_b128(lds, src + 16384 + 4 * bwd_dq_off(row, c));
                    const hk_u32x4 y1 = hk_lds_load_b128(lds, src + 16384 + 4 * bwd_dq_off(row, c + 4));
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        x[i] = hk_f32_as_u32(hk_u32_as_f32(x[i]) + hk_u32_as_f32(x1[i]));
                        y[i] = hk_f32_as_u32(hk_u32_as_f32(y[i]) + hk_u32_as_f32(y1[i]));
                    }
                }
                hk_u32x4 o;
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    o[i] = hk_f32x2_to_bf16x2(hk_u32_as_f32(x[2 * i]) * a.scale, hk_u32_as_f32(x[2 * i + 1]) * a.scale);
                    o[i + 2] = hk_f32x2_to_bf16x2(hk_u32_as_f32(y[2 * i]) * a.scale, hk_u32_as_f32(y[2 * i + 1]) * a.scale);
                }
                if (q < g.Sq)
                    hk_global_store_b128(a.dQ + (long)w.b * a.q_stride_b + (long)hq * a.q_stride_h +
                                             (long)q * a.q_stride_s + 8 * c8, o);
            }
            hk_syncwarp();                              // every lane is done with the buffer
            if (lane == 0) {
                hk_mbar_arrive(lds, dq_empty(s));
                if (!single)
                    hk_store_relaxed_gpu(cnt, 0);
                if (g.pre || (D_SHARED && !single))     // every key block has read D
                    hk_store_relaxed_gpu(cnt + g.tiles, 0);
            }
            hk_syncwarp();
        }
    }
}

// dK (scaled) or dV of the warpgroup's 64 keys to global: lane (g, t) holds
// keys 16 w + g (+ 8), columns 8 i + 2 t (+ 1) of each n8 tile i.
HK_DEVICE void bwd_store_g(hk_bf16 *head, long ss, int key0, int Sk, float mul, const g_acc_t &acc)
{
    const int lane = hk_lane_id(), row0 = key0 + (hk_wave_id() % 4) * 16 + (lane >> 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int key = row0 + 8 * h;
        if (key >= Sk)
            continue;
        hk_bf16 *row = head + (long)key * ss + 2 * (lane & 3);
#pragma unroll
        for (int i = 0; i < G_TILES; ++i)
            hk_global_store_b32(row + 8 * i, hk_f32x2_to_bf16x2(acc[4 * i + 2 * h] * mul, acc[4 * i + 2 * h + 1] * mul));
    }
}

// dQ = 0 for the query blocks in which no row sees a key, spread over the blocks.
HK_DEVICE void bwd_zero_empty(const hk_args &a, const bwd_grid &g, int batch, int x, int nblocks)
{
    const int ne = bwd_empty_blocks(g), tid = hk_thread_id();
    for (long e = x; e < (long)ne * g.Hq * batch; e += nblocks) {
        const int qi = (int)(e % ne), hq = (int)(e / ne % g.Hq), b = (int)(e / ne / g.Hq);
        const int q = qi * BLOCK_M + (tid >> 2);
        if (q >= g.Sq)
            continue;
        hk_bf16 *row = a.dQ + (long)b * a.q_stride_b + (long)hq * a.q_stride_h + (long)q * a.q_stride_s;
        for (int c = (tid & 3) * 2; c < D; c += 8)
            hk_global_store_b32(row + c, 0u);
    }
}

// The consumers: every step of the block, then dK and dV.
HK_DEVICE void bwd_consume(hk_lds_t lds, const hk_args &a, const bwd_grid &g, const bwd_block &w)
{
    const int wg = hk_wave_id() / 4, lane = hk_lane_id();
    const int key0 = wg * WG_N;                         // this warpgroup's keys within the block
    const float c = a.scale * LOG2E;
    g_acc_t dk, dv;
#pragma unroll
    for (int i = 0; i < D / 2; ++i) {
        dk[i] = 0.0f;
        dv[i] = 0.0f;
    }
    const unsigned long long kd = hk_wgmma_desc(lds, K_OFF + key0 * 128, 16, 1024, 1);
    const unsigned long long vd = hk_wgmma_desc(lds, V_OFF + key0 * 128, 16, 1024, 1);
    const unsigned long long st0 = hk_wgmma_desc(lds, ST_OFF, 16, 1024, 1);          // K-major step tiles
    const unsigned long long st0_mn = hk_wgmma_desc(lds, ST_OFF, Q_SLAB, 1024, 1);   // MN-major
    const unsigned long long dsd = hk_wgmma_desc(lds, DS_OFF + (DQ_SPLIT ? 0 : key0 * 128), 1024, 1024, 1);
    const unsigned long long kmn =
        hk_wgmma_desc(lds, K_OFF + (DQ_SPLIT ? wg * KV_SLAB : key0 * 128), KV_SLAB, 1024, 1);
    if (w.steps == 0)
        return;
    hk_mbar_wait(lds, kv_full(), 0);
    hk_u32x4 ka[K_STEPS], va[K_STEPS];
    if constexpr (KV_REGS) {
        bwd_load_a(lds, K_OFF, key0, ka);
        bwd_load_a(lds, V_OFF, key0, va);
    }
    s_acc_t sa, dpa;
    if constexpr (PIPE)
        bwd_issue_sdp(lds, 0, kd, vd, st0, ka, va, sa, dpa);
    for (int s = 0; s < w.steps; ++s) {
        int hq, qi;
        bwd_step_at(g, w, s, hq, qi);
        const int st = s % STAGES, q0 = qi * BLOCK_M;
        const int sto = st * STAGE_BYTES;
        if (!PIPE)
            bwd_issue_sdp(lds, s, kd, vd, st0, ka, va, sa, dpa);
        hk_mbar_wait(lds, rows_full(st), (s / STAGES) & 1);  // the row terms (producer warp 3)
        hk_wgmma_wait<0>();
        bwd_fence(sa);
        bwd_fence(dpa);

        hk_u32x4 p[M_STEPS], ds[M_STEPS];
        const int kb = w.j * BLOCK_N + key0;
        if (kb + WG_N > g.Sk || (CAUSAL && kb + WG_N - 1 > q0 + g.Sk - g.Sq))
            bwd_softmax<true>(lds, sa, dpa, c, kb, q0, g, ROW_OFF + st * 512, p, ds);
        else
            bwd_softmax<false>(lds, sa, dpa, c, kb, q0, g, ROW_OFF + st * 512, p, ds);
        hk_wgmma_fence();
        bwd_issue_g(hk_wgmma_desc_add(st0_mn, sto + Q_TILE), p, dv);   // dV += P^T dO
        bwd_issue_g(hk_wgmma_desc_add(st0_mn, sto), ds, dk);            // dK += dS^T Q
        hk_wgmma_commit();
        if (DS_BUFS == 1 && s > 0)
            hk_barrier_part(4, CONS_THREADS);           // every dQ product of step s - 1 is done
        bwd_store_ds(lds, key0, ds, DS_BUFS == 2 ? s & 1 : 0);
        hk_fence_proxy_async();
        if (DQ_SPLIT)
            bwd_sync();                                 // dS^T of both warpgroups written
        else                                            // d64: dQ over the warpgroup's own keys
            hk_barrier_part(2 + wg, 128);               // (H200: +2.7% at d64 8K causal)
        s_acc_t dq;
        hk_wgmma_fence();
        bwd_issue_dq(hk_wgmma_desc_add(dsd, (DS_BUFS == 2 ? s & 1 : 0) * DS_TILE), kmn, dq);
        hk_wgmma_commit();
        hk_wgmma_wait<0>();
        if (lane == 0)
            hk_mbar_arrive(lds, q_empty(st));          // this warp is done with the stage
        // PIPE: the next step's products, under this step's dQ share going to
        // the buffer; the last step computes its own again (its stage is not
        // refilled), so that no wgmma sits in a branch
        if constexpr (PIPE)
            bwd_issue_sdp(lds, s + 1 < w.steps ? s + 1 : s, kd, vd, st0, ka, va, sa, dpa);
        bwd_fence(dk);
        bwd_fence(dv);
        hk_wgmma_rs_fence_acc64(dq);
        {
            // the buffer's last user: step s - DQ_BUFS (DQ_BUFS 1: s - 1)
            const int prev = s - DQ_BUFS;
            if (prev >= 0)
                hk_mbar_wait(lds, dq_empty(prev), dq_phase(prev));
            const int row0 = (hk_wave_id() % 4) * 16 + (lane >> 2), tile = dq_buf(s) + wg * 16384;
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int i = 0; i < DQ_N / 8; ++i) {
                    hk_u32x2 v;
                    v[0] = hk_f32_as_u32(dq[4 * i + 2 * h]);
                    v[1] = hk_f32_as_u32(dq[4 * i + 2 * h + 1]);
                    hk_lds_store_b64(lds, tile + 4 * bwd_dq_off(row0 + 8 * h, 8 * i + 2 * (lane & 3)), v);
                }
            hk_fence_proxy_async();
            hk_mbar_arrive(lds, dq_full(s));
        }
    }
    if constexpr (PIPE)
        hk_wgmma_wait<0>();                             // the last step's repeated S^T, dP^T
    const int keyb = w.j * BLOCK_N + key0;
    hk_bf16 *dKh = a.dK + (long)w.b * a.k_stride_b + (long)w.hkv * a.k_stride_h;
    hk_bf16 *dVh = a.dV + (long)w.b * a.v_stride_b + (long)w.hkv * a.v_stride_h;
    bwd_store_g(dKh, a.k_stride_s, keyb, g.Sk, a.scale, dk);
    bwd_store_g(dVh, a.v_stride_s, keyb, g.Sk, 1.0f, dv);
}

// A D block (one of the launch's first g.nd: lower indices start first, so
// the key blocks that wait for them cannot deadlock): its warps take the
// query tiles that some key block walks (none of the first
// bwd_empty_blocks), query block from the last down (the order the key
// blocks take them), then query head and batch; lane l sums rows l and
// l + 32 of the tile in the row warp's order, stores them where key block 0
// would publish them and counts in (a release add each: 32 a tile).
HK_DEVICE void bwd_d_block(const hk_args &a, const bwd_grid &g, int batch, int x, int nd)
{
    const int lane = hk_lane_id(), nw = ATTN_THREADS / 32, ne = bwd_empty_blocks(g);
    const long heads = (long)batch * g.Hq, total = heads * (g.nq - ne);
    for (long t = (long)x * nw + hk_wave_id(); t < total; t += (long)nd * nw) {
        const int qi = g.nq - 1 - (int)(t / heads), hq = (int)(t % heads % g.Hq), b = (int)(t % heads / g.Hq);
        const long tile = ((long)b * g.Hq + hq) * g.nq + qi;
        float *dws = a.workspace + tile * WS_TILE + BLOCK_M * 128;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int q = qi * BLOCK_M + lane + 32 * k;
            float sum = 0.0f;
            if (q < g.Sq) {
                const hk_bf16 *o = a.O + (long)b * a.o_stride_b + (long)hq * a.o_stride_h + (long)q * a.o_stride_s;
                const hk_bf16 *d = a.dO + (long)b * a.do_stride_b + (long)hq * a.do_stride_h + (long)q * a.do_stride_s;
#pragma unroll 8
                for (int c = 0; c < CHUNKS; ++c) {
                    const hk_bf16x8 y = hk_global_load_bf16x8(o + 8 * c, 8, true);
                    const hk_bf16x8 z = hk_global_load_bf16x8(d + 8 * c, 8, true);
#pragma unroll
                    for (int e = 0; e < 8; ++e)
                        sum += hk_bf16_to_f32(z[e]) * hk_bf16_to_f32(y[e]);
                }
            }
            hk_global_store_f32(dws + lane + 32 * k, sum);
        }
        hk_red_add_release_gpu((unsigned *)a.counters + g.tiles + tile, 1);
    }
}

// Whether every tensor can go through the copy engine and 4-byte stores: the
// launch rules check the strides, this the bases.
HK_DEVICE bool bwd_bases_ok(const hk_args &a)
{
    const void *const p[] = {a.Q, a.K, a.V, a.O, a.dO, a.dQ, a.dK, a.dV, a.workspace};
    bool ok = true;
#pragma unroll
    for (int i = 0; i < 9; ++i)
        ok = ok && (unsigned long)p[i] % 16 == 0;
    return ok;
}

// ---- kernel ------------------------------------------------------------------
// One block per multiprocessor, said to ptxas: without a known register count
// at entry it ignores the setmaxnreg hand-over (C7508; d64 ran so until
// 2026-12-04, every warp at 168 registers).
#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM 1
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;
    if (!bwd_bases_ok(hk_a))
        hk_trap();
    HK_LDS_DECLARE_DYNAMIC();
    const bwd_grid g = bwd_grid_make(seqlen_q, seqlen_k, heads_q, heads_k, batch);
    const int x = hk_block_id_x() - g.nd, nblocks = hk_grid_dim_x() - g.nd;
    if (x < 0) {
        bwd_d_block(hk_a, g, batch, x + g.nd, g.nd);
        return;
    }
    const bwd_block w = bwd_block_make(g, x, nblocks);
    if (hk_thread_id() == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hk_mbar_init(hk_lds, q_full(s), 1);
            hk_mbar_init(hk_lds, q_empty(s), WARPS);
            hk_mbar_init(hk_lds, rows_full(s), 32);
        }
        hk_mbar_init(hk_lds, kv_full(), 1);
        hk_mbar_init(hk_lds, o_full(), 1);
        hk_mbar_init(hk_lds, o_empty(), 32);
        for (int i = 0; i < DQ_BARS; ++i) {
            hk_mbar_init(hk_lds, dq_full(i), CONS_THREADS);
            hk_mbar_init(hk_lds, dq_empty(i), 1);
        }
        for (int k = 0; k < 2; ++k)
            hk_mbar_init(hk_lds, dq_load(k), 1);
        hk_mbar_init_fence();
    }
    hk_barrier();
    // the warp, read while the warp is converged: hk_wave_id is a warp
    // collective, and lane 0 of the producer's warp 0 leaves for the copies
    const int warp = hk_wave_id();
    if (warp >= WARPS) {
        hk_regs_shrink<PROD_REGS>();
        if (hk_thread_id() == CONS_THREADS)
            bwd_produce(hk_lds, hk_a, g, w);
        else if (warp == WARPS + 1 || warp == WARPS + 2)
            bwd_dq_writer(hk_lds, hk_a, g, w, warp - WARPS - 1);
        else if (warp == WARPS + 3)
            bwd_rows(hk_lds, hk_a, g, w);
        return;
    }
    hk_regs_grow<CONS_REGS>();
    bwd_consume(hk_lds, hk_a, g, w);
    bwd_zero_empty(hk_a, g, batch, x, nblocks);
}
]hkm_output_end()
