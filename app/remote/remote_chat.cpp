#include "remote/remote_chat.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "core/error.h"

namespace fluoro::app {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

// The message of an error object: OpenAI's {"error": {"message"}} or {"error": "..."}, vLLM's
// {"message"}; "" when it holds none.
std::string message_in(const json& j) {
    if (!j.is_object()) return {};
    if (auto e = j.find("error"); e != j.end()) {
        if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
            return (*e)["message"].get<std::string>();
        if (e->is_string()) return e->get<std::string>();
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
    return {};
}

// The message of an error body, else the body itself (cut).
std::string error_message(const std::string& body) {
    if (std::string m = message_in(json::parse(body, nullptr, false)); !m.empty()) return m;
    return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

// One HTTP/1.1 connection to the endpoint, plain or TLS. Every operation async with its own
// deadline (tcp_stream's timeouts apply to those only), run to completion before the next.
template <bool Tls>
struct Link {
    using Stream = std::conditional_t<Tls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;
    asio::io_context ioc;
    asio::ssl::context tls{asio::ssl::context::tls_client};
    Stream stream = make_stream();
    beast::error_code ec;
    std::chrono::seconds timeout;
    std::string where;
    const std::atomic<bool>* cancel = nullptr;
    bool cancelled = false;

    Stream make_stream() {
        if constexpr (Tls)
            return Stream(ioc, tls);
        else
            return Stream(ioc);
    }
    beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream); }

    // c: the caller's cancel flag (null: none); set, the connection is given up and `cancelled`
    // says so (no exception).
    Link(const RemoteEndpoint& e, std::chrono::seconds t, const std::atomic<bool>* c = nullptr)
        : timeout(t), where(e.url()), cancel(c) {
        if constexpr (Tls) trust(e);
        asio::ip::tcp::resolver resolver(ioc);
        const auto found = resolver.resolve(e.host, std::to_string(e.port), ec);
        if (ec) throw fail("cannot resolve " + e.host);
        wait([&](auto h) { tcp().async_connect(found, h); });
        if (cancelled) return;
        if (ec) throw fail("cannot connect");
        if constexpr (Tls) {
            wait([&](auto h) { stream.async_handshake(asio::ssl::stream_base::client, h); });
            if (cancelled) return;
            if (ec) throw fail("TLS handshake failed");
        }
    }
    // The certificates trusted (the endpoint's CA file, else the system's) and the name the
    // server's certificate must carry: the host, or the IP address it is.
    void trust(const RemoteEndpoint& e) {
        try {
            if (e.ca_file.empty())
                tls.set_default_verify_paths();
            else
                tls.load_verify_file(e.ca_file);
        } catch (const std::exception& x) {
            throw Error("cannot read the CA certificates " +
                        (e.ca_file.empty() ? std::string("of the system") : "in " + e.ca_file) +
                        " (" + where + "): " + x.what());
        }
        // On the stream: its SSL object took the context's settings when it was made.
        stream.set_verify_mode(asio::ssl::verify_peer);
        SSL* ssl = stream.native_handle();
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        beast::error_code ip_ec;
        (void)asio::ip::make_address(e.host, ip_ec);
        if (!ip_ec) {
            X509_VERIFY_PARAM_set1_ip_asc(param, e.host.c_str());
        } else {
            X509_VERIFY_PARAM_set1_host(param, e.host.c_str(), 0);
            SSL_set_tlsext_host_name(ssl, e.host.c_str());  // SNI
        }
    }
    ~Link() {
        beast::error_code ignored;
        tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    }
    template <class Start>
    void wait(Start&& start) {
        ec = {};
        tcp().expires_after(timeout);
        ioc.restart();
        start([&](beast::error_code e, auto&&...) { ec = e; });
        if (!cancel) {
            ioc.run();
            return;
        }
        // Polls the flag while the operation waits, and after it (a stream whose chunks come
        // faster than the poll completes every read first): closing the socket ends the
        // request; a server that watches its clients stops generating.
        do {
            ioc.run_for(std::chrono::milliseconds(50));
            if (!cancelled && cancel->load()) {
                cancelled = true;
                beast::error_code ignored;
                tcp().socket().close(ignored);
            }
        } while (!ioc.stopped());
    }
    Error fail(const std::string& what) const {
        return Error(what + " (" + where + "): " + ec.message());
    }
    template <class Body>
    http::request<Body> request(http::verb verb, const RemoteEndpoint& e, std::string target,
                                const std::string& api_key) const {
        http::request<Body> r{verb, target, 11};
        r.set(http::field::host, e.host + ":" + std::to_string(e.port));
        r.set(http::field::user_agent, "fluoroscope");
        if (!api_key.empty()) r.set(http::field::authorization, "Bearer " + api_key);
        return r;
    }
};

}  // namespace

namespace {

template <bool Tls>
std::string fetch_text_on(const RemoteEndpoint& endpoint, const std::string& path,
                          const std::string& api_key, std::chrono::seconds timeout,
                          const std::atomic<bool>* cancel) {
    Link<Tls> link(endpoint, timeout, cancel);
    const auto stopped = [&] { return Error("GET " + path + " (" + link.where + ") cancelled"); };
    if (link.cancelled) throw stopped();
    auto r = link.template request<http::empty_body>(http::verb::get, endpoint, path, api_key);
    link.wait([&](auto h) { http::async_write(link.stream, r, h); });
    if (link.cancelled) throw stopped();
    if (link.ec) throw link.fail("cannot send the request");
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);  // a metrics page is kilobytes
    link.wait([&](auto h) { http::async_read(link.stream, buf, parser, h); });
    if (link.cancelled) throw stopped();
    if (link.ec) throw link.fail("no response to GET " + path);
    const int status = parser.get().result_int();
    if (status != 200)
        throw Error("the server answered " + std::to_string(status) + " to GET " + path + " (" +
                    link.where + "): " + error_message(parser.get().body()));
    return parser.get().body();
}

}  // namespace

std::string fetch_text(const RemoteEndpoint& endpoint, const std::string& path,
                       const std::string& api_key, std::chrono::seconds timeout,
                       const std::atomic<bool>* cancel) {
    return endpoint.tls ? fetch_text_on<true>(endpoint, path, api_key, timeout, cancel)
                        : fetch_text_on<false>(endpoint, path, api_key, timeout, cancel);
}

std::vector<std::string> list_models(const RemoteEndpoint& endpoint, const std::string& api_key,
                                     std::chrono::seconds timeout,
                                     const std::atomic<bool>* cancel) {
    const std::string path = endpoint.base_path + "/models";
    const json j =
        json::parse(fetch_text(endpoint, path, api_key, timeout, cancel), nullptr, false);
    const auto data = j.is_object() ? j.find("data") : j.end();
    if (data == j.end() || !data->is_array())
        throw Error("GET " + path + " (" + endpoint.url() +
                    ") did not answer a model list ({\"data\": [...]})");
    std::vector<std::string> ids;
    for (const json& m : *data)
        if (m.is_object() && m.contains("id") && m["id"].is_string())
            ids.push_back(m["id"].get<std::string>());
    return ids;
}

std::string RemoteEndpoint::url() const {
    return (tls ? "https://" : "http://") + host + ":" + std::to_string(port) + base_path;
}

RemoteEndpoint parse_endpoint(std::string_view url) {
    const auto bad = [&](const std::string& why) {
        return Error("remote URL '" + std::string(url) + "': " + why);
    };
    std::string_view rest = url;
    bool tls = false;
    if (const size_t s = rest.find("://"); s != std::string_view::npos) {
        const std::string_view scheme = rest.substr(0, s);
        if (scheme == "https")
            tls = true;
        else if (scheme != "http")
            throw bad("the scheme must be http or https");
        rest.remove_prefix(s + 3);
    }
    RemoteEndpoint e;
    e.tls = tls;
    e.port = tls ? 443 : 80;
    const size_t slash = rest.find('/');
    std::string_view hostport = rest.substr(0, slash);
    e.base_path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
    while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
    if (e.base_path.empty()) e.base_path = "/v1";
    if (const size_t colon = hostport.rfind(':'); colon != std::string_view::npos) {
        const std::string_view p = hostport.substr(colon + 1);
        int port = 0;
        const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
        if (ec != std::errc() || end != p.data() + p.size() || port < 1 || port > 65535)
            throw bad("the port must be 1..65535");
        e.port = port;
        hostport = hostport.substr(0, colon);
    }
    if (hostport.empty()) throw bad("no host");
    e.host = std::string(hostport);
    return e;
}

std::vector<double> RemoteResult::intervals_ms() const {
    std::vector<double> out;
    for (size_t i = 1; i < chunks.size(); ++i) out.push_back(chunks[i].t_ms - chunks[i - 1].t_ms);
    return out;
}

std::string remote_stats_line(const RemoteEndpoint& endpoint, const RemoteResult& r) {
    const auto ms = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.1f ms", v);
        return std::string(b);
    };
    std::string s = endpoint.url() + " " + (r.model.empty() ? "?" : r.model) + ": prompt ";
    s += r.prompt_tokens >= 0 ? std::to_string(r.prompt_tokens) : "?";
    if (r.cached_tokens >= 0) s += " (" + std::to_string(r.cached_tokens) + " cached)";
    s += ", generated " + (r.completion_tokens >= 0 ? std::to_string(r.completion_tokens) : "?");
    s += " | TTFT " + (r.ttft_ms >= 0 ? ms(r.ttft_ms) : std::string("-"));
    std::vector<double> iv = r.intervals_ms();
    if (!iv.empty()) {
        std::sort(iv.begin(), iv.end());
        const auto at = [&](double q) { return iv[size_t(q * double(iv.size() - 1) + 0.5)]; };
        s += " | " + std::to_string(r.chunks.size()) + " chunks, interval median " + ms(at(0.5)) +
             ", p90 " + ms(at(0.9)) + ", max " + ms(iv.back());
        const double span = r.chunks.back().t_ms - r.chunks.front().t_ms;
        const int64_t after_first =
            (r.completion_tokens > 0 ? r.completion_tokens : int64_t(r.chunks.size())) - 1;
        if (span > 0 && after_first > 0) {
            char b[48];
            std::snprintf(b, sizeof b, " | %.1f tok/s", 1000.0 * double(after_first) / span);
            s += b;
        }
    }
    s += " | finish " + (r.finish_reason.empty() ? std::string("-") : r.finish_reason);
    return s;
}

bool ChatStreamReader::feed(std::string_view bytes, double t_ms) {
    pending_.append(bytes);
    size_t start = 0;
    for (size_t nl; !done_ && (nl = pending_.find('\n', start)) != std::string::npos;
         start = nl + 1) {
        std::string_view l(pending_.data() + start, nl - start);
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        line(l, t_ms);
    }
    pending_.erase(0, start);
    return !done_;
}

void ChatStreamReader::line(std::string_view l, double t_ms) {
    if (l.rfind("data:", 0) != 0) return;  // blank separators, comments, event: lines
    l.remove_prefix(5);
    if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    if (l == "[DONE]") {
        done_ = true;
        return;
    }
    const json j = json::parse(l, nullptr, false);
    const auto quoted = [&] {
        return std::string(l.substr(0, 200)) + (l.size() > 200 ? "..." : "");
    };
    if (!j.is_object()) throw Error("the stream sent a data line that is not JSON: " + quoted());
    if (j.contains("error"))
        throw Error("the server reported an error: " +
                    (message_in(j).empty() ? quoted() : message_in(j)));
    if (auto m = j.find("model"); m != j.end() && m->is_string()) out_.model = *m;
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
        out_.prompt_tokens = u->value("prompt_tokens", int64_t(-1));
        out_.completion_tokens = u->value("completion_tokens", int64_t(-1));
        if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
            out_.cached_tokens = d->value("cached_tokens", int64_t(-1));
    }
    const auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array())
        throw Error("the stream sent a chunk without choices: " + quoted());
    for (const json& c : *choices) {
        if (!c.is_object() || c.value("index", 0) != 0) continue;
        if (auto f = c.find("finish_reason"); f != c.end() && f->is_string())
            out_.finish_reason = *f;
        RemoteChunk chunk;
        chunk.t_ms = t_ms;
        if (auto d = c.find("delta"); d != c.end() && d->is_object())
            if (auto t = d->find("content"); t != d->end() && t->is_string()) chunk.text = *t;
        if (auto lp = c.find("logprobs"); lp != c.end() && lp->is_object())
            if (auto content = lp->find("content"); content != lp->end() && content->is_array())
                chunk.logprobs = *content;
        if (chunk.text.empty() && chunk.logprobs.empty()) continue;
        if (out_.ttft_ms < 0) out_.ttft_ms = t_ms;
        out_.text += chunk.text;
        out_.chunks.push_back(std::move(chunk));
        if (on_chunk_) on_chunk_(out_.chunks.back());
    }
}

namespace {

template <bool Tls>
RemoteResult stream_chat_on(const RemoteEndpoint& endpoint, const RemoteRequest& req,
                            const json& body,
                            const std::function<void(const RemoteChunk&)>& on_chunk);

}  // namespace

RemoteResult stream_chat(const RemoteEndpoint& endpoint, const RemoteRequest& req,
                         const std::function<void(const RemoteChunk&)>& on_chunk) {
    json body{{"model", req.model},
              {"messages", json::array()},
              {"max_tokens", req.max_tokens},
              {"stream", true},
              {"stream_options", {{"include_usage", true}}}};
    for (const auto& [role, content] : req.messages)
        body["messages"].push_back({{"role", role}, {"content", content}});
    if (req.temperature) body["temperature"] = *req.temperature;
    if (req.top_p) body["top_p"] = *req.top_p;
    if (req.seed) body["seed"] = *req.seed;
    if (req.top_logprobs > 0) {
        body["logprobs"] = true;
        body["top_logprobs"] = req.top_logprobs;
    }
    return endpoint.tls ? stream_chat_on<true>(endpoint, req, body, on_chunk)
                        : stream_chat_on<false>(endpoint, req, body, on_chunk);
}

namespace {

template <bool Tls>
RemoteResult stream_chat_on(const RemoteEndpoint& endpoint, const RemoteRequest& req,
                            const json& body,
                            const std::function<void(const RemoteChunk&)>& on_chunk) {
    Link<Tls> link(endpoint, req.timeout, req.cancel);
    if (link.cancelled) {
        RemoteResult gone;
        gone.cancelled = true;
        gone.finish_reason = "cancelled";
        return gone;
    }
    auto r = link.template request<http::string_body>(
        http::verb::post, endpoint, endpoint.base_path + "/chat/completions", req.api_key);
    r.set(http::field::content_type, "application/json");
    r.set(http::field::accept, "text/event-stream");
    r.body() = body.dump();
    r.prepare_payload();
    const auto t0 = std::chrono::steady_clock::now();
    const auto since = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
            .count();
    };
    RemoteResult out;
    const auto stopped = [&] {
        out.cancelled = true;
        out.finish_reason = "cancelled";
        out.total_ms = since();
        return out;
    };
    link.wait([&](auto h) { http::async_write(link.stream, r, h); });
    if (link.cancelled) return stopped();
    if (link.ec) throw link.fail("cannot send the request");

    beast::flat_buffer buf;
    http::response_parser<http::buffer_body> parser;
    // A stream has no length limit. Not boost::none: Boost 1.74 compares a Content-Length
    // against the empty optional as "over the limit".
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    link.wait([&](auto h) { http::async_read_header(link.stream, buf, parser, h); });
    if (link.cancelled) return stopped();
    if (link.ec) throw link.fail("no response");
    const int status = parser.get().result_int();
    ChatStreamReader reader(out, on_chunk);
    std::string error_body;
    char piece[16384];
    while (!parser.is_done()) {
        parser.get().body().data = piece;
        parser.get().body().size = sizeof piece;
        link.wait([&](auto h) { http::async_read_some(link.stream, buf, parser, h); });
        if (link.ec == http::error::need_buffer) link.ec = {};
        if (link.cancelled) return stopped();
        if (link.ec) throw link.fail("the response broke off");
        const size_t n = sizeof piece - parser.get().body().size;
        if (status != 200) {
            error_body.append(piece, n);
        } else if (!reader.feed(std::string_view(piece, n), since())) {
            break;  // [DONE]
        }
    }
    out.total_ms = since();
    if (status != 200)
        throw Error("the server answered " + std::to_string(status) + " (" + link.where +
                    "): " + error_message(error_body));
    if (!reader.done() && out.finish_reason.empty())
        throw Error("the stream ended without a finish_reason or [DONE] (" + link.where + ")");
    return out;
}

}  // namespace

}  // namespace fluoro::app
