# gemm_tma_c.m4 - the sm_90a GEMMs' `epilogue: tma': C through shared memory
# and bulk tensor stores.  gemm.sm90.hip.m4 (bf16) and gemm_fp8.sm90.hip.m4
# read it with m4_include([gemm_tma_c.m4]) before hkm_output_begin and splice
# ]hkm_gemm_tma_c()[ after their configuration.  Read in diversion -1;
# gen/skel.c hashes it into the source key (templates/README.md).
#
# The skeleton defines TILE_N, CONSUMERS, CONSUMER_WARPS, STAGES,
# LDS_STAGE_BYTES, EPI_TMA, C_OFF (after the stages) and C_STAGE_BYTES (the
# plan's c_stage_bytes: 0, or 64 x min(tile_n, 128) bf16 per consumer for
# blocks whose producer runs on into the next tile), and swz (the 128-byte
# swizzle); the runtime builds tmap_c with boxes of 64 columns x 64 rows.


# hkm_gemm_tma_c()
# ----------------
# Device code: the staging's constants, gemm_wg_sync and gemm_c_tma.
m4_define([hkm_gemm_tma_c], [[
// ---- C by bulk tensor stores (templates/gemm_tma_c.m4) ----
// Consumer c's 64 x TILE_N of C goes out as TILE_N / 64 boxes of 64 x 64
// bf16 (8 KB each: 128-byte rows, the 128-byte swizzle), C_COLS columns a
// round: in one round through the stage memory at c * C_WG_BYTES once every
// consumer is done with the stages (a block per tile: nothing is loaded
// after its last k-tile), or through the consumer's own C_WG_STAGE bytes at
// C_OFF + c * C_WG_STAGE beside the stages, free again once the previous
// round's bulk stores have read it (the producer meanwhile fills the next
// tile's stages).
static constexpr int C_BOX_BYTES = 64 * 128;
static constexpr int C_WG_BYTES = TILE_N / 64 * C_BOX_BYTES;
static constexpr bool C_OWN = C_STAGE_BYTES > 0;
static constexpr int C_WG_STAGE = C_OWN ? C_STAGE_BYTES / CONSUMERS : C_WG_BYTES;
static constexpr int C_COLS = C_WG_STAGE / C_BOX_BYTES * 64 < TILE_N ? C_WG_STAGE / C_BOX_BYTES * 64 : TILE_N;
static constexpr int C_ROUNDS = TILE_N / C_COLS;
static_assert(!EPI_TMA || (TILE_N % 64 == 0 && C_COLS > 0 && TILE_N % C_COLS == 0 &&
                           (C_OWN || CONSUMERS * C_WG_BYTES <= STAGES * LDS_STAGE_BYTES)),
              "epilogue tma: whole 64 x 64 boxes, in the stage memory or a staging of their own");

// a barrier of consumer warpgroup c's 128 threads (constant ids: ptxas then
// counts 4 barriers, not 16)
HK_DEVICE void gemm_wg_sync(int c)
{
    if (c == 0)
        hk_barrier_part(2, 128);
    else
        hk_barrier_part(3, 128);
}

// Consumer c's rows block_m + 64 c .. of C at columns block_n ..: pair(i, h,
// lo, hi) gives the two values of n8 tile i in row half h (the accumulator
// layout: acc[4 i + 2 h], acc[4 i + 2 h + 1], scaled as the op needs). The
// bulk stores stay in flight: the block waits for them (hk_bulk_wait) before
// it leaves.
template <typename PAIR>
HK_DEVICE void gemm_c_tma(hk_lds_t lds, const hk_tmap *tmap_c, int c, int block_m, int block_n, PAIR pair)
{
    const int wave = hk_wave_id(), lane = hk_lane_id();
    const bool leader = hk_thread_id() % 128 == 0; // issues consumer c's bulk stores
    const int c_off = C_OWN ? C_OFF + c * C_WG_STAGE : c * C_WG_BYTES;
    if (!C_OWN)
        hk_barrier_part(1, 32 * CONSUMER_WARPS); // every consumer's wgmma groups complete
#pragma unroll
    for (int rnd = 0; rnd < C_ROUNDS; ++rnd) {
        if (C_OWN) {
            if (leader)
                hk_bulk_wait_read<0>();
            gemm_wg_sync(c);
        }
#pragma unroll
        for (int ii = 0; ii < C_COLS / 8; ++ii) {
            const int i = rnd * (C_COLS / 8) + ii;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float lo, hi;
                pair(i, h, lo, hi);
                const int r = (wave % 4) * 16 + (lane >> 2) + 8 * h; // row in the warpgroup's 64
                const int off = c_off + (ii / 8) * C_BOX_BYTES + swz(r, ii % 8) + (lane & 3) * 4;
                hk_lds_store_b32(lds, off, hk_f32x2_to_bf16x2(lo, hi));
            }
        }
        hk_fence_proxy_async(); // written by these threads (generic proxy), read by the copy engine
        gemm_wg_sync(c);
        if (leader) {
#pragma unroll
            for (int j = 0; j < C_COLS / 64; ++j)
                hk_tma_store_2d(tmap_c, lds, c_off + j * C_BOX_BYTES, block_n + rnd * C_COLS + 64 * j,
                                block_m + 64 * c);
            hk_bulk_commit();
        }
    }
}
]])
