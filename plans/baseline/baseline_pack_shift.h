/* plans/baseline/baseline_pack_shift.h -- what the sample shift of `pack` (pack.deal=samples)
 * shares between its state and steps (baseline_pack_shift.c) and its search for the best
 * step (baseline_pack_shift_search.c); the method is described in baseline_pack_shift.c.
 * Not API. */
#ifndef VLPLAN_BASELINE_PACK_SHIFT_H
#define VLPLAN_BASELINE_PACK_SHIFT_H

#include "baseline_pack.h"

#define SHIFT_WORK (1ull << 21)
#define SHIFT_PEERS 8
#define NMEAS 3
#define JOINT 3    /* a target: the larger of a rank's tokens and attention over their means */
#define WIDEN 1e-9 /* a swap's window of keys, widened by this of its magnitudes (rounding) */

typedef struct shift {
    const vl__pk_shift_in *in;
    size_t n, np, dp;
    uint32_t *item;      /* [n] */
    size_t *at;          /* [n] the pack of sample i */
    double *w[NMEAS];    /* [n] linearised time, tokens, attention of sample i */
    double *tok, *time;  /* [np] a pack's tokens and exact modelled time */
    size_t *cnt;         /* [np] */
    int *rank;           /* [np] */
    double *load[NMEAS]; /* [dp] exact time, tokens, attention */
    double max[NMEAS];
    double mean[NMEAS];    /* the ranks' mean load (steps move load, never change it) */
    size_t *mine, *theirs; /* [n] this step's samples of the busiest rank, of peers */
    size_t *ord;           /* [n] the samples by this pass's key, then index */
    size_t *off;           /* [dp + 1] theirs grouped by peer, each group by key */
    double *tkey, *ttok;   /* [n] theirs' keys and tokens, side by side for bisection */
    size_t *slot_of;       /* [dp] a rank's place among the peers, SIZE_MAX if none */
    struct keyed {
        double k;
        size_t i;
    } * keyed;        /* [n] sorting ord by a key */
    uint64_t *packed; /* [n] sorting ord by tokens: len << 32 | index */
    bool by_len;      /* ord is by tokens */
    bool nonneg;      /* every weight >= 0: a sample's own weight bounds a step */
    size_t *slots;    /* [np] this step's packs of peers, grouped by peer (qoff) */
    size_t *qoff;     /* [dp + 1] */
    double *room;     /* [dp] the most room in a pack of the g-th peer (tokens) */
    uint32_t *tmp;    /* [n] a pack's items */
    size_t *peer;     /* [dp] this step's receiving ranks */
    double *full;     /* [dp] their fullness */
    struct roomy {
        double f;
        size_t r;
    } * all; /* [dp] every rank by fullness */
    unsigned hold;
    uint32_t cap, max_items;
    uint64_t work;
    size_t from; /* a search's first peer: those before it were searched, in vain */
} shift;

/* A step: sample i into pack q (j = SIZE_MAX), or i and j swap packs. */
typedef struct step {
    size_t i, j, q;
    double after;
} step;

/* The measure a pass's swaps are searched by: the target, or tokens for the joint one
 * (attention is monotone in a sample's tokens, so both terms are monotone in it). */
static inline int key_of(int t)
{
    return t == JOINT ? 1 : t;
}

/** Rank r's load in target t (a measure, or JOINT). */
double vl__pk_shift_target(const shift *s, int t, size_t r);
/** The best step off the busiest rank h in target t (i = SIZE_MAX: none): among the
 *  SHIFT_PEERS roomiest ranks, else among all. */
step vl__pk_shift_best(shift *s, int t, size_t h);

#endif
