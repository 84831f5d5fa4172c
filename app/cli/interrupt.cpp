#include "cli/interrupt.h"

#include <csignal>

namespace fluoro::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
    g_interrupted.store(true);
}

}  // namespace

std::atomic<bool>& install_interrupt_flag() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking read at the prompt returns, so Ctrl-C is seen
    sigaction(SIGINT, &sa, nullptr);
    return g_interrupted;
}

}  // namespace fluoro::cli
