// The default process group and torch.distributed's free functions over it.

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include "distributed/backends.h"
#include "distributed/socket.h"

namespace ox::distributed {

namespace {

struct DefaultState {
  std::mutex mutex;
  ProcessGroupPtr group;
  StorePtr store;
  std::string hostname, interface;
  Milliseconds timeout = kDefaultTimeout;
  int groups_made = 0;  // new_group calls so far: each names its store prefix
};

DefaultState& state() {
  static DefaultState s;
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// An integer from an environment variable or a URL, or a Value error naming where it came from.
int parse_int(const std::string& text, const char* what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  OX_CHECK(!text.empty() && ec == std::errc() && end == text.data() + text.size(), Value,
           "init_process_group", what, " must be an integer, got '", text, "'");
  return value;
}

int from_env_or(int given, const char* var) {
  if (given >= 0) return given;
  const std::string v = env(var);
  OX_CHECK(!v.empty(), Value, "init_process_group", "no ", var,
           " given: pass it in InitOptions or set the environment variable (oxmera launch and "
           "torchrun set it)");
  return parse_int(v, var);
}

// host:port of "tcp://host:port" (a bracketed IPv6 host allowed).
std::pair<std::string, int> host_port(const std::string& address, const char* what) {
  const size_t colon = address.rfind(':');
  OX_CHECK(colon != std::string::npos && colon > 0, Value, "init_process_group", what, " '",
           address, "' is not host:port");
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const int port = parse_int(address.substr(colon + 1), "the port");
  OX_CHECK(port > 0 && port <= 65535, Value, "init_process_group", "port ", port,
           " is not in [1, 65535]");
  return {host, port};
}

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

constexpr bool kHaveMpi = OXMERA_HAVE_MPI;

bool have_nccl() { return detail::nccl_unavailable_reason().empty(); }

std::string available_backends() {
  return std::string("gloo") + (kHaveMpi ? ", mpi" : "") + (have_nccl() ? ", nccl" : "");
}

// Why `backend` cannot be used in this process.
std::string unavailable_because(const std::string& backend) {
  if (backend == "nccl") return detail::nccl_unavailable_reason();
  if (backend == "mpi")
    return "this library was built without MPI (no MPI found at configure time)";
  return "";
}

// Gloo, or NCCL for a default group made with it.
ProcessGroupPtr make_group(const std::string& backend, const detail::GroupSpec& spec) {
  return backend == "nccl" ? detail::make_nccl_group(spec) : detail::make_gloo_group(spec);
}

}  // namespace

bool is_backend_available(const std::string& backend) {
  return backend == "gloo" || (backend == "mpi" && kHaveMpi) || (backend == "nccl" && have_nccl());
}

void init_process_group(InitOptions options) {
  DefaultState& s = state();
  std::lock_guard lock(s.mutex);
  OX_CHECK(!s.group, Value, "init_process_group",
           "the default process group is already initialized; call destroy_process_group first");
  OX_CHECK(options.backend == "gloo" || options.backend == "mpi" || options.backend == "nccl",
           Value, "init_process_group", "unknown backend '", options.backend,
           "' (gloo, mpi or nccl)");
  OX_CHECK(is_backend_available(options.backend), Backend, "init_process_group", "backend '",
           options.backend, "' is not available: ", unavailable_because(options.backend),
           " (available: ", available_backends(), ")");
  OX_CHECK(options.timeout.count() > 0, Value, "init_process_group",
           "timeout must be positive, got ", options.timeout.count(), " ms");
#if OXMERA_HAVE_MPI
  if (options.backend == "mpi") {  // mpirun gives the ranks; no store, no init_method
    s.group = detail::make_mpi_world(options.timeout);
    s.timeout = options.timeout;
    s.groups_made = 0;
    return;
  }
#endif

  const int world = from_env_or(options.world_size, "WORLD_SIZE");
  const int rank = from_env_or(options.rank, "RANK");
  OX_CHECK(world >= 1, Value, "init_process_group", "world_size must be >= 1, got ", world);
  OX_CHECK(rank >= 0 && rank < world, Value, "init_process_group", "rank ", rank,
           " is not in [0, world_size = ", world, ")");

  StorePtr store = options.store;
  std::string master_host = "127.0.0.1";
  if (!store) {
    const std::string& method = options.init_method;
    if (method.rfind("file://", 0) == 0) {
      store = std::make_shared<FileStore>(method.substr(7), options.timeout);
    } else {
      std::pair<std::string, int> where;
      if (method == "env://" || method.empty()) {
        const std::string host = env("MASTER_ADDR"), port = env("MASTER_PORT");
        OX_CHECK(!host.empty() && !port.empty(), Value, "init_process_group",
                 "init_method env:// needs MASTER_ADDR and MASTER_PORT in the environment (set: ",
                 host.empty() ? "" : "MASTER_ADDR ", port.empty() ? "" : "MASTER_PORT", ")");
        where = host_port(host + ":" + port, "MASTER_ADDR:MASTER_PORT");
      } else {
        OX_CHECK(method.rfind("tcp://", 0) == 0, Value, "init_process_group", "init_method '",
                 method, "' is not env://, tcp://host:port or file:///path");
        where = host_port(method.substr(6), "init_method");
      }
      master_host = where.first;
      store = std::make_shared<TCPStore>(
          where.first, where.second,
          TCPStoreOptions{.rank = rank, .world_size = world, .timeout = options.timeout});
    }
  }

  s.hostname = net::is_loopback(master_host) ? "127.0.0.1" : this_host_name();
  s.interface = env("GLOO_SOCKET_IFNAME");
  s.timeout = options.timeout;
  std::vector<int> everyone(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) everyone[size_t(r)] = r;
  detail::GroupSpec spec{.rank = rank,
                         .size = world,
                         .global_ranks = everyone,
                         .store = std::make_shared<PrefixStore>("default", store),
                         .timeout = options.timeout,
                         .hostname = s.hostname,
                         .interface = s.interface};
  s.group = make_group(options.backend, spec);
  s.store = store;
  s.groups_made = 0;
}

bool is_initialized() {
  std::lock_guard lock(state().mutex);
  return state().group != nullptr;
}

void destroy_process_group() {
  DefaultState& s = state();
  ProcessGroupPtr group;
  StorePtr store;
  {
    std::lock_guard lock(s.mutex);
    group = std::move(s.group);
    store = std::move(s.store);
  }
  group.reset();  // the group's thread and connections, then the store (rank 0 serves it)
  store.reset();
}

ProcessGroupPtr default_group() {
  std::lock_guard lock(state().mutex);
  OX_CHECK(state().group, Value, "distributed",
           "the default process group is not initialized: call init_process_group first");
  return state().group;
}

StorePtr default_store() {
  std::lock_guard lock(state().mutex);
  return state().store;
}

int get_rank() {
  std::lock_guard lock(state().mutex);
  return state().group ? state().group->rank() : 0;
}

int get_world_size() {
  std::lock_guard lock(state().mutex);
  return state().group ? state().group->size() : 1;
}

ProcessGroupPtr new_group(std::vector<int> ranks, std::optional<Milliseconds> timeout) {
  const ProcessGroupPtr world = default_group();
  DefaultState& s = state();
  int index;
  {
    std::lock_guard lock(s.mutex);
    index = ++s.groups_made;
  }
  if (ranks.empty())
    for (int r = 0; r < world->size(); ++r) ranks.push_back(r);
  std::sort(ranks.begin(), ranks.end());
  OX_CHECK(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end(), Value, "new_group",
           "a rank is listed twice");
  OX_CHECK(ranks.front() >= 0 && ranks.back() < world->size(), Value, "new_group",
           "ranks must be in [0, ", world->size(), "), got ", ranks.front(), "..", ranks.back());
#if OXMERA_HAVE_MPI
  if (world->backend() == "mpi")
    return detail::make_mpi_subgroup(world, ranks, timeout.value_or(s.timeout));
#endif
  const auto me = std::find(ranks.begin(), ranks.end(), world->rank());
  if (me == ranks.end()) return nullptr;
  detail::GroupSpec spec{
      .rank = int(me - ranks.begin()),
      .size = int(ranks.size()),
      .global_ranks = ranks,
      .store = std::make_shared<PrefixStore>("group" + std::to_string(index), default_store()),
      .timeout = timeout.value_or(s.timeout),
      .hostname = s.hostname,
      .interface = s.interface};
  return make_group(world->backend(), spec);
}

namespace {
ProcessGroupPtr group_or_default(const ProcessGroupPtr& group) {
  return group ? group : default_group();
}
WorkPtr finish(WorkPtr work, bool async_op) {
  if (!async_op) work->wait();
  return work;
}
}  // namespace

WorkPtr all_reduce(Tensor& tensor, ReduceOp op, CollectiveOptions o) {
  return finish(group_or_default(o.group)->all_reduce(tensor, op), o.async_op);
}
WorkPtr broadcast(Tensor& tensor, int src, CollectiveOptions o) {
  return finish(group_or_default(o.group)->broadcast(tensor, src), o.async_op);
}
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, CollectiveOptions o) {
  return finish(group_or_default(o.group)->all_gather(outputs, input), o.async_op);
}
WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, CollectiveOptions o) {
  return finish(group_or_default(o.group)->all_gather_into_tensor(output, input), o.async_op);
}
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                       CollectiveOptions o) {
  return finish(group_or_default(o.group)->reduce_scatter(output, inputs, op), o.async_op);
}
WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op,
                              CollectiveOptions o) {
  return finish(group_or_default(o.group)->reduce_scatter_tensor(output, input, op), o.async_op);
}
WorkPtr barrier(CollectiveOptions o) {
  return finish(group_or_default(o.group)->barrier(), o.async_op);
}
void send(const Tensor& tensor, int dst, int tag, ProcessGroupPtr group) {
  group_or_default(group)->send(tensor, dst, tag)->wait();
}
void recv(Tensor& tensor, int src, int tag, ProcessGroupPtr group) {
  group_or_default(group)->recv(tensor, src, tag)->wait();
}

}  // namespace ox::distributed
