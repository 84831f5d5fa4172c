// Finding out whether the CUDA backend can run here: driver, device, and whether this build's
// kernels (sm_90 machine code + compute_90 PTX) load on it. Never throws, so a caller (the CLI,
// the GUI, a test) can fall back to the CPU with the reason in hand.
#pragma once

#include <cstddef>
#include <string>

namespace fluoro::cuda {

struct DeviceStatus {
    bool available = false;
    std::string reason;    // why not, when !available; empty otherwise
    int device_count = 0;  // devices the runtime sees (may be > 0 while !available)
    // Device 0, filled in whenever the runtime could describe it.
    std::string name;
    int cc_major = 0;
    int cc_minor = 0;
    size_t total_mem = 0;  // bytes
};

// Probes the CUDA runtime and device 0. No driver, no device, a driver older than the runtime,
// or a GPU this build has no kernels for all give available=false with a readable reason.
DeviceStatus probe_devices();

}  // namespace fluoro::cuda
