/* lib/util/sha256.h -- SHA-256 (FIPS 180-4), for manifest fingerprints and plan checksums. */
#ifndef VLPLAN_SHA256_H
#define VLPLAN_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vl_sha256 {
    uint32_t h[8];
    uint64_t nbytes;
    unsigned char buf[64];
    size_t nbuf;
    bool accel; /* compress with the x86 SHA extensions (set by init) */
} vl_sha256;

/** Start a hash.  Uses the x86 SHA extensions when this build and CPU have them (asked
 *  of CPUID here, once per hash, so no global state), else portable C: same digests. */
void vl_sha256_init(vl_sha256 *s);
void vl_sha256_update(vl_sha256 *s, const void *data, size_t n);
void vl_sha256_final(vl_sha256 *s, unsigned char out[32]);
/** Lower-case hex of a 32-byte digest into hex[65] (NUL-terminated). */
void vl_sha256_hex(const unsigned char digest[32], char hex[65]);

/** Whether the accelerated path is available on this build and CPU. */
bool vl_sha256_accel_available(void);
/** For tests, which run both paths on the same vectors: select the accelerated (accel)
 *  or the portable path on a context before its first update.  Returns false, leaving
 *  the context as it was, when accel is asked for and not available. */
bool vl_sha256_select(vl_sha256 *s, bool accel);

#endif
