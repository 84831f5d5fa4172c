// What every architecture file provides: bind its weights (checking names and shapes), size its
// activation buffers, and run the forward pass over a Batch through the Backend's operations.
// One file per architecture (arch_llama.cpp, arch_qwen2.cpp, arch_qwen3.cpp, arch_gemma3.cpp), each
// with a short forward function that reads like the model's paper.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"
#include "settings/settings.h"

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro {

class WeightBinder;
struct ExpertChoices;

class Architecture {
  public:
    virtual ~Architecture() = default;
    // Loads the weights into the backend through `w` (every tensor looked up by name there, so
    // the model can refuse a file holding tensors this architecture never asked for); FormatError
    // naming a missing or misshapen tensor.
    virtual void bind(const WeightBinder& w) = 0;
    // Allocates activations for batches of up to max_tokens and logits for max_logit_rows.
    virtual void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) = 0;
    // One step: logits (batch.logit_rows.size() x n_vocab) are left in the returned Act.
    virtual Act forward(Backend& backend, const Batch& batch, KvCache& kv) = 0;
    // Shape of the KV cache this architecture needs (per-layer KV heads, head sizes).
    virtual KvShape kv_shape() const = 0;
    // The RoPE applied to layer il's keys (Model::shift_kv re-rotates cached keys with it).
    virtual RopeParams layer_rope(int64_t il) const = 0;
    // Before bind(): the attention path of a latent-attention model (settings.h MlaPath).
    virtual void set_mla_path(MlaPath) {}
    // A mixture-of-experts architecture appends each forward step's expert choices there from
    // the next step on (nullptr: nowhere); a dense one has nothing to record.
    virtual void set_expert_sink(ExpertChoices*) {}
    // The keys layer il's queries see: the last `window` positions (their own included), or 0
    // for every earlier one (no sliding window, or a global layer).
    virtual int64_t layer_window(int64_t) const { return 0; }
    // kv_shape() with each layer's window (KvShape::layer_window) filled in.
    KvShape kv_shape_with_windows() const {
        KvShape s = kv_shape();
        s.layer_window.assign(size_t(s.n_layer), 0);
        for (int64_t il = 0; il < s.n_layer; ++il) s.layer_window[size_t(il)] = layer_window(il);
        return s;
    }
};

// The RoPE of a decoder's layers from its hyperparameters: rope.freq_base, linear or YaRN
// scaling (rope.scaling.*); freq_factors = llama3's rope_freqs tensor (nullptr: none).
RopeParams decoder_rope(const Hparams& hp, RopeMode mode, const Weight* freq_factors = nullptr);

// The architectures this engine runs, by general.architecture.
const std::vector<std::string>& supported_architectures();
// Throws UnsupportedError naming the architecture and listing the supported ones.
std::unique_ptr<Architecture> make_architecture(const Hparams& hp);
// Every `<arch>.*` metadata key of the file must be one this engine understands for that
// architecture (reads and implements, or knows to leave the math unchanged): a key that would
// change the math is never silently ignored. Throws UnsupportedError naming the key and the file.
void check_metadata_keys(const gguf::GgufFile& file, const Hparams& hp);

}  // namespace fluoro
