#include "export/markdown_export.h"

#include <cstdio>

namespace fluoro::app {
namespace {

std::string stats(const RunRecord& r) {
    const double tps = r.decode_ms > 0 ? 1000.0 * double(r.decode_steps) / r.decode_ms : 0;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%lld tokens · prompt %lld (%lld cached) · TTFT %.1f ms · %.1f tok/s",
                  static_cast<long long>(r.n_tokens), static_cast<long long>(r.prompt_tokens),
                  static_cast<long long>(r.cached_tokens), r.ttft_ms, tps);
    std::string s = "*";
    s += r.model_name;
    s += " · ";
    s += buf;
    if (r.drafted_tokens > 0) {
        std::snprintf(buf, sizeof buf, " · speculative: %lld/%lld drafts accepted (%.0f%%)",
                      static_cast<long long>(r.accepted_tokens),
                      static_cast<long long>(r.drafted_tokens),
                      100.0 * double(r.accepted_tokens) / double(r.drafted_tokens));
        s += buf;
    }
    s += " · stop: ";
    s += r.stop_reason.value_or("interrupted");
    s += "*";
    return s;
}

}  // namespace

std::string conversation_markdown(const ConversationRecord& c) {
    std::string md = "# ";
    md += c.title.empty() ? "Conversation" : c.title;
    md += "\n\n";
    md += "Started ";
    md += c.created_at;
    md += "\n\n";
    if (!c.system_prompt.empty()) {
        md += "**System:** ";
        md += c.system_prompt;
        md += "\n\n";
    }
    for (const auto& m : c.messages) {
        md += m.role == "user"        ? "**User:**"
              : m.role == "assistant" ? "**Assistant:**"
                                      : "**System:**";
        if (!m.complete && m.role == "assistant") md += " *(incomplete)*";
        md += "\n\n";
        md += m.content;
        md += "\n\n";
        for (const auto& r : c.runs)
            if (r.message_id == m.id) {
                md += "> ";
                md += stats(r);
                md += "\n\n";
            }
    }
    return md;
}

}  // namespace fluoro::app
