// The backends this program was built with: the CPU backend always, the CUDA backend when the
// build found the CUDA toolkit (FLUORO_HAVE_CUDA). The engine and the CLI get backends from here.
#pragma once

#include <memory>
#include <string>

#include "backend/backend_kind.h"

namespace fluoro::app {

// Throws Error with the reason when `kind` cannot run here (a build without CUDA; no GPU or
// driver: the message says which).
std::unique_ptr<Backend> make_backend(BackendKind kind, int threads);

bool cuda_built();
// "not built", or the CUDA probe's answer: the device's name and memory, or why there is none.
std::string cuda_status();

}  // namespace fluoro::app
