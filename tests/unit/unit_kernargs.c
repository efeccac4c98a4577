/* unit_kernargs.c: bd_check_kernargs, which fails a build when the
   compiler's kernel-argument size (cg_kernel_meta.args_size) is not the
   plan's, and cc_cubin_param_size, which reads that size from a cubin. */
#include <elf.h>

#include "../../gen/build.h"
#include "testlib.h"

/* A plan of 24 bytes: a pointer, an int, then a long at 16. */
static void fake_plan(const op_inst *k, op_plan *p) {
  (void)k;
  op_arg_add(p->args, &p->nargs, "const hk_bf16 *", "A");
  op_arg_add(p->args, &p->nargs, "int", "n");
  op_arg_add(p->args, &p->nargs, "long", "s");
}

static int check(const op_inst *k, int compiler_size, char *msg, size_t n) {
  cg_kernel_meta m;
  memset(&m, 0, sizeof m);
  m.args_size = compiler_size;
  msg[0] = 0;
  return bd_check_kernargs(k, &m, msg, n);
}

/* A cubin in miniature: an ELF64 with .shstrtab and .nv.info.k holding an
   EIATTR_CBANK_PARAM_SIZE record and one EIATTR_KPARAM_INFO (offset 48,
   size 320, as ptxas writes a 64-byte-aligned struct). */
static size_t fake_cubin(unsigned char *o, size_t cap) {
  static const char names[] = "\0.shstrtab\0.nv.info.k";
  static const unsigned char info[] = {
      0x03, 0x19, 0x70, 0x01,                                     /* CBANK_PARAM_SIZE 368 */
      0x04, 0x17, 0x0c, 0x00, 0, 0, 0, 0, 0, 0, 0x30, 0x00,       /* KPARAM_INFO: index, ordinal, offset 48 */
      0x00, 0xf0, 0x01, 0x05};                                    /* size 320 << 18 */
  Elf64_Ehdr eh;
  Elf64_Shdr sh[3];
  memset(o, 0, cap);
  memset(&eh, 0, sizeof eh);
  memset(sh, 0, sizeof sh);
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 3;
  eh.e_shstrndx = 1;
  size_t at = sizeof eh;
  sh[1].sh_name = 1;
  sh[1].sh_offset = at;
  sh[1].sh_size = sizeof names;
  memcpy(o + at, names, sizeof names);
  at += sizeof names;
  sh[2].sh_name = 11;
  sh[2].sh_offset = at;
  sh[2].sh_size = sizeof info;
  memcpy(o + at, info, sizeof info);
  at += sizeof info;
  eh.e_shoff = at;
  memcpy(o + at, sh, sizeof sh);
  memcpy(o, &eh, sizeof eh);
  return at + sizeof sh;
}

int main(void) {
  op_desc d;
  memset(&d, 0, sizeof d);
  d.name = "fake";
  d.plan = fake_plan;
  op_inst k;
  memset(&k, 0, sizeof k);
  k.op = &d;
  k.target = "gfx942";
  snprintf(k.name, sizeof k.name, "fake_kernel");
  char msg[400];
  T_CHECK(op_plan_resolve(&k, msg, sizeof msg) == 0 && k.plan->args_size == 24, "the plan: %s", msg);
  T_CHECK(check(&k, 24, msg, sizeof msg) == 0, "equal sizes fail: %s", msg);
  T_CHECK(check(&k, 32, msg, sizeof msg) == -1, "32 bytes against a plan of 24 pass");
  T_CHECK(strstr(msg, "fake_kernel") && strstr(msg, "gfx942"), "no kernel or target in: %s", msg);
  T_CHECK(strstr(msg, " 32 bytes") && strstr(msg, "plan 24"), "both sizes not in: %s", msg);
  T_CHECK(check(&k, 20, msg, sizeof msg) == -1, "20 bytes against a plan of 24 pass");
  T_CHECK(check(&k, -1, msg, sizeof msg) == -1 && strstr(msg, "24"), "an unknown size passes: %s", msg);

  unsigned char obj[512];
  size_t len = fake_cubin(obj, sizeof obj);
  T_CHECK(cc_cubin_param_size(obj, len, "k") == 320, "got %d", cc_cubin_param_size(obj, len, "k"));
  T_CHECK(cc_cubin_param_size(obj, len, "other") == -1, "a kernel not in the object has a size");
  T_CHECK(cc_cubin_param_size(obj, 40, "k") == -1, "a truncated object has a size");
  printf("%d checks, %d failures\n", t_checks, t_failures);
  free(k.plan);
  return t_failures != 0;
}
