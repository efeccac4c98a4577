/* model.h: model presets. A `models:` entry describes a transformer (hidden
   size, query and KV heads, head_dim, FFN size) and the tensor-parallel
   degrees it is served at; hkgen derives the per-rank problems (attention
   heads per rank, the QKV, output and FFN projection GEMMs, RoPE) as ordinary
   kernel entries, so they are validated like hand-written ones. */
#ifndef HK_MODEL_H
#define HK_MODEL_H

#include <stddef.h>

#include "yamltree.h"

/* Appends the derived entries of every model to *out (a growing array of
   mapping nodes the caller frees with model_free). Reports problems with
   diag_error; returns the number of errors. */
int model_expand(const char *file, const yt_node *models, yt_node ***out, size_t *n);
void model_free(yt_node **v, size_t n);
/* Target features a derived entry needs (TGT_*; 0: none): the spec reader
   keeps only the entry's targets that have them. */
unsigned model_entry_needs(const yt_node *entry);

#endif
