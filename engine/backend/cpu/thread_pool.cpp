#include "backend/cpu/thread_pool.h"

#include <algorithm>
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
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
}

void ThreadPool::work(int worker) {
    const ActiveRegion active(this);
    WorkerTrace* const trace = trace_.load(std::memory_order_relaxed);
    WorkerBusy busy{0, 0, worker, 0};
    uint64_t claim = claim_.load(std::memory_order_acquire);
    for (;;) {
        // A successful CAS proves claim_ still held `claim`, so the region could not have been
        // closed in between: the n_tasks_ read here belongs to claim's region.
        const auto task = static_cast<int64_t>(claim & 0xFFFFFFFFu);
        // Acquire: a task count of a newer region than claim's implies claim_ has moved past
        // claim (run_impl closes the old region first), so the CAS below fails.
        if (task >= n_tasks_.load(std::memory_order_acquire)) {
            if (trace && busy.tasks > 0) {
                busy.end_ns = WorkerTrace::now_ns();
                trace->record(busy);
                tracing_.fetch_sub(1, std::memory_order_release);  // run() may return now
            }
            return;
        }
        if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acquire,
                                          std::memory_order_acquire)) {
            continue;  // claim now holds the current value
        }
        if (trace && busy.tasks++ == 0) {
            busy.start_ns = WorkerTrace::now_ns();
            // Before this task's done_ increment: run() sees the count once all tasks are done
            // (the increments form one release sequence) and waits for the span's record.
            tracing_.fetch_add(1, std::memory_order_relaxed);
        }
        if (!failed_.load(std::memory_order_relaxed)) {
            try {
                fn_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), task,
                                                    worker);
            } catch (...) {
                std::lock_guard lock(error_mutex_);
                if (!error_) error_ = std::current_exception();
                failed_.store(true, std::memory_order_relaxed);  // skip the remaining tasks
            }
        }
        done_.fetch_add(1, std::memory_order_release);
        claim = claim_.load(std::memory_order_acquire);
    }
}

void ThreadPool::run_impl(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    // Inline: a single thread or task, or a nested run() from inside one of our own tasks (the
    // workers are busy with the outer region; waiting for them would deadlock).
    if (n_threads_ == 1 || n_tasks == 1 || tls_active_pool == this) {
        WorkerTrace* const trace =
            tls_active_pool == this ? nullptr : trace_.load(std::memory_order_relaxed);
        const int64_t t0 = trace ? WorkerTrace::now_ns() : 0;
        for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
        if (trace)
            trace->record(
                {t0, WorkerTrace::now_ns(), 0, int32_t(std::min<int64_t>(n_tasks, INT32_MAX))});
        return;
    }
    constexpr int64_t kMaxTasks = int64_t{1} << (kTaskBits - 1);  // task index never carries
    if (n_tasks > kMaxTasks) {
        for (int64_t base = 0; base < n_tasks; base += kMaxTasks) {
            struct Shifted {
                TaskFn fn;
                void* ctx;
                int64_t base;
            } shifted{fn, ctx, base};
            run_impl(
                std::min(kMaxTasks, n_tasks - base),
                [](void* c, int64_t t, int w) {
                    const auto* s = static_cast<const Shifted*>(c);
                    s->fn(s->ctx, s->base + t, w);
                },
                &shifted);
        }
        return;
    }
    // Close the previous region before touching its fields: a worker may still hold a claim word
    // of it, read just before its last task was taken. Paired with a larger n_tasks_ of this
    // region that stale word would look claimable, and if claim_ still held it the CAS would take
    // (and run twice) a task of this region. After this store every CAS on an old word fails; a
    // worker that sees the closed word finds no task (kClosed >= any n_tasks).
    const uint64_t generation = (claim_.load(std::memory_order_relaxed) >> kTaskBits) + 1;
    claim_.store(generation << kTaskBits | kClosed);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    n_tasks_.store(n_tasks, std::memory_order_release);  // after the closing store, for workers
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    // Publish: the new generation with task 0 (seq_cst, paired with the sleepers' check below).
    claim_.store(generation << kTaskBits);
    if (sleepers_.load() > 0) {
        { std::lock_guard lock(mutex_); }  // a worker between its check and its wait gets it
        wake_.notify_all();
    }
    work(0);
    WorkerTrace* const trace = trace_.load(std::memory_order_relaxed);
    const int64_t wait_from = trace ? WorkerTrace::now_ns() : 0;
    spin_until([&] { return done_.load(std::memory_order_acquire) == n_tasks; }, false);
    if (trace) {
        trace->record({wait_from, WorkerTrace::now_ns(), 0, 0});
        // The workers record their span just after their last task: wait for it, so a region's
        // spans are all recorded when run() returns (the step that ran it drains them).
        spin_until([&] { return tracing_.load(std::memory_order_acquire) == 0; }, false);
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::wait_for_change(uint64_t seen) {
    const auto changed = [&] {
        return claim_.load(std::memory_order_acquire) != seen || stop_.load();
    };
    if (spin_until(changed, true)) return;
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1);  // seq_cst: run() either sees it or we see its new claim_
    wake_.wait(lock, changed);
    sleepers_.fetch_sub(1);
}

void ThreadPool::worker_loop(int worker) {
    while (!stop_.load()) {
        const uint64_t seen = claim_.load(std::memory_order_acquire);
        work(worker);
        // Nothing left to claim in the region we saw; wait until the word moves (a new region,
        // or other claims of this one, after which work() finds out which).
        if (claim_.load(std::memory_order_acquire) == seen) wait_for_change(seen);
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
