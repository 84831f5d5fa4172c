// The prompt cache's telemetry for one prefill: what it reused and from where, why the match
// ended, and the prefix cache's radix tree after it (PrefixCacheEvent). Both engines make it: the
// Engine for its conversation, the BatchEngine for each request.
#pragma once

#include <cstdint>
#include <span>

#include "decode/sequence.h"
#include "telemetry/events.h"

namespace fluoro {

namespace tok {
class Tokenizer;
}
class PrefixCache;

// p: the prefill's statistics; prompt: its first prompt_tokens tokens (the prefix cache's tree
// marks their path); cache: null when there is none; bytes_per_token: the KV cache's.
PrefixCacheEvent make_prefix_event(const PrefillStats& p, uint64_t run, int64_t prompt_tokens,
                                   std::span<const int32_t> prompt, int64_t t_ns,
                                   const tok::Tokenizer& tokenizer, const PrefixCache* cache,
                                   int64_t bytes_per_token);

}  // namespace fluoro
