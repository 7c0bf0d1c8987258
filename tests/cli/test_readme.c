/* tests/cli/test_readme.c -- every shell example of the README runs as written
 * (tests/readme_shell.sh), with the binary under test as build/vlplan. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

Test(readme, shell_examples_run_as_written)
{
    const char *bin = getenv("VLPLAN_BIN");
    char cmd[1024];

    snprintf(cmd, sizeof cmd, "sh tests/readme_shell.sh README.md '%s' 2>&1",
             bin && *bin ? bin : "build/vlplan");
    cr_assert_eq(system(cmd), 0, "a README example failed (see above)");
}
