#include "model/weight_binder.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "tensor/dequantize.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

std::string shape_text(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// A vector (norm weights, biases) with a NaN or an infinity makes every logit NaN downstream:
// refuse it at load, naming the element. Matrices are not scanned (hundreds of MB at load).
void check_finite_vector(const gguf::GgufFile& file, const gguf::TensorInfo& info) {
    if (info.n_dims != 1 || !type_traits(info.type).dequantize) return;
    std::vector<float> v(size_t(info.n_elements));
    dequantize_row(info.type, file.tensor_data(info).data(), v.data(), int64_t(v.size()));
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
            throw FormatError(file.name() + ": tensor '" + info.name +
                              "' holds a non-finite value (" + std::to_string(v[i]) +
                              ") at element " + std::to_string(i));
}

// The layer index of a "blk.N.…" tensor name.
std::optional<uint64_t> layer_of(std::string_view name) {
    if (!name.starts_with("blk.")) return std::nullopt;
    name.remove_prefix(4);
    uint64_t il = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), il);
    if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.')
        return std::nullopt;
    return il;
}

}  // namespace

bool WeightBinder::has(std::string_view name) const {
    return file_.find_tensor(name) != nullptr;
}

const std::string& WeightBinder::file_name() const {
    return file_.name();
}

void WeightBinder::check_all_used(std::string_view arch, uint64_t n_layer) const {
    for (const gguf::TensorInfo& t : file_.tensors()) {
        if (asked_.contains(t.name)) continue;
        const std::optional<uint64_t> il = layer_of(t.name);
        if (il && *il >= n_layer)
            throw UnsupportedError(file_.name() + ": tensor '" + t.name + "' belongs to layer " +
                                   std::to_string(*il) + " but " + std::string(arch) +
                                   ".block_count says the model has " + std::to_string(n_layer) +
                                   " layers");
        throw UnsupportedError(file_.name() + ": tensor '" + t.name + "' is not used by the " +
                               std::string(arch) +
                               " architecture as this engine implements it; running without it "
                               "would give wrong results, so the model is refused");
    }
}

const gguf::TensorInfo* WeightBinder::checked(const std::string& name,
                                              std::vector<int64_t> shape) const {
    asked_.insert(name);
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) return nullptr;
    std::vector<int64_t> found;
    for (uint32_t d = 0; d < info->n_dims; ++d) found.push_back(int64_t(info->ne[d]));
    while (found.size() > shape.size() && found.back() == 1) found.pop_back();
    while (shape.size() > found.size() && shape.back() == 1) shape.pop_back();
    if (found != shape)
        throw FormatError(file_.name() + ": tensor '" + name + "' has shape " + shape_text(found) +
                          ", expected " + shape_text(shape) + " from the model's hyperparameters");
    check_finite_vector(file_, *info);
    return info;
}

Weight WeightBinder::optional(const std::string& name, std::vector<int64_t> shape) const {
    const gguf::TensorInfo* info = checked(name, std::move(shape));
    return info ? backend_.load_weight(file_, *info) : Weight{};
}

std::vector<float> WeightBinder::host_values(const std::string& name,
                                             std::vector<int64_t> shape) const {
    const gguf::TensorInfo* info = checked(name, std::move(shape));
    if (!info) throw FormatError(file_.name() + ": required tensor '" + name + "' is missing");
    if (!type_traits(info->type).dequantize)
        throw UnsupportedError(file_.name() + ": tensor '" + name + "' is " +
                               std::string(type_name(info->type)) + ", which cannot be read back");
    std::vector<float> v(size_t(info->n_elements));
    dequantize_row(info->type, file_.tensor_data(*info).data(), v.data(), int64_t(v.size()));
    return v;
}

namespace {

const gguf::TensorInfo& derived_tensor(const gguf::GgufFile& derived, const std::string& name) {
    const gguf::TensorInfo* info = derived.find_tensor(name);
    if (!info) throw Error(derived.name() + ": no derived tensor '" + name + "'");
    return *info;
}

}  // namespace

Weight WeightBinder::load_derived(const gguf::GgufFile& derived, const std::string& name) const {
    return backend_.load_weight(derived, derived_tensor(derived, name));
}

std::vector<Weight> WeightBinder::load_derived_stacked(const gguf::GgufFile& derived,
                                                       const std::string& name, int64_t n_out,
                                                       int64_t n, const char* part) const {
    return stacked(derived, derived_tensor(derived, name), name, n_out, n, part);
}

std::vector<Weight> WeightBinder::stacked(const gguf::GgufFile& file, const gguf::TensorInfo& info,
                                          const std::string& name, int64_t n_out, int64_t n,
                                          const char* part) const {
    std::vector<Weight> out;
    for (int64_t e = 0; e < n; ++e)
        out.push_back(load_rows(file, info, name + "[" + part + " " + std::to_string(e) + "]",
                                e * n_out, n_out));
    return out;
}

void WeightBinder::require_equal_head_dims(const Hparams& hp) const {
    if (hp.head_dim_v == hp.head_dim_k) return;
    throw UnsupportedError(file_.name() + ": metadata key '" + hp.arch +
                           ".attention.value_length' (" + std::to_string(hp.head_dim_v) +
                           ") differs from the key head size (" + std::to_string(hp.head_dim_k) +
                           "): " + hp.arch + " here has one head size for K and V");
}

std::vector<int64_t> WeightBinder::dims_of(const gguf::TensorInfo& info, size_t keep) {
    std::vector<int64_t> found;
    for (uint32_t d = 0; d < info.n_dims; ++d) found.push_back(int64_t(info.ne[d]));
    while (found.size() > keep && found.back() == 1) found.pop_back();
    return found;
}

Weight WeightBinder::load_rows(const gguf::GgufFile& file, const gguf::TensorInfo& info,
                               std::string name, int64_t first, int64_t n) const {
    const std::optional<uint64_t> row = row_bytes(info.type, info.ne[0]);
    if (!row) throw FormatError(file.name() + ": tensor '" + info.name + "' has rows of no size");
    gguf::TensorInfo part = info;  // the same type and row length, a range of its rows
    part.name = std::move(name);
    part.n_dims = 2;
    part.ne = {info.ne[0], uint64_t(n), 1, 1};
    part.offset = info.offset + uint64_t(first) * *row;
    part.n_elements = uint64_t(n) * info.ne[0];
    part.n_bytes = uint64_t(n) * *row;
    return backend_.load_weight(file, part);
}

std::vector<Weight> WeightBinder::optional_split(const std::string& name, int64_t n_in,
                                                 const std::vector<int64_t>& parts) const {
    int64_t total = 0;
    for (const int64_t p : parts) total += p;
    asked_.insert(name);
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) return {};
    const std::vector<int64_t> found = dims_of(*info, 2);
    if (found != std::vector<int64_t>{n_in, total})
        throw FormatError(file_.name() + ": tensor '" + name + "' has shape " + shape_text(found) +
                          ", expected " + shape_text({n_in, total}) +
                          " from the model's hyperparameters");
    std::vector<Weight> out;
    int64_t first = 0;
    for (const int64_t p : parts) {
        out.push_back(load_rows(
            file_, *info,
            name + "[rows " + std::to_string(first) + ".." + std::to_string(first + p) + ")", first,
            p));
        first += p;
    }
    return out;
}

std::vector<Weight> WeightBinder::required_experts(const std::string& name, int64_t n_in,
                                                   int64_t n_out, int64_t n_expert,
                                                   const char* part) const {
    asked_.insert(name);
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) throw FormatError(file_.name() + ": required tensor '" + name + "' is missing");
    const std::vector<int64_t> found = dims_of(*info, 3);
    const std::vector<int64_t> want{n_in, n_out, n_expert};
    if (found != want)
        throw FormatError(file_.name() + ": tensor '" + name + "' has shape " + shape_text(found) +
                          ", expected " + shape_text(want) +
                          " (row length, rows per expert, experts) from the model's "
                          "hyperparameters");
    return stacked(file_, *info, name, n_out, n_expert, part);
}

std::vector<Weight> WeightBinder::required_expert_vectors(const std::string& name, int64_t n,
                                                          int64_t n_expert) const {
    asked_.insert(name);
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) throw FormatError(file_.name() + ": required tensor '" + name + "' is missing");
    const std::vector<int64_t> found = dims_of(*info, 2);
    if (found != std::vector<int64_t>{n, n_expert})
        throw FormatError(file_.name() + ": tensor '" + name + "' has shape " + shape_text(found) +
                          ", expected " + shape_text({n, n_expert}) +
                          " (values per expert, experts) from the model's hyperparameters");
    const std::optional<uint64_t> row = row_bytes(info->type, info->ne[0]);
    if (!row) throw FormatError(file_.name() + ": tensor '" + name + "' has rows of no size");
    std::vector<Weight> out;
    for (int64_t e = 0; e < n_expert; ++e) {
        gguf::TensorInfo part = *info;  // row e, as a vector of its own
        part.name = name + "[expert " + std::to_string(e) + "]";
        part.n_dims = 1;
        part.ne = {info->ne[0], 1, 1, 1};
        part.offset = info->offset + uint64_t(e) * *row;
        part.n_elements = info->ne[0];
        part.n_bytes = *row;
        check_finite_vector(file_, part);
        out.push_back(backend_.load_weight(file_, part));
    }
    return out;
}

Weight WeightBinder::required(const std::string& name, std::vector<int64_t> shape) const {
    Weight w = optional(name, std::move(shape));
    if (!w.present())
        throw FormatError(file_.name() + ": required tensor '" + name + "' is missing");
    return w;
}

}  // namespace fluoro
