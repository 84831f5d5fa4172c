// The HTTP/1.1 side of `fluoro serve`, written to hold under slow, idle and hostile clients
// (issue 38). One event thread (Boost.Asio) owns every socket, so a connection that trickles its
// headers costs a descriptor and a few KiB, never a thread; handlers that take long (a
// generation) run on threads of their own and write through an HttpExchange.
//
// What it promises (docs/SECURITY.md):
// - a deadline for a request's whole header block (counted from when the request is awaited: the
//   connection opened or the previous reply went out) and another for its whole body (from the
//   end of the headers); whole deadlines, not per read, so a client that sends a byte every
//   second is cut off all the same;
// - at most max_connections open at once; when full, a new connection evicts the one that has
//   waited longest for its headers (idle keep-alive or slow), and only when every connection is
//   busy with a complete request is the new one refused with an immediate 503;
// - bodies are counted after chunked decoding and refused with 413 beyond max_body (declared
//   length: before reading any of it; chunked: as soon as the count passes the limit); a gzip or
//   deflate body (Content-Encoding) is inflated under the same limit and refused with 413 at the
//   first byte past it (body_coding.h), so a bomb costs at most the limit; any other
//   Content-Encoding, and any transfer coding other than chunked, is refused with 415;
// - an early refusal (401, 404, 413, 415) is followed by a bounded lingering close, so a client
//   still sending its body reads the answer instead of a reset.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluoro::app {

struct HttpLimits {
    size_t max_body = size_t(1) << 20;  // bytes after chunked decoding
    size_t max_header = 16 << 10;       // bytes of request line + header fields
    int max_connections = 128;
    std::chrono::milliseconds header_timeout{10000};  // first byte of a request to its blank line
    std::chrono::milliseconds body_timeout{30000};    // end of the headers to the end of the body
    std::chrono::milliseconds write_timeout{30000};   // one write blocked on a client not reading
    std::chrono::milliseconds linger{1000};  // reading and dropping a refused body, at most
};

struct HttpRequest {
    std::string method, target, path;  // path: target without the query
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::string remote;  // the client's address
    int remote_port = 0;
    std::chrono::steady_clock::time_point start;  // when the request's first byte was awaited
    // The value of header `name` (case-insensitive), "" when absent.
    std::string header(std::string_view name) const;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One request and the reply to it. The event thread hands it to the handler; the reply may be
// written from any one thread. Off the event thread each write blocks until the bytes are with
// the kernel or the client is gone (returns false) — the back-pressure a generation needs.
class HttpExchange {
  public:
    virtual ~HttpExchange() = default;
    virtual const HttpRequest& request() const = 0;
    // The whole reply, once.
    virtual bool respond(int status, std::string_view content_type, std::string body,
                         const HttpHeaders& extra = {}) = 0;
    // A chunked reply: the head once, then chunks, then end_chunked().
    virtual bool begin_chunked(int status, std::string_view content_type,
                               const HttpHeaders& extra = {}) = 0;
    virtual bool write_chunk(std::string_view data) = 0;
    virtual bool end_chunked() = 0;
    // The connection broke (reset, failed write, deadline) or the server is stopping.
    virtual bool gone() const = 0;
    // The client closed its sending side. A half-close (`shutdown(SHUT_WR)`) and a full close
    // look alike until something is written: a closed peer then answers with a reset.
    virtual bool peer_eof() const = 0;
    // Set by the handler; given to HttpListener::Hooks::finished with the final status.
    std::shared_ptr<void> note;
};

struct HttpListenerCounters {
    int64_t accepted = 0;
    int64_t refused = 0;          // connections answered 503 because all were busy
    int64_t evicted = 0;          // connections closed to make room (slow or idle headers)
    int64_t header_timeouts = 0;  // requests whose headers missed the deadline
    int64_t body_timeouts = 0;    // ... whose body missed it
    int64_t too_large = 0;        // bodies refused with 413
    int64_t bad_encoding = 0;     // bodies refused with 415
    int64_t max_body_held = 0;    // most body bytes held for one request so far
    int open = 0;                 // connections open now
};

class HttpListener {
  public:
    struct Hooks {
        // Once the headers are in, before any body byte is read (event thread). A reply returned
        // here (status, body) is sent with Connection: close and the body is never read: auth,
        // unknown routes.
        std::function<std::optional<std::pair<int, std::string>>(const HttpRequest&)> screen;
        // A complete request (event thread). The handler replies through the exchange now or
        // later from another thread; it must not block.
        std::function<void(std::shared_ptr<HttpExchange>)> handle;
        // The body of an error the listener answers itself (408, 413, 415, 503, 400).
        std::function<std::string(int status, std::string_view message)> error_body;
        // After the last byte of a reply was written or the connection failed (event thread);
        // exchange.note is what the handler left there.
        std::function<void(const HttpExchange&, int status)> finished;
    };

    HttpListener(HttpLimits limits, Hooks hooks);
    ~HttpListener();  // stop()
    HttpListener(const HttpListener&) = delete;
    HttpListener& operator=(const HttpListener&) = delete;

    // Binds host:port (0: any free port) without SO_REUSEPORT and starts the event thread;
    // returns the bound port. Throws fluoro::Error when it cannot.
    int start(const std::string& host, int port);
    // Closes the listening socket and every connection (their exchanges turn gone()). The event
    // thread keeps running until join().
    void close_all();
    // Ends the event thread. Call after the handlers' threads are done with their exchanges.
    void join();
    void stop() {
        close_all();
        join();
    }
    HttpListenerCounters counters() const;

    struct Impl;  // opaque: the connections in http_listener.cpp reach it

  private:
    std::shared_ptr<Impl> impl_;
};

// "OK", "Not Found", ... for a status code.
std::string_view http_reason(int status);

}  // namespace fluoro::app
