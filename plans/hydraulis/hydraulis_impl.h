/* plans/hydraulis/hydraulis_impl.h -- internals of the Hydraulis strategy shared by its
 * units: the parallel schemes (hydraulis_scheme.c), the strategy proposal DP and the
 * candidate list (hydraulis_propose.c), the per-iteration dispatch (hydraulis_dispatch.c)
 * and packing (hydraulis_pack.c), and the driver (hydraulis.c).  Not API; the tests
 * include it to check each step on hand examples. */
#ifndef VLPLAN_HYDRAULIS_IMPL_H
#define VLPLAN_HYDRAULIS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vlplan_strategy.h"

#define HY_ALIGN 128 /* MaxLen and micro-batches are multiples of this */
/* The most GPUs planned: dispatch costs trials x samples x pipelines an iteration. */
#define HY_MAX_GPUS 4096
#define HY_MAX_V 20 /* micro-batch counts tried per pipeline */
/* Dispatch keeps the trials' shuffles of an iteration up to this many entries (16 MiB). */
#define HY_PERMS_KEPT (UINT64_C(4) << 20)

typedef enum { HY_DYNAMIC = 0, HY_STATIC = 1, HY_HOMO = 2 } hy_mode;
typedef enum { HY_BALANCED = 0, HY_MAXPACK = 1 } hy_packing;

/* The bound `hydraulis:` section (vl_param table in hydraulis.c). */
typedef struct hy_opts {
    int mode;                     /* hy_mode */
    int packing;                  /* hy_packing */
    uint32_t trials;              /* randomised dispatch trials per candidate */
    uint32_t max_candidates;      /* proposed candidates kept, the homogeneous one included */
    uint32_t s_step, n_step;      /* DP steps (tokens, GPUs); 0 = auto */
    char candidates[VL_TEXT_MAX]; /* "auto" or "4x16/1; 16/1+6x8/1; ..." */
    bool fallback;                /* homogeneous layouts holding the context join (ours) */
    uint32_t verify;              /* runners-up simulated against the best estimate (ours) */
} hy_opts;

/* One parallel scheme <tp, pp> of a pipeline (sp = 1). */
typedef struct hy_scheme {
    int tp, pp;
    double a, b, c;   /* T(l) = a·l² + b·l + c, ms per stage, fwd + bwd */
    uint32_t maxlen;  /* longest micro-batch that fits, multiple of 128 */
    uint32_t utillen; /* tokens per micro-batch where efficiency saturates */
    bool measured;    /* a, b, c from cost.schemes (else fitted) */
} hy_scheme;

/* The scheme space. */
typedef struct hy_schemes {
    hy_scheme *s;
    size_t n, cap;
} hy_schemes;

/* A heterogeneous strategy: np pipelines, pipes[p0 .. p0 + np) of the list are scheme
 * indices, by tp then pp descending (the order the plan lists its ranks). */
typedef struct hy_cand {
    uint32_t p0, np;
    uint32_t maxlen; /* the largest pipeline MaxLen */
    uint32_t gpus;   /* GPUs used (the rest idle) */
    double est;      /* the DP's value for it, < 0 when not proposed */
    uint32_t s;      /* the DP length it was proposed for (0: none) */
} hy_cand;

typedef struct hy_cands {
    hy_cand *c;
    size_t n, cap;
    uint32_t *pipes;
    size_t npipes, pipes_cap;
} hy_cands;

/* ---- hydraulis_scheme.c ---- */

static inline double hy_T(const hy_scheme *s, double l)
{
    return (s->a * l + s->b) * l + s->c;
}
/** The dispatch time of one sequence: T without the per-micro-batch constant. */
static inline double hy_t(const hy_scheme *s, double l)
{
    return (s->a * l + s->b) * l;
}

/** MaxLen of <tp, pp> under cost model c with the optimizer sharded over `world` GPUs:
 *  the largest multiple of 128 such that pp - s micro-batches of that many tokens in
 *  flight on every stage s (1F1B) plus the stage's model states fit the usable memory;
 *  0 when not even 128 tokens fit. */
uint32_t vl__hy_maxlen(const vl_cost *c, int tp, int pp, int world);

/** Peak modelled bytes of the fullest stage of <tp, pp> at `tokens` per micro-batch
 *  (the quantity vl__hy_maxlen bounds). */
double vl__hy_peak_bytes(const vl_cost *c, int tp, int pp, int world, uint64_t tokens);

/** Least-squares T(l) = a·l² + b·l + c (ms, relative error, coefficients kept >= 0) to
 *  the analytic cost of one sequence of l tokens on the last stage of <tp, pp>, over
 *  lengths from 128 to `upto`. */
void vl__hy_fit(const vl_cost *c, int tp, int pp, uint32_t upto, double *a, double *b,
                double *cc);

/** UtilLen of a scheme: the authors' per-TP table when `table`, else the smallest
 *  multiple of 128 at which cluster.gemm_eff reaches 0.85 of its maximum. */
uint32_t vl__hy_utillen(const vl_config *cfg, int tp, bool table);

/** The scheme space: tp a power of two <= 16 dividing the heads, pp dividing the layers,
 *  tp·pp <= gpus, MaxLen >= 128; with cost.schemes rows (sp = 1) only those, timed by
 *  them, else every such scheme timed by the fit.  VL_ENOMEM. */
vl_status vl__hy_schemes(hy_schemes *out, const vl_cost *c, vl_err *err);
void vl__hy_schemes_free(hy_schemes *s);
/** Index of <tp, pp> in s, or -1. */
int vl__hy_scheme_find(const hy_schemes *s, int tp, int pp);
/** The homogeneous scheme: <training.tp, training.pp> when usable, else the one holding
 *  the longest micro-batch; -1 when none is usable. */
int vl__hy_homo_scheme(const hy_schemes *sch, const vl_config *cfg);
/** The largest MaxLen among the pipelines a plan under o may use (the homogeneous
 *  scheme's, every scheme's or the given candidates'); 0 when none is usable. */
uint32_t vl__hy_largest_maxlen(const hy_opts *o, const vl_config *cfg);

/* ---- hydraulis_propose.c ---- */

/* A length histogram in bins of `step` tokens: bin b (1..nb) holds lengths in
 * ((b-1)·step, b·step]: a (weighted) count, Σ l, Σ l², and the longest length. */
typedef struct hy_hist {
    uint32_t step, nb;
    double *cnt, *s1, *s2; /* [nb + 1], bin 0 unused */
    uint32_t *longest;     /* [nb + 1] */
} hy_hist;

/** The histogram of lengths len[idx[i]] (i < n) in bins of step, each weighted w. */
vl_status vl__hy_hist(hy_hist *h, const uint32_t *idx, size_t n, const uint32_t *len,
                      uint32_t step, double w, vl_err *err);
void vl__hy_hist_free(hy_hist *h);

/** The proposal DP (docs/hydraulis.md §2 PROPOSE) over h with schemes sch, N GPUs in
 *  steps of nstep: append to out, for every maximum length s = step..nb·step held by
 *  some scheme, the best strategy S[N][s] not already in out (est = t[N][s], s).
 *  VL_ENOMEM. */
vl_status vl__hy_propose(hy_cands *out, const hy_hist *h, const hy_schemes *sch, int N,
                         int nstep, vl_err *err);

/** The DP's t[N][s] and S[N][s] (pipelines, canonical order, room for N) for one length s
 *  (a multiple of h->step): what vl__hy_propose lists, for tests.  VL_ENOMEM. */
vl_status vl__hy_dp_at(const hy_hist *h, const hy_schemes *sch, int N, int nstep, uint32_t s,
                       uint32_t *pipes, size_t *np, double *t, vl_err *err);

/** Append a candidate of the given pipelines (scheme indices, any order; sorted here) if
 *  no candidate of out has the same multiset.  *added says whether it was new. */
vl_status vl__hy_cand_add(hy_cands *out, const hy_schemes *sch, const uint32_t *pipes,
                          size_t np, double est, uint32_t s, bool *added, vl_err *err);
void vl__hy_cands_free(hy_cands *c);

/** Parse "4x16/1; 16/1+6x8/1" (';' between candidates, '+' between terms, "DxTP/PP" or
 *  "TP/PP") into out, each scheme looked up in sch.  VL_ECONFIG naming the term. */
vl_status vl__hy_parse_cands(hy_cands *out, const char *text, const hy_schemes *sch, int gpus,
                             vl_err *err);

/** Keep the first candidate and max - 1 of the others spread evenly over the list (the
 *  last always kept), in their order. */
void vl__hy_cands_trim(hy_cands *c, size_t max);

/* ---- hydraulis_dispatch.c ---- */

/* One pipeline as dispatch and packing see it. */
typedef struct hy_pipe {
    const hy_scheme *s;
    uint32_t slot; /* position in the candidate (rank order) */
} hy_pipe;

/* A run of pipelines j0 .. j1 - 1 of one kind k; flat: pp = 1, no bubble term; open:
 * in a trial, 1 + its last empty pipeline or below (j0: none). */
typedef struct hy_prun {
    uint32_t j0, j1, k, open;
    bool flat;
} hy_prun;

/* Scratch for dispatching one batch (grown, never shrunk). */
typedef struct hy_work {
    uint32_t *perm, *owner, *best_owner;
    size_t seq_cap;
    const uint32_t *order; /* the trial's order: perm, or one of the kept perms */
    double *C, *E;
    uint32_t *cnt;
    size_t pipe_cap;
    hy_pipe *pipes;
    size_t pipes_cap;
    /* dispatch: each sequence's time on each distinct scheme of the candidate */
    double *st;
    size_t st_cap;
    uint32_t *fits;
    size_t fits_cap; /* per sequence: the pipelines holding it */
    uint32_t *slen;  /* per sequence: its length (fits_cap) */
    /* the trials' shuffles of the last (seed, stream, n, trials): every candidate of an
     * iteration draws the same ones */
    uint32_t *perms;
    size_t perms_cap;
    uint64_t perms_seed, perms_stream;
    size_t perms_n;
    uint32_t perms_trials;
    size_t only0;     /* sequences only pipeline 0 holds */
    size_t tree_from; /* pipelines from which trees pick; 0: HY_TREE_FROM */
    uint32_t *kind;
    const hy_scheme **kinds;
    size_t kind_cap; /* pipeline -> scheme */
    hy_prun *runs;
    size_t nrun;    /* runs of one kind (kind_cap entries) */
    uint32_t *rfit; /* per sequence: the runs holding it (fits_cap) */
    /* packing: orders shared by every micro-batch count, and per-count state */
    uint32_t *items, *bin, *best_bin;
    double *t;
    uint64_t *key, *key_tmp; /* integer sort keys and the merge's room */
    size_t item_cap;
    uint32_t *asc, *ffd, *next, *prev, *mem, *tmp;
    size_t order_cap;
    double *load;
    uint64_t *tok;
    size_t bin_cap;
    uint32_t *head, *heap, *aside;
    size_t heap_cap;
} hy_work;

/** fmax for values that are never NaN, inline (fmax is a libm call in the hot loops):
 *  the same value, up to the sign of a zero, which no comparison sees. */
static inline double hy_max(double a, double b)
{
    return a > b ? a : b;
}

static inline double hy_min(double a, double b)
{
    return a < b ? a : b;
}

void vl__hy_work_free(hy_work *w);

/** Alg. 1 with the code's rules (docs/hydraulis.md §2 DISPATCH): pipes[0..np) sorted by
 *  MaxLen descending, lengths len[seq[i]] (i < n).  `trials` shuffles from rng seeded
 *  (seed, stream + trial) (trials 0: one trial in the given order); owner[i] receives the
 *  pipeline of sequence i in the best trial.  Returns the best objective, or -1 when every
 *  trial leaves a pipeline empty (allow_empty: such trials count too) or some sequence fits
 *  no pipeline.  VL_ENOMEM through *st. */
double vl__hy_dispatch(hy_work *w, const hy_pipe *pipes, size_t np, const uint32_t *seq,
                       size_t n, const uint32_t *len, uint32_t trials, uint64_t seed,
                       uint64_t stream, bool allow_empty, uint32_t *owner, vl_status *st,
                       vl_err *err);

/** vl__hy_dispatch, with trials stopped once their objective reaches `cut` (INFINITY:
 *  none): the objective of an assignment bounds its estimate from below (each pipeline's
 *  Σ t + (pp − 1)·the longest t is at most its packed (m + c)·(pp − 1 + v)), so a trial
 *  past the cut yields no estimate below it.  The trial chosen and its objective are
 *  vl__hy_dispatch's whenever that objective is below the cut; INFINITY when none is and
 *  some trial was stopped at the cut (its estimate would pass it).  Negative times or
 *  constants disable the cut. */
double vl__hy_dispatch_cut(hy_work *w, const hy_pipe *pipes, size_t np, const uint32_t *seq,
                           size_t n, const uint32_t *len, uint32_t trials, uint64_t seed,
                           uint64_t stream, bool allow_empty, double cut, uint32_t *owner,
                           vl_status *st, vl_err *err);

/* ---- hydraulis_dtree.c ---- */

/* Dispatch uses the trees from this many pipelines (a scan is faster below). */
#define HY_TREE_FROM 64

/* The pipelines of one dispatch by kind (distinct scheme), each kind a min-tree of C and
 * E over its pipelines in index order, and its last empty pipeline. */
typedef struct hy_dtree {
    size_t np, nk;
    size_t *kstart;     /* [nk + 1]: kind k lists list[kstart[k] .. kstart[k+1]) */
    size_t *list;       /* pipelines by kind, ascending */
    size_t *leaf;       /* [np]: position in its kind's list */
    size_t *toff, *tsz; /* [nk]: tree offset in c, e; leaves (a power of two) */
    double *c, *e, *s;  /* node minima of C, E, C + E; node v of kind k at
                                   * toff[k] + v */
    bool nonneg;        /* every t >= 0 (the caller sets it): the C + E bound holds */
    size_t *last;       /* [nk]: 1 + position of the last empty pipeline, 0 none */
} hy_dtree;

/** The kinds' lists and trees for kind[j] of pipelines j < np.  VL_ENOMEM. */
vl_status vl__hy_dtree_init(hy_dtree *d, const uint32_t *kind, size_t np, size_t nk,
                            vl_err *err);
void vl__hy_dtree_free(hy_dtree *d);
/** Every pipeline empty, C = E = 0. */
void vl__hy_dtree_reset(hy_dtree *d);
/** Pipeline j (kind k) now has C, E; cnt[] says which pipelines are no longer empty. */
void vl__hy_dtree_set(hy_dtree *d, size_t j, size_t k, double C, double E,
                      const uint32_t *cnt);
/** The pipeline Alg. 1's scan picks for a sequence of l tokens whose t and (pp − 1)·t on
 *  kind k are row[2k], row[2k + 1], at running maximum mx: the kinds of MaxLen >= l
 *  (kinds[k]) are searched. */
size_t vl__hy_dtree_pick(const hy_dtree *d, const double *row, const hy_scheme *const *kinds,
                         uint32_t l, double mx);

/* ---- hydraulis_pack.c ---- */

/** Pack sequences seq[0..n) of one pipeline (docs/hydraulis.md §2 PACK): bin[i]
 *  receives the micro-batch of sequence i, *v the count.  packing HY_MAXPACK: first fit
 *  decreasing to MaxLen (the fewest micro-batches).  Returns the estimate
 *  (max micro-batch Σt + c)·(pp − 1 + v) in ms (0 for n = 0).  VL_ENOMEM through *st. */
double vl__hy_pack(hy_work *w, const hy_scheme *s, const uint32_t *seq, size_t n,
                   const uint32_t *len, hy_packing packing, uint32_t *bin, uint32_t *v,
                   vl_status *st, vl_err *err);

/** MINMAX: sequences of times t[0..n) and tokens tok[0..n) into v micro-batches of at most
 *  cap tokens, minimising the heaviest: LPT onto the lightest one with room (first fit
 *  decreasing by tokens when LPT finds no room), then moves and swaps off the heaviest.
 *  bin[i] receives the micro-batch; returns the heaviest load, or -1 when infeasible. */
double vl__hy_minmax(hy_work *w, const double *t, const uint32_t *tok, size_t n, uint32_t v,
                     uint32_t cap, uint32_t *bin, vl_status *st, vl_err *err);

/* ---- hydraulis_iter.c ---- */

/* A batch's two-stage assignment on one candidate: per batch position its pipeline
 * (dispatch order) and micro-batch, per pipeline its micro-batch count. */
typedef struct hy_assign {
    uint32_t *owner, *mb;
    size_t seq_cap;
    uint32_t *nmb;
    size_t pipe_cap;
} hy_assign;

/* What one iteration's evaluation needs and keeps (grown, never shrunk). */
typedef struct hy_iter {
    const hy_schemes *sch;
    const hy_cands *cands;
    uint32_t trials;
    hy_packing packing;
    uint32_t context; /* packing max fills micro-batches to min(MaxLen, this) */
    uint64_t seed;
    hy_work w;
    hy_pipe *pipes;
    size_t pipes_cap;
    uint32_t *sub, *pos, *bin, *gpos;
    size_t seq_cap; /* one pipeline's sequences */
    size_t *gstart;
    size_t gstart_cap; /* gpos[gstart[j] ..]: pipeline j's positions */
    double *pipe_est;
    size_t est_cap; /* per pipeline (dispatch order) of the last eval */
    uint32_t *porder;
    size_t porder_cap;   /* the order eval packs the pipelines in */
    hy_assign cur, kept; /* the last evaluation, the one vl__hy_keep saved */
    size_t kept_cand;
    /* per candidate: its complete evaluation of this batch, saved by vl__hy_memo_save so
     * the simulated check of runners-up does not dispatch and pack them again */
    hy_assign *memo;
    uint64_t *memo_gen;
    size_t memo_cap;
    uint64_t gen; /* memo[c] is of this batch when memo_gen[c] == gen */
} hy_iter;

void vl__hy_iter_free(hy_iter *it);

/** Two-stage assignment of the batch seq[0..n) (manifest indices, lengths len) on
 *  candidate `cand`: dispatch (stream `stream`), then every pipeline packed; returns the
 *  slowest pipeline's estimate (ms), or -1 when the candidate cannot run the batch (a
 *  sequence no pipeline holds, or every trial leaves a pipeline empty unless
 *  allow_empty).  Once a pipeline's estimate passes `bound` (INFINITY: none) the rest
 *  are not packed and that estimate, > bound, is returned; when a lower bound of every
 *  assignment's estimate passes `bound`, that lower bound is returned at once, without
 *  a dispatch (even where none is feasible), and when every dispatch trial passes it by
 *  a margin (vl__hy_dispatch_cut), bound · (1 + 1e-6) is returned without packing.
 *  Either way the assignment is incomplete: not for vl__hy_keep.  So what comes back is
 *  the estimate, complete, exactly when that is at most `bound`, and otherwise a value
 *  above `bound` (or -1, a candidate that cannot run the batch).  VL_ENOMEM through
 *  *st. */
double vl__hy_eval(hy_iter *it, size_t cand, const uint32_t *seq, size_t n,
                   const uint32_t *len, uint64_t stream, bool allow_empty, double bound,
                   vl_status *st, vl_err *err);

/** Save the assignment of the last vl__hy_eval (which returned >= 0, on candidate cand)
 *  for vl__hy_emit_kept: the chosen candidate is then written without evaluating it
 *  again. */
void vl__hy_keep(hy_iter *it, size_t cand);

/** Forget every evaluation vl__hy_memo_save saved (a new batch, or a new pass over it). */
void vl__hy_memo_clear(hy_iter *it);

/** Save the last vl__hy_eval (complete: it returned an estimate >= 0 below its bound) of
 *  candidate cand on the batch of n sequences.  VL_ENOMEM. */
vl_status vl__hy_memo_save(hy_iter *it, size_t cand, size_t n, vl_err *err);

/** vl__hy_keep of the evaluation of cand saved since the last vl__hy_memo_clear, which
 *  is the one vl__hy_eval would compute again; false (nothing kept) when none was. */
bool vl__hy_memo_keep(hy_iter *it, size_t cand);

/** Append the iteration the kept assignment of batch seq[0..n) describes to out: one
 *  rank per non-empty pipeline in candidate order, micro-batches by tokens descending
 *  with capacity rounded up to 128, sequences by length descending; the candidate
 *  recorded.  seq is the batch the kept evaluation was of. */
vl_status vl__hy_emit_kept(hy_iter *it, const uint32_t *seq, size_t n, const uint32_t *len,
                           uint32_t epoch, vl_plan *out, vl_err *err);

/** vl__hy_eval, vl__hy_keep, then vl__hy_emit_kept.  VL_EINTERNAL when the candidate
 *  cannot run the batch. */
vl_status vl__hy_emit(hy_iter *it, size_t cand, const uint32_t *seq, size_t n,
                      const uint32_t *len, uint64_t stream, bool allow_empty, uint32_t epoch,
                      vl_plan *out, vl_err *err);

/* ---- hydraulis_choose.c ---- */

/* How vl__hy_choose evaluates the candidates. */
typedef struct hy_choice {
    int first;        /* evaluated first (the last batch's choice); -1: index order */
    int only;         /* the one candidate evaluated; -1: every one */
    double margin;    /* bounds are the best estimate so far times 1 + margin */
    bool allow_empty; /* vl__hy_eval's */
    bool save;        /* complete evaluations saved (vl__hy_memo_save) for runners-up */
} hy_choice;

/** The candidate of smallest estimate for the batch seq[0..n) (ties: the lowest index),
 *  *est its estimate, and its evaluation kept (vl__hy_keep); each candidate evaluated
 *  under the best estimate so far times 1 + margin, est_of[c] what came back: the
 *  estimate wherever that is within (1 + margin) of the best, else -1 or a value above
 *  that.  The same answers whatever `first` is.  Clears the memo first.  -1 when no
 *  candidate can run the batch, or on error (*st, VL_ENOMEM). */
int vl__hy_choose(hy_iter *it, const uint32_t *seq, size_t n, const uint32_t *len,
                  uint64_t stream, const hy_choice *how, double *est_of, double *est,
                  vl_status *st, vl_err *err);

/** "16/1+6x8/1" for candidate c into buf (n bytes). */
void vl__hy_cand_text(const hy_cands *cs, const hy_schemes *sch, size_t c, char *buf,
                      size_t n);

#endif
