#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/thread_pool.h"
#include "cli/commands.h"
#include "common/format.h"
#include "core/error.h"
#include "report/model_report.h"
#include "session/backend_factory.h"

namespace fluoro::cli {
namespace {

// `fluoro info --system`: the CPU the engine runs on and what it will do with it.
nlohmann::ordered_json system_report_json() {
    const cpu::CpuInfo c = cpu::detect_cpu();
    nlohmann::ordered_json caches = nlohmann::ordered_json::array();
    for (const auto& k : c.caches)
        caches.push_back({{"level", k.level},
                          {"type", k.type},
                          {"size_bytes", k.size_bytes},
                          {"shared_cpus", k.shared_cpus}});
    nlohmann::ordered_json isa = nlohmann::ordered_json::object();  // cpu_features' order
    for (const auto& [name, has] : cpu::isa_feature_list(c.isa)) isa[name] = has;
    return {{"cpu", c.model_name},
            {"logical_cpus", c.logical_cpus},
            {"usable_cpus", c.usable_cpus},
            {"physical_cores", c.physical_cores},
            {"sockets", c.sockets},
            {"memory_bytes", c.memory_bytes},
            {"caches", caches},
            {"isa", isa},
            {"default_threads", cpu::ThreadPool::default_threads()},
            {"kernel_isa", cpu::kernel_isa_name()},
            {"cuda", app::cuda_status()}};
}

std::string system_report_text(const nlohmann::ordered_json& j) {
    std::string out;
    const auto line = [&](const std::string& label, const std::string& value) {
        out +=
            "  " + label + std::string(24 - std::min<size_t>(23, label.size()), ' ') + value + '\n';
    };
    const auto n = [&](const char* key) { return std::to_string(j[key].get<int64_t>()); };
    out += "system\n";
    line("cpu", j["cpu"].get<std::string>().empty() ? "(unknown)" : j["cpu"].get<std::string>());
    line("cores", n("logical_cpus") + " logical (" + n("usable_cpus") + " usable), " +
                      n("physical_cores") + " physical, " + n("sockets") + " socket(s)");
    line("memory", app::format_bytes(j["memory_bytes"].get<uint64_t>()));
    for (const auto& k : j["caches"]) {
        const std::string type = k["type"] == "Data" ? "d" : k["type"] == "Instruction" ? "i" : "";
        line("L" + std::to_string(k["level"].get<int>()) + type + " cache",
             app::format_bytes(k["size_bytes"].get<uint64_t>()) + " (shared by " +
                 std::to_string(k["shared_cpus"].get<int>()) + " CPUs)");
    }
    std::string has, lacks;
    for (const auto& [name, v] : j["isa"].items()) (v.get<bool>() ? has : lacks) += " " + name;
    line("ISA", has.empty() ? "(none detected)" : has.substr(1));
    if (!lacks.empty()) line("ISA (not available)", lacks.substr(1));
    line("default threads", n("default_threads") + " (physical cores usable by this process)");
    line("kernel path", j["kernel_isa"].get<std::string>());
    line("CUDA backend", j["cuda"].get<std::string>());
    return out;
}

}  // namespace

void add_info_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "info", "Show a GGUF model's architecture, tokenizer and tensors, or (--system) this CPU");
    struct Opts {
        std::string model;
        bool json = false;
        bool no_tensors = false;
        bool system = false;
    };
    auto opts = std::make_shared<Opts>();
    cmd->add_option("model", opts->model, "GGUF model file");
    cmd->add_flag("--json", opts->json, "Print the report as JSON");
    cmd->add_flag("--no-tensors", opts->no_tensors, "Leave out the per-tensor table");
    cmd->add_flag("--system", opts->system,
                  "Report the CPU instead: cores, caches, ISA, threads and kernel path");
    cmd->callback([opts] {
        if (opts->system) {
            if (!opts->model.empty()) throw Error("info: give a model or --system, not both");
            const auto report = system_report_json();
            std::cout << (opts->json ? report.dump(2) + '\n' : system_report_text(report));
            return;
        }
        if (opts->model.empty()) throw Error("info: give a GGUF model file (or --system)");
        const auto report = app::model_report_json(opts->model, {.tensors = !opts->no_tensors});
        if (opts->json)
            std::cout << report.dump(2) << '\n';
        else
            std::cout << app::model_report_text(report);
    });
}

}  // namespace fluoro::cli
