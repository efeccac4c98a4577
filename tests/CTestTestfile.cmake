# CTestTestfile.cmake: hkgen's tests, written by hand (no CMakeLists.txt).
# Run from tests/: `ctest --output-on-failure -j2` (after `make` at the top
# and `make -C tests`); `make test` at the top does all of it.
# Every test runs in tests/. Shell tests live in their area's folder (spec/,
# fuzz/, pipeline/ for builds, emu/, rt/) and source lib/lib.sh (temporary
# folder, HKGEN_CACHE_DIR inside it, ../build/hkgen-asan) and read JSON
# through lib/jsonq.py (a parser, never the writer's layout). C tests are
# built by tests/Makefile into build/.
# `ctest -L spec` etc. runs one label: spec, unit, security, fuzz, build,
# emu, runtime.

set(HK_ENV
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "LC_ALL=C")
# Builds compile gfx90a with comgr, in process, on several threads. LLVM in
# comgr installs its own sigaltstack on those threads, and ASan then fails to
# unmap "its" alternate stack when the thread exits ("AddressSanitizer failed
# to deallocate ... unable to unmap", intermittent): use_sigaltstack=0 avoids
# it. Leak detection stays on (comgr was seen to leak nothing).
set(HK_BUILD_ENV
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:use_sigaltstack=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "LC_ALL=C")

# Specs: exact diagnostics and exit status 2 for bad ones, kernel counts for
# good ones, hostile inputs refused in bounded time.
add_test(spec_cases sh spec/spec_cases.sh)
set_tests_properties(spec_cases PROPERTIES TIMEOUT 240 LABELS "spec" ENVIRONMENT "${HK_ENV}")
add_test(cli_help sh spec/cli_help.sh)
set_tests_properties(cli_help PROPERTIES TIMEOUT 120 LABELS "spec" ENVIRONMENT "${HK_ENV}")
add_test(spec_hostile sh spec/spec_hostile.sh)
set_tests_properties(spec_hostile PROPERTIES TIMEOUT 120 LABELS "spec;security" ENVIRONMENT "${HK_ENV}")

# m4 escaping: unit round trips through real m4, and the command line.
add_test(escape_unit build/unit_escape)
set_tests_properties(escape_unit PROPERTIES TIMEOUT 120 LABELS "unit;security" ENVIRONMENT "${HK_ENV}")
add_test(escape_cli sh spec/escape_cli.sh)
set_tests_properties(escape_cli PROPERTIES TIMEOUT 120 LABELS "security" ENVIRONMENT "${HK_ENV}")

# Small modules.
add_test(unit_sha256 build/unit_sha256)
set_tests_properties(unit_sha256 PROPERTIES TIMEOUT 120 LABELS "unit" ENVIRONMENT "${HK_ENV}")
add_test(unit_expr build/unit_expr)
set_tests_properties(unit_expr PROPERTIES TIMEOUT 60 LABELS "unit" ENVIRONMENT "${HK_ENV}")
add_test(unit_fswrite build/unit_fswrite)
set_tests_properties(unit_fswrite PROPERTIES TIMEOUT 60 LABELS "unit;security" ENVIRONMENT "${HK_ENV}")
add_test(unit_json build/unit_json)
set_tests_properties(unit_json PROPERTIES TIMEOUT 60 LABELS "unit" ENVIRONMENT "${HK_ENV}")
# bd_waves_per_simd: AGPRs counted once, workgroups that do not fit give 0.
add_test(unit_occupancy build/unit_occupancy)
set_tests_properties(unit_occupancy PROPERTIES TIMEOUT 60 LABELS "unit" ENVIRONMENT "${HK_ENV}")
add_test(unit_kernargs build/unit_kernargs)
set_tests_properties(unit_kernargs PROPERTIES TIMEOUT 60 LABELS "unit" ENVIRONMENT "${HK_ENV}")
# hk_xcd_remap (hk_cdna.h and hk_emu.h): a bijection with contiguous XCD ranges for any grid size.
add_test(unit_xcd_remap build/unit_xcd_remap)
set_tests_properties(unit_xcd_remap PROPERTIES TIMEOUT 120 LABELS "unit" ENVIRONMENT "${HK_ENV}")

# libFuzzer on the spec reader for 60 s (docs/FUZZING.md: longer runs).
add_test(fuzz_spec sh fuzz/fuzz_run.sh 60)
set_tests_properties(fuzz_spec PROPERTIES TIMEOUT 180 LABELS "fuzz;security" ENVIRONMENT "${HK_ENV}")
add_test(fuzz_manifest sh fuzz/manifest_run.sh 30)
set_tests_properties(fuzz_manifest PROPERTIES TIMEOUT 180 LABELS "fuzz;security" ENVIRONMENT "${HK_ENV}")

# Builds (templates and compilers). build_all leaves the catalogues that
# build_mfma, build_manifest and build_inspect read.
add_test(build_all sh pipeline/build_cases.sh all)
set_tests_properties(build_all PROPERTIES TIMEOUT 600 LABELS "build" COST 1000
  FIXTURES_SETUP catalog ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_mfma sh pipeline/build_cases.sh mfma)
set_tests_properties(build_mfma PROPERTIES TIMEOUT 120 LABELS "build" FIXTURES_REQUIRED catalog
  ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_manifest sh pipeline/build_cases.sh manifest)
set_tests_properties(build_manifest PROPERTIES TIMEOUT 120 LABELS "build" FIXTURES_REQUIRED catalog
  ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_inspect sh pipeline/build_cases.sh inspect)
set_tests_properties(build_inspect PROPERTIES TIMEOUT 120 LABELS "build" FIXTURES_REQUIRED catalog
  ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_determinism sh pipeline/build_cases.sh determinism)
set_tests_properties(build_determinism PROPERTIES TIMEOUT 600 LABELS "build" COST 900 ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_cache sh pipeline/build_cases.sh cache)
set_tests_properties(build_cache PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_failure sh pipeline/build_cases.sh failure)
set_tests_properties(build_failure PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_lock sh pipeline/build_cases.sh lock)
set_tests_properties(build_lock PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")
add_test(build_outdir sh pipeline/build_cases.sh outdir)
set_tests_properties(build_outdir PROPERTIES TIMEOUT 300 LABELS "build;security" ENVIRONMENT "${HK_ENV}")
add_test(build_stale_index sh pipeline/build_cases.sh stale)
set_tests_properties(build_stale_index PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")

# Emulator (label emu; `ctest -L emu`): the MFMA layouts against AMD's tables
# (data/mfma-layouts) and the documented CDNA4 layout, the MFMA product against
# fp64, a mutant layout that must be caught, barriers under the seeded random
# wave order, faults (global/LDS out of bounds, LDS over budget, divergent
# MFMA), and every GEMM/RoPE kernel of emu/ops.yaml on each target.
add_test(emu_layout build/emu_mfma layout data/mfma-layouts)
set_tests_properties(emu_layout PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
add_test(emu_mfma_product build/emu_mfma product data/mfma-layouts)
set_tests_properties(emu_mfma_product PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
add_test(emu_layout_mutant sh emu/mutant.sh)
set_tests_properties(emu_layout_mutant PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
# fp8 conversions of hk_emu.h (FNUZ on gfx942, OCP on gfx950) against emu/fp8_table.py's independent table.
add_test(emu_fp8 sh emu/fp8.sh)
set_tests_properties(emu_fp8 PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
# One fp8 MFMA per target through hk_emu.h and libhkrt's wave collective against fp64; a gfx942
# module's FNUZ MFMA faults on gfx950.
add_test(emu_fp8_launch build/emu_launch fp8 build/emu)
set_tests_properties(emu_fp8_launch PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
# gfx950's LDS transposing read (hk_lds_load_tr_b64) by its lane rule; a divergent one refused.
add_test(emu_tr_launch build/emu_launch tr build/emu)
set_tests_properties(emu_tr_launch PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
add_test(emu_barrier build/emu_launch barrier build/emu)
set_tests_properties(emu_barrier PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
add_test(emu_oob build/emu_launch oob build/emu)
set_tests_properties(emu_oob PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
# Access statistics (hkrt_emu_stats_*, hkgen test --stats): LDS bank cycles
# and cache-line bytes of a hand-written kernel against AMD's rules per
# target, and the --stats report of generated GEMM and RoPE kernels.
foreach(t gfx90a gfx942 gfx950)
  add_test(emu_stats_${t} build/emu_stats ${t} build/emu)
  set_tests_properties(emu_stats_${t} PROPERTIES TIMEOUT 60 LABELS "emu" ENVIRONMENT "${HK_ENV}")
endforeach()
add_test(emu_stats_report sh emu/stats.sh)
set_tests_properties(emu_stats_report PROPERTIES TIMEOUT 120 LABELS "emu" ENVIRONMENT "${HK_ENV}")
# fp8 GEMM on the emulator: every scale mode on gfx942 and gfx950, launch errors
add_test(emu_gemm_fp8 sh emu/gemm_fp8.sh)
set_tests_properties(emu_gemm_fp8 PROPERTIES TIMEOUT 300 LABELS "emu" COST 60 ENVIRONMENT "${HK_ENV}")
# gfx90a compiles with comgr in process, on threads: the build environment
# (use_sigaltstack=0, see HK_BUILD_ENV); CI saw the unmap failure here.
add_test(emu_kernels_gfx90a sh emu/kernels.sh gfx90a)
set_tests_properties(emu_kernels_gfx90a PROPERTIES TIMEOUT 600 LABELS "emu" COST 60 ENVIRONMENT "${HK_BUILD_ENV}")
add_test(emu_kernels_gfx942 sh emu/kernels.sh gfx942)
set_tests_properties(emu_kernels_gfx942 PROPERTIES TIMEOUT 600 LABELS "emu" COST 60 ENVIRONMENT "${HK_ENV}")
add_test(emu_kernels_gfx950 sh emu/kernels.sh gfx950)
set_tests_properties(emu_kernels_gfx950 PROPERTIES TIMEOUT 600 LABELS "emu" COST 60 ENVIRONMENT "${HK_ENV}")
# RMSNorm / LayerNorm fwd, bwd and bwd_reduce on the emulator (tests/emu/norm.yaml).
add_test(emu_norm_gfx942 sh emu/norm.sh gfx942)
set_tests_properties(emu_norm_gfx942 PROPERTIES TIMEOUT 300 LABELS "emu" COST 30 ENVIRONMENT "${HK_ENV}")
add_test(emu_norm_gfx950 sh emu/norm.sh gfx950)
set_tests_properties(emu_norm_gfx950 PROPERTIES TIMEOUT 300 LABELS "emu" COST 30 ENVIRONMENT "${HK_ENV}")

# Runtime catalogues (label runtime; `ctest -L runtime`): manifests good and bad
# (each error's text), kernel selection and the "nothing fits" message, kernarg
# bytes against structs laid out by hand, argument checks, the GPU backends
# without a driver (never a crash; 77 = skipped where a GPU is present), and an
# emulated catalogue end to end (hkgen build --emulate, GEMM against fp64).
add_test(rt_manifest build/rt_catalog manifest)
set_tests_properties(rt_manifest PROPERTIES TIMEOUT 60 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_select build/rt_catalog select)
set_tests_properties(rt_select PROPERTIES TIMEOUT 60 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_pack build/rt_catalog pack)
set_tests_properties(rt_pack PROPERTIES TIMEOUT 60 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_args build/rt_catalog args)
set_tests_properties(rt_args PROPERTIES TIMEOUT 60 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_python sh rt/py_hkrt.sh)
set_tests_properties(rt_python PROPERTIES TIMEOUT 300 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_torchops sh rt/py_torchops.sh)
set_tests_properties(rt_torchops PROPERTIES TIMEOUT 300 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_tmap build/rt_catalog tmap)
set_tests_properties(rt_tmap PROPERTIES TIMEOUT 60 LABELS "runtime" ENVIRONMENT "${HK_ENV}")
add_test(rt_driver_cuda build/rt_catalog driver cuda)
set_tests_properties(rt_driver_cuda PROPERTIES TIMEOUT 60 LABELS "runtime" SKIP_RETURN_CODE 77
  ENVIRONMENT "${HK_ENV}")
add_test(rt_driver_hip build/rt_catalog driver hip)
set_tests_properties(rt_driver_hip PROPERTIES TIMEOUT 60 LABELS "runtime" SKIP_RETURN_CODE 77
  ENVIRONMENT "${HK_ENV}")
add_test(rt_abuse sh rt/abuse.sh)
set_tests_properties(rt_abuse PROPERTIES TIMEOUT 300 LABELS "runtime;security" ENVIRONMENT "${HK_ENV}")
add_test(rt_emu_e2e sh rt/e2e.sh)
set_tests_properties(rt_emu_e2e PROPERTIES TIMEOUT 300 LABELS "runtime" ENVIRONMENT "${HK_ENV}")

# A build killed with SIGKILL at random moments leaves no manifest pointing at
# missing or different files; a build started again completes the catalogue.
add_test(build_killed sh pipeline/kill_build.sh)
set_tests_properties(build_killed PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")

# Attention forward on the emulator: every head-count cliff case, odd
# lengths, causal with Sq != Sk, both layouts.
foreach(t gfx942 gfx950)
  add_test(emu_attn_${t} sh emu/attn.sh ${t})
  set_tests_properties(emu_attn_${t} PROPERTIES TIMEOUT 600 LABELS "emu" ENVIRONMENT "${HK_ENV}")
endforeach()

# Paged-KV decode on the emulator: GQA ratios 1-24, q_tokens 1-16, random
# page tables, splits merged in one launch, check_tables reporting a corrupt
# table; and its kernels built for both targets without spills.
foreach(t gfx942 gfx950)
  add_test(emu_attn_decode_${t} sh emu/attn_decode.sh ${t})
  set_tests_properties(emu_attn_decode_${t} PROPERTIES TIMEOUT 300 LABELS "emu" ENVIRONMENT "${HK_ENV}")
endforeach()
add_test(build_attn_decode sh pipeline/build_attn_decode.sh)
set_tests_properties(build_attn_decode PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")
add_test(build_attn_decode_sm90 sh pipeline/build_attn_decode_sm90.sh)
set_tests_properties(build_attn_decode_sm90 PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")
# attn_fwd's serving features (sliding windows, sinks, soft-capping, varlen)
# on the emulator.
foreach(t gfx942 gfx950)
  add_test(emu_attn_serve_${t} sh emu/attn_serve.sh ${t})
  set_tests_properties(emu_attn_serve_${t} PROPERTIES TIMEOUT 600 LABELS "emu" ENVIRONMENT "${HK_ENV}")
endforeach()
# Attention backward on the emulator: the same cliff cases, rows with no
# visible key, dQ, dK and dV each against fp64; and its kernels compile
# without spills for gfx942 and gfx950.
foreach(t gfx942 gfx950)
  add_test(emu_attn_bwd_${t} sh emu/attn_bwd.sh ${t})
  set_tests_properties(emu_attn_bwd_${t} PROPERTIES TIMEOUT 600 LABELS "emu" ENVIRONMENT "${HK_ENV}")
endforeach()
add_test(build_attn_bwd sh pipeline/build_attn_bwd.sh)
set_tests_properties(build_attn_bwd PROPERTIES TIMEOUT 600 LABELS "build" ENVIRONMENT "${HK_ENV}")
# sm_90a attn_bwd: compiles with nvcc without spills; manifest plan, scratch rules, tensor maps.
add_test(build_attn_bwd_sm90 sh pipeline/build_attn_bwd_sm90.sh)
set_tests_properties(build_attn_bwd_sm90 PROPERTIES TIMEOUT 600 LABELS "build" ENVIRONMENT "${HK_ENV}")

# sm_90a: the example specs compile with nvcc (CPU only) without spills.
add_test(build_attn sh pipeline/build_attn.sh)
set_tests_properties(build_attn PROPERTIES TIMEOUT 600 LABELS "build" ENVIRONMENT "${HK_ENV}")
add_test(build_gemm_fp8 sh pipeline/build_gemm_fp8.sh)
set_tests_properties(build_gemm_fp8 PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")
add_test(build_sm90 sh pipeline/build_sm90.sh)
set_tests_properties(build_sm90 PROPERTIES TIMEOUT 600 LABELS "build" ENVIRONMENT "${HK_ENV}")
# sm_90a GEMM split-K and persistent kernels: build, manifest, launch rules, cost model.
add_test(build_gemm_sched sh pipeline/build_gemm_sched.sh)
set_tests_properties(build_gemm_sched PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")
add_test(build_sm90_feat sh pipeline/build_sm90_feat.sh)
set_tests_properties(build_sm90_feat PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")
# fp8 tile primitives: the gfx942/gfx950 objects hold the fp8 MFMAs and conversions; a format the
# target lacks (OCP on gfx942, FNUZ on gfx950, any on gfx90a) is a compile error naming it.
add_test(build_fp8 sh pipeline/build_fp8.sh)
set_tests_properties(build_fp8 PROPERTIES TIMEOUT 120 LABELS "build" ENVIRONMENT "${HK_ENV}")
add_test(build_synclines sh pipeline/build_synclines.sh)
set_tests_properties(build_synclines PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")
add_test(build_kernargs sh pipeline/build_kernargs.sh)
set_tests_properties(build_kernargs PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")

# The performance estimate (hkgen inspect --estimate): bad input refused
# with status 2, and the model's sanity on synthetic and generated kernels.
# hkgen tune with the estimate: winners recorded per problem, hkrt_select
# prefers them; tune and bench error paths (no GPU, sm_90a, bad --shape).
add_test(tune sh pipeline/tune.sh)
set_tests_properties(tune PROPERTIES TIMEOUT 240 LABELS "build;runtime" ENVIRONMENT "${HK_BUILD_ENV}")
# Tiles left to hkgen on a baked AMD GEMM: chosen by the estimate at build
# time, recorded in the manifest ("choice"), shown by explain (issue #16).
add_test(tune_choice sh pipeline/tune_choice.sh)
set_tests_properties(tune_choice PROPERTIES TIMEOUT 240 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")
add_test(estimate sh pipeline/estimate.sh)
set_tests_properties(estimate PROPERTIES TIMEOUT 240 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")
# AMD run-time selection: each AMD GEMM's manifest "cost" is its estimate as a formula;
# hkrt_select's pick on an emulated catalogue is inspect --estimate's fastest at decode
# and 8192^3 shapes (gfx942, gfx950, bf16 and fp8); --part.
add_test(amd_select sh pipeline/amd_select.sh)
set_tests_properties(amd_select PROPERTIES TIMEOUT 600 LABELS "build;runtime" ENVIRONMENT "${HK_BUILD_ENV}")

# AMD norm, rope and decode kernels: each manifest "cost" is its estimate (norm, rope: trips by the bytes)
add_test(amd_mem_cost sh pipeline/amd_mem_cost.sh)
set_tests_properties(amd_mem_cost PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")
add_test(amd_attn_cost sh pipeline/amd_attn_cost.sh)
set_tests_properties(amd_attn_cost PROPERTIES TIMEOUT 400 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")

# the sm_90a norm forward's cost: 512 threads a row for few rows, 256 for many; vec: only's spec errors
add_test(norm_select sh pipeline/norm_select.sh)
set_tests_properties(norm_select PROPERTIES TIMEOUT 120 LABELS "build" ENVIRONMENT "${HK_BUILD_ENV}")

# make install (DESTDIR, PREFIX), relocated, and a consumer project built
# from it with CMake (hkgen_add_catalog) and with pkg-config; Python from the
# prefix; make uninstall.
add_test(install_consumer sh pipeline/install.sh)
set_tests_properties(install_consumer PROPERTIES TIMEOUT 300 LABELS "build" ENVIRONMENT "${HK_ENV}")

# hkgen test -j N: parallel emulated runs print what -j 1 prints; --device
# without a GPU.
add_test(emu_jobs sh emu/jobs.sh)
set_tests_properties(emu_jobs PROPERTIES TIMEOUT 300 LABELS "emu" ENVIRONMENT "${HK_ENV}")
