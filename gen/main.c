/* main.c: the hkgen command line. One cmd_<verb> per subcommand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "comgr.h"
#include "emutest.h"
#include "compile.h"
#include "estimate.h"
#include "op.h"
#include "spec.h"
#include "target.h"
#include "usage.h"
#include "util.h"

#ifndef HK_VERSION
#define HK_VERSION "0.1.0"
#endif

int cmd_inspect_path(const char *path);
int cmd_inspect_estimate(const char *path, const char *part, const char *shape);
int cmd_explain_set(const spec_set *set, int jobs);
int cmd_bench(int argc, char **argv);
int tn_tune(const char *dir, const char *const *shapes, int nshapes, const char *part, const char *targets, int runs);
int sh_parse(const char *text, int *k, int *n);
void sh_select(spec_set *set, int k, int n);
int sh_mark(const char *outdir, int k, int n, size_t total);
int sh_merge(char **dirs, int ndirs, const char *outdir);
int sh_plan(char **specs, int nspecs, const char *targets, int nshards, const char *outdir,
            const char *file);

typedef struct {
  const char *outdir;
  const char *targets;
  const char *parts; /* --part: the AMD parts estimates are for (es_part_of) */
  int jobs;
  int no_cache;
  int quiet;
  int emulate;
  int json;
  int shard_k, shard_n; /* --shard K/N; 0 when whole */
  int shards;           /* plan --shards N */
  const char *makefile; /* plan --make FILE */
  const char **files;
  int nfiles;
} cli_args;

static int cli_int(const char *opt, const char *v, int *out) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < 1 || x > 256) {
    diag_error(NULL, 0, 0, "%s takes a number from 1 to 256 (got '%s')", opt, v ? v : "");
    return -1;
  }
  *out = (int)x;
  return 0;
}

/* Parses options after the verb; every unknown option is an error. */
static int cli_parse(int argc, char **argv, cli_args *a) {
  a->outdir = "catalog";
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  a->jobs = nproc > 0 ? (int)(nproc > 256 ? 256 : nproc) : 1;
  a->files = calloc((size_t)argc + 1, sizeof *a->files);
  int bad = 0;
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(s, "-o")) {
      if (!next) { diag_error(NULL, 0, 0, "-o needs a folder"); bad = 1; }
      else a->outdir = argv[++i];
    } else if (!strncmp(s, "-j", 2)) {
      const char *v = s[2] ? s + 2 : next;
      if (!s[2]) i++;
      bad |= cli_int("-j", v, &a->jobs) < 0;
    } else if (!strcmp(s, "--target")) {
      if (!next) { diag_error(NULL, 0, 0, "--target needs a list"); bad = 1; }
      else a->targets = argv[++i];
    } else if (!strncmp(s, "--target=", 9)) {
      a->targets = s + 9;
    } else if (!strcmp(s, "--part")) {
      char msg[512];
      if (!next) { diag_error(NULL, 0, 0, "--part needs a list of parts"); bad = 1; }
      else if (es_parts_check(next, msg, sizeof msg) < 0) { diag_error(NULL, 0, 0, "%s", msg); bad = 1; }
      a->parts = next;
      i++;
    } else if (!strcmp(s, "--shard")) {
      if (!next || sh_parse(next, &a->shard_k, &a->shard_n) < 0) {
        diag_error(NULL, 0, 0, "--shard takes K/N with 1 <= K <= N (got '%s')", next ? next : "");
        bad = 1;
      }
      i++;
    } else if (!strcmp(s, "--shards")) {
      if (cli_int("--shards", next, &a->shards) < 0) bad = 1;
      i++;
    } else if (!strcmp(s, "--make")) {
      if (!next) { diag_error(NULL, 0, 0, "--make needs a file name"); bad = 1; }
      else a->makefile = argv[++i];
    } else if (!strcmp(s, "--json")) {
      a->json = 1;
    } else if (!strcmp(s, "--emulate")) {
      a->emulate = 1;
    } else if (!strcmp(s, "--no-cache")) {
      a->no_cache = 1;
    } else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
      a->quiet = 1;
    } else if (s[0] == '-' && s[1]) {
      diag_error(NULL, 0, 0, "unknown option '%s' (see hkgen --help)", s);
      bad = 1;
    } else {
      a->files[a->nfiles++] = s;
    }
  }
  return bad ? -1 : 0;
}

/* Loads every spec named; all problems of all files are reported. */
static int cli_load(const cli_args *a, spec_set *set) {
  if (a->nfiles == 0) {
    diag_error(NULL, 0, 0, "no spec given (see hkgen --help)");
    return -1;
  }
  int errors = a->targets ? spec_targets_ok(a->targets) : 0;
  if (errors) return -1;
  for (int i = 0; i < a->nfiles; i++) errors += spec_load(a->files[i], a->targets, set);
  if (!errors) errors += spec_check_unique(set);
  return errors ? -1 : 0;
}

static int cmd_build_like(int argc, char **argv, int sources_only) {
  cli_args a = {0};
  spec_set set = {0};
  int rc = HK_EUSAGE;
  if (cli_parse(argc, argv, &a) == 0 && cli_load(&a, &set) == 0) {
    bd_options o = {.outdir = a.outdir, .jobs = a.jobs, .use_cache = !a.no_cache,
                    .sources_only = sources_only, .quiet = a.quiet, .emulate = a.emulate, .json = a.json,
                    .costs = !sources_only, .parts = a.parts};
    diag_set_quiet(a.quiet);
    size_t total = set.n;
    if (a.shard_n) sh_select(&set, a.shard_k, a.shard_n);
    if (!sources_only) bd_choose(&set, a.jobs, a.quiet, a.parts);
    rc = bd_build(&set, &o);
    if (rc == HK_OK && a.shard_n && sh_mark(a.outdir, a.shard_k, a.shard_n, total) < 0) rc = HK_EFAIL;
  }
  spec_set_free(&set);
  free(a.files);
  return rc;
}

static int cmd_build(int argc, char **argv) { return cmd_build_like(argc, argv, 0); }
static int cmd_gen(int argc, char **argv) { return cmd_build_like(argc, argv, 1); }

static int cmd_check(int argc, char **argv) {
  cli_args a = {0};
  spec_set set = {0};
  int rc = HK_EUSAGE;
  if (cli_parse(argc, argv, &a) == 0 && cli_load(&a, &set) == 0) {
    printf("ok: %zu kernel%s\n", set.n, set.n == 1 ? "" : "s");
    rc = HK_OK;
  }
  spec_set_free(&set);
  free(a.files);
  return rc;
}

/* hkgen test: its own options (--shape, --seed, --keep, --stats) plus --target. */
static int cmd_test(int argc, char **argv) {
  et_options o = {0};
  cli_args a = {0};
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int nrest = 0, bad = 0;
  o.seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
  for (int i = 0; i < argc; i++) {
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--shape") && next) {
      if (o.nshapes < 16) o.shapes[o.nshapes++] = argv[++i];
    } else if (!strcmp(argv[i], "--seed") && next) {
      char *end;
      o.seed = strtoull(argv[++i], &end, 10);
      if (*end) {
        diag_error(NULL, 0, 0, "--seed takes a number (got '%s')", argv[i]);
        bad = 1;
      }
    } else if (!strcmp(argv[i], "--keep")) {
      o.keep = 1;
    } else if (!strcmp(argv[i], "--stats")) {
      o.stats = 1;
    } else if (!strcmp(argv[i], "--device")) {
      o.device = 1;
    } else if (!strcmp(argv[i], "--shape") || !strcmp(argv[i], "--seed")) {
      diag_error(NULL, 0, 0, "%s needs a value", argv[i]);
      bad = 1;
    } else {
      rest[nrest++] = argv[i];
    }
  }
  spec_set set = {0};
  int rc = HK_EUSAGE;
  if (!bad && cli_parse(nrest, rest, &a) == 0 && cli_load(&a, &set) == 0) {
    o.jobs = a.jobs;
    o.targets = a.targets;
    bd_choose(&set, a.jobs, !isatty(2), a.parts);
    rc = et_test(&set, &o);
  }
  spec_set_free(&set);
  free(a.files);
  free(rest);
  return rc;
}

/* hkgen tune SPEC... --shape ... [-o DIR] | hkgen tune --catalog DIR --shape ...:
   its own options (--shape, --catalog, --part, -n) plus build's. */
static int cmd_tune(int argc, char **argv) {
  const char *shapes[16], *catalog = NULL, *part = NULL;
  int nshapes = 0, runs = 20, bad = 0, nrest = 0;
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = !strcmp(s, "--shape") || !strcmp(s, "--catalog") || !strcmp(s, "--part") || !strcmp(s, "-n");
    if (takes && !next) {
      diag_error(NULL, 0, 0, "%s needs a value (see hkgen tune --help)", s);
      bad = 1;
    } else if (!strcmp(s, "--shape")) {
      if (nshapes < 16) shapes[nshapes++] = argv[++i];
      else diag_error(NULL, 0, 0, "at most 16 --shape problems"), bad = 1, i++;
    } else if (!strcmp(s, "--catalog")) catalog = argv[++i];
    else if (!strcmp(s, "--part")) part = argv[++i];
    else if (!strcmp(s, "-n")) {
      char *end;
      long n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > 1000) diag_error(NULL, 0, 0, "-n takes 1 to 1000 timed runs (got '%s')", argv[i]), bad = 1;
      runs = (int)n;
    } else rest[nrest++] = argv[i];
  }
  cli_args a = {0};
  spec_set set = {0};
  int rc = HK_EUSAGE;
  if (!bad && cli_parse(nrest, rest, &a) == 0) {
    if (catalog && a.nfiles) {
      diag_error(NULL, 0, 0, "tune takes specs or --catalog DIR, not both");
    } else if (catalog) {
      rc = tn_tune(catalog, shapes, nshapes, part, a.targets, runs);
    } else if (!nshapes) {
      diag_error(NULL, 0, 0, "tune needs at least one problem: --shape NAME=V,...");
    } else if (cli_load(&a, &set) == 0) {
      /* tune's --part is also the part the build's choices and costs are for */
      bd_options o = {.outdir = a.outdir, .jobs = a.jobs, .use_cache = !a.no_cache, .quiet = a.quiet,
                      .costs = 1, .parts = part};
      bd_choose(&set, a.jobs, a.quiet, part);
      rc = bd_build(&set, &o);
      if (rc == HK_OK) rc = tn_tune(a.outdir, shapes, nshapes, part, NULL, runs);
    }
  }
  spec_set_free(&set);
  free(a.files);
  free(rest);
  return rc;
}

static int cmd_explain(int argc, char **argv) {
  cli_args a = {0};
  spec_set set = {0};
  int rc = HK_EUSAGE;
  if (cli_parse(argc, argv, &a) == 0 && cli_load(&a, &set) == 0) {
    bd_choose_cached(&set, a.parts); /* what the build chose, where the cache holds every candidate */
    rc = cmd_explain_set(&set, a.jobs);
  }
  spec_set_free(&set);
  free(a.files);
  return rc;
}

static int cmd_merge(int argc, char **argv) {
  cli_args a = {0};
  int rc = HK_EUSAGE;
  if (cli_parse(argc, argv, &a) == 0) {
    if (a.nfiles < 1) diag_error(NULL, 0, 0, "merge takes shard folders: hkgen merge A B ... -o DIR");
    else rc = sh_merge((char **)a.files, a.nfiles, a.outdir);
  }
  free(a.files);
  return rc;
}

static int cmd_plan(int argc, char **argv) {
  cli_args a = {0};
  spec_set set = {0};
  int rc = HK_EUSAGE;
  if (cli_parse(argc, argv, &a) == 0 && cli_load(&a, &set) == 0) {
    if (a.shards < 1) diag_error(NULL, 0, 0, "plan needs --shards N");
    else rc = sh_plan((char **)a.files, a.nfiles, a.targets, a.shards, a.outdir,
                      a.makefile ? a.makefile : "hkgen.mk");
  }
  spec_set_free(&set);
  free(a.files);
  return rc;
}

static const char *cli_type_name(op_ptype t) {
  return t == OP_INT ? "int" : t == OP_ENUM ? "enum" : t == OP_BOOL ? "bool" : "float";
}

static int cmd_list(int argc, char **argv) {
  (void)argv;
  if (argc) {
    diag_error(NULL, 0, 0, "list takes no arguments");
    return HK_EUSAGE;
  }
  size_t nops, nt;
  const op_desc *const *ops = op_all(&nops);
  for (size_t i = 0; i < nops; i++) {
    printf("op %s: %s\n", ops[i]->name, ops[i]->doc);
    int w = 9; /* the widest parameter name sets the first column */
    for (int j = 0; j < ops[i]->nparams; j++)
      if ((int)strlen(ops[i]->params[j].name) > w) w = (int)strlen(ops[i]->params[j].name);
    printf("  %-*s %-5s %-9s %-8s %s\n", w, "parameter", "type", "default", "run-time", "allowed");
    for (int j = 0; j < ops[i]->nparams; j++) {
      const op_param *p = &ops[i]->params[j];
      char allowed[256];
      op_param q = *p;
      q.runtime_ok = 0;
      op_describe_allowed(&q, allowed, sizeof allowed);
      printf("  %-*s %-5s %-9s %-8s %s\n", w, p->name, cli_type_name(p->type), p->def,
             p->runtime_ok ? "yes" : "no", allowed);
    }
    printf("\n");
  }
  const tgt_info *ts = tgt_all(&nt);
  printf("targets (default: %s):\n", tgt_default_list());
  for (size_t i = 0; i < nt; i++) {
    cc_compiler cc;
    char why[512];
    int ok = cc_resolve(ts[i].name, &cc, why, sizeof why) == 0;
    printf("  %-7s %-6s %-14s LDS %6u  %s\n", ts[i].name, ts[i].arch, ts[i].product,
           ts[i].lds_bytes, ok ? cc.identity : "no compiler on this machine");
  }
  return HK_OK;
}

/* hkgen inspect PATH [--estimate PART [--shape NAME=V,...]] */
static int cmd_inspect(int argc, char **argv) {
  const char *path = NULL, *part = NULL, *shape = NULL;
  for (int i = 0; i < argc; i++) {
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if ((!strcmp(argv[i], "--estimate") || !strcmp(argv[i], "--shape")) && !next) {
      diag_error(NULL, 0, 0, "%s needs a value", argv[i]);
      return HK_EUSAGE;
    }
    if (!strcmp(argv[i], "--estimate")) part = argv[++i];
    else if (!strcmp(argv[i], "--shape")) shape = argv[++i];
    else if (argv[i][0] == '-' || path) {
      diag_error(NULL, 0, 0, "inspect takes one catalogue folder or .hsaco file, --estimate PART and --shape "
                 "NAME=V,... (got '%s')", argv[i]);
      return HK_EUSAGE;
    } else path = argv[i];
  }
  if (!path || (shape && !part)) {
    diag_error(NULL, 0, 0, path ? "--shape goes with --estimate PART" : "inspect takes one catalogue folder or .hsaco file");
    return HK_EUSAGE;
  }
  return part ? cmd_inspect_estimate(path, part, shape) : cmd_inspect_path(path);
}

static const struct {
  const char *name;
  int (*fn)(int, char **);
} cli_cmds[] = {
    {"build", cmd_build}, {"gen", cmd_gen},         {"check", cmd_check},
    {"list", cmd_list},   {"inspect", cmd_inspect}, {"test", cmd_test}, {"explain", cmd_explain},
    {"merge", cmd_merge}, {"plan", cmd_plan},       {"bench", cmd_bench},
    {"tune", cmd_tune},
};

/* hkgen help [COMMAND]. */
static int cmd_help(int argc, char **argv) {
  if (argc == 0) {
    us_overview(stdout);
    return HK_OK;
  }
  if (argc == 1 && us_command(stdout, argv[0]) == 0) return HK_OK;
  diag_error(NULL, 0, 0, "help takes one command name (got '%s'); see hkgen --help", argv[0]);
  return HK_EUSAGE;
}

/* `--help` or `-h` anywhere among a command's arguments asks for its help. */
static int cli_wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    us_overview(stderr);
    return HK_EUSAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    us_overview(stdout);
    return HK_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("hkgen %s\n", HK_VERSION);
    return HK_OK;
  }
  if (!strcmp(argv[1], "--man")) {
    us_man(stdout, HK_VERSION);
    return HK_OK;
  }
  if (!strcmp(argv[1], "help")) return cmd_help(argc - 2, argv + 2);
  for (size_t i = 0; i < sizeof cli_cmds / sizeof cli_cmds[0]; i++)
    if (!strcmp(argv[1], cli_cmds[i].name)) {
      if (cli_wants_help(argc - 2, argv + 2)) return us_command(stdout, cli_cmds[i].name) == 0 ? HK_OK : HK_EFAIL;
      return cli_cmds[i].fn(argc - 2, argv + 2);
    }
  if (cli_wants_help(argc - 1, argv + 1)) return us_command(stdout, "build") == 0 ? HK_OK : HK_EFAIL;
  return cmd_build(argc - 1, argv + 1); /* `hkgen spec.yaml` builds */
}
