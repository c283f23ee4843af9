/* Row-vector helpers shared by the attention kinds that stream over rows of D floats: a dot product and
 * y += a x, 16 lanes at a time (GCC vector extensions, AVX-512 with -march=native), the tail in scalars.
 * The dot product's summation order is fixed, so results do not depend on the caller's threading. */
#ifndef LC_ATTN_VEC_H
#define LC_ATTN_VEC_H

#include <string.h>

typedef float lc_v16 __attribute__((vector_size(64)));

static inline __attribute__((always_inline)) float lc_vdot(const float *restrict a, const float *restrict b, int D) {
    lc_v16 acc = {0};
    int d = 0;
    for (; d + 16 <= D; d += 16) {
        lc_v16 x, y;
        memcpy(&x, a + d, sizeof x);
        memcpy(&y, b + d, sizeof y);
        acc += x * y;
    }
    float s = 0;
    for (; d < D; d++) s += a[d] * b[d];
    float l[16];
    memcpy(l, &acc, sizeof l);
    for (int i = 0; i < 8; i++) l[i] += l[i + 8];
    for (int i = 0; i < 4; i++) l[i] += l[i + 4];
    return s + ((l[0] + l[1]) + (l[2] + l[3]));
}

/* y += a x */
static inline __attribute__((always_inline)) void lc_vaxpy(float *restrict y, float a, const float *restrict x, int D) {
    const lc_v16 av = {a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a};
    int d = 0;
    for (; d + 16 <= D; d += 16) {
        lc_v16 xv, yv;
        memcpy(&xv, x + d, sizeof xv);
        memcpy(&yv, y + d, sizeof yv);
        yv += av * xv;
        memcpy(y + d, &yv, sizeof yv);
    }
    for (; d < D; d++) y[d] += a * x[d];
}

#endif
