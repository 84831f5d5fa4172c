#include "measure/attn_eval.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "measure/attn_calibration.h"
#include "measure/eval_text.h"
#include "measure/kv_eval_plan.h"
#include "measure/measure_json.h"
#include "model/attention_variant.h"
#include "model/hparams.h"
#include "model/kv_head_merge.h"
#include "model/mla_convert.h"
#include "model/model.h"
#include "session/loaded_model.h"
#include "settings/settings.h"

namespace fluoro::app {
namespace {

struct Variant {
    std::string name;
    std::filesystem::path file;
    bool temporary = false;  // written by this run, removed at its end
};

// Removes the temporary variants however the run ends.
struct TemporaryFiles {
    std::vector<std::filesystem::path> paths;
    ~TemporaryFiles() {
        for (const auto& p : paths) {
            std::error_code ec;
            std::filesystem::remove(p, ec);
        }
    }
};

// Where a variant named `name` is written: MODEL.<name>.gguf in keep_dir, or a temporary file
// (registered for removal).
std::filesystem::path output_path(const AttnEvalOptions& o, const std::string& name,
                                  TemporaryFiles& temps) {
    const std::string file = o.model.stem().string() + "." + name + ".gguf";
    if (!o.keep_dir.empty()) return o.keep_dir / file;
    const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                    ("fluoro-eval-attn-" + std::to_string(::getpid()) + "-" + file);
    temps.paths.push_back(p);
    return p;
}

// The file, its MQA merge (when asked for and the file has several KV heads and no latent), its
// MLA conversions, then the extra variants. Writes the conversions.
// Whether the model has KV heads to merge: several, and no latent.
bool mergeable(const Hparams& hp) {
    return hp.kv_lora_rank == 0 && !hp.n_head_kv.empty() && hp.n_head_kv[0] > 1;
}

std::vector<Variant> make_variants(const AttnEvalOptions& o, const Hparams& hp,
                                   const AttnInputGram* cal, TemporaryFiles& temps,
                                   const std::function<void(const std::string&)>& progress) {
    std::vector<Variant> out{{"original", o.model, false}};
    if (o.mqa) {
        const int64_t nkv = hp.n_head_kv.empty() ? 0 : int64_t(hp.n_head_kv[0]);
        if (mergeable(hp)) {
            for (const KvMergeRule rule : {KvMergeRule::Mean, KvMergeRule::Aligned}) {
                const std::string name = "mqa-" + std::string(kv_merge_rule_name(rule));
                const std::filesystem::path file = output_path(o, name, temps);
                if (progress)
                    progress("merging " + std::to_string(nkv) + " KV heads into 1 (" +
                             std::string(kv_merge_rule_name(rule)) + ") -> " + file.string());
                try {
                    merge_kv_heads(o.model, file, nkv, rule,
                                   rule == KvMergeRule::Aligned ? cal : nullptr);
                } catch (const UnsupportedError& e) {  // the aligned rule on qwen3's norms
                    if (rule == KvMergeRule::Mean) throw;
                    if (progress) progress(std::string("no aligned merge: ") + e.what());
                    continue;
                }
                out.push_back({name, file, o.keep_dir.empty()});
            }
        } else if (progress) {
            progress(o.model.string() + " has " +
                     (hp.kv_lora_rank ? "latent attention" : "one KV head already") +
                     ": no MQA merge");
        }
    }
    if (!o.mla_ranks.empty()) {
        const int64_t pairs = o.mla_rope_pairs > 0 ? o.mla_rope_pairs : int64_t(hp.head_dim_k / 8);
        for (const int64_t rank : o.mla_ranks) {
            const std::string name = "mla-r" + std::to_string(rank);
            const std::filesystem::path file = output_path(o, name, temps);
            if (progress)
                progress("converting to MLA, latent rank " + std::to_string(rank) + ", " +
                         std::to_string(pairs) + " rotary pairs per KV head -> " + file.string());
            MlaConvertOptions mo;
            mo.rank = rank;
            mo.rope_pairs = pairs;
            mo.calibration = cal;
            convert_to_mla(o.model, file, mo);
            out.push_back({name, file, o.keep_dir.empty()});
        }
    }
    for (const auto& [name, file] : o.extra) out.push_back({name, file, false});
    return out;
}

nlohmann::json measure_variant(const AttnEvalOptions& o, const KvEvalPlan& plan, const Variant& v,
                               const std::string& text, int& threads,
                               const std::function<void(const std::string&)>& progress) {
    if (progress) progress(v.name + ": loading " + v.file.string());
    EngineSettings s;
    s.threads = o.threads;
    s.batch = o.batch;
    s.ctx = 16;  // load_model's own cache is unused: every measurement builds its own
    LoadedModel m = load_model(v.file, s);
    threads = m.backend->threads();
    const AttentionVariant a = attention_variant(m.model->hparams());
    nlohmann::json bytes = nlohmann::json::object();
    for (const KvTypes& t : plan.kv_types)
        bytes[kv_types_name(t)] = m.model->create_kv(16, 1, t)->shape().bytes_per_token();
    KvEvalPlan p = plan;
    p.passkey_format =
        resolve_passkey_format(o.passkey_format, !m.model->chat_template_text().empty());
    const std::vector<int32_t> tokens = eval_text_tokens(*m.model, text);
    const std::vector<KvEvalCell> cells =
        run_kv_eval(*m.model, tokens, p, [&](const std::string& msg) {
            if (progress) progress(v.name + ": " + msg);
        });
    return {{"name", v.name},
            {"file", v.temporary ? "" : v.file.string()},
            {"attention", a.name},
            {"query_heads_per_kv_head", a.q_per_kv},
            {"latent_rank", a.latent_rank},
            {"text_tokens", int64_t(tokens.size())},
            {"passkey_format", passkey_format_name(p.passkey_format)},
            {"kv_bytes_per_token", bytes},
            {"cells", kv_eval_cells_json(cells)}};
}

}  // namespace

std::vector<std::pair<std::string, std::filesystem::path>> parse_variant_specs(
    const std::vector<std::string>& specs, const std::string& flag) {
    std::vector<std::pair<std::string, std::filesystem::path>> out;
    for (const std::string& s : specs) {
        const size_t eq = s.find('=');
        if (eq == 0 || eq == std::string::npos || eq + 1 == s.size())
            throw Error(flag + " '" + s + "': expected NAME=FILE");
        out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
    return out;
}

nlohmann::json run_attn_eval(const AttnEvalOptions& opt,
                             const std::function<void(const std::string&)>& progress) {
    KvEvalPlan plan = opt.plan;
    plan.policies = {KvPolicyKind::Full};
    plan.budgets = {KvBudget{}};
    const std::string text = read_eval_text(opt.text);
    // The calibration, after every token a task reads: no score is measured on what was fitted.
    std::optional<AttnCalibration> cal;
    nlohmann::json cal_json = nullptr;
    const Hparams hp = read_hparams(gguf::GgufFile::open(opt.model));
    const bool fits = (opt.mqa && mergeable(hp)) || !opt.mla_ranks.empty();
    if (opt.calibrate_tokens > 0 && fits) {
        AttnCalibrationOptions co;
        co.text = opt.text;
        const auto uses = [&](KvEvalTask t) {
            return std::find(plan.tasks.begin(), plan.tasks.end(), t) != plan.tasks.end();
        };
        if (uses(KvEvalTask::Ppl) && plan.ppl_tokens == 0)
            throw Error(
                "calibration: perplexity reads the whole text, leaving none to fit to; "
                "give a number of perplexity tokens, or 0 calibration tokens");
        if (uses(KvEvalTask::Ppl)) co.skip = plan.ppl_tokens;
        if (uses(KvEvalTask::Passkey))
            for (const int64_t n : plan.passkey_lengths) co.skip = std::max(co.skip, n);
        if (uses(KvEvalTask::Speed))
            for (const int64_t n : plan.speed_contexts) co.skip = std::max(co.skip, n);
        co.tokens = opt.calibrate_tokens;
        co.threads = opt.threads;
        if (progress)
            progress("calibrating on " + std::to_string(co.tokens) + " tokens after the first " +
                     std::to_string(co.skip));
        cal = calibrate_attn_inputs(opt.model, co);
        cal_json = {{"text", eval_text_name(opt.text)},
                    {"skip", co.skip},
                    {"tokens", cal->gram.tokens},
                    {"ppl", cal->ppl}};
    }
    TemporaryFiles temps;
    const std::vector<Variant> variants =
        make_variants(opt, hp, cal ? &cal->gram : nullptr, temps, progress);
    int threads = 0;
    nlohmann::json vs = nlohmann::json::array();
    for (const Variant& v : variants)
        vs.push_back(measure_variant(opt, plan, v, text, threads, progress));
    return {{"model", opt.model.string()},
            {"text", eval_text_name(opt.text)},
            {"ppl_tokens", plan.ppl_tokens},
            {"fine_tuned", false},
            {"calibration", cal_json},
            {"threads", threads},
            {"variants", vs}};
}

}  // namespace fluoro::app
