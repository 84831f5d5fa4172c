// `fluoro convert IN OUT --kv-heads N`: a GQA model's KV heads merged, training-free, into N
// (1: MQA) by the mean of each group's key and value projections (model/kv_head_merge.h). The
// output runs in fluoro and in llama.cpp like any file of its architecture; `fluoro ppl` on both
// files says what the merge cost.
#include <cstdio>

#include "cli/commands.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "model/kv_head_merge.h"

namespace fluoro::cli {
namespace {

struct ConvertOpts {
    std::string in, out;
    int64_t kv_heads = 1;
};

void run_convert(const ConvertOpts& o) {
    const Hparams hp = read_hparams(gguf::GgufFile::open(o.in));
    const int64_t nkv = hp.n_head_kv.empty() ? 0 : int64_t(hp.n_head_kv[0]);
    if (o.kv_heads < 1 || nkv % o.kv_heads != 0 || o.kv_heads >= nkv)
        throw Error("--kv-heads " + std::to_string(o.kv_heads) + ": " + o.in + " has " +
                    std::to_string(nkv) + " KV heads; the target must be fewer and divide them");
    const KvHeadMergeReport r = merge_kv_heads(o.in, o.out, nkv / o.kv_heads);
    std::printf(
        "%s: %s, %lld layers: %lld KV heads merged to %lld by their mean (%lld tensors); "
        "KV cache per token %.3gx\n",
        o.out.c_str(), r.arch.c_str(), static_cast<long long>(r.layers),
        static_cast<long long>(r.kv_heads_before), static_cast<long long>(r.kv_heads_after),
        static_cast<long long>(r.tensors_merged),
        double(r.kv_heads_after) / double(r.kv_heads_before));
}

}  // namespace

void add_convert_command(CLI::App& app) {
    auto o = std::make_shared<ConvertOpts>();
    CLI::App* cmd = app.add_subcommand(
        "convert", "Write a variant of a model: its KV heads merged (GQA -> fewer heads, MQA)");
    cmd->add_option("in", o->in, "GGUF model file to read")->required();
    cmd->add_option("out", o->out, "GGUF file to write")->required();
    cmd->add_option("--kv-heads", o->kv_heads,
                    "KV heads of the output (1: MQA); each group of neighbouring heads becomes "
                    "the mean of its key and value projections")
        ->capture_default_str();
    cmd->callback([o] { run_convert(*o); });
}

}  // namespace fluoro::cli
