// fluoro_membw: STREAM-style main-memory bandwidth, the denominator of the decode roofline
// (weight and KV bytes read per token ÷ bandwidth = the fastest a token can be). Arrays far
// larger than the last-level cache; each kernel runs with 1 and with N threads (each thread
// streams its own contiguous slice, first-touched by itself); best of several runs, as STREAM
// reports. Kernels:
//   read   s += a[i]           (uint64; read-only: what decode does to the weights). 32-byte
//          loads into four independent sums where the CPU has AVX2: one scalar sum is bound by
//          its add chain and outstanding loads, not by memory (an AMD EPYC Zen 3 VM read 5.9 GB/s
//          per thread that way, 11.4 with AVX2; decode's kernels load weights 16-32 bytes at once).
//          As decode reads its weights: a prefetch 6 KiB ahead of each 128 bytes (the row
//          kernels' prefetch_ahead) and the array in 2 MiB pages where the kernel grants them (the
//          CPU backend's weight arena). Without both, a Zen 5 VM read 33.4 GB/s here while the
//          engine's decode of an 802 MB model read 48 GB/s (2026-12-08): the roofline's
//          denominator must be what the hardware gives the engine's access pattern.
//   triad  a[i] = b[i] + q*c[i] (double; STREAM's triad, counted as 2 reads + 1 write)
// and two compute peaks, the denominators of a compute-bound op's roofline (fluoro profile):
//   fma    float32 fused multiply-adds in registers: 12 independent accumulators of the widest
//          vector the CPU has (AVX-512 or AVX2 + FMA), 2 FLOPs per lane per FMA
//   int8   u8 x s8 dot products into int32 as the quantized matmul kernels do them: VPDPBUSD
//          (AVX-512 VNNI) where the CPU has it, else VPMADDUBSW + VPMADDWD + VPADDD (AVX2);
//          2 ops per multiply-add
// GB/s = 1e9 bytes per second, GFLOP/s and GOP/s 1e9 operations per second. No engine code:
// plain C++ and std::thread.
//   fluoro_membw [--size-mib 1024] [--threads N] [--runs 7] [--json]
// JSON: {"results": [{"kernel", "threads", "best_gbs", "median_gbs"} or, for fma and int8,
// {"kernel", "threads", "best_gops", "median_gops"}]}.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <sys/mman.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FLUORO_MEMBW_AVX2 1
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    size_t size_mib = 1024;  // the read array; triad uses three arrays of a third each
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    int runs = 7;
    bool json = false;
};

struct Result {
    std::string kernel;
    int threads = 0;
    double best_gbs = 0;  // GOP/s for the compute kernels
    double median_gbs = 0;
    bool compute = false;
};

// Page-aligned storage that is not zero-filled by the allocator: the first touch happens in the
// owning thread (on NUMA machines that places each slice near the core that reads it).
template <typename T>
struct Buffer {
    explicit Buffer(size_t n)
        : data(static_cast<T*>(std::aligned_alloc(4096, (n * sizeof(T) + 4095) / 4096 * 4096))),
          size(n) {
        if (!data) {
            std::fprintf(stderr, "fluoro_membw: cannot allocate %zu MiB\n", (n * sizeof(T)) >> 20);
            std::exit(1);
        }
        // 2 MiB pages where the kernel grants them (a hint; refused, the pages stay small)
        madvise(data, (n * sizeof(T) + 4095) / 4096 * 4096, MADV_HUGEPAGE);
    }
    ~Buffer() { std::free(data); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data;
    size_t size;
};

// Runs body(thread, begin, end, warm_up) over [0, n) split in `threads` slices: one untimed
// warm-up pass (which first-touches the pages), then `runs` timed ones; returns their seconds.
std::vector<double> timed(int threads, size_t n, int runs,
                          const std::function<void(int, size_t, size_t, bool)>& body) {
    std::vector<double> seconds;
    Clock::time_point t0;
    std::barrier start(threads, [&]() noexcept { t0 = Clock::now(); });
    std::barrier stop(threads, [&]() noexcept {
        seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    });
    const auto worker = [&](int t) {
        const size_t begin = n * size_t(t) / size_t(threads),
                     end = n * size_t(t + 1) / size_t(threads);
        for (int r = 0; r <= runs; ++r) {
            start.arrive_and_wait();
            body(t, begin, end, r == 0);
            stop.arrive_and_wait();
        }
    };
    std::vector<std::jthread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker, t);
    worker(0);
    pool.clear();
    seconds.erase(seconds.begin());  // the warm-up pass
    return seconds;
}

Result summarize(const std::string& kernel, int threads, double bytes, std::vector<double> s) {
    std::sort(s.begin(), s.end());
    return {kernel, threads, bytes / s.front() / 1e9, bytes / s[s.size() / 2] / 1e9};
}

// Σ a[begin, end): independent partial sums, so that only memory limits the loop.
uint64_t sum_slice_portable(const uint64_t* a, size_t begin, size_t end) {
    uint64_t s[8] = {};
    size_t i = begin;
    for (; i + 8 <= end; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += a[i + k];
    for (; i < end; ++i) s[0] += a[i];
    uint64_t total = 0;
    for (uint64_t v : s) total += v;
    return total;
}

#if FLUORO_MEMBW_AVX2
// How far ahead the read kernel prefetches: the CPU row kernels' distance (dot_x86_kernels.h).
constexpr size_t kPrefetchBytes = 6144;

__attribute__((target("avx2"))) uint64_t sum_slice_avx2(const uint64_t* a, size_t begin,
                                                        size_t end) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        const auto* p = reinterpret_cast<const __m256i*>(a + i);
        _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchBytes + 64, _MM_HINT_T0);
        s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(p));
        s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(p + 1));
        s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(p + 2));
        s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(p + 3));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + sum_slice_portable(a, i, end);
}
#endif

uint64_t sum_slice(const uint64_t* a, size_t begin, size_t end) {
#if FLUORO_MEMBW_AVX2
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return sum_slice_avx2(a, begin, end);
#endif
    return sum_slice_portable(a, begin, end);
}

Result read_bw(const Options& o, int threads) {
    const size_t n = o.size_mib * (size_t(1) << 20) / sizeof(uint64_t);
    Buffer<uint64_t> a(n);
    std::vector<uint64_t> sums(size_t(threads) * 8);  // one cache line per thread
    const auto s = timed(threads, n, o.runs, [&](int t, size_t begin, size_t end, bool warm_up) {
        if (warm_up)
            for (size_t i = begin; i < end; ++i) a.data[i] = i;
        sums[size_t(t) * 8] += sum_slice(a.data, begin, end);
    });
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    // a[i] = i, summed by every pass (the warm-up included): a check that each slice was read
    // whole, which also keeps the sums alive. Unsigned arithmetic wraps the same way on both sides.
    const uint64_t once = n % 2 == 0 ? uint64_t(n / 2) * (n - 1) : uint64_t(n) * ((n - 1) / 2);
    if (total != uint64_t(o.runs + 1) * once) {
        std::fprintf(stderr, "fluoro_membw: read check failed (sum %llu, expected %llu)\n",
                     static_cast<unsigned long long>(total),
                     static_cast<unsigned long long>(uint64_t(o.runs + 1) * once));
        std::exit(1);
    }
    return summarize("read", threads, double(n * sizeof(uint64_t)), s);
}

Result triad_bw(const Options& o, int threads) {
    const size_t n = o.size_mib * (size_t(1) << 20) / 3 / sizeof(double);
    Buffer<double> a(n), b(n), c(n);
    const double q = 3.0;
    const auto s = timed(threads, n, o.runs, [&](int, size_t begin, size_t end, bool warm_up) {
        if (warm_up)
            for (size_t i = begin; i < end; ++i) a.data[i] = 0, b.data[i] = 1, c.data[i] = 2;
        double* __restrict pa = a.data;
        const double* __restrict pb = b.data;
        const double* __restrict pc = c.data;
        for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + q * pc[i];
    });
    if (a.data[n / 2] != 7.0) {
        std::fprintf(stderr, "fluoro_membw: triad check failed\n");
        std::exit(1);
    }
    return summarize("triad", threads, double(3 * n * sizeof(double)), s);
}

// The compute peaks: `iterations` loop trips per thread slice, each a fixed number of operations
// on registers only; the accumulators are folded into a per-thread sink so nothing is dead.
#if FLUORO_MEMBW_AVX2
constexpr int kAccumulators = 12;  // > FMA latency (4-5) x ports (2): the pipes stay full

__attribute__((target("avx2,fma"))) float fma_avx2(size_t iterations) {
    __m256 acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_ps(float(k) * 1e-3f);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (size_t i = 0; i < iterations; ++i)
        for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    __m256 s = acc[0];
    for (int k = 1; k < kAccumulators; ++k) s = _mm256_add_ps(s, acc[k]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    return lanes[0] + lanes[7];
}

__attribute__((target("avx512f"))) float fma_avx512(size_t iterations) {
    __m512 acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_ps(float(k) * 1e-3f);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (size_t i = 0; i < iterations; ++i)
        for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    __m512 s = acc[0];
    for (int k = 1; k < kAccumulators; ++k) s = _mm512_add_ps(s, acc[k]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    return lanes[0] + lanes[15];
}

__attribute__((target("avx2"))) int32_t int8_avx2(size_t iterations) {
    __m256i acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_epi32(k);
    const __m256i u = _mm256_set1_epi8(3), v = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
    for (size_t i = 0; i < iterations; ++i)
        for (int k = 0; k < kAccumulators; ++k)
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(u, v), ones));
    __m256i s = acc[0];
    for (int k = 1; k < kAccumulators; ++k) s = _mm256_add_epi32(s, acc[k]);
    return _mm256_extract_epi32(s, 0);
}

__attribute__((target("avx512f,avx512vnni"))) int32_t int8_vnni512(size_t iterations) {
    __m512i acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_epi32(k);
    const __m512i u = _mm512_set1_epi8(3), v = _mm512_set1_epi8(-2);
    for (size_t i = 0; i < iterations; ++i)
        for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], u, v);
    __m512i s = acc[0];
    for (int k = 1; k < kAccumulators; ++k) s = _mm512_add_epi32(s, acc[k]);
    alignas(64) int32_t lanes[16];
    _mm512_store_si512(lanes, s);
    return lanes[0] + lanes[15];
}
#endif

// Operations per loop trip of each compute kernel on this CPU; 0 when it has no such kernel.
double fma_ops_per_trip() {
#if FLUORO_MEMBW_AVX2
    if (__builtin_cpu_supports("avx512f")) return kAccumulators * 16 * 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return kAccumulators * 8 * 2;
#endif
    return 0;
}

double int8_ops_per_trip() {
#if FLUORO_MEMBW_AVX2
    if (__builtin_cpu_supports("avx512vnni")) return kAccumulators * 64 * 2;
    if (__builtin_cpu_supports("avx2")) return kAccumulators * 32 * 2;
#endif
    return 0;
}

Result compute_peak(const Options& o, int threads, bool int8) {
    const double per_trip = int8 ? int8_ops_per_trip() : fma_ops_per_trip();
    // ~0.2 s of work per thread at ~100 GOP/s per core.
    const size_t trips_per_thread = size_t(2e10 / std::max(per_trip, 1.0));
    std::vector<double> sinks(size_t(threads) * 8);
    const auto s =
        timed(threads, trips_per_thread * size_t(threads), o.runs,
              [&](int t, size_t begin, size_t end, bool) {
#if FLUORO_MEMBW_AVX2
                  const size_t n = end - begin;
                  double v = 0;
                  if (int8)
                      v = __builtin_cpu_supports("avx512vnni") ? int8_vnni512(n) : int8_avx2(n);
                  else
                      v = __builtin_cpu_supports("avx512f") ? fma_avx512(n) : fma_avx2(n);
                  sinks[size_t(t) * 8] += v;
#else
                             (void)t, (void)begin, (void)end;
#endif
              });
    volatile double keep = 0;  // the results are read: the kernels' work cannot be dropped
    for (double v : sinks) keep = keep + v;
    Result r =
        summarize(int8 ? "int8" : "fma", threads, per_trip * double(trips_per_thread) * threads, s);
    r.compute = true;
    return r;
}

int usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s [--size-mib N] [--threads N] [--runs N] [--json]\n", argv0);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> long { return i + 1 < argc ? std::atol(argv[++i]) : 0; };
        if (arg == "--size-mib")
            o.size_mib = size_t(std::max(0L, value()));
        else if (arg == "--threads")
            o.threads = int(value());
        else if (arg == "--runs")
            o.runs = int(value());
        else if (arg == "--json")
            o.json = true;
        else
            return usage(argv[0]);
    }
    if (o.size_mib < 64 || o.threads < 1 || o.runs < 1) return usage(argv[0]);
    std::vector<Result> results;
    for (int threads : o.threads == 1 ? std::vector<int>{1} : std::vector<int>{1, o.threads}) {
        results.push_back(read_bw(o, threads));
        results.push_back(triad_bw(o, threads));
        if (fma_ops_per_trip() > 0) results.push_back(compute_peak(o, threads, false));
        if (int8_ops_per_trip() > 0) results.push_back(compute_peak(o, threads, true));
    }
    if (o.json) {
        std::printf("{\"size_mib\": %zu, \"runs\": %d, \"results\": [", o.size_mib, o.runs);
        for (size_t i = 0; i < results.size(); ++i)
            std::printf(
                "%s\n  {\"kernel\": \"%s\", \"threads\": %d, \"best_%s\": %.3f, "
                "\"median_%s\": %.3f}",
                i ? "," : "", results[i].kernel.c_str(), results[i].threads,
                results[i].compute ? "gops" : "gbs", results[i].best_gbs,
                results[i].compute ? "gops" : "gbs", results[i].median_gbs);
        std::printf("\n]}\n");
        return 0;
    }
    std::printf("array %zu MiB, best of %d runs (GB/s = 1e9 B/s)\n", o.size_mib, o.runs);
    std::printf("| kernel | threads | best | median |\n| --- | --- | --- | --- |\n");
    for (const auto& r : results)
        std::printf("| %s | %d | %.2f %s | %.2f %s |\n", r.kernel.c_str(), r.threads, r.best_gbs,
                    r.compute ? "GOP/s" : "GB/s", r.median_gbs, r.compute ? "GOP/s" : "GB/s");
    return 0;
}
