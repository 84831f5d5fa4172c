// The advisor's input from the session store: the runs it recorded (chats, and `fluoro serve`
// requests under --save), oldest first, with their prompts' token ids and text. A prefix cache
// belongs to one model, so one model's runs are taken: the one --model names (a substring of its
// path or name), else the model of the latest run; the others are listed for the report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "advisor/prompt_advisor.h"
#include "store/store.h"

namespace fluoro::app {

struct RequestFilter {
    int64_t last = 0;   // > 0: only the latest N runs of the model
    std::string model;  // substring of the model's path or name (case-insensitive); "" any
};

struct RecordedRequests {
    std::vector<AdvisorRequest> requests;  // oldest first; id "run N"
    std::string model_name, model_path;    // the model analysed ("" when no run matched)
    struct OtherModel {
        std::string name;
        int64_t runs = 0;
    };
    std::vector<OtherModel> other_models;  // matching the filter but not analysed
    int64_t without_prompt = 0;            // runs of the model with no prompt ids (schema < 3)
    int64_t filled_from_model = 0;         // prompts whose text came from the model's tokenizer
};

// Throws StoreError (naming the file and run) for a malformed row.
RecordedRequests load_recorded_requests(Store& store, const RequestFilter& filter);

// Requests recorded without token text get it from the model file's tokenizer, when the file is
// still readable (otherwise they stay without text). Returns how many were filled.
int64_t fill_missing_pieces(std::vector<AdvisorRequest>& requests,
                            const std::filesystem::path& model);

}  // namespace fluoro::app
