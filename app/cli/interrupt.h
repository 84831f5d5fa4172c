// Ctrl-C handling for the CLI: SIGINT sets a flag that stops the current generation within one
// decode step instead of killing the program.
#pragma once

#include <atomic>

namespace fluoro::cli {

// Installs the handler (once); returns the flag it sets.
std::atomic<bool>& install_interrupt_flag();

}  // namespace fluoro::cli
