/* shard.c: building a catalogue in slices. `hkgen build --shard K/N` builds
   every N-th kernel starting at the K-th (expansion order), and marks its
   folder with `.hkgen-shard`; `hkgen merge A B ... -o DIR` interleaves the
   shards' manifests back into expansion order and copies their files, giving
   the same bytes as a single build. `hkgen plan` writes a Makefile that runs
   the shards and the merge, for make -j, or any system that runs make rules. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "spec.h"
#include "util.h"

#define SH_KERNEL_OPEN "\n    {\n"
#define SH_KERNEL_CLOSE "\n    }"

int sh_parse(const char *text, int *k, int *n) {
  char *end;
  long a = strtol(text, &end, 10);
  if (*end != '/') return -1;
  long b = strtol(end + 1, &end, 10);
  if (*end || b < 1 || b > 100000 || a < 1 || a > b) return -1;
  *k = (int)a;
  *n = (int)b;
  return 0;
}

/* Keeps the kernels of shard k of n. */
void sh_select(spec_set *set, int k, int n) {
  size_t w = 0;
  for (size_t i = 0; i < set->n; i++) {
    if ((int)(i % (size_t)n) == k - 1) set->v[w++] = set->v[i];
    else op_inst_free(&set->v[i]);
  }
  set->n = w;
}

int sh_mark(const char *outdir, int k, int n, size_t total) {
  char *p = fs_join(outdir, ".hkgen-shard");
  char *text = xasprintf("%d/%d %zu\n", k, n, total);
  int rc = fs_write_atomic(p, text, strlen(text));
  if (rc < 0) diag_error(p, 0, 0, "cannot write: %s", strerror(errno));
  free(p);
  free(text);
  return rc;
}

typedef struct {
  char *dir;
  char *manifest;
  char **kernels; /* each kernel's JSON object text */
  size_t nk;
  int k, n;
  size_t total;
  char *head; /* text before the first kernel */
} sh_part;

/* Splits our own manifest format (gen/json.c writes each kernel object at a
   four-space indent) into kernel blocks. */
static int sh_split(sh_part *p) {
  char *start = strstr(p->manifest, "\"kernels\": [");
  if (!start) return -1;
  start += strlen("\"kernels\": [");
  p->head = strndup(p->manifest, (size_t)(start - p->manifest));
  for (char *s = start; (s = strstr(s, SH_KERNEL_OPEN));) {
    char *e = strstr(s, SH_KERNEL_CLOSE);
    if (!e) return -1;
    e += strlen(SH_KERNEL_CLOSE);
    p->kernels = xrealloc(p->kernels, (p->nk + 1) * sizeof *p->kernels);
    p->kernels[p->nk++] = strndup(s + 1, (size_t)(e - s - 1));
    s = e;
  }
  return 0;
}

static int sh_load(sh_part *p, const char *dir) {
  memset(p, 0, sizeof *p);
  p->dir = xstrdup(dir);
  char *mark = fs_join(dir, ".hkgen-shard"), *man = fs_join(dir, "manifest.json"), *text = NULL;
  size_t len;
  int rc = -1;
  if (fs_read_file(mark, 4096, &text, &len) < 0 || sscanf(text, "%d/%d %zu", &p->k, &p->n, &p->total) != 3)
    diag_error(dir, 0, 0, "not a shard folder (no readable .hkgen-shard: build it with --shard K/N)");
  else if (fs_read_file(man, 256u << 20, &p->manifest, &len) < 0)
    diag_error(man, 0, 0, "cannot read: %s (the shard's build did not finish?)", strerror(errno));
  else if (sh_split(p) < 0)
    diag_error(man, 0, 0, "not a manifest written by hkgen");
  else
    rc = 0;
  free(text);
  free(mark);
  free(man);
  return rc;
}

static void sh_free(sh_part *p) {
  for (size_t i = 0; i < p->nk; i++) free(p->kernels[i]);
  free(p->kernels);
  free(p->manifest);
  free(p->head);
  free(p->dir);
}

/* The value of "key": "..." inside one kernel block. */
static char *sh_field(const char *block, const char *key) {
  char *pat = xasprintf("\"%s\": \"", key);
  const char *s = strstr(block, pat);
  char *v = NULL;
  if (s) {
    s += strlen(pat);
    v = strndup(s, strcspn(s, "\""));
  }
  free(pat);
  return v;
}

static int sh_copy(const char *from_dir, const char *to_dir, const char *rel) {
  char *src = fs_join(from_dir, rel), *dst = fs_join(to_dir, rel), *data;
  size_t len;
  int rc = -1;
  char *d = fs_dirname(dst);
  if (fs_read_file(src, 1u << 30, &data, &len) < 0) {
    diag_error(src, 0, 0, "cannot read: %s", strerror(errno));
  } else {
    if (fs_mkdirs(d) == 0 && fs_write_atomic(dst, data, len) == 0) rc = 0;
    else diag_error(dst, 0, 0, "cannot write: %s", strerror(errno));
    free(data);
  }
  free(d);
  free(src);
  free(dst);
  return rc;
}

int sh_merge(char **dirs, int ndirs, const char *outdir) {
  sh_part *parts = xcalloc((size_t)ndirs, sizeof *parts);
  int bad = 0, n = 0;
  size_t total = 0;
  for (int i = 0; i < ndirs; i++) bad |= sh_load(&parts[i], dirs[i]) < 0;
  sh_part **by_k = NULL;
  if (!bad) {
    n = parts[0].n;
    total = parts[0].total;
    by_k = xcalloc((size_t)n, sizeof *by_k);
    for (int i = 0; i < ndirs; i++) {
      if (parts[i].n != n || parts[i].total != total) {
        diag_error(dirs[i], 0, 0, "shard %d/%d of %zu kernels does not belong with %s (%d/%d of %zu)",
                   parts[i].k, parts[i].n, parts[i].total, dirs[0], parts[0].k, n, total);
        bad = 1;
      } else if (by_k[parts[i].k - 1]) {
        diag_error(dirs[i], 0, 0, "shard %d/%d given twice", parts[i].k, n);
        bad = 1;
      } else {
        by_k[parts[i].k - 1] = &parts[i];
      }
    }
    for (int k = 0; k < n && !bad; k++)
      if (!by_k[k]) {
        diag_error(NULL, 0, 0, "shard %d/%d is missing", k + 1, n);
        bad = 1;
      }
  }
  hk_buf out;
  buf_init(&out);
  int lockfd = -1;
  if (!bad && bd_check_outdir(outdir) < 0) bad = 1;
  if (!bad && fs_mkdirs(outdir) < 0) {
    diag_error(outdir, 0, 0, "cannot create: %s", strerror(errno));
    bad = 1;
  }
  if (!bad && (lockfd = fs_lock_folder(outdir)) < 0) bad = 1; /* never a manifest in the middle of a build */
  if (!bad) {
    char *mpath = fs_join(outdir, "manifest.json");
    unlink(mpath); /* as in a build: no manifest until the new one is complete */
    buf_puts(&out, parts[0].head);
    for (size_t g = 0; g < total && !bad; g++) {
      sh_part *p = by_k[g % (size_t)n];
      size_t j = g / (size_t)n;
      if (j >= p->nk) {
        diag_error(p->dir, 0, 0, "shard %d/%d holds %zu kernels; expected more", p->k, n, p->nk);
        bad = 1;
        break;
      }
      static const char *const files[] = {"source", "file"};
      for (int f = 0; f < 2 && !bad; f++) {
        char *rel = sh_field(p->kernels[j], files[f]);
        if (rel) bad |= sh_copy(p->dir, outdir, rel) < 0;
        free(rel);
      }
      buf_printf(&out, "%s\n%s", g ? "," : "", p->kernels[j]);
    }
    buf_puts(&out, total ? "\n  ]\n}\n" : "]\n}\n");
    if (!bad && fs_write_atomic(mpath, out.s, out.len) < 0) {
      diag_error(mpath, 0, 0, "cannot write: %s", strerror(errno));
      bad = 1;
    }
    free(mpath);
  }
  buf_free(&out);
  if (lockfd >= 0) fs_unlock_folder(outdir, lockfd);
  for (int i = 0; i < ndirs; i++) sh_free(&parts[i]);
  free(parts);
  free(by_k);
  if (!bad) diag_note("hkgen: merged %d shards, %zu kernels, into %s\n", ndirs, total, outdir);
  return bad ? HK_EFAIL : HK_OK;
}

/* Paths go into make rules verbatim: only characters make and the shell
   take literally, so a file name can never run a command. */
static int sh_plain_path(const char *p) {
  if (!*p) return 0;
  for (; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          strchr("._/+-", *p)))
      return 0;
  return 1;
}

/* A Makefile: one rule per shard and the merge; `make -j N -f FILE` runs it. */
int sh_plan(char **specs, int nspecs, const char *targets, int nshards, const char *outdir,
            const char *file) {
  int bad = 0;
  for (int i = 0; i < nspecs; i++) bad |= !sh_plain_path(specs[i]);
  bad |= !sh_plain_path(outdir);
  if (bad) {
    diag_error(NULL, 0, 0,
               "plan: spec and output paths must use only letters, digits and . _ / + - "
               "(they are written into make rules)");
    return HK_EUSAGE;
  }
  hk_buf b;
  buf_init(&b);
  buf_printf(&b, "# Written by hkgen plan: %d shards of the build, then their merge.\n", nshards);
  buf_printf(&b, "# make -j%d -f %s   (each rule is one `hkgen build --shard`)\n", nshards, file);
  buf_puts(&b, "HKGEN ?= hkgen\nSPECS :=");
  for (int i = 0; i < nspecs; i++) buf_printf(&b, " %s", specs[i]);
  buf_printf(&b, "\nOUT := %s\nSHARDS :=", outdir);
  for (int k = 1; k <= nshards; k++) buf_printf(&b, " $(OUT).shard%d/manifest.json", k);
  buf_printf(&b, "\n\n$(OUT)/manifest.json: $(SHARDS)\n\t$(HKGEN) merge $(patsubst %%/manifest.json,%%,$(SHARDS)) -o $(OUT)\n\n");
  for (int k = 1; k <= nshards; k++)
    buf_printf(&b, "$(OUT).shard%d/manifest.json: $(SPECS)\n\t$(HKGEN) build -q -j1 --shard %d/%d%s%s -o $(OUT).shard%d $(SPECS)\n\n",
               k, k, nshards, targets ? " --target " : "", targets ? targets : "", k);
  int rc = fs_write_atomic(file, b.s, b.len);
  if (rc < 0) diag_error(file, 0, 0, "cannot write: %s", strerror(errno));
  else diag_note("hkgen: wrote %s (%d shards); run: make -j%d -f %s\n", file, nshards, nshards, file);
  buf_free(&b);
  return rc < 0 ? HK_EFAIL : HK_OK;
}
