#include "advisor/volatile_span.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <string>

namespace fluoro::app {

std::string_view span_kind_name(SpanKind k) {
    switch (k) {
        case SpanKind::Timestamp:
            return "timestamp";
        case SpanKind::Id:
            return "id";
        case SpanKind::Number:
            return "number";
        case SpanKind::Other:
            return "other";
    }
    return "?";
}

namespace {

bool value_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_' ||
           c == '.' || c == '/' || c == '+';
}

bool has_digit(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

bool has_alpha(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha((unsigned char)c); });
}

const std::regex& uuid_re() {
    static const std::regex re(
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    return re;
}

bool is_timestamp(const std::string& s) {
    static const std::regex date(
        R"(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4})");
    static const std::regex time(R"(\d{1,2}:\d{2}(:\d{2})?)");
    static const std::regex epoch(R"((^|[^\d])1[5-9]\d{8}(\d{3})?($|[^\d]))");
    static const std::regex weekday("(monday|tuesday|wednesday|thursday|friday|saturday|sunday)",
                                    std::regex::icase);
    static const std::regex month(
        "(^|[^a-z])(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*",
        std::regex::icase);
    if (std::regex_search(s, date) || std::regex_search(s, time) || std::regex_search(s, epoch))
        return true;
    if (std::regex_search(s, weekday)) return true;
    return has_digit(s) && std::regex_search(s, month);  // "May 3", not "you may"
}

// A long hex run with letters and digits, or a long run of letters, digits, - and _ with both.
bool is_id(const std::string& s) {
    static const std::regex hex("[0-9a-fA-F]{8,}");
    static const std::regex token("[A-Za-z0-9_-]{10,}");
    for (const auto* re : {&hex, &token}) {
        for (auto it = std::sregex_iterator(s.begin(), s.end(), *re); it != std::sregex_iterator();
             ++it) {
            const std::string m = it->str();
            if (has_digit(m) && has_alpha(m)) return true;
        }
    }
    return false;
}

bool is_number(std::string_view s) {
    bool digit = false;
    for (const char c : s) {
        if (std::isdigit(static_cast<unsigned char>(c)))
            digit = true;
        else if (!std::isspace(static_cast<unsigned char>(c)) && !std::ispunct((unsigned char)c))
            return false;
    }
    return digit;
}

}  // namespace

std::pair<size_t, size_t> widen_value(std::string_view text, size_t begin, size_t end,
                                      size_t max_widen) {
    end = std::min(end, text.size());
    begin = std::min(begin, end);
    // A single space between digits joins a date to its time ("2024-05-01 09:11:00").
    const auto digit = [&](size_t i) { return std::isdigit(static_cast<unsigned char>(text[i])); };
    const auto joins = [&](size_t space) {
        return text[space] == ' ' && space > 0 && space + 1 < text.size() && digit(space - 1) &&
               digit(space + 1);
    };
    const size_t lo = begin > max_widen ? begin - max_widen : 0;
    while (begin > lo && (value_char(text[begin - 1]) || joins(begin - 1))) --begin;
    const size_t hi = std::min(text.size(), end + max_widen);
    while (end < hi && (value_char(text[end]) || joins(end))) ++end;
    return {begin, end};
}

SpanKind classify_span(std::string_view a, std::string_view b) {
    const std::string sa(a), sb(b);
    if (std::regex_search(sa, uuid_re()) || std::regex_search(sb, uuid_re())) return SpanKind::Id;
    if (is_timestamp(sa) || is_timestamp(sb)) return SpanKind::Timestamp;
    if (is_id(sa) || is_id(sb)) return SpanKind::Id;
    const bool na = a.empty() || is_number(a), nb = b.empty() || is_number(b);
    if (na && nb && (!a.empty() || !b.empty())) return SpanKind::Number;
    return SpanKind::Other;
}

}  // namespace fluoro::app
