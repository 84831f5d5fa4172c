#include "model/decoder_buffers.h"

#include <algorithm>

#include "model/act_view.h"

namespace fluoro {

DecoderBuffers alloc_decoder_buffers(Backend& be, const Hparams& hp, int64_t n,
                                     int64_t max_logit_rows) {
    const int64_t hd = int64_t(hp.head_dim_k), d = int64_t(hp.n_embd);
    const int64_t nq = int64_t(*std::max_element(hp.n_head.begin(), hp.n_head.end())) * hd;
    const int64_t nkv = int64_t(*std::max_element(hp.n_head_kv.begin(), hp.n_head_kv.end())) * hd;
    const int64_t ff = int64_t(*std::max_element(hp.n_ff.begin(), hp.n_ff.end()));
    DecoderBuffers b{be.alloc_act(n, d),
                     be.alloc_act(n, d),
                     be.alloc_act(n, nq),
                     be.alloc_act(n, nkv),
                     be.alloc_act(n, nkv),
                     be.alloc_act(n, nq),
                     be.alloc_act(n, ff),
                     be.alloc_act(n, ff),
                     be.alloc_act(max_logit_rows, int64_t(hp.n_vocab))};
    be.reserve(n, std::max({d, nq, ff}));
    return b;
}

KvShape decoder_kv_shape(const Hparams& hp) {
    KvShape s;
    s.n_layer = int64_t(hp.n_layer);
    for (uint64_t h : hp.n_head_kv) s.n_head_kv.push_back(int64_t(h));
    s.head_dim_k = int64_t(hp.head_dim_k);
    s.head_dim_v = int64_t(hp.head_dim_v);
    return s;
}

Act decoder_logits(Backend& be, const DecoderBuffers& buf, const Batch& batch, const Act& x,
                   const Weight& output_norm, float eps, const Weight& head) {
    const int64_t nl = int64_t(batch.logit_rows.size());
    Act last = first_rows(buf.t, nl);
    be.gather_rows(x, batch.logit_rows, last);
    be.rms_norm(last, output_norm, eps, last);
    Act logits = first_rows(buf.logits, nl);  // (n_logit_rows, n_vocab)
    be.matmul(head, last, logits, OpCategory::LmHead);
    return logits;
}

}  // namespace fluoro
