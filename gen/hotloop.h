/* hotloop.h: a kernel's hot loop, from llvm-objdump's disassembly of an AMD
   code object (for `hkgen inspect`).

   A loop is a backward branch (s_branch or s_cbranch_*, target address at or
   below the branch) whose target dominates the branch in the kernel's control
   flow graph: this leaves out the jumps back from out-of-line blocks that the
   compiler places after the main code. Branches back to one target are one
   loop, from the target to the last of them. A loop is innermost when no other
   loop's address range lies inside its own; the hot loop is the innermost loop
   with the most MFMA instructions (v_mfma*, v_smfmac*), then the fewest
   instructions, then the lowest address. Its figures count the instructions
   from the target to the branch, both included.

   Hand-written assembly (AITER's code objects) names its branch targets
   with symbols: llvm-objdump then starts a new header at each and prints
   the label for the branch's operand. A header whose symbol is no function
   (the symbol table, printed with -t) continues the kernel, and a branch's
   target is read from its encoding. */
#ifndef HK_HOTLOOP_H
#define HK_HOTLOOP_H

#include "target.h"
#include "util.h"

typedef struct {
  int found;                    /* 0: the kernel has no loop */
  int insts, mfma;              /* instructions and MFMAs in the hot loop */
  unsigned long long start, end; /* addresses of its first and last instruction */
  char mnemonics[256];          /* distinct MFMA mnemonics, comma-separated */
} hl_loop;

/* The llvm-objdump in use ($HKGEN_OBJDUMP, /opt/rocm/llvm/bin/llvm-objdump,
   llvm-objdump-22 ... on PATH, one that knows amdgcn), or NULL. */
const char *hl_objdump(void);
/* Disassembles the object at path for target into out; 0 on success. */
int hl_disassemble(const char *path, const char *target, hk_buf *out);
/* The hot loop of kernel in a disassembly for target t (whose table names
   its matrix instructions); -1 when the kernel is not there. */
int hl_find(const char *dis, const char *kernel, const tgt_info *t, hl_loop *r);
/* Calls fn once per instruction of kernel, in address order, with its
   mnemonic, its operands (ops[0..opslen), the text before the address
   comment), whether it lies in loop l (l->found, start..end) and the share
   of runs that reach it by a static guess: 1/2 for each forward branch that
   can skip it (an arm of an if, a guarded block), counting only branches
   that stay on one side of the loop's bounds and not s_cbranch_execz (it
   skips only when no lane is active, taken here as never). -1 when the kernel is not in
   dis. */
typedef void (*hl_visit)(void *ctx, const char *mnem, const char *ops, size_t opslen, int in_loop, double reach);
int hl_each(const char *dis, const char *kernel, const tgt_info *t, const hl_loop *l, hl_visit fn, void *ctx);

#endif
