/* lib/data/gen.c -- sample lengths from the distributions of gen.h.
 *
 * Every kind is an inverse-CDF draw from lib/rng (the truncated lognormal redraws
 * values out of its range).  exp, log and the inverse normal CDF are computed here
 * from +, -, *, /, sqrt, floor, frexp and ldexp, which IEEE 754 defines exactly, so a
 * seed gives the same lengths on every platform (libm's exp and log are only
 * faithfully rounded and may differ in the last bit between systems; one bit is
 * enough to move a length across a rounding boundary).  The build uses
 * -ffp-contract=off so that no fused multiply-add changes the rounding either. */
#include "gen.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_tables.h"
#include "manifest.h"
#include "rng.h"

/* ln 2 split so that k * LN2_HI is exact for |k| < 2^11 (fdlibm's constants). */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00
#define SQRT1_2 0.70710678118654752440

/* Redraws allowed for a truncated lognormal before it falls back to clipping; the
 * built-in use keeps ~95% of its mass in range, so this only bounds a pathology. */
#define TRUNC_TRIES 1000

/* e^x.  Range reduction x = k ln2 + r, |r| <= ln2 / 2, then the Taylor polynomial
 * to r^15 (remainder < 1e-20) by Horner.  Saturates instead of overflowing: every
 * caller clips to a length anyway. */
static double det_exp(double x)
{
    static const double inv_fact[15] = {1.0,
                                        0.5,
                                        0.16666666666666666,
                                        0.041666666666666664,
                                        0.008333333333333333,
                                        0.001388888888888889,
                                        0.0001984126984126984,
                                        2.48015873015873e-05,
                                        2.7557319223985893e-06,
                                        2.755731922398589e-07,
                                        2.505210838544172e-08,
                                        2.08767569878681e-09,
                                        1.6059043836821613e-10,
                                        1.1470745597729725e-11,
                                        7.647163731819816e-13}; /* 1/1! .. 1/15! */

    if (x > 709.0)
        return DBL_MAX;
    if (x < -708.0)
        return 0.0;
    double k = floor(x * INV_LN2 + 0.5);
    double r = (x - k * LN2_HI) - k * LN2_LO;
    double p = inv_fact[14];
    for (int i = 13; i >= 0; i--)
        p = p * r + inv_fact[i];
    return ldexp(1.0 + r * p, (int)k);
}

/* ln x for finite x > 0.  x = m 2^e with m in [sqrt(1/2), sqrt(2)), then the atanh
 * series ln m = 2 s (1 + s^2/3 + s^4/5 + ...), s = (m-1)/(m+1), s^2 < 0.0295, to
 * s^26 (remainder < 1e-21) by Horner. */
static double det_log(double x)
{
    static const double inv_odd[13] = {1.0,
                                       0.3333333333333333,
                                       0.2,
                                       0.14285714285714285,
                                       0.1111111111111111,
                                       0.09090909090909091,
                                       0.07692307692307693,
                                       0.06666666666666667,
                                       0.058823529411764705,
                                       0.05263157894736842,
                                       0.047619047619047616,
                                       0.043478260869565216,
                                       0.04}; /* 1/1, 1/3, .., 1/25 */
    int e;
    double m = frexp(x, &e);

    if (m < SQRT1_2) {
        m *= 2.0;
        e--;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, p = inv_odd[12];
    for (int k = 11; k >= 0; k--)
        p = p * s2 + inv_odd[k];
    return 2.0 * s * p + (e * LN2_LO + e * LN2_HI);
}

/* Standard normal quantile for p in (0, 1): Acklam's rational approximation,
 * relative error below 1.2e-9, ample for token lengths. */
static double inv_norm(double p)
{
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01,
                                2.445134137142996e+00, 3.754408661907416e+00};
    const double plow = 0.02425;

    if (p < plow || p > 1.0 - plow) {
        double q = sqrt(-2.0 * det_log(p < plow ? p : 1.0 - p));
        double z = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
                   ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        return p < plow ? z : -z;
    }
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

/* Uniform in (0, 1): vl_rng_unit can return 0, whose normal quantile is -inf. */
static double unit_open(vl_rng *r)
{
    double u;

    do
        u = vl_rng_unit(r);
    while (u <= 0.0);
    return u;
}

/* x rounded to the nearest integer and clipped to [lo, hi]; NaN cannot occur. */
static uint32_t round_clip(double x, uint32_t lo, uint32_t hi)
{
    double y = floor(x + 0.5);

    if (y <= (double)lo)
        return lo;
    if (y >= (double)hi)
        return hi;
    return (uint32_t)y;
}

static uint32_t draw_uniform(vl_rng *r, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)vl_rng_below(r, (uint64_t)hi - lo + 1);
}

/* Log-uniform integer on [lo, hi]: floor of lo * ((hi+1)/lo)^v, density ~ 1/x, the
 * shape of a decaying tail; clipped because rounding may land one past hi. */
static uint32_t draw_loguniform(vl_rng *r, uint32_t lo, uint32_t hi)
{
    double span = det_log(((double)hi + 1.0) / lo);
    double x = floor(lo * det_exp(vl_rng_unit(r) * span));

    return x >= (double)hi ? hi : (x <= (double)lo ? lo : (uint32_t)x);
}

static double lognormal(vl_rng *r, double mu, double sigma)
{
    return det_exp(mu + sigma * inv_norm(unit_open(r)));
}

static uint32_t draw_lognormal_trunc(const vl_gen_dist *d, vl_rng *r)
{
    for (int t = 0; t < TRUNC_TRIES; t++) {
        double y = floor(lognormal(r, d->mu, d->sigma) + 0.5);
        if (y >= (double)d->lo && y <= (double)d->hi)
            return (uint32_t)y;
    }
    return round_clip(lognormal(r, d->mu, d->sigma), d->lo, d->hi);
}

/* Published buckets.  The papers give no shape inside a bucket.  In the first one,
 * [1, 1K), lengths are uniform: a log-uniform draw from 1 token would put half of
 * them under 32 tokens.  Above 1K every table thins out with length, which the
 * log-uniform density (~ 1/x) follows. */
static uint32_t draw_buckets(const vl_gen_dist *d, vl_rng *r)
{
    double u = vl_rng_unit(r);
    size_t j = 0;

    while (j + 1 < d->n && u >= d->p[j])
        j++;
    if (j == 0)
        return draw_uniform(r, d->x[0], d->x[1] - 1);
    return draw_loguniform(r, d->x[j], d->x[j + 1] - 1);
}

/* Empirical quantiles x[0..n] at probabilities k/n, linear in between. */
static uint32_t draw_quantiles(const vl_gen_dist *d, vl_rng *r)
{
    double pos = vl_rng_unit(r) * (double)d->n;
    size_t i = (size_t)pos;

    if (i >= d->n)
        i = d->n - 1;
    double lo = d->x[i], hi = d->x[i + 1];
    return round_clip(lo + (pos - (double)i) * (hi - lo), d->x[i], d->x[i + 1]);
}

/* Exact histogram: a uniform rank among all counted samples, then its bin. */
static uint32_t draw_histogram(const vl_gen_dist *d, vl_rng *r)
{
    uint64_t k = vl_rng_below(r, d->c[d->n - 1]);
    size_t lo = 0, hi = d->n - 1;

    while (lo < hi) { /* first bin whose cumulative count exceeds k */
        size_t mid = lo + (hi - lo) / 2;
        if (k < d->c[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return d->x[lo];
}

static uint32_t draw(const vl_gen_dist *d, vl_rng *r);

static uint32_t draw_mixture(const vl_gen_dist *d, vl_rng *r)
{
    double u = vl_rng_unit(r);
    size_t j = 0;

    while (j + 1 < d->n && u >= d->p[j])
        j++;
    return draw(d->parts[j], r);
}

static uint32_t draw(const vl_gen_dist *d, vl_rng *r)
{
    switch (d->kind) {
    case VL_GEN_BUCKETS: return draw_buckets(d, r);
    case VL_GEN_QUANTILES: return draw_quantiles(d, r);
    case VL_GEN_HISTOGRAM: return draw_histogram(d, r);
    case VL_GEN_MIXTURE: return draw_mixture(d, r);
    case VL_GEN_LOGNORMAL_TRUNC: return draw_lognormal_trunc(d, r);
    case VL_GEN_LOGNORMAL_CLIP: return round_clip(lognormal(r, d->mu, d->sigma), d->lo, d->hi);
    case VL_GEN_LOGUNIFORM: return draw_loguniform(r, d->lo, d->hi);
    case VL_GEN_UNIFORM: return draw_uniform(r, d->lo, d->hi);
    }
    return d->lo; /* unreachable: every kind is handled above */
}

/* ---- names and arguments ---- */

/* A length argument at *s ending at `stop`: decimal digits only, 1..VL_MAX_SAMPLE_LEN.
 * On success *s moves past the stop character. */
static int parse_len(const char **s, char stop, uint32_t *out)
{
    char *end;

    if (**s < '0' || **s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(*s, &end, 10);
    if (errno != 0 || *end != stop || v < 1 || v > VL_MAX_SAMPLE_LEN)
        return -1;
    *out = (uint32_t)v;
    *s = end + (stop != '\0');
    return 0;
}

/* A real argument at *s ending at `stop`, finite and within [lo, hi]. */
static int parse_real(const char **s, char stop, double lo, double hi, double *out)
{
    char *end;

    if (**s == '\0' || strchr("+-.0123456789", **s) == NULL)
        return -1;
    errno = 0;
    double v = strtod(*s, &end);
    if (errno != 0 || *end != stop || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    *s = end + (stop != '\0');
    return 0;
}

/* Parsers of the parametric arguments (after "name:"): 0, or -1 when malformed. */
static int parse_fixed(const char *s, vl_gen_dist *d)
{
    d->kind = VL_GEN_UNIFORM;
    if (parse_len(&s, '\0', &d->lo) != 0)
        return -1;
    d->hi = d->lo;
    return 0;
}

static int parse_uniform(const char *s, vl_gen_dist *d)
{
    d->kind = VL_GEN_UNIFORM;
    if (parse_len(&s, ':', &d->lo) != 0 || parse_len(&s, '\0', &d->hi) != 0)
        return -1;
    return d->lo <= d->hi ? 0 : -1;
}

/* MU and SIGMA are bounded only to keep exp() meaningful; lengths are clipped. */
static int parse_lognormal(const char *s, vl_gen_dist *d)
{
    d->kind = VL_GEN_LOGNORMAL_CLIP;
    d->lo = 1;
    d->hi = VL_MAX_SAMPLE_LEN;
    if (parse_real(&s, ':', -100.0, 100.0, &d->mu) != 0)
        return -1;
    return parse_real(&s, '\0', 0.0, 100.0, &d->sigma);
}

static const struct {
    const char *name, *summary;
    const char *prefix; /* up to and including the first ':' */
    int (*parse)(const char *args, vl_gen_dist *d);
    const char *expect; /* for the error message */
} templates[] = {
    {"fixed:N", "every sample has N tokens", "fixed:", parse_fixed,
     "fixed:N with N in 1..2147483647"},
    {"uniform:MIN:MAX", "integers uniform on [MIN, MAX]", "uniform:", parse_uniform,
     "uniform:MIN:MAX with 1 <= MIN <= MAX <= 2147483647"},
    {"lognormal:MU:SIGMA", "round(exp(N(MU, SIGMA))), clipped to [1, 2^31-1]", "lognormal:",
     parse_lognormal, "lognormal:MU:SIGMA with MU in [-100, 100], SIGMA in [0, 100]"},
};
#define NTEMPLATES (sizeof templates / sizeof templates[0])

size_t vl_gen_count(void)
{
    return vl_gen_ntables + NTEMPLATES;
}

const char *vl_gen_name(size_t i)
{
    if (i < vl_gen_ntables)
        return vl_gen_tables[i].name;
    i -= vl_gen_ntables;
    return i < NTEMPLATES ? templates[i].name : NULL;
}

const char *vl_gen_summary(size_t i)
{
    if (i < vl_gen_ntables)
        return vl_gen_tables[i].summary;
    i -= vl_gen_ntables;
    return i < NTEMPLATES ? templates[i].summary : NULL;
}

static vl_status unknown(vl_err *err, const char *dist)
{
    char list[VL_ERRMSG_MAX];
    size_t len = 0;

    list[0] = '\0';
    for (size_t i = 0; i < vl_gen_count() && len < sizeof list; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", vl_gen_name(i));
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return vl_seterr(err, VL_EUSAGE, "unknown distribution '%s' (known: %s)", dist, list);
}

/* The distribution named dist: a table, or a parametric one built in *tmp. */
static vl_status resolve(const char *dist, vl_gen_dist *tmp, const vl_gen_dist **out,
                         vl_err *err)
{
    for (size_t i = 0; i < vl_gen_ntables; i++) {
        if (strcmp(dist, vl_gen_tables[i].name) == 0) {
            *out = &vl_gen_tables[i];
            return VL_OK;
        }
    }
    for (size_t i = 0; i < NTEMPLATES; i++) {
        size_t plen = strlen(templates[i].prefix);
        if (strncmp(dist, templates[i].prefix, plen) != 0)
            continue;
        memset(tmp, 0, sizeof *tmp);
        tmp->name = dist;
        if (templates[i].parse(dist + plen, tmp) != 0)
            return vl_seterr(err, VL_EUSAGE, "distribution '%s': expected %s", dist,
                             templates[i].expect);
        *out = tmp;
        return VL_OK;
    }
    return unknown(err, dist);
}

/* FNV-1a of the name: mixed into the stream so that two distributions drawn with one
 * seed (say, shards concatenated into a mixed manifest) are independent, not the
 * same uniforms pushed through two tables. */
static uint64_t name_hash(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

vl_status vl_gen_lengths(uint32_t *out, size_t n, const char *dist, uint64_t seed, vl_err *err)
{
    vl_gen_dist tmp;
    const vl_gen_dist *d = NULL;
    vl_rng r;

    if (dist == NULL)
        return vl_seterr(err, VL_EUSAGE, "no distribution given");
    if (out == NULL && n > 0)
        return vl_seterr(err, VL_EUSAGE, "no output array for %zu lengths", n);
    vl_status st = resolve(dist, &tmp, &d, err);
    if (st != VL_OK)
        return st;
    vl_rng_seed(&r, seed, VL_GEN_STREAM ^ name_hash(dist));
    for (size_t i = 0; i < n; i++)
        out[i] = draw(d, &r);
    return VL_OK;
}
