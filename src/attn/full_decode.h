/* The full kind's forward for one or two queries (generation against the key/value cache). */
#ifndef LC_ATTN_FULL_DECODE_H
#define LC_ATTN_FULL_DECODE_H

#include "attn/attn.h"

#define LC_DECODE_MAX_T 2   /* at most this many queries per sequence take the decode path */
#define LC_DECODE_MAX_D 256 /* head dimensions up to this (stack buffers) */

/* Computes out and lse when the shape qualifies (returns 1); returns 0 and does nothing otherwise. */
int lc_attn_full_decode(const lc_attn_shape *s, const lc_attn_tensors *t);

#endif
