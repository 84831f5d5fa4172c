#include "measure/kv_eval_plan.h"

#include <optional>
#include <sstream>

#include "core/error.h"
#include "settings/settings.h"

namespace fluoro::app {
namespace {

template <typename T, typename Parse>
std::vector<T> parse_names(const std::string& flag, const std::string& list, Parse parse,
                           const std::string& valid) {
    std::vector<T> out;
    for (const std::string& name : split_comma_list(list)) {
        const std::optional<T> v = parse(name);
        if (!v) throw Error(flag + ": unknown name '" + name + "'; valid: " + valid);
        out.push_back(*v);
    }
    if (out.empty()) throw Error(flag + " is empty; valid: " + valid);
    return out;
}

std::vector<int64_t> parse_ints(const std::string& flag, const std::string& list, int64_t min,
                                int64_t max) {
    std::vector<int64_t> out;
    for (const std::string& item : split_comma_list(list)) {
        size_t used = 0;
        int64_t v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || v < min || v > max)
            throw Error(flag + ": '" + item + "' is not a whole number in [" + std::to_string(min) +
                        ", " + std::to_string(max) + "]");
        out.push_back(v);
    }
    return out;
}

}  // namespace

KvEvalPlanText::KvEvalPlanText() : policies(setting_names(kv_policies(), ",", ",")) {}

std::vector<std::string> split_comma_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

void parse_kv_eval_plan(const KvEvalPlanText& t, KvEvalPlan& p) {
    p.policies = parse_names<KvPolicyKind>("--policies", t.policies, parse_kv_policy,
                                           setting_names(kv_policies(), ", ", ", "));
    p.budgets.clear();
    for (const std::string& b : split_comma_list(t.budgets)) {
        const std::optional<KvBudget> v = parse_kv_budget(b);
        if (!v)
            throw Error("--budgets: '" + b +
                        "' is neither a percentage in (0%, 100%] nor a token count >= 1");
        p.budgets.push_back(*v);
    }
    if (p.budgets.empty()) throw Error("--budgets is empty; e.g. 100%,50%,20%,10%,256");
    p.kv_types = parse_names<KvTypes>(
        "--kv-types", t.kv_types, parse_kv_types,
        setting_names(kv_types(), ", ", ", ") + " (or keys/values, e.g. q8_0/f16)");
    p.tasks =
        parse_names<KvEvalTask>("--tasks", t.tasks, parse_kv_eval_task, "ppl, passkey, speed");
    p.passkey_lengths = parse_ints("--passkey-lengths", t.passkey_lengths, 64, 1 << 20);
    p.passkey_depths.clear();
    for (const int64_t d : parse_ints("--depths", t.depths, 0, 100))
        p.passkey_depths.push_back(double(d) / 100.0);
    p.speed_contexts = parse_ints("--speed-contexts", t.speed_contexts, 128, 1 << 20);
    if (t.passkey_format != "auto" && t.passkey_format != "chat" && t.passkey_format != "plain")
        throw Error("--passkey-format: unknown name '" + t.passkey_format +
                    "'; valid: auto, chat, plain");
    if (p.ppl_tokens < 0) throw Error("--ppl-tokens must be >= 0 (0 = the whole text)");
    if (p.ppl_bucket < 1) throw Error("--bucket must be at least 1 token");
    if (p.speed_gen < 1) throw Error("--speed-gen must be at least 1");
}

PasskeyFormat resolve_passkey_format(const std::string& name, bool has_chat_template) {
    if (name == "chat") return PasskeyFormat::Chat;
    if (name == "plain") return PasskeyFormat::Plain;
    return has_chat_template ? PasskeyFormat::Chat : PasskeyFormat::Plain;
}

}  // namespace fluoro::app
