#include "model/architecture.h"

#include "core/error.h"
#include "model/arch_gemma3.h"
#include "model/arch_llama.h"

namespace fluoro {

std::unique_ptr<Architecture> make_qwen2(const Hparams& hp);  // arch_qwen2.cpp

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> names{"llama", "qwen2", "gemma3"};
    return names;
}

std::unique_ptr<Architecture> make_architecture(const Hparams& hp) {
    if (hp.arch == "llama") return std::make_unique<LlamaArchitecture>(hp);
    if (hp.arch == "qwen2") return make_qwen2(hp);
    if (hp.arch == "gemma3") return std::make_unique<Gemma3Architecture>(hp);
    std::string list;
    for (const auto& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
    throw UnsupportedError("architecture '" + hp.arch + "' is not supported (supported: " + list +
                           ")");
}

}  // namespace fluoro
