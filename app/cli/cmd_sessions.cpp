// `fluoro sessions list|show|export|import|delete`: the stored conversations of the session
// database (--db, default $XDG_DATA_HOME/fluoroscope/sessions.db).
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "export/csv_export.h"
#include "export/json_export.h"
#include "export/markdown_export.h"
#include "export/trace_export.h"
#include "store/data_dir.h"
#include "store/store.h"

namespace fluoro::cli {
namespace {

struct SessionOpts {
    std::string db, format = "json", output, input;
    int64_t id = 0, run = 0;
};

std::filesystem::path db_path(const SessionOpts& o) {
    return o.db.empty() ? app::default_db_path() : std::filesystem::path(o.db);
}

// The database the reading commands open: one that exists. Opening creates a database, and a
// mistyped --db path must not leave an empty one behind; only `import` (and the saving commands)
// create it.
std::filesystem::path existing_db(const SessionOpts& o) {
    const std::filesystem::path p = db_path(o);
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))
        throw Error("no session database at " + p.string() +
                    " (`fluoro chat --save`, `fluoro run --save` or `sessions import` creates it)");
    return p;
}

void write_output(const std::string& text, const std::string& path) {
    if (path.empty() || path == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw Error("cannot write " + path);
}

// The run a per-run export covers: --run, else the conversation's last one.
const app::RunRecord& pick_run(const app::ConversationRecord& c, int64_t run) {
    if (c.runs.empty())
        throw Error("conversation " + std::to_string(c.id) + " has no runs to export");
    if (run == 0) return c.runs.back();
    for (const auto& r : c.runs)
        if (r.id == run) return r;
    throw Error("run " + std::to_string(run) + " is not part of conversation " +
                std::to_string(c.id));
}

void list(const SessionOpts& o) {
    std::error_code ec;
    if (!std::filesystem::exists(db_path(o), ec)) {
        std::cout << "no conversations: no session database at " << db_path(o).string() << '\n';
        return;
    }
    app::Store store(db_path(o));
    const auto all = store.list_conversations();
    if (all.empty()) {
        std::cout << "no conversations in " << store.path().string() << '\n';
        return;
    }
    std::cout << "| id | created | messages | runs | incomplete | title |\n"
                 "| --- | --- | --- | --- | --- | --- |\n";
    for (const auto& c : all)
        std::cout << "| " << c.id << " | " << c.created_at << " | " << c.messages << " | " << c.runs
                  << " | " << c.incomplete << " | " << c.title << " |\n";
}

void show(const SessionOpts& o) {
    app::Store store(existing_db(o));
    std::cout << app::conversation_markdown(store.load_conversation(o.id));
}

void export_one(const SessionOpts& o) {
    app::Store store(existing_db(o));
    const app::ConversationRecord c = store.load_conversation(o.id);
    std::string text;
    if (o.format == "json")
        text = app::conversation_to_json(c).dump(1) + "\n";
    else if (o.format == "md")
        text = app::conversation_markdown(c);
    else if (o.format == "csv")
        text = app::run_tokens_csv(pick_run(c, o.run));
    else if (o.format == "trace")
        text = app::run_to_chrome_trace(pick_run(c, o.run)).dump() + "\n";
    else
        throw Error("--format must be json, md, csv or trace, not '" + o.format + "'");
    write_output(text, o.output);
}

void import_one(const SessionOpts& o) {
    const app::ConversationRecord c = app::conversation_from_file(o.input);
    app::Store store(db_path(o));
    std::cout << "imported " << o.input << " as conversation " << store.insert_conversation(c)
              << '\n';
}

void delete_one(const SessionOpts& o) {
    app::Store store(existing_db(o));
    store.delete_conversation(o.id);
    std::cout << "deleted conversation " << o.id << '\n';
}

}  // namespace

void add_sessions_command(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("sessions", "Stored conversations: list, show, export, import, delete");
    cmd->require_subcommand(1);
    auto o = std::make_shared<SessionOpts>();
    cmd->add_option("--db", o->db,
                    "Session database (default: $XDG_DATA_HOME/fluoroscope/sessions.db)");
    cmd->fallthrough();  // `sessions list --db X` as well as `sessions --db X list`

    cmd->add_subcommand("list", "List the conversations")->callback([o] { list(*o); });
    auto* sh = cmd->add_subcommand("show", "Print a conversation as a transcript");
    sh->add_option("id", o->id, "Conversation id")->required();
    sh->callback([o] { show(*o); });
    auto* ex = cmd->add_subcommand(
        "export", "Export a conversation (json, md) or one of its runs (csv, trace)");
    ex->add_option("id", o->id, "Conversation id")->required();
    ex->add_option("-f,--format", o->format, "json, md, csv or trace")->capture_default_str();
    ex->add_option("--run", o->run, "Run id for csv/trace (default: the conversation's last)");
    ex->add_option("-o,--output", o->output, "Output file (default: stdout)");
    ex->callback([o] { export_one(*o); });
    auto* im = cmd->add_subcommand("import", "Import a conversation exported as JSON");
    im->add_option("file", o->input, "JSON file")->required();
    im->callback([o] { import_one(*o); });
    auto* del =
        cmd->add_subcommand("delete", "Delete a conversation and everything recorded in it");
    del->add_option("id", o->id, "Conversation id")->required();
    del->callback([o] { delete_one(*o); });
}

}  // namespace fluoro::cli
