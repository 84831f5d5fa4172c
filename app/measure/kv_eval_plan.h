// The KV-eval grid (eval/kv_eval.h) from text, as `fluoro eval kv`'s flags and the window's
// Measure → KV cache policies form give it: comma lists of policy, budget, KV type, task names and
// numbers. Every list is validated before a model is loaded, so a typo costs nothing; errors name
// the flag and list the valid names.
#pragma once

#include <string>
#include <vector>

#include "eval/kv_eval.h"

namespace fluoro::app {

struct KvEvalPlanText {
    std::string policies;  // default: every policy
    std::string budgets = "100%,50%,20%,10%";
    std::string kv_types = "f16";
    std::string tasks = "ppl,passkey,speed";
    std::string passkey_lengths = "1024,2048,4096";
    std::string depths = "0,25,50,75,100";  // % of the filler
    std::string speed_contexts = "4096,8192";
    std::string passkey_format = "auto";  // auto: chat when the GGUF has a chat template
    KvEvalPlanText();
};

// Fills plan's lists from `text`; plan's numbers (ppl_tokens, bucket, speed_gen, base policy) are
// checked as they are. passkey_format "auto" leaves plan.passkey_format for the caller to decide
// once the model is known (resolve_passkey_format). Throws Error.
void parse_kv_eval_plan(const KvEvalPlanText& text, KvEvalPlan& plan);

// "auto" → Chat when the model has a chat template, else Plain.
PasskeyFormat resolve_passkey_format(const std::string& name, bool has_chat_template);

// "a,b,,c" → {"a", "b", "c"}.
std::vector<std::string> split_comma_list(const std::string& s);

}  // namespace fluoro::app
