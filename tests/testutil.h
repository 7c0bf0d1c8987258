/* tests/testutil.h -- helpers shared by the Criterion tests: run the vlplan binary
 * ($VLPLAN_BIN, default build/vlplan; optional $VLPLAN_TEST_WRAPPER such as valgrind),
 * scratch directories, small files, test lengths, manifests and configs. */
#ifndef VLPLAN_TESTUTIL_H
#define VLPLAN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "manifest.h"

typedef struct tu_result {
    int status;           /* exit code, or 128 + signal */
    char *out;            /* stdout, NUL-terminated */
    size_t outlen;
    char *err;            /* stderr, NUL-terminated */
    size_t errlen;
} tu_result;

/** Run vlplan with args (NULL-terminated, without the program name), stdin from
 *  stdin_path (NULL = /dev/null).  Returns 0, or -1 if it could not be started. */
int tu_run(tu_result *r, const char *stdin_path, const char *const *args);
/** The same with standard output going to the file stdout_path (r->out stays empty). */
int tu_run_out(tu_result *r, const char *stdin_path, const char *stdout_path,
               const char *const *args);
/** The same with standard input and standard error on a terminal (a pty), whose
 *  output (with \r\n line ends) is r->err. */
int tu_run_tty(tu_result *r, const char *const *args);
void tu_result_free(tu_result *r);

/** A fresh directory under $TMPDIR (malloc'd path); tu_rmtree removes it. */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);

/** The running test's scratch directory: a suite declared
 *  TestSuite(name, .init = tu_scratch_init, .fini = tu_scratch_fini) gets a fresh one
 *  for every test (Criterion runs each test in a process of its own), removed after. */
extern char *tu_scratch;
void tu_scratch_init(void);
void tu_scratch_fini(void);

/** path = dir + "/" + name (malloc'd). */
char *tu_path(const char *dir, const char *name);
int tu_write_file(const char *path, const char *content);
int tu_write_bytes(const char *path, const void *data, size_t n);
/** Whole file (malloc'd, NUL-terminated) or NULL; *len may be NULL. */
char *tu_read_file(const char *path, size_t *len);
/** Number of directory entries (not . and ..) in dir, -1 on error. */
int tu_count_entries(const char *dir);

/** n long-tailed lengths in 1..cap (many short, a few long; malloc'd), the same for the
 *  same seed. */
uint32_t *tu_tail_lengths(size_t n, uint32_t cap, uint64_t seed);
/** A manifest of the n lengths len (ids 0..n-1); asserts that it could be made. */
vl_manifest *tu_manifest(const uint32_t *len, size_t n);
/** A manifest of n lengths drawn from `vlplan gen`'s distribution dist with seed. */
vl_manifest *tu_gen_manifest(const char *dist, size_t n, uint64_t seed);
/** cfg: the defaults, then the YAML file `file` (NULL: none), then each "key=value" of
 *  sets (NULL-terminated; NULL: none), finalized.  Each step asserts. */
void tu_config(vl_config *cfg, const char *file, const char *const *sets);

#endif
