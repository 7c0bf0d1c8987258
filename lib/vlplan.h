/* lib/vlplan.h -- the library's face: the one header a program or a binding includes
 * (the command line, cmd/vlplan, is one such program).  Every call returns a vl_status
 * and fills a vl_err with one line of message; the library never prints or exits.
 *
 *   load      vl_manifest_read (manifest.h); vl_config_init_default, vl_config_load_file,
 *             vl_config_set, vl_config_finalize (config.h); vl_cost_init (cost.h)
 *   plan      vl_strategy_find, then vl_run_plan (run.h): bound, planned, every iteration
 *             verified before it is handed over
 *   write     vl_plan_write_file, or vl_plan_writer_* an iteration at a time (planio.h)
 *   read      vl_plan_read, or vl_plan_read_each an iteration at a time (planio.h)
 *   verify    vl_plan_verify, vl_plan_verify_read, vl_verifier_* (verify.h), with the
 *             registry's rules, &vl_registry_rules
 *   evaluate  vl_eval_plan, vl_eval_file, vl_eval_acc_* (eval.h): balance metrics
 *             (metrics.h) and the simulated step time (sim.h)
 *   tools     synthetic lengths (gen.h), length statistics (stats.h), calibration of the
 *             cost model (calibrate.h), the pipeline chart (svg.h), the sampler
 *             (sampler.h)
 *
 * A strategy is written against vlplan_strategy.h (lib/run), which this includes. */
#ifndef VLPLAN_H
#define VLPLAN_H

#include "calibrate.h"
#include "config.h"
#include "cost.h"
#include "err.h"
#include "eval.h"
#include "gen.h"
#include "manifest.h"
#include "metrics.h"
#include "plan.h"
#include "plan_file.h"
#include "planio.h"
#include "run.h"
#include "sampler.h"
#include "sim.h"
#include "stats.h"
#include "svg.h"
#include "verify.h"
#include "vlplan_strategy.h"

#endif
