#include "distributed/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "oxmera/core/error.h"

namespace ox::distributed::net {

namespace {

int millis_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return int(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30)));
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};

AddrInfo resolve(const std::string& host, int port, bool passive, const char* what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  AddrInfo info;
  const std::string service = std::to_string(port);
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &info.list);
  OX_CHECK(rc == 0, Distributed, what, "cannot resolve host '", host, "': ", gai_strerror(rc));
  return info;
}

// Waits until fd is readable (POLLIN) or writable (POLLOUT), or the deadline passes.
void await(int fd, short events, Clock::time_point deadline, const char* what, const char* doing) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, millis_left(deadline));
    if (rc > 0) return;
    if (rc < 0 && errno == EINTR) continue;
    OX_CHECK(rc != 0, Distributed, what, "timed out ", doing);
    OX_FAIL(Distributed, what, doing, ": ", std::strerror(errno));
  }
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket listen_on(const std::string& host, int port, const char* what) {
  OX_CHECK(port >= 0 && port <= 65535, Distributed, what, "port ", port, " is not in [0, 65535]");
  AddrInfo info = resolve(host, port, true, what);
  int last_error = 0;
  for (addrinfo* a = info.list; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last_error = errno;
      continue;
    }
    const int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), 1024) != 0) {
      last_error = errno;
      continue;
    }
    return s;
  }
  OX_CHECK(last_error != EADDRINUSE, Distributed, what, "port ", port, " on ", host,
           " is in use (another job's store, or a process still holding it); pick another "
           "MASTER_PORT");
  OX_FAIL(Distributed, what, "cannot listen on ", host, ":", port, ": ", std::strerror(last_error));
}

int local_port(const Socket& s) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  OX_CHECK(getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) == 0, Distributed,
           "TCPStore", "getsockname: ", std::strerror(errno));
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

Socket connect_to(const std::string& host, int port, Clock::time_point deadline, const char* what) {
  int last_error = 0;
  auto pause = std::chrono::milliseconds(10);
  do {
    AddrInfo info = resolve(host, port, false, what);
    for (addrinfo* a = info.list; a; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (!s.valid()) {
        last_error = errno;
        continue;
      }
      if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return s;
      }
      last_error = errno;
    }
    // Nobody listens yet (rank 0 starts later): try again, backing off to 1 s.
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  } while (Clock::now() < deadline);
  OX_FAIL(Distributed, what, "could not reach the store at ", host, ":", port,
          " before the timeout (", std::strerror(last_error),
          "): is rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on every rank?");
}

void send_all(const Socket& s, const void* data, size_t n, Clock::time_point deadline,
              const char* what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t sent = ::send(s.fd(), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      p += sent;
      n -= size_t(sent);
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      await(s.fd(), POLLOUT, deadline, what, "sending to the store");
    } else if (!(sent < 0 && errno == EINTR)) {
      OX_FAIL(Distributed, what,
              "the store's connection broke while sending: ", std::strerror(errno));
    }
  }
}

void recv_all(const Socket& s, void* data, size_t n, Clock::time_point deadline, const char* what) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = ::recv(s.fd(), p, n, MSG_DONTWAIT);
    if (got > 0) {
      p += got;
      n -= size_t(got);
    } else if (got == 0) {
      OX_FAIL(Distributed, what, "the store closed the connection (its process, rank 0, ended)");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      await(s.fd(), POLLIN, deadline, what, "waiting for the store");
    } else if (errno != EINTR) {
      OX_FAIL(Distributed, what, "the store's connection broke: ", std::strerror(errno));
    }
  }
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

}  // namespace ox::distributed::net
