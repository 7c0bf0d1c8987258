/* lib/config/config_check.c -- what no single key can check: the derived training.dp, degrees
 * against the GPU count and the head counts, a partial cost.fit, the section names.
 * Messages point at where the offending key was last set (file:line:col or --set). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

/* "WHERE: key: msg", WHERE being the overlay that last set `key` (none: a default). */
static vl_status fin_err(const vl_config *cfg, vl_err *err, const char *key, const char *fmt,
                         ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static vl_status fin_err(const vl_config *cfg, vl_err *err, const char *key, const char *fmt,
                         ...)
{
    const vl_config_raw *raw = cfg->raw;
    int ki = vl__key_find(key);
    vl_where w = {0};
    char msg[VL_ERRMSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (raw != NULL && ki >= 0)
        w = raw->where[ki];
    if (w.doc == NULL)
        return vl_seterr(err, VL_ECONFIG, "%s: %s", key, msg);
    if (w.doc->marks && w.line > 0)
        return vl_seterr(err, VL_ECONFIG, "%s:%d:%d: %s: %s", w.doc->name, w.line, w.col, key,
                         msg);
    return vl_seterr(err, VL_ECONFIG, "%s: %s: %s", w.doc->name, key, msg);
}

/* A row asking for the analytic communication where cost.fit turns all of it off
 * (cost.c): the scheme would silently run without any. */
static vl_status check_fit_rows(const vl_config *cfg, vl_err *err)
{
    for (int i = 0; cfg->cost.fit_set && i < cfg->cost.nschemes; i++)
        if (cfg->cost.schemes[i].comm_analytic)
            return fin_err(cfg, err, "cost.schemes",
                           "row %d has comm: analytic, but with "
                           "cost.fit there is no analytic communication to add: give that "
                           "row's whole time or leave cost.fit out",
                           i);
    return VL_OK;
}

/* Some but not all of a, b, c: the fit would silently mean something else. */
static vl_status check_fit(const vl_config *cfg, vl_err *err)
{
    const vl_config_raw *raw = cfg->raw;
    unsigned m = raw != NULL ? raw->fit_mask : (cfg->cost.fit_set ? 7u : 0u);
    char given[16] = "";
    const char *first = NULL;
    static const char *const names[] = {"a", "b", "c"};

    if (m == 0 || m == 7)
        return check_fit_rows(cfg, err);
    for (int i = 0; i < 3; i++)
        if (m & (1u << i)) {
            strcat(given, *given ? ", " : "");
            strcat(given, names[i]);
            if (first == NULL)
                first = i == 0 ? "cost.fit.a" : i == 1 ? "cost.fit.b" : "cost.fit.c";
        }
    return fin_err(cfg, err, first, "expected all of cost.fit.a, b and c, got only %s", given);
}

static vl_status check_model(const vl_config *cfg, vl_err *err)
{
    const vl_model_cfg *m = &cfg->model;

    if (m->heads % m->kv_heads != 0)
        return fin_err(cfg, err, "model.kv_heads",
                       "expected a divisor of model.heads = %d, "
                       "got %d",
                       m->heads, m->kv_heads);
    if (m->moe_experts > 0 && (m->moe_top_k < 1 || m->moe_top_k > m->moe_experts))
        return fin_err(cfg, err, "model.moe.top_k",
                       "expected 1..%d (model.moe.experts), "
                       "got %d",
                       m->moe_experts, m->moe_top_k);
    if (m->moe_experts > 0 && m->moe_ffn < 1)
        return fin_err(cfg, err, "model.moe.ffn",
                       "expected at least 1 with "
                       "model.moe.experts = %d, got %d",
                       m->moe_experts, m->moe_ffn);
    if (m->moe_first_dense > m->layers)
        return fin_err(cfg, err, "model.moe.first_dense",
                       "expected 0..%d (model.layers), "
                       "got %d",
                       m->layers, m->moe_first_dense);
    if (m->mla_kv_lora > 0 && m->mla_qk_nope + m->mla_qk_rope < 1)
        return fin_err(cfg, err, "model.mla.qk_nope",
                       "expected qk_nope + qk_rope >= 1 with "
                       "model.mla.kv_lora = %d, got 0",
                       m->mla_kv_lora);
    if (m->mla_kv_lora > 0 && m->mla_v_head < 1)
        return fin_err(cfg, err, "model.mla.v_head",
                       "expected at least 1 with "
                       "model.mla.kv_lora = %d, got 0",
                       m->mla_kv_lora);
    return VL_OK;
}

static vl_status check_cluster(const vl_config *cfg, vl_err *err)
{
    const vl_cluster_cfg *c = &cfg->cluster;

    if (c->mem_reserve_gib >= c->mem_gib)
        return fin_err(cfg, err, "cluster.mem_reserve_gib",
                       "expected less than "
                       "cluster.mem_gib = %g, got %g",
                       c->mem_gib, c->mem_reserve_gib);
    if (c->gpus > c->gpus_per_node && c->gpus % c->gpus_per_node != 0)
        return fin_err(cfg, err, "cluster.gpus",
                       "expected a multiple of "
                       "cluster.gpus_per_node = %d, got %d",
                       c->gpus_per_node, c->gpus);
    return VL_OK;
}

static vl_status check_degrees(const vl_config *cfg, vl_err *err)
{
    const vl_model_cfg *m = &cfg->model;
    const vl_training_cfg *t = &cfg->training;

    if (m->heads % t->tp != 0)
        return fin_err(cfg, err, "training.tp",
                       "expected a divisor of model.heads = %d, "
                       "got %d",
                       m->heads, t->tp);
    if (t->pp > m->layers)
        return fin_err(cfg, err, "training.pp", "expected 1..%d (model.layers), got %d",
                       m->layers, t->pp);
    if (t->sp_kind != VL_SP_ULYSSES || t->sp == 1)
        return VL_OK;
    /* Ulysses scatters heads: every SP rank needs whole KV heads */
    if (m->kv_heads % t->sp != 0)
        return fin_err(cfg, err, "training.sp",
                       "expected a divisor of model.kv_heads = %d "
                       "for ulysses (or training.sp_kind: ring), got %d",
                       m->kv_heads, t->sp);
    if (m->heads % (t->tp * t->sp) != 0)
        return fin_err(cfg, err, "training.sp",
                       "expected tp * sp to divide model.heads = "
                       "%d for ulysses, got %d * %d",
                       m->heads, t->tp, t->sp);
    return VL_OK;
}

int vl_config_cp_ranks_most(const vl_config *cfg, int sp)
{
    int tp = cfg->training.tp > 1 ? cfg->training.tp : 1, k = 1;
    long long kv = cfg->model.kv_heads, hq = cfg->model.heads / tp;

    if (cfg->training.sp_kind != VL_SP_ULYSSES)
        return INT_MAX;
    if (sp < 1 || kv < 1 || hq < 1 || kv % sp != 0 || hq % sp != 0)
        return 0;
    while (k < (1 << 30) && kv % (2LL * k * sp) == 0 && hq % (2LL * k * sp) == 0)
        k *= 2;
    return k;
}

/* dp = 0 means "whatever is left": gpus / (tp * pp * sp), derived again by every
 * finalize until an overlay gives dp explicitly, so that finalize can be repeated
 * after further --set overrides. */
static vl_status check_dp(vl_config *cfg, vl_err *err)
{
    vl_training_cfg *t = &cfg->training;
    vl_config_raw *raw = vl__raw_get(cfg);
    long long rest = (long long)t->tp * t->pp * t->sp, gpus = cfg->cluster.gpus;
    const char *blame = t->sp > 1 ? "training.sp" : t->pp > 1 ? "training.pp" : "training.tp";

    if (raw == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    if (t->dp == 0 || raw->dp_auto) {
        if (gpus % rest != 0)
            return fin_err(cfg, err, blame,
                           "expected tp * pp * sp to divide cluster.gpus = "
                           "%lld, got %d * %d * %d = %lld",
                           gpus, t->tp, t->pp, t->sp, rest);
        t->dp = (int)(gpus / rest);
        raw->dp_auto = true;
        return VL_OK;
    }
    if (rest * t->dp != gpus)
        return fin_err(cfg, err, "training.dp",
                       "expected dp * tp * pp * sp = cluster.gpus = "
                       "%lld, got %d * %d * %d * %d = %lld",
                       gpus, t->dp, t->tp, t->pp, t->sp, rest * t->dp);
    return VL_OK;
}

static vl_status check_training(vl_config *cfg, vl_err *err)
{
    const vl_training_cfg *t = &cfg->training;
    vl_status st;

    if ((st = check_degrees(cfg, err)) != VL_OK || (st = check_dp(cfg, err)) != VL_OK)
        return st;
    if (t->global_batch == 0 && t->global_tokens == 0)
        return fin_err(cfg, err, "training.global_batch",
                       "expected global_batch or "
                       "global_tokens to be non-zero, got both 0");
    if (t->grad_bytes != 2 && t->grad_bytes != 4)
        return fin_err(cfg, err, "training.grad_bytes", "expected 2 or 4, got %d",
                       t->grad_bytes);
    return VL_OK;
}

vl_status vl_config_finalize(vl_config *cfg, vl_err *err)
{
    const vl_model_cfg *m = &cfg->model;
    const vl_training_cfg *t = &cfg->training;
    vl_status st;

    /* every key has a lower bound of 1 where it matters; zeros mean a struct that never
     * went through vl_config_init_default, and would divide by zero below */
    if (m->layers < 1 || m->heads < 1 || m->kv_heads < 1 || t->tp < 1 || t->pp < 1 ||
        t->sp < 1 || cfg->cluster.gpus < 1 || cfg->cluster.gpus_per_node < 1)
        return vl_seterr(err, VL_EUSAGE, "config not initialised (vl_config_init_default)");
    if ((st = check_fit(cfg, err)) != VL_OK || (st = check_model(cfg, err)) != VL_OK ||
        (st = check_cluster(cfg, err)) != VL_OK)
        return st;
    return check_training(cfg, err);
}

static vl_status unknown_section(const vl_ydoc *doc, const vl_ynode *key,
                                 const char *const *names, size_t n, vl_err *err)
{
    const char *hint = vl__suggest(key->text, names, n);
    vl_vloc loc = {doc, key->text, err};
    char list[400] = "";
    size_t len = 0;

    if (hint != NULL)
        return vl__verr(&loc, key, "unknown section, did you mean '%s'?", hint);
    for (size_t i = 0; i < n && len < sizeof list; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return vl__verr(&loc, key, "unknown section (expected one of %s)", list);
}

vl_status vl_config_check_sections(const vl_config *cfg, const char *const *strategy_sections,
                                   size_t n, vl_err *err)
{
    const vl_config_raw *raw = cfg->raw;
    const char **names;
    size_t nb = 0, nn;
    vl_status st = VL_OK;

    if (raw == NULL)
        return VL_OK;
    while (vl__builtin_sections[nb] != NULL)
        nb++;
    if ((names = malloc((nb + n) * sizeof *names)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    memcpy(names, vl__builtin_sections, nb * sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[nb + i] = strategy_sections[i];
    nn = nb + n;
    for (size_t d = 0; d < raw->ndocs && st == VL_OK; d++) {
        const vl_ynode *root = raw->docs[d]->root;
        for (size_t i = 0; root && root->kind == VL_YMAP && i < root->n && st == VL_OK;
             i += 2) {
            size_t j = 0;
            while (j < nn && strcmp(names[j], root->kids[i]->text) != 0)
                j++;
            if (j == nn)
                st = unknown_section(raw->docs[d], root->kids[i], names, nn, err);
        }
    }
    free(names);
    return st;
}
