#include "measure/claim_flash.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/format.h"
#include "eval/attention_io.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

// The largest unified/data cache of CPU 0 at `level` in bytes (0: unknown), from sysfs.
uint64_t cache_bytes(int level) {
    uint64_t best = 0;
    for (int i = 0; i < 8; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i);
        std::ifstream lv(dir + "/level"), ty(dir + "/type"), sz(dir + "/size");
        int l = 0;
        std::string type, size;
        if (!(lv >> l) || !(ty >> type) || !(sz >> size) || l != level || type == "Instruction")
            continue;
        uint64_t n = std::stoull(size);
        if (size.back() == 'K') n <<= 10;
        if (size.back() == 'M') n <<= 20;
        best = std::max(best, n);
    }
    return best;
}

json path_json(const AttentionIoPath& p) {
    return {{"ms", p.ms},
            {"extra_bytes", p.extra_bytes},
            {"score_bytes", p.score_bytes},
            {"kv_bytes", p.kv_bytes}};
}

}  // namespace

json claim_flash_io(const std::vector<int64_t>& contexts) {
    const std::vector<AttentionIoPoint> points = measure_attention_io(contexts);
    json pts = json::array();
    for (const AttentionIoPoint& p : points)
        pts.push_back({{"n", p.n},
                       {"naive", path_json(p.naive)},
                       {"rowwise", path_json(p.rowwise)},
                       {"flash", path_json(p.flash)},
                       {"max_diff_rowwise", p.max_diff_rowwise},
                       {"max_diff_flash", p.max_diff_flash}});
    const AttentionIoPoint& last = points.back();
    const uint64_t l2 = cache_bytes(2), l3 = cache_bytes(3);
    // Rule: at the longest context flash needs at most 1% of the naive path's extra memory and
    // agrees with it to 1e-4 (float sums in another order over up to n terms of values ≤ 1: an
    // error near √n · 2⁻²⁴, far below) — the memory half of the claim; and it is at least 1.5×
    // faster (the paper reports 2–4× on GPUs; less than 1.5× is not "far less traffic, so
    // faster") — the speed half, which depends on the hardware being memory-bound.
    const bool memory_ok = double(last.flash.extra_bytes) <= 0.01 * double(last.naive.extra_bytes);
    const bool faster = last.flash.ms * 1.5 <= last.naive.ms;
    const bool agree = last.max_diff_flash <= 1e-4f && last.max_diff_rowwise <= 1e-4f;
    const std::string why =
        "at n = " + std::to_string(last.n) + " the naive path allocates " +
        format_number("%.1f MiB", double(last.naive.extra_bytes) / 1048576.0) +
        " of scores and takes " + format_number("%.0f ms", last.naive.ms) + ", flash " +
        format_number("%.1f KiB", double(last.flash.extra_bytes) / 1024.0) + " and " +
        format_number("%.0f ms", last.flash.ms) + " (" +
        format_number("%.2f×", last.naive.ms / last.flash.ms) + "), one score row at a time " +
        format_number("%.0f ms", last.rowwise.ms) + "; the score matrix outgrows this CPU's " +
        format_number("%.0f MiB", double(l3) / 1048576.0) + " L3 past n ≈ " +
        std::to_string(int64_t(std::sqrt(double(l3) / 4.0))) + ", while a score row stays in its " +
        format_number("%.0f KiB", double(l2) / 1024.0) +
        " L2 — on a CPU the caches hold what a GPU would send to HBM, which blunts the "
        "difference between the row-wise and flash paths";
    return {{"claim",
             "FlashAttention never materializes the n × n score matrix: memory O(n) instead of "
             "O(n²), and far less memory traffic, so attention over long contexts gets faster."},
            {"verdict", !(memory_ok && agree) ? "not reproduced"
                        : faster              ? "reproduced"
                                 : "depends on hardware: memory yes, speed not on this one"},
            {"why", why + (agree ? "" : " (the outputs disagree!)")},
            {"data", {{"points", pts}, {"l2_bytes", l2}, {"l3_bytes", l3}, {"head_dim", 64}}}};
}

}  // namespace fluoro::app
