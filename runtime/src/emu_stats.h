/* emu_stats.h: the emulator's access statistics (hkrt_emu_stats_*). The
   lanes of a wave run one after another between synchronisation points, so
   each lane's accesses are noted as it makes them and paired into wave-level
   instructions when the wave's round ends: the n-th access of each lane at
   one call site (file, line, kind, width) is one instruction. */
#ifndef HK_EMU_STATS_H
#define HK_EMU_STATS_H

#include "hkrt.h"
#include "target.h"

typedef struct emu_stats emu_stats;

/* Statistics by t's rules (t->mem); NULL when out of memory. */
emu_stats *es_new(const tgt_info *t);
void es_free(emu_stats *s);
/* One access by lane 0..63 of the wave now running. */
void es_note(emu_stats *s, int lane, int kind, unsigned long long addr, unsigned bytes, const char *file,
             int line);
/* The wave's round ended (every lane waits or has finished): its accesses
   are paired and counted. lanes: how many lanes the wave has. */
void es_flush(emu_stats *s, int lanes);
/* The round ended in a fault: its accesses are dropped. */
void es_discard(emu_stats *s);
void es_reset(emu_stats *s);
void es_get(emu_stats *s, hkrt_emu_stats *out);

#endif
