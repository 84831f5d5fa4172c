// The prompt sets of `fluoro bench spec`, by how predictable their answers are from the prompt:
// "copy" (rewrite or edit a given text or code: a correct answer repeats the input), "summarize"
// (a given passage: some reuse) and "chat" (open questions: nothing to copy). Written for this
// project; plain text, no chat markup. Each "copy" prompt carries a correct answer, so that what
// "copy-heavy" means is measured, not assumed: at least kMinReferenceCopied of the reference's
// tokens (copied_fraction, spec_bench.h) repeat the prompt, checked by a test with both default
// models' tokenizers. (A title-casing task was dropped for failing that: every word of its answer
// tokenizes differently from the input.)
#pragma once

#include <string>
#include <vector>

namespace fluoro::spec {

struct BenchPrompt {
    std::string category;  // "copy", "summarize", "chat"
    std::string text;
    std::string reference;  // a correct answer ("copy" prompts; empty elsewhere)
};

inline constexpr double kMinReferenceCopied = 0.8;

const std::vector<BenchPrompt>& spec_bench_prompts();

}  // namespace fluoro::spec
