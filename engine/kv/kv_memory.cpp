#include "kv/kv_memory.h"

#include <cstring>
#include <new>

namespace fluoro {
namespace {

class HostKvMemory final : public KvMemory {
  public:
    std::string_view name() const override { return "host"; }
    bool host_visible() const override { return true; }
    std::byte* allocate(size_t bytes) override { return new (std::nothrow) std::byte[bytes]; }
    void release(std::byte* p) noexcept override { delete[] p; }
    void move(std::byte* dst, const std::byte* src, size_t bytes) override {
        std::memmove(dst, src, bytes);
    }
    void to_host(void* dst, const std::byte* src, size_t bytes) override {
        if (bytes > 0) std::memcpy(dst, src, bytes);
    }
    void from_host(std::byte* dst, const void* src, size_t bytes) override {
        if (bytes > 0) std::memcpy(dst, src, bytes);
    }
};

}  // namespace

std::shared_ptr<KvMemory> host_kv_memory() {
    static const std::shared_ptr<KvMemory> memory = std::make_shared<HostKvMemory>();
    return memory;
}

}  // namespace fluoro
