/* tests/sim_fixture.h -- the simulator tests' fixture (test_sim.c, test_sim_lists.c):
 * a llama-8b-like config whose fitted cost is 1 s per token per layer (a = c = 0, b = 1,
 * no communication, backward 2x), and a plan over 256 samples to fill in. */
#ifndef VLPLAN_SIM_FIXTURE_H
#define VLPLAN_SIM_FIXTURE_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "plan.h"
#include "sim.h"

#define EPS 1e-9

typedef struct fx {
    vl_config cfg;
    vl_cost c;
    vl_manifest m;
    uint32_t len[256];
    vl_plan p;
    vl_err err;
    uint32_t next;        /* next unused sample */
} fx;

/* A llama-8b-like shape; the fitted curve replaces its analytic timing. */
static inline void lin_config(vl_config *cfg, int layers)
{
    memset(cfg, 0, sizeof *cfg);
    strcpy(cfg->model.preset, "custom");
    cfg->model.layers = layers;
    cfg->model.hidden = 4096;
    cfg->model.ffn = 14336;
    cfg->model.ffn_mats = 3;
    cfg->model.heads = 32;
    cfg->model.kv_heads = 8;
    cfg->model.head_dim = 128;
    cfg->model.vocab = 128256;
    cfg->cluster.gpus = 8;
    cfg->cluster.gpus_per_node = 8;
    strcpy(cfg->cluster.gpu, "custom");
    cfg->cluster.peak_tflops = 989;
    cfg->cluster.mem_gib = 80;
    cfg->cluster.mem_reserve_gib = 6;
    cfg->cluster.hbm_gbs = 3350;
    vl_curve one = {.n = 1, .x = {1}, .y = {0.5}};
    cfg->cluster.gemm_eff = cfg->cluster.attn_fwd_eff = cfg->cluster.attn_bwd_eff = one;
    cfg->cluster.net = (vl_net_cfg){370, 450, 370, 15, 8, 46, 8, 30, 15};
    cfg->training = (vl_training_cfg){.dp = 1, .tp = 1, .pp = 4, .sp = 1,
                                      .max_seq_len = 8192, .epochs = 1, .zero = VL_ZERO_1,
                                      .act_mem_factor = 1.0, .grad_bytes = 4};
    cfg->cost = (vl_cost_cfg){.fit_set = true, .fit_a = 0, .fit_b = 1, .fit_c = 0,
                              .comm = false, .bwd_linear = 2.0, .bwd_attn = 2.5};
}

static inline void fx_init(fx *f, int layers)
{
    memset(f, 0, sizeof *f);
    lin_config(&f->cfg, layers);
    cr_assert_eq(vl_cost_init(&f->c, &f->cfg, &f->err), VL_OK, "%s", f->err.msg);
    for (size_t i = 0; i < 256; i++)
        f->len[i] = 1000;
    f->m.n = 256;
    f->m.len = f->len;
    f->m.tokens = 256000;
    f->m.loss_tokens = 256000;
    cr_assert_eq(vl_plan_init(&f->p, &f->m, "test", 0, &f->err), VL_OK);
}

/* Append the operations of spec ("F0 F1 R1 B1 B0") to the current rank. */
static inline void fx_ops(fx *f, const char *spec)
{
    for (const char *s = spec; *s; s++) {
        if (*s == ' ')
            continue;
        vl_op_kind k = *s == 'F' ? VL_OP_F : *s == 'R' ? VL_OP_R : VL_OP_B;
        cr_assert_eq(vl_plan_op(&f->p, (uint32_t)strtoul(s + 1, NULL, 10), k, &f->err), VL_OK);
        while (s[1] >= '0' && s[1] <= '9')
            s++;
    }
}

/* A segment of the current pack. */
static inline void fx_seg(fx *f, uint32_t sample, uint32_t off, uint32_t len)
{
    cr_assert_eq(vl_plan_seg(&f->p, sample, off, len, &f->err), VL_OK, "%s", f->err.msg);
}

/* The fixture's manifest cut to the samples the plan uses, their lengths len[]. */
static inline void fx_manifest_of_plan(fx *f)
{
    uint32_t most = 0;

    for (size_t i = 0; i < f->p.nsegs; i++)
        most = f->p.segs[i].sample + 1 > most ? f->p.segs[i].sample + 1 : most;
    f->m.n = most;
    f->m.tokens = 0;
    for (uint32_t s = 0; s < most; s++)
        f->m.tokens += f->len[s];
    f->m.loss_tokens = f->m.tokens;
}

static inline void fx_fini(fx *f)
{
    vl_plan_free(&f->p);
}

#endif
