// The `fluoro` command: subcommands over the engine. Errors from the engine (bad files, bad
// input) are reported as one clear line and exit code 1; the engine never aborts on input.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "common/version.h"
#include "core/error.h"

int main(int argc, char** argv) {
    CLI::App cli{"fluoro: run and inspect local LLMs (GGUF)"};
    cli.set_version_flag("--version", std::string(fluoro::app::version()));
    cli.require_subcommand(1);
    fluoro::cli::add_info_command(cli);
    fluoro::cli::add_run_command(cli);
    fluoro::cli::add_chat_command(cli);
    fluoro::cli::add_bench_command(cli);
    fluoro::cli::add_ppl_command(cli);
    fluoro::cli::add_sessions_command(cli);
    fluoro::cli::add_trace_command(cli);
    fluoro::cli::add_attn_command(cli);
    fluoro::cli::add_lens_command(cli);
    fluoro::cli::add_eval_command(cli);
    fluoro::cli::add_serve_command(cli);
    fluoro::cli::add_cache_command(cli);
    fluoro::cli::add_compare_command(cli);
    fluoro::cli::add_profile_command(cli);
    fluoro::cli::add_convert_command(cli);
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e);
    } catch (const fluoro::Error& e) {
        std::cerr << "fluoro: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "fluoro: internal error: " << e.what() << '\n';
        return 2;
    }
    return 0;
}
