#pragma once
// ox::distributed, as torch.distributed: process groups over Gloo (CPU tensors) or MPI, and
// the rendezvous stores they start from.
//
//   ox::distributed::init_process_group({.backend = "gloo"});  // RANK, WORLD_SIZE, MASTER_*
//   ox::distributed::all_reduce(grad);                          // summed over every rank
//   ox::distributed::destroy_process_group();
//
// Every collective is asynchronous underneath: a group runs its collectives one after another
// on a thread of its own, in the order the caller issued them (which must be the same order on
// every rank, as in PyTorch), and `async_op = true` hands back the Work to wait on. A collective
// that cannot finish — a rank died, stalled past the timeout, or passed a tensor of another
// shape or dtype — raises ox::Error of kind Distributed naming the collective and the ranks;
// the group is then broken and every later call on it raises the same error.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxmera/core/options.h"
#include "oxmera/tensor.h"

namespace ox::distributed {

using Milliseconds = std::chrono::milliseconds;
// PyTorch's default for CPU backends.
inline constexpr Milliseconds kDefaultTimeout = std::chrono::minutes(30);

// ---- Stores: the key-value rendezvous every rank can reach ---------------------------------

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Waits (up to the store's timeout) for the key, then returns its value.
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  // Adds delta to the integer at key (0 when absent) and returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Whether every key is set now, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Waits until every key is set; raises Distributed after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, Milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, get_timeout()); }
  virtual bool delete_key(const std::string& key) = 0;
  // The ranks whose processes are known to have ended (a TCP store sees their connection
  // close); empty where the store cannot tell.
  virtual std::vector<int> gone_ranks() { return {}; }
  // Not timeout(): curses defines that name as a macro.
  Milliseconds get_timeout() const { return timeout_; }
  void set_timeout(Milliseconds timeout) { timeout_ = timeout; }

 protected:
  Milliseconds timeout_ = kDefaultTimeout;
};
using StorePtr = std::shared_ptr<Store>;

struct TCPStoreOptions {
  int rank = 0;  // rank 0 hosts the store (is_master)
  int world_size = -1;
  OX_NAMED_FIELDS_ONLY;
  Milliseconds timeout = kDefaultTimeout;
};

// As torch.distributed.TCPStore: rank 0 serves it on host:port (a thread of its process),
// every rank connects. Rank 0 failing to bind (the port in use) and a rank failing to connect
// within the timeout raise Distributed. The server checks that every rank announces the same
// world_size and a rank in [0, world_size), and remembers which ranks' connections closed.
class TCPStore final : public Store {
 public:
  TCPStore(std::string host, int port, TCPStoreOptions options);
  ~TCPStore() override;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  std::vector<int> gone_ranks() override;
  int port() const;  // the bound port (useful with port 0 on rank 0)
  const std::string& host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A store in a directory every rank can reach (a shared file system), as torch's FileStore.
class FileStore final : public Store {
 public:
  FileStore(std::string directory, Milliseconds timeout = kDefaultTimeout);
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  bool delete_key(const std::string& key) override;

 private:
  std::string path_of(const std::string& key) const;
  std::string directory_;
};

// Every key of `store` under "prefix/": how sub-groups keep their rendezvous apart.
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, StorePtr store);
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  std::vector<int> gone_ranks() override { return store_->gone_ranks(); }

 private:
  std::string key(const std::string& k) const { return prefix_ + "/" + k; }
  std::string prefix_;
  StorePtr store_;
};

// ---- Process groups ------------------------------------------------------------------------

enum class ReduceOp { Sum, Avg, Product, Min, Max };
const char* reduce_op_name(ReduceOp op);

// A collective in flight. wait() blocks until it is done and raises its error, if any;
// the tensors it writes must not be read before.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() const = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string backend() const = 0;
  // The ranks of the default group this group's ranks stand for (0..size-1 for the default).
  const std::vector<int>& global_ranks() const { return global_ranks_; }

  // In place on every rank: the reduction of every rank's tensor (same shape and dtype on all).
  // Avg is for floating dtypes; on bool, Sum and Max are "any", Product and Min "all".
  virtual WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
  // Several tensors in one collective, as a bucket (each in place).
  virtual WorkPtr all_reduce_coalesced(std::vector<Tensor>& tensors, ReduceOp op) = 0;
  // Rank src's tensor into every rank's.
  virtual WorkPtr broadcast(Tensor& tensor, int src) = 0;
  // outputs[r] = rank r's input (outputs: size() tensors shaped as input).
  virtual WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input) = 0;
  // output = the inputs of ranks 0..size-1 concatenated along dim 0.
  virtual WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input) = 0;
  // output = the reduction over ranks of their inputs[rank()] (inputs: size() tensors).
  virtual WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs,
                                 ReduceOp op = ReduceOp::Sum) = 0;
  // output = this rank's slice (dim 0) of the reduction of every rank's input.
  virtual WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input,
                                        ReduceOp op = ReduceOp::Sum) = 0;
  virtual WorkPtr barrier() = 0;
  virtual WorkPtr send(const Tensor& tensor, int dst, int tag = 0) = 0;
  virtual WorkPtr recv(Tensor& tensor, int src, int tag = 0) = 0;

 protected:
  int rank_ = 0, size_ = 1;
  std::vector<int> global_ranks_;
};
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

// ---- The default group, as torch.distributed's functions --------------------------------

struct InitOptions {
  // "gloo" (CPU tensors), "mpi" (under mpirun), "nccl" (CUDA tensors, where NCCL loads).
  std::string backend = "gloo";
  OX_NAMED_FIELDS_ONLY;
  // "env://" (MASTER_ADDR, MASTER_PORT), "tcp://host:port" or "file:///directory".
  std::string init_method = "env://";
  int rank = -1;        // -1: $RANK (MPI: its own)
  int world_size = -1;  // -1: $WORLD_SIZE (MPI: its own)
  Milliseconds timeout = kDefaultTimeout;
  StorePtr store{};  // a store to use instead of init_method's
};

void init_process_group(InitOptions options = {});
bool is_initialized();
void destroy_process_group();
int get_rank();                   // 0 without a default group
int get_world_size();             // 1 without a default group
ProcessGroupPtr default_group();  // raises Value without one
StorePtr default_store();
// A group of some of the default group's ranks. Every rank of the default group must call it,
// with the same ranks, in the same order; non-members get a null pointer.
ProcessGroupPtr new_group(std::vector<int> ranks, std::optional<Milliseconds> timeout = {});
// Which backends this build has: gloo, mpi, nccl (nccl where a CUDA build found it at run time).
bool is_backend_available(const std::string& backend);

// The collectives of `group` (the default group when null). With async_op the Work comes back
// unfinished; without, it is finished (and its error raised) before the call returns.
struct CollectiveOptions {
  ProcessGroupPtr group{};
  OX_NAMED_FIELDS_ONLY;
  bool async_op = false;
};
WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum, CollectiveOptions options = {});
WorkPtr broadcast(Tensor& tensor, int src, CollectiveOptions options = {});
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input,
                   CollectiveOptions options = {});
WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, CollectiveOptions options = {});
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs,
                       ReduceOp op = ReduceOp::Sum, CollectiveOptions options = {});
WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                              CollectiveOptions options = {});
WorkPtr barrier(CollectiveOptions options = {});
void send(const Tensor& tensor, int dst, int tag = 0, ProcessGroupPtr group = {});
void recv(Tensor& tensor, int src, int tag = 0, ProcessGroupPtr group = {});

}  // namespace ox::distributed
