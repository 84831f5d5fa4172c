// The Engine's inbox: a thread-safe FIFO of commands with three ways in — plain (queued in
// order), tagged (a newer command with the same tag replaces the queued one, which never runs:
// latest wins, for settings dragged on a slider), and blocking (the submitter waits for the
// result through a promise). Every command gets a sequence number at submission, which is how
// cancel() knows which commands it covers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/engine_commands.h"

namespace fluoro {

struct QueuedCommand {
    uint64_t seq = 0;
    std::string tag;  // empty: untagged
    Command command;
    std::shared_ptr<std::promise<void>> done;  // set for blocking submissions
};

class CommandQueue {
  public:
    // Returns the command's sequence number (from 1). A tagged push removes a queued command with
    // the same tag (completing its promise, if any, with an Error saying it was superseded).
    // After close(), a push fails the promise with an Error and returns 0.
    uint64_t push(Command c, std::string tag = {}, std::shared_ptr<std::promise<void>> done = {});
    // Waits for the next command; nullopt once the queue is closed.
    std::optional<QueuedCommand> wait_pop();
    // Stops the queue: queued commands are dropped (blocking submitters get an Error).
    void close();
    // The last sequence number handed out (0 when none).
    uint64_t last_seq() const;
    size_t size() const;

  private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<QueuedCommand> queue_;
    uint64_t next_seq_ = 1;
    bool closed_ = false;
};

}  // namespace fluoro
