#include "advisor/recorded_requests.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "store/blob_codec.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::app {
namespace {

struct RunHeader {
    int64_t id = 0;
    std::string model_key, model_name, model_path;
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

bool matches(const RunHeader& h, const std::string& needle) {
    if (needle.empty()) return true;
    const std::string n = lower(needle);
    return lower(h.model_path).find(n) != std::string::npos ||
           lower(h.model_name).find(n) != std::string::npos;
}

std::string display_name(const RunHeader& h) {
    const std::string file = std::filesystem::path(h.model_path).filename().string();
    return file.empty() ? h.model_name : file;
}

std::vector<RunHeader> run_headers(Store& store) {
    std::vector<RunHeader> out;
    Statement st =
        store.db().prepare("SELECT id, model_path, model_name, model_sha256 FROM runs ORDER BY id");
    while (st.step()) {
        RunHeader h;
        h.id = st.int64(0);
        h.model_path = st.text(1);
        h.model_name = st.text(2);
        const std::string sha = st.text(3);
        h.model_key = sha.empty() ? h.model_path : sha;  // the same file moved keeps its hash
        out.push_back(std::move(h));
    }
    return out;
}

AdvisorRequest read_request(Store& store, Statement& st, int64_t run) {
    st.reset();
    st.bind(1, run);
    if (!st.step()) throw StoreError("run " + std::to_string(run) + " vanished while reading");
    AdvisorRequest r;
    r.id = "run " + std::to_string(run);
    r.time = st.text(0);
    try {
        r.ids = decode_ids(st.blob(1));
        r.pieces = decode_pieces(st.blob(2));
    } catch (const StoreError& e) {
        throw StoreError(store.path().string() + ": run " + std::to_string(run) + ": " + e.what(),
                         e.code());
    }
    if (!st.is_null(3)) r.served_cached = st.int64(3);
    if (r.pieces.size() != r.ids.size()) r.pieces.clear();
    return r;
}

// The generated tokens that went through the model (the cache holds them too: a next turn reuses
// the answer). The end-of-generation token is not recorded, and every recorded one was fed to
// get the next; any other stop leaves the last one sampled but never fed.
void read_output(Statement& st, int64_t run, const std::string& stop, AdvisorRequest& r) {
    st.reset();
    st.bind(1, run);
    while (st.step()) {
        r.output_ids.push_back(int32_t(st.int64(0)));
        r.output_pieces.push_back(st.text(1));
    }
    if (stop != "eog" && !r.output_ids.empty()) {
        r.output_ids.pop_back();
        r.output_pieces.pop_back();
    }
}

}  // namespace

RecordedRequests load_recorded_requests(Store& store, const RequestFilter& filter) {
    RecordedRequests out;
    std::vector<RunHeader> headers = run_headers(store);
    std::erase_if(headers, [&](const RunHeader& h) { return !matches(h, filter.model); });
    if (headers.empty()) return out;
    const RunHeader chosen = headers.back();
    out.model_name = display_name(chosen);
    out.model_path = chosen.model_path;

    std::map<std::string, RecordedRequests::OtherModel> others;
    std::vector<int64_t> ids;
    for (const auto& h : headers) {
        if (h.model_key == chosen.model_key) {
            ids.push_back(h.id);
            continue;
        }
        auto& o = others[h.model_key];
        o.name = display_name(h);
        o.runs++;
    }
    for (auto& [key, o] : others) out.other_models.push_back(std::move(o));

    Statement st = store.db().prepare(
        "SELECT started_at, prompt_ids, prompt_pieces, cached_tokens, stop_reason FROM runs "
        "WHERE id = ?");
    Statement tokens =
        store.db().prepare("SELECT token_id, piece FROM tokens WHERE run_id = ? ORDER BY idx");
    // Runs without prompt ids (recorded before schema v3) tell nothing about prefixes.
    for (const int64_t id : ids) {
        AdvisorRequest r = read_request(store, st, id);
        read_output(tokens, id, st.is_null(4) ? "" : st.text(4), r);
        if (r.ids.empty())
            out.without_prompt++;
        else
            out.requests.push_back(std::move(r));
    }
    if (filter.last > 0 && int64_t(out.requests.size()) > filter.last)
        out.requests.erase(out.requests.begin(), out.requests.end() - filter.last);
    return out;
}

int64_t fill_missing_pieces(std::vector<AdvisorRequest>& requests,
                            const std::filesystem::path& model) {
    const bool missing = std::any_of(requests.begin(), requests.end(),
                                     [](const auto& r) { return r.pieces.empty(); });
    std::error_code ec;
    if (!missing || model.empty() || !std::filesystem::is_regular_file(model, ec)) return 0;
    std::optional<tok::Tokenizer> tokenizer;
    try {
        tokenizer.emplace(tok::Tokenizer::from_gguf(gguf::GgufFile::open(model)));
    } catch (const Error&) {
        return 0;  // not readable as a model now: the report goes on with token ids
    }
    int64_t filled = 0;
    for (auto& r : requests) {
        if (!r.pieces.empty()) continue;
        try {
            std::vector<std::string> pieces;
            pieces.reserve(r.ids.size());
            for (const int32_t id : r.ids) pieces.push_back(tokenizer->token_to_piece(id, true));
            r.pieces = std::move(pieces);
            ++filled;
        } catch (const Error&) {
            // an id outside this vocabulary: the file is not the model that ran
        }
    }
    return filled;
}

}  // namespace fluoro::app
