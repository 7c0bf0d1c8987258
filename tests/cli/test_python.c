/* tests/cli/test_python.c -- the Python package's pytest suite (python/tests) as one Criterion
 * test, so `make test` runs it and ends with Criterion's Synthesis line.  The interpreter is
 * $VLPLAN_PYTHON, else Debian's /usr/bin/python3 (where tools/deps.sh installs pytest and
 * torch), else python3 on the PATH; the plans are made by $VLPLAN_BIN. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static const char *python(void)
{
    const char *p = getenv("VLPLAN_PYTHON");

    if (p && *p)
        return p;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* The last `keep` bytes of the log, for the failure message. */
static const char *tail(const char *text, size_t keep)
{
    size_t n = strlen(text);
    return n > keep ? text + n - keep : text;
}

Test(python, pytest_suite_passes)
{
    char *dir = tu_tmpdir();
    char *log = tu_path(dir, "pytest.log");
    char cmd[4096];
    int rc;

    cr_assert_not_null(dir);
    /* no caches or bytecode in the tree; torch required (no skip) */
    snprintf(cmd, sizeof cmd,
             "PYTHONDONTWRITEBYTECODE=1 VLPLAN_REQUIRE_TORCH=1 %s -m pytest -q -p no:cacheprovider "
             "--basetemp='%s/t' python/tests >'%s' 2>&1",
             python(), dir, log);
    rc = system(cmd);
    char *out = tu_read_file(log, NULL);
    if (rc != 0)
        cr_log_error("%s\n%s", cmd, out ? tail(out, 6000) : "(no log)");
    cr_expect_eq(rc, 0, "pytest failed (exit status %d)", rc);
    free(out);
    tu_rmtree(dir);
    free(log);
    free(dir);
}
