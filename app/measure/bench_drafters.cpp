#include "measure/bench_drafters.h"

#include "core/error.h"
#include "speculative/draft_model_drafter.h"
#include "speculative/spec_settings.h"

namespace fluoro::app {

std::vector<spec::Drafter*> BenchDrafters::list() const {
    std::vector<spec::Drafter*> out;
    for (const auto& d : owned) out.push_back(d.get());
    return out;
}

std::string bench_drafter_names() {
    std::string out;
    for (const SpecModeInfo& m : spec_modes()) {
        if (!m.drafts) continue;
        if (!out.empty()) out += ", ";
        out += m.name;
    }
    return out;
}

BenchDrafters make_bench_drafters(const BenchDrafterOptions& opt, LoadedModel& target,
                                  const EngineSettings& s) {
    BenchDrafters out;
    for (const std::string& name : opt.names) {
        const SpecMode mode = parse_spec_mode(name).value_or(SpecMode::Off);
        if (mode == SpecMode::PromptLookup) {
            out.owned.push_back(std::make_unique<spec::PromptLookupDrafter>(opt.lookup));
        } else if (mode == SpecMode::DraftModel) {
            if (opt.draft_model.empty())
                throw Error("bench spec: the draft_model drafter needs a draft model file");
            if (!out.draft_model) {
                ModelLoadOptions mo;
                mo.max_batch = s.batch;
                out.draft_model = Model::load(opt.draft_model, *target.backend, mo);
                spec::check_vocab_compatible(*target.model, *out.draft_model);
            }
            out.kvs.push_back(out.draft_model->create_kv(target.ctx, 1, s.kv_type));
            auto d =
                std::make_unique<spec::DraftModelDrafter>(*out.draft_model, *out.kvs.back(), 0);
            d->set_min_confidence(opt.draft_p_min);
            out.owned.push_back(std::move(d));
        } else if (mode == SpecMode::SelfSpeculative) {
            std::vector<int64_t> layers = opt.exit_layers;
            if (layers.empty()) layers.push_back(int64_t(target.model->hparams().n_layer / 2));
            for (const int64_t l : layers) {
                out.kvs.push_back(target.model->create_kv(target.ctx, 1, s.kv_type));
                auto d = std::make_unique<spec::DraftModelDrafter>(*target.model, *out.kvs.back(),
                                                                   0, 0, l);
                d->set_min_confidence(opt.draft_p_min);
                out.owned.push_back(std::move(d));
            }
        } else {
            throw Error("bench spec: unknown drafter '" + name +
                        "' (known: " + bench_drafter_names() + ")");
        }
    }
    if (out.owned.empty())
        throw Error("bench spec: no drafter chosen (known: " + bench_drafter_names() + ")");
    return out;
}

}  // namespace fluoro::app
