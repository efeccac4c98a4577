/* skel.h: from a kernel instance to its .hip source through m4, the way
   GNU Bison expands its skeletons. */
#ifndef HK_SKEL_H
#define HK_SKEL_H

#include <stddef.h>

#include "op.h"
#include "util.h"

/* The m4 prologue: one definition per fact the skeleton may read. Values are
   escaped here, so no caller can forget it. */
typedef struct {
  hk_buf text;
} skel_prologue;

void skel_prologue_init(skel_prologue *p);
/* Defines hkm_<name> as the literal string value (any bytes allowed). */
void skel_define_str(skel_prologue *p, const char *name, const char *value);
void skel_prologue_free(skel_prologue *p);

/* Escapes a string for m4 (appends to out). */
void skel_escape(hk_buf *out, const char *s);
/* Decodes skel_escape's sequences in place; returns the new length. */
size_t skel_unescape(char *s, size_t n);

/* Builds the prologue of kernel k (every hkm_* definition the templates read). */
void skel_prologue_for(skel_prologue *p, const op_inst *k);

/* Runs m4 over the op's skeleton; on success *out holds the decoded source.
   Errors (m4's own, template errors, leftover macro names) are reported with
   diag_error at template file:line. Returns 0 or -1. */
int skel_expand(const char *tpldir, const op_inst *k, char **out, size_t *len);

/* The skeleton file name for k: <op>.<family>.hip.m4 when it exists, else
   the op's own. Caller frees. */
char *skel_skeleton_for(const char *tpldir, const op_inst *k);

/* A key for k's generated source: the prologue, hk.m4, the skeleton, the
   files it includes, the tile header and hkgen's version. Equal keys give equal sources, so a
   rebuild can take the source from the cache without running m4. */
void skel_gen_key(const char *tpldir, const op_inst *k, char key[65]);

/* Copies skeleton text s with @L<line>; markers where literal template text
   resumes (see syncline.c); for a file the skeleton includes (file: its name
   under templates/), @I<line>,<file>; markers. */
void skel_annotate(const char *s, size_t n, const char *file, hk_buf *out);
/* Turns m4's output s (markers, still escaped) into the source with #line
   directives: tpl names the skeleton ("templates/gemm.hip.m4"), gen the
   generated file for text that no template line holds. */
void skel_synclines(const char *s, size_t n, const char *tpl, const char *gen, hk_buf *out);

/* Where templates live: $HKGEN_TEMPLATES, else next to the executable
   (../templates or ../share/hkgen/templates), else the build-time path. */
const char *skel_template_dir(void);

#endif
