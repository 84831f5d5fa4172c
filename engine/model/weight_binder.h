// Looks up a model's tensors by name and checks their shapes before binding them into a
// backend, so a file with a missing or misshapen tensor fails at load with the tensor's name,
// what was expected and what was found — never later inside a kernel. It remembers every name an
// architecture asked for, so that a tensor the architecture never asked for (rope_freqs in a
// qwen file, a layer past block_count) is refused by check_all_used() instead of silently
// ignored: anything in a file that would change the math and that we do not understand is an
// error. One-dimensional
// tensors (norms, biases) are checked for non-finite values: a NaN there poisons every logit.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro {

class WeightBinder {
  public:
    WeightBinder(Backend& backend, const gguf::GgufFile& file) : backend_(backend), file_(file) {}

    // shape = expected {ne0, ne1, ...}; trailing dims of 1 may be omitted.
    Weight required(const std::string& name, std::vector<int64_t> shape) const;
    // An absent tensor gives an empty Weight (present() == false); a present one is checked.
    Weight optional(const std::string& name, std::vector<int64_t> shape) const;
    // A tensor holding several matrices stacked along its outputs (phi3's attn_qkv: the Q, K
    // and V rows; its ffn_up: the gate rows, then the up rows): one Weight per part, in order,
    // each loaded as a matrix of its own rows (named "<name>[rows a..b)"), so the forward pass
    // and every backend kernel see ordinary weights. Checks the shape {n_in, sum(parts)}; an
    // absent tensor gives an empty vector.
    std::vector<Weight> optional_split(const std::string& name, int64_t n_in,
                                       const std::vector<int64_t>& parts) const;
    // A mixture's stacked expert matrices (ffn_gate_exps / ffn_up_exps / ffn_down_exps, shape
    // {n_in, n_out, n_expert}): one Weight per expert, each loaded as a matrix of its own
    // (named "<name>[expert e]"), so every backend's matmul runs an expert unchanged. Throws
    // FormatError when the tensor is missing or has another shape.
    // `part` names what each matrix is in its name ("expert", deepseek2's "head").
    std::vector<Weight> required_experts(const std::string& name, int64_t n_in, int64_t n_out,
                                         int64_t n_expert, const char* part = "expert") const;
    // A mixture's stacked per-expert vectors (gpt-oss's expert biases, shape {n, n_expert}): one
    // one-dimensional Weight of n values per expert (named "<name>[expert e]"), each checked
    // for non-finite values like any vector. Throws FormatError when missing or misshapen.
    std::vector<Weight> required_expert_vectors(const std::string& name, int64_t n,
                                                int64_t n_expert) const;
    // A tensor's values as float32 on the host (dequantized, ne[0] fastest), its shape checked as
    // required() does: what the host itself needs (a router's selection bias) or derives other
    // weights from (arch_deepseek2.cpp). Counts as asked for.
    std::vector<float> host_values(const std::string& name, std::vector<int64_t> shape) const;
    // Tensor `name` of `derived` — weights the architecture computed at load and holds in a GGUF
    // image of its own, which must outlive the model — loaded through the same backend: whole, or
    // as `n` stacked matrices of n_out rows each (named "<name>[<part> i]", as required_experts).
    // Error when the image has no such tensor.
    Weight load_derived(const gguf::GgufFile& derived, const std::string& name) const;
    std::vector<Weight> load_derived_stacked(const gguf::GgufFile& derived, const std::string& name,
                                             int64_t n_out, int64_t n, const char* part) const;
    bool has(std::string_view name) const;  // in the file (does not count as asked for)
    const std::string& file_name() const;   // for errors
    static std::string layer(int64_t il, const char* suffix) {
        return "blk." + std::to_string(il) + "." + suffix;
    }
    // Throws UnsupportedError naming the first tensor of the file no lookup asked for, and what
    // it means when it is a layer at or past `n_layer` (block_count).
    void check_all_used(std::string_view arch, uint64_t n_layer) const;
    // Throws UnsupportedError naming the file and the key when the K and V head sizes differ:
    // the decoders here give both head_dim_k (their V projection, buffers and attention).
    void require_equal_head_dims(const Hparams& hp) const;

  private:
    // The tensor's info after the shape check (nullptr: absent); marks the name as asked for.
    const gguf::TensorInfo* checked(const std::string& name, std::vector<int64_t> shape) const;
    // Loads rows [first, first + n) of a 2-D or stacked 3-D tensor of `file` as a matrix named
    // `name`; stacked() loads all n_out-row matrices of one.
    Weight load_rows(const gguf::GgufFile& file, const gguf::TensorInfo& info, std::string name,
                     int64_t first, int64_t n) const;
    std::vector<Weight> stacked(const gguf::GgufFile& file, const gguf::TensorInfo& info,
                                const std::string& name, int64_t n_out, int64_t n,
                                const char* part) const;
    // The tensor's dimensions, trailing 1s dropped down to `keep` dimensions.
    static std::vector<int64_t> dims_of(const gguf::TensorInfo& info, size_t keep);

    Backend& backend_;
    const gguf::GgufFile& file_;
    mutable std::set<std::string, std::less<>> asked_;
};

}  // namespace fluoro
