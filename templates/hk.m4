m4_divert(-1)m4_dnl                                    -*- Autoconf -*-
# hk.m4 - the m4 library every hkgen skeleton is expanded with.
#
# Loaded first:  m4 -P -I templates -I templates/include hk.m4 - <op>.hip.m4
# (the C side's prologue of hk_* definitions comes on stdin).  Everything here
# is read in the discarded diversion -1, so none of it reaches the output; a
# skeleton switches to diversion 0 with hkm_output_begin.
#
# Synclines: @G; (what follows is generated text) and @H<header>; (the
# tile header's line 1) are markers that the C side turns into #line
# directives, with the @L<line>; markers it puts into the skeleton's copy.
#
# Quoting: [ and ] are the quotes.  m4 comments (#) stay on while
# definitions are read, so a macro named in a comment header is never
# expanded; hkm_output_begin turns them off, so #pragma/#define lines of the
# output are plain text.  Skeleton bodies are one quoted string; macros are
# spliced in as ]hk_macro[.

m4_changequote([, ])


## ------------------ ##
## Errors, checking.  ##
## ------------------ ##

# hkm_fatal(MESSAGE)
# -----------------
# Report MESSAGE on stderr with the skeleton's file:line and stop m4 with
# exit status 1 (the C side then discards the output).
m4_define([hkm_fatal],
[m4_errprint(m4___file__[:]m4___line__[: error: $1
])m4_m4exit(1)])


# hkm_require(MACRO...)
# --------------------
# Fail unless every MACRO is defined (by the prologue).
m4_define([hkm_require],
[m4_ifelse([$#], [0], [],
       [$1], [], [],
       [m4_ifdef([$1], [],
                 [hkm_fatal([prologue does not define $1])])[]hkm_require(m4_shift($@))])])


# hkm_param(NAME)
# --------------
# The text of parameter NAME (hkm_p_NAME): its baked value, or `any'.
m4_define([hkm_param],
[m4_ifdef([hkm_p_$1], [m4_indir([hkm_p_$1])],
          [hkm_fatal([parameter `$1' is not defined (hkm_p_$1)])])])


# hkm_tune(NAME)
# -------------
# The value the op's descriptor decided for tunable NAME (hkm_t_NAME, an
# integer; gen/op.h op_plan): templates never re-derive what the plan holds.
m4_define([hkm_tune],
[m4_ifdef([hkm_t_$1], [m4_indir([hkm_t_$1])],
          [hkm_fatal([tunable `$1' is not in the kernel's plan (hkm_t_$1)])])])


# hkm_if_baked(NAME, IF-BAKED, [IF-ANY])
# -------------------------------------
# IF-BAKED when parameter NAME is a compile-time constant, IF-ANY when it is
# a run-time kernel argument (hkm_p_NAME is `any').
m4_define([hkm_if_baked],
[m4_ifelse(hkm_param([$1]), [any], [$3], [$2])])


# hkm_if_param(NAME, VALUE, IF-EQUAL, [IF-NOT-EQUAL])
# --------------------------------------------------
# IF-EQUAL when parameter NAME is baked to exactly VALUE.
m4_define([hkm_if_param],
[m4_ifelse(hkm_param([$1]), [$2], [$3], [$4])])


# hkm_if_true(NAME, IF-TRUE, [IF-FALSE])
# -------------------------------------
# For a baked boolean parameter NAME (`true'/`false', or `1'/`0').
m4_define([hkm_if_true],
[m4_ifelse(hkm_param([$1]), [true], [$2],
       hkm_param([$1]), [1], [$2],
       hkm_param([$1]), [false], [$3],
       hkm_param([$1]), [0], [$3],
       [hkm_fatal([parameter `$1' must be a baked boolean, got `]hkm_param([$1])['])])])


# hkm_check_one_of(NAME, VALUE...)
# -------------------------------
# Fail unless parameter NAME is baked to one of the VALUEs.
m4_define([hkm_check_one_of],
[_hk_check_one_of([$1], [m4_substr(m4_translit([$*], [,], [ ]), m4_len([$1 ]))],
                  m4_shift($@))])

# _hk_check_one_of(NAME, ALLOWED-TEXT, VALUE...)
# ------------------------------------------------
# ALLOWED-TEXT is an unexpanded m4 expression printing the VALUEs for the
# message; it is expanded only when the check fails.
m4_define([_hk_check_one_of],
[m4_ifelse(hkm_param([$1]), [$3], [],
           [$#], [3],
           [hkm_fatal([parameter `$1' is `]hkm_param([$1])[', expected one of: ]$2)],
           [_hk_check_one_of([$1], [$2], m4_shift(m4_shift(m4_shift($@))))])])


# hkm_check_even_if_baked(NAME)
# ----------------------------
# Fail if parameter NAME is baked to an odd integer.
m4_define([hkm_check_even_if_baked],
[hkm_if_baked([$1],
             [m4_ifelse(m4_eval(hkm_param([$1]) % 2), [0], [],
                    [hkm_fatal([parameter `$1' must be even, got ]hkm_param([$1]))])])])


## --------- ##
## Output.   ##
## --------- ##

# hkm_output_begin()
# -----------------
# Check the prologue, turn m4 comments off and start writing the generated
# source (diversion 0).
m4_define([hkm_output_begin],
[hkm_require([hkm_kernel_name], [hkm_op], [hkm_target], [hkm_arch],
            [hkm_tile_header], [hkm_banner], [hkm_kernarg_struct],
            [hkm_bindings], [hkm_block_size])m4_changecom()m4_divert(0)])


# hkm_output_end()
# ---------------
# Stop writing: anything after it is discarded.
m4_define([hkm_output_end],
[m4_divert(-1)m4_changecom([#])])


# hkm_file_head()
# --------------
# The common top of every generated source: the banner, the family's tile
# header pasted verbatim (m4_undivert never rescans it; on the host, with
# HK_EMULATE, runtime/include/hk_emu.h instead), then the kernel argument struct.
m4_define([hkm_file_head],
[@G;hkm_banner
// hkgen: hkm_op kernel for hkm_target (hkm_arch); block of hkm_block_size threads.

#if defined(HK_EMULATE)
// On the host, for `hkgen test`: the emulator's version of the same primitives.
#include "hk_emu.h"
#else
@H[]hkm_tile_header;m4_undivert(hkm_tile_header)@G;#endif
hkm_kernarg_struct
])


# hkm_kernel_begin()
# -----------------
# Opens the kernel: `HK_KERNEL(...) void NAME(QUAL struct hk_args hk_a) {', QUAL
# being hkm_kernarg_qual (`const', or HK_KERNARG_QUAL when the arguments hold tensor
# maps: the sm90 header makes the struct a __grid_constant__ so that their
# addresses are parameter-space addresses), and
# the parameter bindings (the C side's hkm_bindings lines, each indented by 4
# spaces and ending in a newline).
m4_define([hkm_kernel_begin],
[@G;#if defined(HK_EMULATE)
HK_EMU_ENTRY(hkm_kernel_name)
#endif
HK_KERNEL(hkm_block_size) void hkm_kernel_name[](hkm_kernarg_qual struct hk_args hk_a)
{
    // parameters: baked constants or kernel arguments
hkm_bindings])

m4_divert(-1)
