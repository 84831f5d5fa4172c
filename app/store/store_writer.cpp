#include "store/store_writer.h"

namespace fluoro::app {

StoreWriter::StoreWriter(const std::filesystem::path& db, StoreWriterOptions opt)
    : path_(db),
      opt_(std::move(opt)),
      store_(std::make_unique<Store>(db)),
      recorder_(std::make_unique<EventRecorder>(*store_)),
      pending_max_pages_(opt_.max_page_count > 0 ? opt_.max_page_count : -1) {
    thread_ = std::thread([this] { loop(); });
}

StoreWriter::~StoreWriter() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void StoreWriter::record(Event e) {
    {
        std::lock_guard lock(mu_);
        queue_.push_back(std::move(e));
        ++enqueued_;
    }
    cv_.notify_one();
}

void StoreWriter::flush() {
    std::unique_lock lock(mu_);
    const uint64_t mark = enqueued_;
    flush_requested_ = true;
    cv_.notify_one();
    done_cv_.wait(lock, [&] { return written_ >= mark || !thread_.joinable(); });
}

int64_t StoreWriter::failures() const {
    std::lock_guard lock(mu_);
    return failures_;
}

int64_t StoreWriter::last_run_id() const {
    std::lock_guard lock(mu_);
    return last_run_;
}

int64_t StoreWriter::last_conversation_id() const {
    std::lock_guard lock(mu_);
    return last_conversation_;
}

void StoreWriter::set_max_page_count(int64_t pages) {
    std::lock_guard lock(mu_);
    pending_max_pages_ = pages;
}

void StoreWriter::loop() {
    for (;;) {
        std::deque<Event> batch;
        int64_t max_pages = -1;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (queue_.empty() && stop_) return;
            // Let a burst collect unless someone waits for it (or the run boundary is here).
            if (!stop_ && !flush_requested_)
                cv_.wait_for(lock, opt_.linger, [&] {
                    return stop_ || flush_requested_ || queue_.size() >= opt_.max_batch;
                });
            flush_requested_ = false;
            const size_t n = std::min(queue_.size(), opt_.max_batch);
            batch.insert(batch.end(), std::make_move_iterator(queue_.begin()),
                         std::make_move_iterator(queue_.begin() + std::ptrdiff_t(n)));
            queue_.erase(queue_.begin(), queue_.begin() + std::ptrdiff_t(n));
            max_pages = pending_max_pages_;
            pending_max_pages_ = -1;
        }
        if (max_pages >= 0) {
            try {
                store_->db().exec("PRAGMA max_page_count = " + std::to_string(max_pages));
            } catch (const std::exception& e) {
                if (opt_.on_error) opt_.on_error(e.what());
            }
        }
        const size_t n = batch.size();
        write_batch(batch);
        {
            std::lock_guard lock(mu_);
            written_ += n;
            last_run_ = recorder_->last_run_id();
            last_conversation_ = recorder_->last_conversation_id();
        }
        done_cv_.notify_all();
    }
}

void StoreWriter::write_batch(std::deque<Event>& batch) {
    recorder_->checkpoint();
    std::string error;
    try {
        Transaction tx(store_->db());
        for (const Event& e : batch) recorder_->apply(e);
        recorder_->end_batch();
        tx.commit();
    } catch (const std::exception& e) {
        error = e.what();
        recorder_->rollback();
    }
    bool report = false;
    {
        std::lock_guard lock(mu_);
        if (!error.empty()) {
            ++failures_;
            report = !failing_;
            failing_ = true;
        } else {
            failing_ = false;
        }
    }
    if (report && opt_.on_error) {
        std::string msg = "could not save to ";
        msg += path_.string();
        msg += ": ";
        msg += error;
        msg += " (recording goes on; this batch of events is lost)";
        opt_.on_error(msg);
    }
}

}  // namespace fluoro::app
