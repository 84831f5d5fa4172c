#include "backend/cpu/cpu_features.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "backend/cpu/kernels/vec_dot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FLUORO_X86 1
#endif
#if defined(__linux__)
#include <sched.h>
#endif

namespace fluoro::cpu {
namespace {

bool bit(uint32_t word, int n) {
    return (word >> n) & 1u;
}

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

uint64_t to_u64(std::string_view s) {
    uint64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() ? v : 0;
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// "key<tabs>: value" lines; calls fn(key, value) for each.
template <typename Fn>
void for_each_field(std::string_view text, Fn&& fn) {
    while (!text.empty()) {
        const auto nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        const auto colon = line.find(':');
        if (colon != std::string_view::npos)
            fn(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
    }
}

#ifdef FLUORO_X86
CpuidWords read_cpuid() {
    CpuidWords w;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return w;
    w.max_leaf = a;
    if (w.max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) w.leaf1_ecx = c;
    if (w.max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        w.leaf7_ebx = b;
        w.leaf7_ecx = c;
        w.leaf7_edx = d;
        const unsigned subleaves = a;
        if (subleaves >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            w.leaf7_1_eax = a;
        }
    }
    if (bit(w.leaf1_ecx, 27)) {  // OSXSAVE: xgetbv is allowed
        uint32_t lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        w.xcr0 = (uint64_t(hi) << 32) | lo;
    }
    return w;
}

std::string cpuid_brand() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000004u) return {};
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
        __get_cpuid(0x80000002u + leaf, &a, &b, &c, &d);
        const unsigned regs[4] = {a, b, c, d};
        for (int r = 0; r < 4; ++r)
            for (int i = 0; i < 4; ++i)
                brand[leaf * 16 + unsigned(r) * 4 + unsigned(i)] =
                    char((regs[r] >> (8 * i)) & 0xff);
    }
    return std::string(trim(brand));
}
#endif

}  // namespace

IsaFeatures decode_cpuid(const CpuidWords& w) {
    // The OS must save the registers: XMM|YMM for AVX, plus opmask|ZMM_Hi256|Hi16_ZMM for
    // AVX-512, plus XTILECFG|XTILEDATA for AMX.
    const bool os_avx = (w.xcr0 & 0x6) == 0x6;
    const bool os_avx512 = os_avx && (w.xcr0 & 0xe0) == 0xe0;
    const bool os_amx = (w.xcr0 & 0x60000) == 0x60000;
    const bool leaf7 = w.max_leaf >= 7;
    IsaFeatures f;
    f.sse42 = bit(w.leaf1_ecx, 20);
    f.avx = os_avx && bit(w.leaf1_ecx, 28);
    f.fma = f.avx && bit(w.leaf1_ecx, 12);
    f.f16c = f.avx && bit(w.leaf1_ecx, 29);
    f.avx2 = f.avx && leaf7 && bit(w.leaf7_ebx, 5);
    f.avx_vnni = f.avx2 && bit(w.leaf7_1_eax, 4);
    f.avx512f = os_avx512 && leaf7 && bit(w.leaf7_ebx, 16);
    f.avx512bw = f.avx512f && bit(w.leaf7_ebx, 30);
    f.avx512vl = f.avx512f && bit(w.leaf7_ebx, 31);
    f.avx512vnni = f.avx512f && bit(w.leaf7_ecx, 11);
    f.avx512bf16 = f.avx512f && bit(w.leaf7_1_eax, 5);
    f.amx_tile = os_amx && leaf7 && bit(w.leaf7_edx, 24);
    f.amx_int8 = f.amx_tile && bit(w.leaf7_edx, 25);
    f.amx_bf16 = f.amx_tile && bit(w.leaf7_edx, 22);
    return f;
}

std::vector<std::pair<std::string, bool>> isa_feature_list(const IsaFeatures& f) {
    return {{"SSE4.2", f.sse42},
            {"AVX", f.avx},
            {"AVX2", f.avx2},
            {"FMA", f.fma},
            {"F16C", f.f16c},
            {"AVX-VNNI", f.avx_vnni},
            {"AVX-512F", f.avx512f},
            {"AVX-512BW", f.avx512bw},
            {"AVX-512VL", f.avx512vl},
            {"AVX-512VNNI", f.avx512vnni},
            {"AVX-512BF16", f.avx512bf16},
            {"AMX-TILE", f.amx_tile},
            {"AMX-INT8", f.amx_int8},
            {"AMX-BF16", f.amx_bf16}};
}

CpuInfo parse_proc_cpuinfo(std::string_view text) {
    CpuInfo info;
    std::set<std::pair<std::string, std::string>> cores;
    std::set<std::string> sockets;
    std::string phys;  // "" until a block names its socket
    for_each_field(text, [&](std::string_view key, std::string_view value) {
        if (key == "processor") {
            ++info.logical_cpus;
            phys.clear();
        } else if (key == "model name" && info.model_name.empty()) {
            info.model_name = value;
        } else if (key == "physical id") {
            phys = value;
            sockets.insert(phys);
        } else if (key == "core id") {
            cores.emplace(phys, value);
        }
    });
    info.physical_cores = cores.empty() ? info.logical_cpus : int(cores.size());
    info.sockets = sockets.empty() ? (info.logical_cpus > 0 ? 1 : 0) : int(sockets.size());
    return info;
}

uint64_t parse_meminfo_total(std::string_view text) {
    uint64_t bytes = 0;
    for_each_field(text, [&](std::string_view key, std::string_view value) {
        if (key != "MemTotal") return;
        const auto space = value.find(' ');
        const uint64_t n = to_u64(value.substr(0, space));
        const bool kb = space != std::string_view::npos && trim(value.substr(space)) == "kB";
        bytes = kb ? n * 1024 : n;
    });
    return bytes;
}

uint64_t parse_cache_size(std::string_view text) {
    text = trim(text);
    if (text.empty()) return 0;
    uint64_t unit = 1;
    switch (text.back()) {
        case 'K':
            unit = uint64_t(1) << 10;
            break;
        case 'M':
            unit = uint64_t(1) << 20;
            break;
        case 'G':
            unit = uint64_t(1) << 30;
            break;
        default:
            break;
    }
    if (unit != 1) text.remove_suffix(1);
    return to_u64(text) * unit;
}

int count_cpu_list(std::string_view text) {
    text = trim(text);
    int n = 0;
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view part = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        const auto dash = part.find('-');
        if (dash == std::string_view::npos) {
            if (part.empty() || (to_u64(part) == 0 && part != "0")) return 0;
            ++n;
            continue;
        }
        const uint64_t lo = to_u64(part.substr(0, dash)), hi = to_u64(part.substr(dash + 1));
        if (hi < lo) return 0;
        n += int(hi - lo + 1);
    }
    return n;
}

std::vector<CacheLevel> read_sysfs_caches(const std::filesystem::path& cache_dir) {
    std::vector<CacheLevel> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
        if (entry.path().filename().string().rfind("index", 0) != 0) continue;
        const auto field = [&](const char* name) {
            return std::string(trim(read_text(entry.path() / name)));
        };
        CacheLevel c;
        c.level = int(to_u64(field("level")));
        c.type = field("type");
        c.size_bytes = parse_cache_size(field("size"));
        c.shared_cpus = count_cpu_list(field("shared_cpu_list"));
        if (c.level > 0) out.push_back(std::move(c));
    }
    std::sort(out.begin(), out.end(), [](const CacheLevel& a, const CacheLevel& b) {
        return std::tie(a.level, a.type) < std::tie(b.level, b.type);
    });
    return out;
}

CpuInfo detect_cpu() {
    CpuInfo info = parse_proc_cpuinfo(read_text("/proc/cpuinfo"));
    info.memory_bytes = parse_meminfo_total(read_text("/proc/meminfo"));
    info.caches = read_sysfs_caches("/sys/devices/system/cpu/cpu0/cache");
    if (info.logical_cpus == 0) {
        info.logical_cpus = int(std::max(1u, std::thread::hardware_concurrency()));
        info.physical_cores = info.logical_cpus;
        info.sockets = 1;
    }
    info.usable_cpus = info.logical_cpus;
#if defined(__linux__)
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
        info.usable_cpus = CPU_COUNT(&allowed);
#endif
#ifdef FLUORO_X86
    info.isa = decode_cpuid(read_cpuid());
    if (info.model_name.empty()) info.model_name = cpuid_brand();
#endif
    return info;
}

namespace {

// vec_dot.h's own cpu_isa_name(CpuIsa) when it has one (found by argument-dependent lookup), else
// a switch whose default case keeps compiling when a path is added to CpuIsa.
template <typename Isa>
std::string isa_name(Isa isa) {
    if constexpr (requires { cpu_isa_name(isa); }) {
        return std::string(cpu_isa_name(isa));
    } else {
        switch (isa) {
            case Isa::Generic:
                return "generic";
            case Isa::Avx2:
                return "avx2";
            default:
                return "isa " + std::to_string(int(isa));
        }
    }
}

}  // namespace

std::string kernel_isa_name() {
    return isa_name(best_cpu_isa());
}

}  // namespace fluoro::cpu
