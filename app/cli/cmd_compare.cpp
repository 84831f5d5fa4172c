// `fluoro compare RUN_A RUN_B`: two recorded runs side by side (app/compare/run_compare.h) as a
// Markdown report or JSON. A run is a run id of the session database (--db) or an exported
// conversation (`fluoro sessions export`, File → Export), FILE.json for its last run or
// FILE.json#K for its K-th (1-based).
#include <charconv>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "compare/run_compare.h"
#include "core/error.h"
#include "export/json_export.h"
#include "store/data_dir.h"
#include "store/store.h"

namespace fluoro::cli {
namespace {

struct CompareOpts {
    std::string a, b, db, format = "md", output;
};

std::optional<int64_t> run_id(const std::string& s) {
    int64_t id = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
    if (ec != std::errc() || end != s.data() + s.size() || id <= 0) return std::nullopt;
    return id;
}

struct Loaded {
    app::RunRecord run;
    std::string label;
};

// A run id from the database, or FILE.json[#K] from an exported conversation.
Loaded load(const std::string& spec, const CompareOpts& o) {
    if (const std::optional<int64_t> id = run_id(spec)) {
        const std::filesystem::path db =
            o.db.empty() ? app::default_db_path() : std::filesystem::path(o.db);
        std::error_code ec;
        if (!std::filesystem::exists(db, ec))
            throw Error("no session database at " + db.string() + " (run '" + spec +
                        "' is a run id; give an exported FILE.json for a file)");
        app::Store store(db);
        return {store.load_run(*id), "run " + spec};
    }
    std::string file = spec;
    int64_t k = 0;  // 0: the last run
    if (const size_t hash = spec.rfind('#'); hash != std::string::npos) {
        const std::optional<int64_t> n = run_id(spec.substr(hash + 1));
        if (!n)
            throw Error("'" + spec + "': after '#' comes the run's number in the file (1, 2, ...)");
        k = *n;
        file = spec.substr(0, hash);
    }
    app::ConversationRecord c = app::conversation_from_file(file);
    if (c.runs.empty()) throw Error(file + ": the conversation has no runs");
    if (k > int64_t(c.runs.size()))
        throw Error(file + ": has " + std::to_string(c.runs.size()) + " runs, not " +
                    std::to_string(k));
    const size_t i = k > 0 ? size_t(k - 1) : c.runs.size() - 1;
    return {std::move(c.runs[i]),
            std::filesystem::path(file).filename().string() + "#" + std::to_string(i + 1)};
}

void compare(const CompareOpts& o) {
    if (o.format != "md" && o.format != "json")
        throw Error("--format must be md or json, not '" + o.format + "'");
    const Loaded a = load(o.a, o), b = load(o.b, o);
    const app::RunComparison c = app::compare_runs(a.run, b.run);
    const std::string text = o.format == "json"
                                 ? app::comparison_json(c, a.label, b.label).dump(2) + "\n"
                                 : app::comparison_markdown(c, a.run, b.run, a.label, b.label);
    if (o.output.empty() || o.output == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw Error("cannot write " + o.output);
}

}  // namespace

void add_compare_command(CLI::App& app) {
    auto o = std::make_shared<CompareOpts>();
    auto* cmd = app.add_subcommand(
        "compare",
        "Compare two recorded runs: settings, figures, time per operation, where the tokens "
        "part (a run id of the session database, or an exported FILE.json[#K])");
    cmd->add_option("run_a", o->a, "Run id, or exported conversation FILE.json[#K]")->required();
    cmd->add_option("run_b", o->b, "Run id, or exported conversation FILE.json[#K]")->required();
    cmd->add_option("--db", o->db,
                    "Session database (default: $XDG_DATA_HOME/fluoroscope/sessions.db)");
    cmd->add_option("-f,--format", o->format, "md (a Markdown report) or json")
        ->capture_default_str();
    cmd->add_option("-o,--output", o->output, "Output file (default: stdout)");
    cmd->callback([o] { compare(*o); });
}

}  // namespace fluoro::cli
