/* usage.c: the one text of hkgen's command line. `hkgen --help`, `hkgen
   CMD --help` and the manual page (`hkgen --man`, committed as
   docs/hkgen.1 and checked against this table by CTest) are all printed
   from the table below, so they cannot drift apart. */
#include "usage.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  const char *flag, *help;
} us_opt;

typedef struct {
  const char *name, *synopsis, *summary, *text;
  us_opt opts[12];
  const char *status; /* exit statuses beyond the common ones */
} us_cmd;

#define US_TARGET {"--target LIST", "comma-separated targets replacing the specs' (gfx90a, gfx942, gfx950, sm_90a)"}
#define US_JOBS {"-j N", "parallel compiles (default: the number of cores)"}
#define US_OUT(d) {"-o DIR", "the output folder (default: " d ")"}
#define US_PART {"--part LIST", "AMD parts, one per target, as inspect --estimate names them, that the estimate's " \
                 "tile choice and the manifest's cost formulas are for (default: each target's largest; docs/MODEL.md)"}

static const us_cmd us_cmds[] = {
    {"build", "hkgen [build] SPEC... [-o DIR] [-j N] [--target LIST] [--part LIST] [--no-cache] [--emulate] [--shard K/N] [-q] [--json]",
     "generate, compile and catalogue the specs' kernels",
     "Expands each kernel of the specs from its m4 template into a self-contained source, compiles it "
     "(clang-22 or comgr for AMD targets, nvcc for sm_90a) and writes DIR/manifest.json with the code "
     "objects; an AMD kernel's entry carries the estimate as a cost formula, which hkrt_select ranks "
     "fitting kernels by. Compiles are cached (HKGEN_CACHE_DIR). Nothing half-written is left in DIR.",
     {US_OUT("catalog"), US_JOBS, US_TARGET, US_PART,
      {"--no-cache", "compile everything; neither read nor fill the cache"},
      {"--emulate", "build host objects for libhkrt's CPU emulator (AMD targets only)"},
      {"--shard K/N", "build every N-th kernel from the K-th (1 <= K <= N); see merge"},
      {"-q, --quiet", "no progress or summary"},
      {"--json", "one JSON object per finished kernel, then a summary, on stdout"}},
     "1 a kernel did not compile or the catalogue could not be written"},
    {"gen", "hkgen gen SPEC... [-o DIR] [--target LIST]", "write the sources only",
     "Writes each kernel's source and DIR/sources.json, for projects that compile with their own hipcc.",
     {US_OUT("catalog"), US_TARGET, {"-q, --quiet", "no progress or summary"}},
     "1 a source could not be written"},
    {"check", "hkgen check SPEC... [--target LIST]", "validate the specs",
     "Reads and validates the specs as build would and prints the number of kernels; compiles nothing.",
     {US_TARGET}, NULL},
    {"explain", "hkgen explain SPEC... [--target LIST]", "say how each kernel would be served",
     "For each kernel: its baked and run-time parameters, whether it is cached, and what would stop it "
     "from building here (a cached AMD kernel with every parameter baked: its estimated time on its "
     "target's fastest part, as inspect --estimate); then an estimate of the build's time.",
     {US_TARGET, US_JOBS}, "1 some kernel cannot be built on this machine"},
    {"test", "hkgen test SPEC... [--target LIST] [--shape NAME=V,...] [--seed N] [-j N] [--keep] [--stats] [--device]",
     "run the specs' kernels on the CPU emulator (or the GPU present) against fp64",
     "Builds an emulated catalogue in a temporary folder and runs every AMD kernel at the op's small "
     "problem shapes (odd ones included) through libhkrt, on fresh random inputs with poisoned outputs, "
     "against an fp64 reference (relative L2 error, tolerance 1e-2; NaN never passes). sm_90a kernels are "
     "listed as not emulated. With --device the same checks run on the GPU present instead (CUDA, else HIP), "
     "on a catalogue of real code objects for the device's target. Rows come in the same order whatever -j.",
     {US_TARGET, {"--shape NAME=V,...", "run this problem instead of the op's shapes (repeatable)"},
      {"--seed N", "the random inputs' seed (default: from the time and process)"},
      {"-j N", "parallel compiles and parallel emulated runs, one emulated device each (default: the cores)"},
      {"--device", "run on the GPU present (CUDA, else HIP; a HIP device needs --target naming its one "
                   "target); no GPU is an error (status 1)"},
      {"--keep", "keep the temporary catalogue and say where it is"},
      {"--stats", "under each run, its LDS bank cycles per call site against the conflict-free count and the "
                  "cache-line bytes of its global accesses, by the target's rules (docs/EMULATOR.md)"}},
     "1 a kernel failed its check or could not run"},
    {"list", "hkgen list", "list ops, their parameters and the targets",
     "Prints every op with its parameters (type, default, whether it may be left to run time, allowed "
     "values) and every target with its compiler on this machine.",
     {{NULL, NULL}}, NULL},
    {"inspect", "hkgen inspect DIR|FILE.hsaco [--estimate PART [--shape NAME=V,...]]",
     "show the resources of code objects, or their estimated time",
     "For each AMD kernel of a catalogue (or one .hsaco): VGPR, AGPR, SGPR, LDS, scratch, spills, waves "
     "per SIMD and the hot loop's length and MFMA share. With --estimate: each kernel's predicted time, "
     "TFLOP/s or TB/s and limiting resource on the part, from its code and the problem (docs/MODEL.md).",
     {{"--estimate PART", "MI300X, MI325X, MI350X or MI355X; the kernels must be for its target"},
      {"--shape NAME=V,...", "the problem: a catalogue's run-time parameters; for a lone object blocks=, "
                             "block=, lds=, flops=, mma_flops=, bytes=, trips="}},
     "1 a code object could not be read (with --estimate: 2 for input it cannot estimate)"},
    {"bench", "hkgen bench CATALOG [--kernel NAME] [--shape NAME=V,...] [-n N] [--json] [--target T]",
     "time a catalogue's kernels on the GPU present",
     "Runs each kernel of the GPU's target (CUDA, else HIP) through libhkrt on fresh random inputs (those "
     "hkgen test prepares): 3 warm-up launches, then N launches each after an L2 flush (a device buffer of "
     "twice the L2's bytes written), timed by device events. Prints the median, min and max in microseconds "
     "and TFLOP/s (kernels with matrix work) or TB/s, from the op's FLOP and byte counts (the estimate's, "
     "docs/MODEL.md). A problem: the kernel's baked values, the op's default for each run-time one "
     "(gemm M=N=K=4096, attention batch 4 x 2048 x 32:8 heads, ...) and --shape. --json: one object "
     "{hkgen_bench, backend, target, warmup, runs, results: [{kernel, target, shape, median_us, min_us, "
     "max_us, flops, bytes, rate, unit} or {kernel, target, shape, error}], flush_bytes} (docs/SPEC.md).",
     {{"--kernel NAME", "only this kernel"},
      {"--shape NAME=V,...", "the problem (repeatable); kernels that bake another value are left out"},
      {"-n N", "timed runs per kernel (default 20)"},
      {"--json", "the results as one JSON object on stdout"},
      {"--target T", "the device's target when HIP cannot tell it (gfx90a, gfx942, gfx950)"}},
     "1 no GPU here, or a kernel could not be timed; 2 also for an unknown kernel or a bad --shape (naming "
     "it)"},
    {"tune", "hkgen tune SPEC... --shape NAME=V,... [--shape ...] [-o DIR] [--part PART] [-n N] [--target LIST] | "
             "hkgen tune --catalog DIR --shape ...",
     "record the fastest kernel per problem in the manifest",
     "Builds the specs (variants as lists: gemm tile_m: [128, 256]) into DIR, or takes the catalogue DIR "
     "as it is. For each problem and each op and target, the kernels that serve it by hkrt_select's rule are "
     "the candidates; each is timed on the GPU present when the GPU runs its target (as bench does), else "
     "estimated on an AMD part (--part, else the target's largest; docs/MODEL.md). The fastest is written "
     "into the manifest's \"tuned\" list with every candidate's figure and the method (docs/SPEC.md), and "
     "hkrt_select prefers it for that problem. A problem must give every run-time parameter of the kernels "
     "it is for, and every baked one that is not a tuning parameter (layout=nt). The list replaces the one "
     "before; on any failure the manifest is left as it was.",
     {{"--shape NAME=V,...", "a problem (repeatable, at most 16)"},
      {"--catalog DIR", "tune an existing catalogue instead of building specs (a device without hkgen's "
                        "build tools)"},
      {"--part PART", "the AMD part for estimates: MI300X, MI325X, MI350X, MI355X"},
      {"-n N", "timed runs per candidate on a GPU (default 20)"},
      US_OUT("catalog"), US_TARGET, US_JOBS},
     "1 a build failed, or a problem's kernels can be neither measured nor estimated here (a target no GPU "
     "here runs and the estimate does not model, such as sm_90a without an H100 or H200)"},
    {"merge", "hkgen merge SHARD_DIR... -o DIR", "join --shard K/N builds into one catalogue",
     "Checks that the shards come from the same specs and cover every kernel once, then writes one "
     "catalogue.",
     {US_OUT("catalog")}, "1 the shards are incomplete or disagree"},
    {"plan", "hkgen plan SPEC... --shards N [-o DIR] [--make FILE]", "write a Makefile of shard builds",
     "Writes a Makefile (default hkgen.mk) whose targets build the N shards and merge them into DIR, for "
     "make -j or a build farm.",
     {{"--shards N", "the number of shards"}, US_OUT("catalog"), {"--make FILE", "the Makefile to write"},
      US_TARGET},
     "1 the Makefile could not be written"},
};

#define US_N (sizeof us_cmds / sizeof us_cmds[0])

static const us_cmd *us_find(const char *name) {
  for (size_t i = 0; i < US_N; i++)
    if (!strcmp(us_cmds[i].name, name)) return &us_cmds[i];
  return NULL;
}

static const char us_common_status[] = "0 success; 2 a usage or spec error (the message names file:line:col)";
static const char us_env[] =
    "HKGEN_CLANG, HKGEN_COMGR, HKGEN_COMPILER=clang|comgr (the AMD compiler), HKGEN_CACHE_DIR, "
    "HKGEN_TEMPLATES and HKGEN_RUNTIME_INCLUDE (hkgen's data folders; default: beside the binary), HKGEN_M4";

int us_is_command(const char *name) { return us_find(name) != NULL; }

void us_overview(FILE *f) {
  fputs("usage:\n", f);
  for (size_t i = 0; i < US_N; i++) fprintf(f, "  %s\n", us_cmds[i].synopsis);
  fputs("  hkgen help [COMMAND] | hkgen COMMAND --help | hkgen --version | hkgen --man\n\ncommands:\n", f);
  for (size_t i = 0; i < US_N; i++) fprintf(f, "  %-8s %s\n", us_cmds[i].name, us_cmds[i].summary);
  fprintf(f, "\nExit status: %s; see `hkgen COMMAND --help` for the others.\nEnvironment: %s.\n"
             "See README.md and docs/SPEC.md.\n",
          us_common_status, us_env);
}

static void us_opts(FILE *f, const us_cmd *c) {
  for (int i = 0; i < 12 && c->opts[i].flag; i++) fprintf(f, "  %-20s %s\n", c->opts[i].flag, c->opts[i].help);
}

/* Prints text in lines of at most 78 columns, breaking at spaces. */
static void us_wrap(FILE *f, const char *text) {
  const char *s = text;
  while (*s) {
    size_t n = strlen(s), cut = n;
    if (n > 78) {
      cut = 78;
      while (cut > 0 && s[cut] != ' ') cut--;
      if (cut == 0) cut = 78;
    }
    fprintf(f, "%.*s\n", (int)cut, s);
    s += cut;
    while (*s == ' ') s++;
  }
}

int us_command(FILE *f, const char *name) {
  const us_cmd *c = us_find(name);
  if (!c) return -1;
  fprintf(f, "usage: %s\n\n", c->synopsis);
  us_wrap(f, c->text);
  if (c->opts[0].flag) {
    fputs("\noptions:\n", f);
    us_opts(f, c);
  }
  char st[512];
  snprintf(st, sizeof st, "exit status: %s%s%s", us_common_status, c->status ? "; " : "", c->status ? c->status : "");
  fputc('\n', f);
  us_wrap(f, st);
  return 0;
}

/* roff: a backslash or a line-leading dot or quote must be escaped. */
static void us_roff(FILE *f, const char *s) {
  if (*s == '.' || *s == '\'') fputs("\\&", f);
  for (; *s; s++) {
    if (*s == '\\') fputs("\\e", f);
    else if (*s == '-') fputs("\\-", f);
    else fputc(*s, f);
  }
}

void us_man(FILE *f, const char *version) {
  fprintf(f, ".\\\" generated by `hkgen --man` from gen/usage.c; do not edit\n"
             ".TH HKGEN 1 \"\" \"hkgen %s\" \"User Commands\"\n.SH NAME\nhkgen \\- kernel code generator for "
             "AMD Instinct GPUs (and NVIDIA Hopper)\n.SH SYNOPSIS\n",
          version);
  for (size_t i = 0; i < US_N; i++) {
    fputs(".B ", f);
    us_roff(f, us_cmds[i].synopsis);
    fputs("\n.br\n", f);
  }
  fputs(".SH COMMANDS\n", f);
  for (size_t i = 0; i < US_N; i++) {
    const us_cmd *c = &us_cmds[i];
    fprintf(f, ".SS %s\n", c->name);
    us_roff(f, c->text);
    fputc('\n', f);
    for (int j = 0; j < 12 && c->opts[j].flag; j++) {
      fputs(".TP\n.B ", f);
      us_roff(f, c->opts[j].flag);
      fputc('\n', f);
      us_roff(f, c->opts[j].help);
      fputc('\n', f);
    }
    fputs(".PP\nExit status: ", f);
    us_roff(f, us_common_status);
    if (c->status) {
      fputs("; ", f);
      us_roff(f, c->status);
    }
    fputs(".\n", f);
  }
  fputs(".SH ENVIRONMENT\n", f);
  us_roff(f, us_env);
  fputs(".\n.SH SEE ALSO\nREADME.md, docs/SPEC.md, docs/ARCHITECTURE.md\n", f);
}
