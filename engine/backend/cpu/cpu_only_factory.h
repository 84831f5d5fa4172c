// The backend factory of a program built without CUDA: the engine's default (runtime/engine.h),
// and the fallback of app/session/backend_factory.h. It lives beside the CPU backend, not in the
// seam (backend/), so the seam knows no backend that implements it.
#pragma once

#include <memory>

#include "backend/backend_kind.h"

namespace fluoro {

// The CPU backend; for Cuda an Error saying this program was built without the CUDA backend.
std::unique_ptr<Backend> make_cpu_only_backend(BackendKind kind, int threads);

}  // namespace fluoro
