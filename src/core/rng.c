/* xoshiro256** generator seeded through splitmix64; see rng.h. */
#include "core/rng.h"

#include <math.h>

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void lc_rng_seed(lc_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        r->s[i] = lc_hash64(x);
        x += 0x9e3779b97f4a7c15ULL;
    }
}

uint64_t lc_rng_next(lc_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float lc_rng_uniform(lc_rng *r) { return (float)(lc_rng_next(r) >> 40) * (1.0f / 16777216.0f); }

float lc_rng_normal(lc_rng *r) {
    double u1 = ((double)(lc_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
    double u2 = (double)(lc_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t lc_rng_below(lc_rng *r, uint32_t n) { return (uint32_t)(((lc_rng_next(r) >> 32) * (uint64_t)n) >> 32); }
