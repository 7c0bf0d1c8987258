/* plans/registry.c -- the list of strategies (plans/strategies.def), lookups, and the
 * verifier's rules source over them (vl_registry_rules). */
#include <string.h>

#include "vlplan_strategy.h"

#define VL_STRATEGY(id) extern const vl_strategy vl_strategy_##id;
#include "strategies.def"
#undef VL_STRATEGY

static const vl_strategy *const registry[] = {
#define VL_STRATEGY(id) &vl_strategy_##id,
#include "strategies.def"
#undef VL_STRATEGY
};

size_t vl_strategy_count(void)
{
    return sizeof registry / sizeof registry[0];
}

const vl_strategy *vl_strategy_at(size_t i)
{
    return i < vl_strategy_count() ? registry[i] : NULL;
}

const vl_strategy *vl_strategy_find(const char *name)
{
    for (size_t i = 0; i < vl_strategy_count(); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

/* The verifier's rules for the strategy a plan names: its own, or the strictest the
 * registered ones agree on for a name the registry does not have. */
static vl_status registry_fill(void *ctx, const char *name, const vl_config *cfg,
                               vl_verify_rules *out, vl_err *err)
{
    const vl_strategy *s = vl_strategy_find(name);

    (void)ctx;
    if (s)
        return vl_strategy_rules(s, cfg, out, err);
    return vl_strategy_rules_strictest(registry, vl_strategy_count(), cfg, out, err);
}

const vl_rules_source vl_registry_rules = {registry_fill, NULL};
