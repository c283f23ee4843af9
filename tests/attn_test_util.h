/* Small helpers shared by the attention tests: copying a strided view into a dense double array (for the
 * double references) and the natural scale of a tensor (for tolerances relative to it). */
#ifndef LC_TESTS_ATTN_TEST_UTIL_H
#define LC_TESTS_ATTN_TEST_UTIL_H

#include <math.h>
#include <stddef.h>

#include "attn/attn.h"
#include "attn_workspace.h"


/* dst[b][t][h*D + d] = element (b, t, h, d) of v, for t < rows */
static inline void view_to_d(const lc_view *v, int rows, const lc_attn_shape *s, double *dst) {
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < rows; t++)
            for (int i = 0; i < s->H * s->D; i++) *dst++ = v->p[(long)b * v->sb + (long)t * v->st + i];
}

/* max |x|, at least 1: the natural scale of outputs and gradients for O(1) inputs */
static inline double scale_of(const double *x, size_t n) {
    double m = 1;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

#endif
