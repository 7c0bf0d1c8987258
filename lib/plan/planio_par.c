/* lib/plan/planio_par.c -- reading a plan with several threads (vl_plan_read_each with
 * threads > 1).  Iteration records are independent lines, so worker threads parse them
 * while the reading thread goes on: it reads and hashes every line in order, hands each
 * iteration line to a slot of a ring, and takes the slots back in order -- their
 * messages merged, their iteration swapped into the plan (vl_plan_swap_iters) and
 * visited -- so the visitor, the messages and the result are exactly those of one
 * thread.  Any other line (header, footer, a cut-off last line) waits until every slot
 * before it is taken back and is then read the serial way.
 *
 * A record is parsed knowing its iteration number (messages name it, "it" is checked
 * against it).  The reading thread predicts it by counting iteration lines; only an
 * iteration line that is not valid JSON makes no iteration and breaks the count, and a
 * slot whose prediction turns out wrong is parsed again, serially, with the right one. */
#include "planio_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_PER_THREAD 8

typedef enum { SLOT_FREE, SLOT_QUEUED, SLOT_DONE } slot_state;

typedef struct slot {
    char *line;
    size_t len, cap;
    size_t lineno;
    uint64_t number;    /* predicted iteration number */
    vl_plan plan;       /* the parsed iteration (iters[0]) */
    vl_plan_file *msgs; /* its errors and findings */
    vl_status st;
    vl_err err;
    slot_state state;
} slot;

typedef struct pool {
    vl_reader *r; /* the reading thread's reader */
    slot *ring;
    size_t nslots, head, tail, next; /* take back head, fill tail, parse next */
    uint64_t predicted;              /* iteration number of the next line handed out */
    pthread_t *tid;
    int nthreads, started;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    bool stop;
} pool;

/* ---- a worker ---- */

static void parse_slot(pool *pl, vl_reader *w, vl_idtab *ids, vl_idbatch *batch, slot *s)
{
    memset(s->msgs, 0, sizeof *s->msgs);
    s->msgs->by_vlplan = pl->r->file->by_vlplan; /* what an iteration must hold */
    vl_plan_clear_iters(&s->plan, s->number);
    *w = (vl_reader){.p = &s->plan,
                     .file = s->msgs,
                     .m = pl->r->m,
                     .ids = ids,
                     .name = pl->r->name,
                     .lineno = s->lineno,
                     .it = -1,
                     .rank = -1,
                     .mb = -1,
                     .seg = -1,
                     .have_header = true,
                     .no_fast = pl->r->no_fast,
                     .batch = batch};
    memset(&s->err, 0, sizeof s->err);
    s->st = vl__rd_iter_line(w, s->line, s->len, &s->err);
}

static void *worker(void *arg)
{
    pool *pl = arg;
    vl_reader w;
    vl_idtab *ids = NULL;
    vl_idbatch *batch = pl->r->m ? calloc(1, sizeof *batch) : NULL;
    vl_err err = {0};
    bool no_ids = (!pl->r->m && vl__ids_new(&ids, &err) != VL_OK) || (pl->r->m && !batch);

    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->stop && pl->next == pl->tail)
            pthread_cond_wait(&pl->work, &pl->mu);
        if (pl->stop)
            break;
        slot *s = &pl->ring[pl->next++ % pl->nslots];
        pthread_mutex_unlock(&pl->mu);
        if (no_ids)
            s->st = vl_seterr(&s->err, VL_ENOMEM, "out of memory (id table)");
        else
            parse_slot(pl, &w, ids, batch, s);
        pthread_mutex_lock(&pl->mu);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&pl->done);
    }
    pthread_mutex_unlock(&pl->mu);
    vl__ids_free(ids);
    vl__idbatch_free(batch);
    return NULL;
}

/* ---- the reading thread ---- */

static void merge_msgs(vl_msgs *to, const vl_msgs *from)
{
    for (size_t i = 0; i < from->n && to->n < VL_PLAN_FILE_MSGS; i++)
        memcpy(to->msg[to->n++], from->msg[i], VL_PLAN_MSG_LEN);
    to->total += from->total;
}

static void merge_file(vl_plan_file *to, const vl_plan_file *from)
{
    merge_msgs(&to->errors, &from->errors);
    merge_msgs(&to->findings, &from->findings);
    to->unknown_ids += from->unknown_ids;
    for (int i = 0; i < 5; i++)
        to->by_inv[i] += from->by_inv[i];
}

/* Slot s, parsed: its results become the reader's, then the visit. */
static vl_status take_back(pool *pl, slot *s, vl_err *err)
{
    vl_reader *r = pl->r;
    vl_plan *p = r->p;

    if (s->st != VL_OK) {
        *err = s->err;
        return s->st;
    }
    if (s->number != p->iter_base + p->niters) { /* mispredicted: serially, again */
        size_t lineno = r->lineno;
        vl_status st;
        r->lineno = s->lineno;
        st = vl__rd_iter_line(r, s->line, s->len, err);
        r->lineno = lineno;
        pl->predicted = p->iter_base + p->niters + (pl->tail - pl->head - 1);
        return st == VL_OK ? vl__rd_iteration_done(r, err) : st;
    }
    merge_file(r->file, s->msgs);
    s->plan.iter_base = p->iter_base;
    vl_plan_swap_iters(p, &s->plan);
    return vl__rd_iteration_done(r, err);
}

/* Take back the oldest slot, waiting for it. */
static vl_status take_oldest(pool *pl, vl_err *err)
{
    slot *s = &pl->ring[pl->head % pl->nslots];
    vl_status st;

    pthread_mutex_lock(&pl->mu);
    while (s->state != SLOT_DONE)
        pthread_cond_wait(&pl->done, &pl->mu);
    pthread_mutex_unlock(&pl->mu);
    st = take_back(pl, s, err);
    s->state = SLOT_FREE;
    pl->head++;
    return st;
}

static vl_status drain(pool *pl, vl_err *err)
{
    vl_status st = VL_OK;

    while (pl->head < pl->tail)
        if ((st = take_oldest(pl, err)) != VL_OK)
            return st;
    return st;
}

static vl_status hand_out(pool *pl, const char *line, size_t len, vl_err *err)
{
    slot *s;
    vl_status st;

    if (pl->tail - pl->head == pl->nslots && (st = take_oldest(pl, err)) != VL_OK)
        return st;
    s = &pl->ring[pl->tail % pl->nslots];
    if (s->cap < len) {
        char *nb = realloc(s->line, len);
        if (!nb)
            return vl_seterr(err, VL_ENOMEM, "%s:%zu: out of memory (line of %zu bytes)",
                             pl->r->name, pl->r->lineno, len);
        s->line = nb;
        s->cap = len;
    }
    memcpy(s->line, line, len);
    s->len = len;
    s->lineno = pl->r->lineno;
    s->number = pl->predicted++;
    pthread_mutex_lock(&pl->mu);
    s->state = SLOT_QUEUED;
    pl->tail++;
    pthread_cond_signal(&pl->work);
    pthread_mutex_unlock(&pl->mu);
    return VL_OK;
}

static vl_status read_lines(pool *pl, vl_err *err)
{
    vl_reader *r = pl->r;
    char *line = NULL;
    size_t len = 0;
    bool nl = false, stop = false;
    vl_status st = VL_OK;

    while (!stop && (st = vl__rd_next_line(r, &line, &len, &nl, err)) == VL_OK && line) {
        if (nl && !r->have_footer && vl__rd_is_iter(r, line, len)) {
            vl_sha256_update(&r->sha, line, len);
            vl_sha256_update(&r->sha, "\n", 1);
            st = hand_out(pl, line, len, err);
        } else if ((st = drain(pl, err)) == VL_OK) {
            st = vl__rd_line(r, line, len, nl, &stop, err);
            pl->predicted = r->p->iter_base + r->p->niters;
        }
        if (st != VL_OK)
            return st;
    }
    if (st == VL_OK)
        st = drain(pl, err);
    if (st == VL_OK && !r->have_header)
        return vl_seterr(err, VL_EDATA, "%s: empty plan file (no header)", r->name);
    return st;
}

/* ---- the pool ---- */

static void pool_free(pool *pl)
{
    pthread_mutex_lock(&pl->mu);
    pl->stop = true;
    pthread_cond_broadcast(&pl->work);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < pl->started; i++)
        pthread_join(pl->tid[i], NULL);
    for (size_t i = 0; pl->ring && i < pl->nslots; i++) {
        free(pl->ring[i].line);
        free(pl->ring[i].msgs);
        vl_plan_free(&pl->ring[i].plan);
    }
    free(pl->ring);
    free(pl->tid);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->work);
    pthread_cond_destroy(&pl->done);
}

static vl_status pool_init(pool *pl, vl_reader *r, int threads, vl_err *err)
{
    memset(pl, 0, sizeof *pl);
    pl->r = r;
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->work, NULL);
    pthread_cond_init(&pl->done, NULL);
    pl->nslots = (size_t)threads * SLOTS_PER_THREAD;
    pl->ring = calloc(pl->nslots, sizeof *pl->ring);
    pl->tid = calloc((size_t)threads, sizeof *pl->tid);
    if (!pl->ring || !pl->tid)
        return vl_seterr(err, VL_ENOMEM, "out of memory (reading threads)");
    for (size_t i = 0; i < pl->nslots; i++) {
        vl_plan_init(&pl->ring[i].plan, r->m, "", 0, err);
        if (!(pl->ring[i].msgs = malloc(sizeof *pl->ring[i].msgs)))
            return vl_seterr(err, VL_ENOMEM, "out of memory (reading threads)");
    }
    for (pl->nthreads = threads; pl->started < threads; pl->started++)
        if (pthread_create(&pl->tid[pl->started], NULL, worker, pl) != 0)
            return vl_seterr(err, VL_ENOMEM, "cannot start a reading thread");
    return VL_OK;
}

vl_status vl__rd_lines_par(vl_reader *r, int threads, vl_err *err)
{
    pool pl;
    vl_status st;

    if (r->m && (st = vl_manifest_index(r->m, err)) != VL_OK) /* finds only read now */
        return st;
    st = pool_init(&pl, r, threads, err);
    if (st == VL_OK)
        st = read_lines(&pl, err);
    pool_free(&pl);
    return st;
}
