/* emu_fiber.h: minimal cooperative fibers for the emulator's work-items. */
#ifndef EMU_FIBER_H
#define EMU_FIBER_H

#include <stddef.h>

typedef struct {
  void *sp;      /* saved stack pointer while switched out */
  void *stack;   /* mmap'ed stack */
  size_t size;
} emu_fiber;

/* Prepares f to run entry() on its own stack at the next switch into it. */
int emu_fiber_init(emu_fiber *f, size_t stack_size, void (*entry)(void));
void emu_fiber_reset(emu_fiber *f, void (*entry)(void));
void emu_fiber_free(emu_fiber *f);
/* Saves the current context into from and resumes to. */
void emu_fiber_switch(emu_fiber *from, emu_fiber *to);

#endif
