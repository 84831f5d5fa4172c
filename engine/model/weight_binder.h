// Looks up a model's tensors by name and checks their shapes before binding them into a
// backend, so a file with a missing or misshapen tensor fails at load with the tensor's name,
// what was expected and what was found — never later inside a kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro {

class WeightBinder {
  public:
    WeightBinder(Backend& backend, const gguf::GgufFile& file) : backend_(backend), file_(file) {}

    // shape = expected {ne0, ne1, ...}; trailing dims of 1 may be omitted.
    Weight required(const std::string& name, std::vector<int64_t> shape) const;
    // An absent tensor gives an empty Weight (present() == false); a present one is checked.
    Weight optional(const std::string& name, std::vector<int64_t> shape) const;
    static std::string layer(int64_t il, const char* suffix) {
        return "blk." + std::to_string(il) + "." + suffix;
    }

  private:
    Backend& backend_;
    const gguf::GgufFile& file_;
};

}  // namespace fluoro
