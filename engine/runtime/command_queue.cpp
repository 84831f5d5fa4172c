#include "runtime/command_queue.h"

#include <algorithm>

#include "core/error.h"

namespace fluoro {
namespace {

void fail(const std::shared_ptr<std::promise<void>>& done, const std::string& why) {
    if (done) done->set_exception(std::make_exception_ptr(Error(why)));
}

}  // namespace

uint64_t CommandQueue::push(Command c, std::string tag, std::shared_ptr<std::promise<void>> done) {
    std::shared_ptr<std::promise<void>> superseded;
    uint64_t seq = 0;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            fail(done, std::string("the engine has stopped; '") + std::string(command_name(c)) +
                           "' was not run");
            return 0;
        }
        if (!tag.empty()) {
            const auto it = std::find_if(queue_.begin(), queue_.end(),
                                         [&](const QueuedCommand& q) { return q.tag == tag; });
            if (it != queue_.end()) {
                superseded = std::move(it->done);
                queue_.erase(it);
            }
        }
        seq = next_seq_++;
        queue_.push_back(QueuedCommand{seq, std::move(tag), std::move(c), std::move(done)});
    }
    cv_.notify_one();
    fail(superseded, "superseded by a newer command with the same tag");
    return seq;
}

std::optional<QueuedCommand> CommandQueue::wait_pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (closed_) return std::nullopt;
    QueuedCommand q = std::move(queue_.front());
    queue_.pop_front();
    return q;
}

void CommandQueue::close() {
    std::deque<QueuedCommand> dropped;
    {
        std::lock_guard lock(mu_);
        closed_ = true;
        dropped.swap(queue_);
    }
    cv_.notify_all();
    for (auto& q : dropped)
        fail(q.done, std::string("the engine stopped before '") +
                         std::string(command_name(q.command)) + "' ran");
}

uint64_t CommandQueue::last_seq() const {
    std::lock_guard lock(mu_);
    return next_seq_ - 1;
}

size_t CommandQueue::size() const {
    std::lock_guard lock(mu_);
    return queue_.size();
}

}  // namespace fluoro
