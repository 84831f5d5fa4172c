// `fluoro cache advise`: the prompt-order advisor over the requests recorded in the session
// database (app/advisor): what the prompts share, what breaks prefix reuse, and the hit rate with
// stable content first.
#include <iostream>

#include "advisor/cache_advise.h"
#include "cli/commands.h"
#include "store/data_dir.h"

namespace fluoro::cli {

void add_cache_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("cache", "Prefix cache tools over recorded requests");
    cmd->require_subcommand(1);
    struct Opts {
        std::string db, model;
        int64_t last = 0;
        bool json = false;
    };
    auto o = std::make_shared<Opts>();
    auto* adv = cmd->add_subcommand("advise",
                                    "Prompt-order advisor: shared prefixes, cache breakers, hit "
                                    "rate with stable content first");
    adv->add_option("--db", o->db,
                    "Session database (default: $XDG_DATA_HOME/fluoroscope/sessions.db)");
    adv->add_option("--last", o->last, "Only the latest N requests")->check(CLI::PositiveNumber);
    adv->add_option("--model", o->model,
                    "Model whose requests to analyse: a substring of its path or name (default: "
                    "the model of the latest run)");
    adv->add_flag("--json", o->json, "Machine-readable report");
    adv->callback([o] {
        app::CacheAdviseOptions opt;
        opt.db = o->db.empty() ? app::default_db_path() : std::filesystem::path(o->db);
        opt.last = o->last;
        opt.model = o->model;
        opt.json = o->json;
        std::cout << app::cache_advise_report(opt);
    });
}

}  // namespace fluoro::cli
