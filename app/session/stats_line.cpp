#include "session/stats_line.h"

#include <cstdio>

namespace fluoro::app {

std::string stats_line(const GenerateResult& r, int64_t reasoning_tokens) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "prompt %lld tok (%lld cached) %.1f ms, %.1f tok/s | TTFT %.1f ms | "
                  "decode %lld tok, %.1f tok/s | stop: %s",
                  static_cast<long long>(r.prefill.prompt_tokens),
                  static_cast<long long>(r.prefill.reused_tokens), r.prefill.ms, r.prompt_tps(),
                  r.ttft_ms, static_cast<long long>(r.tokens.size()), r.decode_tps(),
                  std::string(stop_reason_name(r.stop)).c_str());
    std::string line = buf;
    if (reasoning_tokens > 0) {
        std::snprintf(buf, sizeof buf, " | reasoning %lld tok",
                      static_cast<long long>(reasoning_tokens));
        line += buf;
    }
    if (r.drafted_tokens > 0) {
        std::snprintf(buf, sizeof buf, " | spec: %lld/%lld drafts accepted (%.0f%%)",
                      static_cast<long long>(r.accepted_tokens),
                      static_cast<long long>(r.drafted_tokens),
                      100.0 * double(r.accepted_tokens) / double(r.drafted_tokens));
        line += buf;
    }
    return line;
}

}  // namespace fluoro::app
