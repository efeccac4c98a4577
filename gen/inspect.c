/* inspect.c: `hkgen inspect PATH`, a resource table for a catalogue or one
   code object, read from the objects themselves (not from the manifest's
   copy of the figures, so the table audits the manifest). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build.h"
#include "comgr.h"
#include "hotloop.h"
#include "target.h"
#include "util.h"

int cmd_inspect_path(const char *path);

/* The target of an AMDGPU ELF object, from e_flags. */
static const char *ins_target(const unsigned char *p, size_t n) {
  if (n < 52 || memcmp(p, "\177ELF", 4) || p[4] != 2) return NULL;
  unsigned mach = p[48] | (unsigned)p[49] << 8; /* e_flags, little endian, low bits */
  const tgt_info *t = tgt_from_elf_mach(mach & 0xff);
  return t ? t->name : NULL;
}

static void ins_header(void) {
  printf("%-48s %-7s %5s %5s %5s %7s %7s %6s %6s %5s %4s %6s %-13s %s\n", "kernel", "target",
         "VGPR", "AGPR", "SGPR", "LDS", "scratch", "spills", "waves", "loop", "MFMA", "share",
         "at", "mnemonics");
}

/* The hot-loop columns (hotloop.h): "-" for a kernel without a loop, or
   when its object could not be disassembled. */
static void ins_loop_columns(const hl_loop *l) {
  if (!l->found) {
    printf(" %5s %4s %6s %-13s %s\n", "-", "-", "-", "-", "-");
    return;
  }
  char at[48];
  snprintf(at, sizeof at, "0x%llx-0x%llx", l->start, l->end);
  printf(" %5d %4d %6.3f %-13s %s\n", l->insts, l->mfma, (double)l->mfma / l->insts, at,
         l->mnemonics[0] ? l->mnemonics : "-");
}

/* Disassembles path once for all its kernels; NULL (and a note, once) when
   llvm-objdump is missing or fails. */
static char *ins_disassembly(const char *path, const char *target) {
  static int warned;
  hk_buf dis;
  buf_init(&dis);
  if (hl_disassemble(path, target, &dis) == 0) return buf_steal(&dis);
  if (!warned++)
    fprintf(stderr, "hkgen: note: %s, so hot-loop columns show \"-\"\n",
            hl_objdump() ? "llvm-objdump failed" : "no llvm-objdump for amdgcn (install llvm-22, or set HKGEN_OBJDUMP)");
  buf_free(&dis);
  return NULL;
}

static int ins_object(const char *path) {
  char *data;
  size_t len;
  if (fs_read_file(path, 1u << 30, &data, &len) < 0) {
    diag_error(path, 0, 0, "cannot read: %s", strerror(errno));
    return -1;
  }
  const char *target = ins_target((const unsigned char *)data, len);
  cg_kernel_meta m[64];
  int n = target ? cg_read_meta(data, len, m, 64) : -1;
  free(data);
  if (!target || n < 0) {
    diag_error(path, 0, 0, "not an AMDGPU code object hkgen can read%s",
               cg_identity() ? "" : " (comgr not found: install libamd-comgr2)");
    return -1;
  }
  char *dis = ins_disassembly(path, target);
  for (int i = 0; i < n; i++) {
    int block = m[i].max_wg_size > 0 ? m[i].max_wg_size : 1024;
    printf("%-48s %-7s %5d %5d %5d %7d %7d %6d %6d", m[i].name, target, m[i].vgpr, m[i].agpr,
           m[i].sgpr, m[i].lds, m[i].scratch, m[i].vgpr_spill + m[i].sgpr_spill,
           bd_waves_per_simd(target, &m[i], block));
    hl_loop l = {0};
    if (dis) hl_find(dis, m[i].name, &l);
    ins_loop_columns(&l);
  }
  free(dis);
  return 0;
}

/* The "file" entries of our own manifest (written by build.c, one per line). */
static int ins_catalogue(const char *dir) {
  char *mpath = fs_join(dir, "manifest.json"), *text;
  size_t len;
  if (fs_read_file(mpath, 64u << 20, &text, &len) < 0) {
    diag_error(mpath, 0, 0, "cannot read the catalogue's manifest: %s", strerror(errno));
    free(mpath);
    return -1;
  }
  free(mpath);
  int bad = 0, count = 0;
  for (char *p = text; (p = strstr(p, "\"file\": \"")); ) {
    p += 9;
    char *end = strchr(p, '"');
    if (!end) break;
    *end = 0;
    char *obj = fs_join(dir, p);
    bad |= ins_object(obj) < 0;
    count++;
    free(obj);
    p = end + 1;
  }
  free(text);
  printf("%d kernel%s\n", count, count == 1 ? "" : "s");
  return bad ? -1 : 0;
}

int cmd_inspect_path(const char *path) {
  struct stat st;
  if (stat(path, &st) < 0) {
    diag_error(path, 0, 0, "%s", strerror(errno));
    return HK_EUSAGE;
  }
  ins_header();
  int rc = S_ISDIR(st.st_mode) ? ins_catalogue(path) : ins_object(path);
  return rc < 0 ? HK_EFAIL : HK_OK;
}
