#include "runtime/model_events.h"

#include <filesystem>

#include "backend/backend.h"
#include "chat/reasoning_split.h"
#include "kv/paged_kv.h"
#include "model/model.h"
#include "telemetry/profiling_backend.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {

ModelLoaded describe_loaded(const Model& model, const std::string& path, const Backend& backend,
                            const ProfilingBackend& profiling, KvTypes kv_type, int64_t ctx,
                            const KvCache& kv, const PrefixCachePersistence::Restored& restored) {
    ModelLoaded ev;
    ev.path = path;
    ev.name = model.file()
                  .get_string("general.name")
                  .value_or(std::filesystem::path(path).filename().string());
    ev.arch = model.hparams().arch;
    ev.backend = std::string(backend.name());
    ev.kv_type = kv_types_name(kv_type);
    ev.threads = backend.threads();
    ev.ctx = ctx;
    ev.weights_bytes = profiling.weights_bytes();
    ev.prefix_cache_note = restored.note;
    ev.prefix_cache_restored_entries = restored.stats.entries;
    ev.prefix_cache_restored_tokens = restored.stats.tokens;
    ev.chat_template = std::string(model.chat_format().name());
    ev.chat_template_fallback = !model.chat_format().uses_file_template();
    ev.chat_template_note = model.chat_format().note();
    ev.kv_bytes = int64_t(kv.bytes_allocated());
    ev.kv_bytes_if_full = ev.kv_bytes;
    if (const auto* paged = dynamic_cast<const PagedKvCache*>(&kv)) {
        ev.kv_bytes_if_full = int64_t(paged->bytes_if_full());
        ev.kv_window = paged->window_only() ? paged->shape().max_window() : 0;
    }
    return ev;
}

void describe_model(RunStarted& rs, const Model& model, const std::string& model_path,
                    const Backend& backend, KvTypes kv_type, int64_t ctx) {
    rs.model_path = model_path;
    rs.model_name = model.file().get_string("general.name").value_or(model_path);
    rs.arch = model.hparams().arch;
    rs.backend = std::string(backend.name());
    rs.kv_type = kv_types_name(kv_type);
    rs.threads = backend.threads();
    rs.ctx = ctx;
    if (!rs.raw) {
        rs.chat_template = std::string(model.chat_format().name());
        rs.chat_template_note = model.chat_format().note();
        rs.tool_call_syntax = model.chat_format().tool_call_syntax();
    }
}

void set_text_probes(RunProbes& p, const Model& model) {
    const tok::Tokenizer& tk = model.tokenizer();
    p.token_text = [&tk](int32_t id) { return tk.token_to_piece(id, true); };
    p.control_text = [&tk](int32_t id) -> std::string {
        if (tk.vocab().type(id) != tok::TokenType::Control) return {};
        std::string text = tk.token_to_piece(id, true);
        return is_reasoning_markup(text) ? text : std::string();
    };
}

}  // namespace fluoro
