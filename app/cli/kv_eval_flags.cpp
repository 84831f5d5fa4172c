#include "cli/kv_eval_flags.h"

#include "measure/eval_text.h"
#include "settings/settings.h"

namespace fluoro::cli {

void KvEvalFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--kv-types", lists.kv_types,
                   "Comma list of: " + setting_help(kv_types()) +
                       "; keys/values for two types (q8_0/f16: keys q8_0, values f16)")
        ->capture_default_str();
    cmd.add_option("--tasks", lists.tasks, "Comma list of: ppl, passkey, speed")
        ->capture_default_str();
    cmd.add_option("--ppl-tokens", plan.ppl_tokens, "Tokens of the text for perplexity (0 = all)")
        ->capture_default_str();
    cmd.add_option("--text", text,
                   std::string("UTF-8 text for ppl and speed (default: `bible -f ") +
                       app::kBibleRange + "`, package bible-kjv)");
    cmd.add_option("--passkey-lengths", lists.passkey_lengths, "Passkey prompt lengths in tokens")
        ->capture_default_str();
    cmd.add_option("--depths", lists.depths, "Needle depths in % of the filler")
        ->capture_default_str();
    cmd.add_option("--passkey-format", lists.passkey_format,
                   "auto (chat when the GGUF has a chat template), chat or plain")
        ->capture_default_str();
    cmd.add_option("--speed-contexts", lists.speed_contexts,
                   "Conversation lengths at which decode speed is timed")
        ->capture_default_str();
    cmd.add_option("--speed-gen", plan.speed_gen, "Timed decode steps per speed test")
        ->capture_default_str();
    cmd.add_option("--seed", plan.seed, "Seed of the pass keys")->capture_default_str();
    cmd.add_option("-t,--threads", threads, "CPU threads (default: physical cores)");
    cmd.add_option("-b,--batch", batch, "Tokens per prefill step")->capture_default_str();
}

}  // namespace fluoro::cli
