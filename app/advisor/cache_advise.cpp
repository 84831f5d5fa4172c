#include "advisor/cache_advise.h"

#include <nlohmann/json.hpp>

#include "advisor/advice_report.h"
#include "advisor/prompt_advisor.h"
#include "advisor/recorded_requests.h"
#include "core/error.h"
#include "store/store.h"

namespace fluoro::app {
namespace {

RecordedRequests load(const CacheAdviseOptions& opt) {
    std::error_code ec;
    if (!std::filesystem::exists(opt.db, ec))
        throw Error("no session database at " + opt.db.string() +
                    ": record requests first (`fluoro serve --save`, `fluoro chat --save`) or "
                    "name one with --db");
    if (opt.last < 0) throw Error("--last must be at least 1, not " + std::to_string(opt.last));
    Store store(opt.db);
    RecordedRequests rec = load_recorded_requests(store, {opt.last, opt.model});
    rec.filled_from_model = fill_missing_pieces(rec.requests, rec.model_path);
    return rec;
}

std::string header_text(const CacheAdviseOptions& opt, const RecordedRequests& rec) {
    std::string out = std::to_string(rec.requests.size()) + " recorded request(s) on " +
                      rec.model_name + " from " + opt.db.string();
    if (!rec.requests.empty())
        out += " (" + rec.requests.front().id + " .. " + rec.requests.back().id + ")";
    out += "\n";
    for (const auto& o : rec.other_models)
        out += "  also recorded: " + o.name + " (" + std::to_string(o.runs) +
               " runs; pick it with --model)\n";
    if (rec.without_prompt > 0)
        out += std::string("  ") + std::to_string(rec.without_prompt) +
               " older run(s) without prompt token ids left out\n";
    if (rec.filled_from_model > 0)
        out += "  token text of " + std::to_string(rec.filled_from_model) +
               " request(s) taken from " + rec.model_path + "\n";
    return out + "\n";
}

nlohmann::ordered_json header_json(const CacheAdviseOptions& opt, const RecordedRequests& rec) {
    nlohmann::ordered_json others = nlohmann::ordered_json::array();
    for (const auto& o : rec.other_models) others.push_back({{"model", o.name}, {"runs", o.runs}});
    return {{"database", opt.db.string()},
            {"model", rec.model_name},
            {"model_path", rec.model_path},
            {"requests_analysed", rec.requests.size()},
            {"runs_without_prompt_ids", rec.without_prompt},
            {"other_models", others}};
}

}  // namespace

std::string cache_advise_report(const CacheAdviseOptions& opt) {
    const RecordedRequests rec = load(opt);
    if (rec.requests.empty() && !opt.json) {
        std::string why = opt.model.empty() ? "" : " for a model matching '" + opt.model + "'";
        return "no recorded requests with prompt token ids" + why + " in " + opt.db.string() + "\n";
    }
    const PromptAdvice advice = advise_prompt_order(rec.requests);
    if (opt.json) {
        nlohmann::ordered_json j = header_json(opt, rec);
        const nlohmann::ordered_json body = advice_json(advice, rec.requests);
        for (const auto& [key, value] : body.items()) j[key] = value;
        return j.dump(2) + "\n";
    }
    return header_text(opt, rec) + advice_text(advice, rec.requests);
}

}  // namespace fluoro::app
