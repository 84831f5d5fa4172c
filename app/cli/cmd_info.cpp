#include "cli/commands.h"

#include <iostream>

#include "report/model_report.h"

namespace fluoro::cli {

void add_info_command(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("info", "Show a GGUF model's architecture, tokenizer and tensors");
    struct Opts {
        std::string model;
        bool json = false;
        bool no_tensors = false;
    };
    auto opts = std::make_shared<Opts>();
    cmd->add_option("model", opts->model, "GGUF model file")->required();
    cmd->add_flag("--json", opts->json, "Print the report as JSON");
    cmd->add_flag("--no-tensors", opts->no_tensors, "Leave out the per-tensor table");
    cmd->callback([opts] {
        const auto report = app::model_report_json(opts->model, {.tensors = !opts->no_tensors});
        if (opts->json)
            std::cout << report.dump(2) << '\n';
        else
            std::cout << app::model_report_text(report);
    });
}

}  // namespace fluoro::cli
