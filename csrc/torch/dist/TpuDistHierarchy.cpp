// tpu_dist for a group whose ranks span hosts: the shared-memory backend (TpuDistBackend.cpp)
// inside each host and Gloo between hosts (docs/ARCHITECTURE.md). A reduction or a broadcast
// moves each tensor across hosts once: the ranks of a host combine their data at the host's leader
// (its lowest rank) through shared memory, the leaders exchange the hosts' results through a Gloo
// group of their own on CPU copies, and each leader hands the result back to its host through
// shared memory. All-to-all and point-to-point messages between hosts go through a Gloo group of
// every rank. Collectives run on the calling thread and complete before they return.
#include "dist/TpuDistHierarchy.h"

#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>

#include "dist/TpuDistBase.h"

namespace torch_tpu {
namespace {

using BackendPtr = c10::intrusive_ptr<c10d::Backend>;
using Shape = std::array<int64_t, 5>;

Shape shape_of(c10d::OpType type, at::ScalarType dtype, int64_t bytes, int64_t op, int64_t root) {
  return {static_cast<int64_t>(type), static_cast<int64_t>(dtype), bytes, op, root};
}

// How the step between hosts went, as a leader tells its host.
enum Status : int64_t { kOk, kDisagree, kFailedElsewhere, kFailedBetween };

// A CPU copy of `t` as a flat run of bytes, so that every dtype travels through Gloo.
at::Tensor host_bytes(const at::Tensor& t) {
  return t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous().reshape({-1}).view(at::kByte);
}

// `bytes` seen as a tensor shaped and typed like `like`.
at::Tensor bytes_as(const at::Tensor& bytes, const at::Tensor& like) {
  return bytes.view(like.scalar_type()).view(like.sizes());
}

int64_t nbytes(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

// The dtype a leader reduces in: bool as bytes (a sum of them is their OR, as on one host).
at::ScalarType wire_dtype(at::ScalarType t) { return t == at::kBool ? at::kByte : t; }

// The op between leaders: the host results of AVG and PREMUL_SUM are sums (the factor was applied
// on each host, AVG divides at the end).
c10d::ReduceOp leader_op(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::AVG:
    case c10d::ReduceOp::PREMUL_SUM: return c10d::ReduceOp(c10d::ReduceOp::SUM);
    default: return c10d::ReduceOp(op.op_);
  }
}

at::Tensor flat_cat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : tensors) {
    flat.push_back(t.reshape({-1}));
  }
  return at::cat(flat);
}

// A message to another host, sent through Gloo as its size and then its bytes.
class SentWork : public c10d::Work {
 public:
  SentWork(int rank, c10::intrusive_ptr<c10d::Work> size, c10::intrusive_ptr<c10d::Work> data)
      : Work(rank, c10d::OpType::SEND), size_(std::move(size)), data_(std::move(data)) {}
  bool isCompleted() override { return size_->isCompleted() && data_->isCompleted(); }
  bool isSuccess() const override { return size_->isSuccess() && data_->isSuccess(); }
  std::exception_ptr exception() const override {
    return size_->exception() ? size_->exception() : data_->exception();
  }
  bool wait(std::chrono::milliseconds timeout) override {
    return size_->wait(timeout) && data_->wait(timeout);
  }

 private:
  c10::intrusive_ptr<c10d::Work> size_, data_;
};

class TpuDistHierarchy final : public TpuDistBase {
 public:
  // host_of[r]: the host of group rank r, hosts numbered from 0 in order of their lowest rank.
  // `local` is this host's shared-memory backend, `leaders` the Gloo group of host leaders (on
  // leaders only), `world` a Gloo group of every rank; `group` names the group in errors.
  TpuDistHierarchy(int rank, int size, std::vector<int> host_of, BackendPtr local,
                   std::optional<BackendPtr> leaders, BackendPtr world, std::string group)
      : TpuDistBase(rank, size), group_(std::move(group)), host_of_(std::move(host_of)), local_(std::move(local)),
        leaders_(leaders ? *leaders : BackendPtr()), world_(std::move(world)) {
    TORCH_CHECK_VALUE(static_cast<int>(host_of_.size()) == size, "tpu_dist: ", host_of_.size(),
                      " host indices for ", size, " ranks");
    for (int r = 0; r < size; r++) {
      int h = host_of_[r];
      TORCH_CHECK_VALUE(h >= 0 && h <= static_cast<int>(members_.size()),
                        "tpu_dist: hosts must be numbered in order of their lowest rank");
      if (h == static_cast<int>(members_.size())) {
        members_.emplace_back();
      }
      members_[h].push_back(r);
    }
    host_ = host_of_[rank];
    TORCH_CHECK_VALUE(is_leader() == static_cast<bool>(leaders_),
                      "tpu_dist: a host's leader, and only it, joins the leaders' group");
  }

  void setTimeout(Ms timeout) override {
    local_->setTimeout(timeout);
    world_->setTimeout(timeout);
    if (leaders_) {
      leaders_->setTimeout(timeout);
    }
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    broadcast_from(single(tensors, "broadcast"), static_cast<int>(opts.rootRank), opts.timeout);
    return done(c10d::OpType::BROADCAST, tensors);
  }

  // The result is reduced everywhere and kept on the root only.
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    at::Tensor result = single(tensors, "reduce").clone();
    all_reduce(result, opts.reduceOp, opts.timeout);
    if (getRank() == opts.rootRank) {
      tensors[0].copy_(result);
    }
    return done(c10d::OpType::REDUCE, tensors);
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    at::Tensor all = gathered(single(inputs, "gather"), opts.timeout);
    bool root = getRank() == opts.rootRank;
    if (root) {
      copy_out(all, outputs.at(0));
    }
    return done(c10d::OpType::GATHER, root ? outputs[0] : std::vector<at::Tensor>{});
  }

  // The root's inputs are broadcast whole; each rank keeps its share.
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                          std::vector<std::vector<at::Tensor>>& inputs,
                                          const c10d::ScatterOptions& opts) override {
    const at::Tensor& out = single(outputs, "scatter");
    int root = static_cast<int>(opts.rootRank);
    at::Tensor all = getRank() == root ? flat_cat(inputs.at(0))
                                       : at::empty({getSize() * out.numel()}, out.options());
    TORCH_CHECK_VALUE(all.numel() == getSize() * out.numel() && all.dtype() == out.dtype(),
                      "tpu_dist scatter: the root's inputs do not match the outputs");
    broadcast_from(all, root, opts.timeout);
    out.copy_(share(all, getRank(), out));
    return done(c10d::OpType::SCATTER, outputs);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    c10d::BarrierOptions on_host = opts;
    three_steps(
        "barrier", shape_of(c10d::OpType::BARRIER, at::kByte, 0, 0, 0), opts.timeout,
        [&] { local_->barrier(on_host)->wait(); }, [&] { leaders_->barrier(on_host)->wait(); },
        [] {});
    return done(c10d::OpType::BARRIER, {});
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    if (host_of_.at(dst) == host_) {
      return local_->send(tensors, local_rank(dst), tag);
    }
    // Its size goes first, so that the receiver can take a message of any size and check it:
    // Gloo aborts the process on a message larger than the receive.
    at::Tensor payload = host_bytes(single(tensors, "send"));
    std::vector<at::Tensor> size{at::full({1}, payload.numel(), at::kLong)}, data{payload};
    c10::intrusive_ptr<c10d::Work> first = world_->send(size, dst, tag);
    return c10::make_intrusive<SentWork>(getRank(), first, world_->send(data, dst, tag));
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    if (host_of_.at(src) == host_) {
      return local_->recv(tensors, local_rank(src), tag);
    }
    const at::Tensor& t = single(tensors, "recv");
    std::vector<at::Tensor> size{at::empty({1}, at::kLong)};
    between("recv", [&] { world_->recv(size, src, tag)->wait(); });
    std::vector<at::Tensor> bytes{at::empty({size[0].item<int64_t>()}, at::kByte)};
    between("recv", [&] { world_->recv(bytes, src, tag)->wait(); });
    TORCH_CHECK_VALUE(bytes[0].numel() == nbytes(t), context("recv"), ": rank ", src, " sent ",
                      bytes[0].numel(), " bytes, the tensor holds ", nbytes(t));
    t.copy_(bytes_as(bytes[0], t));
    return done(c10d::OpType::RECV, tensors);
  }

 private:
  bool is_leader() const { return members_[host_][0] == getRank(); }

  int local_rank(int rank) const {
    const std::vector<int>& m = members_[host_of_[rank]];
    return static_cast<int>(std::find(m.begin(), m.end(), rank) - m.begin());
  }

  void broadcast_on_host(const at::Tensor& t, int root, Ms timeout) {
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.timeout = timeout;
    std::vector<at::Tensor> ts{t};
    local_->broadcast(ts, opts)->wait();
  }

  // Runs a collective as `up` (inside each host, towards its leader), `across` (on the leaders,
  // between hosts) and `down` (inside each host, from its leader). Before `across` the leaders
  // compare what they run (`shape`: op type, dtype, bytes, reduce op, root) and whether their
  // host's `up` failed; then each leader tells its host how it went. So an error on one host, a
  // disagreement between hosts or a failure between them raises on every rank instead of leaving
  // ranks waiting.
  template <typename Up, typename Across, typename Down>
  void three_steps(const char* what, const Shape& shape, Ms timeout, Up&& up, Across&& across,
                   Down&& down) {
    std::exception_ptr up_error;
    try {
      up();
    } catch (...) {
      up_error = std::current_exception();
    }
    Status status = kOk;
    std::string detail;
    if (leaders_) {
      try {
        status = agree(shape, up_error != nullptr, timeout);
        if (status == kOk) {
          across();
        }
      } catch (const std::exception& e) {
        status = kFailedBetween;
        detail = e.what();
      }
    }
    if (up_error) {
      std::rethrow_exception(up_error);
    }
    if (members_[host_].size() > 1) {
      at::Tensor told = at::full({1}, static_cast<int64_t>(status), at::kLong);
      broadcast_on_host(told, 0, timeout);
      status = static_cast<Status>(told.item<int64_t>());
    }
    raise_for(what, status, detail);
    down();
  }

  // Every leader's `mine` (a CPU tensor of the same shape on each), in host order.
  std::vector<at::Tensor> leaders_gather(const at::Tensor& mine, Ms timeout) {
    std::vector<std::vector<at::Tensor>> all(1);
    for (size_t h = 0; h < members_.size(); h++) {
      all[0].push_back(at::empty_like(mine));
    }
    std::vector<at::Tensor> in{mine};
    c10d::AllgatherOptions opts;
    opts.timeout = timeout;
    leaders_->allgather(all, in, opts)->wait();
    return all[0];
  }

  // The leaders' verdict on a collective: whether every host's step succeeded and all run the same.
  Status agree(const Shape& shape, bool failed, Ms timeout) {
    std::vector<int64_t> record(shape.begin(), shape.end());
    record.push_back(failed ? 1 : 0);
    std::vector<at::Tensor> all = leaders_gather(at::tensor(record, at::kLong), timeout);
    Status status = kOk;
    for (const at::Tensor& other : all) {
      if (other[static_cast<int64_t>(shape.size())].item<int64_t>() != 0) {
        return kFailedElsewhere;
      }
      if (!at::equal(other, all[0])) {
        status = kDisagree;
      }
    }
    return status;
  }

  void raise_for(const char* what, Status status, const std::string& detail) const {
    std::string where = context(what);
    switch (status) {
      case kOk: return;
      case kDisagree:
        TORCH_CHECK_VALUE(false, where, ": the ranks of different hosts do not agree on the "
                          "collective, its dtype, its sizes, its op or its root");
      case kFailedElsewhere:
        C10_THROW_ERROR(DistBackendError, where + ": it failed on another host");
      case kFailedBetween:
        C10_THROW_ERROR(DistBackendError,
                        where + ": it failed between hosts" +
                            (detail.empty() ? c10::str(" (see rank ", members_[host_][0], ")")
                                            : ": " + detail));
    }
  }

  std::string context(const char* what) const {
    return c10::str("tpu_dist ", what, " in group '", group_, "' (rank ", getRank(), " of ",
                    getSize(), ", across ", members_.size(), " hosts)");
  }

  // Root's host first, then the leaders, then every other host.
  void broadcast_from(const at::Tensor& t, int root, Ms timeout) {
    int root_host = host_of_.at(root);
    three_steps(
        "broadcast", shape_of(c10d::OpType::BROADCAST, t.scalar_type(), nbytes(t), 0, root), timeout,
        [&] {
          if (host_ == root_host) {
            broadcast_on_host(t, local_rank(root), timeout);
          }
        },
        [&] {
          std::vector<at::Tensor> bytes{host_ == root_host ? host_bytes(t)
                                                           : at::empty({nbytes(t)}, at::kByte)};
          c10d::BroadcastOptions opts;
          opts.rootRank = root_host;
          opts.timeout = timeout;
          leaders_->broadcast(bytes, opts)->wait();
          if (host_ != root_host) {
            t.copy_(bytes_as(bytes[0], t));
          }
        },
        [&] {
          if (host_ != root_host) {
            broadcast_on_host(t, 0, timeout);
          }
        });
  }

  // Half types are reduced in float32 on every step and rounded once, as on one host.
  void all_reduce(const at::Tensor& t, const c10d::ReduceOp& op, Ms timeout) override {
    if (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16) {
      at::Tensor wide = t.to(at::kFloat);
      all_reduce(wide, op, timeout);
      t.copy_(wide);
      return;
    }
    bool avg = op.op_ == c10d::ReduceOp::AVG;
    three_steps(
        "all_reduce", shape_of(c10d::OpType::ALLREDUCE, t.scalar_type(), nbytes(t), op.op_, 0), timeout,
        [&] {
          c10d::ReduceOptions on_host;
          on_host.reduceOp = avg ? c10d::ReduceOp(c10d::ReduceOp::SUM) : op;
          on_host.rootRank = 0;
          on_host.timeout = timeout;
          std::vector<at::Tensor> ts{t};
          local_->reduce(ts, on_host)->wait();
        },
        [&] {
          std::vector<at::Tensor> wire{
              t.to(at::kCPU, wire_dtype(t.scalar_type()), /*non_blocking=*/false, /*copy=*/true)};
          c10d::AllreduceOptions across;
          across.reduceOp = leader_op(op);
          across.timeout = timeout;
          leaders_->allreduce(wire, across)->wait();
          if (avg) {
            wire[0] = wire[0].is_floating_point() ? wire[0].div(getSize())
                                                  : wire[0].div(getSize(), "trunc");
          }
          t.copy_(wire[0]);
        },
        [&] { broadcast_on_host(t, 0, timeout); });
  }

  // Every rank's `input`, flattened and in rank order, on every rank (on input's device).
  at::Tensor gathered(const at::Tensor& input, Ms timeout) {
    int64_t n = input.numel(), b = nbytes(input);
    const std::vector<int>& mine = members_[host_];
    std::vector<std::vector<at::Tensor>> pieces(1);
    for (size_t j = 0; leaders_ && j < mine.size(); j++) {
      pieces[0].push_back(at::empty({n}, input.options()));
    }
    at::Tensor all = at::empty({getSize() * n}, input.options());
    three_steps(
        "all_gather", shape_of(c10d::OpType::ALLGATHER, input.scalar_type(), b, 0, 0), timeout,
        [&] {
          std::vector<at::Tensor> in{input.reshape({-1})};
          c10d::GatherOptions on_host;
          on_host.rootRank = 0;
          on_host.timeout = timeout;
          local_->gather(pieces, in, on_host)->wait();
        },
        [&] {
          if (b > 0) {
            all.copy_(between_hosts(pieces[0], b, timeout).view(input.scalar_type()));
          }
        },
        [&] { broadcast_on_host(all, 0, timeout); });
    return all;
  }

  // The leaders' part of an all_gather: this host's `pieces` of `b` bytes each in, every rank's
  // piece out, in rank order, as bytes on the CPU.
  at::Tensor between_hosts(const std::vector<at::Tensor>& pieces, int64_t b, Ms timeout) {
    size_t width = 0;
    for (const std::vector<int>& m : members_) {
      width = std::max(width, m.size());
    }
    at::Tensor host_part = at::zeros({static_cast<int64_t>(width) * b}, at::kByte);
    for (size_t j = 0; j < pieces.size(); j++) {
      host_part.narrow(0, static_cast<int64_t>(j) * b, b).copy_(host_bytes(pieces[j]));
    }
    std::vector<at::Tensor> hosts = leaders_gather(host_part, timeout);
    at::Tensor ordered = at::empty({getSize() * b}, at::kByte);
    for (size_t h = 0; h < members_.size(); h++) {
      for (size_t j = 0; j < members_[h].size(); j++) {
        ordered.narrow(0, members_[h][j] * b, b)
            .copy_(hosts[h].narrow(0, static_cast<int64_t>(j) * b, b));
      }
    }
    return ordered;
  }

  void all_gather(const std::vector<at::Tensor>& outputs, const at::Tensor& input,
                  Ms timeout) override {
    copy_out(gathered(input, timeout), outputs);
  }

  // Reduces every rank's whole input and keeps this rank's share.
  void reduce_scatter_into(const at::Tensor& output, const std::vector<at::Tensor>& inputs,
                           const c10d::ReduceScatterOptions& opts) override {
    at::Tensor all = flat_cat(inputs);
    check_same_dtype(output, all);
    TORCH_CHECK_VALUE(all.numel() == getSize() * output.numel(), "tpu_dist reduce_scatter: ",
                      all.numel(), " input elements for ", getSize(), " outputs of ",
                      output.numel());
    all_reduce(all, opts.reduceOp, opts.timeout);
    output.copy_(share(all, getRank(), output));
  }

  // Rank r's piece of a flat tensor of every rank's `like`.
  at::Tensor share(const at::Tensor& all, int r, const at::Tensor& like) const {
    return all.narrow(0, r * like.numel(), like.numel()).view(like.sizes());
  }

  // Copies `all` into `outputs`, seen as one run of elements.
  static void copy_out(const at::Tensor& all, const std::vector<at::Tensor>& outputs) {
    int64_t offset = 0;
    for (const at::Tensor& o : outputs) {
      check_same_dtype(o, all);
      TORCH_CHECK_VALUE(offset + o.numel() <= all.numel(), "tpu_dist: the outputs hold more than ",
                        all.numel(), " elements, every rank's input");
      o.copy_(all.narrow(0, offset, o.numel()).view(o.sizes()));
      offset += o.numel();
    }
    TORCH_CHECK_VALUE(offset == all.numel(), "tpu_dist: the outputs hold ", offset, " elements, not ",
                      all.numel(), ", every rank's input");
  }

  // Runs a Gloo call between hosts; its failure raises DistBackendError naming the collective.
  template <typename F>
  void between(const char* what, F&& call) const {
    try {
      call();
    } catch (const std::exception& e) {
      C10_THROW_ERROR(DistBackendError, context(what) + ": " + e.what());
    }
  }

  void all_to_all(const std::vector<at::Tensor>& inputs, const std::vector<size_t>& send,
                  const std::vector<at::Tensor>& outputs, const std::vector<size_t>& recv,
                  Ms timeout) override {
    std::vector<at::Tensor> in_bytes;
    for (const at::Tensor& t : inputs) {
      in_bytes.push_back(host_bytes(t));
    }
    at::Tensor in = at::cat(in_bytes);
    std::vector<int64_t> recv64(recv.begin(), recv.end()), send64(send.begin(), send.end());
    at::Tensor out = at::empty({std::accumulate(recv64.begin(), recv64.end(), int64_t{0})},
                               at::kByte);
    exchange(out, in, recv64, send64, timeout);
    int64_t offset = 0;
    for (const at::Tensor& o : outputs) {
      o.copy_(bytes_as(out.narrow(0, offset, nbytes(o)), o));
      offset += nbytes(o);
    }
  }

  // all_to_all through the Gloo group of every rank, on bytes: out gets recv[p] bytes from each
  // rank p, in holds send[p] bytes for it. The ranks first check every pair's sizes (each rank
  // reaches the same verdict), since Gloo aborts the process on a mismatch.
  void exchange(at::Tensor& out, at::Tensor& in, std::vector<int64_t> recv,
                std::vector<int64_t> send, Ms timeout) {
    int size = getSize();
    std::vector<int64_t> mine = send;
    mine.insert(mine.end(), recv.begin(), recv.end());
    std::vector<at::Tensor> in_sizes{at::tensor(mine, at::kLong)};
    std::vector<std::vector<at::Tensor>> all(1);
    for (int p = 0; p < size; p++) {
      all[0].push_back(at::empty({2 * size}, at::kLong));
    }
    c10d::AllgatherOptions gather_opts;
    gather_opts.timeout = timeout;
    between("all_to_all", [&] { world_->allgather(all, in_sizes, gather_opts)->wait(); });
    at::Tensor sizes = at::stack(all[0]).view({size, 2, size}); // [rank][send, recv][peer]
    at::Tensor sent = sizes.select(1, 0), expected = sizes.select(1, 1).t();
    TORCH_CHECK_VALUE(at::equal(sent, expected), context("all_to_all"),
                      ": the ranks' split sizes do not match (row p: bytes rank p sends to each "
                      "rank; then bytes each rank expects from rank p):\n",
                      sent, "\n", expected);
    c10d::AllToAllOptions opts;
    opts.timeout = timeout;
    between("all_to_all", [&] { world_->alltoall_base(out, in, recv, send, opts)->wait(); });
  }

  std::string group_;
  std::vector<int> host_of_;
  std::vector<std::vector<int>> members_; // each host's ranks, ascending
  int host_ = 0;
  BackendPtr local_, leaders_, world_;
};

} // namespace

void register_dist_hierarchy(pybind11::module& m) {
  pybind11::class_<TpuDistHierarchy, c10d::Backend, c10::intrusive_ptr<TpuDistHierarchy>>(
      m, "_TpuDistHierarchy")
      .def(pybind11::init([](int rank, int size, std::vector<int> host_of, BackendPtr local,
                             std::optional<BackendPtr> leaders, BackendPtr world,
                             std::string group) {
             return c10::make_intrusive<TpuDistHierarchy>(
                 rank, size, std::move(host_of), std::move(local), std::move(leaders),
                 std::move(world), std::move(group));
           }),
           pybind11::call_guard<pybind11::gil_scoped_release>());
}

} // namespace torch_tpu
