#include "model/architecture.h"

#include "core/error.h"
#include "model/arch_gemma3.h"
#include "model/arch_llama.h"

namespace fluoro {

std::unique_ptr<Architecture> make_qwen2(const Hparams& hp);  // arch_qwen2.cpp

namespace {

using Factory = std::unique_ptr<Architecture> (*)(const Hparams&);

// Every architecture the engine runs, by general.architecture: adding one is one line here (and
// its arch_*.cpp file). The order is the order of the supported list in error messages.
struct Entry {
    const char* name;
    Factory make;
};
constexpr Entry kArchitectures[] = {
    {"llama",
     [](const Hparams& hp) -> std::unique_ptr<Architecture> {
         return std::make_unique<LlamaArchitecture>(hp);
     }},
    {"qwen2", make_qwen2},
    {"gemma3",
     [](const Hparams& hp) -> std::unique_ptr<Architecture> {
         return std::make_unique<Gemma3Architecture>(hp);
     }},
};

}  // namespace

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const Entry& e : kArchitectures) v.emplace_back(e.name);
        return v;
    }();
    return names;
}

std::unique_ptr<Architecture> make_architecture(const Hparams& hp) {
    for (const Entry& e : kArchitectures)
        if (hp.arch == e.name) return e.make(hp);
    std::string list;
    for (const auto& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
    throw UnsupportedError("architecture '" + hp.arch + "' is not supported (supported: " + list +
                           ")");
}

}  // namespace fluoro
