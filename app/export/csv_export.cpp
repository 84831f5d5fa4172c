#include "export/csv_export.h"

#include <cmath>
#include <cstdio>

namespace fluoro::app {
namespace {

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

}  // namespace

std::string run_tokens_csv(const RunRecord& r) {
    std::string out = "index,token_id,piece,logprob,prob,t_ms,top\r\n";
    for (const auto& t : r.tokens) {
        std::string top;
        for (const auto& p : t.top) {
            if (!top.empty()) top += ' ';
            top += std::to_string(p.id);
            top += ':';
            top += num(p.logprob);
        }
        out += std::to_string(t.index);
        out += ',';
        out += std::to_string(t.id);
        out += ',';
        out += quoted(t.piece);
        out += ',';
        out += num(t.logprob);
        out += ',';
        out += num(std::exp(double(t.logprob)));
        out += ',';
        out += num(double(t.t_ns) / 1e6);
        out += ',';
        out += quoted(top);
        out += "\r\n";
    }
    return out;
}

}  // namespace fluoro::app
