// The store's writer thread: events go in from any thread without waiting on the disk; the
// thread applies them through an EventRecorder in batches, one transaction per batch (everything
// queued when it wakes, after a short linger to let a burst of tokens collect), so a kill loses
// at most the last batch and never leaves half a batch. A failed batch (disk full, I/O error) is
// rolled back and reported through the error callback — once per failure streak — and the writer
// keeps going with the next batch; the engine is never affected.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/event_recorder.h"
#include "store/store.h"

namespace fluoro::app {

struct StoreWriterOptions {
    std::chrono::milliseconds linger{20};  // wait this long for more events before committing
    size_t max_batch = 4096;
    std::function<void(const std::string&)> on_error;  // called on the writer thread
    int64_t max_page_count = 0;  // > 0: PRAGMA max_page_count (tests simulate a full disk)
};

class StoreWriter {
  public:
    // Opens the database here, on the caller's thread, so a bad file fails at once (StoreError).
    StoreWriter(const std::filesystem::path& db, StoreWriterOptions opt = {});
    ~StoreWriter();  // writes what is queued, then stops
    StoreWriter(const StoreWriter&) = delete;
    StoreWriter& operator=(const StoreWriter&) = delete;

    void record(Event e);
    // Blocks until everything recorded before the call is committed (or its batch failed).
    void flush();
    // Number of failed batches so far.
    int64_t failures() const;
    const std::filesystem::path& path() const { return path_; }
    // Store ids of the last run / conversation the writer created (valid after flush()).
    int64_t last_run_id() const;
    int64_t last_conversation_id() const;
    void set_max_page_count(int64_t pages);  // applies before the next batch

  private:
    void loop();
    void write_batch(std::deque<Event>& batch);

    std::filesystem::path path_;
    StoreWriterOptions opt_;
    std::unique_ptr<Store> store_;
    std::unique_ptr<EventRecorder> recorder_;
    mutable std::mutex mu_;
    std::condition_variable cv_, done_cv_;
    std::deque<Event> queue_;
    uint64_t enqueued_ = 0, written_ = 0;  // events; flush waits for written_ >= its mark
    bool flush_requested_ = false, stop_ = false, failing_ = false;
    int64_t failures_ = 0, pending_max_pages_ = -1;
    int64_t last_run_ = 0, last_conversation_ = 0;
    std::thread thread_;
};

}  // namespace fluoro::app
