/* plans/hydraulis/hydraulis.c -- the Hydraulis strategy: options, the scheme space and
 * the candidates, the runner's hooks (one global batch at a time, lib/run/run_epochs.c)
 * and its vl_strategy entry.  Helpers: hydraulis_scheme.c, _propose.c, _dispatch.c,
 * _pack.c, _iter.c.
 *
 * Design.  Hydraulis (Li et al., the hydraulis paper, docs/papers.md; docs/hydraulis.md), objective:
 * the slowest pipeline of each iteration.  The GPUs are split into pipelines of
 * different <tp, pp>, chosen per iteration from candidates the proposal DP derives once
 * from the dataset's length histogram (§7); each batch is dispatched to the pipelines
 * (Alg. 1) and packed within each (Eq. 1); the candidate with the smallest estimate runs
 * it.  The fp32 optimizer states are sharded over every GPU (VL_CAP_WORLD_OPTIM), which
 * is what lets the layout change between iterations; pipelines differ in micro-batch
 * counts (VL_CAP_UNEVEN_MBS).
 * Params: mode (dynamic | static | homo, the Fig. 13 ablations), packing (balanced | max),
 * trials, max_candidates, s_step, n_step, candidates.
 * Complexity: proposal O(N/n_step · (L/s_step)² · K · d) once, pruned; per iteration
 * candidates · trials dispatches of the B sequences over D pipelines (a scan of the
 * pipelines per sequence below 64 of them, per-scheme min-trees above), plus per
 * pipeline up to 20 min-max packings of its U sequences (LPT from a heap; each improving
 * step searches the heaviest micro-batch's sequences against a window of the others;
 * counts that cannot win skipped; a candidate's packing stops at the best estimate of
 * an earlier one); the trials' shuffles are drawn once an iteration for every
 * candidate; the last iteration's choice is evaluated first (hydraulis_choose.c), and a
 * candidate whose lower bound (Σ t and the micro-batch constants spread over its
 * pipelines, hydraulis_iter.c) already passes the best estimate's margin is neither
 * dispatched nor packed, and its dispatch trials stop once their objective (a lower
 * bound of the estimate) passes it; the batch's lengths are gathered once an iteration,
 * not read from the manifest by every candidate; the chosen candidate and the runners-up
 * simulated are written as evaluated, not evaluated again.  All exact: the same plans as
 * the plain scans and the index order (tests/strategies/test_hydraulis_fast.c).
 * Deviations (man page, HYDRAULIS): the integer DP of the authors' code, not the paper's
 * continuous relaxation; a min-max heuristic instead of the code's CBC MILP per v; the
 * histogram scaled to one iteration's expected sequence count; code quirks fixed as
 * docs/hydraulis.md §2 lists. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"
#include "sim.h"

/* Candidates whose estimate is within this of the best are simulated too, at most
 * hydraulis.verify of them besides the best (HY_VERIFY_MAX at most), and the fastest
 * simulated runs the iteration: the estimate is the paper's latency model, a few percent
 * off the simulator's.  One runner-up within 3% costs ~20% more planning time on 1M
 * samples (its packing in full, the simulations) and gains up to 2% of modelled epoch
 * time on the real traces. */
#define HY_VERIFY_MARGIN 0.03
#define HY_VERIFY_MAX 4

static const char *const modes[] = {"dynamic", "static", "homo", NULL};
static const char *const packings[] = {"balanced", "max", NULL};

static const vl_param hydraulis_params[] = {
    {"mode", VL_P_ENUM, offsetof(hy_opts, mode), 0, 0, modes, "dynamic",
     "dynamic: best candidate per iteration; static: one heterogeneous candidate for "
     "every iteration; homo: the homogeneous training.tp x training.pp strategy"},
    {"packing", VL_P_ENUM, offsetof(hy_opts, packing), 0, 0, packings, "balanced",
     "balanced: micro-batch count and min-max packing per pipeline (Eq. 1); max: pack "
     "to the context length, or MaxLen when shorter (fewest micro-batches)"},
    {"trials", VL_P_UINT, offsetof(hy_opts, trials), 1, 65535, NULL, "50",
     "randomised dispatch trials per candidate and iteration"},
    {"max_candidates", VL_P_UINT, offsetof(hy_opts, max_candidates), 1, 256, NULL, "8",
     "proposed candidates kept, the homogeneous one included"},
    {"s_step", VL_P_AUTO_UINT, offsetof(hy_opts, s_step), 32, 1048576, NULL, "auto",
     "proposal DP length step in tokens, at least 32 (the DP's work grows with the square "
     "of context / s_step); auto: 128, 1024 from 1024 GPUs"},
    {"n_step", VL_P_AUTO_UINT, offsetof(hy_opts, n_step), 1, 1024, NULL, "auto",
     "proposal DP GPU step; auto: 1, 4 from 1024 GPUs"},
    {"candidates", VL_P_TEXT, offsetof(hy_opts, candidates), 0, 0, NULL, "auto",
     "auto: proposed by the DP; else \"4x16/1; 16/1+6x8/1; ...\" (DxTP/PP terms)"},
    {"verify", VL_P_UINT, offsetof(hy_opts, verify), 0, HY_VERIFY_MAX, NULL, "1",
     "runners-up within 3% of the best estimate simulated per iteration, the fastest "
     "simulated kept (ours; 0: the paper's estimate alone)"},
    {"fallback", VL_P_BOOL, offsetof(hy_opts, fallback), 0, 0, NULL, "on",
     "where candidate 0 cannot hold training.max_seq_len, the homogeneous layouts that can "
     "are candidates too (ours; off: the paper's candidates only)"},
    {.key = NULL},
};

/* Everything the run keeps. */
typedef struct hy_run {
    const hy_opts *o;
    const vl_job *job;
    hy_schemes sch;
    hy_cands cands;
    hy_iter it;
    int fixed;               /* the candidate of every iteration, -1 = per iteration */
    int last;                /* the last batch's smallest estimate, evaluated first */
    uint64_t *chosen;        /* iterations per candidate */
    uint64_t iters, relaxed; /* iterations, those run with an idle pipeline */
    double est_sum;
    double *est_of;   /* this batch's estimate per candidate, -1: cannot run */
    vl_manifest *man; /* the output plan's */
    vl_plan scratch;  /* one iteration, to simulate a choice */
    bool scratch_ready;
    vl_sim_scratch *sim;
    uint64_t verified, overturned; /* iterations simulated to choose, estimate overturned */
    /* the batch as evaluations read it: positions 0 .. n-1 and their lengths, gathered
     * once (the manifest's lengths lie beyond the caches at millions of samples, and
     * every candidate reads them several times); the assignments are by position */
    uint32_t *bpos, *blen;
    size_t bcap;
} hy_run;

static void run_free(hy_run *r)
{
    vl__hy_schemes_free(&r->sch);
    vl__hy_cands_free(&r->cands);
    vl__hy_iter_free(&r->it);
    free(r->chosen);
    free(r->est_of);
    free(r->bpos);
    free(r->blen);
    if (r->scratch_ready)
        vl_plan_free(&r->scratch);
    vl_sim_scratch_free(r->sim);
}

static uint32_t auto_step(uint32_t v, int gpus, uint32_t small, uint32_t large)
{
    return v ? v : gpus >= 1024 ? large : small;
}

/* ---- schemes and candidates ---- */

/* d pipelines of scheme k: a homogeneous candidate. */
static vl_status add_homogeneous(hy_run *r, int k, vl_err *err)
{
    int d = r->job->cfg->cluster.gpus / (r->sch.s[k].tp * r->sch.s[k].pp);
    uint32_t *pipes = malloc((size_t)(d > 0 ? d : 1) * sizeof *pipes);
    bool added;
    vl_status st;

    if (pipes == NULL)
        return vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory");
    for (int i = 0; i < d; i++)
        pipes[i] = (uint32_t)k;
    st = vl__hy_cand_add(&r->cands, &r->sch, pipes, (size_t)d, -1, 0, &added, err);
    free(pipes);
    return st;
}

static vl_status homogeneous(hy_run *r, vl_err *err)
{
    const vl_config *cfg = r->job->cfg;
    int k = vl__hy_homo_scheme(&r->sch, cfg);

    if (k != vl__hy_scheme_find(&r->sch, cfg->training.tp,
                                cfg->training.pp > 1 ? cfg->training.pp : 1))
        vl_job_log(r->job,
                   "hydraulis: training.tp %d x training.pp %d is not a usable scheme "
                   "(tp a power of two <= 16 dividing the heads, pp dividing the layers, a "
                   "cost.schemes row when rows are given, 128 tokens fitting memory); the "
                   "homogeneous candidate uses %d/%d\n",
                   cfg->training.tp, cfg->training.pp, r->sch.s[k].tp, r->sch.s[k].pp);
    if (r->sch.s[k].maxlen < cfg->training.max_seq_len)
        /* inherent, not a defect: the paper's pipelines never checkpoint, so a sample
         * the homogeneous layout cannot hold needs a deeper, slower pipeline, where
         * `pack` would recompute instead (man page, HYDRAULIS) */
        vl_job_warn(r->job,
                    "hydraulis: the homogeneous layout tp %d x pp %d holds at most "
                    "%u tokens without activation checkpointing (Hydraulis pipelines never "
                    "checkpoint), below training.max_seq_len %u: batches with longer "
                    "samples run on deeper pipelines, and `pack`, which recomputes, may be "
                    "faster here",
                    r->sch.s[k].tp, r->sch.s[k].pp, r->sch.s[k].maxlen,
                    cfg->training.max_seq_len);
    return add_homogeneous(r, k, err);
}

static uint64_t budget_of(const vl_training_cfg *t, const vl_selection *sel)
{
    if (t->global_tokens > 0)
        return t->global_tokens;
    return sel->n ? (uint64_t)t->global_batch * ((sel->tokens + sel->n - 1) / sel->n) : 0;
}

/* The DP's candidates after the homogeneous one, trimmed to max_candidates. */
static vl_status propose(hy_run *r, vl_err *err)
{
    const vl_job *job = r->job;
    const vl_config *cfg = job->cfg;
    int gpus = cfg->cluster.gpus;
    uint32_t step = auto_step(r->o->s_step, gpus, 128, 1024);
    double w = job->sel->tokens
                   ? (double)budget_of(&cfg->training, job->sel) / (double)job->sel->tokens
                   : 1.0;
    hy_hist h;
    vl_status st;

    /* one iteration's expected counts: the bubble term (pp - 1)·T(longest) keeps its
     * weight against Σ T, as in a batch */
    if ((st = vl__hy_hist(&h, job->sel->idx, job->sel->n, job->sel->len, step, w, err)))
        return st;
    st = vl__hy_propose(&r->cands, &h, &r->sch, gpus, (int)auto_step(r->o->n_step, gpus, 1, 4),
                        err);
    vl__hy_hist_free(&h);
    if (st == VL_OK)
        vl__hy_cands_trim(&r->cands, r->o->max_candidates);
    return st;
}

/* Where candidate 0 cannot hold training.max_seq_len, the homogeneous layouts of the
 * fewest GPUs per pipeline that can (every such scheme) join the candidates, after the
 * proposals and never trimmed: the paper's baseline is a homogeneous layout that runs
 * the data, and without it a short context on a small model leaves only mixes whose
 * few deep pipelines take every long sample (2x pack's time at 8K on Llama-3.1-8B). */
static vl_status homogeneous_fallback(hy_run *r, vl_err *err)
{
    uint32_t need = r->job->cfg->training.max_seq_len;
    int k0 = vl__hy_homo_scheme(&r->sch, r->job->cfg), g = 0;
    vl_status st = VL_OK;

    if (!r->o->fallback || r->sch.s[k0].maxlen >= need)
        return VL_OK;
    for (size_t i = 0; i < r->sch.n; i++) {
        int gi = r->sch.s[i].tp * r->sch.s[i].pp;
        if (r->sch.s[i].maxlen >= need && gi <= r->job->cfg->cluster.gpus && (!g || gi < g))
            g = gi;
    }
    for (size_t i = 0; g && i < r->sch.n && st == VL_OK; i++)
        if (r->sch.s[i].maxlen >= need && r->sch.s[i].tp * r->sch.s[i].pp == g) {
            vl_job_log(r->job,
                       "hydraulis: candidate 0 holds %u tokens, below training."
                       "max_seq_len %u: the homogeneous layout tp %d x pp %d (MaxLen %u) is a "
                       "candidate too\n",
                       r->sch.s[k0].maxlen, need, r->sch.s[i].tp, r->sch.s[i].pp,
                       r->sch.s[i].maxlen);
            st = add_homogeneous(r, (int)i, err);
        }
    return st;
}

static vl_status build_candidates(hy_run *r, vl_err *err)
{
    vl_status st = homogeneous(r, err);

    if (st != VL_OK || r->o->mode == HY_HOMO)
        return st;
    if (strcmp(r->o->candidates, "auto") == 0)
        st = propose(r, err);
    else
        st = vl__hy_parse_cands(&r->cands, r->o->candidates, &r->sch,
                                r->job->cfg->cluster.gpus, err);
    return st == VL_OK ? homogeneous_fallback(r, err) : st;
}

static void log_setup(const hy_run *r)
{
    const vl_job *job = r->job;
    char buf[512];

    vl_job_log(job,
               "hydraulis: %zu schemes (%s), MaxLen from the memory model with the "
               "optimizer over %d GPUs\n",
               r->sch.n,
               r->sch.n && r->sch.s[0].measured ? "cost.schemes" : "fitted to the cost model",
               job->cfg->cluster.gpus);
    vl_job_log(job, "  %4s %4s %14s %12s %9s %8s %8s\n", "tp", "pp", "a ms/tok^2", "b ms/tok",
               "c ms", "MaxLen", "UtilLen");
    for (size_t i = 0; i < r->sch.n; i++) {
        const hy_scheme *s = &r->sch.s[i];
        vl_job_log(job, "  %4d %4d %14.6g %12.6g %9.3f %8u %8u\n", s->tp, s->pp, s->a, s->b,
                   s->c, s->maxlen, s->utillen);
    }
    vl_job_log(job, "hydraulis: %zu candidates (mode %s, packing %s)\n", r->cands.n,
               modes[r->o->mode], packings[r->o->packing]);
    for (size_t c = 0; c < r->cands.n; c++) {
        const hy_cand *k = &r->cands.c[c];
        vl__hy_cand_text(&r->cands, &r->sch, c, buf, sizeof buf);
        if (k->s)
            vl_job_log(job,
                       "  [%zu] %s: MaxLen %u, %u GPUs, DP estimate %.1f ms at %u "
                       "tokens\n",
                       c, buf, k->maxlen, k->gpus, k->est, k->s);
        else
            vl_job_log(job, "  [%zu] %s: MaxLen %u, %u GPUs%s\n", c, buf, k->maxlen, k->gpus,
                       c == 0 ? " (homogeneous)" : "");
    }
}

/* ---- per iteration ---- */

static uint64_t stream_of(uint64_t iter)
{
    return UINT64_C(0x68796400000000) ^ (iter << 16); /* "hyd", trials below */
}

/* The candidate for the batch of n sequences gathered by gather_batch: the smallest
 * estimate among those able to run it (ties: lowest index; vl__hy_choose, the last
 * batch's choice evaluated first); with none, the same allowing an idle pipeline. */
static vl_status choose(hy_run *r, size_t n, uint64_t iter, int *cand, bool *relax,
                        double *est, vl_err *err)
{
    hy_choice how = {.first = r->last,
                     .only = r->fixed,
                     .margin = r->o->verify ? HY_VERIFY_MARGIN : 0,
                     .save = r->o->verify > 0 && r->fixed < 0};
    vl_status st = VL_OK;

    *cand = -1;
    for (int pass = 0; pass < 2 && *cand < 0 && st == VL_OK; pass++) {
        *relax = how.allow_empty = pass == 1 || r->fixed >= 0;
        *cand = vl__hy_choose(&r->it, r->bpos, n, r->blen, stream_of(iter), &how, r->est_of,
                              est, &st, err);
    }
    if (st == VL_OK && *cand < 0)
        st = vl_seterr(err, VL_EINFEASIBLE,
                       "hydraulis: iteration %llu: no candidate holds "
                       "its longest sequence",
                       (unsigned long long)iter);
    if (st == VL_OK)
        r->last = *cand;
    return st;
}

/* The kept assignment written into the scratch plan and simulated: its iteration time. */
static vl_status simulate_kept(hy_run *r, const uint32_t *seq, size_t n, uint32_t epoch,
                               double *ms, vl_err *err)
{
    vl_sim_iter_result res = {0};
    vl_status st = VL_OK;

    *ms = INFINITY;
    if (!r->scratch_ready) {
        if ((st = vl_plan_init(&r->scratch, r->man, "hydraulis", 0, err)) != VL_OK)
            return st;
        r->scratch.caps = VL_CAP_UNEVEN_MBS | VL_CAP_WORLD_OPTIM;
        r->scratch_ready = true;
    }
    if (!r->sim && (st = vl_sim_scratch_new(&r->sim, err)) != VL_OK)
        return st;
    vl_plan_clear_iters(&r->scratch, 0);
    st = vl__hy_emit_kept(&r->it, seq, n, r->job->sel->len, epoch, &r->scratch, err);
    if (st == VL_OK && (st = vl_sim_iter(&r->scratch, 0, r->job->cost, NULL, &res, r->sim,
                                         NULL, err)) == VL_OK)
        *ms = res.iter_time_ms;
    return st;
}

/* The runners-up within HY_VERIFY_MARGIN of the best estimate, best first (ties: index). */
static size_t runners_up(const hy_run *r, int cand, double est, int *out)
{
    size_t m = 0;

    for (size_t c = 0; c < r->cands.n; c++) {
        double e = r->est_of[c];
        if ((int)c == cand || e < 0 || e > est * (1 + HY_VERIFY_MARGIN))
            continue;
        if (m < r->o->verify)
            out[m++] = (int)c;
        else if (m > 0 && e < r->est_of[out[m - 1]])
            out[m - 1] = (int)c;
        else
            continue;
        for (size_t j = m - 1; j > 0 && r->est_of[out[j - 1]] > e; j--) {
            out[j] = out[j - 1];
            out[j - 1] = (int)c;
        }
    }
    return m;
}

/* The choice verified by simulation: the best estimate and its runners-up are simulated
 * and the fastest (ties: the better estimate) is kept for emission. */
static vl_status verify_choice(hy_run *r, const uint32_t *seq, size_t n, uint32_t epoch,
                               bool relax, int *cand, double *est, vl_err *err)
{
    int up[HY_VERIFY_MAX] = {0}, best = *cand, kept = *cand;
    size_t m = r->fixed >= 0 ? 0 : runners_up(r, *cand, *est, up);
    double best_ms = 0, ms;
    vl_status st = VL_OK;

    if (m == 0)
        return VL_OK;
    st = simulate_kept(r, seq, n, epoch, &best_ms, err);
    for (size_t i = 0; i < m && st == VL_OK; i++) {
        if (!vl__hy_memo_keep(&r->it, (size_t)up[i])) {
            if (vl__hy_eval(&r->it, (size_t)up[i], r->bpos, n, r->blen, stream_of(r->iters),
                            relax, INFINITY, &st, err) < 0)
                continue;
            vl__hy_keep(&r->it, (size_t)up[i]);
        }
        kept = up[i];
        if ((st = simulate_kept(r, seq, n, epoch, &ms, err)) == VL_OK && ms < best_ms) {
            best_ms = ms;
            best = up[i];
        }
    }
    if (st == VL_OK && kept != best && !vl__hy_memo_keep(&r->it, (size_t)best)) {
        /* the winner's assignment, again */
        vl__hy_eval(&r->it, (size_t)best, r->bpos, n, r->blen, stream_of(r->iters), relax,
                    INFINITY, &st, err);
        vl__hy_keep(&r->it, (size_t)best);
    }
    r->verified++;
    r->overturned += best != *cand;
    *est = r->est_of[best];
    *cand = best;
    return st;
}

/* The batch seq[0..n) into r->bpos, r->blen.  VL_ENOMEM. */
static vl_status gather_batch(hy_run *r, const uint32_t *seq, size_t n, vl_err *err)
{
    const uint32_t *len = r->job->sel->len;
    size_t c = r->bcap;
    vl_status st;

    if ((st = vl_grow(&r->bpos, &c, n + 1, sizeof *r->bpos, err)) != VL_OK)
        return st;
    c = r->bcap;
    if ((st = vl_grow(&r->blen, &c, n + 1, sizeof *r->blen, err)) != VL_OK)
        return st;
    r->bcap = c;
    for (size_t i = 0; i < n; i++) {
        r->bpos[i] = (uint32_t)i;
        r->blen[i] = len[seq[i]];
    }
    return VL_OK;
}

static vl_status plan_batch(hy_run *r, const uint32_t *seq, size_t n, uint32_t epoch,
                            vl_plan *out, vl_err *err)
{
    int cand;
    bool relax;
    double est = 0;
    vl_status st = gather_batch(r, seq, n, err);

    if (st == VL_OK)
        st = choose(r, n, r->iters, &cand, &relax, &est, err);

    if (st == VL_OK)
        st = verify_choice(r, seq, n, epoch, relax, &cand, &est, err);
    if (st != VL_OK)
        return st;
    if (r->job->verbose > 1)
        vl_job_log(r->job, "hydraulis: iteration %llu: candidate %d, estimate %.1f ms\n",
                   (unsigned long long)r->iters, cand, est);
    st = vl__hy_emit_kept(&r->it, seq, n, r->job->sel->len, epoch, out, err);
    r->chosen[cand]++;
    r->relaxed += relax && r->fixed < 0;
    r->est_sum += est;
    r->iters++;
    return st;
}

/* static: the candidate able to hold the longest sequence with the smallest summed
 * estimate over the first epoch (ties: lowest index; the homogeneous one only when no
 * heterogeneous candidate qualifies). */
static vl_status pick_static(hy_run *r, const uint32_t *order, const vl_batches *b,
                             vl_err *err)
{
    const vl_selection *sel = r->job->sel;
    uint32_t longest = 0;
    double best = -1;
    vl_status st = VL_OK;

    for (size_t i = 0; i < sel->n; i++)
        longest = sel->len[sel->idx[i]] > longest ? sel->len[sel->idx[i]] : longest;
    r->fixed = 0;
    for (size_t c = 1; c < r->cands.n && st == VL_OK; c++) {
        double sum = 0;
        if (r->cands.c[c].maxlen < longest)
            continue;
        for (size_t k = 0; k < b->n && st == VL_OK && sum >= 0; k++) {
            double e =
                vl__hy_eval(&r->it, c, order + b->start[k], b->start[k + 1] - b->start[k],
                            sel->len, stream_of(k), true, INFINITY, &st, err);
            sum = e < 0 ? -1 : sum + e;
        }
        if (sum >= 0 && (best < 0 || sum < best)) {
            best = sum;
            r->fixed = (int)c;
        }
    }
    return st;
}

static void log_summary(const hy_run *r)
{
    vl_job_log(r->job,
               "hydraulis: %llu iterations, mean estimate %.1f ms; %llu with an idle "
               "pipeline; chosen:",
               (unsigned long long)r->iters, r->iters ? r->est_sum / (double)r->iters : 0.0,
               (unsigned long long)r->relaxed);
    for (size_t c = 0; c < r->cands.n; c++)
        vl_job_log(r->job, " [%zu] %llu", c, (unsigned long long)r->chosen[c]);
    vl_job_log(r->job,
               "; %llu chosen by simulation among estimates within %.0f%%, %llu of "
               "them against the best estimate\n",
               (unsigned long long)r->verified, 100 * HY_VERIFY_MARGIN,
               (unsigned long long)r->overturned);
}

static vl_status record_params(const hy_run *r, vl_err *err)
{
    hy_opts used = *r->o;
    int gpus = r->job->cfg->cluster.gpus;

    used.s_step = auto_step(used.s_step, gpus, 128, 1024);
    used.n_step = auto_step(used.n_step, gpus, 1, 4);
    return vl_job_params(r->job, hydraulis_params, &used, err);
}

/* One run, the runner's state (vlplan_strategy.h): a hy_run. */
static vl_status hydraulis_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                                vl_err *err)
{
    (void)err;
    *(hy_run *)state = (hy_run){.o = opts, .job = job, .fixed = -1, .last = -1, .man = out->m};
    return VL_OK;
}

/* Every full global batch holds a sample for each of the homogeneous layout's
 * gpus / (tp pp) pipelines, checked before the proposal DP (its cost grows with the GPUs):
 * else the homogeneous candidate leaves pipelines empty and every iteration dispatches
 * a few samples over a million pipelines. */
static vl_cover hydraulis_cover(const void *state)
{
    const vl_config *cfg = ((const hy_run *)state)->job->cfg;
    const vl_training_cfg *t = &cfg->training;

    return (vl_cover){.ranks = (size_t)cfg->cluster.gpus / ((size_t)t->tp * (size_t)t->pp),
                      .piece = 0,
                      .share = 1,
                      .who = "hydraulis: "};
}

/* The per-run choices: the schemes, the candidates (proposed by the DP or given), the
 * knobs recorded; under mode static the one candidate, from the first epoch. */
static vl_status hydraulis_resolve(void *state, const vl_epoch_cut *first, vl_err *err)
{
    hy_run *r = state;
    const vl_job *job = r->job;
    vl_status st = vl__hy_schemes(&r->sch, job->cost, err);

    if (st == VL_OK && r->sch.n == 0)
        st = vl_seterr(err, VL_EINFEASIBLE,
                       "hydraulis: no <tp, pp> scheme fits 128 tokens "
                       "in device memory");
    if (st == VL_OK)
        st = build_candidates(r, err);
    if (st == VL_OK && ((r->chosen = calloc(r->cands.n, sizeof *r->chosen)) == NULL ||
                        (r->est_of = calloc(r->cands.n, sizeof *r->est_of)) == NULL))
        st = vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory");
    r->fixed = r->o->mode == HY_HOMO ? 0 : -1;
    r->it = (hy_iter){.sch = &r->sch,
                      .cands = &r->cands,
                      .trials = r->o->trials,
                      .packing = (hy_packing)r->o->packing,
                      .context = job->cfg->training.max_seq_len,
                      .seed = job->seed};
    if (st == VL_OK) {
        log_setup(r);
        st = record_params(r, err);
    }
    if (st == VL_OK && r->o->mode == HY_STATIC)
        st = pick_static(r, first->order, first->batches, err);
    return st;
}

static vl_status hydraulis_plan_batch(void *state, const vl_batch *b, vl_plan *out,
                                      vl_err *err)
{
    return plan_batch(state, b->samples, b->n, b->epoch, out, err);
}

static void hydraulis_close(void *state, bool planned)
{
    if (planned)
        log_summary(state);
    run_free(state);
}

/* ---- limits ---- */

/* Longest sample: the largest MaxLen among the pipelines it may use, within the context
 * length (the runner applies training.oversize beyond it). */
static uint32_t hydraulis_max_len(const void *opts, const vl_config *cfg)
{
    uint32_t best = vl__hy_largest_maxlen(opts, cfg);

    if (best == 0) /* nothing usable: plan() says why */
        return cfg->training.max_seq_len;
    return best < cfg->training.max_seq_len ? best : cfg->training.max_seq_len;
}

static void hydraulis_describe_max_len(const void *opts, const vl_config *cfg, char *buf,
                                       size_t n)
{
    snprintf(buf, n,
             "hydraulis's MaxLen of its largest pipeline scheme, %u; set by "
             "hydraulis.candidates and hydraulis.mode",
             vl__hy_largest_maxlen(opts, cfg));
}

/* A micro-batch holds at most its pipeline's MaxLen tokens (a multiple of HY_ALIGN), or
 * with packing max the context length when that is shorter; its capacity is its tokens
 * rounded up to HY_ALIGN. */
static uint64_t hydraulis_max_cap(const void *opts, const vl_config *cfg)
{
    const hy_opts *o = opts;
    uint64_t best = vl__hy_largest_maxlen(o, cfg);
    uint64_t ctx = ((uint64_t)cfg->training.max_seq_len + HY_ALIGN - 1) / HY_ALIGN * HY_ALIGN;

    if (o->packing == HY_MAXPACK && ctx < best)
        return ctx;
    return best; /* 0, nothing usable: plan() refuses, and verify holds to no bound */
}

static vl_status hydraulis_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    (void)opts; /* training.sp is not used: pipelines are <tp, pp> with sp = 1 */
    if (cfg->cluster.gpus > HY_MAX_GPUS)
        return vl_seterr(err, VL_ECONFIG,
                         "hydraulis: cluster.gpus = %d is past the %d it "
                         "plans: each iteration dispatches every sample over every pipeline "
                         "`trials` times per candidate (Alg. 1) and the proposal DP grows "
                         "with the GPUs squared (the paper plans up to 1024 GPUs); split the "
                         "cluster, or use pack, hbp or chunkflow",
                         cfg->cluster.gpus, HY_MAX_GPUS);
    if (cfg->training.max_seq_len < HY_ALIGN)
        return vl_seterr(err, VL_ECONFIG,
                         "hydraulis: training.max_seq_len must be at least "
                         "%d, got %u",
                         HY_ALIGN, cfg->training.max_seq_len);
    return VL_OK;
}

const vl_strategy vl_strategy_hydraulis = {
    .name = "hydraulis",
    .summary = "Hydraulis: heterogeneous <tp, pp> pipelines chosen per iteration, "
               "dispatch then balanced packing",
    .section = "hydraulis",
    .params = hydraulis_params,
    .opts_size = sizeof(hy_opts),
    .caps = VL_CAP_UNEVEN_MBS | VL_CAP_WORLD_OPTIM,
    .idles = true,
    .max_len = hydraulis_max_len,
    .describe_max_len = hydraulis_describe_max_len,
    .max_cap = hydraulis_max_cap,
    .validate = hydraulis_validate,
    .state_size = sizeof(hy_run),
    .open = hydraulis_open,
    .cover = hydraulis_cover,
    .resolve = hydraulis_resolve,
    .plan_batch = hydraulis_plan_batch,
    .close = hydraulis_close,
    .streams = true,
};
