/* cmd/vlplan/cli.h -- what every subcommand shares: the option table that yields both
 * getopt_long's array and --help, exit codes (sysexits), one-line errors, number
 * parsing, and the progress line. */
#ifndef VLPLAN_CLI_H
#define VLPLAN_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "jsonw.h"
#include "outfile.h"
#include "vlplan.h"

/* sysexits(3) */
enum {
    EX_OK_ = 0,
    EX_USAGE_ = 64,
    EX_DATAERR_ = 65,
    EX_NOINPUT_ = 66,
    EX_SOFTWARE_ = 70,
    EX_OSERR_ = 71,
    EX_CANTCREAT_ = 73,
    EX_IOERR_ = 74,
    EX_CONFIG_ = 78
};

typedef struct cli_opt {
    const char *name; /* long name; NULL ends the table */
    int key;          /* short letter, or a value ≥ 256 for long-only options */
    const char *arg;  /* argument name for --help, NULL = flag */
    const char *help;
} cli_opt;

typedef struct cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} cli_cmd;

/* Options most commands accept, kept in one place so spellings never drift. */
enum {
    OPT_SET = 256,
    OPT_SEED,
    OPT_METRICS,
    OPT_FORMAT,
    OPT_ID_COL,
    OPT_LEN_COL,
    OPT_DUMP,
    OPT_ITER,
    OPT_SVG,
    OPT_CHECK,
    OPT_DIST,
    OPT_VERSION,
    OPT_ALLOW_EMPTY,
    OPT_ZSTD_WLOG,
    OPT_SCHED,
    OPT_ALLOW_OOM,
    OPT_ROW
};

/** Parse argv with table; fn(key, optarg, ud) handles each option and returns 0 or an
 *  exit code.  Prints --help (to stdout) for -h.  Returns 0 to continue, -1 when help
 *  was printed (exit 0), or an exit code.  *first_operand receives optind. */
int cli_parse(int argc, char **argv, const char *cmd, const char *usage, const cli_opt *table,
              int (*fn)(int key, const char *arg, void *ud), void *ud, int *first_operand);

/** Levenshtein distance between two short words (99 when either is 31 bytes or more). */
size_t cli_edit_distance(const char *a, const char *b);
/** The long option of table t nearest to the mistyped argument arg ("--sett=x"), or
 *  NULL when none is near enough to be a typo. */
const char *cli_nearest_option(const char *arg, const cli_opt *t);

/** Print "vlplan CMD: error: MSG" (CMD may be NULL) on stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/** Print err's message and return the exit code for its status. */
int cli_fail(const char *cmd, const vl_err *err);
int cli_exit_for(vl_status st);

/** Parse a decimal integer in [min, max]; 0 on success, else prints an error naming
 *  the option and returns EX_USAGE_. */
int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t min, uint64_t max,
                  uint64_t *out);

/* -j N, the threads that parse a plan file (metrics, simulate, verify). */
#define CLI_JOBS_OPTION                                                                       \
    {                                                                                         \
        "jobs", 'j', "N", "threads parsing the plan (default: the cores)"                     \
    }
#define CLI_JOBS_MAX 64
/** The default -j: the online cores, 1..CLI_JOBS_MAX. */
int cli_default_jobs(void);
/** Parse -j's argument into *jobs (1..CLI_JOBS_MAX).  0 or EX_USAGE_ (printed). */
int cli_parse_jobs(const char *cmd, const char *arg, int *jobs);

/* Config options shared by plan, compare, config, simulate, metrics. */
typedef struct cli_config_args {
    const char *paths[16]; /* -c, applied in order */
    int npaths;
    const char *sets[64]; /* --set, in order */
    int nsets;
    bool seed_set;
    uint64_t seed;
} cli_config_args;

/** Record a --set; EX_USAGE_ when there are too many. */
int cli_config_add_set(const char *cmd, cli_config_args *a, const char *kv);
/** Record a -c file; EX_USAGE_ when there are too many. */
int cli_config_add_file(const char *cmd, cli_config_args *a, const char *path);
/** Handle -c, --set and --seed for a command that has them: 0 or an exit code when it
 *  took the key, 1 when the key is not one of them. */
int cli_config_option(const char *cmd, cli_config_args *a, int key, const char *arg);
/** Default preset, then -c file, then --set overrides, then --seed; finalize. */
int cli_config_load(const char *cmd, const cli_config_args *a, vl_config *cfg);
/** What cli_config_load_over does, without printing: VL_OK, or the failure in err (cfg
 *  freed).  For a caller that judges a refused configuration itself (advise). */
vl_status cli_config_build(const cli_config_args *a, const char *base, const char *base_name,
                           vl_config *cfg, vl_err *err);
/** The same, with base (YAML or JSON text, e.g. a plan header's config) in place of
 *  the -c file when none was given; base may be NULL. */
int cli_config_load_over(const char *cmd, const cli_config_args *a, const char *base,
                         const char *base_name, vl_config *cfg);

/* Manifest options. */
typedef struct cli_manifest_args {
    const char *id_col, *len_col;
    bool allow_empty;
    int zstd_window_log_max;
    bool lengths_only; /* the command needs no ids (stats) */
} cli_manifest_args;

/* The manifest options' table rows and their handler, shared by plan, verify, stats
 * and compare: returns 0 when it took the key, 1 when the key is not one of them. */
#define CLI_MANIFEST_OPTIONS                                                                  \
    {"id-col", OPT_ID_COL, "NAME", "CSV/TSV/JSONL id column (default id)"},                   \
        {"len-col", OPT_LEN_COL, "NAME",                                                      \
         "length column (default length, len or num_tokens)"},                                \
    {                                                                                         \
        "zstd-window-log-max", OPT_ZSTD_WLOG, "N",                                            \
            "accept zstd windows up to 2^N bytes (10..31; default 27)"                        \
    }
int cli_manifest_option(const char *cmd, cli_manifest_args *a, int key, const char *arg);

/** Read manifests operands (none → "-" when stdin is not a terminal). */
int cli_manifest_load(const char *cmd, const cli_manifest_args *a, char **paths, int npaths,
                      vl_manifest **out);

/** Quiet/verbose state of one invocation. */
typedef struct cli_log {
    int quiet, verbose;
    bool tty; /* stderr is a terminal: progress lines allowed */
} cli_log;
void cli_log_init(cli_log *l);
/** One progress line on stderr, redrawn in place; only when stderr is a terminal and
 *  not quiet.  done = true ends the line. */
void cli_progress(const cli_log *l, bool done, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/** A progress meter for long work: after the first 2 s it redraws, at most 4 times a
 *  second, "WHAT: iteration DONE/TOTAL (P%), about T s left" ("WHAT: iteration DONE,
 *  S s" with the seconds spent when the total is unknown, total < 0). */
typedef struct cli_meter {
    const cli_log *log;
    char what[96];
    int64_t total;
    double t0, drawn, delay;
} cli_meter;
void cli_meter_start(cli_meter *m, const cli_log *l, int64_t total, const char *what);
void cli_meter_step(cli_meter *m, uint64_t done);
/** v with thousands separators ("1,234,567"), as tables print counts.  Returns buf. */
const char *cli_count(uint64_t v, char *buf, size_t cap);
/** v for programs (CSV): up to ten decimals, trailing zeros dropped, no separators,
 *  never e-notation.  Returns buf. */
const char *cli_plain(double v, char *buf, size_t cap);
/** v with prec decimals and thousands separators ("5,758.09"); never e-notation. */
const char *cli_fixed(double v, int prec, char *buf, size_t cap);

/** Seconds on the monotonic clock. */
double cli_now_s(void);

/** Erase a progress line still on the terminal, before anything else goes to stderr
 *  (cli_error does it itself). */
void cli_progress_clear(void);

/** path is standard output: NULL or "-". */
bool cli_is_stdout(const char *path);
/** a and b name one file: the same string, or both exist and are the same file ("-"
 *  and NULL never match). */
bool cli_same_file(const char *a, const char *b);
/** Refuse an output (option opt, e.g. "--svg") that names one of ins[0..nin-1]: 0, or
 *  EX_USAGE_ after saying so.  Standard output always passes. */
int cli_check_not_input(const char *cmd, const char *opt, const char *out,
                        const char *const *ins, int nin);

/** Route SIGINT, SIGTERM, SIGHUP and SIGPIPE through a handler that removes the
 *  temporaries of the outputs being written (cli_output_open) before dying of the
 *  signal as usual; a signal ignored on entry stays ignored.  SIGXFSZ is ignored, so
 *  the file-size limit fails a write (EFBIG, exit 74) instead of killing us. */
void cli_signals_init(void);

/** Open an atomic output file (outfile.h) and register its temporary for removal on a
 *  signal.  Returns 0 or an exit code (message printed). */
int cli_output_open(const char *cmd, const char *path, struct vl_outfile **o);
/** Commit o when rc is 0, else discard it; unregister the temporary.  Returns rc, or
 *  the exit code of a failed commit. */
int cli_output_close(const char *cmd, struct vl_outfile *o, int rc);

/** Commit o[0..n-1] together or none of them when rc is 0 (vl_outfile_commit_all, with
 *  the fatal signals blocked meanwhile), else discard them all (NULL entries skipped);
 *  unregister the temporaries.  Returns rc, or the exit code of a failed commit. */
int cli_output_close_all(const char *cmd, struct vl_outfile **o, int n, int rc);
/** Write text into o (opened for path).  Returns 0 or EX_IOERR_ (message printed). */
int cli_write_into(const char *cmd, struct vl_outfile *o, const char *path, const char *text);

/** Write text to path atomically ("-" or NULL = stdout).  Returns an exit code. */
int cli_write_text(const char *cmd, const char *path, const char *text);

/** Peak resident memory of this process so far, MiB. */
double cli_peak_rss_mib(void);

/** Print JSON object o as one line on f and free it; bad says building it already
 *  ran out of memory.  Returns 0 or EX_OSERR_. */
int cli_print_json(FILE *f, const char *cmd, vl_jw *o, int bad);

/** Flush stdout and turn a late write error into EX_IOERR_ (reported as command cmd,
 *  NULL for vlplan itself). */
int cli_finish(const char *cmd, int rc);

/* Subcommands */
int cmd_plan(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_strategies(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_advise(int argc, char **argv);

#endif
