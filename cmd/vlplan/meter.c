/* cmd/vlplan/meter.c -- the progress meter of long work (cli.h): silent for the first
 * two seconds (VLPLAN_PROGRESS_DELAY), so short runs never flicker, then a count, a share and the time left,
 * drawn on the progress line (a terminal only, never under -q). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define METER_DELAY_S 2.0
#define METER_REDRAW_S 0.25

double cli_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_meter_start(cli_meter *m, const cli_log *l, int64_t total, const char *what)
{
    m->log = l;
    m->total = total;
    snprintf(m->what, sizeof m->what, "%s", what);
    m->t0 = cli_now_s();
    m->drawn = 0;
    m->delay = METER_DELAY_S;
    /* VLPLAN_PROGRESS_DELAY: seconds before the meter shows (0: at once) */
    const char *env = getenv("VLPLAN_PROGRESS_DELAY");
    char *end = NULL;
    double d = env && *env ? strtod(env, &end) : -1.0;
    if (end && *end == '\0' && d >= 0.0 && d <= 3600.0)
        m->delay = d;
}

void cli_meter_step(cli_meter *m, uint64_t done)
{
    double now = cli_now_s(), spent = now - m->t0;

    if (!m->log->tty || m->log->quiet || spent < m->delay || now - m->drawn < METER_REDRAW_S)
        return;
    m->drawn = now;
    if (m->total <= 0 || done == 0 || done > (uint64_t)m->total) {
        cli_progress(m->log, false, "%s: iteration %llu, %.0f s", m->what,
                     (unsigned long long)done, spent);
        return;
    }
    double share = (double)done / (double)m->total;
    double left = spent * (1.0 - share) / share;
    cli_progress(m->log, false, "%s: iteration %llu/%lld (%.0f%%), about %.0f s left", m->what,
                 (unsigned long long)done, (long long)m->total, 100.0 * share, left + 0.5);
}
