// The CPU backend's persistent thread pool (backend/cpu/thread_pool.h): every task runs exactly
// once on a valid worker, exceptions reach the caller and leave the pool usable, 100k tiny regions
// back to back finish (no lost wake-ups, no stuck spin), destruction while workers sleep or have
// not started yet, and the single-thread pool runs inline on the calling thread.
#include "backend/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace fluoro::cpu {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnceOnAValidWorker) {
    for (int n_threads : {1, 2, 3, 4, 8}) {
        ThreadPool pool(n_threads);
        EXPECT_EQ(pool.size(), n_threads);
        for (int64_t n_tasks : {1, 2, 3, 7, 64, 10007}) {
            std::vector<std::atomic<int>> runs(n_tasks);
            std::atomic<bool> bad_worker{false};
            pool.run(n_tasks, [&](int64_t task, int worker) {
                runs[task].fetch_add(1, std::memory_order_relaxed);
                if (worker < 0 || worker >= n_threads) bad_worker = true;
            });
            for (int64_t t = 0; t < n_tasks; ++t)
                ASSERT_EQ(runs[t].load(), 1)
                    << "task " << t << " of " << n_tasks << ", " << n_threads << " threads";
            EXPECT_FALSE(bad_worker);
        }
    }
}

TEST(ThreadPool, ResultsAreVisibleToTheCallerAfterRun) {
    ThreadPool pool(3);
    std::vector<int64_t> out(5000, 0);  // plain memory: run() must publish the writes
    for (int round = 1; round <= 50; ++round) {
        pool.run(static_cast<int64_t>(out.size()), [&](int64_t t, int) { out[t] = t * round; });
        for (size_t t = 0; t < out.size(); ++t) ASSERT_EQ(out[t], int64_t(t) * round);
    }
}

// Named callables (lvalues, const or not) and function objects work, not just temporaries.
TEST(ThreadPool, AcceptsNamedAndConstCallables) {
    ThreadPool pool(2);
    std::atomic<int> calls{0};
    auto count = [&](int64_t, int) { ++calls; };
    const auto count_const = [&](int64_t, int) { ++calls; };
    pool.run(10, count);
    pool.run(10, count_const);
    struct Counter {
        std::atomic<int>* calls;
        void operator()(int64_t, int) const { ++*calls; }
    };
    pool.run(10, Counter{&calls});
    EXPECT_EQ(calls.load(), 30);
}

TEST(ThreadPool, ZeroOrNegativeTaskCountsRunNothing) {
    ThreadPool pool(2);
    std::atomic<int> calls{0};
    pool.run(0, [&](int64_t, int) { ++calls; });
    pool.run(-5, [&](int64_t, int) { ++calls; });
    EXPECT_EQ(calls.load(), 0);
}

TEST(ThreadPool, ExceptionsPropagateAndThePoolStaysUsable) {
    for (int n_threads : {1, 2, 3}) {
        ThreadPool pool(n_threads);
        for (int round = 0; round < 20; ++round) {
            const int64_t bad = (round * 37) % 100;
            EXPECT_THROW(pool.run(100,
                                  [&](int64_t t, int) {
                                      if (t == bad) throw std::runtime_error("task failed");
                                  }),
                         std::runtime_error)
                << n_threads << " threads, round " << round;
            // Every worker throwing at once: still exactly one exception out.
            EXPECT_THROW(pool.run(64, [](int64_t, int) { throw std::logic_error("all fail"); }),
                         std::logic_error);
            std::atomic<int64_t> sum{0};
            pool.run(100, [&](int64_t t, int) { sum += t; });
            EXPECT_EQ(sum.load(), 4950) << n_threads << " threads, round " << round;
        }
    }
}

// Many short regions back to back terminate with every task run exactly once, also with more
// threads than cores. (How fast is a benchmark's question, not a test's: no time bound here.)
TEST(ThreadPool, ManyShortRegionsBackToBack) {
    for (int n_threads : {2, 3}) {  // 3 threads oversubscribe a 2-core machine
        ThreadPool pool(n_threads);
        std::atomic<int64_t> total{0};
        const int regions = n_threads == 2 ? 100000 : 20000;
        for (int region = 0; region < regions; ++region)
            pool.run(n_threads,
                     [&](int64_t, int) { total.fetch_add(1, std::memory_order_relaxed); });
        EXPECT_EQ(total.load(), int64_t{regions} * n_threads);
    }
}

// Regions of changing size back to back: a worker that read the previous region's claim word
// just before its last task was taken must not claim (and run a second time) a task of the next,
// larger region. Before the fix this hung within seconds: the run() waiting for its task count
// saw one completion too many.
TEST(ThreadPool, RegionsOfChangingSizeRunEachTaskOnce) {
    for (int n_threads : {2, 3}) {
        ThreadPool pool(n_threads);
        std::vector<std::atomic<int>> runs(64);
        int64_t bad = 0;
        for (int region = 0; region < 100000; ++region) {
            const int64_t n = 1 + (region * 7) % 17;  // 1..17, small and large regions mixed
            for (int64_t t = 0; t < n; ++t) runs[size_t(t)].store(0, std::memory_order_relaxed);
            pool.run(n, [&](int64_t t, int) { runs[size_t(t)].fetch_add(1); });
            for (int64_t t = 0; t < n; ++t) bad += runs[size_t(t)].load() != 1;
        }
        EXPECT_EQ(bad, 0) << n_threads << " threads";
    }
}

TEST(ThreadPool, RegionsAfterWorkersFellAsleep) {
    ThreadPool pool(3);
    for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // past the spin phase
        std::atomic<int> calls{0};
        pool.run(30, [&](int64_t, int) { ++calls; });
        EXPECT_EQ(calls.load(), 30);
    }
}

TEST(ThreadPool, DestructionWhileIdleOrBeforeWorkersStart) {
    for (int i = 0; i < 200; ++i) ThreadPool pool(3);  // workers may not have started yet
    {
        ThreadPool pool(4);
        pool.run(8, [](int64_t, int) {});
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // workers asleep
    }
    {
        ThreadPool pool(4);
        pool.run(8, [](int64_t, int) {});  // workers still spinning
    }
    SUCCEED();
}

// Tracing (backend/worker_trace.h): each worker that ran tasks of a region records its busy span
// and the caller its wait. Two tasks that each wait until both have started force the second
// onto the other worker (the caller is busy with the first), so both workers must show up;
// without a trace nothing is recorded; an inline region is the caller's span.
TEST(ThreadPool, TracingRecordsEachWorkersBusySpanAndTheCallersWait) {
    ThreadPool pool(2);
    WorkerTrace trace(2);
    pool.set_trace(&trace);
    std::atomic<int> started{0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool met = true;
    pool.run(2, [&](int64_t, int) {
        started.fetch_add(1);
        while (started.load() < 2)
            if (std::chrono::steady_clock::now() > deadline) {
                met = false;  // read after run(): a worker never came
                return;
            }
    });
    ASSERT_TRUE(met) << "the second task never started on the other worker";
    std::vector<WorkerBusy> spans;
    EXPECT_EQ(trace.drain(spans), 0);
    int busy0 = 0, busy1 = 0, waits = 0;
    for (const WorkerBusy& w : spans) {
        EXPECT_LE(w.start_ns, w.end_ns);
        if (w.worker == 0 && w.tasks == 1) ++busy0;
        if (w.worker == 1 && w.tasks == 1) ++busy1;
        if (w.worker == 0 && w.tasks == 0) ++waits;
    }
    EXPECT_EQ(busy0, 1);
    EXPECT_EQ(busy1, 1);
    EXPECT_EQ(waits, 1);

    spans.clear();
    pool.run(1, [](int64_t, int) {});  // inline: the caller's span
    trace.drain(spans);
    ASSERT_EQ(spans.size(), 1u);
    EXPECT_EQ(spans[0].worker, 0);
    EXPECT_EQ(spans[0].tasks, 1);

    spans.clear();
    pool.set_trace(nullptr);
    pool.run(8, [](int64_t, int) {});
    trace.drain(spans);
    EXPECT_TRUE(spans.empty());
}

TEST(ThreadPool, SingleThreadRunsInlineInOrder) {
    ThreadPool pool(1);
    EXPECT_EQ(pool.size(), 1);
    const auto caller = std::this_thread::get_id();
    std::vector<int64_t> order;
    pool.run(10, [&](int64_t t, int worker) {
        EXPECT_EQ(worker, 0);
        EXPECT_EQ(std::this_thread::get_id(), caller);
        order.push_back(t);
    });
    EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(ThreadPool, NonPositiveThreadCountMeansOne) {
    ThreadPool zero(0), negative(-3);
    EXPECT_EQ(zero.size(), 1);
    EXPECT_EQ(negative.size(), 1);
}

// A task that starts another region (e.g. a kernel calling a parallel helper) must not deadlock.
TEST(ThreadPool, NestedRunExecutesInline) {
    ThreadPool pool(3);
    std::vector<std::atomic<int>> runs(8 * 16);
    pool.run(8, [&](int64_t outer, int) {
        pool.run(16, [&](int64_t inner, int) { runs[outer * 16 + inner].fetch_add(1); });
    });
    for (auto& r : runs) EXPECT_EQ(r.load(), 1);
}

TEST(ThreadPool, DefaultThreadsIsPositiveAndNotAboveTheCpusWeMayUse) {
    const int n = ThreadPool::default_threads();
    EXPECT_GE(n, 1);
    const unsigned hw = std::thread::hardware_concurrency();
    if (hw > 0) {
        EXPECT_LE(n, static_cast<int>(hw));
    }
}

}  // namespace
}  // namespace fluoro::cpu
