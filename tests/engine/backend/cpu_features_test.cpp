// The parsing half of cpu_features: /proc/cpuinfo, /proc/meminfo and sysfs cache text recorded
// from real machines, cpuid words decoded with and without OS support for the wide registers.
#include "backend/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include "test_temp.h"

namespace fluoro::cpu {
namespace {

// Two sockets, two cores each, two hyper-threads per core: 8 logical, 4 physical.
std::string two_socket_cpuinfo() {
    std::string text;
    int processor = 0;
    for (int socket = 0; socket < 2; ++socket)
        for (int thread = 0; thread < 2; ++thread)
            for (int core = 0; core < 2; ++core)
                text += "processor\t: " + std::to_string(processor++) +
                        "\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 "
                        "CPU @ 2.00GHz\nphysical id\t: " +
                        std::to_string(socket) +
                        "\nsiblings\t: 4\ncore id\t\t: " + std::to_string(core) +
                        "\ncpu cores\t: 2\n\n";
    return text;
}

TEST(CpuFeatures, ProcCpuinfoCountsLogicalAndPhysicalCores) {
    const CpuInfo c = parse_proc_cpuinfo(two_socket_cpuinfo());
    EXPECT_EQ(c.model_name, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
    EXPECT_EQ(c.logical_cpus, 8);
    EXPECT_EQ(c.physical_cores, 4);
    EXPECT_EQ(c.sockets, 2);
}

TEST(CpuFeatures, ProcCpuinfoWithoutTopologyCountsEveryProcessorAsACore) {
    // ARM and some VMs list no physical/core ids.
    const CpuInfo c = parse_proc_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\n");
    EXPECT_EQ(c.logical_cpus, 2);
    EXPECT_EQ(c.physical_cores, 2);
    EXPECT_EQ(c.sockets, 1);
    EXPECT_EQ(c.model_name, "");
    EXPECT_EQ(parse_proc_cpuinfo("").logical_cpus, 0);
}

TEST(CpuFeatures, MeminfoTotal) {
    EXPECT_EQ(parse_meminfo_total("MemTotal:       24684096 kB\nMemFree:  1 kB\n"),
              24684096ull * 1024);
    EXPECT_EQ(parse_meminfo_total("MemFree: 5 kB\n"), 0u);
}

TEST(CpuFeatures, CacheSizesAndCpuLists) {
    EXPECT_EQ(parse_cache_size("32K"), 32u * 1024);
    EXPECT_EQ(parse_cache_size("1024K\n"), 1024u * 1024);
    EXPECT_EQ(parse_cache_size("32M"), 32u << 20);
    EXPECT_EQ(parse_cache_size("512"), 512u);
    EXPECT_EQ(parse_cache_size(""), 0u);
    EXPECT_EQ(parse_cache_size("big"), 0u);
    EXPECT_EQ(count_cpu_list("0"), 1);
    EXPECT_EQ(count_cpu_list("0-1\n"), 2);
    EXPECT_EQ(count_cpu_list("0-3,8,10-11"), 7);
    EXPECT_EQ(count_cpu_list("3-1"), 0);
    EXPECT_EQ(count_cpu_list(""), 0);
}

TEST(CpuFeatures, SysfsCacheDirectory) {
    const auto dir = test::unique_temp_path("fluoro_cpu_cache");
    std::filesystem::remove_all(dir);
    const auto put = [&](const char* index, const char* level, const char* type, const char* size,
                         const char* shared) {
        std::filesystem::create_directories(dir / index);
        std::ofstream(dir / index / "level") << level << '\n';
        std::ofstream(dir / index / "type") << type << '\n';
        std::ofstream(dir / index / "size") << size << '\n';
        std::ofstream(dir / index / "shared_cpu_list") << shared << '\n';
    };
    put("index3", "3", "Unified", "32768K", "0-15");
    put("index0", "1", "Data", "48K", "0,8");
    put("index1", "1", "Instruction", "32K", "0,8");
    put("index2", "2", "Unified", "1280K", "0,8");
    std::filesystem::create_directories(dir / "power");  // not a cache level: skipped
    const auto caches = read_sysfs_caches(dir);
    ASSERT_EQ(caches.size(), 4u);
    EXPECT_EQ(caches[0].level, 1);
    EXPECT_EQ(caches[0].type, "Data");
    EXPECT_EQ(caches[0].size_bytes, 48u * 1024);
    EXPECT_EQ(caches[0].shared_cpus, 2);
    EXPECT_EQ(caches[1].type, "Instruction");
    EXPECT_EQ(caches[2].size_bytes, 1280u * 1024);
    EXPECT_EQ(caches[3].level, 3);
    EXPECT_EQ(caches[3].size_bytes, 32u << 20);
    EXPECT_EQ(caches[3].shared_cpus, 16);
    EXPECT_TRUE(read_sysfs_caches(dir / "missing").empty());
}

// cpuid words of an AVX-512 + VNNI + BF16 CPU without AMX (the Zen 4 this was written on).
CpuidWords zen4() {
    CpuidWords w;
    w.max_leaf = 16;
    w.leaf1_ecx = (1u << 20) | (1u << 12) | (1u << 27) | (1u << 28) | (1u << 29);
    w.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 30) | (1u << 31);
    w.leaf7_ecx = 1u << 11;
    w.leaf7_1_eax = 1u << 5;
    w.xcr0 = 0xe7;
    return w;
}

TEST(CpuFeatures, DecodesCpuidWords) {
    const IsaFeatures f = decode_cpuid(zen4());
    EXPECT_TRUE(f.sse42 && f.avx && f.avx2 && f.fma && f.f16c);
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni && f.avx512bf16);
    EXPECT_FALSE(f.avx_vnni || f.amx_tile || f.amx_int8 || f.amx_bf16);
}

TEST(CpuFeatures, WideRegistersNeedTheOsToSaveThem) {
    CpuidWords w = zen4();
    w.xcr0 = 0x7;  // the OS saves YMM but not ZMM: AVX2 yes, AVX-512 no
    IsaFeatures f = decode_cpuid(w);
    EXPECT_TRUE(f.avx2);
    EXPECT_FALSE(f.avx512f || f.avx512vnni || f.avx512bf16);
    w.xcr0 = 0;  // OSXSAVE off: nothing past SSE
    f = decode_cpuid(w);
    EXPECT_TRUE(f.sse42);
    EXPECT_FALSE(f.avx || f.avx2 || f.fma || f.f16c);
}

TEST(CpuFeatures, AmxAndAvxVnni) {
    CpuidWords w = zen4();
    w.leaf7_edx = (1u << 22) | (1u << 24) | (1u << 25);
    w.leaf7_1_eax |= 1u << 4;
    w.xcr0 = 0x600e7;
    IsaFeatures f = decode_cpuid(w);
    EXPECT_TRUE(f.amx_tile && f.amx_int8 && f.amx_bf16 && f.avx_vnni);
    w.xcr0 = 0xe7;  // tile state not enabled by the OS
    EXPECT_FALSE(decode_cpuid(w).amx_tile);
}

TEST(CpuFeatures, FeatureListNamesEveryFlagInOrder) {
    const auto list = isa_feature_list(decode_cpuid(zen4()));
    ASSERT_EQ(list.size(), 14u);
    EXPECT_EQ(list.front().first, "SSE4.2");
    EXPECT_EQ(list[2], std::make_pair(std::string("AVX2"), true));
    EXPECT_EQ(list.back(), std::make_pair(std::string("AMX-BF16"), false));
}

TEST(CpuFeatures, DetectsThisMachine) {
    const CpuInfo c = detect_cpu();
    EXPECT_GE(c.logical_cpus, 1);
    EXPECT_GE(c.usable_cpus, 1);
    EXPECT_GE(c.physical_cores, 1);
    EXPECT_LE(c.physical_cores, c.logical_cpus);
    EXPECT_FALSE(kernel_isa_name().empty());
}

}  // namespace
}  // namespace fluoro::cpu
