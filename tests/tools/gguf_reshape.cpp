// fluoro_gguf_reshape: writes a GGUF with the same architecture, metadata and tensor types as
// another, but a different number of layers and/or vocabulary size. Fewer layers keep the first
// ones; more layers repeat the file's layers cyclically; a smaller vocabulary keeps the first
// token ids (embedding rows, tokenizer entries, merges whose parts survive); a larger one repeats
// embedding rows cyclically and adds unused tokens "<synth_N>".
//
// Two uses, both for a GPU machine that a model file cannot be copied to whole:
// - a small slice of a real model (real weights, every tensor type and layer kind) for the
//   CPU-vs-CUDA correctness tests, which compare the two backends on the same file;
// - inflating such a slice back to the real model's shapes and types, for throughput
//   benchmarks (speed depends on shapes and types, not on weight values). Its outputs are not
//   the real model's: never use it for quality numbers.
// --dequantize writes every block-quantized tensor as F32 (its exact dequantized values): the same
// model without quantized weights, so that a backend comparison on it is free of the activation
// quantization the CPU applies to quantized matmuls (and the GPU does not).
//   usage: fluoro_gguf_reshape IN OUT [--layers N] [--vocab V] [--dequantize]
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tensor/dequantize.h"
#include "tensor/ggml_type.h"

using fluoro::gguf::GgufFile;
using fluoro::gguf::GgufWriter;
using fluoro::gguf::TensorInfo;
using fluoro::gguf::Value;
using fluoro::gguf::ValueType;

namespace {

// Element i of `v` resized to n entries: truncated, or extended by `extra(i)`.
template <class T, class F>
std::vector<T> resized(const std::vector<T>& v, size_t n, F extra) {
    std::vector<T> out(v.begin(), v.begin() + std::ptrdiff_t(std::min(n, v.size())));
    for (size_t i = out.size(); i < n; ++i) out.push_back(extra(i));
    return out;
}

Value with_storage(const Value& v, Value::Storage s) {
    return Value(v.type(), v.elem_type(), std::move(s));
}

int run(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: fluoro_gguf_reshape IN OUT [--layers N] [--vocab V] [--dequantize]\n";
        return 2;
    }
    const std::string in = argv[1], out = argv[2];
    int64_t layers = -1, vocab = -1;
    bool dequantize = false;
    for (int i = 3; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--dequantize") {
            dequantize = true;
        } else if ((a == "--layers" || a == "--vocab") && i + 1 < argc) {
            (a == "--layers" ? layers : vocab) = std::stoll(argv[++i]);
        } else {
            std::cerr << "fluoro_gguf_reshape: unknown argument '" << a << "'\n";
            return 2;
        }
    }
    const GgufFile f = GgufFile::open(in);
    const std::string arch = f.require_string("general.architecture");
    const auto l0 = int64_t(f.require_uint(arch + ".block_count"));
    const Value* tokens_v = f.find("tokenizer.ggml.tokens");
    if (tokens_v == nullptr) throw fluoro::Error(in + ": no tokenizer.ggml.tokens");
    const auto& tokens = std::get<std::vector<std::string>>(tokens_v->storage());
    const auto v0 = int64_t(tokens.size());
    if (layers <= 0) layers = l0;
    if (vocab <= 0) vocab = v0;
    const auto nv = size_t(vocab);

    const std::vector<std::string> new_tokens =
        resized(tokens, nv, [](size_t i) { return "<synth_" + std::to_string(i) + ">"; });
    const std::set<std::string> kept(new_tokens.begin(), new_tokens.end());

    GgufWriter w;
    w.set_alignment(f.alignment());
    for (const auto& kv : f.metadata()) {
        const std::string& k = kv.key;
        const Value& v = kv.value;
        if (k == "general.alignment") continue;  // set_alignment writes it
        if (k == arch + ".block_count") {
            w.add_u32(k, uint32_t(layers));
        } else if (k == arch + ".vocab_size") {
            w.add_u32(k, uint32_t(vocab));
        } else if (k == "tokenizer.ggml.tokens") {
            w.add(k, with_storage(v, new_tokens));
        } else if (k == "tokenizer.ggml.scores") {
            w.add(k, with_storage(v, resized(std::get<std::vector<double>>(v.storage()), nv,
                                             [](size_t) { return -1e9; })));
        } else if (k == "tokenizer.ggml.token_type") {
            const auto* s = std::get_if<std::vector<int64_t>>(&v.storage());
            if (s != nullptr)
                w.add(k, with_storage(v, resized(*s, nv, [](size_t) { return int64_t(5); })));
            else
                w.add(k, with_storage(v, resized(std::get<std::vector<uint64_t>>(v.storage()), nv,
                                                 [](size_t) { return uint64_t(5); })));
        } else if (k == "tokenizer.ggml.merges" && vocab < v0) {
            std::vector<std::string> merges;
            for (const std::string& m : std::get<std::vector<std::string>>(v.storage())) {
                const size_t sp = m.find(' ');
                if (sp == std::string::npos) continue;
                const std::string a = m.substr(0, sp), b = m.substr(sp + 1);
                if (kept.count(a) && kept.count(b) && kept.count(a + b)) merges.push_back(m);
            }
            w.add(k, with_storage(v, merges));
        } else if (v.is_array() && k.rfind(arch + ".", 0) == 0 && int64_t(v.array_size()) == l0) {
            // Per-layer arrays (head counts, feed-forward sizes) follow the layers.
            std::visit(
                [&](const auto& s) {
                    using S = std::decay_t<decltype(s)>;
                    if constexpr (requires {
                                      s.size();
                                      typename S::value_type;
                                  } &&
                                  !std::is_same_v<S, std::string>) {
                        S r;
                        for (int64_t i = 0; i < layers; ++i) r.push_back(s[size_t(i % l0)]);
                        w.add(k, with_storage(v, r));
                    } else {
                        w.add(k, v);
                    }
                },
                v.storage());
        } else {
            w.add(k, v);
        }
    }

    // Tensors: non-layer ones first (vocabulary-sized ones resized), then layer by layer.
    std::vector<std::byte> f32;
    const auto add_rows = [&](const std::string& name, const TensorInfo& t_in) {
        TensorInfo t = t_in;
        std::span<const std::byte> data = f.tensor_data(t);
        if (dequantize && fluoro::type_traits(t.type).block_elems > 1) {
            uint64_t n = 1;
            for (uint32_t d = 0; d < t.n_dims; ++d) n *= t.ne[d];
            f32.resize(n * sizeof(float));
            const uint64_t row = t.ne[0], rows = n / row, in_bytes = data.size() / rows;
            for (uint64_t r = 0; r < rows; ++r)
                fluoro::dequantize_row(t.type, data.data() + r * in_bytes,
                                       reinterpret_cast<float*>(f32.data()) + r * row,
                                       int64_t(row));
            t.type = fluoro::GgmlType::F32;
            data = f32;
        }
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (t.n_dims == 2 && int64_t(t.ne[1]) == v0 && vocab != v0) {
            const size_t row = data.size() / size_t(t.ne[1]);
            std::vector<std::byte> rows(row * nv);
            for (size_t r = 0; r < nv; ++r)
                std::memcpy(rows.data() + r * row, data.data() + (r % size_t(v0)) * row, row);
            ne[1] = uint64_t(vocab);
            w.add_tensor(name, t.type, ne, rows);
        } else {
            w.add_tensor(name, t.type, ne, data);
        }
    };
    for (const TensorInfo& t : f.tensors())
        if (t.name.rfind("blk.", 0) != 0) add_rows(t.name, t);
    for (int64_t il = 0; il < layers; ++il) {
        const std::string from = "blk." + std::to_string(il % l0) + ".";
        const std::string to = "blk." + std::to_string(il) + ".";
        for (const TensorInfo& t : f.tensors())
            if (t.name.rfind(from, 0) == 0) add_rows(to + t.name.substr(from.size()), t);
    }
    w.write(out);
    std::cout << out << ": " << layers << " layers (from " << l0 << "), vocabulary " << vocab
              << " (from " << v0 << ")\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "fluoro_gguf_reshape: " << e.what() << '\n';
        return 1;
    }
}
