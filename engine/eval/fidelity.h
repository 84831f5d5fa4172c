// Fidelity: how far the engine's next-token distributions are from the exact forward pass of
// the same file — the KL divergence llama.cpp's `perplexity --kl-divergence` reports, against a
// float64 reference instead of another engine's run.
//
// The reference (tests/reference/fidelity_reference.py: float64 numpy, weights dequantized by
// the `gguf` package) gives, for fixed token windows, the LM head's input at every scored
// position; reference_logits() multiplies it by the file's own LM head (dequantized here, summed
// in double), so a reference holds n_embd numbers per position instead of n_vocab. The engine
// evaluates the same windows as llama.cpp's tools do (each window from position 0, the second
// half scored) and each scored position gives
//   KL(P_ref || P_engine) = sum_v p_ref(v) (log p_ref(v) - log p_engine(v)),
// whether the two most likely tokens agree, and the NLL of the actual next token.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace fluoro {

class Model;
class KvCache;

struct FidelityReference {
    int64_t n_ctx = 0;         // tokens per window
    int64_t first_scored = 0;  // positions first_scored .. n_ctx-2 of each window are scored
    int64_t n_embd = 0;
    std::vector<std::vector<int32_t>> windows;  // evaluated as given (BOS already in place)
    std::vector<double> hidden;  // (windows × scored per window) × n_embd, in window order
    // The reference's own logits at the first scored position (computed through its LM head):
    // a few tokens' and the log-sum-exp over the vocabulary. fidelity() recomputes them from
    // hidden and refuses a reference they do not match (another model, another LM head).
    std::vector<int32_t> check_ids;
    std::vector<double> check_logits;
    double check_logsumexp = 0;
    int64_t scored_per_window() const { return n_ctx - 1 - first_scored; }
};

struct FidelityStats {
    int64_t tokens = 0;   // scored positions
    double kld_mean = 0;  // nats
    double kld_p99 = 0;   // the sorted value at floor(0.99 (tokens - 1))
    double kld_max = 0;
    double top1 = 0;           // share of positions whose most likely token is the reference's
    double ppl = 0;            // exp(mean NLL of the next token) under the engine
    double ppl_reference = 0;  // the same under the reference
    double ms = 0;             // wall time of the whole measurement
    std::vector<double> kld;   // per scored position, in window order
};

// KL(softmax(ref) || softmax(test)) in double; the two spans have the same length.
double kl_divergence(std::span<const double> ref, std::span<const float> test);

// Summary of per-position figures (kld, same top token, NLLs) as FidelityStats describes.
FidelityStats summarize_fidelity(std::vector<double> kld, const std::vector<bool>& same,
                                 double nll_sum, double nll_ref_sum);

// The reference's logits at the positions of `hidden` (rows × n_embd): hidden · W^T with W the
// file's LM head (output.weight, token_embd.weight when tied) dequantized to float and summed in
// double, then the file's logit scale and final soft cap. out: rows × n_vocab.
void reference_logits(const Model& model, std::span<const double> hidden, int64_t rows,
                      std::vector<double>& out);

// Recomputes the reference's check (first scored position) from its hidden values through this
// model's LM head; throws Error when they differ by more than float64 rounding.
void check_reference_head(const Model& model, const FidelityReference& ref);

// Checks the reference against the model (sizes, token ids) and measures. kv must hold n_ctx
// tokens in sequence 0. progress(window, running mean KL) after each window. Throws Error naming
// what does not fit.
FidelityStats fidelity(Model& model, KvCache& kv, const FidelityReference& ref,
                       const std::function<void(int64_t, double)>& progress = {});

}  // namespace fluoro
