/* 16-float vectors: the one vector type of the hand-written inner loops (attention kinds), and the small
 * helpers they share: loads and stores, lane selects, horizontal reductions, a vector exp, a dot product
 * and y += a x over rows of D floats, and rounding of sizes to whole vectors.
 *
 * GCC vector extensions (vector_size(64)): GCC lowers them to whatever the target has (one zmm register
 * with AVX-512, two ymm with AVX2, ...). Plain auto-vectorised loops came out at about half the speed on
 * the attention tiles, because GCC prefers 256-bit vectors on AVX-512 CPUs and did not keep a 4 x 64
 * accumulator block in registers. Every reduction here sums in a fixed order, so results do not depend
 * on the caller's threading. */
#ifndef LC_KERNELS_VEC_H
#define LC_KERNELS_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

typedef float lc_v16 __attribute__((vector_size(64)));
typedef int32_t lc_vi16 __attribute__((vector_size(64)));

/* n rounded up to a multiple of m (m > 0); n rounded up to whole vectors, for workspace layouts. */
static inline int lc_round_up(int n, int m) { return (n + m - 1) / m * m; }
static inline size_t lc_round16(size_t n) { return (n + 15) / 16 * 16; }
static inline int lc_imin(int a, int b) { return a < b ? a : b; }
static inline int lc_imax(int a, int b) { return a > b ? a : b; }

static inline lc_v16 lc_vload(const float *p) {
    lc_v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void lc_vstore(float *p, lc_v16 v) { memcpy(p, &v, sizeof v); }
static inline lc_v16 lc_vsplat(float x) { return (lc_v16){0} + x; }
/* mask lanes (-1) take a, the others b */
static inline lc_v16 lc_vselect(lc_vi16 mask, lc_v16 a, lc_v16 b) {
    return (lc_v16)(((lc_vi16)a & mask) | ((lc_vi16)b & ~mask));
}
static inline lc_v16 lc_vmax(lc_v16 a, lc_v16 b) { return lc_vselect(a > b, a, b); }
/* Lanes p[idx[0]], ..., p[idx[15]]: one gather instruction with AVX-512, else 16 loads. */
static inline lc_v16 lc_vgather(const float *p, lc_vi16 idx) {
#ifdef __AVX512F__
    return (lc_v16)_mm512_i32gather_ps((__m512i)idx, p, 4);
#else
    lc_v16 v;
    for (int i = 0; i < 16; i++) v[i] = p[idx[i]];
    return v;
#endif
}
/* Largest lane / sum of the lanes, lane 0 to 15 in order. */
static inline float lc_hmax(lc_v16 v) {
    float m = v[0];
    for (int i = 1; i < 16; i++) m = v[i] > m ? v[i] : m;
    return m;
}
static inline float lc_hsum(lc_v16 v) {
    float s = 0;
    for (int i = 0; i < 16; i++) s += v[i];
    return s;
}

/* The exp polynomial (Cephes expf), shared by lc_expf (scalar, kernels/fastmath.h) and lc_vexp: after the
 * Cody-Waite reduction r = x - n ln2 (ln2 split into a high part exact in float and a low remainder),
 * e^r for |r| <= ln2 / 2. Both macros take float or lc_v16 operands. */
#define LC_EXP_REDUCE(x, n) (((x) - (n) * 0.693359375f) - (n) * -2.12194440e-4f)
#define LC_EXP_POLY(r)                                                                                            \
    ((((((1.9875691500e-4f * (r) + 1.3981999507e-3f) * (r) + 8.3334519073e-3f) * (r) + 4.1665795894e-2f) * (r) + \
       1.6666665459e-1f) * (r) + 5.0000001201e-1f) * (r) * (r) + (r) + 1.0f)

/* exp(x) for 16 lanes, about 1.5 ulp. x < -87 (including -inf, used for masked scores) gives exactly 0;
 * x > 88 saturates at exp(88). */
static inline lc_v16 lc_vexp(lc_v16 x) {
    const lc_vi16 underflow = x < -87.0f;
    x = lc_vselect(underflow, lc_vsplat(-87.0f), x);
    x = lc_vselect(x > 88.0f, lc_vsplat(88.0f), x);
    /* round(x / ln 2) with the 1.5 * 2^23 trick, valid in the default rounding mode */
    const lc_v16 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const lc_v16 r = LC_EXP_REDUCE(x, n);
    const lc_v16 y = LC_EXP_POLY(r);
    const lc_vi16 n_int = __builtin_convertvector(n, lc_vi16);
    const lc_v16 two_to_n = (lc_v16)((n_int + 127) << 23);
    return (lc_v16)((lc_vi16)(y * two_to_n) & ~underflow);
}

/* a . b over D floats: 16 lanes at a time, the lanes summed pairwise, the scalar tail added first. */
static inline __attribute__((always_inline)) float lc_vdot(const float *restrict a, const float *restrict b, int D) {
    lc_v16 acc = {0};
    int d = 0;
    for (; d + 16 <= D; d += 16) acc += lc_vload(a + d) * lc_vload(b + d);
    float s = 0;
    for (; d < D; d++) s += a[d] * b[d];
    float l[16];
    memcpy(l, &acc, sizeof l);
    for (int i = 0; i < 8; i++) l[i] += l[i + 8];
    for (int i = 0; i < 4; i++) l[i] += l[i + 4];
    return s + ((l[0] + l[1]) + (l[2] + l[3]));
}

/* y += a x over D floats */
static inline __attribute__((always_inline)) void lc_vaxpy(float *restrict y, float a, const float *restrict x, int D) {
    const lc_v16 av = {a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a}; /* keeps the sign of a = -0 */
    int d = 0;
    for (; d + 16 <= D; d += 16) lc_vstore(y + d, lc_vload(y + d) + av * lc_vload(x + d));
    for (; d < D; d++) y[d] += a * x[d];
}

#endif
