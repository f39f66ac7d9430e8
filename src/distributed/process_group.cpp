#include "distributed/process_group.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/dispatch.h"

namespace ox::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Product:
      return "product";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

namespace detail {

namespace {

// Integer sums and products wrap (as in PyTorch) instead of overflowing into undefined
// behaviour: computed unsigned, at least as wide as unsigned int (narrower types would be
// promoted to int and could overflow there).
template <class T>
using Wrapping =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(Wrapping<T>(a) + Wrapping<T>(b));
  else
    return a + b;
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(Wrapping<T>(a) * Wrapping<T>(b));
  else
    return a * b;
}

template <class T, ReduceOp Op>
void reduce_loop(void* out_p, const void* a_p, const void* b_p, size_t n) {
  auto* out = static_cast<T*>(out_p);
  const auto* a = static_cast<const T*>(a_p);
  const auto* b = static_cast<const T*>(b_p);
  // 16-bit floats reduce in f32, rounding once per pair, as PyTorch's Gloo backend.
  using C = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
  for (size_t i = 0; i < n; ++i) {
    const C x = C(a[i]), y = C(b[i]);
    C r;
    if constexpr (std::is_same_v<T, bool>) {
      r = (Op == ReduceOp::Sum || Op == ReduceOp::Max) ? (x || y) : (x && y);
    } else if constexpr (Op == ReduceOp::Sum || Op == ReduceOp::Avg) {
      r = wrap_add(x, y);
    } else if constexpr (Op == ReduceOp::Product) {
      r = wrap_mul(x, y);
    } else if constexpr (Op == ReduceOp::Min) {
      r = (y < x || y != y) ? y : x;  // NaN wins, as torch.minimum
    } else {
      r = (y > x || y != y) ? y : x;
    }
    out[i] = T(r);
  }
}

}  // namespace

ReduceFn reduce_fn(DType dtype, ReduceOp op) {
  return dispatch_dtype(dtype, [&]<class T>() -> ReduceFn {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        return &reduce_loop<T, ReduceOp::Sum>;
      case ReduceOp::Product:
        return &reduce_loop<T, ReduceOp::Product>;
      case ReduceOp::Min:
        return &reduce_loop<T, ReduceOp::Min>;
      case ReduceOp::Max:
        return &reduce_loop<T, ReduceOp::Max>;
    }
    return nullptr;
  });
}

void finish_avg(DType dtype, void* data, size_t n, int by) {
  dispatch_dtype(dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                  std::is_same_v<T, BFloat16>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      auto* p = static_cast<T*>(data);
      for (size_t i = 0; i < n; ++i) p[i] = T(C(p[i]) / C(by));
    }
  });
}

void check_reduce_op(const char* op, DType dtype, ReduceOp reduce) {
  OX_CHECK(reduce != ReduceOp::Avg || is_floating(dtype), DType, op,
           "ReduceOp::Avg needs a floating dtype, got ", dtype);
}

void check_cpu_tensor(const char* op, const Tensor& t, const char* what,
                      const std::string& backend) {
  OX_CHECK(t.defined(), Value, op, what, " is undefined");
  OX_CHECK(t.device().is_cpu(), Device, op, "the ", backend, " backend takes CPU tensors, but ",
           what, " is on ", t.device(), (backend == "gloo" ? " (use the nccl backend)" : ""));
  OX_CHECK(t.is_contiguous(), Value, op, what, " (shape ", t.shape(), ", strides ", t.strides(),
           ") must be contiguous");
}

void check_same_layout(const char* op, const Tensor& want, const Tensor& got, const char* what) {
  OX_CHECK(got.dtype() == want.dtype(), DType, op, what, " has dtype ", got.dtype(), ", expected ",
           want.dtype());
  OX_CHECK(got.numel() == want.numel(), Shape, op, what, " has shape ", got.shape(), " (",
           got.numel(), " elements), expected ", want.numel(), " elements (shape ", want.shape(),
           ")");
}

Signature signature_of(uint64_t sequence, const char* op, const Tensor& t, int root) {
  Signature s;
  s.sequence = sequence;
  // The op's name hashed: equal on every rank that runs the same collective.
  uint32_t hash = 0;  // unsigned: it wraps
  for (const char* c = op; *c; ++c) hash = hash * 31u + uint8_t(*c);
  s.op = int32_t(hash);
  if (t.defined()) {
    s.dtype = int32_t(t.dtype());
    s.numel = t.numel();
    s.ndim = int32_t(t.dim());
    for (int64_t d = 0; d < std::min<int64_t>(t.dim(), 8); ++d) s.shape[d] = t.shape()[size_t(d)];
  }
  s.root = root;
  return s;
}

namespace {
std::string describe(const Signature& s) {
  std::string shape = "[";
  for (int d = 0; d < std::min(s.ndim, 8); ++d)
    shape += (d ? ", " : "") + std::to_string(s.shape[d]);
  shape += s.ndim > 8 ? ", ...]" : "]";
  return ox::detail::concat("collective #", s.sequence, " (op hash ", s.op, ") on ", DType(s.dtype),
                            " ", shape, " root/op ", s.root);
}
}  // namespace

void compare_signatures(const char* op, const std::vector<Signature>& all,
                        const std::string& group) {
  for (size_t r = 1; r < all.size(); ++r) {
    const Signature &a = all[0], &b = all[r];
    const bool same = a.sequence == b.sequence && a.op == b.op && a.dtype == b.dtype &&
                      a.numel == b.numel && a.ndim == b.ndim && a.root == b.root &&
                      std::equal(a.shape, a.shape + 8, b.shape);
    if (!same)
      throw Mismatch(ErrorKind::Distributed,
                     ox::detail::concat("[", op, "] ", group, ": the ranks disagree: rank 0 runs ",
                                        describe(a), ", rank ", r, " runs ", describe(b)));
  }
}

bool debug_checks_enabled() {
  const char* v = std::getenv("OXMERA_DISTRIBUTED_DEBUG");
  return v && *v && std::strcmp(v, "0") != 0;
}

// ---- The queue ---------------------------------------------------------------------------

namespace {
class QueuedWork final : public Work {
 public:
  QueuedWork(std::shared_future<void> done, std::vector<Tensor> keep)
      : done_(std::move(done)), keep_(std::move(keep)) {}
  void wait() override {
    done_.get();
    keep_.clear();
  }
  bool is_completed() const override {
    return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  std::shared_future<void> done_;
  std::vector<Tensor> keep_;
};
}  // namespace

GroupBase::GroupBase(int rank, int size, std::vector<int> global_ranks, StorePtr store,
                     Milliseconds timeout)
    : store_(std::move(store)), timeout_(timeout) {
  rank_ = rank;
  size_ = size;
  global_ranks_ = std::move(global_ranks);
}

QueuedGroup::QueuedGroup(int rank, int size, std::vector<int> global_ranks, StorePtr store,
                         Milliseconds timeout)
    : GroupBase(rank, size, std::move(global_ranks), std::move(store), timeout) {
  thread_ = std::thread([this] { loop(); });
}

QueuedGroup::~QueuedGroup() { shut_down(); }

void QueuedGroup::shut_down() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  ready_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string GroupBase::name() const {
  return ox::detail::concat(backend(), " group of ", size_, " (rank ", rank_, ")");
}

void GroupBase::check_tensor(const char* op, const Tensor& t, const char* what) const {
  check_cpu_tensor(op, t, what, backend());
}

void GroupBase::check_list(const char* op, const std::vector<Tensor>& list, const Tensor& like,
                           const char* what) const {
  OX_CHECK(int(list.size()) == size_, Value, op, "got ", list.size(), " ", what,
           " tensors for a group of ", size_);
  for (const Tensor& t : list) {
    check_tensor(op, t, what);
    check_same_layout(op, like, t, what);
  }
}

void GroupBase::check_bucket(const char* op, const std::vector<Tensor>& tensors,
                             ReduceOp reduce) const {
  OX_CHECK(!tensors.empty(), Value, op, "no tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_tensor(op, tensors[i], "a tensor");
    OX_CHECK(tensors[i].dtype() == tensors[0].dtype(), DType, op, "tensors[", i, "] has dtype ",
             tensors[i].dtype(), " but tensors[0] ", tensors[0].dtype(), " (one dtype per call)");
  }
  check_reduce_op(op, tensors[0].dtype(), reduce);
}

void GroupBase::check_whole_and_part(const char* op, const Tensor& whole,
                                     const Tensor& part) const {
  check_tensor(op, whole, "the whole tensor");
  check_tensor(op, part, "the part");
  OX_CHECK(whole.dtype() == part.dtype() && whole.numel() == part.numel() * size_, Shape, op,
           "the whole (", whole.dtype(), " ", whole.shape(), ") must hold ", size_, " x the part (",
           part.dtype(), " ", part.shape(), ")");
}

void GroupBase::check_rank(const char* op, int r, const char* what, bool other_than_this) const {
  OX_CHECK(r >= 0 && r < size_, Value, op, what, " = ", r, " is not a rank of this group of ",
           size_);
  OX_CHECK(!other_than_this || r != rank_, Value, op, what, " = ", r, " is this rank itself");
}

WorkPtr QueuedGroup::enqueue(const char* op, std::vector<Tensor> keep,
                             std::function<void(uint64_t)> body) {
  Task task{op, std::move(body), {}};
  std::shared_future<void> done = task.done.get_future().share();
  {
    std::lock_guard lock(mutex_);
    OX_CHECK(!stopping_, Distributed, op, name(), " has been destroyed");
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return std::make_shared<QueuedWork>(std::move(done), std::move(keep));
}

SigpipeBlocked::SigpipeBlocked() {
  sigset_t pipe, old, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  was_blocked_ = sigismember(&old, SIGPIPE) == 1;
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
}

SigpipeBlocked::~SigpipeBlocked() {
  if (was_blocked_) return;
  sigset_t pipe, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigpending(&pending);
  if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
    const timespec now{};
    while (sigtimedwait(&pipe, nullptr, &now) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_UNBLOCK, &pipe, nullptr);
}

void QueuedGroup::loop() {
  // The group's thread runs the collectives, and writes to the peers, for its whole life.
  const SigpipeBlocked quiet_pipes;
  for (;;) {
    Task task;
    uint64_t sequence;
    std::optional<Error> broken;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      sequence = next_sequence_++;
      broken = broken_;
    }
    if (broken) {
      task.done.set_exception(std::make_exception_ptr(*broken));
      continue;
    }
    // Any failure here happened with the peers engaged, so the group cannot go on.
    std::optional<Error> failure;
    try {
      task.body(sequence);
    } catch (const Mismatch& e) {
      failure = e;
    } catch (const std::exception& e) {
      failure = describe_failure(task.op, sequence, e.what());
    }
    if (!failure) {
      task.done.set_value();
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      broken_ = failure;
    }
    task.done.set_exception(std::make_exception_ptr(*failure));
  }
}

Error GroupBase::describe_failure(const char* op, uint64_t sequence, const std::string& cause) {
  // A dead rank's connections all close at once, but the store may see it a moment after this
  // rank's collective did; a stalled rank never leaves the mark every surviving rank leaves
  // here. So look for both for a short while.
  std::string who;
  try {
    const std::string mark = "fault/" + std::to_string(sequence) + "/";
    if (store_) store_->set(mark + std::to_string(rank_), {1});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (store_ && who.empty()) {
      std::string gone, stalled;
      for (const int g : store_->gone_ranks())
        if (std::find(global_ranks_.begin(), global_ranks_.end(), g) != global_ranks_.end())
          gone += (gone.empty() ? "" : ", ") + std::to_string(g);
      for (int r = 0; r < size_ && gone.empty(); ++r)
        if (!store_->check({mark + std::to_string(r)}))
          stalled += (stalled.empty() ? "" : ", ") + std::to_string(global_ranks_[size_t(r)]);
      const bool late = std::chrono::steady_clock::now() > until;
      if (!gone.empty())
        who = "rank " + gone + " has ended (its connection to the store closed)";
      else if (late && !stalled.empty())
        who = "rank " + stalled + " did not reach it within the timeout of " +
              std::to_string(timeout_.count()) + " ms (stalled, or slower)";
      else if (stalled.empty())
        who = "every rank reached it; the connection between them failed";
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const std::exception&) {
    who = "the store, which rank 0 hosts, does not answer: rank 0 has ended or stalled";
  }
  return Error(ErrorKind::Distributed,
               ox::detail::concat("[", op, "] ", name(), ": collective #", sequence,
                                  " failed: ", who, who.empty() ? "" : ". ", "Cause: ", cause));
}

}  // namespace detail
}  // namespace ox::distributed
