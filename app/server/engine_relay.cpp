#include "server/engine_relay.h"

#include "runtime/engine.h"

namespace fluoro::app {

RunFinished EngineRelay::run(Complete c, const std::function<void(const Event&)>& on_event) {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) return finished_without_run("cancelled");
    pending_.clear();
    run_ = 0;
    // Under the lock: deliver() must know the number before the run's first event can arrive.
    submission_ = engine_.submit(std::move(c));
    struct Reset {  // the next run() starts clean whichever way this one ends
        EngineRelay* r;
        ~Reset() { r->submission_ = r->run_ = 0; }
    } reset{this};
    std::vector<Event> batch;
    for (;;) {
        cv_.wait(lock, [&] { return aborted_ || !pending_.empty(); });
        if (aborted_) return finished_without_run("cancelled");
        batch.swap(pending_);
        pending_.clear();
        lock.unlock();  // on_event may write to a slow client: deliver() must not wait for it
        for (const Event& e : batch) {
            if (const auto* err = std::get_if<ErrorEvent>(&e); err && err->run == 0) {
                lock.lock();
                return finished_without_run("error", err->message);
            }
            on_event(e);
            if (const auto* fin = std::get_if<RunFinished>(&e)) {
                lock.lock();
                return *fin;
            }
        }
        batch.clear();
        lock.lock();
    }
}

void EngineRelay::deliver(const std::vector<Event>& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    if (submission_ == 0) return;
    const size_t before = pending_.size();
    for (const Event& e : batch) {
        if (const auto* rs = std::get_if<RunStarted>(&e); rs && rs->submission == submission_) {
            run_ = rs->run;
        } else if (const auto* err = std::get_if<ErrorEvent>(&e);
                   err && err->run == 0 && err->submission == submission_) {
            // failed before a run (no model loaded, a bad message list)
        } else if (run_ == 0 || event_run(e) != run_) {
            continue;
        }
        pending_.push_back(e);
    }
    if (pending_.size() != before) cv_.notify_all();
}

void EngineRelay::abort() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        aborted_ = true;
        // Only a request's own run: the window's chat may be generating.
        if (submission_ != 0) engine_.cancel();
    }
    cv_.notify_all();
}

void EngineRelay::cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    if (submission_ != 0) engine_.cancel();
}

CompletionBackend EngineRelay::backend() {
    CompletionBackend b;
    b.run = [this](Complete c, const std::function<void(const Event&)>& on_event,
                   const std::atomic<bool>&) { return run(std::move(c), on_event); };
    b.cancel = [this] { cancel(); };
    return b;
}

}  // namespace fluoro::app
