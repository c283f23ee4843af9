/* Vectorizable elementwise math: exp and tanh written with plain arithmetic and bit operations so GCC
 * vectorizes loops over them (libm's expf/tanhf are scalar calls without -ffast-math).
 * lc_expf: range reduction x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial for e^r, 2^n by exponent
 * bits; relative error below 2 ulp over [-87, 88]; inputs below -87.3 (and -inf) give 0, above 88.37 (and +inf)
 * saturate at exp(88.37), NaN gives NaN; defined behaviour for every float.
 * Loops over these vectorize when built with -fno-trapping-math (the Makefile's default: it assumes no
 * floating-point traps are enabled, and changes no result). */
#ifndef LC_KERNELS_FASTMATH_H
#define LC_KERNELS_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float lc_expf(float x) {
    const float lo = -87.33654f, hi = 88.37626f;
    const float in = x;
    const int nan = x != x;
    float underflow = x < lo ? 0.0f : 1.0f;
    x = nan ? 0.0f : x; /* so the exponent below stays in range: NaN is returned at the end */
    x = x < lo ? lo : (x > hi ? hi : x);
    float n = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f;         /* ln2 split in a high part exact in float... */
    r = r - n * -2.12194440e-4f;            /* ...and the low remainder */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23; /* n in -126..127 after the clamp */
    float scale;
    memcpy(&scale, &e, sizeof scale);
    return nan ? in : p * scale * underflow;
}

/* 1 when every x[i] is finite (no NaN, no infinity); an integer reduction over the exponent bits, so the
 * loop vectorizes. */
static inline int lc_all_finite(const float *x, size_t n) {
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad == 0;
}

/* tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)); absolute error ~1e-7. */
static inline float lc_tanhf(float x) {
    float a = fabsf(x);
    float t = 1.0f - 2.0f / (lc_expf(2.0f * a) + 1.0f);
    return x < 0.0f ? -t : t;
}

#endif
