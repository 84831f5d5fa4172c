#include "model/kv_head_merge.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/hparams.h"
#include "tensor/dequantize.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

// The architectures whose attention reads plain attn_k / attn_v projections per KV head, with
// nothing sized by the KV head count besides them (olmo2/olmoe normalise the whole K projection,
// phi3 may stack Q, K and V, gpt-oss has sinks per query head only but its own layout).
constexpr std::array<std::string_view, 6> kArchs = {"llama",   "qwen2",    "qwen3",
                                                    "granite", "mistral3", "smollm3"};

// "blk.N.attn_k.weight" and the like: which of the four merged tensors it is, or -1.
int merged_kind(std::string_view name) {
    if (!name.starts_with("blk.")) return -1;
    const size_t dot = name.find('.', 4);
    if (dot == std::string_view::npos) return -1;
    const std::string_view rest = name.substr(dot + 1);
    constexpr std::array<std::string_view, 4> kinds = {"attn_k.weight", "attn_v.weight",
                                                       "attn_k.bias", "attn_v.bias"};
    for (size_t i = 0; i < kinds.size(); ++i)
        if (rest == kinds[i]) return int(i);
    return -1;
}

}  // namespace

KvHeadMergeReport merge_kv_heads(const std::filesystem::path& in, const std::filesystem::path& out,
                                 int64_t factor) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec))
        throw Error(out.string() + ": the output would overwrite the input");
    const gguf::GgufFile f = gguf::GgufFile::open(in);
    const Hparams hp = read_hparams(f);
    if (std::find(kArchs.begin(), kArchs.end(), hp.arch) == kArchs.end()) {
        std::string list;
        for (std::string_view a : kArchs) list += (list.empty() ? "" : ", ") + std::string(a);
        throw UnsupportedError(f.name() + ": architecture '" + hp.arch +
                               "': merging KV heads is implemented for " + list);
    }
    const int64_t nkv = int64_t(hp.n_head_kv[0]), hd_k = int64_t(hp.head_dim_k),
                  hd_v = int64_t(hp.head_dim_v);
    for (uint64_t h : hp.n_head_kv)
        if (int64_t(h) != nkv)
            throw UnsupportedError(f.name() + ": head_count_kv differs between layers");
    if (factor < 2 || nkv % factor != 0)
        throw Error(f.name() + ": " + std::to_string(nkv) +
                    " KV heads cannot be merged in groups of " + std::to_string(factor) +
                    " (the groups must divide them, 2 or more each)");
    const int64_t after = nkv / factor;
    KvHeadMergeReport report{hp.arch, int64_t(hp.n_layer), nkv, after, 0};

    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    const std::string kv_key = hp.arch + ".attention.head_count_kv";
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key == "general.alignment") continue;
        if (kv.key == kv_key) {
            w.add_u32(kv.key, uint32_t(after));
            continue;
        }
        if (kv.key == "general.name") {
            const std::string name = f.get_string("general.name").value_or("");
            w.add_string(kv.key, name + " (" + std::to_string(nkv) + " KV heads merged to " +
                                     std::to_string(after) + " by their mean)");
            continue;
        }
        w.add(kv.key, kv.value);
    }
    for (const gguf::TensorInfo& t : f.tensors()) {
        const int kind = merged_kind(t.name);
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (kind < 0) {
            w.add_tensor(t.name, t.type, ne, f.tensor_data(t));
            continue;
        }
        const bool bias = kind >= 2;
        const int64_t hd = kind % 2 == 0 ? hd_k : hd_v;
        const int64_t row = bias ? 1 : int64_t(t.ne[0]);
        const int64_t rows = bias ? int64_t(t.ne[0]) : int64_t(t.ne[1]);
        if (rows != nkv * hd || (!bias && t.n_dims != 2) || (bias && t.n_dims != 1))
            throw FormatError(f.name() + ": tensor '" + t.name + "' is not " + std::to_string(nkv) +
                              " heads of " + std::to_string(hd) + " rows");
        if (!type_traits(t.type).dequantize)
            throw UnsupportedError(f.name() + ": tensor '" + t.name + "' is " +
                                   std::string(type_name(t.type)) + ", which cannot be read back");
        std::vector<float> src(size_t(rows * row));
        dequantize_row(t.type, f.tensor_data(t).data(), src.data(), int64_t(src.size()));
        // Summed in double, then divided: identical heads merge to themselves exactly.
        std::vector<float> dst(size_t(after * hd * row));
        std::vector<double> sum(size_t(hd * row));
        for (int64_t g = 0; g < after; ++g) {
            std::fill(sum.begin(), sum.end(), 0.0);
            for (int64_t m = 0; m < factor; ++m) {
                const float* head = src.data() + ((g * factor + m) * hd) * row;
                for (int64_t i = 0; i < hd * row; ++i) sum[size_t(i)] += double(head[i]);
            }
            for (int64_t i = 0; i < hd * row; ++i)
                dst[size_t(g * hd * row + i)] = float(sum[size_t(i)] / double(factor));
        }
        if (bias)
            ne = {uint64_t(after * hd)};
        else
            ne = {uint64_t(row), uint64_t(after * hd)};
        w.add_tensor_f32(t.name, ne, dst);
        ++report.tensors_merged;
    }
    w.write(out);
    return report;
}

}  // namespace fluoro
