/* cmd/vlplan/figures.h -- the figures a plan is judged by, in one table: key (the JSON
 * key and the --check name), unit, how a table prints it, which direction is better,
 * and what it needs (the plan alone, the simulator, the planner's timing).  metrics,
 * simulate, plan --metrics and compare all print from it. */
#ifndef VLPLAN_FIGURES_H
#define VLPLAN_FIGURES_H

#include <stdbool.h>
#include <stddef.h>

#include "evaluate.h"

typedef enum { FIG_LOWER, FIG_HIGHER, FIG_NEITHER } fig_better;
typedef enum { FIG_PLAN, FIG_SIM, FIG_TIMING } fig_needs;

typedef struct figure {
    const char *key;
    const char *unit; /* as printed ("" for a ratio) */
    int prec;         /* decimals in tables */
    double scale;     /* printed value = value x scale (MFU: 100, shown in %) */
    fig_better better;
    fig_needs needs;
    const char *what;
    /* the headline value; false when r lacks it (not simulated, speedup n/a) */
    bool (*value)(const eval_result *r, double *v);
    /* the per-iteration distribution, NULL for a plan-wide figure */
    const vl_dist *(*dist)(const eval_result *r);
} figure;

/** The compared figures in presentation order, NULL-key terminated. */
extern const figure fig_table[];

/** The figure called key, or NULL. */
const figure *fig_find(const char *key);

/** v as a table prints it for figure g: scaled, g->prec decimals, thousands separated
 *  ("12,345.6"); "-0" never.  Returns buf. */
const char *fig_format(const figure *g, double v, char *buf, size_t cap);

/** "lower", "higher" or "". */
const char *fig_better_word(fig_better b);

#endif
