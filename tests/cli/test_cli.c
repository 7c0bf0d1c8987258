/* tests/cli/test_cli.c -- the vlplan binary on bad input: every case checks the exit code
 * (sysexits) and the one-line message (docs/reliability.md §2.5).  The suite runs the
 * ASan build of the binary, so a leak on an error path changes the exit status. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "testutil.h"

#define D "testdata/cli/"

typedef struct bad_case {
    const char *name;
    const char *args[12];
    const char *stdin_path;
    int status;
    const char *msg;   /* substring expected on stderr */
} bad_case;

static bad_case bad_cases[] = {
    {"unknown_command", {"plna"}, NULL, 64, "unknown command 'plna' (did you mean 'plan'?)"},
    {"unknown_option", {"plan", "--frobnicate", "-s", "pack", D "good.txt"}, NULL, 64,
     "unknown option '--frobnicate'"},
    {"bad_seed", {"plan", "-s", "pack", "--seed", "x", D "good.txt"}, NULL, 64,
     "invalid value 'x' for --seed"},
    {"missing_option_arg", {"plan", D "good.txt", "-s"}, NULL, 64, "needs an argument"},
    {"no_strategy", {"plan", D "good.txt"}, NULL, 64, "missing -s STRATEGY"},
    {"unknown_strategy", {"plan", "-s", "hpb", D "good.txt"}, NULL, 64,
     "unknown strategy 'hpb'"},
    {"missing_manifest", {"plan", "-s", "pack", D "nope.txt"}, NULL, 66,
     "cannot open '" D "nope.txt'"},
    {"manifest_is_dir", {"plan", "-s", "pack", "testdata"}, NULL, 66, "testdata"},
    {"empty_manifest", {"plan", "-s", "pack", D "empty.txt"}, NULL, 65, "no samples"},
    {"negative_length", {"plan", "-s", "pack", D "neg.txt"}, NULL, 65, D "neg.txt:2:"},
    {"zero_length", {"plan", "-s", "pack", D "zero.txt"}, NULL, 65, D "zero.txt:2:"},
    {"float_length", {"plan", "-s", "pack", D "float.txt"}, NULL, 65, D "float.txt:2:"},
    {"overflow_length", {"plan", "-s", "pack", D "overflow.txt"}, NULL, 65,
     D "overflow.txt:2:"},
    {"bad_json", {"plan", "-s", "pack", D "badjson.jsonl"}, NULL, 65, D "badjson.jsonl:2"},
    {"missing_len_key", {"plan", "-s", "pack", D "nokey.jsonl"}, NULL, 65, D "nokey.jsonl:2"},
    {"string_len", {"plan", "-s", "pack", D "strlen.jsonl"}, NULL, 65, D "strlen.jsonl:1"},
    {"null_len", {"plan", "-s", "pack", D "nulllen.jsonl"}, NULL, 65, D "nulllen.jsonl:1"},
    {"loss_over_len", {"plan", "-s", "pack", D "lossbig.jsonl"}, NULL, 65, D "lossbig.jsonl:1"},
    {"csv_columns", {"plan", "-s", "pack", D "cols.csv"}, NULL, 65, D "cols.csv:3"},
    {"csv_no_length", {"plan", "-s", "pack", D "nolen.csv"}, NULL, 65, D "nolen.csv:1"},
    {"blank_line", {"plan", "-s", "pack", D "blank.txt"}, NULL, 65, D "blank.txt:2"},
    {"duplicate_id", {"plan", "-s", "pack", D "dup.txt"}, NULL, 65, "duplicate sample id"},
    {"duplicate_across_shards", {"plan", "-s", "pack", D "shard1.txt", D "shard2.txt"}, NULL,
     65, D "shard2.txt:2"},
    {"truncated_zstd", {"plan", "-s", "pack", D "trunc.zst"}, NULL, 65, "truncated"},
    {"corrupt_zstd", {"plan", "-s", "pack", D "corrupt.zst"}, NULL, 65, D "corrupt.zst"},
    {"stdin_negative", {"plan", "-s", "pack", "-"}, D "neg.txt", 65, "<stdin>:2:"},
    {"missing_config", {"plan", "-s", "pack", "-c", D "nope.yaml", D "good.txt"}, NULL, 66,
     "nope.yaml"},
    {"yaml_syntax", {"plan", "-s", "pack", "-c", D "badsyntax.yaml", D "good.txt"}, NULL, 78,
     D "badsyntax.yaml:"},
    {"unknown_config_key", {"config", "-c", D "unknownkey.yaml"}, NULL, 78,
     D "unknownkey.yaml:2:3"},
    {"config_wrong_type", {"config", "-c", D "badtype.yaml"}, NULL, 78, D "badtype.yaml:2:"},
    {"config_out_of_range", {"config", "-c", D "range.yaml"}, NULL, 78, D "range.yaml:2:"},
    {"unknown_preset", {"config", "-c", D "badpreset.yaml"}, NULL, 78, "llama9-1t"},
    {"set_out_of_range", {"config", "--set", "training.pp=0"}, NULL, 78, "training.pp"},
    {"set_no_equals", {"config", "--set", "training.pp"}, NULL, 78, "training.pp"},
    {"set_unknown_key", {"config", "--set", "training.ppp=2"}, NULL, 78, "training.ppp"},
    {"degrees_do_not_divide", {"config", "--set", "training.tp=3"}, NULL, 78, "tp"},
    {"oversize_error", {"plan", "-s", "pack", "--set", "training.max_seq_len=4096",
                        D "oversize.txt"}, NULL, 65, "300000"},
    {"output_dir_missing", {"plan", "-s", "pack", "-o", "/nonexistent-dir/p.jsonl",
                            D "good.txt"}, NULL, 73, "/nonexistent-dir/p.jsonl"},
    {"output_is_input", {"plan", "-s", "pack", "-o", D "good.txt", D "good.txt"}, NULL, 64,
     "also an input"},
    {"disk_full", {"plan", "-s", "pack", "-o", "/dev/full", D "good.txt"}, NULL, 74,
     "/dev/full"},
    {"verify_no_args", {"verify"}, NULL, 64, "expected a plan"},
    {"metrics_not_a_plan", {"metrics", D "good.jsonl"}, NULL, 65, D "good.jsonl:1"},
    {"metrics_missing", {"metrics", D "nope.jsonl"}, NULL, 66, "nope.jsonl"},
    {"strategies_extra_arg", {"strategies", "x"}, NULL, 64, "unexpected argument"},
    {"bad_format", {"metrics", "--format", "xml", D "good.jsonl"}, NULL, 64, "--format"},
    /* an output may not replace an input, nor share a file or stdout with the plan */
    {"metrics_is_input", {"plan", "-s", "pack", "--metrics", D "good.txt", D "good.txt"},
     NULL, 64, "--metrics '" D "good.txt' is also an input"},
    {"metrics_is_config", {"plan", "-s", "pack", "-c", D "small.yaml", "--metrics",
                           D "small.yaml", D "good.txt"}, NULL, 64, "also an input"},
    {"metrics_is_plan", {"plan", "-s", "pack", "-o", "/nonexistent-dir/p.jsonl", "--metrics",
                         "/nonexistent-dir/p.jsonl", D "good.txt"}, NULL, 64,
     "--metrics '/nonexistent-dir/p.jsonl' is also the plan output"},
    {"metrics_and_plan_on_stdout", {"plan", "-s", "pack", "--metrics", "-", D "good.txt"},
     NULL, 64, "cannot both go to standard output"},
    {"stdin_twice", {"plan", "-s", "pack", "-", "-"}, D "good.txt", 64,
     "standard input ('-') named more than once"},
    {"svg_is_plan", {"simulate", "--svg", D "good.jsonl", D "good.jsonl"}, NULL, 64,
     "--svg '" D "good.jsonl' is also an input"},
    {"compare_svg_is_manifest", {"compare", "-s", "pack", "--svg", D "good.txt", D "good.txt"},
     NULL, 64, "--svg '" D "good.txt' is also an input"},
    {"svg_on_stdout", {"simulate", "--svg", "-", D "good.jsonl"}, NULL, 64,
     "--svg needs a file"},
    {"compare_svg_on_stdout", {"compare", "-s", "pack", "--svg", "-", D "good.txt"}, NULL, 64,
     "--svg needs a file"},
    /* --check conditions are checked before planning (nothing on stdout) */
    {"check_unknown_key", {"compare", "-s", "pack", "--check", "pack.abrr<1", D "good.txt"},
     NULL, 64, "unknown key 'abrr'"},
    {"check_unknown_strategy", {"compare", "-s", "pack", "--check", "hbp.abr<1", D "good.txt"},
     NULL, 64, "'hbp' is not among the rows compared"},
    {"check_nan", {"compare", "-s", "pack", "--check", "pack.abr<=nan", D "good.txt"}, NULL,
     64, "'nan' is neither a number nor LABEL.KEY"},
    {"check_bad_number", {"compare", "-s", "pack", "--check", "pack.abr<=0.01x", D "good.txt"},
     NULL, 64, "'0.01x' is not a finite number"},
    {"check_overflow", {"compare", "-s", "pack", "--check", "pack.abr<1e999", D "good.txt"},
     NULL, 64, "'1e999' is not a finite number"},
    /* a seed a plan header cannot carry exactly is refused, as training.seed refuses it */
    {"seed_past_2_53", {"plan", "-s", "pack", "--seed", "9007199254740992", D "good.txt"},
     NULL, 64, "expected an integer in 0..9007199254740991"},
};

#define NCASES (sizeof bad_cases / sizeof bad_cases[0])

/* Parameters are indices: Criterion may run a test in a re-executed process, where
 * pointers into this table (its strings) would not be valid. */
static int case_index[NCASES];

ParameterizedTestParameters(cli, bad_input)
{
    for (size_t i = 0; i < NCASES; i++)
        case_index[i] = (int)i;
    return cr_make_param_array(int, case_index, NCASES);
}

ParameterizedTest(int *idx, cli, bad_input)
{
    const bad_case *c = &bad_cases[*idx];
    tu_result r;

    cr_assert_eq(tu_run(&r, c->stdin_path, c->args), 0);
    cr_expect_eq(r.status, c->status, "%s: exit %d, expected %d; stderr: %s", c->name,
                 r.status, c->status, r.err);
    cr_expect(strstr(r.err, c->msg) != NULL, "%s: stderr lacks \"%s\": %s", c->name, c->msg,
              r.err);
    /* one line, prefixed, nothing on stdout */
    cr_expect(strncmp(r.err, "vlplan", 6) == 0, "%s: %s", c->name, r.err);
    cr_expect(strchr(r.err, '\n') == r.err + r.errlen - 1 || c->status == 64,
              "%s: more than one line: %s", c->name, r.err);
    cr_expect_eq(r.outlen, 0, "%s: stdout not empty: %s", c->name, r.out);
    tu_result_free(&r);
}

/* A late write error on standard output names the command, like every other error. */
Test(cli, stdout_write_error_names_the_command)
{
    const char *args[] = {"stats", D "good.txt", NULL};
    tu_result r;

    cr_assert_eq(tu_run_out(&r, NULL, "/dev/full", args), 0);
    cr_expect_eq(r.status, 74, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "vlplan stats: error: cannot write standard output") != NULL, "%s",
              r.err);
    tu_result_free(&r);
}

/* On a terminal the progress line is erased before an error, which starts its own
 * line instead of being appended to "reading manifest...". */
Test(cli, error_erases_the_progress_line)
{
    const char *args[] = {"plan", "-s", "pack", NULL};
    tu_result r;

    cr_assert_eq(tu_run_tty(&r, args), 0);
    cr_expect_eq(r.status, 64, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "\r\033[Kvlplan plan: error: no input") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "...vlplan") == NULL, "%s", r.err);
    tu_result_free(&r);
}
