// The mixture-of-experts feed-forward block of Mixtral-style llama, qwen3moe and olmoe: a router
// (ffn_gate_inp, n_embd -> n_expert) scores every expert for each token, the k best
// (expert_used_count) run their own SwiGLU FFN (ffn_gate_exps / ffn_up_exps / ffn_down_exps,
// stacked {n_in, n_out, n_expert}), and their outputs, weighted by the router, are summed:
//
//   p = softmax(router · t)                  over all n_expert experts
//   E = the k largest p (ties: the lower expert index)
//   w_e = p_e, or p_e / Σ_{E} p when the family renormalises (Mixtral, Qwen3-MoE; not OLMoE)
//   out = Σ_{e in E} w_e · down_e(silu(gate_e · t) ⊙ (up_e · t))
//
// as llama.cpp computes it (build_moe_ffn with softmax gating: the sum is clamped at 6.1e-5 before
// the division). gpt-oss differs in three ways (MoeOptions): the router and every expert matrix
// have a bias; the k experts are the k largest router logits, weighted by the softmax of those k
// logits alone — which is the renormalised softmax above (the full softmax's common
// denominator cancels), so it runs as Softmax with norm_weights; and the activation is its
// clamped SwiGLU (Backend::swiglu_oai, alpha 1.702, limit 7):
//
//   l = router · t + b;  E = the k largest l;  w_e = e^{l_e} / Σ_{E} e^{l}
//   out = Σ_{e in E} w_e · (down_e(swiglu_oai(gate_e · t + bg_e, up_e · t + bu_e)) + bd_e)
// Routing is data-dependent, so the router's logits come back to the host, the
// choice is made there (n x n_expert floats: negligible next to the experts' matmuls), and each
// expert then runs once over the rows routed to it (gather_rows, matmul_many, swiglu, matmul,
// add_rows_scaled): only Backend operations, so every backend runs it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace fluoro {

class WeightBinder;

// How a token's router logits become its experts and their weights. The softmax rule above is
// the default; deepseek2 (arch_deepseek2.cpp) adds, as llama.cpp's build_moe_ffn does:
//  * sigmoid gating: p_e = 1 / (1 + e^{-l_e}) for each expert on its own (DeepSeek-V3);
//  * a selection bias b (exp_probs_b): the k chosen by p + b, weighted by the unbiased p;
//  * groups (DeepSeek-V3): the experts in n_groups equal groups, each scored by the sum of its
//    two best p + b; only the n_groups_used best groups' experts can be chosen;
//  * a scale: the weights, after any renormalisation, times `scale` (expert_weights_scale).
struct RouteRule {
    enum class Gating { Softmax, Sigmoid };
    Gating gating = Gating::Softmax;
    bool norm_weights = true;  // renormalise the k weights to sum 1
    float scale = 1.0f;
    std::span<const float> selection_bias;  // n_expert values, or empty: none
    int64_t n_groups = 0, n_groups_used = 0;
};

// One token's choice from its router logits (n_expert of them): the ids of the k =
// ids.size() chosen experts, best first, and their weights (see above).
void route_token(std::span<const float> logits, const RouteRule& rule, std::span<int32_t> ids,
                 std::span<float> weights);
// The softmax rule, with or without renormalisation.
inline void route_token(std::span<const float> logits, bool norm_weights, std::span<int32_t> ids,
                        std::span<float> weights) {
    RouteRule rule;
    rule.norm_weights = norm_weights;
    route_token(logits, rule, ids, weights);
}

struct MoeOptions {
    bool norm_weights = true;  // renormalise the k weights to sum 1
    bool biases = false;       // ffn_gate_inp.bias and ffn_{gate,up,down}_exps.bias (gpt-oss)
    bool swiglu_oai = false;   // the experts' activation: gpt-oss's clamped SwiGLU
    // deepseek2 (RouteRule): the gating, blk.N.exp_probs_b.bias as the selection bias where the
    // file has it, the weights' scale and the expert groups.
    RouteRule::Gating gating = RouteRule::Gating::Softmax;
    bool selection_bias = false;
    float weights_scale = 1.0f;
    int64_t n_groups = 0, n_groups_used = 0;
    static constexpr float kOaiAlpha = 1.702f, kOaiLimit = 7.0f;  // gpt-oss's constants
};

// The choices of the forward passes since the last clear(), per layer, for every row those
// passes ran, in order: experts[il][r * k + j] is the j-th expert of row r in layer il (most
// probable first, -1 where a pass ran fewer layers: Batch::layers_to_run), weights[il] alike.
struct ExpertChoices {
    int64_t n_expert = 0;
    int64_t n_used = 0;  // k
    int64_t rows = 0;    // rows recorded
    std::vector<std::vector<int32_t>> experts;
    std::vector<std::vector<float>> weights;
    void clear() {
        rows = 0;
        for (auto& e : experts) e.clear();
        for (auto& w : weights) w.clear();
    }
};

class MoeFfn {
  public:
    // n_ff_exp: each expert's hidden width.
    MoeFfn(int64_t n_layer, int64_t n_embd, int64_t n_expert, int64_t n_used, int64_t n_ff_exp,
           MoeOptions options);

    // blk.<il>.ffn_gate_inp.weight {n_embd, n_expert} and the three stacked expert tensors (and
    // with options.biases their biases).
    void bind_layer(const WeightBinder& w, int64_t il);
    // Buffers for batches of up to max_tokens rows (router logits, one expert's rows).
    void reserve(Backend& be, int64_t max_tokens);
    // x += the block's output for the rows of t (t: the FFN-normed rows, (n, n_embd); x: the
    // residual rows, the same shape). Records the choices in the sink when one is set.
    void forward(Backend& be, int64_t il, const Act& t, Act x);
    // Where forward() appends each layer's choices (nullptr: nowhere); begin_step(n) makes room
    // for a pass of n rows, before the pass's first layer.
    void set_sink(ExpertChoices* sink) { sink_ = sink; }
    void begin_step(int64_t rows);

    int64_t n_expert() const { return n_expert_; }
    int64_t n_used() const { return n_used_; }

  private:
    struct Layer {
        Weight router, router_bias;          // (n_embd -> n_expert), (n_expert)
        std::vector<Weight> gate, up, down;  // per expert: (n_embd -> n_ff_exp), back
        std::vector<Weight> gate_bias, up_bias, down_bias;  // per expert, options.biases only
        std::vector<float> selection_bias;                  // host copy, options.selection_bias
    };

    int64_t n_embd_, n_expert_, n_used_, n_ff_exp_;
    MoeOptions opt_;
    std::vector<Layer> layers_;
    Act logits_, xe_, gate_, up_, ye_;  // (max_tokens, n_expert / n_embd / n_ff_exp / n_embd)
    // Host scratch, reused every call: router logits, the choices, and each expert's rows.
    std::vector<float> host_logits_, weights_;
    std::vector<int32_t> ids_;
    std::vector<std::vector<int32_t>> rows_of_;
    std::vector<std::vector<float>> scales_of_;
    ExpertChoices* sink_ = nullptr;
    int64_t sink_first_row_ = 0;  // where this pass's rows start in the sink
};

}  // namespace fluoro
