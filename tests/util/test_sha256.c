/* tests/util/test_sha256.c -- FIPS 180-4 test vectors, on the portable compression function
 * and on the x86 SHA-extensions one when this CPU has it, and the two against each other
 * on every length and split that reaches the block and padding boundaries. */
#include <criterion/criterion.h>
#include <string.h>

#include "sha256.h"

/* Hash msg[0..n) fed in pieces of chunk bytes, with the accelerated path or not. */
static void hex_of_on(bool accel, const char *msg, size_t n, size_t chunk, char hex[65])
{
    vl_sha256 s;
    unsigned char d[32];
    vl_sha256_init(&s);
    cr_assert(vl_sha256_select(&s, accel));
    for (size_t i = 0; i < n; i += chunk)
        vl_sha256_update(&s, msg + i, n - i < chunk ? n - i : chunk);
    vl_sha256_final(&s, d);
    vl_sha256_hex(d, hex);
}

static void hex_of(const char *msg, size_t n, size_t chunk, char hex[65])
{
    vl_sha256 s;
    unsigned char d[32];
    vl_sha256_init(&s);
    for (size_t i = 0; i < n; i += chunk)
        vl_sha256_update(&s, msg + i, n - i < chunk ? n - i : chunk);
    vl_sha256_final(&s, d);
    vl_sha256_hex(d, hex);
}

/* The FIPS 180-4 / NIST CAVS examples, through one path. */
static void fips_vectors(bool accel)
{
    static char million[1000000];
    char hex[65];

    hex_of_on(accel, "", 0, 1, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of_on(accel, "abc", 3, 3, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of_on(accel, m, strlen(m), 7, hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
        "klmnopqrlmnopqrsmnopqrstnopqrstu";
    hex_of_on(accel, m, strlen(m), strlen(m), hex);
    cr_assert_str_eq(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    memset(million, 'a', sizeof million);
    hex_of_on(accel, million, sizeof million, sizeof million, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    hex_of_on(accel, million, sizeof million, 4097, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

Test(sha256, known_vectors)
{
    char hex[65];
    hex_of("", 0, 1, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, 3, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m, strlen(m), 7, hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

Test(sha256, fips_vectors_portable)
{
    fips_vectors(false);
}

Test(sha256, fips_vectors_accelerated)
{
    if (!vl_sha256_accel_available()) {
        cr_log_warn("no SHA extensions on this CPU: accelerated path not tested");
        return;
    }
    fips_vectors(true);
}

Test(sha256, select_refuses_a_missing_path)
{
    vl_sha256 s;
    vl_sha256_init(&s);
    cr_assert_eq(s.accel, vl_sha256_accel_available());
    cr_assert(vl_sha256_select(&s, false));
    cr_assert_eq(vl_sha256_select(&s, true), vl_sha256_accel_available());
}

/* Lengths 0..300 cross every block and padding boundary (55/56/63/64 and multiples);
 * each is fed whole, byte by byte and in pieces of 63 and 65. */
Test(sha256, accelerated_matches_portable)
{
    static char buf[300];
    static const size_t chunks[] = {300, 1, 63, 65};
    char a[65], b[65];
    uint32_t x = 12345;

    if (!vl_sha256_accel_available()) {
        cr_log_warn("no SHA extensions on this CPU: accelerated path not tested");
        return;
    }
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (char)(x >> 16);
    }
    for (size_t n = 0; n <= sizeof buf; n++)
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            hex_of_on(false, buf, n, chunks[c], a);
            hex_of_on(true, buf, n, chunks[c], b);
            cr_assert_str_eq(a, b, "length %zu, chunk %zu", n, chunks[c]);
        }
}

Test(sha256, chunking_does_not_matter)
{
    static char buf[1000];
    char a[65], b[65];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)('a' + i % 26);
    hex_of(buf, sizeof buf, sizeof buf, a);
    hex_of(buf, sizeof buf, 63, b);
    cr_assert_str_eq(a, b);
}
