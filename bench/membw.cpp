// fluoro_membw: STREAM-style main-memory bandwidth, the denominator of the decode roofline
// (weight and KV bytes read per token ÷ bandwidth = the fastest a token can be). Arrays far
// larger than the last-level cache; each kernel runs with 1 and with N threads (each thread
// streams its own contiguous slice, first-touched by itself); best of several runs, as STREAM
// reports. Kernels:
//   read   s += a[i]           (uint64; read-only: what decode does to the weights)
//   triad  a[i] = b[i] + q*c[i] (double; STREAM's triad, counted as 2 reads + 1 write)
// GB/s = 1e9 bytes per second. No engine code: plain C++ and std::thread.
//   fluoro_membw [--size-mib 1024] [--threads N] [--runs 7] [--json]
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
    double best_gbs = 0;
    double median_gbs = 0;
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

Result read_bw(const Options& o, int threads) {
    const size_t n = o.size_mib * (size_t(1) << 20) / sizeof(uint64_t);
    Buffer<uint64_t> a(n);
    std::vector<uint64_t> sums(size_t(threads) * 8);  // one cache line per thread
    const auto s = timed(threads, n, o.runs, [&](int t, size_t begin, size_t end, bool warm_up) {
        if (warm_up)
            for (size_t i = begin; i < end; ++i) a.data[i] = i;
        uint64_t acc = 0;
        for (size_t i = begin; i < end; ++i) acc += a.data[i];
        sums[size_t(t) * 8] += acc;
    });
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    if (total == 42) std::puts("");  // keep the sums alive
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
    if (a.data[n / 2] != 7.0) std::fprintf(stderr, "fluoro_membw: triad check failed\n");
    return summarize("triad", threads, double(3 * n * sizeof(double)), s);
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
    }
    if (o.json) {
        std::printf("{\"size_mib\": %zu, \"runs\": %d, \"results\": [", o.size_mib, o.runs);
        for (size_t i = 0; i < results.size(); ++i)
            std::printf(
                "%s\n  {\"kernel\": \"%s\", \"threads\": %d, \"best_gbs\": %.3f, "
                "\"median_gbs\": %.3f}",
                i ? "," : "", results[i].kernel.c_str(), results[i].threads, results[i].best_gbs,
                results[i].median_gbs);
        std::printf("\n]}\n");
        return 0;
    }
    std::printf("array %zu MiB, best of %d runs (GB/s = 1e9 B/s)\n", o.size_mib, o.runs);
    std::printf("| kernel | threads | best GB/s | median GB/s |\n| --- | --- | --- | --- |\n");
    for (const auto& r : results)
        std::printf("| %s | %d | %.2f | %.2f |\n", r.kernel.c_str(), r.threads, r.best_gbs,
                    r.median_gbs);
    return 0;
}
