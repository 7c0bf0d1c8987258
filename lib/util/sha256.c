/* lib/util/sha256.c -- SHA-256 (FIPS 180-4).  Written out here because none of the
 * libraries vlplan links (yaml, jansson, zstd, glpk) exports a hash.
 *
 * Every plan byte is hashed twice (written, then verified) and every manifest record
 * once, so the compression function matters: on x86-64 CPUs with the SHA extensions
 * (Intel since Goldmont/Ice Lake, AMD since Zen) it runs on sha256rnds2, several times
 * faster than C; elsewhere a fully unrolled portable version runs.  The choice is made
 * per context at init from CPUID; tests/util/test_sha256.c runs both on the FIPS vectors. */
#include "sha256.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VL_SHA_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define VL_SHA_X86 0
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

/* ---- portable ---- */

#define ROTR(x, n) ((x) >> (n) | (x) << (32 - (n)))
#define BSIG0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))
#define BSIG1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))
#define SSIG0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))
#define CH(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))

/* One round with the working variables renamed instead of moved: eight calls with the
 * names rotated make a full cycle, so the eight values stay in registers and nothing is
 * shuffled between rounds. */
#define ROUND(a, b, c, d, e, f, g, h, i)                                                      \
    do {                                                                                      \
        uint32_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + K[i] + w[i];                            \
        (d) += t1_;                                                                           \
        (h) = t1_ + BSIG0(a) + MAJ(a, b, c);                                                  \
    } while (0)

#define ROUND8(i)                                                                             \
    do {                                                                                      \
        ROUND(a, b, c, d, e, f, g, h, (i) + 0);                                               \
        ROUND(h, a, b, c, d, e, f, g, (i) + 1);                                               \
        ROUND(g, h, a, b, c, d, e, f, (i) + 2);                                               \
        ROUND(f, g, h, a, b, c, d, e, (i) + 3);                                               \
        ROUND(e, f, g, h, a, b, c, d, (i) + 4);                                               \
        ROUND(d, e, f, g, h, a, b, c, (i) + 5);                                               \
        ROUND(c, d, e, f, g, h, a, b, (i) + 6);                                               \
        ROUND(b, c, d, e, f, g, h, a, (i) + 7);                                               \
    } while (0)

static void compress_c(uint32_t st[8], const unsigned char *p, size_t nblk)
{
    for (; nblk > 0; nblk--, p += 64) {
        uint32_t w[64];
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
        uint32_t e = st[4], f = st[5], g = st[6], h = st[7];

        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
                   (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 64; i++)
            w[i] = SSIG1(w[i - 2]) + w[i - 7] + SSIG0(w[i - 15]) + w[i - 16];
        ROUND8(0);
        ROUND8(8);
        ROUND8(16);
        ROUND8(24);
        ROUND8(32);
        ROUND8(40);
        ROUND8(48);
        ROUND8(56);
        st[0] += a;
        st[1] += b;
        st[2] += c;
        st[3] += d;
        st[4] += e;
        st[5] += f;
        st[6] += g;
        st[7] += h;
    }
}

/* ---- x86 SHA extensions ---- */

#if VL_SHA_X86
/* CPUID: SHA is leaf 7 EBX bit 29; the byte shuffle and blend need SSSE3 (leaf 1 ECX
 * bit 9) and SSE4.1 (bit 19).  XMM state needs no OS check on x86-64. */
static bool cpu_has_sha(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19)))
        return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    return (b & (1u << 29)) != 0;
}

/* Four rounds: message words x (plus their constants) through two sha256rnds2, which
 * take and give the state as the register pair ABEF/CDGH. */
#define QROUND(k, x)                                                                          \
    do {                                                                                      \
        __m128i m_ = _mm_add_epi32(x, _mm_loadu_si128((const __m128i *)&K[4 * (k)]));         \
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m_);                                         \
        abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m_, 0x0E));                \
    } while (0)

/* The next four schedule words into x0, from the last sixteen x0..x3 (oldest first):
 * W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]. */
#define SCHED(x0, x1, x2, x3)                                                                 \
    ((x0) = _mm_sha256msg2_epu32(                                                             \
         _mm_add_epi32(_mm_sha256msg1_epu32(x0, x1), _mm_alignr_epi8(x3, x2, 4)), x3))

__attribute__((target("sha,ssse3,sse4.1"))) static void compress_ni(uint32_t st[8],
                                                                    const unsigned char *p,
                                                                    size_t nblk)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t, abef, cdgh;

    /* st is A..H; the instructions want ABEF and CDGH, A in the high lane. */
    t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xB1);    /* CDAB */
    cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1B); /* EFGH */
    abef = _mm_alignr_epi8(t, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, t, 0xF0);
    for (; nblk > 0; nblk--, p += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i x0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
        __m128i x1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
        __m128i x2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
        __m128i x3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);

        QROUND(0, x0);
        QROUND(1, x1);
        QROUND(2, x2);
        QROUND(3, x3);
        for (int k = 4; k < 16; k += 4) { /* x0..x3 roll: each SCHED replaces the oldest */
            SCHED(x0, x1, x2, x3);
            QROUND(k, x0);
            SCHED(x1, x2, x3, x0);
            QROUND(k + 1, x1);
            SCHED(x2, x3, x0, x1);
            QROUND(k + 2, x2);
            SCHED(x3, x0, x1, x2);
            QROUND(k + 3, x3);
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    t = _mm_shuffle_epi32(abef, 0x1B);    /* FEBA */
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1); /* DCHG */
    _mm_storeu_si128((__m128i *)&st[0], _mm_blend_epi16(t, cdgh, 0xF0));
    _mm_storeu_si128((__m128i *)&st[4], _mm_alignr_epi8(cdgh, t, 8));
}
#endif

static void compress(vl_sha256 *s, const unsigned char *p, size_t nblk)
{
#if VL_SHA_X86
    if (s->accel) {
        compress_ni(s->h, p, nblk);
        return;
    }
#endif
    compress_c(s->h, p, nblk);
}

bool vl_sha256_accel_available(void)
{
#if VL_SHA_X86
    return cpu_has_sha();
#else
    return false;
#endif
}

bool vl_sha256_select(vl_sha256 *s, bool accel)
{
    if (accel && !vl_sha256_accel_available())
        return false;
    s->accel = accel;
    return true;
}

void vl_sha256_init(vl_sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->nbytes = 0;
    s->nbuf = 0;
    s->accel = vl_sha256_accel_available();
}

void vl_sha256_update(vl_sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;

    s->nbytes += n;
    if (s->nbuf > 0) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        n -= take;
        if (s->nbuf < 64)
            return;
        compress(s, s->buf, 1);
        s->nbuf = 0;
    }
    if (n >= 64) { /* all whole blocks in one call: the state stays in registers */
        compress(s, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    if (n > 0) /* p may be NULL when n is 0 */
        memcpy(s->buf, p, n);
    s->nbuf = n;
}

void vl_sha256_final(vl_sha256 *s, unsigned char out[32])
{
    uint64_t bits = s->nbytes * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (s->nbuf < 56 ? 56 : 120) - s->nbuf;

    for (int i = 0; i < 8; i++)
        pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
    vl_sha256_update(s, pad, padlen + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void vl_sha256_hex(const unsigned char digest[32], char hex[65])
{
    static const char d[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = d[digest[i] >> 4];
        hex[2 * i + 1] = d[digest[i] & 15];
    }
    hex[64] = '\0';
}
