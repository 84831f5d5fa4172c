// Completions on an Engine whose event stream another thread drains — the workbench's
// EngineBridge, which records and shows every run. The server's thread submits its Complete and
// waits; the draining thread hands each batch to deliver(), which passes on the events of the
// run that Complete started (found by its submission number: the GUI's own chat may queue runs
// in between). So a request served from the workbench is shown and stored like any chat.
//
// Threads: run() on any one thread at a time (the server serializes generations); deliver() on
// the draining thread; abort() and cancel() on any. The draining thread must never wait for run().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "runtime/engine_commands.h"
#include "server/openai_server.h"
#include "telemetry/events.h"

namespace fluoro {
class Engine;
}

namespace fluoro::app {

class EngineRelay {
  public:
    explicit EngineRelay(Engine& engine) : engine_(engine) {}
    EngineRelay(const EngineRelay&) = delete;
    EngineRelay& operator=(const EngineRelay&) = delete;

    // Submits c and returns its RunFinished once delivered, calling on_event (on this thread)
    // for each of the run's events. A command that fails before its run starts returns stop
    // "error" with the message; after abort() it returns stop "cancelled" at once.
    RunFinished run(Complete c, const std::function<void(const Event&)>& on_event);
    // The draining thread's batches, in engine order.
    void deliver(const std::vector<Event>& batch);
    // Wakes a waiting run() (it returns "cancelled") and makes later ones return at once; a
    // request's generation is cancelled. For shutting the server down without the draining
    // thread, which may be the one stopping it.
    void abort();
    // Cancels the engine's generation while a run() waits, and nothing otherwise: the engine's
    // other users (the window's own chat) keep theirs when the server stops or a client goes.
    // (Engine::cancel also drops what is queued behind the request.)
    void cancel();
    // A CompletionBackend over this relay (it must outlive the server using it).
    CompletionBackend backend();

  private:
    Engine& engine_;
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t submission_ = 0;  // the waiting run()'s command; 0: none waiting
    uint64_t run_ = 0;         // its run, once RunStarted arrived
    std::vector<Event> pending_;
    bool aborted_ = false;
};

}  // namespace fluoro::app
