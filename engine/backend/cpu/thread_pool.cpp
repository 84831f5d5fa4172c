#include "backend/cpu/thread_pool.h"

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sched.h>
#endif

namespace fluoro::cpu {
namespace {

// How long an idle thread polls before sleeping: long enough to catch the next region of a
// decode step (regions are microseconds apart), short enough that an idle engine stops burning
// CPU at once. A PAUSE costs ~10-140 cycles depending on the CPU, so the budget is in time.
constexpr auto kSpinTime = std::chrono::microseconds(200);
// Poll iterations between clock checks and yields. Yielding lets an oversubscribed machine
// (more threads than free cores) run the thread being waited for instead of the spinner.
constexpr int kPollsPerYield = 64;

// The region a thread is currently executing tasks of, so a nested run() runs inline.
thread_local const ThreadPool* tls_active_pool = nullptr;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Polls done() with PAUSE, yielding every kPollsPerYield polls; gives up after kSpinTime when
// `bounded` (returns false), otherwise polls until done() holds.
template <typename Done>
bool spin_until(Done done, bool bounded) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (int poll = 1;; ++poll) {
        if (done()) return true;
        if (poll % kPollsPerYield != 0) {
            cpu_relax();
            continue;
        }
        if (bounded && std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::yield();
    }
}

// RAII marker for tls_active_pool.
class ActiveRegion {
  public:
    explicit ActiveRegion(const ThreadPool* pool) : saved_(tls_active_pool) {
        tls_active_pool = pool;
    }
    ~ActiveRegion() { tls_active_pool = saved_; }
    ActiveRegion(const ActiveRegion&) = delete;
    ActiveRegion& operator=(const ActiveRegion&) = delete;

  private:
    const ThreadPool* saved_;
};

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    threads_.reserve(size_t(n_threads_ - 1));
    try {
        for (int w = 1; w < n_threads_; ++w) threads_.emplace_back([this, w] { worker_loop(w); });
    } catch (...) {
        stop_workers();  // joinable std::threads must not be destroyed
        throw;
    }
}

ThreadPool::~ThreadPool() {
    stop_workers();
}

void ThreadPool::stop_workers() {
    {
        std::lock_guard lock(mutex_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
}

void ThreadPool::work(int worker) {
    const ActiveRegion active(this);
    for (int64_t task; (task = next_task_.fetch_add(1, std::memory_order_relaxed)) < n_tasks_;) {
        try {
            fn_(ctx_, task, worker);
        } catch (...) {
            std::lock_guard lock(error_mutex_);
            if (!error_) error_ = std::current_exception();
            next_task_.store(n_tasks_);  // stop handing out tasks
        }
    }
}

void ThreadPool::run_impl(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    // Inline: a single thread or task, or a nested run() from inside one of our own tasks (the
    // workers are busy with the outer region; waiting for them would deadlock).
    if (n_threads_ == 1 || n_tasks == 1 || tls_active_pool == this) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
        return;
    }
    n_tasks_ = n_tasks;
    fn_ = fn;
    ctx_ = ctx;
    error_ = nullptr;
    next_task_.store(0, std::memory_order_relaxed);
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);  // pairs with the waiters' predicate check
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(0);
    spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; }, false);
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

uint64_t ThreadPool::wait_for_region(uint64_t seen) {
    const auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed, true)) {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, changed);
    }
    return generation_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop(int worker) {
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_region(seen);
        if (stop_.load()) return;
        work(worker);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

int ThreadPool::default_threads() {
    // Count distinct (physical id, core id) pairs; fall back to hardware_concurrency.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::set<std::pair<std::string, std::string>> cores;
    std::string line, phys = "0";
    while (std::getline(cpuinfo, line)) {
        const auto value = [&] { return line.substr(line.find(':') + 1); };
        if (line.rfind("physical id", 0) == 0)
            phys = value();
        else if (line.rfind("core id", 0) == 0)
            cores.emplace(phys, value());
    }
    const unsigned hw = std::thread::hardware_concurrency();
    int n = !cores.empty() ? int(cores.size()) : (hw ? int(hw) : 1);
#if defined(__linux__)
    // /proc/cpuinfo lists every CPU of the host; a container or taskset may allow fewer.
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
        const int usable = CPU_COUNT(&allowed);
        if (usable > 0 && usable < n) n = usable;
    }
#endif
    return n;
}

}  // namespace fluoro::cpu
