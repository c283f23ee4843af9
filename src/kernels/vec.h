/* 16-float vectors: the vector type of the hand-written inner loops (attention kinds), and the small
 * helpers they share: loads and stores, broadcasts, comparisons, lane selects, horizontal reductions, a
 * vector exp, a dot product and y += a x over rows of D floats, and rounding of sizes to whole vectors;
 * plus the target's own vector (lc_vn, below) for register-blocked loops.
 *
 * GCC vector extensions (vector_size(64)): GCC lowers them to whatever the target has (one zmm register
 * with AVX-512, two ymm with AVX2, ...), but not equally well for every operation (see lc_vn). Plain auto-vectorised loops came out at about half the speed on
 * the attention tiles, because GCC prefers 256-bit vectors on AVX-512 CPUs and did not keep a 4 x 64
 * accumulator block in registers. Every reduction here sums in a fixed order, so results do not depend
 * on the caller's threading. */
#ifndef LC_KERNELS_VEC_H
#define LC_KERNELS_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

typedef float lc_v16 __attribute__((vector_size(64)));
typedef int32_t lc_vi16 __attribute__((vector_size(64)));

/* The target's own vector lc_vn: LC_VW floats (16 with AVX-512, 8 with AVX, else 4), LC_VPARTS of them
 * per lc_v16. Without AVX-512, lc_v16 has no machine mode: GCC keeps it in memory, splits arithmetic into
 * ymm halves, but expands comparisons (and selects on them) one lane at a time with scalar compares and
 * builds a broadcast (scalar op lc_v16) one lane at a time through the stack: the AVX2 path's attention
 * ran ~15x slower. So the helpers below work on lc_vn parts (one part, the same code, with AVX-512), and
 * loops that keep many vectors live or broadcast scalars (full_tile.h's tile product) use lc_vn directly.
 * Callers compare and broadcast through these helpers, never with operators on lc_v16. */
#if defined(__AVX512F__)
#define LC_VW 16
#elif defined(__AVX__)
#define LC_VW 8
#else
#define LC_VW 4
#endif
#define LC_VPARTS (16 / LC_VW)
typedef float lc_vn __attribute__((vector_size(4 * LC_VW)));
typedef int32_t lc_vni __attribute__((vector_size(4 * LC_VW)));

/* x in every lane of one part, exactly (-0 stays -0): one broadcast instruction. GCC's __builtin_shuffle;
 * clang (make fuzz) lacks it and turns the lane-by-lane loop into the same broadcast. */
#ifdef __clang__
static inline lc_vn lc_vndup(float x) {
    lc_vn v;
    for (int i = 0; i < LC_VW; i++) v[i] = x;
    return v;
}
static inline lc_vni lc_vnidup(int32_t x) {
    lc_vni v;
    for (int i = 0; i < LC_VW; i++) v[i] = x;
    return v;
}
#else
static inline lc_vn lc_vndup(float x) { return __builtin_shuffle((lc_vn){x}, (lc_vni){0}); }
static inline lc_vni lc_vnidup(int32_t x) { return __builtin_shuffle((lc_vni){x}, (lc_vni){0}); }
#endif

static inline lc_vn lc_vnload(const float *p) {
    lc_vn v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void lc_vnstore(float *p, lc_vn v) { memcpy(p, &v, sizeof v); }

/* lc_v16 name(lc_v16 / lc_vi16 a[, b]) computed on each lc_vn part: r = expr of a, b (parts) */
#define LC_V16_PARTWISE2(Tr, TrN, Ta, TaN, name, expr)                                                              \
    static inline Tr name(Ta a_, Ta b_) {                                                                           \
        TaN a[LC_VPARTS], b[LC_VPARTS];                                                                             \
        TrN r[LC_VPARTS];                                                                                           \
        memcpy(a, &a_, sizeof a_), memcpy(b, &b_, sizeof b_);                                                       \
        for (int h = 0; h < LC_VPARTS; h++) r[h] = (TrN)(expr);                                                     \
        Tr r_;                                                                                                      \
        memcpy(&r_, r, sizeof r_);                                                                                  \
        return r_;                                                                                                  \
    }
/* comparisons: lanes -1 where true, else 0 */
LC_V16_PARTWISE2(lc_vi16, lc_vni, lc_v16, lc_vn, lc_vfeq, a[h] == b[h])
LC_V16_PARTWISE2(lc_vi16, lc_vni, lc_v16, lc_vn, lc_vfgt, a[h] > b[h])
LC_V16_PARTWISE2(lc_vi16, lc_vni, lc_vi16, lc_vni, lc_vige, a[h] >= b[h])
LC_V16_PARTWISE2(lc_vi16, lc_vni, lc_vi16, lc_vni, lc_vile, a[h] <= b[h])
LC_V16_PARTWISE2(lc_vi16, lc_vni, lc_vi16, lc_vni, lc_vine, a[h] != b[h])

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
/* one part repeated over the 16 lanes */
static inline lc_v16 lc_vrepeat(lc_vn part) {
    lc_vn parts[LC_VPARTS];
    for (int h = 0; h < LC_VPARTS; h++) parts[h] = part;
    lc_v16 v;
    memcpy(&v, parts, sizeof v);
    return v;
}
/* x + 0 in every lane (-0 becomes +0) */
static inline lc_v16 lc_vsplat(float x) { return lc_vrepeat((lc_vn){0} + x); }
/* x in every lane, exactly (what `lc_v16 op scalar` does); one broadcast instruction per part */
static inline lc_v16 lc_vbroadcast(float x) { return lc_vrepeat(lc_vndup(x)); }
static inline lc_vi16 lc_vibroadcast(int32_t x) {
    const lc_vni part = lc_vnidup(x);
    lc_vni parts[LC_VPARTS];
    for (int h = 0; h < LC_VPARTS; h++) parts[h] = part;
    lc_vi16 v;
    memcpy(&v, parts, sizeof v);
    return v;
}
/* Lanes i (0..15) with lo <= base + i < hi: -1, others 0. */
static inline lc_vi16 lc_vlanes_in(int base, int lo, int hi) {
    static const int32_t lanes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    lc_vni parts[LC_VPARTS];
    for (int h = 0; h < LC_VPARTS; h++) {
        lc_vni lane;
        memcpy(&lane, lanes + LC_VW * h, sizeof lane);
        lane += base;
        parts[h] = (lane >= lo) & (lane < hi);
    }
    lc_vi16 v;
    memcpy(&v, parts, sizeof v);
    return v;
}
/* mask lanes (-1) take a, the others b */
static inline lc_vn lc_vnselect(lc_vni mask, lc_vn a, lc_vn b) {
    return (lc_vn)(((lc_vni)a & mask) | ((lc_vni)b & ~mask));
}
static inline lc_v16 lc_vselect(lc_vi16 mask_, lc_v16 a_, lc_v16 b_) {
    lc_vni mask[LC_VPARTS];
    lc_vn a[LC_VPARTS], b[LC_VPARTS];
    memcpy(mask, &mask_, sizeof mask_), memcpy(a, &a_, sizeof a_), memcpy(b, &b_, sizeof b_);
    for (int h = 0; h < LC_VPARTS; h++) a[h] = lc_vnselect(mask[h], a[h], b[h]);
    lc_v16 r;
    memcpy(&r, a, sizeof r);
    return r;
}
LC_V16_PARTWISE2(lc_v16, lc_vn, lc_v16, lc_vn, lc_vmax, lc_vnselect(a[h] > b[h], a[h], b[h]))
/* Lanes p[idx[0]], ..., p[idx[15]]: one gather instruction with AVX-512, else 16 loads. */
static inline lc_v16 lc_vgather(const float *p, lc_vi16 idx) {
#ifdef __AVX512F__
    return (lc_v16)_mm512_i32gather_ps((__m512i)idx, p, 4);
#elif defined(__AVX2__)
    __m256i i[2];
    __m256 r[2];
    memcpy(i, &idx, sizeof idx);
    for (int h = 0; h < 2; h++) r[h] = _mm256_i32gather_ps(p, i[h], 4);
    lc_v16 v;
    memcpy(&v, r, sizeof v);
    return v;
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

/* exp(x) for every lane, about 1.5 ulp. x < -87 (including -inf, used for masked scores) gives exactly 0;
 * x > 88 saturates at exp(88). */
static inline lc_vn lc_vnexp(lc_vn x) {
    const lc_vni underflow = x < -87.0f;
    x = lc_vnselect(underflow, (lc_vn){0} - 87.0f, x);
    x = lc_vnselect(x > 88.0f, (lc_vn){0} + 88.0f, x);
    /* round(x / ln 2) with the 1.5 * 2^23 trick, valid in the default rounding mode */
    const lc_vn n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const lc_vn r = LC_EXP_REDUCE(x, n);
    const lc_vn y = LC_EXP_POLY(r);
    const lc_vni n_int = __builtin_convertvector(n, lc_vni);
    const lc_vn two_to_n = (lc_vn)((n_int + 127) << 23);
    return (lc_vn)((lc_vni)(y * two_to_n) & ~underflow);
}
static inline lc_v16 lc_vexp(lc_v16 x_) {
    lc_vn x[LC_VPARTS];
    memcpy(x, &x_, sizeof x_);
    for (int h = 0; h < LC_VPARTS; h++) x[h] = lc_vnexp(x[h]);
    lc_v16 r;
    memcpy(&r, x, sizeof r);
    return r;
}

/* a . b over D floats: 16 lanes at a time, the lanes summed pairwise, the scalar tail added first. */
static inline __attribute__((always_inline)) float lc_vdot(const float *restrict a, const float *restrict b, int D) {
    lc_vn acc[LC_VPARTS]; /* lanes 0..15 of one 16-float accumulator */
    for (int h = 0; h < LC_VPARTS; h++) acc[h] = (lc_vn){0};
    int d = 0;
    for (; d + 16 <= D; d += 16)
        for (int h = 0; h < LC_VPARTS; h++) acc[h] += lc_vnload(a + d + LC_VW * h) * lc_vnload(b + d + LC_VW * h);
    float s = 0;
    for (; d < D; d++) s += a[d] * b[d];
    float l[16];
    memcpy(l, acc, sizeof l);
    for (int i = 0; i < 8; i++) l[i] += l[i + 8];
    for (int i = 0; i < 4; i++) l[i] += l[i + 4];
    return s + ((l[0] + l[1]) + (l[2] + l[3]));
}

/* y += a x over D floats */
static inline __attribute__((always_inline)) void lc_vaxpy(float *restrict y, float a, const float *restrict x, int D) {
    const lc_vn av = lc_vndup(a); /* keeps the sign of a = -0 */
    int d = 0;
    for (; d + 16 <= D; d += 16)
        for (int h = 0; h < LC_VPARTS; h++)
            lc_vnstore(y + d + LC_VW * h, lc_vnload(y + d + LC_VW * h) + av * lc_vnload(x + d + LC_VW * h));
    for (; d < D; d++) y[d] += a * x[d];
}

#endif
