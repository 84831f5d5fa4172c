// A persistent pool of worker threads for the CPU backend. One parallel region at a time:
// run(n_tasks, fn) calls fn(task, worker) for task in [0, n_tasks) spread over the workers and the
// calling thread, and returns when all are done. Workers spin briefly (~200 us, yielding now and
// then so an oversubscribed machine still progresses) then sleep on a condition variable, so a
// decode step (hundreds of short regions) pays no syscall per region while an idle engine burns no
// CPU. No allocation per region. run() must be called from one thread at a time; a run() from
// inside one of the pool's own tasks executes inline.
//
// The region barrier waits for tasks, not for threads: tasks are claimed from one atomic word
// holding (region generation, next task), so a worker that is late (descheduled on a busy machine,
// or asleep) simply finds nothing left to claim, and run() returns as soon as every claimed task
// has finished. The caller never waits for a thread that did no work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/worker_trace.h"

namespace fluoro::cpu {

class ThreadPool {
  public:
    // n_threads counts the calling thread: n_threads = 1 runs everything inline.
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    // While set, every region records each worker's busy span and the caller's wait into `trace`
    // (backend/worker_trace.h), all of them before run() returns; nullptr stops it. Set between
    // regions, from the calling thread.
    void set_trace(WorkerTrace* trace) { trace_.store(trace, std::memory_order_relaxed); }

    // fn(task_index, worker_index); worker_index in [0, size()). Tasks are claimed dynamically
    // (an atomic counter), which balances uneven rows. Exceptions from fn are rethrown here.
    template <typename Fn>
    void run(int64_t n_tasks, Fn&& fn) {
        using F = std::remove_reference_t<Fn>;  // Fn is an lvalue reference for a named callable
        run_impl(
            n_tasks,
            [](void* ctx, int64_t task, int worker) { (*static_cast<F*>(ctx))(task, worker); },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    // The default thread count: physical cores (hyper-threads share the FPU and memory port).
    static int default_threads();

  private:
    using TaskFn = void (*)(void*, int64_t, int);
    void run_impl(int64_t n_tasks, TaskFn fn, void* ctx);
    void worker_loop(int worker);
    // Claims and runs tasks of the current region until none is left.
    void work(int worker);
    void wait_for_change(uint64_t seen);  // until claim_ != seen (or stop_)
    void stop_workers();

    static constexpr int kTaskBits = 32;  // claim_ = generation << kTaskBits | next task
    static constexpr uint64_t kClosed = 0xFFFFFFFFu;  // task field while a region is being set up

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on wake_
    // Each on its own cache line: claim_ is hammered by every claim, done_ by every completion.
    alignas(64) std::atomic<uint64_t> claim_{0};
    alignas(64) std::atomic<int64_t> done_{0};  // tasks of the current region finished
    alignas(64) std::atomic<int64_t> n_tasks_{0};
    std::atomic<TaskFn> fn_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    std::atomic<bool> failed_{false};  // a task threw: skip the rest of the region
    std::atomic<bool> stop_{false};
    std::atomic<WorkerTrace*> trace_{nullptr};
    std::atomic<int> tracing_{0};  // workers of the region whose busy span is not recorded yet
    std::exception_ptr error_;
    std::mutex error_mutex_;
};

}  // namespace fluoro::cpu
