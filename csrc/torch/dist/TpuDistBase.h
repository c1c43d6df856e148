// What the two tpu_dist backends share (TpuDistBackend.cpp within one host, TpuDistHierarchy.cpp
// across hosts): the c10d entry points that come down to four primitives, and Work objects.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace torch_tpu {

// A collective that completed before its Work was made: a completed future holding its outputs.
class DoneWork : public c10d::Work {
 public:
  DoneWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
      : Work(rank, type),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {
    future_->markCompleted(c10::IValue(std::move(outputs)));
    finish();
  }
  bool wait(std::chrono::milliseconds /* timeout */) override { return true; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A collective that completes later: its future completes (or fails) when it has run.
class FutureWork : public c10d::Work {
 public:
  FutureWork(int rank, c10d::OpType type, c10::intrusive_ptr<c10::ivalue::Future> future)
      : Work(rank, type), future_(std::move(future)) {}
  bool isCompleted() override { return future_->completed(); }
  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
  std::exception_ptr exception() const override {
    return future_->hasError() ? future_->exception_ptr() : nullptr;
  }
  bool wait(std::chrono::milliseconds /* timeout */) override {
    future_->wait();
    if (future_->hasError()) {
      std::rethrow_exception(future_->exception_ptr());
    }
    return true;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A c10d backend over four primitives. all_reduce, all_gather, reduce_scatter and all_to_all in
// all their c10d forms (single, list, base, coalesced) come down to the primitives a subclass
// implements; `launch` decides where and when they run (here: at once, on the calling thread).
class TpuDistBase : public c10d::Backend {
 public:
  using Ms = std::chrono::milliseconds;
  using Backend::Backend;

  const std::string getBackendName() const override { return "tpu_dist"; }
  void setSequenceNumberForGroup() override { seq_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return seq_; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    at::Tensor t = single(tensors, "all_reduce");
    return launch(c10d::OpType::ALLREDUCE, tensors, {},
                  [this, t, op = opts.reduceOp, timeout = opts.timeout] {
                    all_reduce(t, op, timeout);
                  });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    return launch(c10d::OpType::ALLREDUCE_COALESCED, tensors, {},
                  [this, tensors, op = opts.reduceOp, timeout = opts.timeout] {
                    for (const at::Tensor& t : tensors) {
                      all_reduce(t, op, timeout);
                    }
                  });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK_VALUE(outputs.size() == 1, "tpu_dist all_gather takes one output list");
    return gather_each(c10d::OpType::ALLGATHER, outputs[0], {single(inputs, "all_gather")},
                       opts.timeout, false);
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    return gather_each(c10d::OpType::_ALLGATHER_BASE, {output}, {input}, opts.timeout, true);
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override {
    return gather_each(c10d::OpType::COALESCED, outputs, inputs, opts.timeout, true);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK_VALUE(inputs.size() == 1, "tpu_dist reduce_scatter takes one input list");
    at::Tensor out = single(outputs, "reduce_scatter");
    return launch(c10d::OpType::REDUCE_SCATTER, outputs, inputs[0],
                  [this, out, in = inputs[0], opts] { reduce_scatter_into(out, in, opts); });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    return scatter_each(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {input}, opts);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    return scatter_each(c10d::OpType::COALESCED, outputs, inputs, opts);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override {
    check_same_dtype(output, input);
    return launch(c10d::OpType::ALLTOALL_BASE, {output}, {input},
                  [this, output, input, send = split_bytes(input, input_splits),
                   recv = split_bytes(output, output_splits), timeout = opts.timeout] {
                    all_to_all({input}, send, {output}, recv, timeout);
                  });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    TORCH_CHECK_VALUE(static_cast<int>(inputs.size()) == getSize() &&
                          static_cast<int>(outputs.size()) == getSize(),
                      "tpu_dist all_to_all takes one tensor per rank");
    std::vector<size_t> send, recv;
    for (int p = 0; p < getSize(); p++) {
      check_same_dtype(outputs[p], inputs[p]);
      send.push_back(static_cast<size_t>(inputs[p].numel()) * inputs[p].element_size());
      recv.push_back(static_cast<size_t>(outputs[p].numel()) * outputs[p].element_size());
    }
    return launch(c10d::OpType::ALLTOALL, outputs, inputs,
                  [this, outputs, inputs, send, recv, timeout = opts.timeout] {
                    all_to_all(inputs, send, outputs, recv, timeout);
                  });
  }

  void monitoredBarrier(const c10d::BarrierOptions& opts, bool /* wait_all_ranks */) override {
    barrier(opts)->wait();
  }

 protected:
  // t = op over ranks of t, elementwise.
  virtual void all_reduce(const at::Tensor& t, const c10d::ReduceOp& op, Ms timeout) = 0;
  // outputs, seen as one run of elements, = every rank's input in rank order.
  virtual void all_gather(const std::vector<at::Tensor>& outputs, const at::Tensor& input,
                          Ms timeout) = 0;
  // output = this rank's share of the reduction of every rank's inputs (seen as one run).
  virtual void reduce_scatter_into(const at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                   const c10d::ReduceScatterOptions& opts) = 0;

  // Every rank sends send[p] bytes of inputs (one run of bytes, in order) to rank p and receives
  // recv[p] bytes from rank p into outputs.
  virtual void all_to_all(const std::vector<at::Tensor>& inputs, const std::vector<size_t>& send,
                          const std::vector<at::Tensor>& outputs, const std::vector<size_t>& recv,
                          Ms timeout) = 0;

  // Runs `body`, a collective on `outputs` and `inputs`, and returns its Work, whose future holds
  // the outputs. Here it runs at once on the calling thread; a subclass may run it elsewhere.
  virtual c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                const std::vector<at::Tensor>& /* inputs */,
                                                std::function<void()> body) {
    body();
    return done(type, std::move(outputs));
  }

  c10::intrusive_ptr<c10d::Work> done(c10d::OpType type, std::vector<at::Tensor> outputs) {
    seq_++;
    return c10::make_intrusive<DoneWork>(getRank(), type, std::move(outputs));
  }

  void count_launch() { seq_++; }

  static const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* what) {
    TORCH_CHECK_VALUE(tensors.size() == 1, "tpu_dist ", what, " takes one tensor per rank, got ",
                      tensors.size());
    return tensors[0];
  }

  // Byte sizes of `splits` rows of `t` along dim 0 for each rank (even rows when empty).
  std::vector<size_t> split_bytes(const at::Tensor& t, const std::vector<int64_t>& splits) const {
    int size = getSize();
    int64_t rows = t.dim() ? t.size(0) : 1;
    size_t row_bytes = rows ? static_cast<size_t>(t.numel() / rows) * t.element_size() : 0;
    TORCH_CHECK_VALUE(splits.empty() || static_cast<int>(splits.size()) == size,
                      "tpu_dist all_to_all: ", splits.size(), " split sizes for ", size, " ranks");
    TORCH_CHECK_VALUE(!splits.empty() || rows % size == 0, "tpu_dist all_to_all: ", rows,
                      " rows do not split evenly over ", size, " ranks");
    std::vector<size_t> bytes(size);
    int64_t total = 0;
    for (int p = 0; p < size; p++) {
      int64_t r = splits.empty() ? rows / size : splits[p];
      TORCH_CHECK_VALUE(r >= 0, "tpu_dist all_to_all: negative split size ", r);
      total += r;
      bytes[p] = static_cast<size_t>(r) * row_bytes;
    }
    TORCH_CHECK_VALUE(total == rows, "tpu_dist all_to_all: split sizes add up to ", total,
                      ", the tensor has ", rows, " rows");
    return bytes;
  }

  // all_gather: into `outputs` as one run (`pairwise`: outputs[i] from inputs[i] each).
  c10::intrusive_ptr<c10d::Work> gather_each(c10d::OpType type, std::vector<at::Tensor> outputs,
                                             std::vector<at::Tensor> inputs, Ms timeout,
                                             bool pairwise) {
    TORCH_CHECK_VALUE(!pairwise || outputs.size() == inputs.size(),
                      "tpu_dist: as many outputs as inputs");
    return launch(type, outputs, inputs, [this, outputs, inputs, timeout, pairwise] {
      if (!pairwise) {
        all_gather(outputs, inputs[0], timeout);
        return;
      }
      for (size_t i = 0; i < inputs.size(); i++) {
        all_gather({outputs[i]}, inputs[i], timeout);
      }
    });
  }

  // reduce_scatter of each input into its output.
  c10::intrusive_ptr<c10d::Work> scatter_each(c10d::OpType type, std::vector<at::Tensor> outputs,
                                              std::vector<at::Tensor> inputs,
                                              const c10d::ReduceScatterOptions& opts) {
    TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "tpu_dist: as many outputs as inputs");
    return launch(type, outputs, inputs, [this, outputs, inputs, opts] {
      for (size_t i = 0; i < inputs.size(); i++) {
        reduce_scatter_into(outputs[i], {inputs[i]}, opts);
      }
    });
  }

  static void check_same_dtype(const at::Tensor& a, const at::Tensor& b) {
    TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "tpu_dist: output dtype ",
                     a.scalar_type(), " differs from input dtype ", b.scalar_type());
  }

 private:
  uint64_t seq_ = 0;
};

} // namespace torch_tpu
