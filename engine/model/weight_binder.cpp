#include "model/weight_binder.h"

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace fluoro {
namespace {

std::string shape_text(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

}  // namespace

Weight WeightBinder::optional(const std::string& name, std::vector<int64_t> shape) const {
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (!info) return {};
    std::vector<int64_t> found;
    for (uint32_t d = 0; d < info->n_dims; ++d) found.push_back(int64_t(info->ne[d]));
    while (found.size() > shape.size() && found.back() == 1) found.pop_back();
    while (shape.size() > found.size() && shape.back() == 1) shape.pop_back();
    if (found != shape)
        throw FormatError(file_.name() + ": tensor '" + name + "' has shape " + shape_text(found) +
                          ", expected " + shape_text(shape) + " from the model's hyperparameters");
    return backend_.load_weight(file_, *info);
}

Weight WeightBinder::required(const std::string& name, std::vector<int64_t> shape) const {
    Weight w = optional(name, std::move(shape));
    if (!w.present())
        throw FormatError(file_.name() + ": required tensor '" + name + "' is missing");
    return w;
}

}  // namespace fluoro
