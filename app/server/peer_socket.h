// Whether the client of a request is still there, for replies written only at the end (a
// non-streamed completion). cpp-httplib 0.11 (Debian 12's) gives a handler neither its socket nor
// a way to ask, so the connection's socket is found among the process's open descriptors by its
// two ends (getsockname / getpeername), and then polled: a peer that closed its side shows as
// end-of-file or a hang-up. Linux only (/proc/self/fd); elsewhere nothing is found and generations
// run to their end as before.
#pragma once

#include <string>

namespace fluoro::app {

// The descriptor whose local port is local_port and whose peer is remote_addr:remote_port, or -1.
// Valid while the request's handler runs (the server holds the connection open until then).
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);

// True when the peer of connected socket fd has closed it or the connection broke; reads
// nothing (pending request bytes stay for the server).
bool peer_closed(int fd);

}  // namespace fluoro::app
