// libFuzzer target for the GGUF reader: any input must either parse or fail with a
// fluoro::Error; a crash, sanitizer report, leak or timeout is a bug. A parsed file is then
// walked completely (every value displayed, every getter tried, every tensor byte read) so
// that whatever the reader promises to be in bounds is checked by ASan.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace {

using fluoro::gguf::GgufFile;

// Each getter may legitimately refuse a key of the wrong type; anything else propagates.
template <typename F>
void try_getter(F f) {
    try {
        (void)f();
    } catch (const fluoro::Error&) {
    }
}

void touch_metadata(const GgufFile& f) {
    for (const auto& kv : f.metadata()) {
        const std::string& k = kv.key;
        (void)kv.value.to_display();
        (void)kv.value.to_display(3);
        if (f.find(k) != &kv.value) __builtin_trap();
        try_getter([&] { return f.get_uint(k); });
        try_getter([&] { return f.get_int(k); });
        try_getter([&] { return f.get_float(k); });
        try_getter([&] { return f.get_bool(k); });
        try_getter([&] { return f.get_string(k); });
        try_getter([&] { return f.require_uint(k); });
        try_getter([&] { return f.require_float(k); });
        try_getter([&] { return f.require_string(k); });
        try_getter([&] { return f.get_uint_per_layer(k, kv.value.array_size()); });
        try_getter([&] { return f.get_uint_per_layer(k, 2); });
    }
}

unsigned touch_tensors(const GgufFile& f) {
    unsigned sum = 0;
    for (const auto& t : f.tensors()) {
        if (f.find_tensor(t.name) != &t) __builtin_trap();
        if (t.n_rows() * t.ne[0] != t.n_elements) __builtin_trap();
        const std::span<const std::byte> data = f.tensor_data(t);
        if (data.size() != t.n_bytes) __builtin_trap();
        for (const std::byte b : data) sum += static_cast<unsigned>(b);
    }
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const GgufFile f =
            GgufFile::parse({reinterpret_cast<const std::byte*>(data), size}, "fuzz");
        if (f.data_offset() > f.file_size()) __builtin_trap();
        touch_metadata(f);
        volatile unsigned sink = touch_tensors(f);
        (void)sink;
    } catch (const fluoro::Error&) {
    }
    return 0;
}
