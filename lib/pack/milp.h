/* lib/pack/milp.h -- a thin mixed-integer LP over GLPK, the one place in the tree that
 * includes glpk.h.  Minimise c·x subject to row bounds on sparse rows, column bounds and
 * integrality; warm-started from a feasible point the caller supplies (offered to the
 * branch-and-bound as a heuristic solution) and stopped by a count of search nodes,
 * never by wall time, so the same problem always gives the same answer.  GLPK's
 * terminal output is switched off: lib/ never prints. */
#ifndef VLPLAN_MILP_H
#define VLPLAN_MILP_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

typedef struct vl_milp vl_milp;

/* Outcome of vl_milp_solve. */
typedef enum {
    VL_MILP_OPTIMAL = 0,  /* proven optimal */
    VL_MILP_FEASIBLE = 1, /* the node cap stopped the search: the best point found */
    VL_MILP_NONE = 2      /* no feasible point found (or the problem is infeasible) */
} vl_milp_outcome;

typedef struct vl_milp_result {
    vl_milp_outcome outcome;
    double objective;
    int nodes;      /* branch-and-bound nodes created */
    bool warm_used; /* the warm start was accepted as an incumbent */
} vl_milp_result;

/** New problem of ncols columns, every one continuous in [0, +inf) with cost 0.
 *  VL_ENOMEM, VL_EUSAGE (ncols < 1). */
vl_status vl_milp_new(vl_milp **out, int ncols, vl_err *err);
void vl_milp_free(vl_milp *m); /* NULL: no-op */

/** Column j (0-based): bounds lo..hi (-INFINITY / INFINITY for none), objective cost,
 *  integrality (an integer column with bounds 0..1 is binary). */
void vl_milp_col(vl_milp *m, int j, double lo, double hi, double cost, bool integer);

/** A row lo <= Σ val[i]·x[idx[i]] <= hi (either bound infinite for none), n > 0 distinct
 *  0-based columns.  VL_ENOMEM, VL_EUSAGE (bad index, empty row, lo > hi). */
vl_status vl_milp_row(vl_milp *m, size_t n, const int *idx, const double *val, double lo,
                      double hi, vl_err *err);

/** Solve.  warm: a feasible point of ncols values, or NULL; node_cap >= 1: the search
 *  stops once it has created that many nodes.  x: room for ncols values, filled with
 *  the best point when the outcome is not VL_MILP_NONE.  VL_EINTERNAL when GLPK fails
 *  for another reason (numerical trouble). */
vl_status vl_milp_solve(vl_milp *m, const double *warm, int node_cap, double *x,
                        vl_milp_result *res, vl_err *err);

#endif
