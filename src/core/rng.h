/* Seeded, portable random numbers. Two flavours:
 *  - lc_rng: a sequential xoshiro256** stream (weight init, data sampling);
 *  - lc_hash_*: counter-based values f(seed, index), identical for any thread count or traversal
 *    order (dropout masks, random plans), so a run is bit-identical given seed and thread count and a
 *    backward pass can replay a forward pass's randomness without storing it. */
#ifndef LC_CORE_RNG_H
#define LC_CORE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} lc_rng;

void lc_rng_seed(lc_rng *r, uint64_t seed);
uint64_t lc_rng_next(lc_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float lc_rng_uniform(lc_rng *r);
/* Standard normal (Box-Muller, computed in double). */
float lc_rng_normal(lc_rng *r);
/* Uniform integer in [0, n), n > 0. */
uint32_t lc_rng_below(lc_rng *r, uint32_t n);

/* splitmix64 finaliser: a strong 64-bit mixing function. */
static inline uint64_t lc_hash64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Combine a seed with a stream identifier (layer, step, purpose) into a new seed. */
static inline uint64_t lc_seed_mix(uint64_t seed, uint64_t stream) {
    return lc_hash64(seed ^ lc_hash64(stream + 0x632be59bd9b4e019ULL));
}

/* Counter-based uniform in [0, 1): value number `i` of the stream `seed`. */
static inline float lc_hash_uniform(uint64_t seed, uint64_t i) {
    return (float)(lc_hash64(seed ^ lc_hash64(i)) >> 40) * (1.0f / 16777216.0f);
}

#endif
