/* inspect.c: `hkgen inspect PATH`, a resource table for a catalogue or one
   code object, read from the objects themselves (not from the manifest's
   copy of the figures, so the table audits the manifest): AMD code objects
   through comgr's metadata and llvm-objdump, NVIDIA cubins from their ELF
   records (registers, stack frame, static shared memory). */
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
int ie_catalogue_baked(const char *dir);

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

/* ---- NVIDIA cubins: the ELF's own records (no disassembler here) ---------- */

typedef struct {
  const unsigned char *p;
  size_t n;
  unsigned long long shoff;
  unsigned shnum, shentsize, shstr;
} ins_elf;

static unsigned long long ins_le(const unsigned char *p, int bytes) {
  unsigned long long v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Section i's offset and size, 0 when it lies outside the file. */
static int ins_section(const ins_elf *e, unsigned i, unsigned long long *off, unsigned long long *size,
                       unsigned *name, unsigned *link) {
  unsigned long long h = e->shoff + (unsigned long long)i * e->shentsize;
  if (i >= e->shnum || h + 64 > e->n) return -1;
  *name = (unsigned)ins_le(e->p + h, 4);
  *link = (unsigned)ins_le(e->p + h + 40, 4);
  *off = ins_le(e->p + h + 24, 8);
  *size = ins_le(e->p + h + 32, 8);
  unsigned type = (unsigned)ins_le(e->p + h + 4, 4);
  if (type != 8 /* NOBITS */ && (*off > e->n || *size > e->n - *off)) return -1;
  return 0;
}

/* A NUL-terminated string at offset `at' of section `sec', or "". */
static const char *ins_str(const ins_elf *e, unsigned sec, unsigned at) {
  unsigned long long off, size;
  unsigned nm, link;
  if (ins_section(e, sec, &off, &size, &nm, &link) < 0 || at >= size) return "";
  const char *s = (const char *)e->p + off + at;
  return memchr(s, 0, size - at) ? s : "";
}

/* The section named `name', or -1. */
static int ins_find(const ins_elf *e, const char *name, unsigned long long *off, unsigned long long *size) {
  for (unsigned i = 0; i < e->shnum; i++) {
    unsigned nm, link;
    if (ins_section(e, i, off, size, &nm, &link) == 0 && !strcmp(ins_str(e, e->shstr, nm), name)) return (int)i;
  }
  return -1;
}

/* Attribute `attr' of symbol `sym' in the .nv.info records (EIATTR_REGCOUNT
   0x2f, EIATTR_FRAME_SIZE 0x11: {u32 symbol, u32 value}), or -1. */
static long ins_nv_attr(const ins_elf *e, unsigned sym, int attr) {
  unsigned long long off, size;
  if (ins_find(e, ".nv.info", &off, &size) < 0) return -1;
  for (unsigned long long q = off; q + 4 <= off + size;) {
    int fmt = e->p[q], a = e->p[q + 1];
    unsigned len = fmt == 4 ? (unsigned)ins_le(e->p + q + 2, 2) : 0; /* EIFMT_SVAL carries len bytes */
    if (q + 4 + len > off + size) break;
    if (fmt == 4 && a == attr && len == 8 && ins_le(e->p + q + 4, 4) == sym) return (long)ins_le(e->p + q + 8, 4);
    q += 4 + len;
  }
  return -1;
}

/* One row per kernel (each has a .nv.info.<name> section): registers and
   stack frame from the ELF's records, static shared memory from the size of
   .nv.shared.<name>; the rest is not in a cubin and shows "-". */
/* The target of a cubin from its ELF header: the SM version sits in
   e_flags' low byte, or (ABI version 8 and later, CUDA 12+) its second. */
static const char *ins_cubin_target(const unsigned char *p, char *buf, size_t n) {
  unsigned flags = (unsigned)ins_le(p + 0x30, 4), sm = p[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  const tgt_info *t = tgt_from_cuda_cc((int)sm);
  if (t) return t->name;
  snprintf(buf, n, "sm_%u", sm);
  return buf;
}

static int ins_cubin(const char *path, const unsigned char *p, size_t n) {
  ins_elf e = {p, n, ins_le(p + 0x28, 8), (unsigned)ins_le(p + 0x3c, 2), (unsigned)ins_le(p + 0x3a, 2),
               (unsigned)ins_le(p + 0x3e, 2)};
  unsigned long long soff, ssize;
  int symtab = ins_find(&e, ".symtab", &soff, &ssize), rows = 0;
  char tbuf[16];
  const char *target = ins_cubin_target(p, tbuf, sizeof tbuf);
  unsigned nm, strtab = 0;
  if (symtab >= 0) ins_section(&e, (unsigned)symtab, &soff, &ssize, &nm, &strtab);
  for (unsigned long long s = 0; symtab >= 0 && (s + 1) * 24 <= ssize; s++) {
    const char *name = ins_str(&e, strtab, (unsigned)ins_le(p + soff + s * 24, 4));
    char sec[300];
    unsigned long long off, size;
    snprintf(sec, sizeof sec, ".nv.info.%s", name);
    if (!*name || ins_find(&e, sec, &off, &size) < 0) continue;
    snprintf(sec, sizeof sec, ".nv.shared.%s", name);
    long shared = ins_find(&e, sec, &off, &size) < 0 ? 0 : (long)size;
    /* the section also holds the 1 KiB every block reserves on sm_80 and later */
    shared = shared >= 1024 ? shared - 1024 : shared;
    long regs = ins_nv_attr(&e, (unsigned)s, 0x2f), frame = ins_nv_attr(&e, (unsigned)s, 0x11);
    printf("%-48s %-7s %5ld %5s %5s %7ld %7ld %6s %6s", name, target, regs, "-", "-", shared,
           frame < 0 ? 0 : frame, "-", "-");
    ins_loop_columns(&(hl_loop){0});
    rows++;
  }
  if (!rows) diag_error(path, 0, 0, "a CUDA object without kernel records hkgen can read");
  return rows ? 0 : -1;
}

static int ins_object(const char *path) {
  char *data;
  size_t len;
  if (fs_read_file(path, 1u << 30, &data, &len) < 0) {
    diag_error(path, 0, 0, "cannot read: %s", strerror(errno));
    return -1;
  }
  if (len >= 64 && !memcmp(data, "\177ELF", 4) && data[4] == 2 && ins_le((unsigned char *)data + 18, 2) == 190) {
    int rc = ins_cubin(path, (unsigned char *)data, len); /* EM_CUDA */
    free(data);
    return rc;
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
    if (dis) hl_find(dis, m[i].name, tgt_find(target), &l);
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
  ie_catalogue_baked(dir);
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
