// The prompt sets of `fluoro bench spec`, by how predictable their answers are from the prompt:
// "copy" (rewrite or edit a given text or code: the answer repeats the input), "summarize" (a
// given passage: some reuse) and "chat" (open questions: nothing to copy). Written for this
// project; plain text, no chat markup.
#pragma once

#include <string>
#include <vector>

namespace fluoro::spec {

struct BenchPrompt {
    std::string category;  // "copy", "summarize", "chat"
    std::string text;
};

const std::vector<BenchPrompt>& spec_bench_prompts();

}  // namespace fluoro::spec
