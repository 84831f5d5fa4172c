// A loaded model: the mapped GGUF file, its validated hyperparameters, tokenizer and chat
// template, and its architecture bound to a backend. Loading checks everything it can up front,
// so a bad file fails here with its name and the reason, never in the middle of generation.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "backend/backend.h"
#include "chat/chat_format.h"
#include "gguf/gguf_file.h"
#include "model/architecture.h"
#include "model/hparams.h"
#include "model/moe_ffn.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {

struct ModelLoadOptions {
    int64_t max_batch = 512;          // tokens per forward step (prefill chunk)
    int64_t max_logit_rows = 512;     // rows of logits one step may return
    MlaPath mla = MlaPath::Absorbed;  // latent-attention models (deepseek2) only
};

class Model {
  public:
    // Throws Error/FormatError/UnsupportedError naming the file and what is wrong.
    static std::unique_ptr<Model> load(const std::filesystem::path& path, Backend& backend,
                                       const ModelLoadOptions& opt = {});
    // The same from a file already parsed (a GGUF in memory: the model-load fuzzer).
    static std::unique_ptr<Model> load(gguf::GgufFile file, Backend& backend,
                                       const ModelLoadOptions& opt = {});

    const gguf::GgufFile& file() const { return file_; }
    const Hparams& hparams() const { return hp_; }
    const tok::Tokenizer& tokenizer() const { return tokenizer_; }
    const std::string& chat_template_text() const { return chat_template_; }
    // How conversations become prompts: the file's own template, or a family with a notice.
    const ChatFormat& chat_format() const { return chat_format_; }
    Backend& backend() const { return backend_; }
    int64_t max_batch() const { return opt_.max_batch; }
    int64_t max_logit_rows() const { return opt_.max_logit_rows; }
    int64_t n_vocab() const { return int64_t(hp_.n_vocab); }

    // What one token's cache row holds per layer: KV heads and head sizes as this model caches
    // them (a latent-attention model's depend on its MlaPath, not on the file's head counts).
    KvShape kv_shape() const { return arch_->kv_shape(); }
    // A KV cache for n_seq sequences of n_ctx tokens each, shaped for this model.
    std::unique_ptr<KvCache> create_kv(int64_t n_ctx, int64_t n_seq, KvTypes type) const;
    // The same from a shape whose model fields (layers, heads, head sizes) this fills in.
    std::unique_ptr<KvCache> create_kv(KvShape shape) const;

    // Keeps only the slots `keep` (ascending) of sequence seq: moves the kept rows down
    // (Backend::kv_compact) and re-rotates each kept key from its old slot's RoPE position to its
    // new one, in every layer with that layer's RoPE, so the cache reads as if the kept tokens
    // had been computed at positions 0..keep.size()-1 (StreamingLLM, llama.cpp's context shift).
    void compact_kv(KvCache& kv, int64_t seq, std::span<const int64_t> keep);

    // One forward step; returns (batch.logit_rows.size(), n_vocab) logits in host memory, valid
    // until the next call. Errors (bad token id, position past the cache) leave the model usable.
    std::span<const float> forward(const Batch& batch, KvCache& kv);

    // A mixture of experts (Hparams::n_expert > 0; model/moe_ffn.h) appends each later forward
    // step's expert choices to `sink` (nullptr: stops; the caller clears it). A dense model
    // records nothing.
    bool has_experts() const { return hp_.n_expert > 0; }
    void set_expert_sink(ExpertChoices* sink) { arch_->set_expert_sink(sink); }
    // The last positions layer il attends to (0: all earlier ones; architecture.h).
    int64_t layer_window(int64_t il) const { return arch_->layer_window(il); }
    bool has_window_layers() const;

  private:
    Model(gguf::GgufFile file, Backend& backend, const ModelLoadOptions& opt);

    gguf::GgufFile file_;
    Backend& backend_;
    ModelLoadOptions opt_;
    Hparams hp_;
    tok::Tokenizer tokenizer_;
    std::string chat_template_;
    ChatFormat chat_format_;
    std::unique_ptr<Architecture> arch_;
    std::vector<float> logits_;  // (max_logit_rows, n_vocab) host copy
};

}  // namespace fluoro
