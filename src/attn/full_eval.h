/* The full kind's forward for a short block of queries against a long memory (Transformer-XL evaluation:
 * a segment of T <= 256 queries, S >= 4T keys), through dense products. */
#ifndef LC_ATTN_FULL_EVAL_H
#define LC_ATTN_FULL_EVAL_H

#include <stddef.h>

#include "attn/attn.h"

/* Workspace floats the path needs for nthreads threads (after 16 floats of alignment slack), or 0 when
 * the shape does not take it: causal, 2 < T <= 256, S = M + T >= 4T. */
size_t lc_attn_full_eval_floats(const lc_attn_shape *s, int nthreads);
/* Computes out and lse (as lc_attn_full_forward) when the shape takes the path (returns 1); returns 0 and
 * does nothing otherwise. work: at least lc_attn_full_eval_floats(s, lc_attn_threads(s)) + 16 floats. */
int lc_attn_full_eval(const lc_attn_shape *s, const lc_attn_tensors *t, float *work);

#endif
