/* lib/util/rng.h -- deterministic PRNG (xoshiro256**, seeded through splitmix64): the same
 * seed and stream give the same sequence on every platform. */
#ifndef VLPLAN_RNG_H
#define VLPLAN_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct vl_rng {
    uint64_t s[4];
} vl_rng;

/** Seed from (seed, stream): distinct streams give independent sequences, so an epoch
 *  or a pass can have its own stream without consuming another's numbers. */
void vl_rng_seed(vl_rng *r, uint64_t seed, uint64_t stream);
/** The splitmix64 finaliser of x: a bijection on 64 bits, so mix(tag) + k, k an
 *  injective encoding of (batch, rank), gives every pair a stream of its own. */
uint64_t vl_rng_mix(uint64_t x);
uint64_t vl_rng_next(vl_rng *r);
/** Uniform in [0, n), unbiased (Lemire's method); n > 0. */
uint64_t vl_rng_below(vl_rng *r, uint64_t n);
/** Uniform double in [0, 1). */
double vl_rng_unit(vl_rng *r);
/** Fisher-Yates shuffle of a[0..n-1]: for i = n..2, swap a[i-1] and a[below(i)]. */
void vl_rng_shuffle_u32(vl_rng *r, uint32_t *a, size_t n);
/** The same shuffle (the same draws and swaps) of 64-bit elements. */
void vl_rng_shuffle_u64(vl_rng *r, uint64_t *a, size_t n);

#endif
