/* tests/plan/test_planio_out.c -- atomic plan output: no directory, a directory, /dev/full,
 * /dev/null, no temporaries left, umask mode, and vl_outfile through symlinks, device
 * aliases and relative names.  Suite planio; each test names its init (planio_fixture.h). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "planio.h"
#include "planio_fixture.h"
#include "testutil.h"

/* ---- atomic output ---- */

Test(planio, missing_directory_is_cantcreat_and_creates_nothing, .init = setup,
     .fini = teardown)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    char *path = path_of("no/such/dir/plan.jsonl");
    vl_err err = {0};

    tiny_plan(&p, m);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_ECANTCREAT);
    cr_assert(strstr(err.msg, "cannot create '"), "%s", err.msg);
    cr_assert(strstr(err.msg, "No such file or directory"), "%s", err.msg);
    cr_assert_eq(tu_count_entries(scratch), 0);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, directory_target_is_cantcreat, .init = setup, .fini = teardown)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    vl_err err = {0};

    tiny_plan(&p, m);
    cr_assert_eq(vl_plan_write_file(&p, scratch, &err), VL_ECANTCREAT);
    cr_assert_eq(tu_count_entries(scratch), 0);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, dev_full_is_eio, .init = setup, .fini = teardown)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    vl_err err = {0};
    int fd = open("/dev/full", O_WRONLY);

    cr_assert_geq(fd, 0);
    tiny_plan(&p, m);
    cr_assert_eq(vl_plan_write_fd(&p, fd, false, &err), VL_EIO, "%s", err.msg);
    cr_assert_eq(vl_plan_write_fd(&p, fd, true, &err), VL_EIO, "%s", err.msg);
    close(fd);
    /* an existing non-regular target is written in place, and fails the same way */
    cr_assert_eq(vl_plan_write_file(&p, "/dev/full", &err), VL_EIO, "%s", err.msg);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, dev_null_is_written_in_place, .init = setup, .fini = teardown)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    vl_err err = {0};

    tiny_plan(&p, m);
    cr_assert_eq(vl_plan_write_file(&p, "/dev/null", &err), VL_OK, "%s", err.msg);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, success_leaves_only_the_file_with_umask_mode, .init = setup, .fini = teardown)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    char *path = path_of("out.jsonl.zst");
    struct stat sb;
    vl_err err = {0};
    mode_t old = umask(027);

    tiny_plan(&p, m);
    cr_assert_eq(tu_write_file(path, "old content\n"), 0);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    umask(old);
    cr_assert_eq(tu_count_entries(scratch), 1);
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0640);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, dash_is_refused_by_write_file, .init = setup, .fini = teardown)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    vl_err err = {0};

    tiny_plan(&p, m);
    cr_assert_eq(vl_plan_write_file(&p, "-", &err), VL_EUSAGE);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, outfile_abort_removes_the_temporary, .init = setup, .fini = teardown)
{
    char *path = path_of("x.json");
    vl_outfile *o;
    vl_err err = {0};

    cr_assert_eq(vl_outfile_open(&o, path, &err), VL_OK, "%s", err.msg);
    cr_assert_not_null(vl_outfile_tmp_path(o));
    cr_assert(strstr(vl_outfile_tmp_path(o), "/.x.json.tmp."));
    cr_assert_eq(write(vl_outfile_fd(o), "half", 4), 4);
    cr_assert_eq(tu_count_entries(scratch), 1);
    vl_outfile_abort(o);
    cr_assert_eq(tu_count_entries(scratch), 0);
    vl_outfile_abort(NULL);
    free(path);
}

Test(planio, outfile_through_a_symlink_replaces_the_target, .init = setup, .fini = teardown)
{
    char *target = path_of("real.txt"), *link = path_of("link.txt");
    vl_outfile *o;
    vl_err err = {0};
    struct stat sb;

    cr_assert_eq(tu_write_file(target, "old\n"), 0);
    cr_assert_eq(symlink("real.txt", link), 0);
    cr_assert_eq(vl_outfile_open(&o, link, &err), VL_OK, "%s", err.msg);
    cr_assert(strstr(vl_outfile_tmp_path(o), "/.real.txt.tmp."), "%s", vl_outfile_tmp_path(o));
    cr_assert_eq(write(vl_outfile_fd(o), "new\n", 4), 4);
    cr_assert_eq(vl_outfile_commit(o, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(lstat(link, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode));
    char *text = tu_read_file(target, NULL);
    cr_assert_str_eq(text, "new\n");
    cr_assert_eq(tu_count_entries(scratch), 2);
    free(text);
    free(target);
    free(link);
}

Test(planio, outfile_device_alias_is_written_through, .init = setup, .fini = teardown)
{
    char *target = path_of("shell.txt");
    vl_outfile *o;
    vl_err err = {0};
    char alias[64];
    int fd = open(target, O_WRONLY | O_CREAT | O_APPEND, 0644);

    /* what `vlplan -o /dev/fd/N >> shell.txt` sees: an alias of a file opened by the
     * shell; it is appended to, and /dev is never renamed over */
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "before\n", 7), 7);
    snprintf(alias, sizeof alias, "/dev/fd/%d", fd);
    cr_assert_eq(vl_outfile_open(&o, alias, &err), VL_OK, "%s", err.msg);
    cr_assert_null(vl_outfile_tmp_path(o));
    cr_assert_eq(write(vl_outfile_fd(o), "after\n", 6), 6);
    cr_assert_eq(vl_outfile_commit(o, &err), VL_OK, "%s", err.msg);
    close(fd);
    char *text = tu_read_file(target, NULL);
    cr_assert_str_eq(text, "before\nafter\n");
    free(text);
    free(target);
}

Test(planio, outfile_relative_name_in_cwd, .init = setup, .fini = teardown)
{
    vl_outfile *o;
    vl_err err = {0};
    char *old = getcwd(NULL, 0);

    cr_assert_eq(chdir(scratch), 0);
    cr_assert_eq(vl_outfile_open(&o, "rel.txt", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(write(vl_outfile_fd(o), "ok\n", 3), 3);
    cr_assert_eq(vl_outfile_commit(o, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(chdir(old), 0);
    free(old);
    char *path = path_of("rel.txt");
    char *text = tu_read_file(path, NULL);
    cr_assert_str_eq(text, "ok\n");
    cr_assert_eq(tu_count_entries(scratch), 1);
    free(text);
    free(path);
}
