/* lib/model/calibrate.h -- fit the cost model to measured step times (`vlplan calibrate`).
 *
 * A timing row says: `mbs` micro-batches holding `tokens` tokens with Σ len² = `sum_len2`
 * (a slice [o, e) counts e² − o²) ran forward + backward in `seconds` on one pipeline
 * stage of `layers` layers, under (tp, pp, sp) with `ckpt_layers` of those layers
 * recomputed.  Two fits, both linear least squares on relative errors with a, b, c >= 0:
 *
 *  - per scheme (cost.schemes, what cost_pack.c reads back): for each (tp, pp, sp),
 *      seconds = s · [a·Q·(1 + fa·r) + (b·T + c·M)·(1 + fl·r)] · 1e-3
 *    with Q = sum_len2, T = tokens, M = mbs, r = ckpt_layers / layers, s = layers /
 *    (model.layers / pp), fa = 1/(1 + cost.bwd_attn), fl = 1/(1 + cost.bwd_linear):
 *    a, b, c are milliseconds of a stage of model.layers / pp layers per token², token and
 *    micro-batch, exactly as vl_cost_scheme_time uses them;
 *  - per layer (cost.fit, cost.c's fitted_time), pooled over all rows:
 *      seconds = (L·(1 + bwd_attn) + k)·a·P/g + (L·(1 + bwd_linear) + k)·(b·T/g + c·M)
 *    with L = layers, k = ckpt_layers, g = tp·sp and P = (Q + T)/2 causal pairs.
 *
 * The library reads and fits; it never prints. */
#ifndef VLPLAN_CALIBRATE_H
#define VLPLAN_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cost.h"
#include "err.h"

typedef struct vl_calib_row {
    int tp, pp, sp;
    int ckpt_layers;    /* per stage, <= layers */
    double layers;      /* layers of the measured stage; 0 = model.layers / pp */
    double mbs;         /* micro-batches the time covers (>= 1) */
    double tokens;      /* Σ len */
    double sum_len2;    /* Σ len² */
    double seconds;     /* measured forward + backward */
    bool head;          /* the LM head and loss of `tokens` tokens alone (a last
                           * stage's, under tp and sp), not decoder layers */
    vl_sp_kind sp_kind; /* of sp > 1 (training.sp_kind where sp is 1 or not given) */
    bool comm_analytic; /* seconds are one GPU's share of the compute, communication
                           * not in them (tools/profile_step.py --sp/--cp): the cost
                           * model's figure for it is its compute alone */
    uint32_t line;      /* line in its file, for messages */
    const char *file;   /* that file when rows of several are pooled; NULL: the set's */
} vl_calib_row;

typedef struct vl_calib_rows {
    vl_calib_row *rows;
    size_t n, cap;
    char name[256]; /* the file, for messages */
} vl_calib_rows;

/** Read a timing file (CSV with a header line, or JSON Lines; zstd allowed; "-" = stdin)
 *  and append its rows.  A bad row is VL_EDATA naming FILE:LINE, the column and the value.
 *  Rows with layers 0 take model.layers / pp of cfg. */
vl_status vl_calib_read(vl_calib_rows *set, const char *path, const vl_config *cfg,
                        vl_err *err);
/** The same from text in memory (name for messages). */
vl_status vl_calib_parse(vl_calib_rows *set, const char *text, size_t len, const char *name,
                         const vl_config *cfg, vl_err *err);
void vl_calib_rows_free(vl_calib_rows *set);

typedef enum { VL_CALIB_SCHEMES = 0, VL_CALIB_LAYER = 1 } vl_calib_kind;

/* How well a model predicts a set of rows. */
typedef struct vl_calib_err {
    size_t n;
    double mape;  /* mean |pred − seconds| / seconds */
    double worst; /* the largest of those */
    uint32_t worst_line;
    const char *worst_file; /* the worst row's file, NULL: the scored set's */
} vl_calib_err;

/* One fitted model: a scheme row (kind SCHEMES) or the per-layer a, b, c (kind LAYER). */
typedef struct vl_calib_fit {
    vl_calib_kind kind;
    vl_scheme scheme;   /* SCHEMES: tp, pp, sp and a, b, c in ms; LAYER: a, b, c in s */
    vl_sp_kind sp_kind; /* SCHEMES: the rows' kind and whether they leave communication */
    bool comm_analytic; /* out; with it the fit is of the scheme's compute alone */
    unsigned zeroed;    /* bit 0/1/2: a/b/c held at 0 (negative, or not identifiable) */
    vl_calib_err err;   /* on the rows it was fitted to */
} vl_calib_fit;

/** Fit rows: one vl_calib_fit per (tp, pp, sp, sp_kind, comm_analytic) in order of first
 *  appearance (SCHEMES), or
 *  one for all rows (LAYER).  *fits is malloc'd, *nfits of them.  VL_EDATA when a group
 *  has no rows that determine any coefficient; VL_ENOMEM. */
vl_status vl_calib_fit_rows(const vl_calib_rows *set, const vl_config *cfg, vl_calib_kind kind,
                            vl_calib_fit **fits, size_t *nfits, vl_err *err);

/** Seconds a fitted model predicts for row r (NAN when no fit covers its scheme). */
double vl_calib_predict(const vl_calib_fit *fits, size_t nfits, const vl_config *cfg,
                        const vl_calib_row *r);
/** Seconds the cost model of c (analytic, or cost.fit / cost.schemes when its config has
 *  them) predicts for r: its mbs micro-batches each of mbs equal sequences... see .c.
 *  Under r's sp_kind; without communication when r->comm_analytic. */
double vl_calib_predict_model(const vl_cost *c, const vl_calib_row *r);

/** MAPE and worst relative error of fits (or, with fits NULL, of the cost model c) on
 *  every row of set. */
vl_calib_err vl_calib_score(const vl_calib_fit *fits, size_t nfits, const vl_cost *c,
                            const vl_config *cfg, const vl_calib_rows *set);

/** The cost.compute_scale that makes the analytic model agree with the rows on average:
 *  the configured scale times the geometric mean of measured / predicted over the rows
 *  whose scheme the configuration times analytically and that include their
 *  communication (not comm-analytic ones: their schemes are checked against this
 *  correction, not part of it) (*used of them; NAN when none, out of
 *  cost.compute_scale's range, or
 *  with cost.fit).  Written beside cost.schemes so that the schemes the rows did not
 *  measure (sp > 1, other tp or pp) get the same correction as those they did. */
double vl_calib_compute_scale(const vl_cost *c, const vl_calib_rows *set, size_t *used);

/** What the consistent correction makes of the rows fit f covers: the analytic model of c
 *  (compute alone for comm-analytic rows) times scale / the configured
 *  cost.compute_scale, scored as vl_calib_score does. */
vl_calib_err vl_calib_score_corrected(const vl_cost *c, double scale, const vl_calib_fit *f,
                                      const vl_calib_rows *set);

/** The rows of set that fit f covers, into *out (malloc'd, its name set's).  VL_ENOMEM. */
vl_status vl_calib_rows_of(const vl_calib_rows *set, const vl_calib_fit *f, vl_calib_rows *out,
                           vl_err *err);

/** Move the rows that time the LM head (head = 1) from set into *head (appended), keeping
 *  the order of both; the fits take decoder-layer rows only.  VL_ENOMEM. */
vl_status vl_calib_take_head(vl_calib_rows *set, vl_calib_rows *head, vl_err *err);

/** The cost.head_scale that makes the cost model's LM head agree with head rows: the
 *  configured head scale (cost.head_scale, else cost.compute_scale) times the geometric
 *  mean of measured / vl_cost_head_time over them (*used of them; NAN when none or out of
 *  the key's range). */
double vl_calib_head_scale(const vl_cost *c, const vl_calib_rows *head, size_t *used);

/* One token budget left out: fitted on every other budget, scored on its own rows
 * (err.n = 0 when the other budgets determine no fit for its schemes). */
typedef struct vl_calib_lobo {
    double budget; /* the rows' tokens */
    vl_calib_err err;
} vl_calib_lobo;

/** Leave one token budget out (calibrate_lobo.c): for each distinct `tokens` of set, in
 *  ascending order, fit the other rows as vl_calib_fit_rows does and score the budget's.
 *  *out is malloc'd, *n entries (0 with fewer than two budgets).  VL_ENOMEM. */
vl_status vl_calib_leave_budget_out(const vl_calib_rows *set, const vl_config *cfg,
                                    vl_calib_kind kind, vl_calib_lobo **out, size_t *n,
                                    vl_err *err);
/** The pooled error of every scored budget: MAPE over all their rows, the worst row. */
vl_calib_err vl_calib_lobo_total(const vl_calib_lobo *lo, size_t n);

#endif
