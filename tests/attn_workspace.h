/* The workspace of an attention kind in tests: a shape carries its thread count, so sizing the workspace
 * for n threads also sets the shape the calls then run with. */
#ifndef LC_TESTS_ATTN_WORKSPACE_H
#define LC_TESTS_ATTN_WORKSPACE_H

#include <stddef.h>

#include "attn/attn.h"

/* A kind's workspace for running shape *s with `threads` threads: sets s->threads (the shape the calls
 * then use) and returns fn(s, opts). */
static inline size_t lc_test_workspace(size_t (*fn)(const lc_attn_shape *, const void *), lc_attn_shape *s,
                                       const void *opts, int nthreads) {
    s->threads = nthreads;
    return fn(s, opts);
}
#define LC_TEST_WORKSPACE lc_test_workspace

#endif
