#include "session/loaded_model.h"

#include <algorithm>

#include "core/error.h"
#include "session/backend_factory.h"

namespace fluoro::app {

ModelSettings model_settings(const EngineSettings& s) {
    ModelSettings ms;
    ms.backend = s.backend;
    ms.threads = s.threads;
    ms.ctx = s.ctx;
    ms.batch = s.batch;
    ms.kv_type = s.kv_type;
    ms.attention = s.attention;
    ms.mla = s.mla;
    ms.prefix_cache_slots = s.prefix_cache_slots;
    ms.prefix_cache_file = s.prefix_cache_file;
    ms.swa_full = s.swa_full;
    return ms;
}

LoadedModel load_model(const std::filesystem::path& path, const EngineSettings& s) {
    if (s.ctx < 1) throw Error("the context size must be at least 1 token");
    if (s.batch < 1) throw Error("the batch size must be at least 1 token");
    LoadedModel m;
    m.backend = make_backend(s.backend, s.threads);
    m.backend->set_attention_impl(s.attention);
    ModelLoadOptions opt;
    opt.max_batch = s.batch;
    opt.max_logit_rows = std::clamp<int64_t>(s.logit_rows, 1, s.batch);
    opt.mla = s.mla;
    m.model = Model::load(path, *m.backend, opt);
    m.ctx = std::min<int64_t>(s.ctx, int64_t(m.model->hparams().n_ctx_train));
    m.kv = m.model->create_kv(m.ctx, 1, s.kv_type);
    return m;
}

}  // namespace fluoro::app
