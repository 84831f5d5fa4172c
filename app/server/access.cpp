#include "server/access.h"

#include <arpa/inet.h>

#include <cstring>
#include <fstream>

#include "core/error.h"

namespace fluoro::app {

bool constant_time_equal(std::string_view a, std::string_view b) {
    // Every byte of b is visited whatever a holds; a's bytes past b's length change only `diff`.
    volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < b.size(); ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        diff = static_cast<unsigned char>(diff | (x ^ static_cast<unsigned char>(b[i])));
    }
    return diff == 0;
}

bool bearer_matches(std::string_view authorization, std::string_view key) {
    constexpr std::string_view scheme = "bearer ";
    if (key.empty() || authorization.size() < scheme.size()) return false;
    for (size_t i = 0; i < scheme.size(); ++i) {
        const char c = authorization[i];
        if ((c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c) != scheme[i]) return false;
    }
    std::string_view token = authorization.substr(scheme.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    return constant_time_equal(token, key);
}

bool is_loopback_host(std::string_view host) {
    if (host == "localhost") return true;
    std::string h(host);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    in_addr v4{};
    if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
        return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

void check_bind(std::string_view host, bool has_key, bool insecure_public) {
    if (has_key || insecure_public || is_loopback_host(host)) return;
    std::string msg = "refusing to listen on ";
    msg += host;
    msg +=
        " without an API key: anyone who reaches it could use the engine. Set one with "
        "--api-key-file FILE or FLUORO_API_KEY, or pass --insecure-public";
    throw Error(msg);
}

std::string read_api_key_file(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw Error("cannot read the API key file " + file.string());
    std::string line;
    std::getline(in, line);
    const auto first = line.find_first_not_of(" \t\r\n");
    const auto last = line.find_last_not_of(" \t\r\n");
    if (first == std::string::npos)
        throw Error("the API key file " + file.string() + " holds no key on its first line");
    return line.substr(first, last - first + 1);
}

}  // namespace fluoro::app
