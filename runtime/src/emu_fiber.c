/* emu_fiber.c: fibers by stack switching: a six-register switch on x86-64,
   far cheaper than swapcontext, which makes a system call for the signal
   mask each time. Other hosts are not supported yet. */
#define _GNU_SOURCE
#include "emu_fiber.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)

/* void emu_switch_x86_64(void **save_sp, void *load_sp): System V callee-saved
   registers are pushed, the stack pointers exchanged, and popped again. */
__asm__(".text\n"
        ".globl emu_switch_x86_64\n"
        ".hidden emu_switch_x86_64\n"
        ".type emu_switch_x86_64,@function\n"
        "emu_switch_x86_64:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size emu_switch_x86_64, .-emu_switch_x86_64\n");
void emu_switch_x86_64(void **save_sp, void *load_sp);

void emu_fiber_reset(emu_fiber *f, void (*entry)(void)) {
  uintptr_t top = ((uintptr_t)f->stack + f->size) & ~(uintptr_t)15;
  void **sp = (void **)top;
  *--sp = NULL;            /* entry's return address: entry never returns */
  *--sp = (void *)entry;   /* popped by ret: entry starts with rsp % 16 == 8 */
  for (int i = 0; i < 6; i++) *--sp = NULL; /* rbp rbx r12 r13 r14 r15 */
  f->sp = sp;
}

void emu_fiber_switch(emu_fiber *from, emu_fiber *to) { emu_switch_x86_64(&from->sp, to->sp); }

#else
#error "emu_fiber.c: only x86-64 is supported for now"
#endif

int emu_fiber_init(emu_fiber *f, size_t stack_size, void (*entry)(void)) {
  memset(f, 0, sizeof *f);
  void *p = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return -1;
  mprotect(p, 4096, PROT_NONE); /* guard page: a stack overflow faults at once */
  f->stack = p;
  f->size = stack_size;
  emu_fiber_reset(f, entry);
  return 0;
}

void emu_fiber_free(emu_fiber *f) {
  if (f->stack) munmap(f->stack, f->size);
  memset(f, 0, sizeof *f);
}
