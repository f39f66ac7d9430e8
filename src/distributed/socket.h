#pragma once
// Blocking TCP sockets with deadlines, for the TCP store (store.cpp). Every failure raises
// ox::Error of kind Distributed naming `what` (the caller's op) and the peer.

#include <chrono>
#include <cstdint>
#include <string>

namespace ox::distributed::net {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A listening socket on host:port (port 0: any free one), SO_REUSEADDR so that a restarted
// rank 0 can take its port back from connections in TIME_WAIT. A port in use raises.
Socket listen_on(const std::string& host, int port, const char* what);
int local_port(const Socket& s);
// Connects to host:port, retrying while nobody listens yet, until the deadline.
Socket connect_to(const std::string& host, int port, Clock::time_point deadline, const char* what);
// Exactly n bytes, or raises (peer closed, error, or the deadline passed).
void send_all(const Socket& s, const void* data, size_t n, Clock::time_point deadline,
              const char* what);
void recv_all(const Socket& s, void* data, size_t n, Clock::time_point deadline, const char* what);
// Whether host names this machine's loopback (127.x, ::1, localhost).
bool is_loopback(const std::string& host);

}  // namespace ox::distributed::net
