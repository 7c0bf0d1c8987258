/* tests/config/test_config.c -- lib/config*: defaults, presets, every error class with its
 * exact location, --set, finalize, configs/.  Strategy sections, bind, tables and dumps
 * are in test_config_bind.c. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_fixture.h"
#include "config_impl.h"
#include "testutil.h"

TestSuite(config, .init = setup, .fini = teardown);

/* ---- defaults and presets ---- */

Test(config, builtin_default)
{
    const vl_training_cfg *t = &cfg.training;

    cr_assert_str_eq(cfg.model.preset, "llama3.1-8b");
    cr_assert_eq(cfg.model.layers, 32);
    cr_assert_eq(cfg.model.kv_heads, 8);
    cr_assert_str_eq(cfg.cluster.gpu, "h100-80gb");
    cr_assert_eq(cfg.cluster.gpus, 32);
    cr_assert_eq(cfg.cluster.gpus_per_node, 8);
    cr_assert_float_eq(cfg.cluster.peak_tflops, 989, 1e-9);
    cr_assert_float_eq(cfg.cluster.mem_gib, 80, 1e-9);
    cr_assert_eq(t->dp, 0);
    cr_assert(t->tp == 1 && t->pp == 1 && t->sp == 1);
    cr_assert_eq(t->max_seq_len, 8192);
    cr_assert_eq(t->global_batch, 0);
    cr_assert_eq(t->global_tokens, 2097152);
    cr_assert_eq(t->micro_batch, 1);
    cr_assert_eq(t->oversize, VL_OVERSIZE_ERROR);
    cr_assert_eq(t->seed, 0);
    cr_assert_eq(t->epochs, 1);
    cr_assert_eq(t->zero, VL_ZERO_2);
    cr_assert_eq(t->recompute, VL_RECOMPUTE_AUTO);
    cr_assert_float_eq(t->act_mem_factor, 1.1, 1e-12);
    cr_assert_eq(t->grad_bytes, 4);
    cr_assert_float_eq(t->overlap_cp, 1.0, 1e-12);
    cr_assert_float_eq(t->overlap_tp, 0.0, 1e-12);
    cr_assert_float_eq(t->overlap_dp, 0.8, 1e-12);
    cr_assert(cfg.cost.comm && !cfg.cost.fit_set);
    cr_assert_float_eq(cfg.cost.bwd_linear, 2.0, 1e-12);
    cr_assert_float_eq(cfg.cost.bwd_attn, 2.5, 1e-12);
    cr_assert_eq(cfg.pack.algo, VL_PACK_FFD);
    cr_assert_eq(cfg.pack.isf_iters, 50);
    cr_assert_eq(cfg.pack.isf_slack, 128);
    cr_assert_str_eq(cfg.source, "<built-in>");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(t->dp, 32);
}

Test(config, every_model_preset_loads)
{
    char a[80];

    for (size_t i = 0; vl_model_presets[i] != NULL; i++) {
        snprintf(a, sizeof a, "model.preset=%s", vl_model_presets[i]);
        set_ok(a);
        cr_assert_str_eq(cfg.model.preset, vl_model_presets[i]);
        cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s: %s", a, err.msg);
    }
}

Test(config, model_preset_shapes)
{
    set_ok("model.preset=qwen2.5-0.5b");
    cr_assert(cfg.model.tied_embeddings && cfg.model.head_dim == 64 && cfg.model.heads == 14);
    cr_assert_eq(cfg.model.vocab, 151936);
    set_ok("model.preset=llama3.1-70b");
    cr_assert(cfg.model.layers == 80 && cfg.model.ffn == 28672 && !cfg.model.tied_embeddings);
    set_ok("model.preset=deepseek-v2");
    cr_assert(cfg.model.moe_experts == 160 && cfg.model.moe_top_k == 6);
    cr_assert(cfg.model.mla_kv_lora == 512 && cfg.model.mla_qk_rope == 64);
    /* a preset resets what the previous one set */
    set_ok("model.preset=llama2-7b");
    cr_assert(cfg.model.moe_experts == 0 && cfg.model.mla_kv_lora == 0);
    cr_assert_eq(cfg.model.kv_heads, 32);
}

Test(config, gpu_presets)
{
    set_ok("cluster.gpu=a800-80gb");
    cr_assert_float_eq(cfg.cluster.peak_tflops, 312, 1e-9);
    cr_assert_float_eq(cfg.cluster.net.intra_coll_busbw, 160, 1e-9);
    cr_assert_eq(cfg.cluster.net.inter_nics_per_node, 4);
    cr_assert_eq(cfg.cluster.attn_fwd_eff.n, 6);
    set_ok("cluster.gpu=a100-80gb");
    cr_assert_float_eq(cfg.cluster.gemm_eff.y[4], 0.83, 1e-12);
    set_ok("cluster.gpu=h100-80gb");
    cr_assert_float_eq(cfg.cluster.attn_fwd_eff.y[0], 0.295, 1e-12);
    cr_assert_eq(cfg.cluster.gpus, 32, "a GPU preset leaves the GPU count alone");
    for (size_t i = 0; vl_gpu_presets[i] != NULL; i++) {
        char a[80];
        snprintf(a, sizeof a, "cluster.gpu=%s", vl_gpu_presets[i]);
        set_ok(a);
    }
}

Test(config, explicit_keys_override_presets_in_any_order)
{
    load_ok("model:\n  layers: 40\n  preset: llama2-13b\n"
            "cluster:\n  mem_gib: 40\n  gpu: a100-80gb\n");
    cr_assert_eq(cfg.model.layers, 40);
    cr_assert_eq(cfg.model.heads, 40);
    cr_assert_float_eq(cfg.cluster.mem_gib, 40, 1e-9);
    cr_assert_float_eq(cfg.cluster.peak_tflops, 312, 1e-9);
}

Test(config, custom_preset_keeps_numbers)
{
    load_ok("model: {preset: custom, layers: 2}\ncluster: {gpu: custom, peak_tflops: 100}\n");
    cr_assert_str_eq(cfg.model.preset, "custom");
    cr_assert_eq(cfg.model.hidden, 4096);
    cr_assert_eq(cfg.model.layers, 2);
    cr_assert_float_eq(cfg.cluster.peak_tflops, 100, 1e-9);
}

Test(config, named_and_explicit_curves)
{
    load_ok("cluster:\n  attn_fwd_eff: h100_fa2_causal\n"
            "  gemm_eff: [[256, 0.5], [4096, 0.8]]\n");
    cr_assert_float_eq(cfg.cluster.attn_fwd_eff.y[0], 0.193, 1e-12);
    cr_assert_eq(cfg.cluster.gemm_eff.n, 2);
    cr_assert_float_eq(cfg.cluster.gemm_eff.x[1], 4096, 1e-12);
    load_fails("cluster:\n  gemm_eff: h100_fa3_causal\n", VL_ECONFIG,
               "t.yaml:2:13: cluster.gemm_eff: expected [[tokens, efficiency], ...] or a curve "
               "name (h100_gemm, a100_gemm), got 'h100_fa3_causal'");
    load_fails("cluster:\n  gemm_eff: [[256, 0.5], [128, 0.8]]\n", VL_ECONFIG,
               "t.yaml:2:26: cluster.gemm_eff[1]: expected tokens above 256, got 128");
    load_fails("cluster:\n  gemm_eff: [[256, 1.5]]\n", VL_ECONFIG,
               "t.yaml:2:20: cluster.gemm_eff[0]: expected 1e-06..1, got 1.5");
}

/* ---- error classes, with exact line:col ---- */

Test(config, yaml_syntax_error)
{
    load_fails("model:\n  layers: 32\n bad: [\n", VL_ECONFIG,
               "t.yaml:3:2: YAML syntax error: did not find expected key "
               "(while parsing a block mapping at 1:1)");
    load_fails("training:\n\tpp: 2\n", VL_ECONFIG,
               "t.yaml:2:1: YAML syntax error: found character that cannot start any token "
               "(while scanning for the next token at 2:1)");
}

Test(config, unknown_key_suggests)
{
    load_fails("training:\n  ppp: 2\n", VL_ECONFIG,
               "t.yaml:2:3: training.ppp: unknown key, did you mean 'training.pp'?");
    load_fails("cluster:\n  zero: 3\n", VL_ECONFIG,
               "t.yaml:2:3: cluster.zero: unknown key, did you mean 'training.zero'?");
    load_fails("training:\n  overlp: {cp: 1}\n", VL_ECONFIG,
               "t.yaml:2:3: training.overlp: unknown key, did you mean 'training.overlap'?");
    load_fails("model:\n  flux_capacitor: 1\n", VL_ECONFIG,
               "t.yaml:2:3: model.flux_capacitor: unknown key");
    load_fails("trainig:\n  pp: 2\n", VL_ECONFIG,
               "t.yaml:1:1: trainig: unknown section, did you mean 'training'?");
    load_fails("training.pp: 2\n", VL_ECONFIG,
               "t.yaml:1:1: training.pp: unknown section (nest the keys: training: {pp: ...})");
}

Test(config, wrong_types)
{
    load_fails("training:\n  pp: four\n", VL_ECONFIG,
               "t.yaml:2:7: training.pp: expected an integer, got 'four'");
    load_fails("training:\n  pp: 2.5\n", VL_ECONFIG,
               "t.yaml:2:7: training.pp: expected an integer, got '2.5'");
    load_fails("training:\n  pp: \"4\"\n", VL_ECONFIG,
               "t.yaml:2:7: training.pp: expected an integer, got '\"4\"'");
    load_fails("training:\n  pp: [4]\n", VL_ECONFIG,
               "t.yaml:2:7: training.pp: expected an integer, got a sequence");
    load_fails("cost:\n  comm: maybe\n", VL_ECONFIG,
               "t.yaml:2:9: cost.comm: expected true or false, got 'maybe'");
    load_fails("training:\n  act_mem_factor: lots\n", VL_ECONFIG,
               "t.yaml:2:19: training.act_mem_factor: expected a number, got 'lots'");
    load_fails("training: 3\n", VL_ECONFIG, "t.yaml:1:11: training: expected a mapping, got '3'");
    load_fails("training:\n  pp: \"a\\nb\"\n", VL_ECONFIG,
               "t.yaml:2:7: training.pp: expected an integer, got '\"a?b\"'");
    load_fails("- 1\n", VL_ECONFIG,
               "t.yaml:1:1: (top level): expected a mapping of sections, got a sequence");
}

Test(config, out_of_range)
{
    load_fails("training:\n  pp: 0\n", VL_ECONFIG,
               "t.yaml:2:7: training.pp: expected 1..1024, got 0");
    load_fails("training:\n  overlap:\n    dp: 1.5\n", VL_ECONFIG,
               "t.yaml:3:9: training.overlap.dp: expected 0..1, got 1.5");
    load_fails("training:\n  max_seq_len: -1\n", VL_ECONFIG,
               "t.yaml:2:16: training.max_seq_len: expected 1..4294967295, got -1");
    load_fails("training:\n  tp: 99999999999999999999\n", VL_ECONFIG,
               "t.yaml:2:7: training.tp: expected 1..1024, got 99999999999999999999");
}

Test(config, duplicate_key)
{
    load_fails("training:\n  pp: 2\n  pp: 4\n", VL_ECONFIG,
               "t.yaml:3:3: training.pp: duplicate key (first at 2:3)");
    load_fails("model: {}\nhbp: {a: 1}\nmodel: {}\n", VL_ECONFIG,
               "t.yaml:3:1: model: duplicate key (first at 1:1)");
}

Test(config, unknown_preset_and_enum)
{
    load_fails("model:\n  preset: gpt-5\n", VL_ECONFIG,
               "t.yaml:2:11: model.preset: expected one of llama3.1-8b, llama3.1-70b, "
               "qwen2.5-0.5b, qwen2.5-7b, qwen2.5-14b, qwen2.5-32b, qwen2.5-72b, llama2-7b, "
               "llama2-13b, deepseek-v2, custom, got 'gpt-5'");
    load_fails("cluster:\n  gpu: h200\n", VL_ECONFIG,
               "t.yaml:2:8: cluster.gpu: expected one of h100-80gb, a100-80gb, a800-80gb, "
               "h800-80gb, custom, got 'h200'");
    load_fails("training:\n  recompute: partial\n", VL_ECONFIG,
               "t.yaml:2:14: training.recompute: expected one of none, selective, full, auto, "
               "got 'partial'");
    load_fails("pack:\n  algo: worst\n", VL_ECONFIG,
               "t.yaml:2:9: pack.algo: expected one of ffd, bfd, ffs, bfs, isf, spfhp, wfd, "
               "nf, got 'worst'");
}

Test(config, missing_file)
{
    cr_assert_eq(vl_config_load_file(&cfg, "no/such/config.yaml", &err), VL_ENOINPUT);
    cr_assert_str_eq(err.msg, "cannot open 'no/such/config.yaml': No such file or directory");
}

Test(config, load_file_sets_source)
{
    char *dir = tu_tmpdir(), *path = tu_path(dir, "c.yaml");

    cr_assert_eq(tu_write_file(path, "training:\n  pp: 2\n  sp: 0\n"), 0);
    cr_assert_eq(vl_config_load_file(&cfg, path, &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, ":3:7: training.sp: expected 1..1024, got 0") != NULL, "%s",
              err.msg);
    cr_assert(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    cr_assert_eq(tu_write_file(path, "training:\n  pp: 2\n"), 0);
    cr_assert_eq(vl_config_load_file(&cfg, path, &err), VL_OK, "%s", err.msg);
    cr_assert_str_eq(cfg.source, path);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

Test(config, alias_expansion_is_bounded)
{
    const char *laughs = "a: &a [1,1,1,1,1,1,1,1,1,1]\n"
                         "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                         "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                         "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                         "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                         "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                         "g: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n";

    load_fails(laughs, VL_ECONFIG, "t.yaml:5:20: more than 65536 nodes (alias expansion?)");
    load_fails("x: *nope\n", VL_ECONFIG, "t.yaml:1:4: undefined alias '*nope'");
    /* small aliases work: one curve shared by both directions */
    load_ok("cluster:\n  attn_fwd_eff: &c [[512, 0.3], [8192, 0.6]]\n  attn_bwd_eff: *c\n");
    cr_assert_float_eq(cfg.cluster.attn_bwd_eff.y[1], 0.6, 1e-12);
}

Test(config, nesting_is_bounded)
{
    char deep[200];

    memset(deep, '[', 100);
    memset(deep + 100, ']', 99);
    deep[199] = '\0';
    deep[0] = 'x';
    deep[1] = ':';
    deep[2] = ' ';
    cr_assert_eq(vl_config_load_string(&cfg, deep, "t.yaml", &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "nesting deeper than 64 levels") != NULL, "%s", err.msg);
}

Test(config, failed_overlay_changes_nothing)
{
    load_fails("training:\n  tp: 2\n  pp: 0\n", VL_ECONFIG,
               "t.yaml:3:7: training.pp: expected 1..1024, got 0");
    cr_assert_eq(cfg.training.tp, 1);
    load_fails("model: {preset: llama2-7b}\nbogus: [1]\n", VL_ECONFIG,
               "t.yaml:2:8: bogus: expected a mapping, got a sequence");
    cr_assert_str_eq(cfg.model.preset, "llama3.1-8b");
}

Test(config, empty_documents_are_fine)
{
    load_ok("");
    load_ok("# only a comment\n");
    load_ok("model:\n  moe:\n");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
}

/* ---- --set ---- */

Test(config, set_overrides)
{
    set_ok("training.pp=4");
    cr_assert_eq(cfg.training.pp, 4);
    set_ok("training.overlap.tp=0.5");
    cr_assert_float_eq(cfg.training.overlap_tp, 0.5, 1e-12);
    set_ok("cluster.gemm_eff=[[128, 0.3], [2048, 0.7]]");
    cr_assert_eq(cfg.cluster.gemm_eff.n, 2);
    set_ok("training.recompute=full");
    cr_assert_eq(cfg.training.recompute, VL_RECOMPUTE_FULL);
    set_ok("cost.comm=off");
    cr_assert(!cfg.cost.comm);
    set_ok("training={tp: 2, pp: 2}");
    cr_assert(cfg.training.tp == 2 && cfg.training.pp == 2);
    set_ok("training.seed=9007199254740991");
    cr_assert_eq(cfg.training.seed, 9007199254740991ULL);
}

Test(config, set_errors_name_the_assignment)
{
    set_fails("training.pp=x", "--set training.pp=x: training.pp: expected an integer, got 'x'");
    set_fails("training.pp=0", "--set training.pp=0: training.pp: expected 1..1024, got 0");
    set_fails("training.ppp=2",
              "--set training.ppp=2: training.ppp: unknown key, did you mean 'training.pp'?");
    set_fails("training.pp", "--set training.pp: expected KEY=VALUE with KEY like training.pp");
    set_fails("training..pp=1",
              "--set training..pp=1: expected KEY=VALUE with KEY like training.pp");
    set_fails("training.pp=", "--set training.pp=: training.pp: expected an integer, got ''");
    set_fails("training.pp=[",
              "--set training.pp=[: YAML syntax error: did not find expected node content "
              "(while parsing a flow node at 2:1)");
    set_fails("training.seed=9007199254740992",
              "--set training.seed=9007199254740992: training.seed: expected "
              "0..9007199254740991, got 9007199254740992");
}

Test(config, fit_needs_all_three)
{
    set_ok("cost.fit.a=0");
    set_ok("cost.fit.b=1");
    cr_assert(!cfg.cost.fit_set);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set cost.fit.a=0: cost.fit.a: expected all of cost.fit.a, b "
                              "and c, got only a, b");
    set_ok("cost.fit.c=0");
    cr_assert(cfg.cost.fit_set);
    cr_assert_float_eq(cfg.cost.fit_b, 1, 1e-12);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    set_ok("cost.fit=null");
    cr_assert(!cfg.cost.fit_set);
    load_ok("cost:\n  fit: {a: 1e-12, b: 2e-9, c: 1e-5}\n");
    cr_assert(cfg.cost.fit_set);
    cr_assert_float_eq(cfg.cost.fit_a, 1e-12, 1e-24);
}

/* ---- finalize ---- */

Test(config, finalize_derives_and_checks_dp)
{
    set_ok("training.tp=2");
    set_ok("training.pp=2");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(cfg.training.dp, 8);
    load_ok("training:\n  dp: 3\n");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:2:7: training.dp: expected dp * tp * pp * sp = "
                              "cluster.gpus = 32, got 3 * 2 * 2 * 1 = 12");
}

Test(config, finalize_can_be_repeated)
{
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK);
    cr_assert_eq(cfg.training.dp, 32);
    set_ok("training.sp=8");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(cfg.training.dp, 4, "a derived dp is derived again");
    set_ok("training.dp=2");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG, "an explicit dp is checked");
    set_ok("training.pp=2");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(cfg.training.dp, 2);
}

Test(config, finalize_degree_errors)
{
    load_ok("training:\n  dp: 0\n  pp: 3\n");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:3:7: training.pp: expected tp * pp * sp to divide "
                              "cluster.gpus = 32, got 1 * 3 * 1 = 3");
    vl_config_free(&cfg);
    setup();
    load_ok("training:\n  sp: 16\n");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:2:7: training.sp: expected a divisor of "
                              "model.kv_heads = 8 for ulysses (or training.sp_kind: ring), got 16");
    set_ok("training.sp_kind=ring");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(cfg.training.dp, 2);
    set_ok("training.tp=3");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set training.tp=3: training.tp: expected a divisor of "
                              "model.heads = 32, got 3");
}

Test(config, finalize_other_checks)
{
    set_ok("model.kv_heads=5");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set model.kv_heads=5: model.kv_heads: expected a divisor of "
                              "model.heads = 32, got 5");
    set_ok("model.kv_heads=8");
    set_ok("training.pp=64");
    set_ok("cluster.gpus=64");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set training.pp=64: training.pp: expected 1..32 "
                              "(model.layers), got 64");
    set_ok("training.pp=1");
    set_ok("cluster.gpus=12");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set cluster.gpus=12: cluster.gpus: expected a multiple of "
                              "cluster.gpus_per_node = 8, got 12");
    set_ok("cluster.gpus=4");
    set_ok("cluster.mem_reserve_gib=80");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set cluster.mem_reserve_gib=80: cluster.mem_reserve_gib: "
                              "expected less than cluster.mem_gib = 80, got 80");
    set_ok("cluster.mem_reserve_gib=6");
    set_ok("training.grad_bytes=3");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set training.grad_bytes=3: training.grad_bytes: expected 2 "
                              "or 4, got 3");
}

Test(config, global_batch_or_tokens)
{
    set_ok("training.global_tokens=1048576");
    cr_assert_eq(cfg.training.global_batch, 0, "one alternative clears the other");
    set_ok("training.global_batch=64");
    cr_assert_eq(cfg.training.global_tokens, 0);
    set_ok("training.global_batch=0");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set training.global_batch=0: training.global_batch: expected "
                              "global_batch or global_tokens to be non-zero, got both 0");
    load_fails("training:\n  global_batch: 8\n  global_tokens: 4096\n", VL_ECONFIG,
               "t.yaml:3:18: training.global_tokens: expected 0 beside a non-zero "
               "training.global_batch (give one of the two), got 4096");
}

/* ---- shipped files ---- */

Test(config, every_shipped_config_loads_and_finalizes)
{
    DIR *d = opendir("configs");
    struct dirent *e;
    int n = 0;

    cr_assert_not_null(d, "run the tests from the repository root");
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char path[300];
        vl_config c;
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        snprintf(path, sizeof path, "configs/%s", e->d_name);
        cr_assert_eq(vl_config_init_default(&c, &err), VL_OK);
        cr_assert_eq(vl_config_load_file(&c, path, &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_config_finalize(&c, &err), VL_OK, "%s", err.msg);
        assert_round_trip(&c);
        vl_config_free(&c);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 5);
}

Test(config, default_yaml_is_the_builtin_default)
{
    char *a = NULL, *b = NULL;
    vl_config c;

    cr_assert_eq(vl_config_init_default(&c, &err), VL_OK);
    cr_assert_eq(vl_config_load_file(&c, "configs/default.yaml", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&c, &err), VL_OK);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_dump_json(&c, &a, &err), VL_OK);
    cr_assert_eq(vl_config_dump_json(&cfg, &b, &err), VL_OK);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    vl_config_free(&c);
}

Test(config, every_key_is_documented)
{
    char *man = tu_read_file("man/config-section.mdoc", NULL);
    char want[VL_PATH_MAX + 8];

    cr_assert_not_null(man, "man/config-section.mdoc (run from the repository root)");
    for (size_t i = 0; vl__keys[i].path != NULL; i++) {
        snprintf(want, sizeof want, "Cm %s", vl__keys[i].path);
        cr_assert(strstr(man, want) != NULL, "%s is not documented", vl__keys[i].path);
    }
    for (size_t i = 0; vl_model_presets[i] != NULL; i++)
        cr_assert(strstr(man, vl_model_presets[i]) != NULL, "%s", vl_model_presets[i]);
    for (size_t i = 0; vl_gpu_presets[i] != NULL; i++)
        cr_assert(strstr(man, vl_gpu_presets[i]) != NULL, "%s", vl_gpu_presets[i]);
    free(man);
}
