// TCPStore: rank 0 serves a key-value map on a thread of its own; every rank (rank 0 too) is a
// client on one connection. Requests and replies are length-prefixed frames; a get or wait for
// keys not yet set is answered when the last of them is. The server knows each connection's
// rank (its hello), so it can say which ranks' processes ended (gone_ranks), which the process
// groups use to name a dead rank in their errors.

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "distributed/socket.h"
#include "oxmera/distributed.h"

namespace ox::distributed {

namespace {

using Bytes = std::vector<uint8_t>;
enum class Cmd : uint8_t { Hello, Set, Get, Add, Check, Wait, Delete, Gone };
// Frames over 1 GiB are refused: a store holds rendezvous addresses, not tensors.
constexpr uint32_t kMaxFrame = 1u << 30;

// Encoding of a frame's fields: integers little-endian as in memory, strings length-prefixed.
struct Writer {
  Bytes out;
  Writer& u8(uint8_t v) { return raw(&v, 1); }
  Writer& i64(int64_t v) { return raw(&v, 8); }
  Writer& str(const void* p, size_t n) {
    const uint32_t len = uint32_t(n);
    raw(&len, 4);
    return raw(p, n);
  }
  Writer& str(const std::string& s) { return str(s.data(), s.size()); }
  // Not inlined: inlined into its callers, GCC 12 derives impossible sizes for the copy and
  // warns (-Wstringop-overflow, a false positive).
  [[gnu::noinline]] Writer& raw(const void* p, size_t n) {
    if (n == 0) return *this;
    const size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
    return *this;
  }
};

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  void take(void* dst, size_t n) {
    OX_CHECK(size_t(end - p) >= n, Distributed, "TCPStore", "malformed message");
    std::memcpy(dst, p, n);
    p += n;
  }
  uint8_t u8() {
    uint8_t v;
    take(&v, 1);
    return v;
  }
  int64_t i64() {
    int64_t v;
    take(&v, 8);
    return v;
  }
  Bytes bytes() {
    uint32_t n;
    take(&n, 4);
    OX_CHECK(size_t(end - p) >= n, Distributed, "TCPStore", "malformed message");
    Bytes b(p, p + n);
    p += n;
    return b;
  }
  std::string str() {
    const Bytes b = bytes();
    return {b.begin(), b.end()};
  }
};

Bytes framed(const Bytes& payload) {
  Bytes out(4 + payload.size());
  const uint32_t n = uint32_t(payload.size());
  std::memcpy(out.data(), &n, 4);
  std::memcpy(out.data() + 4, payload.data(), payload.size());
  return out;
}

// ---- The server ------------------------------------------------------------------------------

class Server {
 public:
  Server(net::Socket listener, int world_size)
      : listener_(std::move(listener)), world_size_(world_size) {
    int fds[2];
    OX_CHECK(::pipe2(fds, O_CLOEXEC) == 0, Distributed, "TCPStore", "pipe: ", std::strerror(errno));
    wake_read_ = net::Socket(fds[0]);
    wake_write_ = net::Socket(fds[1]);
    thread_ = std::thread([this] { loop(); });
  }
  ~Server() {
    const char c = 0;
    [[maybe_unused]] const ssize_t n = ::write(wake_write_.fd(), &c, 1);
    thread_.join();
  }

 private:
  struct Client {
    net::Socket socket;
    Bytes inbox;
    int rank = -1;
  };
  // A get or wait not yet answerable.
  struct Waiter {
    int fd;
    Cmd cmd;
    std::vector<std::string> keys;
  };

  void loop() {
    for (;;) {
      std::vector<pollfd> fds = {{wake_read_.fd(), POLLIN, 0}, {listener_.fd(), POLLIN, 0}};
      for (auto& [fd, c] : clients_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) clients_[fd].socket = net::Socket(fd);
      }
      for (size_t i = 2; i < fds.size(); ++i)
        if (fds[i].revents) serve(fds[i].fd);
    }
  }

  // Reads what fd has sent and answers every whole frame; drops the client on EOF or garbage.
  void serve(int fd) {
    Client& c = clients_.at(fd);
    uint8_t buf[65536];
    const ssize_t got = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return drop(fd);
    if (got > 0) c.inbox.insert(c.inbox.end(), buf, buf + got);
    try {
      while (c.inbox.size() >= 4) {
        uint32_t n;
        std::memcpy(&n, c.inbox.data(), 4);
        if (n > kMaxFrame) return drop(fd);
        if (c.inbox.size() < 4 + size_t(n)) break;
        const Bytes frame(c.inbox.begin() + 4, c.inbox.begin() + 4 + n);
        c.inbox.erase(c.inbox.begin(), c.inbox.begin() + 4 + n);
        handle(fd, frame);
        if (!clients_.count(fd)) return;
      }
    } catch (const std::exception&) {
      drop(fd);
    }
  }

  void handle(int fd, const Bytes& frame) {
    Reader in{frame.data(), frame.data() + frame.size()};
    const Cmd cmd = Cmd(in.u8());
    switch (cmd) {
      case Cmd::Hello: {
        const int64_t rank = in.i64(), world = in.i64();
        std::string problem;
        if (world != world_size_)
          problem = ox::detail::concat("rank ", rank, " was started with world_size ", world,
                                       " but rank 0 with world_size ", world_size_);
        else if (rank < 0 || rank >= world_size_)
          problem =
              ox::detail::concat("rank ", rank, " is not in [0, world_size = ", world_size_, ")");
        else if (std::any_of(clients_.begin(), clients_.end(),
                             [&](const auto& kv) { return kv.second.rank == rank; }))
          problem = ox::detail::concat("two processes were started as rank ", rank);
        if (problem.empty()) clients_.at(fd).rank = int(rank);
        return reply(fd, problem.empty() ? Writer().u8(0) : Writer().u8(1).str(problem));
      }
      case Cmd::Set: {
        const std::string key = in.str();
        data_[key] = in.bytes();
        reply(fd, Writer().u8(0));
        return wake_waiters();
      }
      case Cmd::Add: {
        const std::string key = in.str();
        const int64_t delta = in.i64();
        int64_t value = 0;
        if (auto it = data_.find(key); it != data_.end())
          value = std::stoll(std::string(it->second.begin(), it->second.end()));
        value += delta;
        const std::string text = std::to_string(value);
        data_[key] = Bytes(text.begin(), text.end());
        reply(fd, Writer().u8(0).i64(value));
        return wake_waiters();
      }
      case Cmd::Check: {
        const std::vector<std::string> keys = read_keys(in);
        return reply(fd, Writer().u8(0).u8(all_set(keys)));
      }
      case Cmd::Get:
      case Cmd::Wait: {
        Waiter w{fd, cmd, read_keys(in)};
        if (all_set(w.keys)) return answer(w);
        waiters_.push_back(std::move(w));
        return;
      }
      case Cmd::Delete: {
        const bool erased = data_.erase(in.str()) > 0;
        return reply(fd, Writer().u8(0).u8(erased));
      }
      case Cmd::Gone: {
        Writer out;
        out.u8(0).i64(int64_t(gone_.size()));
        for (const int r : gone_) out.i64(r);
        return reply(fd, out);
      }
    }
    drop(fd);
  }

  static std::vector<std::string> read_keys(Reader& in) {
    std::vector<std::string> keys(size_t(std::clamp<int64_t>(in.i64(), 0, 1 << 20)));
    for (auto& k : keys) k = in.str();
    return keys;
  }
  bool all_set(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return data_.count(k); });
  }
  void answer(const Waiter& w) {
    if (w.cmd == Cmd::Get)
      return reply(
          w.fd, Writer().u8(0).str(data_.at(w.keys.at(0)).data(), data_.at(w.keys.at(0)).size()));
    reply(w.fd, Writer().u8(0));
  }
  void wake_waiters() {
    std::vector<Waiter> ready;
    std::erase_if(waiters_, [&](Waiter& w) {
      if (!all_set(w.keys)) return false;
      ready.push_back(std::move(w));
      return true;
    });
    for (const Waiter& w : ready)
      if (clients_.count(w.fd)) answer(w);
  }
  void reply(int fd, const Writer& w) {
    const Bytes out = framed(w.out);
    try {  // a client that stops reading for 10 s is dropped rather than stalling the store
      net::send_all(clients_.at(fd).socket, out.data(), out.size(),
                    net::Clock::now() + std::chrono::seconds(10), "TCPStore");
    } catch (const std::exception&) {
      drop(fd);
    }
  }
  void drop(int fd) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    if (it->second.rank >= 0) gone_.insert(it->second.rank);
    std::erase_if(waiters_, [fd](const Waiter& w) { return w.fd == fd; });
    clients_.erase(it);
  }

  net::Socket listener_, wake_read_, wake_write_;
  int world_size_;
  std::map<int, Client> clients_;
  std::map<std::string, Bytes> data_;
  std::vector<Waiter> waiters_;
  std::set<int> gone_;
  std::thread thread_;
};

}  // namespace

// ---- The client ------------------------------------------------------------------------------

struct TCPStore::Impl {
  std::string host;
  int port = 0;
  std::unique_ptr<Server> server;
  net::Socket socket;
  std::mutex mutex;  // one request and its reply at a time
  // After a request timed out its reply may still come: the connection is out of step.
  bool broken = false;

  Bytes request(const Writer& w, Milliseconds timeout, const char* what) {
    std::lock_guard lock(mutex);
    OX_CHECK(!broken, Distributed, what, "an earlier request to the store at ", host, ":", port,
             " failed; the connection is no longer usable");
    broken = true;
    const auto deadline = net::Clock::now() + timeout;
    const Bytes out = framed(w.out);
    net::send_all(socket, out.data(), out.size(), deadline, what);
    uint32_t n = 0;
    net::recv_all(socket, &n, 4, deadline, what);
    OX_CHECK(n <= kMaxFrame, Distributed, what, "malformed reply from the store");
    Bytes reply(n);
    net::recv_all(socket, reply.data(), n, deadline, what);
    broken = false;
    OX_CHECK(!reply.empty(), Distributed, what, "malformed reply from the store");
    if (reply[0] != 0) {
      Reader in{reply.data() + 1, reply.data() + reply.size()};
      OX_FAIL(Distributed, what, in.str());
    }
    return Bytes(reply.begin() + 1, reply.end());
  }
};

TCPStore::TCPStore(std::string host, int port, TCPStoreOptions options)
    : impl_(std::make_unique<Impl>()) {
  OX_CHECK(options.world_size >= 1, Distributed, "TCPStore", "world_size must be >= 1, got ",
           options.world_size);
  OX_CHECK(options.rank >= 0 && options.rank < options.world_size, Distributed, "TCPStore", "rank ",
           options.rank, " is not in [0, world_size = ", options.world_size, ")");
  timeout_ = options.timeout;
  impl_->host = host;
  impl_->port = port;
  if (options.rank == 0) {
    net::Socket listener = net::listen_on(net::is_loopback(host) ? host : "", port, "TCPStore");
    impl_->port = net::local_port(listener);
    impl_->server = std::make_unique<Server>(std::move(listener), options.world_size);
  }
  impl_->socket =
      net::connect_to(host, impl_->port, net::Clock::now() + options.timeout, "TCPStore");
  impl_->request(Writer().u8(uint8_t(Cmd::Hello)).i64(options.rank).i64(options.world_size),
                 options.timeout, "TCPStore");
}

TCPStore::~TCPStore() {
  // The client first: the server's thread must not be serving this connection when it goes.
  impl_->socket = net::Socket();
  impl_->server.reset();
}

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  impl_->request(Writer().u8(uint8_t(Cmd::Set)).str(key).str(value.data(), value.size()), timeout_,
                 "TCPStore.set");
}

std::vector<uint8_t> TCPStore::get(const std::string& key) {
  try {
    const Bytes r =
        impl_->request(Writer().u8(uint8_t(Cmd::Get)).i64(1).str(key), timeout_, "TCPStore.get");
    Reader in{r.data(), r.data() + r.size()};
    return in.bytes();
  } catch (const Error& e) {
    OX_FAIL(Distributed, "TCPStore.get", "key '", key, "': ", e.what());
  }
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  const Bytes r =
      impl_->request(Writer().u8(uint8_t(Cmd::Add)).str(key).i64(delta), timeout_, "TCPStore.add");
  Reader in{r.data(), r.data() + r.size()};
  return in.i64();
}

namespace {
Writer keys_request(Cmd cmd, const std::vector<std::string>& keys) {
  Writer w;
  w.u8(uint8_t(cmd)).i64(int64_t(keys.size()));
  for (const auto& k : keys) w.str(k);
  return w;
}
}  // namespace

bool TCPStore::check(const std::vector<std::string>& keys) {
  const Bytes r = impl_->request(keys_request(Cmd::Check, keys), timeout_, "TCPStore.check");
  return r.at(0) != 0;
}

void TCPStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  try {
    impl_->request(keys_request(Cmd::Wait, keys), timeout, "TCPStore.wait");
  } catch (const Error& e) {
    std::string names;
    for (const auto& k : keys) names += (names.empty() ? "'" : ", '") + k + "'";
    OX_FAIL(Distributed, "TCPStore.wait", "keys ", names, ": ", e.what());
  }
}

bool TCPStore::delete_key(const std::string& key) {
  const Bytes r =
      impl_->request(Writer().u8(uint8_t(Cmd::Delete)).str(key), timeout_, "TCPStore.delete_key");
  return r.at(0) != 0;
}

std::vector<int> TCPStore::gone_ranks() {
  const Bytes r = impl_->request(Writer().u8(uint8_t(Cmd::Gone)),
                                 std::min(timeout_, Milliseconds(5000)), "TCPStore.gone_ranks");
  Reader in{r.data(), r.data() + r.size()};
  std::vector<int> ranks(size_t(in.i64()));
  for (int& rank : ranks) rank = int(in.i64());
  return ranks;
}

int TCPStore::port() const { return impl_->port; }
const std::string& TCPStore::host() const { return impl_->host; }

}  // namespace ox::distributed
