/* lib/pack/milp.c -- the GLPK wrapper (milp.h).  The LP relaxation is solved first by the
 * simplex method (the MIP presolver stays off: with it GLPK would hand the callback a
 * transformed problem, and the warm start is stated on the original columns); the
 * branch-and-bound callback offers the warm start once as a heuristic solution and
 * terminates the search when the tree has created node_cap nodes. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>

#include "milp.h"

struct vl_milp {
    glp_prob *P;
    int ncols;
};

typedef struct search_ctx {
    const double *warm1; /* 1-based warm start, or NULL */
    bool offered, used;
    int cap, nodes;
} search_ctx;

vl_status vl_milp_new(vl_milp **out, int ncols, vl_err *err)
{
    vl_milp *m;

    *out = NULL;
    if (ncols < 1)
        return vl_seterr(err, VL_EUSAGE, "milp: %d columns", ncols);
    if ((m = malloc(sizeof *m)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "milp: out of memory");
    m->P = glp_create_prob();
    m->ncols = ncols;
    glp_set_obj_dir(m->P, GLP_MIN);
    glp_add_cols(m->P, ncols);
    for (int j = 1; j <= ncols; j++)
        glp_set_col_bnds(m->P, j, GLP_LO, 0.0, 0.0);
    *out = m;
    return VL_OK;
}

void vl_milp_free(vl_milp *m)
{
    if (m == NULL)
        return;
    glp_delete_prob(m->P);
    free(m);
}

/* GLPK's bound type for lo..hi. */
static int bound_type(double lo, double hi)
{
    if (isinf(lo) && isinf(hi))
        return GLP_FR;
    if (isinf(hi))
        return GLP_LO;
    if (isinf(lo))
        return GLP_UP;
    return lo == hi ? GLP_FX : GLP_DB;
}

void vl_milp_col(vl_milp *m, int j, double lo, double hi, double cost, bool integer)
{
    if (j < 0 || j >= m->ncols)
        return;
    glp_set_col_bnds(m->P, j + 1, bound_type(lo, hi), isinf(lo) ? 0 : lo, isinf(hi) ? 0 : hi);
    glp_set_obj_coef(m->P, j + 1, cost);
    glp_set_col_kind(m->P, j + 1, integer ? GLP_IV : GLP_CV);
}

vl_status vl_milp_row(vl_milp *m, size_t n, const int *idx, const double *val, double lo,
                      double hi, vl_err *err)
{
    int *ind;
    double *v;
    int row;

    if (n == 0 || n > (size_t)m->ncols || lo > hi)
        return vl_seterr(err, VL_EUSAGE, "milp: bad row (%zu entries, bounds %g..%g)", n, lo,
                         hi);
    ind = malloc((n + 1) * sizeof *ind);
    v = malloc((n + 1) * sizeof *v);
    if (ind == NULL || v == NULL) {
        free(ind);
        free(v);
        return vl_seterr(err, VL_ENOMEM, "milp: out of memory for a row");
    }
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= m->ncols) {
            free(ind);
            free(v);
            return vl_seterr(err, VL_EUSAGE, "milp: column %d out of range", idx[i]);
        }
        ind[i + 1] = idx[i] + 1;
        v[i + 1] = val[i];
    }
    row = glp_add_rows(m->P, 1);
    glp_set_row_bnds(m->P, row, bound_type(lo, hi), isinf(lo) ? 0 : lo, isinf(hi) ? 0 : hi);
    glp_set_mat_row(m->P, row, (int)n, ind, v);
    free(ind);
    free(v);
    return VL_OK;
}

static void callback(glp_tree *T, void *info)
{
    search_ctx *c = info;
    int a, n, t;

    if (glp_ios_reason(T) == GLP_IHEUR && c->warm1 && !c->offered) {
        c->offered = true;
        c->used = glp_ios_heur_sol(T, c->warm1) == 0;
    }
    glp_ios_tree_size(T, &a, &n, &t);
    c->nodes = t;
    /* the warm start can only be offered at a heuristic call (after the node's LP), so a
     * cap reached before that waits for it within the same node */
    if (t > c->cap || (t == c->cap && (c->offered || !c->warm1)))
        glp_ios_terminate(T);
}

/* The LP relaxation; false when it has no optimum (infeasible or unbounded). */
static vl_status relax(vl_milp *m, bool *ok, vl_err *err)
{
    glp_smcp sm;
    int rc;

    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_OFF;
    rc = glp_simplex(m->P, &sm);
    *ok = rc == 0 && glp_get_status(m->P) == GLP_OPT;
    if (rc != 0 && rc != GLP_ENOPFS && rc != GLP_ENODFS)
        return vl_seterr(err, VL_EINTERNAL, "milp: the simplex method failed (GLPK code %d)",
                         rc);
    return VL_OK;
}

vl_status vl_milp_solve(vl_milp *m, const double *warm, int node_cap, double *x,
                        vl_milp_result *res, vl_err *err)
{
    search_ctx ctx = {.cap = node_cap > 0 ? node_cap : 1};
    double *w1 = NULL;
    int was = glp_term_out(GLP_OFF), rc, ms;
    bool ok;
    glp_iocp io;
    vl_status st;

    *res = (vl_milp_result){.outcome = VL_MILP_NONE};
    if ((st = relax(m, &ok, err)) != VL_OK || !ok) {
        glp_term_out(was);
        return st;
    }
    if (warm) {
        if ((w1 = malloc(((size_t)m->ncols + 1) * sizeof *w1)) == NULL) {
            glp_term_out(was);
            return vl_seterr(err, VL_ENOMEM, "milp: out of memory for the warm start");
        }
        for (int j = 0; j < m->ncols; j++)
            w1[j + 1] = warm[j];
        ctx.warm1 = w1;
    }
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_OFF;
    io.cb_func = callback;
    io.cb_info = &ctx;
    rc = glp_intopt(m->P, &io);
    glp_term_out(was);
    free(w1);
    if (rc != 0 && rc != GLP_ESTOP)
        return vl_seterr(err, VL_EINTERNAL, "milp: branch-and-bound failed (GLPK code %d)",
                         rc);
    ms = glp_mip_status(m->P);
    res->nodes = ctx.nodes;
    res->warm_used = ctx.used;
    if (ms != GLP_OPT && ms != GLP_FEAS)
        return VL_OK;
    res->outcome = ms == GLP_OPT && rc == 0 ? VL_MILP_OPTIMAL : VL_MILP_FEASIBLE;
    res->objective = glp_mip_obj_val(m->P);
    for (int j = 0; j < m->ncols; j++)
        x[j] = glp_mip_col_val(m->P, j + 1);
    return VL_OK;
}
