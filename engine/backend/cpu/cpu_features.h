// What this machine's CPU is and can do, for `fluoro info --system`, benchmark reports and
// choosing thread counts: model name, logical/physical cores, caches, memory size and the ISA
// extensions that matter to the kernels. Read from cpuid (x86), /proc/cpuinfo, /proc/meminfo and
// the sysfs cache directory. The parsers take the text or the directory so tests can feed them
// recorded files; detect_cpu() reads the live ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluoro::cpu {

// Instruction-set extensions, each true only when the CPU has it AND the OS saves its registers
// (XCR0), i.e. when code using it can actually run.
struct IsaFeatures {
    bool sse42 = false;
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx_vnni = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool amx_tile = false;
    bool amx_int8 = false;
    bool amx_bf16 = false;
};

// The cpuid words IsaFeatures is decoded from (zero when a leaf is absent).
struct CpuidWords {
    uint32_t max_leaf = 0;
    uint32_t leaf1_ecx = 0;
    uint32_t leaf7_ebx = 0;  // leaf 7, subleaf 0
    uint32_t leaf7_ecx = 0;
    uint32_t leaf7_edx = 0;
    uint32_t leaf7_1_eax = 0;  // leaf 7, subleaf 1
    uint64_t xcr0 = 0;         // xgetbv(0); 0 when OSXSAVE is off
};

IsaFeatures decode_cpuid(const CpuidWords& w);

// ("AVX2", true), ... in a fixed order: the names `fluoro info --system` prints.
std::vector<std::pair<std::string, bool>> isa_feature_list(const IsaFeatures& f);

struct CacheLevel {
    int level = 0;
    std::string type;         // "Data", "Instruction", "Unified"
    uint64_t size_bytes = 0;  // one instance
    int shared_cpus = 0;      // logical CPUs sharing one instance
};

struct CpuInfo {
    std::string model_name;  // "AMD EPYC 7B13", "" when unknown
    int logical_cpus = 0;    // processors listed by the OS
    int usable_cpus = 0;     // allowed to this process (affinity, container limits)
    int physical_cores = 0;  // distinct (physical id, core id); logical_cpus when not listed
    int sockets = 0;
    uint64_t memory_bytes = 0;  // MemTotal
    std::vector<CacheLevel> caches;
    IsaFeatures isa;
};

// The parts of /proc/cpuinfo CpuInfo needs: model_name, logical_cpus, physical_cores, sockets.
CpuInfo parse_proc_cpuinfo(std::string_view text);
// MemTotal from /proc/meminfo in bytes; 0 when absent.
uint64_t parse_meminfo_total(std::string_view text);
// "32K" -> 32768, "1024K", "32M", "512" (bytes); 0 when unreadable.
uint64_t parse_cache_size(std::string_view text);
// "0-3,8,10-11" -> 7; 0 when unreadable.
int count_cpu_list(std::string_view text);
// The cache levels of one CPU from its sysfs directory (…/cpu0/cache: index*/level, type, size,
// shared_cpu_list), sorted by level then type; empty when the directory is missing.
std::vector<CacheLevel> read_sysfs_caches(const std::filesystem::path& cache_dir);

// Everything above for this machine (cpuid on x86; no ISA features elsewhere).
CpuInfo detect_cpu();

// The name of the kernel path the engine picked (best_cpu_isa()): "generic", "avx2", ...
std::string kernel_isa_name();

}  // namespace fluoro::cpu
