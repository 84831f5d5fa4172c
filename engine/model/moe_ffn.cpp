#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "model/act_view.h"
#include "model/weight_binder.h"

namespace fluoro {

void route_token(std::span<const float> logits, const RouteRule& rule, std::span<int32_t> ids,
                 std::span<float> weights) {
    const size_t n = logits.size(), k = ids.size();
    if (k == 0 || k > n || weights.size() != k)
        throw Error("route_token: " + std::to_string(k) + " experts to choose among " +
                    std::to_string(n));
    float probs[4096], select[4096];  // expert_count <= 4096 (hparams.cpp)
    if (n > std::size(probs)) throw Error("route_token: more than 4096 experts");
    if (!rule.selection_bias.empty() && rule.selection_bias.size() != n)
        throw Error("route_token: a selection bias of " +
                    std::to_string(rule.selection_bias.size()) + " values for " +
                    std::to_string(n) + " experts");
    if (rule.gating == RouteRule::Gating::Sigmoid) {
        for (size_t e = 0; e < n; ++e) probs[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    } else {
        // Softmax as ggml's: max subtracted, exponentials in float, their sum in double.
        const float max = *std::max_element(logits.begin(), logits.end());
        double sum = 0;
        for (size_t e = 0; e < n; ++e) sum += (probs[e] = std::exp(logits[e] - max));
        const float inv = float(1.0 / sum);
        for (size_t e = 0; e < n; ++e) probs[e] *= inv;
    }
    for (size_t e = 0; e < n; ++e)
        select[e] = probs[e] + (rule.selection_bias.empty() ? 0.0f : rule.selection_bias[e]);
    const auto better = [&](int32_t a, int32_t b) {
        return select[a] > select[b] || (select[a] == select[b] && a < b);
    };
    if (rule.n_groups > 1) {
        // Each group scored by its two best; the experts of all but the best groups dropped.
        // Fixed arrays, as above: no allocation per token (groups <= experts <= 4096).
        const size_t groups = size_t(rule.n_groups), per = n / groups;
        if (per * groups != n || rule.n_groups_used < 1 || size_t(rule.n_groups_used) > groups ||
            size_t(rule.n_groups_used) * per < k)
            throw Error("route_token: " + std::to_string(rule.n_groups_used) + " of " +
                        std::to_string(groups) + " groups of " + std::to_string(n) +
                        " experts cannot hold " + std::to_string(k));
        float score[4096];
        int32_t by_score[4096];
        for (size_t g = 0; g < groups; ++g) {
            float best = -INFINITY, second = -INFINITY;
            for (size_t e = g * per; e < (g + 1) * per; ++e) {
                if (select[e] > best) {
                    second = best;
                    best = select[e];
                } else if (select[e] > second) {
                    second = select[e];
                }
            }
            score[g] = per > 1 ? best + second : best;
        }
        std::iota(by_score, by_score + groups, 0);
        std::partial_sort(by_score, by_score + rule.n_groups_used, by_score + groups,
                          [&](int32_t a, int32_t b) {
                              return score[a] > score[b] || (score[a] == score[b] && a < b);
                          });
        // Drop the groups past the best n_groups_used.
        for (size_t j = size_t(rule.n_groups_used); j < groups; ++j)
            for (size_t e = size_t(by_score[j]) * per; e < size_t(by_score[j] + 1) * per; ++e)
                select[e] = -INFINITY;
    }
    // The k best, descending; equal scores keep the lower index first.
    int32_t order[4096];
    std::iota(order, order + n, 0);
    std::partial_sort(order, order + k, order + n, better);
    float chosen = 0;
    for (size_t j = 0; j < k; ++j) {
        ids[j] = order[j];
        weights[j] = probs[order[j]];
        chosen += weights[j];
    }
    if (rule.norm_weights) {
        // llama.cpp clamps the sum at F16's smallest normal before dividing.
        chosen = std::max(chosen, 6.103515625e-5f);
        for (float& w : weights) w /= chosen;
    }
    if (rule.scale != 1.0f)
        for (float& w : weights) w *= rule.scale;
}

MoeFfn::MoeFfn(int64_t n_layer, int64_t n_embd, int64_t n_expert, int64_t n_used, int64_t n_ff_exp,
               MoeOptions options)
    : n_embd_(n_embd),
      n_expert_(n_expert),
      n_used_(n_used),
      n_ff_exp_(n_ff_exp),
      opt_(options),
      layers_(size_t(n_layer)),
      rows_of_(size_t(n_expert)),
      scales_of_(size_t(n_expert)) {
    if (n_expert < 1 || n_used < 1 || n_used > n_expert || n_ff_exp < 1)
        throw Error("mixture of experts: " + std::to_string(n_used) + " of " +
                    std::to_string(n_expert) + " experts of width " + std::to_string(n_ff_exp));
}

void MoeFfn::bind_layer(const WeightBinder& w, int64_t il) {
    Layer& L = layers_[size_t(il)];
    const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
    L.router = w.required(name("ffn_gate_inp.weight"), {n_embd_, n_expert_});
    L.gate = w.required_experts(name("ffn_gate_exps.weight"), n_embd_, n_ff_exp_, n_expert_);
    L.up = w.required_experts(name("ffn_up_exps.weight"), n_embd_, n_ff_exp_, n_expert_);
    L.down = w.required_experts(name("ffn_down_exps.weight"), n_ff_exp_, n_embd_, n_expert_);
    // host_values refuses a vector holding a non-finite value, naming the element.
    if (opt_.selection_bias && w.has(name("exp_probs_b.bias")))
        L.selection_bias = w.host_values(name("exp_probs_b.bias"), {n_expert_});
    if (!opt_.biases) return;
    L.router_bias = w.required(name("ffn_gate_inp.bias"), {n_expert_});
    L.gate_bias = w.required_expert_vectors(name("ffn_gate_exps.bias"), n_ff_exp_, n_expert_);
    L.up_bias = w.required_expert_vectors(name("ffn_up_exps.bias"), n_ff_exp_, n_expert_);
    L.down_bias = w.required_expert_vectors(name("ffn_down_exps.bias"), n_embd_, n_expert_);
}

void MoeFfn::reserve(Backend& be, int64_t max_tokens) {
    logits_ = be.alloc_act(max_tokens, n_expert_);
    xe_ = be.alloc_act(max_tokens, n_embd_);
    gate_ = be.alloc_act(max_tokens, n_ff_exp_);
    up_ = be.alloc_act(max_tokens, n_ff_exp_);
    ye_ = be.alloc_act(max_tokens, n_embd_);
    be.reserve(max_tokens, std::max(n_embd_, n_ff_exp_));
    host_logits_.resize(size_t(max_tokens * n_expert_));
    ids_.resize(size_t(max_tokens * n_used_));
    weights_.resize(size_t(max_tokens * n_used_));
}

void MoeFfn::begin_step(int64_t rows) {
    if (!sink_) return;
    sink_->n_expert = n_expert_;
    sink_->n_used = n_used_;
    sink_->experts.resize(layers_.size());
    sink_->weights.resize(layers_.size());
    sink_first_row_ = sink_->rows;
    sink_->rows += rows;
    const size_t size = size_t(sink_->rows * n_used_);
    for (auto& e : sink_->experts) e.resize(size, -1);
    for (auto& w : sink_->weights) w.resize(size, 0.0f);
}

void MoeFfn::forward(Backend& be, int64_t il, const Act& t, Act x) {
    const Layer& L = layers_[size_t(il)];
    const int64_t n = t.rows, k = n_used_;
    const Act logits = first_rows(logits_, n);  // (n, n_expert)
    be.matmul(L.router, t, logits, OpCategory::Ffn);
    if (opt_.biases) be.add_bias(logits, L.router_bias);
    const std::span<float> host(host_logits_.data(), size_t(n * n_expert_));
    be.read(logits, host);
    for (auto& r : rows_of_) r.clear();
    for (auto& s : scales_of_) s.clear();
    RouteRule rule;
    rule.gating = opt_.gating;
    rule.norm_weights = opt_.norm_weights;
    rule.scale = opt_.weights_scale;
    rule.selection_bias = L.selection_bias;
    rule.n_groups = opt_.n_groups;
    rule.n_groups_used = opt_.n_groups_used;
    for (int64_t r = 0; r < n; ++r) {
        const std::span<int32_t> ids(ids_.data() + r * k, size_t(k));
        const std::span<float> w(weights_.data() + r * k, size_t(k));
        route_token(host.subspan(size_t(r * n_expert_), size_t(n_expert_)), rule, ids, w);
        for (int64_t j = 0; j < k; ++j) {
            rows_of_[size_t(ids[size_t(j)])].push_back(int32_t(r));
            scales_of_[size_t(ids[size_t(j)])].push_back(w[size_t(j)]);
        }
    }
    if (sink_) {
        const int64_t at = sink_first_row_ * k;
        std::copy(ids_.begin(), ids_.begin() + n * k, sink_->experts[size_t(il)].begin() + at);
        std::copy(weights_.begin(), weights_.begin() + n * k,
                  sink_->weights[size_t(il)].begin() + at);
    }
    // Each chosen expert once, over the rows routed to it.
    for (int64_t e = 0; e < n_expert_; ++e) {
        const std::vector<int32_t>& rows = rows_of_[size_t(e)];
        if (rows.empty()) continue;
        const int64_t m = int64_t(rows.size());
        const Act xe = first_rows(xe_, m);  // (m, n_embd)
        be.gather_rows(t, rows, xe);
        const Act g = first_rows(gate_, m), u = first_rows(up_, m);  // (m, n_ff_exp)
        const Backend::MatmulOut gate_up[] = {{&L.gate[size_t(e)], g}, {&L.up[size_t(e)], u}};
        be.matmul_many(xe, gate_up, OpCategory::Ffn);
        if (opt_.biases) {
            be.add_bias(g, L.gate_bias[size_t(e)]);
            be.add_bias(u, L.up_bias[size_t(e)]);
        }
        if (opt_.swiglu_oai)
            be.swiglu_oai(g, u, MoeOptions::kOaiAlpha, MoeOptions::kOaiLimit);
        else
            be.swiglu(g, u);               // g = silu(g) * u
        const Act y = first_rows(ye_, m);  // (m, n_embd)
        be.matmul(L.down[size_t(e)], g, y, OpCategory::Ffn);
        if (opt_.biases) be.add_bias(y, L.down_bias[size_t(e)]);
        be.add_rows_scaled(x, y, rows, scales_of_[size_t(e)]);  // x[rows] += w * y
    }
}

}  // namespace fluoro
