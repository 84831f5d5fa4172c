#include "server/peer_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace fluoro::app {

namespace {

// "127.0.0.1" / "::1" and the port of an address; false for other families.
bool describe(const sockaddr_storage& a, std::string& host, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
        if (!inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) return false;
        port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
        if (!inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf)) return false;
        port = ntohs(in6->sin6_port);
    } else {
        return false;
    }
    host = buf;
    return true;
}

}  // namespace

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
    if (remote_addr.empty() || remote_port <= 0 || local_port <= 0) return -1;
    std::error_code ec;
    std::filesystem::directory_iterator it("/proc/self/fd", ec);
    if (ec) return -1;
    for (const auto& entry : it) {
        char* end = nullptr;
        const std::string name = entry.path().filename().string();
        const long fd = std::strtol(name.c_str(), &end, 10);
        if (end == name.c_str() || *end != '\0' || fd < 0) continue;
        sockaddr_storage local{}, peer{};
        socklen_t n = sizeof local;
        if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &n) != 0) continue;
        std::string host;
        int port = 0;
        if (!describe(local, host, port) || port != local_port) continue;
        n = sizeof peer;
        if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &n) != 0) continue;
        if (describe(peer, host, port) && port == remote_port && host == remote_addr)
            return int(fd);
    }
    return -1;
}

bool peer_closed(int fd) {
    pollfd p{fd, short(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
    if (p.revents & POLLIN) {
        char c;
        // 0: orderly shutdown by the peer. Data (a pipelined request) means it is still there.
        return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    }
    return false;
}

}  // namespace fluoro::app
