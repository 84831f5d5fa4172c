// Boost.Beast's parser (limits on header and body size, chunked decoding counted against the
// body limit) over Boost.Asio sockets, all on one event thread; deadlines are plain timers that
// close the socket, so they hold however slowly the bytes come.
#include "server/http_listener.h"

#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <deque>
#include <future>
#include <list>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "server/body_coding.h"

namespace fluoro::app {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view sv(beast::string_view s) {
    return {s.data(), s.size()};
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::string head(int status, std::string_view content_type, const HttpHeaders& extra, bool close,
                 std::optional<size_t> length) {
    std::string h = "HTTP/1.1 ";
    h += std::to_string(status);
    h += ' ';
    h += http_reason(status);
    h += "\r\n";
    if (!content_type.empty()) {
        h += "Content-Type: ";
        h += content_type;
        h += "\r\n";
    }
    for (const auto& [k, v] : extra) {
        h += k;
        h += ": ";
        h += v;
        h += "\r\n";
    }
    if (length) {
        h += "Content-Length: ";
        h += std::to_string(*length);
        h += "\r\n";
    } else {
        h += "Transfer-Encoding: chunked\r\n";
    }
    h += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
    return h;
}

void raise_to(std::atomic<int64_t>& a, int64_t v) {
    int64_t seen = a.load();
    while (v > seen && !a.compare_exchange_weak(seen, v)) {
    }
}

}  // namespace

std::string_view http_reason(int status) {
    switch (status) {
        case 100:
            return "Continue";
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 404:
            return "Not Found";
        case 408:
            return "Request Timeout";
        case 413:
            return "Payload Too Large";
        case 415:
            return "Unsupported Media Type";
        case 429:
            return "Too Many Requests";
        case 431:
            return "Request Header Fields Too Large";
        case 499:
            return "Client Closed Request";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        default:
            return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Server Error";
    }
}

std::string HttpRequest::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (iequals(k, name)) return v;
    return {};
}

struct Connection;

struct HttpListener::Impl {
    HttpLimits limits;
    Hooks hooks;
    asio::io_context ioc;
    asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
    tcp::acceptor acceptor{ioc};
    asio::steady_timer accept_retry{ioc};
    std::thread thread;
    std::list<std::shared_ptr<Connection>> conns;  // event thread only
    bool closing = false;                          // event thread only
    std::atomic<bool> joined{false};
    std::atomic<int64_t> accepted{0}, refused{0}, evicted{0}, header_timeouts{0}, body_timeouts{0},
        too_large{0}, bad_encoding{0}, max_body_held{0};
    std::atomic<int> open{0};

    Impl(HttpLimits l, Hooks h) : limits(l), hooks(std::move(h)) {}
    bool on_event_thread() { return ioc.get_executor().running_in_this_thread(); }
    void accept();
    void on_accept(tcp::socket sock);
    // Runs f on the event thread and waits for it (at once when already there).
    void run_there(const std::function<void()>& f) {
        if (on_event_thread() || joined.load()) return f();
        std::promise<void> done;
        asio::post(ioc, [&] {
            f();
            done.set_value();
        });
        done.get_future().wait();
    }
};

class Exchange;

// One client connection: read a request (header deadline, then body deadline), hand it over,
// watch the socket while the reply is made, write the reply, then the next request or a close.
struct Connection : std::enable_shared_from_this<Connection> {
    enum class Phase { header, body, handling, lingering, closed };

    HttpListener::Impl& impl;
    tcp::socket sock;
    beast::flat_buffer buf;
    std::optional<http::request_parser<http::string_body>> parser;
    asio::steady_timer deadline, write_deadline;
    Phase phase = Phase::header;
    BodyCoding coding = BodyCoding::identity;  // the current request's Content-Encoding
    Clock::time_point since = Clock::now();    // when the current phase began
    std::list<std::shared_ptr<Connection>>::iterator registry_pos;
    bool reading = false;
    std::string remote;
    int remote_port = 0;
    std::atomic<bool> gone{false}, eof{false};

    struct Out {
        std::string bytes;
        std::function<void(bool)> done;
    };
    std::deque<Out> out;
    bool writing = false;

    Connection(HttpListener::Impl& i, tcp::socket s)
        : impl(i), sock(std::move(s)), deadline(i.ioc), write_deadline(i.ioc) {
        boost::system::error_code ec;
        const auto ep = sock.remote_endpoint(ec);
        if (!ec) {
            remote = ep.address().to_string();
            remote_port = ep.port();
        }
    }

    void start() { await_request(); }
    void await_request();
    void read_header();
    void on_header(beast::error_code ec);
    void read_body();
    void on_body(beast::error_code ec);
    void dispatch();
    void watch();
    void on_watch(beast::error_code ec, size_t n);
    HttpRequest request_so_far() const;
    void refuse(int status, std::string_view message);
    void enqueue(std::string bytes, std::function<void(bool)> done);
    void write_next();
    void reply_done(const std::shared_ptr<Exchange>& ex, bool close_after);
    void linger();
    void close();
    void arm(std::chrono::milliseconds d, void (Connection::*on_expiry)());
    void header_expired();
    void body_expired();
    void note_body_held() {
        if (parser) raise_to(impl.max_body_held, int64_t(parser->get().body().size()));
    }
};

class Exchange : public HttpExchange, public std::enable_shared_from_this<Exchange> {
  public:
    Exchange(std::shared_ptr<Connection> c, HttpRequest r, bool keep_alive)
        : conn_(std::move(c)), req_(std::move(r)), keep_alive_(keep_alive) {}
    const HttpRequest& request() const override { return req_; }
    bool gone() const override { return conn_->gone.load(); }
    bool peer_eof() const override { return conn_->eof.load(); }

    bool respond(int status, std::string_view content_type, std::string body,
                 const HttpHeaders& extra) override {
        status_ = status;
        std::string bytes = head(status, content_type, extra, close_after(), body.size());
        bytes += body;
        return write(std::move(bytes), true);
    }
    bool begin_chunked(int status, std::string_view content_type,
                       const HttpHeaders& extra) override {
        status_ = status;
        return write(head(status, content_type, extra, close_after(), std::nullopt), false);
    }
    bool write_chunk(std::string_view data) override {
        if (data.empty()) return !gone();  // an empty chunk would end the body
        char size[20];
        std::snprintf(size, sizeof size, "%zx\r\n", data.size());
        std::string bytes = size;
        bytes.append(data);
        bytes += "\r\n";
        return write(std::move(bytes), false);
    }
    bool end_chunked() override { return write("0\r\n\r\n", true); }

    int status() const { return status_; }

  private:
    // After the reply: keep the connection for the next request only when the client asked for
    // that and has not closed its side.
    bool close_after() {
        if (!close_) close_ = !keep_alive_ || conn_->eof.load();
        return *close_;
    }
    bool write(std::string bytes, bool last);

    std::shared_ptr<Connection> conn_;
    HttpRequest req_;
    bool keep_alive_;
    std::optional<bool> close_;
    int status_ = 0;
};

bool Exchange::write(std::string bytes, bool last) {
    auto conn = conn_;
    const bool close = close_after();
    HttpListener::Impl& impl = conn->impl;
    const auto finish = [conn, self = shared_from_this(), last, close](bool ok) {
        if (last) conn->reply_done(self, close || !ok);
    };
    if (impl.on_event_thread()) {
        if (conn->phase == Connection::Phase::closed) {
            finish(false);
            return false;
        }
        conn->enqueue(std::move(bytes), finish);
        return !conn->gone.load();
    }
    if (impl.joined.load()) return false;
    auto ok = std::make_shared<std::promise<bool>>();
    auto fut = ok->get_future();
    asio::post(impl.ioc, [conn, ok, finish, b = std::move(bytes)]() mutable {
        if (conn->phase == Connection::Phase::closed) {
            finish(false);
            ok->set_value(false);
            return;
        }
        conn->enqueue(std::move(b), [ok, finish](bool good) {
            finish(good);
            ok->set_value(good);
        });
    });
    return fut.get();
}

void Connection::arm(std::chrono::milliseconds d, void (Connection::*on_expiry)()) {
    deadline.expires_after(d);
    deadline.async_wait([self = shared_from_this(), on_expiry](beast::error_code ec) {
        if (!ec) ((*self).*on_expiry)();
    });
}

void Connection::await_request() {
    phase = Phase::header;
    since = Clock::now();
    parser.emplace();
    parser->header_limit(std::uint32_t(impl.limits.max_header));
    parser->body_limit(impl.limits.max_body);
    arm(impl.limits.header_timeout, &Connection::header_expired);
    if (!reading) return read_header();
    // The watch read picks the next request up when its bytes come; pipelined bytes already
    // here: cancel it so that they are parsed now.
    if (buf.size() > 0) {
        boost::system::error_code ignored;
        sock.cancel(ignored);
    }
}

void Connection::header_expired() {
    if (phase != Phase::header) return;
    impl.header_timeouts.fetch_add(1);
    close();  // nothing is owed to a client that never finished asking
}

void Connection::body_expired() {
    if (phase != Phase::body) return;
    impl.body_timeouts.fetch_add(1);
    note_body_held();
    // The read in flight is cancelled by the close; a 408 goes out first, best effort.
    std::string body = impl.hooks.error_body
                           ? impl.hooks.error_body(408, "the request body did not arrive in time")
                           : std::string();
    const std::string bytes = head(408, "application/json", {}, true, body.size()) + body;
    ::send(sock.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    close();
}

void Connection::read_header() {
    reading = true;
    http::async_read_header(sock, buf, *parser,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                                self->reading = false;
                                self->on_header(ec);
                            });
}

HttpRequest Connection::request_so_far() const {
    HttpRequest r;
    r.remote = remote;
    r.remote_port = remote_port;
    r.start = since;
    if (!parser) return r;
    const auto& m = parser->get();
    r.method = std::string(m.method_string());
    r.target = std::string(m.target());
    r.path = r.target.substr(0, r.target.find('?'));
    for (const auto& f : m)
        r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    return r;
}

void Connection::on_header(beast::error_code ec) {
    if (phase == Phase::closed) return;
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return close();
    if (ec == http::error::header_limit)
        return refuse(431, "the request's header fields are too large");
    if (ec == http::error::body_limit) {  // a declared Content-Length over the limit
        impl.too_large.fetch_add(1);
        return refuse(413, "the request body is too large");
    }
    if (ec) {  // a parse error gets an answer; a broken or cancelled socket does not
        if (ec.category() != http::make_error_code(http::error::bad_method).category())
            return close();
        return refuse(400, "malformed HTTP request");
    }
    const auto& m = parser->get();
    const auto enc = m.find(http::field::content_encoding);
    coding = BodyCoding::identity;
    if (enc != m.end()) {
        const auto c = parse_body_coding(sv(enc->value()));
        if (!c) {
            impl.bad_encoding.fetch_add(1);
            return refuse(415,
                          "only gzip and deflate request bodies are accepted (Content-Encoding)");
        }
        coding = *c;
    }
    const auto te = m.find(http::field::transfer_encoding);
    if (te != m.end() && !iequals(trim(sv(te->value())), "chunked")) {
        impl.bad_encoding.fetch_add(1);
        return refuse(415, "only the chunked transfer coding is accepted (Transfer-Encoding)");
    }
    if (const auto len = parser->content_length(); len && *len > impl.limits.max_body) {
        impl.too_large.fetch_add(1);
        return refuse(413, "the request body is too large");
    }
    if (impl.hooks.screen) {
        if (auto early = impl.hooks.screen(request_so_far())) {
            auto ex = std::make_shared<Exchange>(shared_from_this(), request_so_far(), false);
            ex->respond(early->first, "application/json", std::move(early->second), {});
            return;
        }
    }
    phase = Phase::body;
    since = Clock::now();
    arm(impl.limits.body_timeout, &Connection::body_expired);
    const auto expect = m.find(http::field::expect);
    if (!parser->is_done() && expect != m.end() &&
        iequals(trim(sv(expect->value())), "100-continue")) {
        auto self = shared_from_this();
        enqueue("HTTP/1.1 100 Continue\r\n\r\n", [self](bool ok) {
            if (ok && self->phase == Phase::body) self->read_body();
        });
        return;
    }
    read_body();
}

void Connection::read_body() {
    if (parser->is_done()) return on_body({});
    reading = true;
    http::async_read(sock, buf, *parser, [self = shared_from_this()](beast::error_code ec, size_t) {
        self->reading = false;
        self->on_body(ec);
    });
}

void Connection::on_body(beast::error_code ec) {
    if (phase == Phase::closed) return;
    note_body_held();
    if (ec == http::error::body_limit) {
        impl.too_large.fetch_add(1);
        return refuse(413, "the request body is too large");
    }
    if (ec) {
        if (ec == asio::error::operation_aborted || ec == http::error::end_of_stream ||
            ec == http::error::partial_message || ec == asio::error::eof)
            return close();
        return refuse(400, "malformed request body");
    }
    dispatch();
}

void Connection::dispatch() {
    deadline.cancel();
    phase = Phase::handling;
    since = Clock::now();
    HttpRequest r = request_so_far();
    const bool keep_alive = parser->get().keep_alive();
    r.body = std::move(parser->get().body());
    parser.reset();
    if (coding != BodyCoding::identity) {
        // Inflated here, under the same limit: a bomb stops at the first byte past it.
        InflatedBody in = inflate_body(r.body, coding, impl.limits.max_body);
        r.body.clear();
        if (in.status == InflatedBody::Status::too_large) {
            impl.too_large.fetch_add(1);
            return refuse(413, "the request body is too large once decompressed (more than " +
                                   std::to_string(impl.limits.max_body) + " bytes)");
        }
        if (in.status == InflatedBody::Status::corrupt)
            return refuse(400, "the compressed request body is invalid: " + in.detail);
        raise_to(impl.max_body_held, int64_t(in.body.size()));
        r.body = std::move(in.body);
    }
    auto ex = std::make_shared<Exchange>(shared_from_this(), std::move(r), keep_alive);
    watch();
    if (impl.hooks.handle) {
        impl.hooks.handle(ex);
    } else {
        ex->respond(404, "text/plain", "no handler", {});
    }
}

// While a reply is being made (or after it, on a kept-alive connection): tells a client that
// went away (reset) or closed its side (end of file), and keeps any pipelined bytes.
void Connection::watch() {
    if (reading || phase == Phase::closed) return;
    reading = true;
    sock.async_read_some(buf.prepare(4096),
                         [self = shared_from_this()](beast::error_code ec, size_t n) {
                             self->reading = false;
                             self->on_watch(ec, n);
                         });
}

void Connection::on_watch(beast::error_code ec, size_t n) {
    if (phase == Phase::closed) return;
    if (ec == asio::error::eof) {
        eof = true;
        if (phase == Phase::handling) return;  // the reply is still owed: a half-close
        return close();
    }
    if (ec == asio::error::operation_aborted && phase == Phase::header) return read_header();
    if (ec) {
        if (ec != asio::error::operation_aborted) gone = true;
        return close();
    }
    buf.commit(n);
    if (phase == Phase::lingering) {
        buf.consume(buf.size());  // a refused body: dropped as it comes
        return watch();
    }
    if (phase == Phase::header) return read_header();
    if (buf.size() < impl.limits.max_header) watch();
}

void Connection::refuse(int status, std::string_view message) {
    deadline.cancel();
    std::string body =
        impl.hooks.error_body ? impl.hooks.error_body(status, message) : std::string(message);
    auto ex = std::make_shared<Exchange>(shared_from_this(), request_so_far(), false);
    ex->respond(status, "application/json", std::move(body), {});
}

void Connection::enqueue(std::string bytes, std::function<void(bool)> done) {
    out.push_back({std::move(bytes), std::move(done)});
    if (!writing) write_next();
}

void Connection::write_next() {
    if (out.empty() || phase == Phase::closed) return;
    writing = true;
    write_deadline.expires_after(impl.limits.write_timeout);
    write_deadline.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec && self->writing) {
            self->gone = true;  // a client that stopped reading
            self->close();
        }
    });
    asio::async_write(sock, asio::buffer(out.front().bytes),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                          self->writing = false;
                          self->write_deadline.cancel();
                          if (self->out.empty()) return;  // closed meanwhile
                          Out o = std::move(self->out.front());
                          self->out.pop_front();
                          if (ec) {
                              self->gone = true;
                              self->close();
                              return o.done(false);
                          }
                          o.done(true);
                          self->write_next();
                      });
}

void Connection::reply_done(const std::shared_ptr<Exchange>& ex, bool close_after) {
    if (impl.hooks.finished) impl.hooks.finished(*ex, ex->status());
    if (phase == Phase::closed) return;
    if (close_after) return linger();
    await_request();
}

// After a reply with Connection: close: stop sending, then read and drop what the client still
// sends for a bounded time, so that its unread data does not turn the close into a reset that
// would destroy the reply before the client read it.
void Connection::linger() {
    phase = Phase::lingering;
    since = Clock::now();
    buf.consume(buf.size());
    boost::system::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_send, ignored);
    arm(impl.limits.linger, &Connection::close);
    if (eof.load()) return close();
    watch();
}

void Connection::close() {
    if (phase == Phase::closed) return;
    phase = Phase::closed;
    gone = true;
    boost::system::error_code ignored;
    deadline.cancel();
    write_deadline.cancel();
    sock.shutdown(tcp::socket::shutdown_both, ignored);
    sock.close(ignored);
    // Writes not yet started fail now (their writers wake); the one in flight fails by itself.
    std::deque<Out> pending;
    pending.swap(out);
    if (writing && !pending.empty()) {
        out.push_back(std::move(pending.front()));
        pending.pop_front();
    }
    for (auto& o : pending) o.done(false);
    impl.conns.erase(registry_pos);
    impl.open.fetch_sub(1);
}

void HttpListener::Impl::accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket sock) {
        if (closing) return;
        if (ec) {
            // Out of descriptors and the like: try again shortly rather than spin.
            accept_retry.expires_after(std::chrono::milliseconds(50));
            accept_retry.async_wait([this](beast::error_code e) {
                if (!e && !closing) accept();
            });
            return;
        }
        on_accept(std::move(sock));
        accept();
    });
}

void HttpListener::Impl::on_accept(tcp::socket sock) {
    accepted.fetch_add(1);
    if (int(conns.size()) >= limits.max_connections) {
        // Make room from the connections that have not sent a whole request: the one waiting
        // longest is the likeliest to be idle or slow on purpose.
        Connection* victim = nullptr;
        for (const auto& c : conns)
            if ((c->phase == Connection::Phase::header ||
                 c->phase == Connection::Phase::lingering) &&
                (!victim || c->since < victim->since))
                victim = c.get();
        if (victim) {
            evicted.fetch_add(1);
            victim->close();
        } else {
            refused.fetch_add(1);
            const std::string body =
                hooks.error_body ? hooks.error_body(503, "the server has too many connections")
                                 : std::string();
            const std::string bytes = head(503, "application/json", {}, true, body.size()) + body;
            ::send(sock.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            boost::system::error_code ignored;
            sock.shutdown(tcp::socket::shutdown_send, ignored);
            sock.close(ignored);
            return;
        }
    }
    boost::system::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);  // SSE chunks go out as they come
    auto c = std::make_shared<Connection>(*this, std::move(sock));
    conns.push_front(c);
    c->registry_pos = conns.begin();
    open.fetch_add(1);
    c->start();
}

HttpListener::HttpListener(HttpLimits limits, Hooks hooks)
    : impl_(std::make_shared<Impl>(limits, std::move(hooks))) {}

HttpListener::~HttpListener() {
    stop();
}

int HttpListener::start(const std::string& host, int port) {
    const auto fail = [&](const std::string& why) {
        std::string msg = "cannot listen on ";
        msg += host;
        msg += ':';
        msg += std::to_string(port);
        if (!why.empty()) msg += ": " + why;
        throw Error(msg);
    };
    if (port < 0 || port > 65535) fail("the port must be 0 (any free one) to 65535");
    if (impl_->thread.joinable()) fail("already listening");
    boost::system::error_code ec;
    tcp::resolver resolver(impl_->ioc);
    const auto endpoints = resolver.resolve(
        host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || endpoints.empty()) fail(ec ? ec.message() : "no such address");
    std::string why;
    for (const auto& e : endpoints) {
        impl_->acceptor.close(ec);
        impl_->acceptor.open(e.endpoint().protocol(), ec);
        if (ec) continue;
        // Restart while old connections linger, but never SO_REUSEPORT: a second server on the
        // same port must fail, not split the clients with this one.
        impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
        impl_->acceptor.bind(e.endpoint(), ec);
        if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (!ec) break;
        why = ec.message();
    }
    if (ec || !impl_->acceptor.is_open()) {
        impl_->acceptor.close(ec);
        fail(why);
    }
    const int bound = impl_->acceptor.local_endpoint().port();
    impl_->accept();
    impl_->thread = std::thread([impl = impl_] { impl->ioc.run(); });
    return bound;
}

void HttpListener::close_all() {
    if (!impl_->thread.joinable() || impl_->joined.load()) return;
    impl_->run_there([impl = impl_.get()] {
        impl->closing = true;
        boost::system::error_code ignored;
        impl->acceptor.close(ignored);
        impl->accept_retry.cancel();
        while (!impl->conns.empty()) {
            auto c = impl->conns.front();
            c->gone = true;
            c->close();
        }
    });
}

void HttpListener::join() {
    if (!impl_->thread.joinable()) return;
    impl_->joined.store(true);
    impl_->work.reset();
    // After close_all() every socket and timer is closed, so the handlers still queued (a write
    // in flight finishing with an error, which hands its exchange back) run at once and the
    // event thread ends by itself. Stopping it first would drop them with a connection whose
    // write queue still holds that exchange, which holds the connection: a leak. Stopped
    // anyway after a second, so a handler that never finishes cannot hang the shutdown.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!impl_->ioc.stopped() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    impl_->ioc.stop();
    impl_->thread.join();
}

HttpListenerCounters HttpListener::counters() const {
    HttpListenerCounters c;
    c.accepted = impl_->accepted.load();
    c.refused = impl_->refused.load();
    c.evicted = impl_->evicted.load();
    c.header_timeouts = impl_->header_timeouts.load();
    c.body_timeouts = impl_->body_timeouts.load();
    c.too_large = impl_->too_large.load();
    c.bad_encoding = impl_->bad_encoding.load();
    c.max_body_held = impl_->max_body_held.load();
    c.open = impl_->open.load();
    return c;
}

}  // namespace fluoro::app
