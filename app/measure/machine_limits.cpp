#include "measure/machine_limits.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace fluoro::app {

std::optional<MachineLimits> measure_machine_limits(int threads, int runs) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec || threads < 1 || runs < 1) return std::nullopt;
    for (const std::filesystem::path& p :
         {self.parent_path() / "fluoro_membw",
          self.parent_path().parent_path() / "bench" / "fluoro_membw"}) {
        if (!std::filesystem::exists(p, ec)) continue;
        std::string cmd = "'";  // appended: GCC 12 warns falsely on "x" + string
        cmd += p.string();
        cmd += "' --size-mib 512 --runs " + std::to_string(runs) + " --threads " +
               std::to_string(threads) + " --json 2>/dev/null";
        FILE* pipe = popen(cmd.c_str(), "r");
        if (!pipe) return std::nullopt;
        std::string out;
        char buf[4096];
        while (const size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
        if (pclose(pipe) != 0) return std::nullopt;
        const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
        if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
            return std::nullopt;
        MachineLimits m;
        for (const nlohmann::json& r : j["results"]) {
            if (!r.is_object() || r.value("threads", 0) != threads) continue;
            const std::string kernel = r.value("kernel", "");
            if (kernel == "read") m.read_gbs = r.value("best_gbs", 0.0);
            if (kernel == "fma") m.fma_gflops = r.value("best_gops", 0.0);
            if (kernel == "int8") m.int8_gops = r.value("best_gops", 0.0);
        }
        if (m.read_gbs <= 0) return std::nullopt;
        return m;
    }
    return std::nullopt;
}

double compute_peak(const MachineLimits& m, int32_t weight_type) {
    return uses_int8_dot(weight_type) ? m.int8_gops : m.fma_gflops;
}

double floor_seconds(const MachineLimits& m, double bytes, double flops, int32_t weight_type) {
    const double peak = compute_peak(m, weight_type);
    const double mem = m.read_gbs > 0 ? bytes / (m.read_gbs * 1e9) : 0;
    const double compute = peak > 0 ? flops / (peak * 1e9) : 0;
    return std::max(mem, compute);
}

}  // namespace fluoro::app
