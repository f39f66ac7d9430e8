#pragma once
// What the backends' groups share: argument checks, the failure description naming the ranks
// gone or stalled (GroupBase, every backend); collectives queued to one thread of the group's
// own, the issue order being the order every rank runs them in, the reductions over raw
// buffers, the optional cross-rank check of shapes and dtypes, and the one error a failed
// collective leaves behind (QueuedGroup: Gloo and MPI, whose collectives block a host thread).

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "oxmera/distributed.h"

namespace ox::distributed::detail {

// out[i] = a[i] (op) b[i] for n elements of dtype; Avg reduces as Sum (see finish_avg).
using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);
ReduceFn reduce_fn(DType dtype, ReduceOp op);
// Divides n elements of a floating dtype in place by `by` (Avg's last step).
void finish_avg(DType dtype, void* data, size_t n, int by);
void check_reduce_op(const char* op, DType dtype, ReduceOp reduce);

// A tensor a CPU collective can work in place on: defined, on the CPU, contiguous.
void check_cpu_tensor(const char* op, const Tensor& t, const char* what,
                      const std::string& backend);
void check_same_layout(const char* op, const Tensor& want, const Tensor& got, const char* what);
// A checked CPU tensor's bytes (null when empty), for the CPU backends' libraries.
inline uint8_t* bytes_of(const Tensor& t) {
  return t.numel() == 0 ? nullptr : static_cast<uint8_t*>(t.raw_data_ptr(t.dtype()));
}

// What every rank states about a collective before it runs, when checking is on
// (OXMERA_DISTRIBUTED_DEBUG=1): a mismatch is named instead of corrupting or hanging.
struct Signature {
  uint64_t sequence = 0;
  int32_t op = 0;
  int32_t dtype = 0;
  int64_t numel = 0;
  int32_t ndim = 0;
  int32_t root = 0;  // broadcast's src; the reduction for reductions
  int64_t shape[8] = {};
};
Signature signature_of(uint64_t sequence, const char* op, const Tensor& t, int root);
// What compare_signatures throws: the collective never started, so nothing more to explain.
class Mismatch : public Error {
 public:
  using Error::Error;
};
// Throws Mismatch naming the first rank whose signature differs from rank 0's.
void compare_signatures(const char* op, const std::vector<Signature>& all,
                        const std::string& group);
bool debug_checks_enabled();

// Gloo writes to its sockets without MSG_NOSIGNAL, so a write to a rank that died raises
// SIGPIPE, whose default action ends this process before Gloo can report the error. While
// this lives, SIGPIPE is blocked on the calling thread (threads started meanwhile inherit
// that), a failed write returns EPIPE instead, and a SIGPIPE it left pending is consumed.
class SigpipeBlocked {
 public:
  SigpipeBlocked();
  ~SigpipeBlocked();
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  bool was_blocked_ = false;
  bool was_pending_ = false;
};

class GroupBase : public ProcessGroup {
 protected:
  GroupBase(int rank, int size, std::vector<int> global_ranks, StorePtr store,
            Milliseconds timeout);
  // The error a failed collective becomes: which collective, which ranks are gone or stalled.
  Error describe_failure(const char* op, uint64_t sequence, const std::string& cause);
  std::string name() const;

  // The argument checks every backend makes before a collective (Value/DType/Shape/Device
  // errors on the caller's thread): one tensor the backend can use (CPU-contiguous unless a
  // backend says otherwise); size() tensors laid out as `like`; one dtype for a bucket; `whole`
  // holding size() x `part`; a rank of this group (not this one).
  virtual void check_tensor(const char* op, const Tensor& t, const char* what) const;
  void check_list(const char* op, const std::vector<Tensor>& list, const Tensor& like,
                  const char* what) const;
  void check_bucket(const char* op, const std::vector<Tensor>& tensors, ReduceOp reduce) const;
  void check_whole_and_part(const char* op, const Tensor& whole, const Tensor& part) const;
  void check_rank(const char* op, int r, const char* what, bool other_than_this) const;

  StorePtr store_;
  Milliseconds timeout_;
};

class QueuedGroup : public GroupBase {
 public:
  ~QueuedGroup() override;

 protected:
  QueuedGroup(int rank, int size, std::vector<int> global_ranks, StorePtr store,
              Milliseconds timeout);
  // Runs body(sequence) on the group's thread after everything issued before it; the Work
  // completes when it has run. `keep` stays alive until then.
  WorkPtr enqueue(const char* op, std::vector<Tensor> keep, std::function<void(uint64_t)> body);
  // Stops the thread (after what is queued) — the backend's own teardown must come after.
  void shut_down();

 private:
  struct Task {
    const char* op;
    std::function<void(uint64_t)> body;
    std::promise<void> done;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  uint64_t next_sequence_ = 0;
  std::optional<Error> broken_;  // the first failure: every later collective raises it
  std::thread thread_;
};

}  // namespace ox::distributed::detail
