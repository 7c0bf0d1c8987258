#!/usr/bin/env python3
"""tools/gen_tables.py -- write lib/data/gen_tables.c, the length tables behind `vlplan gen`.

vlplan runs from the repository and must not read ../shared at run time, so every
distribution is embedded as a small const table.  This script is the single source of
those tables: the published tables (numbers copied from the papers, cited below) and
tables derived from the third-party length data in ../shared/data/real/ (see its
SOURCES.md for provenance).  Re-run it after changing either; the output is
deterministic (same inputs, same bytes).

    python3 tools/gen_tables.py [--data DIR] [--out FILE] [--prompt-only]

--data defaults to ../shared/data/real beside the repository, --out to
lib/data/gen_tables.c; --prompt-only builds the trace tables from prompt lengths alone
instead of prompt + output.

Python 3 standard library only.  K means 1024 tokens throughout (see lib/data/stats.h).
"""

import argparse
import csv
import math
import os
import sys

K = 1024
QUANTILE_INTERVALS = 1000   # quantile tables have QUANTILE_INTERVALS + 1 points

# --------------------------------------------------------------------------------------
# Published tables.  Each row: fractions of samples shorter than 1K, 4K, 8K, 32K, 128K
# (percent, as printed), and the longest sample (in K).  A threshold above the longest
# sample is dropped (its fraction is 100% by definition).

PAPER_TABLES = [
    {
        "name": "lmsys",
        "cite": "Skrull, Table 1, row LMsysChat1M: <1K 87.12%, <4K 99.35%, <8k 99.87%, "
                "<32K 99.98%, <128K 99.99%, longest 1643K",
        "summary": "LMSYS-Chat-1M, Skrull Table 1 (87.12% <1K, longest 1643K)",
        "pct": [87.12, 99.35, 99.87, 99.98, 99.99],
        "longest_k": 1643,
    },
    {
        "name": "lmsys-chunkflow",
        "cite": "ChunkFlow, Table 1 (Sequence Length Distribution in LMSysChat1M): "
                "<1K 90.499%, <4K 99.539%, <8K 99.908%, <32K 99.987%, <128K 99.996%, "
                "longest 303K",
        "summary": "LMSYS-Chat-1M, ChunkFlow Table 1 (90.499% <1K, longest 303K)",
        "pct": [90.499, 99.539, 99.908, 99.987, 99.996],
        "longest_k": 303,
    },
    {
        "name": "wikipedia",
        "cite": "Skrull, Table 1, row Wikipedia (pleisto/wikipedia-cn-20230720-filtered, "
                "Skrull ref. [b]): <1K 87.88%, <4K 99.34%, <8k 99.92%, <32K 99.99%, "
                "<128K 100.0%, longest 78K",
        "summary": "Wikipedia (zh), Skrull Table 1 (87.88% <1K, longest 78K)",
        "pct": [87.88, 99.34, 99.92, 99.99, 100.0],
        "longest_k": 78,
    },
    {
        "name": "chatqa2-long",
        "cite": "Skrull, Table 1, row ChatQA2-Long-SFT: <1K 21.92%, <4K 31.48%, "
                "<8k 40.43%, <32K 99.86%, <128K 100.0%, longest 99K (bimodal: about 40% "
                "under 8K, 60% above, Skrull section 3.1)",
        "summary": "ChatQA2-Long-SFT, Skrull Table 1 (bimodal, 40.43% <8K, longest 99K)",
        "pct": [21.92, 31.48, 40.43, 99.86, 100.0],
        "longest_k": 99,
    },
    {
        "name": "chunkflow-eval",
        "cite": "ChunkFlow, Table 2 (Sequence Length Distribution in Evaluation Dataset): "
                "<1K 98.17%, <4K 99.72%, <8K 99.83%, <32K 99.92%, <128K 99.98%, "
                "longest 256K",
        "summary": "ChunkFlow evaluation set, ChunkFlow Table 2 (98.17% <1K, longest 256K)",
        "pct": [98.17, 99.72, 99.83, 99.92, 99.98],
        "longest_k": 256,
    },
]
THRESHOLDS = [1 * K, 4 * K, 8 * K, 32 * K, 128 * K]

# Tulu3 + LongCite, the HBP hybrid setting (hbp.txt section 5 "Implementation Details",
# Table 3).  HBP publishes no length table for either set, so this one is a documented
# model, not a reproduction:
#  - short part, Tulu3 "(32K)": 939,344 samples (allenai/tulu-3-sft-mixture dataset
#    card; HBP gives no count).  Mean about 0.85K: HBP Table 3 random batching on
#    Tulu3 (one sample per micro-batch, PR 0) gives Ave-T, i.e. the mean length,
#    0.8K (32K setting) and 0.9K (128K setting).  Shape: lognormal with sigma = 1
#    (assumed), truncated to [100, 32768] ("input lengths from 0.1K to 128K", the
#    32K cap), mu solved so that the truncated mean is 850.
#  - long part, LongCite "(128K)": "approximately 2k samples are uniformly sampled";
#    lengths log-uniform on [4K, 128K] (assumed: HBP Table 10 has a "Longcite (8K)"
#    subset, so some are under 8K; the cap is 128K).
TULU_N, LONGCITE_N = 939344, 2000
TULU_SIGMA, TULU_MEAN, TULU_LO, TULU_HI = 1.0, 850.0, 100, 32 * K
LONGCITE_LO, LONGCITE_HI = 4 * K, 128 * K

# --------------------------------------------------------------------------------------
# Real data (../shared/data/real).  Traces give per-request prompt and output lengths;
# one training sequence is prompt + response, so the table is built from their sum
# (SOURCES.md: "Summing the two gives a realistic sequence length for chat-SFT or RL
# rollouts"; its mean/p50/p90/p99/max are of the sum).  --prompt-only uses the first
# column alone.

TRACES = [
    ("mooncake-conv", "mooncake_fast25_conversation_lengths.csv",
     "input_length", "output_length",
     "kvcache-ai/Mooncake FAST25-release/traces/conversation_trace.jsonl, Apache-2.0",
     "Mooncake (Kimi) conversation trace, %s, 12,031 requests"),
    ("mooncake-synth", "mooncake_fast25_synthetic_lengths.csv",
     "input_length", "output_length",
     "kvcache-ai/Mooncake FAST25-release/traces/synthetic_trace.jsonl, Apache-2.0",
     "Mooncake synthetic trace, %s, 3,993 requests"),
    ("azure-code", "azure_llm_inference_2023_code.csv",
     "ContextTokens", "GeneratedTokens",
     "Azure/AzurePublicDataset data/AzureLLMInferenceTrace_code.csv, CC-BY-4.0; "
     "cite Patel et al., \"Splitwise\", ISCA 2024",
     "Azure LLM inference 2023, code, %s, 8,819 requests"),
    ("azure-conv", "azure_llm_inference_2023_conv.csv",
     "ContextTokens", "GeneratedTokens",
     "Azure/AzurePublicDataset data/AzureLLMInferenceTrace_conv.csv, CC-BY-4.0; "
     "cite Patel et al., \"Splitwise\", ISCA 2024",
     "Azure LLM inference 2023, chat, %s, 19,366 requests"),
]

HISTOGRAMS = [
    ("squad-bert384", "graphcore_squad11_bert_msl384_hist.csv",
     "graphcore/examples tutorials/blogs_code/packedBERT/histograms.py "
     "(squad_1_1_histogram), commit 2d8b565, MIT",
     "SQuAD 1.1 BERT features, Graphcore histogram, 88,641 (cap 384)"),
    ("wiki-bert512", "graphcore_wikipedia_bert_msl512_hist.csv",
     "graphcore/examples tutorials/blogs_code/packedBERT/histograms.py "
     "(wikipedia_histogram), commit 2d8b565, MIT",
     "Wikipedia BERT pre-training, Graphcore histogram, 16,279,552 (cap 512)"),
]


def c_ident(name):
    return name.replace("-", "_")


def wrap_numbers(values, indent="    ", width=92):
    """Comma-separated values, wrapped to width."""
    lines, cur = [], indent
    for i, v in enumerate(values):
        tok = v + ("," if i + 1 < len(values) else "")
        if len(cur) + len(tok) + 1 > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += tok + " "
    if cur.strip():
        lines.append(cur.rstrip())
    return "\n".join(lines)


def comment_block(text, width=92):
    """Wrap text into ' * ' comment lines."""
    out, cur = [], " *"
    for word in text.split():
        if len(cur) + 1 + len(word) > width:
            out.append(cur)
            cur = " *"
        cur += " " + word
    out.append(cur)
    return "\n".join(out)


def fmt_double(x):
    r = repr(float(x))
    return r if ("e" in r or "." in r) else r + ".0"


def fmt_frac(x):
    """A printed percentage / 100 as the shortest literal (0.8712, not the
    0.8712000000000001 that the division leaves)."""
    r = "%.12g" % x
    return r if "." in r else r + ".0"


def nearest_rank(sorted_vals, p):
    k = max(1, math.ceil(p * len(sorted_vals)))
    return sorted_vals[k - 1]


def quantiles(sorted_vals, m):
    """m + 1 points: linear interpolation between order statistics (Hyndman-Fan
    type 7), so point 0 is the minimum and point m the maximum; rounded to integers."""
    n, out = len(sorted_vals), []
    for k in range(m + 1):
        h = (n - 1) * k / m
        lo = math.floor(h)
        hi = min(lo + 1, n - 1)
        v = sorted_vals[lo] + (h - lo) * (sorted_vals[hi] - sorted_vals[lo])
        out.append(int(math.floor(v + 0.5)))
    return out


def describe(vals):
    """One-line summary of a length list, for the generated comments."""
    s = sorted(vals)
    n = len(s)
    below = ["<%dK %.3f%%" % (t // K, 100.0 * sum(1 for v in s if v < t) / n)
             for t in THRESHOLDS]
    return ("n %d, mean %.1f, min %d, p50 %d, p90 %d, p99 %d, max %d; %s"
            % (n, sum(s) / n, s[0], nearest_rank(s, .5), nearest_rank(s, .9),
               nearest_rank(s, .99), s[-1], ", ".join(below)))


def norm_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def trunc_lognormal_mean(mu, sigma, lo, hi):
    a, b = math.log(lo), math.log(hi)
    mass = norm_cdf((b - mu) / sigma) - norm_cdf((a - mu) / sigma)
    part = (norm_cdf((b - mu - sigma ** 2) / sigma)
            - norm_cdf((a - mu - sigma ** 2) / sigma))
    return math.exp(mu + sigma ** 2 / 2) * part / mass


def solve_tulu_mu():
    lo, hi = 0.0, 12.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if trunc_lognormal_mean(mid, TULU_SIGMA, TULU_LO, TULU_HI) < TULU_MEAN:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 6)


def emit_paper(t):
    """A bucket table: edges[0] = 1, edges[k] = upper edge (exclusive) of bucket k-1,
    the last edge = longest + 1; cum[k] = fraction of samples below edges[k+1]."""
    longest = t["longest_k"] * K
    edges, cum = [1], []
    for thr, pct in zip(THRESHOLDS, t["pct"]):
        if thr > longest:
            break
        edges.append(thr)
        cum.append(pct / 100.0)
    edges.append(longest + 1)
    cum.append(1.0)
    ident = c_ident(t["name"])
    return ident, len(cum), (
        "/*" + comment_block("%s. Buckets [lo, hi) with cumulative fraction: %s; "
                             "longest %d = %dK."
                             % (t["cite"], ", ".join("[%d, %d) %.5g" % (
                                 edges[i], edges[i + 1], cum[i]) for i in range(len(cum))),
                                longest, t["longest_k"]))[2:]
        + " */\n"
        "static const uint32_t %s_edge[] = {\n%s\n};\n" % (
            ident, wrap_numbers([str(e) for e in edges]))
        + "static const double %s_cum[] = {\n%s\n};\n\n" % (
            ident, wrap_numbers([fmt_frac(c) for c in cum])))


def read_trace(path, a, b, prompt_only):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [int(r[a]) + (0 if prompt_only else int(r[b])) for r in rows]


def read_hist(path):
    with open(path, newline="") as f:
        return [(int(r["length"]), int(r["count"])) for r in csv.DictReader(f)]


def emit_trace(name, path, vals, source):
    ident = c_ident(name)
    q = quantiles(sorted(vals), QUANTILE_INTERVALS)
    return ident, (
        "/*" + comment_block("%s: %s. From %s, one value per request (%s). Raw data: %s. "
                             "Stored: %d quantiles (type 7, rounded)."
                             % (name, source, os.path.basename(path),
                                "prompt only" if ARGS.prompt_only else "prompt + output",
                                describe(vals), len(q)))[2:]
        + " */\n"
        "static const uint32_t %s_q[] = {\n%s\n};\n\n" % (
            ident, wrap_numbers([str(v) for v in q])))


def emit_hist(name, path, hist, source):
    ident = c_ident(name)
    nz = [(l, c) for l, c in hist if c > 0]
    cum, acc = [], 0
    for _, c in nz:
        acc += c
        cum.append(acc)
    total = sum(c for _, c in nz)
    mean = sum(l * c for l, c in nz) / total
    return ident, len(nz), (
        "/*" + comment_block("%s: %s. From %s: %d non-empty bins of %d, total %d, "
                             "mean %.2f, max %d. Stored: lengths and cumulative counts "
                             "(exact)." % (name, source, os.path.basename(path), len(nz),
                                           len(hist), total, mean, nz[-1][0]))[2:]
        + " */\n"
        "static const uint32_t %s_len[] = {\n%s\n};\n" % (
            ident, wrap_numbers([str(l) for l, _ in nz]))
        + "static const uint64_t %s_cum[] = {\n%s\n};\n\n" % (
            ident, wrap_numbers([str(c) + "u" for c in cum])))


def entry(name, summary, kind, n, **fields):
    """One registry row, as designated initializers (unused fields stay zero)."""
    rest = "".join(", .%s = %s" % (k, v) for k, v in fields.items())
    return ("    {.name = %s,\n     .summary = %s,\n     .kind = %s, .n = %d%s},"
            % (c_string(name), c_string(summary), kind, n, rest))


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = [HEADER.strip("\n") + "\n\n#include \"gen_tables.h\"\n\n"]
    entries = []

    out.append("/* ---- Published tables (K = 1024 tokens) ---- */\n\n")
    for t in PAPER_TABLES:
        ident, n, text = emit_paper(t)
        out.append(text)
        entries.append(entry(t["name"], t["summary"], "VL_GEN_BUCKETS", n,
                             x=ident + "_edge", p=ident + "_cum"))

    mu = solve_tulu_mu()
    w_long = LONGCITE_N / (TULU_N + LONGCITE_N)
    out.append(TULU_COMMENT % {
        "mu": mu, "sigma": TULU_SIGMA, "lo": TULU_LO, "hi": TULU_HI,
        "mean": trunc_lognormal_mean(mu, TULU_SIGMA, TULU_LO, TULU_HI),
        "tn": TULU_N, "ln": LONGCITE_N, "w": 100.0 * w_long,
        "llo": LONGCITE_LO, "lhi": LONGCITE_HI})
    out.append(
        "static const vl_gen_dist tulu3_part = {\n"
        "    .name = \"tulu3\", .kind = VL_GEN_LOGNORMAL_TRUNC,\n"
        "    .mu = %s, .sigma = %s, .lo = %d, .hi = %d};\n"
        "static const vl_gen_dist longcite_part = {\n"
        "    .name = \"longcite\", .kind = VL_GEN_LOGUNIFORM, .lo = %d, .hi = %d};\n"
        "static const vl_gen_dist *const tulu3_longcite_parts[] = {&tulu3_part, "
        "&longcite_part};\n"
        "static const double tulu3_longcite_cum[] = {%s, 1.0};\n\n"
        % (fmt_double(mu), fmt_double(TULU_SIGMA), TULU_LO, TULU_HI,
           LONGCITE_LO, LONGCITE_HI, fmt_double(TULU_N / (TULU_N + LONGCITE_N))))
    entries.append(entry("tulu3-longcite", "HBP hybrid: Tulu3 (lognormal, mean 0.85K, "
                         "<=32K) + 0.21% LongCite (4K-128K)", "VL_GEN_MIXTURE", 2,
                         p="tulu3_longcite_cum", parts="tulu3_longcite_parts"))

    out.append("/* ---- Real data (docs/data.md) ---- */\n\n")
    for name, fname, a, b, source, summary in TRACES:
        path = os.path.join(ARGS.data, fname)
        vals = read_trace(path, a, b, ARGS.prompt_only)
        ident, text = emit_trace(name, path, vals, source)
        out.append(text)
        what = "prompt only" if ARGS.prompt_only else "prompt+output"
        entries.append(entry(name, summary % what, "VL_GEN_QUANTILES", QUANTILE_INTERVALS,
                             x=ident + "_q"))
    for name, fname, source, summary in HISTOGRAMS:
        path = os.path.join(ARGS.data, fname)
        ident, n, text = emit_hist(name, path, read_hist(path), source)
        out.append(text)
        entries.append(entry(name, summary, "VL_GEN_HISTOGRAM", n, x=ident + "_len",
                             c=ident + "_cum"))

    out.append("const vl_gen_dist vl_gen_tables[] = {\n%s\n};\n\n" % "\n".join(entries))
    out.append("const size_t vl_gen_ntables = sizeof vl_gen_tables / "
               "sizeof vl_gen_tables[0];\n")
    target = ARGS.out or os.path.join(repo, "lib", "data", "gen_tables.c")
    with open(target, "w", newline="\n") as f:
        f.write("".join(out))
    return 0


HEADER = """
/* lib/data/gen_tables.c -- the length tables behind `vlplan gen` (see lib/data/gen.h).
 * GENERATED by tools/gen_tables.py: do not edit; change the script and re-run it.
 *
 * Published tables are copied from the papers (Skrull Table 1, ChunkFlow Tables 1
 * and 2; HBP for the Tulu3 + LongCite mixture), one comment per table quoting the
 * numbers used.  Real-data tables are derived from the third-party files in
 * the project's shared/data/real/ (docs/data.md): Mooncake traces (Apache-2.0), Azure LLM
 * inference traces 2023 (CC-BY-4.0, Patel et al., "Splitwise", ISCA 2024) and
 * Graphcore packedBERT histograms (MIT).  Only lengths are stored, no text. */
"""

TULU_COMMENT = """/* tulu3-longcite: HBP (hbp.txt) trains on "Tulu3 (32K) + LongCite (128K)";
 * "for the Longsite dataset, approximately 2k samples are uniformly sampled"
 * (section 5).  HBP prints no length table, so this is a model:
 *  - Tulu3: %(tn)d samples (tulu-3-sft-mixture card), lognormal mu %(mu)s, sigma %(sigma)s,
 *    truncated to [%(lo)d, %(hi)d] by redrawing; truncated mean %(mean).1f, matching the
 *    0.8K-0.9K Ave-T of HBP Table 3 random batching (one sample per micro-batch).
 *  - LongCite: %(ln)d samples, log-uniform on [%(llo)d, %(lhi)d] (assumed; HBP Table 10
 *    has a "Longcite (8K)" subset, so some are under 8K).
 * Weight of the long part: %(ln)d / (%(tn)d + %(ln)d) = %(w).4f%%. */
"""

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--data", default=os.path.join(here, "..", "shared", "data", "real"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--prompt-only", action="store_true",
                    help="traces: use the prompt length alone, not prompt + output")
    ARGS = ap.parse_args()
    sys.exit(main())
