// The MPI backend (Debian's OpenMPI): for runs started by mpirun, which gives each process its
// rank and size. Each group works on a communicator of its own (a dup of MPI_COMM_WORLD, or a
// split of its parent made on the parent's thread, so that the parent's collectives and the
// split stay in one order). Reductions go through user operations over one datatype per dtype,
// so every dtype reduces exactly as with Gloo (detail::reduce_fn). Errors return instead of
// aborting (MPI_ERRORS_RETURN); under mpirun a rank that dies ends the job anyway.

// The C API only: OpenMPI's C++ bindings (deprecated) do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <array>
#include <climits>
#include <cstring>
#include <mutex>

#include "distributed/backends.h"
#include "distributed/process_group.h"

namespace ox::distributed::detail {

namespace {

// One contiguous-bytes datatype per dtype: the user reduction reads the dtype back from it.
struct MpiTypes {
  std::array<MPI_Datatype, kNumDTypes> of{};
  std::array<MPI_Op, 4> op{};  // Sum, Product, Min, Max
};

template <ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* type);

MpiTypes& types() {
  static MpiTypes t = [] {
    MpiTypes m;
    for (int d = 0; d < kNumDTypes; ++d) {
      MPI_Type_contiguous(int(dtype_size(DType(d))), MPI_BYTE, &m.of[size_t(d)]);
      MPI_Type_commit(&m.of[size_t(d)]);
    }
    MPI_Op_create(&user_reduce<ReduceOp::Sum>, 1, &m.op[0]);
    MPI_Op_create(&user_reduce<ReduceOp::Product>, 1, &m.op[1]);
    MPI_Op_create(&user_reduce<ReduceOp::Min>, 1, &m.op[2]);
    MPI_Op_create(&user_reduce<ReduceOp::Max>, 1, &m.op[3]);
    return m;
  }();
  return t;
}

template <ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  for (int d = 0; d < kNumDTypes; ++d)
    if (types().of[size_t(d)] == *type)
      return reduce_fn(DType(d), Op)(inout, in, inout, size_t(*len));
}

MPI_Op op_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::Product:
      return types().op[1];
    case ReduceOp::Min:
      return types().op[2];
    case ReduceOp::Max:
      return types().op[3];
    default:
      return types().op[0];  // Sum, and Avg before its division
  }
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int n = 0;
  MPI_Error_string(rc, text, &n);
  OX_FAIL(Distributed, what, "MPI error: ", text);
}

// MPI counts are ints: larger buffers go in pieces of whole elements.
template <class F>
void in_pieces(size_t elements, size_t element_size, F&& f) {
  const size_t most = size_t(INT_MAX) / std::max<size_t>(element_size, 1);
  for (size_t at = 0; at < elements; at += most) f(at, int(std::min(most, elements - at)));
}

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request request, Tensor keep, const char* op)
      : request_(request), keep_(std::move(keep)), op_(op) {}
  void wait() override {
    if (done_) return;
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), op_);
    done_ = true;
  }
  bool is_completed() const override { return done_; }

 private:
  MPI_Request request_;
  Tensor keep_;
  const char* op_;
  bool done_ = false;
};

class MpiGroup final : public QueuedGroup {
 public:
  MpiGroup(MPI_Comm comm, std::vector<int> global_ranks, Milliseconds timeout)
      : QueuedGroup(rank_in(comm), size_in(comm), std::move(global_ranks), nullptr, timeout),
        comm_(comm) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiGroup() override {
    shut_down();
    // A group that outlives MPI (a static holding it, destroyed after the atexit finalize)
    // has nothing left to free.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  std::string backend() const override { return "mpi"; }

  WorkPtr all_reduce(Tensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t, "tensor");
    check_reduce_op("all_reduce", t.dtype(), op);
    return enqueue("all_reduce", {t}, [this, t, op](uint64_t) {
      reduce(bytes_of(t), t.dtype(), size_t(t.numel()), op);
    });
  }
  WorkPtr all_reduce_coalesced(std::vector<Tensor>& ts, ReduceOp op) override {
    check_bucket("all_reduce_coalesced", ts, op);
    return enqueue("all_reduce_coalesced", ts, [this, ts, op](uint64_t) {
      for (const Tensor& t : ts) reduce(bytes_of(t), t.dtype(), size_t(t.numel()), op);
    });
  }
  WorkPtr broadcast(Tensor& t, int src) override {
    check_tensor("broadcast", t, "tensor");
    check_rank("broadcast", src, "src", false);
    return enqueue("broadcast", {t}, [this, t, src](uint64_t) {
      in_pieces(t.nbytes(), 1, [&](size_t at, int n) {
        check_mpi(MPI_Bcast(bytes_of(t) + at, n, MPI_BYTE, src, comm_), "broadcast");
      });
    });
  }
  WorkPtr all_gather(std::vector<Tensor>& outs, const Tensor& in) override {
    check_tensor("all_gather", in, "input");
    check_list("all_gather", outs, in, "output");
    std::vector<Tensor> keep = outs;
    keep.push_back(in);
    return enqueue("all_gather", keep, [this, outs, in](uint64_t) {
      std::vector<uint8_t> flat(in.nbytes() * size_t(size_));
      gather(in, flat.data());
      for (int r = 0; r < size_ && in.numel(); ++r)
        std::memcpy(bytes_of(outs[size_t(r)]), flat.data() + size_t(r) * in.nbytes(), in.nbytes());
    });
  }
  WorkPtr all_gather_into_tensor(Tensor& out, const Tensor& in) override {
    check_whole_and_part("all_gather_into_tensor", out, in);
    return enqueue("all_gather_into_tensor", {out, in},
                   [this, out, in](uint64_t) { gather(in, bytes_of(out)); });
  }
  WorkPtr reduce_scatter(Tensor& out, const std::vector<Tensor>& ins, ReduceOp op) override {
    check_tensor("reduce_scatter", out, "output");
    check_reduce_op("reduce_scatter", out.dtype(), op);
    check_list("reduce_scatter", ins, out, "input");
    std::vector<Tensor> keep = ins;
    keep.push_back(out);
    return enqueue("reduce_scatter", keep, [this, out, ins, op](uint64_t) {
      std::vector<uint8_t> flat(out.nbytes() * size_t(size_));
      for (int r = 0; r < size_ && out.numel(); ++r)
        std::memcpy(flat.data() + size_t(r) * out.nbytes(), bytes_of(ins[size_t(r)]), out.nbytes());
      scatter(flat.data(), out, op);
    });
  }
  WorkPtr reduce_scatter_tensor(Tensor& out, const Tensor& in, ReduceOp op) override {
    check_whole_and_part("reduce_scatter_tensor", in, out);
    check_reduce_op("reduce_scatter_tensor", out.dtype(), op);
    return enqueue("reduce_scatter_tensor", {out, in},
                   [this, out, in, op](uint64_t) { scatter(bytes_of(in), out, op); });
  }
  WorkPtr barrier() override {
    return enqueue("barrier", {}, [this](uint64_t) { check_mpi(MPI_Barrier(comm_), "barrier"); });
  }
  WorkPtr send(const Tensor& t, int dst, int tag) override {
    check_tensor("send", t, "tensor");
    check_rank("send", dst, "dst", true);
    OX_CHECK(t.nbytes() <= size_t(INT_MAX), Value, "send", "tensors over 2 GiB are not sent whole");
    MPI_Request request;
    check_mpi(MPI_Isend(bytes_of(t), int(t.nbytes()), MPI_BYTE, dst, tag, comm_, &request), "send");
    return std::make_shared<MpiWork>(request, t, "send");
  }
  WorkPtr recv(Tensor& t, int src, int tag) override {
    check_tensor("recv", t, "tensor");
    check_rank("recv", src, "src", true);
    OX_CHECK(t.nbytes() <= size_t(INT_MAX), Value, "recv", "tensors over 2 GiB are not sent whole");
    MPI_Request request;
    check_mpi(MPI_Irecv(bytes_of(t), int(t.nbytes()), MPI_BYTE, src, tag, comm_, &request), "recv");
    return std::make_shared<MpiWork>(request, t, "recv");
  }

  // A group of `ranks` (indices into this group), split on this group's thread.
  ProcessGroupPtr split(const std::vector<int>& ranks, bool member, Milliseconds timeout) {
    MPI_Comm sub = MPI_COMM_NULL;
    enqueue("new_group", {}, [&](uint64_t) {
      check_mpi(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &sub), "new_group");
    })->wait();
    if (!member) return nullptr;
    std::vector<int> global;
    for (const int r : ranks) global.push_back(global_ranks_[size_t(r)]);
    return std::make_shared<MpiGroup>(sub, global, timeout);
  }

 private:
  static int rank_in(MPI_Comm c) {
    int r = 0;
    MPI_Comm_rank(c, &r);
    return r;
  }
  static int size_in(MPI_Comm c) {
    int n = 1;
    MPI_Comm_size(c, &n);
    return n;
  }
  void reduce(uint8_t* data, DType dtype, size_t n, ReduceOp op) {
    in_pieces(n, dtype_size(dtype), [&](size_t at, int count) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + at * dtype_size(dtype), count,
                              types().of[size_t(dtype)], op_of(op), comm_),
                "all_reduce");
    });
    if (op == ReduceOp::Avg) finish_avg(dtype, data, n, size_);
  }
  void gather(const Tensor& in, uint8_t* out) {
    OX_CHECK(in.nbytes() <= size_t(INT_MAX), Value, "all_gather", "inputs over 2 GiB");
    if (in.numel() == 0) return;
    check_mpi(MPI_Allgather(bytes_of(in), int(in.nbytes()), MPI_BYTE, out, int(in.nbytes()),
                            MPI_BYTE, comm_),
              "all_gather");
  }
  void scatter(const uint8_t* flat, const Tensor& out, ReduceOp op) {
    OX_CHECK(out.numel() <= INT_MAX, Value, "reduce_scatter", "outputs over 2^31 elements");
    if (out.numel() == 0) return;
    check_mpi(MPI_Reduce_scatter_block(flat, bytes_of(out), int(out.numel()),
                                       types().of[size_t(out.dtype())], op_of(op), comm_),
              "reduce_scatter");
    if (op == ReduceOp::Avg) finish_avg(out.dtype(), bytes_of(out), size_t(out.numel()), size_);
  }

  MPI_Comm comm_;
};

bool g_we_initialized = false;

}  // namespace

ProcessGroupPtr make_mpi_world(Milliseconds timeout) {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
              "init_process_group");
    OX_CHECK(provided == MPI_THREAD_MULTIPLE, Backend, "init_process_group",
             "this MPI does not support MPI_THREAD_MULTIPLE (gave level ", provided, ")");
    if (!g_we_initialized)
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    g_we_initialized = true;
  }
  MPI_Comm world;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world), "init_process_group");
  int size = 1;
  MPI_Comm_size(world, &size);
  std::vector<int> everyone(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) everyone[size_t(r)] = r;
  return std::make_shared<MpiGroup>(world, everyone, timeout);
}

ProcessGroupPtr make_mpi_subgroup(const ProcessGroupPtr& world, const std::vector<int>& ranks,
                                  Milliseconds timeout) {
  auto* mpi = dynamic_cast<MpiGroup*>(world.get());
  OX_ASSERT(mpi != nullptr, "make_mpi_subgroup given a ", world->backend(), " group");
  const bool member = std::find(ranks.begin(), ranks.end(), world->rank()) != ranks.end();
  return mpi->split(ranks, member, timeout);
}

}  // namespace ox::distributed::detail
