// Which backend runs a model, and how the engine gets one. The engine library knows only the CPU
// backend; a program built with the CUDA backend (app/session/backend_factory.h) hands the engine
// a factory that can make both, so the engine needs no link to CUDA.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "backend/backend.h"
#include "settings/settings.h"  // BackendKind

namespace fluoro {

// Makes a backend of that kind; `threads` is the CPU backend's thread count (<= 0: physical
// cores). Throws Error with the reason when the kind cannot run here. The CPU-only one is
// backend/cpu/cpu_only_factory.h.
using BackendFactory = std::function<std::unique_ptr<Backend>(BackendKind kind, int threads)>;

}  // namespace fluoro
