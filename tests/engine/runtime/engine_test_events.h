// Reading an Engine's event stream in tests: the events of the next run, the next answer of a
// type, and the events of one type.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "runtime/engine.h"

namespace fluoro::test {

// Events until (and including) the RunFinished of the next run; fails the test on a hang.
inline std::vector<Event> next_run(Engine& e) {
    using namespace std::chrono_literals;
    std::vector<Event> out;
    const auto deadline = std::chrono::steady_clock::now() + 120s;  // hang guard, not a bound
    while (std::chrono::steady_clock::now() < deadline) {
        auto ev = e.events().pop(100ms);
        if (!ev) continue;
        out.push_back(std::move(*ev));
        if (std::holds_alternative<RunFinished>(out.back())) return out;
    }
    ADD_FAILURE() << "no RunFinished within the hang guard";
    return out;
}

// The next event of type std::shared_ptr<const T> (a logit lens or an attention overview answer);
// fails the test on a hang.
template <class T>
std::shared_ptr<const T> next_answer(Engine& e) {
    using namespace std::chrono_literals;
    const auto deadline = std::chrono::steady_clock::now() + 120s;  // hang guard, not a bound
    while (std::chrono::steady_clock::now() < deadline) {
        auto ev = e.events().pop(100ms);
        if (!ev) continue;
        if (auto* a = std::get_if<std::shared_ptr<const T>>(&*ev)) return *a;
    }
    ADD_FAILURE() << "no answer within the hang guard";
    return nullptr;
}

template <class T>
std::vector<T> all_of(const std::vector<Event>& events) {
    std::vector<T> out;
    for (const auto& e : events)
        if (const auto* v = std::get_if<T>(&e)) out.push_back(*v);
    return out;
}

}  // namespace fluoro::test
