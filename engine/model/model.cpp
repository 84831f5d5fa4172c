#include "model/model.h"

#include "core/error.h"
#include "model/weight_binder.h"

namespace fluoro {

Model::Model(gguf::GgufFile file, Backend& backend, const ModelLoadOptions& opt)
    : file_(std::move(file)),
      backend_(backend),
      opt_(opt),
      hp_(read_hparams(file_)),
      tokenizer_(tok::Tokenizer::from_gguf(file_)) {
    if (opt_.max_batch < 1 || opt_.max_logit_rows < 1 || opt_.max_logit_rows > opt_.max_batch)
        throw Error(
            "model load: max_batch and max_logit_rows must be >= 1 and max_logit_rows <= "
            "max_batch");
    if (int64_t(tokenizer_.vocab().size()) != int64_t(hp_.n_vocab))
        throw FormatError(file_.name() + ": the tokenizer has " +
                          std::to_string(tokenizer_.vocab().size()) +
                          " tokens but the model's vocabulary is " + std::to_string(hp_.n_vocab));
    chat_template_ = file_.get_string("tokenizer.chat_template").value_or("");
    const tok::Vocab& v = tokenizer_.vocab();
    const auto token_text = [&](int32_t id) {
        return v.contains(id) ? std::string(v.text(id)) : std::string();
    };
    chat_format_ =
        ChatFormat::from_file(chat_template_, hp_.arch, token_text(v.bos()), token_text(v.eos()));
    try {
        arch_ = make_architecture(hp_);
    } catch (const UnsupportedError& e) {
        throw UnsupportedError(file_.name() + ": " + e.what());  // which file it was
    } catch (const FormatError& e) {
        throw FormatError(file_.name() + ": " + e.what());
    }
    check_metadata_keys(file_, hp_);
    arch_->set_mla_path(opt_.mla);
    WeightBinder binder(backend_, file_);
    arch_->bind(binder);
    binder.check_all_used(hp_.arch, hp_.n_layer);
    arch_->reserve(backend_, opt_.max_batch, opt_.max_logit_rows);
    logits_.resize(size_t(opt_.max_logit_rows * int64_t(hp_.n_vocab)));
}

std::unique_ptr<Model> Model::load(const std::filesystem::path& path, Backend& backend,
                                   const ModelLoadOptions& opt) {
    return load(gguf::GgufFile::open(path), backend, opt);
}

std::unique_ptr<Model> Model::load(gguf::GgufFile file, Backend& backend,
                                   const ModelLoadOptions& opt) {
    return std::unique_ptr<Model>(new Model(std::move(file), backend, opt));
}

std::unique_ptr<KvCache> Model::create_kv(int64_t n_ctx, int64_t n_seq, KvTypes type) const {
    KvShape s = arch_->kv_shape();
    s.n_ctx = n_ctx;
    s.n_seq = n_seq;
    s.type = type;
    return backend_.create_kv(s);
}

std::unique_ptr<KvCache> Model::create_kv(KvShape shape) const {
    const KvShape m = arch_->kv_shape_with_windows();
    shape.n_layer = m.n_layer;
    shape.n_head_kv = m.n_head_kv;
    shape.head_dim_k = m.head_dim_k;
    shape.head_dim_v = m.head_dim_v;
    shape.v_in_k = m.v_in_k;
    shape.layer_window = m.layer_window;
    return backend_.create_kv(shape);
}

bool Model::has_window_layers() const {
    for (int64_t il = 0; il < int64_t(hparams().n_layer); ++il)
        if (layer_window(il) > 0) return true;
    return false;
}

void Model::compact_kv(KvCache& kv, int64_t seq, std::span<const int64_t> keep) {
    backend_.kv_compact(kv, seq, keep);
    // Slot i held the key of slot keep[i]: rotate it by i - keep[i]. Slots that did not move
    // (the prefix where keep[i] == i) need nothing.
    size_t first = 0;
    while (first < keep.size() && keep[first] == int64_t(first)) ++first;
    if (first == keep.size()) return;
    std::vector<int32_t> deltas;
    deltas.reserve(keep.size() - first);
    for (size_t i = first; i < keep.size(); ++i) deltas.push_back(int32_t(int64_t(i) - keep[i]));
    for (int64_t il = 0; il < kv.shape().n_layer; ++il) {
        const RopeParams rope = arch_->layer_rope(il);
        if (rope.n_rot == 0) continue;  // a layer without RoPE (smollm3): keys carry no position
        backend_.kv_rope_shift(kv, il, seq, int64_t(first), deltas, rope);
    }
}

std::span<const float> Model::forward(const Batch& b, KvCache& kv) {
    const size_t n = b.tokens.size();
    if (n == 0) throw Error("forward: empty batch");
    if (int64_t(n) > opt_.max_batch)
        throw Error("forward: batch of " + std::to_string(n) + " tokens exceeds max_batch " +
                    std::to_string(opt_.max_batch));
    if (b.positions.size() != n || b.seq_ids.size() != n)
        throw Error("forward: tokens, positions and seq_ids must have the same length");
    if (int64_t(b.logit_rows.size()) > opt_.max_logit_rows)
        throw Error("forward: " + std::to_string(b.logit_rows.size()) +
                    " logit rows exceed the reserved " + std::to_string(opt_.max_logit_rows));
    for (size_t i = 0; i < b.logit_rows.size(); ++i)
        if (b.logit_rows[i] < 0 || size_t(b.logit_rows[i]) >= n ||
            (i && b.logit_rows[i] <= b.logit_rows[i - 1]))
            throw Error("forward: logit_rows must be ascending indices into the batch");
    for (size_t i = 0; i < n; ++i) {
        if (b.tokens[i] < 0 || b.tokens[i] >= n_vocab())
            throw Error("forward: token id " + std::to_string(b.tokens[i]) +
                        " is outside the vocabulary (" + std::to_string(n_vocab()) + " tokens)");
        if (b.seq_ids[i] < 0 || b.seq_ids[i] >= kv.shape().n_seq || b.positions[i] < 0 ||
            b.positions[i] >= kv.capacity(b.seq_ids[i]))
            throw Error("forward: position " + std::to_string(b.positions[i]) + " of sequence " +
                        std::to_string(b.seq_ids[i]) + " is outside the context of " +
                        std::to_string(kv.shape().n_ctx) + " tokens");
    }
    // Make every written slot writable (a paged cache allocates or un-shares blocks): runs of
    // consecutive positions of one sequence at a time.
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && b.seq_ids[j] == b.seq_ids[i] && b.positions[j] == b.positions[j - 1] + 1)
            ++j;
        kv.prepare(b.seq_ids[i], b.positions[i], b.positions[j - 1] + 1);
        i = j;
    }
    const Act logits = arch_->forward(backend_, b, kv);
    const size_t count = size_t(logits.size());
    backend_.read(logits, std::span<float>(logits_.data(), count));
    return {logits_.data(), count};
}

}  // namespace fluoro
