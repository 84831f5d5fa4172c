#include "gguf/test_model.h"

#include <cmath>
#include <random>

#include "core/error.h"
#include "gguf/test_vocab.h"
#include "tensor/quantize.h"

namespace fluoro::gguf {
namespace {

// Uniform floats from mt19937_64 computed by hand (std::uniform_real_distribution is
// implementation-defined), so a seed gives the same model with every standard library.
class Rng {
  public:
    explicit Rng(uint64_t seed) : gen_(seed) {}
    float symmetric(double a) {
        const double u = static_cast<double>(gen_() >> 11) * 0x1.0p-53;  // [0, 1)
        return static_cast<float>((2.0 * u - 1.0) * a);
    }

  private:
    std::mt19937_64 gen_;
};

enum class Init { Weight, Norm, Bias };

struct Dims {
    uint64_t head_dim, q, kv;  // head size, n_head * head_dim, n_head_kv * head_dim
};

class Builder {
  public:
    Builder(const TestModelSpec& spec, GgufWriter& w) : spec_(spec), w_(w), rng_(spec.seed) {}

    // Writes one tensor of shape ne (ne[0] = row length) with seeded values.
    void tensor(const std::string& name, std::vector<uint64_t> ne, Init init) {
        uint64_t n = 1;
        for (const uint64_t d : ne) n *= d;
        std::vector<float> values(n);
        const double scale = init == Init::Weight ? 1.0 / std::sqrt(static_cast<double>(ne[0]))
                             : init == Init::Norm ? 0.1
                                                  : 0.02;
        for (float& v : values) v = (init == Init::Norm ? 1.0f : 0.0f) + rng_.symmetric(scale);
        store(name, type_for(name, ne.size()), ne, values);
    }

  private:
    GgmlType type_for(const std::string& name, size_t n_dims) const {
        if (const auto it = spec_.tensor_types.find(name); it != spec_.tensor_types.end())
            return it->second;
        return n_dims >= 2 ? spec_.weight_type : spec_.norm_type;
    }

    void store(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne,
               const std::vector<float>& values) {
        if (type == GgmlType::F32) return w_.add_tensor_f32(name, ne, values);
        const auto row = row_bytes(type, ne[0]);
        if (!row) {
            throw Error("test model: tensor '" + name + "' row length " + std::to_string(ne[0]) +
                        " is not a multiple of the " + std::string(type_name(type)) +
                        " block size");
        }
        const uint64_t rows = values.size() / ne[0];
        std::vector<std::byte> data(*row * rows);
        for (uint64_t r = 0; r < rows; ++r)
            quantize_row(type, values.data() + r * ne[0], data.data() + r * *row,
                         static_cast<int64_t>(ne[0]));
        w_.add_tensor(name, type, ne, data);
    }

    const TestModelSpec& spec_;
    GgufWriter& w_;
    Rng rng_;
};

Dims dims(const TestModelSpec& s) {
    const uint64_t hd = s.head_dim ? s.head_dim : s.n_embd / s.n_head;
    return {hd, s.n_head * hd, s.n_head_kv * hd};
}

void check_spec(const TestModelSpec& s) {
    if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3" && s.arch != "gemma3" &&
        s.arch != "granite" && s.arch != "phi3" && s.arch != "mistral3" && s.arch != "smollm3")
        throw Error("test model: unknown arch '" + s.arch +
                    "'; expected llama, qwen2, qwen3, gemma3, granite, phi3, mistral3 or smollm3");
    if (s.n_layer == 0 || s.n_embd == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.n_ff == 0)
        throw Error("test model: n_layer, n_embd, n_head, n_head_kv and n_ff must be non-zero");
    if (s.n_head % s.n_head_kv != 0) throw Error("test model: n_head_kv must divide n_head");
    if (dims(s).head_dim == 0) throw Error("test model: head_dim is 0");
}

std::string tokenizer_model(const TestModelSpec& s) {
    if (!s.tokenizer.empty()) return s.tokenizer;
    return s.arch == "gemma3" ? "llama" : "gpt2";
}

// llama_ftype of the weight type, when it has one.
std::optional<uint32_t> file_type(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return 0;
        case GgmlType::F16:
            return 1;
        case GgmlType::Q4_0:
            return 2;
        case GgmlType::Q4_1:
            return 3;
        case GgmlType::Q8_0:
            return 7;
        case GgmlType::Q5_0:
            return 8;
        case GgmlType::Q5_1:
            return 9;
        case GgmlType::BF16:
            return 32;
        default:
            return std::nullopt;
    }
}

void add_per_layer(GgufWriter& w, const TestModelSpec& s, const std::string& key, uint32_t v) {
    if (!s.per_layer_arrays) return w.add_u32(key, v);
    const std::vector<uint32_t> values(s.n_layer, v);
    w.add_u32_array(key, values);
}

void add_hparams(GgufWriter& w, const TestModelSpec& s) {
    const std::string a = s.arch + ".";
    const Dims d = dims(s);
    w.add_string("general.architecture", s.arch);
    w.add_string("general.name", "fluoro-test-" + s.arch);
    if (const auto ft = file_type(s.weight_type)) w.add_u32("general.file_type", *ft);
    w.add_u32("general.quantization_version", 2);
    w.add_u32(a + "context_length", s.n_ctx);
    w.add_u32(a + "embedding_length", s.n_embd);
    w.add_u32(a + "block_count", s.n_layer);
    add_per_layer(w, s, a + "feed_forward_length", s.n_ff);
    add_per_layer(w, s, a + "attention.head_count", s.n_head);
    add_per_layer(w, s, a + "attention.head_count_kv", s.n_head_kv);
    w.add_f32(a + "rope.freq_base", s.rope_base);
    w.add_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(d.head_dim));
    w.add_u32(a + "vocab_size", s.n_vocab);
    if (s.arch == "gemma3" || d.head_dim * s.n_head != s.n_embd || s.value_length != 0) {
        w.add_u32(a + "attention.key_length", static_cast<uint32_t>(d.head_dim));
        w.add_u32(a + "attention.value_length",
                  s.value_length != 0 ? s.value_length : static_cast<uint32_t>(d.head_dim));
    }
    if (s.arch == "gemma3") w.add_u32(a + "attention.sliding_window", s.sliding_window);
}

void add_layer(Builder& b, const TestModelSpec& s, uint32_t il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const Dims d = dims(s);
    const uint64_t e = s.n_embd;
    b.tensor(p + "attn_norm.weight", {e}, Init::Norm);
    if (s.arch == "phi3") {  // Q, K, V stacked in one matrix
        b.tensor(p + "attn_qkv.weight", {e, d.q + 2 * d.kv}, Init::Weight);
    } else {
        b.tensor(p + "attn_q.weight", {e, d.q}, Init::Weight);
        b.tensor(p + "attn_k.weight", {e, d.kv}, Init::Weight);
        b.tensor(p + "attn_v.weight", {e, d.kv}, Init::Weight);
    }
    if (s.arch == "qwen2") {
        b.tensor(p + "attn_q.bias", {d.q}, Init::Bias);
        b.tensor(p + "attn_k.bias", {d.kv}, Init::Bias);
        b.tensor(p + "attn_v.bias", {d.kv}, Init::Bias);
    }
    if (s.arch == "gemma3" || s.arch == "qwen3") {
        b.tensor(p + "attn_q_norm.weight", {d.head_dim}, Init::Norm);
        b.tensor(p + "attn_k_norm.weight", {d.head_dim}, Init::Norm);
    }
    b.tensor(p + "attn_output.weight", {d.q, e}, Init::Weight);
    if (s.arch == "gemma3") b.tensor(p + "post_attention_norm.weight", {e}, Init::Norm);
    b.tensor(p + "ffn_norm.weight", {e}, Init::Norm);
    if (s.arch == "phi3") {  // gate rows, then up rows
        b.tensor(p + "ffn_up.weight", {e, 2 * uint64_t(s.n_ff)}, Init::Weight);
    } else {
        b.tensor(p + "ffn_gate.weight", {e, s.n_ff}, Init::Weight);
        b.tensor(p + "ffn_up.weight", {e, s.n_ff}, Init::Weight);
    }
    b.tensor(p + "ffn_down.weight", {s.n_ff, e}, Init::Weight);
    if (s.arch == "gemma3") b.tensor(p + "post_ffw_norm.weight", {e}, Init::Norm);
}

}  // namespace

uint32_t test_model_min_vocab(std::string_view tokenizer_model_name) {
    return test_vocab_size(tokenizer_model_name);
}

GgufWriter make_test_model(const TestModelSpec& spec) {
    check_spec(spec);
    GgufWriter w(spec.version);
    if (spec.alignment != 32) w.set_alignment(spec.alignment);
    add_hparams(w, spec);
    add_test_vocab(w, tokenizer_model(spec), spec.n_vocab);
    Builder b(spec, w);
    b.tensor("token_embd.weight", {spec.n_embd, spec.n_vocab}, Init::Weight);
    for (uint32_t il = 0; il < spec.n_layer; ++il) add_layer(b, spec, il);
    b.tensor("output_norm.weight", {spec.n_embd}, Init::Norm);
    if (!spec.tied_output) b.tensor("output.weight", {spec.n_embd, spec.n_vocab}, Init::Weight);
    return w;
}

void write_test_model(const std::filesystem::path& path, const TestModelSpec& spec) {
    make_test_model(spec).write(path);
}

void write_test_model(std::vector<std::byte>& out, const TestModelSpec& spec) {
    out = make_test_model(spec).to_bytes();
}

}  // namespace fluoro::gguf
