// Who may talk to the server: the API key (read from a file or the environment rather than the
// command line, where `ps` shows it; compared in constant time) and the bind address (a public one
// needs a key unless the operator says otherwise).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace fluoro::app {

// True when a equals b, in a time that depends on b's length only (b: the secret).
bool constant_time_equal(std::string_view a, std::string_view b);

// Whether an "Authorization" header value carries `key` as "Bearer KEY" (the scheme's case is
// ignored, as RFC 9110 says). Compared in constant time.
bool bearer_matches(std::string_view authorization, std::string_view key);

// 127.0.0.0/8, ::1, ::ffff:127.x.x.x and "localhost".
bool is_loopback_host(std::string_view host);

// Throws fluoro::Error when `host` is not a loopback address, no key is set and
// insecure_public is false: anyone who can reach the port could then use the engine.
void check_bind(std::string_view host, bool has_key, bool insecure_public);

// The key in `file`: its first line, surrounding whitespace dropped. Throws fluoro::Error naming
// the file when it cannot be read or holds no key.
std::string read_api_key_file(const std::filesystem::path& file);

}  // namespace fluoro::app
