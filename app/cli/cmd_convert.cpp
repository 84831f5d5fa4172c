// `fluoro convert IN OUT --kv-heads N [--merge aligned]`: a GQA model's KV heads merged,
// training-free, into N (1: MQA) by the mean of each group's key and value projections, or after
// aligning them (model/kv_head_merge.h). The output runs in fluoro and in llama.cpp like any file
// of its architecture; `fluoro ppl` on both files says what the merge cost.
// `fluoro convert IN OUT --mla-rank R --rope-pairs P`: the model rewritten as fluoro's MLA variant
// of deepseek2 (model/mla_convert.h): a latent of R values plus P rotary pairs per KV head cached
// per token and layer; fluoro runs it, llama.cpp does not.
// --calibrate TEXT fits either to the keys and values the model produces on a text
// (measure/attn_calibration.h).
#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "measure/attn_calibration.h"
#include "measure/eval_text.h"
#include "model/hparams.h"
#include "model/kv_head_merge.h"
#include "model/mla_convert.h"
#include "tensor/ggml_type.h"

namespace fluoro::cli {
namespace {

struct ConvertOpts {
    std::string in, out;
    int64_t kv_heads = 1;
    std::string merge = "mean";
    int64_t mla_rank = 0, rope_pairs = 0;
    std::string rope_keep = "high";
    std::string calibrate;  // a text file, "bible", or empty: no calibration
    int64_t calibrate_tokens = 2048;
    int threads = 0;
    std::string type = "f32";  // the rewritten matrices' type
};

GgmlType output_type(const ConvertOpts& o) {
    if (o.type == "f32") return GgmlType::F32;
    if (o.type == "q8_0") return GgmlType::Q8_0;
    throw Error("--type '" + o.type + "': expected f32 or q8_0");
}

// The calibration --calibrate asks for, or nothing.
std::optional<app::AttnCalibration> calibration(const ConvertOpts& o) {
    if (o.calibrate.empty()) return std::nullopt;
    app::AttnCalibrationOptions co;
    co.text = o.calibrate == "bible" ? "" : o.calibrate;
    co.tokens = o.calibrate_tokens;
    co.threads = o.threads;
    app::AttnCalibration c = app::calibrate_attn_inputs(o.in, co);
    std::printf("calibrated on %lld tokens of %s (perplexity %.3f)\n",
                static_cast<long long>(c.gram.tokens), app::eval_text_name(co.text).c_str(), c.ppl);
    return c;
}

void run_mla(const ConvertOpts& o) {
    const Hparams hp = read_hparams(gguf::GgufFile::open(o.in));
    MlaConvertOptions opt;
    opt.rank = o.mla_rank;
    opt.rope_pairs = o.rope_pairs > 0 ? o.rope_pairs : int64_t(hp.head_dim_k / 8);
    if (o.rope_keep != "norm" && o.rope_keep != "high")
        throw Error("--rope-keep '" + o.rope_keep + "': expected norm or high");
    opt.pair_rule = o.rope_keep == "high" ? MlaPairRule::HighFrequency : MlaPairRule::WeightNorm;
    opt.type = output_type(o);
    const std::optional<app::AttnCalibration> cal = calibration(o);
    if (cal) opt.calibration = &cal->gram;
    const MlaConvertReport r = convert_to_mla(o.in, o.out, opt);
    std::printf(
        "%s: deepseek2 (MLA), %lld layers: latent rank %lld, %lld rotary dims (%lld pairs per KV "
        "head, the %s), %lld position-free key dims per head; energy kept "
        "%.4f (least layer) / %.4f (mean); KV cache per token and layer %lld -> %lld values "
        "(%.3gx)\n",
        o.out.c_str(), static_cast<long long>(r.layers), static_cast<long long>(r.rank),
        static_cast<long long>(r.rope_dims), static_cast<long long>(opt.rope_pairs),
        opt.pair_rule == MlaPairRule::HighFrequency ? "fastest"
        : cal ? "largest query x key RMS on the calibration text"
              : "largest query x key weight norms",
        static_cast<long long>(r.nope_dims), r.energy_min, r.energy_mean,
        static_cast<long long>(r.kv_elements_before), static_cast<long long>(r.kv_elements_after),
        double(r.kv_elements_after) / double(r.kv_elements_before));
}

void run_convert(const ConvertOpts& o) {
    if (o.mla_rank > 0) return run_mla(o);
    const Hparams hp = read_hparams(gguf::GgufFile::open(o.in));
    const int64_t nkv = hp.n_head_kv.empty() ? 0 : int64_t(hp.n_head_kv[0]);
    if (o.kv_heads < 1 || nkv % o.kv_heads != 0 || o.kv_heads >= nkv)
        throw Error("--kv-heads " + std::to_string(o.kv_heads) + ": " + o.in + " has " +
                    std::to_string(nkv) + " KV heads; the target must be fewer and divide them");
    if (o.merge != "mean" && o.merge != "aligned")
        throw Error("--merge '" + o.merge + "': expected mean or aligned");
    const KvMergeRule rule = o.merge == "aligned" ? KvMergeRule::Aligned : KvMergeRule::Mean;
    if (!o.calibrate.empty() && rule != KvMergeRule::Aligned)
        throw Error("--calibrate: the mean merge has nothing to fit; use --merge aligned");
    const GgmlType type = output_type(o);
    const std::optional<app::AttnCalibration> cal = calibration(o);
    const KvHeadMergeReport r =
        merge_kv_heads(o.in, o.out, nkv / o.kv_heads, rule, cal ? &cal->gram : nullptr, type);
    std::printf(
        "%s: %s, %lld layers: %lld KV heads merged to %lld (%s; %lld tensors); KV cache per "
        "token %.3gx; the merged heads miss %.1f %% of the keys' and %.1f %% of the values' "
        "squared %s (the mean: %.1f %% and %.1f %%)\n",
        o.out.c_str(), r.arch.c_str(), static_cast<long long>(r.layers),
        static_cast<long long>(r.kv_heads_before), static_cast<long long>(r.kv_heads_after),
        rule == KvMergeRule::Aligned ? "aligned, then averaged" : "their mean",
        static_cast<long long>(r.tensors_merged),
        double(r.kv_heads_after) / double(r.kv_heads_before), 100 * r.key_miss, 100 * r.value_miss,
        r.calibrated ? "values on the calibration text" : "weights", 100 * r.key_miss_mean,
        100 * r.value_miss_mean);
}

}  // namespace

void add_convert_command(CLI::App& app) {
    auto o = std::make_shared<ConvertOpts>();
    CLI::App* cmd = app.add_subcommand(
        "convert",
        "Write a variant of a model: its KV heads merged (GQA -> fewer heads, MQA), or latent "
        "attention (GQA -> MLA)");
    cmd->add_option("in", o->in, "GGUF model file to read")->required();
    cmd->add_option("out", o->out, "GGUF file to write")->required();
    cmd->add_option("--kv-heads", o->kv_heads,
                    "KV heads of the output (1: MQA); each group of neighbouring heads becomes "
                    "the mean of its key and value projections")
        ->capture_default_str();
    cmd->add_option("--merge", o->merge,
                    "How a group of KV heads becomes one: mean, or aligned (each head's rotary "
                    "pairs and values turned towards the others first, the queries and output "
                    "turned back so nothing else changes; then the mean)")
        ->capture_default_str();
    auto* rank = cmd->add_option(
        "--mla-rank", o->mla_rank,
        "Write fluoro's MLA variant of deepseek2 instead: a latent of this many values per token "
        "and layer holds the keys' position-free dims and the values (joint low-rank, "
        "training-free; llama files)");
    cmd->add_option("--rope-pairs", o->rope_pairs,
                    "With --mla-rank: rotary pairs each KV head keeps (default head_dim / 8); the "
                    "rest become position-free")
        ->needs(rank);
    cmd->add_option("--rope-keep", o->rope_keep,
                    "With --mla-rank: which pairs stay rotary: high (the fastest-turning, "
                    "MHA2MLA's S_high) or norm (largest query x key weight norms)")
        ->capture_default_str();
    cmd->add_option("--calibrate", o->calibrate,
                    "Fit the aligned merge or the MLA latent (and --rope-keep norm's scores) to "
                    "the keys and values the model produces on this text (a UTF-8 file, or "
                    "'bible' for Genesis and Exodus) instead of to its weights");
    cmd->add_option("--calibrate-tokens", o->calibrate_tokens,
                    "Tokens of the calibration text read (whole chunks of 512)")
        ->capture_default_str();
    cmd->add_option("-t,--threads", o->threads, "Threads of the calibration run (0: all)")
        ->capture_default_str();
    cmd->add_option("--type", o->type,
                    "Type of the matrices the conversion writes: f32 (exact) or q8_0 (a quarter "
                    "of the bytes: the converted model decodes faster)")
        ->capture_default_str();
    rank->excludes("--kv-heads");
    rank->excludes("--merge");
    cmd->callback([o] { run_convert(*o); });
}

}  // namespace fluoro::cli
