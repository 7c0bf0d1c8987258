/* tests/run/test_run_epochs.c -- the runner's epoch loop (lib/run/run_epochs.c): a
 * batch-by-batch strategy's hooks run in order over each epoch's seeded order and global
 * batches, exactly as the sampler makes them; a batch short of ranks stops the run with
 * the strategy's message before any batch is planned; the count a streamed header
 * announces is the plan's. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* What the recording strategy saw. */
typedef struct seen {
    int opens, covers, resolves, closes;
    bool planned;
    uint32_t resolve_epoch;
    size_t batches;
    size_t ranks;         /* what cover asks for */
    const vl_job *job;
} seen;

static seen *g;   /* the state holds a pointer here, set by open */

static vl_status rec_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                          vl_err *err)
{
    (void)opts;
    (void)out;
    (void)err;
    *(seen **)state = g;
    g->opens++;
    g->job = job;
    return VL_OK;
}

static vl_cover rec_cover(const void *state)
{
    seen *s = *(seen *const *)state;

    s->covers++;
    return (vl_cover){.ranks = s->ranks, .piece = 0, .share = 1, .who = "rec: "};
}

static vl_status rec_resolve(void *state, const vl_epoch_cut *first, vl_err *err)
{
    seen *s = *(seen **)state;
    const vl_selection *sel = s->job->sel;
    uint32_t *order = malloc((sel->n + 1) * sizeof *order);

    (void)err;
    cr_assert_not_null(order);
    vl_epoch_order(sel, s->job->seed, 0, order);
    cr_assert_eq(memcmp(order, first->order, sel->n * sizeof *order), 0);
    free(order);
    s->resolves++;
    s->resolve_epoch = first->epoch;
    return VL_OK;
}

/* Every batch is the sampler's: the epoch's order cut by vl_make_batches. */
static vl_status rec_plan_batch(void *state, const vl_batch *b, vl_plan *out, vl_err *err)
{
    seen *s = *(seen **)state;
    const vl_selection *sel = s->job->sel;
    uint32_t *order = malloc((sel->n + 1) * sizeof *order);
    vl_batches cut;

    (void)out;
    cr_assert_not_null(order);
    cr_assert_eq(s->resolves, 1, "resolve runs before the first batch");
    vl_epoch_order(sel, s->job->seed, b->epoch, order);
    cr_assert_eq(vl_make_batches(&cut, order, sel->n, sel->len, &s->job->cfg->training, err),
                 VL_OK);
    cr_assert_lt(b->index, cut.n);
    cr_assert_eq(b->n, cut.start[b->index + 1] - cut.start[b->index]);
    cr_assert_eq(memcmp(b->samples, order + cut.start[b->index], b->n * sizeof *order), 0,
                 "epoch %u batch %zu", b->epoch, b->index);
    vl_batches_free(&cut);
    free(order);
    s->batches++;
    return VL_OK;
}

static void rec_close(void *state, bool planned)
{
    seen *s = *(seen **)state;

    s->closes++;
    s->planned = planned;
}

static const vl_strategy recorder = {
    .name = "rec", .state_size = sizeof(seen *), .open = rec_open, .cover = rec_cover,
    .resolve = rec_resolve, .plan_batch = rec_plan_batch, .close = rec_close,
};

typedef struct world {
    vl_config cfg;
    vl_manifest *m;
    vl_selection sel;
} world;

static void world_init(world *w, size_t n, const char *const *sets)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_err err = {0};

    cr_assert_not_null(len);
    for (size_t i = 0; i < n; i++)
        len[i] = 100 + (uint32_t)(i * 7919 % 4000);
    cr_assert_eq(vl_manifest_from_lengths(&w->m, len, n, &err), VL_OK, "%s", err.msg);
    free(len);
    cr_assert_eq(vl_config_init_default(&w->cfg, &err), VL_OK);
    for (size_t i = 0; sets[i]; i++)
        cr_assert_eq(vl_config_set(&w->cfg, sets[i], &err), VL_OK, "%s: %s", sets[i], err.msg);
    cr_assert_eq(vl_config_finalize(&w->cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_select(&w->sel, w->m, w->cfg.training.max_seq_len, VL_OVERSIZE_ERROR,
                           &err), VL_OK, "%s", err.msg);
}

static void world_free(world *w)
{
    vl_selection_free(&w->sel);
    vl_manifest_free(w->m);
    vl_config_free(&w->cfg);
}

/* The recorder over every epoch under sets; the batches the sampler cuts in total. */
static vl_status record(seen *s, const char *const *sets, size_t ranks, size_t *total,
                        vl_err *err)
{
    world w;
    vl_status st;

    world_init(&w, 3000, sets);
    *s = (seen){.ranks = ranks};
    g = s;
    *total = 0;
    for (int e = 0; e < w.cfg.training.epochs; e++) {
        uint32_t *order = malloc(w.sel.n * sizeof *order);
        vl_batches cut;
        cr_assert_not_null(order);
        vl_epoch_order(&w.sel, 5, (uint32_t)e, order);
        cr_assert_eq(vl_make_batches(&cut, order, w.sel.n, w.sel.len, &w.cfg.training, err),
                     VL_OK);
        *total += cut.n;
        vl_batches_free(&cut);
        free(order);
    }
    vl_job job = {.m = w.m, .cfg = &w.cfg, .sel = &w.sel, .seed = 5};
    st = vl_strategy_plan(&recorder, NULL, &job, NULL, err);
    world_free(&w);
    return st;
}

static void assert_every_batch_once(const char *const *sets)
{
    seen s;
    size_t total;
    vl_err err = {0};

    cr_assert_eq(record(&s, sets, 4, &total, &err), VL_OK, "%s", err.msg);
    cr_assert_gt(total, 2);
    cr_assert_eq(s.batches, total);
    cr_assert_eq(s.opens, 1);
    cr_assert_eq(s.resolves, 1);
    cr_assert_eq(s.resolve_epoch, 0);
    cr_assert_eq(s.covers, 2, "cover is asked once an epoch");
    cr_assert_eq(s.closes, 1);
    cr_assert(s.planned);
}

Test(run_epochs, token_budget_batches_are_the_samplers_each_once)
{
    const char *sets[] = {"training.global_tokens=300000", "training.epochs=2", NULL};
    assert_every_batch_once(sets);
}

Test(run_epochs, sample_count_batches_are_the_samplers_each_once)
{
    const char *sets[] = {"training.global_tokens=0", "training.global_batch=700",
                          "training.epochs=2", NULL};
    assert_every_batch_once(sets);
}

Test(run_epochs, a_batch_short_of_ranks_stops_before_any_is_planned)
{
    const char *sets[] = {"training.global_tokens=0", "training.global_batch=700",
                          "training.epochs=2", NULL};
    seen s;
    size_t total;
    vl_err err = {0};

    cr_assert_eq(record(&s, sets, 701, &total, &err), VL_ECONFIG);
    const char *want = "rec: global batch 0 has 700 samples, fewer than the 701 data-parallel";
    cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    cr_assert_eq(s.batches, 0);
    cr_assert_eq(s.resolves, 0);
    cr_assert_eq(s.closes, 1);
    cr_assert_not(s.planned);
}

/* A sink that keeps what the header announced and counts what arrives. */
typedef struct counted {
    int64_t announced;
    size_t got;
} counted;

static vl_status count_begin(void *ud, const vl_plan *p, int64_t iterations, vl_err *err)
{
    (void)p;
    (void)err;
    ((counted *)ud)->announced = iterations;
    return VL_OK;
}

static vl_status count_iters(void *ud, const vl_plan *p, vl_err *err)
{
    (void)err;
    ((counted *)ud)->got += p->niters;
    return VL_OK;
}

static void assert_announced(const char *strategy, const char *const *sets)
{
    world w;
    counted c = {-1, 0};
    vl_run_sink sink = {count_begin, count_iters, &c};
    vl_run_opts o = {.seed = 9, .allow_oom = true, .sink = &sink};
    vl_plan p;
    vl_err err = {0};

    world_init(&w, 3000, sets);
    cr_assert_eq(vl_run_plan(&p, vl_strategy_find(strategy), w.m, &w.cfg, &o, NULL, &err),
                 VL_OK, "%s", err.msg);
    cr_assert_gt(c.got, 2);
    cr_assert_eq(c.announced, (int64_t)c.got, "%s announced %lld, planned %zu", strategy,
                 (long long)c.announced, c.got);
    vl_plan_free(&p);
    world_free(&w);
}

Test(run_epochs, a_streamed_header_announces_the_plans_count)
{
    const char *tokens[] = {"cluster.gpus=8", "training.dp=8", "training.global_tokens=300000",
                            "training.epochs=2", NULL};
    const char *samples[] = {"cluster.gpus=8", "training.dp=8", "training.global_tokens=0",
                             "training.global_batch=700", "training.epochs=2", NULL};

    assert_announced("random", tokens);
    assert_announced("random", samples);
    assert_announced("skrull", tokens);
}
