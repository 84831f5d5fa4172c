#include "model/model_summary.h"

#include "gguf/gguf_file.h"

namespace fluoro {

ModelSummary summarize_model(const gguf::GgufFile& file) {
    ModelSummary s;
    s.name = file.get_string("general.name").value_or("");
    s.hparams = read_hparams(file);
    s.file_bytes = file.file_size();
    uint64_t expert_params = 0;  // in the stacked per-expert tensors (ffn_*_exps)
    for (const auto& t : file.tensors()) {
        s.n_params += t.n_elements;
        if (s.hparams.n_expert > 0 && t.name.ends_with("_exps.weight"))
            expert_params += t.n_elements;
        s.tensor_bytes += t.n_bytes;
        TypeUsage& u = s.type_mix[t.type];
        ++u.tensors;
        u.elements += t.n_elements;
        u.bytes += t.n_bytes;
    }
    s.n_params_active = s.n_params;
    if (s.hparams.n_expert > 0)  // the unchosen experts' share of those tensors
        s.n_params_active -=
            uint64_t(double(expert_params) * double(s.hparams.n_expert - s.hparams.n_expert_used) /
                     double(s.hparams.n_expert));
    s.tied_output = file.find_tensor("output.weight") == nullptr;
    const std::string tmpl = file.get_string("tokenizer.chat_template").value_or("");
    s.chat_template = detect_chat_template(tmpl, s.hparams.arch);
    s.chat_format = ChatFormat::from_file(tmpl, s.hparams.arch, "", "");
    return s;
}

}  // namespace fluoro
