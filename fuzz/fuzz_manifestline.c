/* fuzz/fuzz_manifestline.c -- differential fuzzer of the JSONL manifest fast path
 * (lib/data/manifest_jsonl_fast.c) against jansson (issue "read as fast as we write"):
 * the input is read as a JSONL manifest both ways, under the default keys and under
 * chosen ones, and the readings must agree: status, message, samples, ids, sources and
 * digest (tests/manifest_diff.h).  Any difference aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "manifest_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    static const vl_manifest_opts opts[] = {
        {.allow_empty = true},
        {.id_col = "i", .len_col = "num_tokens", .allow_empty = true},
    };
    const char *d;
    FILE *f;

    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_manifestline.%d.jsonl", (int)getpid());
    if (!(f = fopen(path, "wb")))
        abort();
    fputs("{\"id\":-1,\"len\":1}\n", f); /* the format is JSONL whatever follows */
    fwrite(data, 1, size, f);
    fclose(f);
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if ((d = vl_test_read_both(path, &opts[i])) != NULL) {
            fprintf(stderr, "fuzz_manifestline: the two paths differ: %s\n", d);
            abort();
        }
    return 0;
}
