// The tpu_dist c10d backend within one host: a thin c10d::Backend over the core's shared-memory
// collectives (csrc/core/dist/tpu_comm.h). As NCCL's collectives run on a communication stream
// that first waits for the current stream, these run in order on the backend's communication
// thread, after the work queued before them on the current stream of their tensors' device (in
// fused mode the launch cuts the open graph: a collective is where its inputs materialize). The
// caller gets a Work at once; its future completes when the collective is done on this rank.
// Tensors are staged straight to and from the segment with the core's copy op, on a stream of the
// communication thread's own. Sends run on a second thread, so that a rank can post its receives
// while its sends wait for a peer.
#include "dist/TpuDistBackend.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "dist/TpuDistBase.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuStreams.h"

namespace torch_tpu {
namespace {

// A list of tensors seen as one run of bytes, in order: one side of a collective. Non-contiguous
// tensors travel through dense copies, written back by `finish` when they are outputs.
class Staged {
 public:
  Staged(std::vector<at::Tensor> tensors, bool output)
      : originals_(std::move(tensors)), output_(output) {
    for (const at::Tensor& t : originals_) {
      dense_.push_back(t.is_contiguous() ? t : t.contiguous());
      starts_.push_back(bytes_);
      bytes_ += static_cast<size_t>(t.numel()) * t.element_size();
    }
  }

  // With a single tensor whose memory the host can reach (a CPU tensor, a live buffer of a driver
  // that keeps chips in host memory), the collective may also read and write it in place.
  tpu_comm_buf* buf() {
    void* data = nullptr;
    if (dense_.size() == 1 && bytes_ > 0) {
      tpu_tensor view = core_bytes(dense_[0]);
      data = tpu_tensor_host_address(&view);
    }
    buf_ = tpu_comm_buf{&Staged::read, &Staged::write, this, bytes_, data};
    return &buf_;
  }

  size_t bytes(size_t i) const { return (i + 1 < starts_.size() ? starts_[i + 1] : bytes_) - starts_[i]; }

  // Rethrows a staging copy's error; writes dense copies back into non-contiguous outputs.
  void finish() {
    if (error_) {
      std::rethrow_exception(error_);
    }
    for (size_t i = 0; output_ && i < originals_.size(); i++) {
      if (!dense_[i].is_same(originals_[i])) {
        originals_[i].copy_(dense_[i]);
      }
    }
  }

 private:
  static tpu_status read(void* ctx, size_t offset, size_t n, void* dst) {
    return static_cast<Staged*>(ctx)->move(offset, n, dst, false);
  }
  static tpu_status write(void* ctx, size_t offset, size_t n, const void* src) {
    return static_cast<Staged*>(ctx)->move(offset, n, const_cast<void*>(src), true);
  }

  // Copies bytes [offset, offset + n) between the tensors and `host`; errors are kept for
  // finish(), since no C++ exception may cross the C core.
  tpu_status move(size_t offset, size_t n, void* host, bool to_tensor) {
    try {
      size_t i = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
      for (size_t done = 0; done < n; i++) {
        size_t at = offset + done - starts_[i];
        size_t len = std::min(n - done, bytes(i) - at);
        copy_piece(dense_[i], at, len, static_cast<char*>(host) + done, to_tensor);
        done += len;
      }
      return TPU_OK;
    } catch (...) {
      error_ = std::current_exception();
      return tpu_error(TPU_ERR_RUNTIME, "tpu_dist: staging a tensor failed");
    }
  }

  static void copy_piece(const at::Tensor& t, size_t at, size_t len, char* host, bool to_tensor) {
    if (len == 0) {
      return;
    }
    if (t.is_cpu()) {
      char* data = static_cast<char*>(t.data_ptr()) + at;
      std::memcpy(to_tensor ? data : host, to_tensor ? host : data, len);
      return;
    }
    tpu_tensor device = core_bytes(t);
    device.offset += static_cast<int64_t>(at);
    device.sizes[0] = static_cast<int64_t>(len);
    tpu_tensor staged{};
    staged.host = host;
    staged.dtype = TPU_UINT8;
    staged.ndim = 1;
    staged.sizes[0] = static_cast<int64_t>(len);
    staged.strides[0] = 1;
    launch_sync(t.device().index(),
                to_tensor ? copy_call(staged, device) : copy_call(device, staged));
  }

  std::vector<at::Tensor> originals_, dense_;
  std::vector<size_t> starts_;
  size_t bytes_ = 0;
  bool output_;
  tpu_comm_buf buf_{};
  std::exception_ptr error_;
};

// Runs tasks in order on a thread of its own; the destructor runs what is queued, then joins.
class TaskThread {
 public:
  TaskThread() : thread_([this] { loop(); }) {}
  ~TaskThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }
  bool runs_here() const { return std::this_thread::get_id() == thread_.get_id(); }
  // Nothing queued or running.
  bool idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    return tasks_.empty() && !busy_;
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) {
          return;
        }
        task = std::move(tasks_.front());
        tasks_.pop_front();
        busy_ = true;
      }
      task();
      task = nullptr;
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  bool busy_ = false;
  std::thread thread_;
};

c10::intrusive_ptr<c10::ivalue::Future> new_future() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

// The device of the first tpu tensor among them, if any.
std::optional<c10::DeviceIndex> device_of(const std::vector<at::Tensor>& a,
                                          const std::vector<at::Tensor>& b) {
  for (const std::vector<at::Tensor>* list : {&a, &b}) {
    for (const at::Tensor& t : *list) {
      if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) {
        return t.device().index();
      }
    }
  }
  return std::nullopt;
}

// While alive, the communication thread works on `stream` (its current device and stream) and in
// debug mode, so that what it launches, a future's callbacks included, is done when it returns.
class OnStream {
 public:
  explicit OnStream(const std::optional<c10::Stream>& stream) {
    tpu_set_thread_eager_mode(TPU_EAGER_DEBUG);
    if (stream) {
      set_current_device(stream->device_index());
      previous_ = exchange_stream(*stream);
    }
  }
  ~OnStream() {
    if (previous_) {
      exchange_stream(*previous_);
    }
  }

 private:
  std::optional<c10::Stream> previous_;
};

tpu_reduce_op reduce_op_of(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return TPU_REDUCE_SUM;
    case c10d::ReduceOp::AVG: return TPU_REDUCE_AVG;
    case c10d::ReduceOp::PRODUCT: return TPU_REDUCE_PRODUCT;
    case c10d::ReduceOp::MIN: return TPU_REDUCE_MIN;
    case c10d::ReduceOp::MAX: return TPU_REDUCE_MAX;
    case c10d::ReduceOp::BAND: return TPU_REDUCE_BAND;
    case c10d::ReduceOp::BOR: return TPU_REDUCE_BOR;
    case c10d::ReduceOp::BXOR: return TPU_REDUCE_BXOR;
    case c10d::ReduceOp::PREMUL_SUM: return TPU_REDUCE_PREMUL_SUM;
    default: break;
  }
  TORCH_CHECK_VALUE(false, "tpu_dist does not support reduce op ", static_cast<int>(op.op_));
}

double premul_factor(const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    return 1.0;
  }
  auto* s = static_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK_VALUE(s, "PREMUL_SUM without a factor");
  return s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
}

std::vector<size_t> offsets_of(const std::vector<size_t>& bytes) {
  std::vector<size_t> offsets(bytes.size());
  for (size_t p = 1; p < bytes.size(); p++) {
    offsets[p] = offsets[p - 1] + bytes[p - 1];
  }
  return offsets;
}

class TpuDistBackend;

// The live backends, so that their threads can be stopped before the interpreter finalizes (a
// thread that drops a tensor's last reference there needs the GIL, which is gone).
std::mutex live_mutex;
std::set<TpuDistBackend*> live;

class TpuDistBackend final : public TpuDistBase {
 public:
  TpuDistBackend(const std::string& segment, int rank, int size, std::chrono::milliseconds timeout,
                 std::string group)
      : TpuDistBase(rank, size), timeout_(timeout), group_(std::move(group)) {
    check(tpu_comm_open(segment.c_str(), rank, size, timeout_ms(), &comm_));
    tpu_status st = tpu_comm_barrier(comm_, timeout_ms());
    if (rank == 0) {
      tpu_comm_unlink(segment.c_str());
    }
    if (st != TPU_OK) {
      tpu_comm_close(comm_);
      comm_ = nullptr;
      throw_status(st, context("init").c_str());
    }
    std::lock_guard<std::mutex> lock(live_mutex);
    live.insert(this);
  }
  ~TpuDistBackend() override {
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live.erase(this);
    }
    stop_threads();
    tpu_comm_close(comm_);
  }

  // Runs what the threads have queued, then joins them; a later collective starts them again.
  void stop_threads() {
    std::unique_ptr<TaskThread> sender, collectives;
    {
      std::lock_guard<std::mutex> lock(threads_mutex_);
      sender = std::move(sender_);
      collectives = std::move(collectives_);
    }
    sender.reset();
    collectives.reset();
  }

  // Stops the threads of every live backend (at interpreter exit).
  static void stop_all_threads() {
    std::lock_guard<std::mutex> lock(live_mutex);
    for (TpuDistBackend* backend : live) {
      backend->stop_threads();
    }
  }

  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    at::Tensor t = single(tensors, "broadcast");
    return launch(c10d::OpType::BROADCAST, tensors, {},
                  [this, t, root = static_cast<int>(opts.rootRank), timeout = opts.timeout] {
                    Staged s({t}, true);
                    run("broadcast", {&s}, [&] {
                      return tpu_comm_broadcast(comm_, s.buf(), root, timeout_ms(timeout));
                    });
                  });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    at::Tensor t = single(tensors, "reduce");
    return launch(c10d::OpType::REDUCE, tensors, {}, [this, t, opts] {
      Staged s({t}, true);
      run("reduce", {&s}, [&] {
        return tpu_comm_reduce(comm_, s.buf(), s.buf(), static_cast<int>(opts.rootRank),
                               to_core_dtype(t.scalar_type()), reduce_op_of(opts.reduceOp),
                               premul_factor(opts.reduceOp), timeout_ms(opts.timeout));
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    int root = static_cast<int>(opts.rootRank);
    std::vector<at::Tensor> outs = getRank() == root ? outputs.at(0) : std::vector<at::Tensor>{};
    at::Tensor input = single(inputs, "gather");
    return launch(c10d::OpType::GATHER, outs, inputs,
                  [this, input, outs, root, timeout = opts.timeout] {
                    Staged in({input}, false);
                    Staged out(outs, true);
                    run("gather", {&in, &out}, [&] {
                      return tpu_comm_gather(comm_, in.buf(), out.buf(), root,
                                             timeout_ms(timeout));
                    });
                  });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    int root = static_cast<int>(opts.rootRank);
    std::vector<at::Tensor> ins = getRank() == root ? inputs.at(0) : std::vector<at::Tensor>{};
    at::Tensor output = single(outputs, "scatter");
    return launch(c10d::OpType::SCATTER, outputs, ins,
                  [this, ins, output, root, timeout = opts.timeout] {
                    Staged in(ins, false);
                    Staged out({output}, true);
                    run("scatter", {&in, &out}, [&] {
                      return tpu_comm_scatter(comm_, in.buf(), out.buf(), root,
                                              timeout_ms(timeout));
                    });
                  });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    return launch(c10d::OpType::BARRIER, {}, {}, [this, timeout = opts.timeout] {
      run("barrier", {}, [&] { return tpu_comm_barrier(comm_, timeout_ms(timeout)); });
    });
  }

  // The tensor is copied to the host here, in order with the caller's stream; the sender thread
  // then streams that copy to the peer.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                      int /* tag */) override {
    at::Tensor host = single(tensors, "send").to(at::kCPU, /*non_blocking=*/false, /*copy=*/true)
                          .contiguous();
    auto future = new_future();
    int64_t timeout = timeout_ms();
    std::string where = context("send");
    std::lock_guard<std::mutex> lock(threads_mutex_);
    if (!sender_) {
      sender_ = std::make_unique<TaskThread>();
    }
    sender_->post([this, host, future, dst, timeout, where, tensors] {
      tpu_comm_buf buf = tpu_comm_host_buf(host.data_ptr(), host.numel() * host.element_size());
      tpu_status st = tpu_comm_send(comm_, &buf, dst, timeout);
      if (st == TPU_OK) {
        future->markCompleted(c10::IValue(tensors));
        return;
      }
      try {
        throw_status(st, where.c_str());
      } catch (...) {
        future->setError(std::current_exception());
      }
    });
    count_launch();
    return c10::make_intrusive<FutureWork>(getRank(), c10d::OpType::SEND, future);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src,
                                      int /* tag */) override {
    at::Tensor t = single(tensors, "recv");
    return launch(c10d::OpType::RECV, tensors, {}, [this, t, src] {
      Staged s({t}, true);
      run("recv", {&s}, [&] { return tpu_comm_recv(comm_, s.buf(), src, timeout_ms()); });
    });
  }

 protected:
  // Runs `body` on the communication thread after the work queued so far on the current stream
  // of the tensors' device; here instead in debug mode (errors raise at the call), when the
  // communication thread itself calls (a future's callback), which must not wait for itself, and
  // for a small collective when neither the stream nor the thread has work queued.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::vector<at::Tensor> outputs,
                                        const std::vector<at::Tensor>& inputs,
                                        std::function<void()> body) override {
    std::optional<c10::DeviceIndex> device = device_of(outputs, inputs);
    tpu_stream* producer = device ? current_core_stream(*device) : nullptr;
    if (tpu_submit_blocks(producer) || on_communication_thread()) {
      body();
      return done(type, std::move(outputs));
    }
    uint64_t ready = 0;
    if (producer) {
      check(tpu_fused_flush(producer, TPU_CUT_EVENT));
      ready = tpu_stream_submitted(producer);
    }
    // A small collective with nothing to wait for runs here: handing it to the thread and back
    // would cost more than it does.
    if (bytes_of(outputs) + bytes_of(inputs) <= kInlineBytes &&
        (!producer || tpu_stream_query(producer)) && communication_idle()) {
      body();
      return done(type, std::move(outputs));
    }
    std::optional<c10::Stream> stream;
    if (device) {
      stream = communication_stream(*device);
    }
    auto future = new_future();
    std::lock_guard<std::mutex> lock(threads_mutex_);
    if (!collectives_) {
      collectives_ = std::make_unique<TaskThread>();
    }
    collectives_->post([producer, ready, stream, outputs, body = std::move(body), future]() mutable {
      std::exception_ptr error;
      try {
        if (producer) {
          tpu_stream_wait_for(producer, ready);
        }
        OnStream on(stream);
        body();
      } catch (...) {
        error = std::current_exception();
      }
      body = nullptr; // its tensors are released before the caller can go on
      if (error) {
        future->setError(error);
      } else {
        future->markCompleted(c10::IValue(std::move(outputs)));
      }
    });
    count_launch();
    return c10::make_intrusive<FutureWork>(getRank(), type, future);
  }

 private:
  // Collectives up to this size (inputs and outputs) may run on the calling thread.
  static constexpr size_t kInlineBytes = 64 << 10;

  static size_t bytes_of(const std::vector<at::Tensor>& tensors) {
    size_t bytes = 0;
    for (const at::Tensor& t : tensors) {
      bytes += static_cast<size_t>(t.numel()) * t.element_size();
    }
    return bytes;
  }

  bool communication_idle() {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    return !collectives_ || collectives_->idle();
  }

  bool on_communication_thread() {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    return collectives_ && collectives_->runs_here();
  }

  c10::Stream communication_stream(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    auto found = streams_.find(device);
    if (found == streams_.end()) {
      found = streams_.emplace(device, new_stream(device, 0)).first;
    }
    return found->second;
  }

  int64_t timeout_ms(std::chrono::milliseconds given = c10d::kUnsetTimeout) const {
    return (given == c10d::kUnsetTimeout ? timeout_ : given).count();
  }

  std::string context(const char* what) const {
    return c10::str("tpu_dist ", what, " in group '", group_, "' (rank ", getRank(), " of ",
                    getSize(), ")");
  }

  // Runs one collective on the communicator, one at a time, and turns its failure (a staging
  // copy's exception first) into the exception PyTorch raises.
  template <typename F>
  void run(const char* what, std::initializer_list<Staged*> sides, F&& collective) {
    std::lock_guard<std::mutex> lock(mutex_);
    tpu_status st = collective();
    for (Staged* s : sides) {
      s->finish();
    }
    if (st != TPU_OK) {
      throw_status(st, context(what).c_str());
    }
  }

  void all_reduce(const at::Tensor& t, const c10d::ReduceOp& op, Ms timeout) override {
    Staged s({t}, true);
    run("all_reduce", {&s}, [&] {
      return tpu_comm_all_reduce(comm_, s.buf(), s.buf(), to_core_dtype(t.scalar_type()),
                                 reduce_op_of(op), premul_factor(op), timeout_ms(timeout));
    });
  }

  void all_gather(const std::vector<at::Tensor>& outputs, const at::Tensor& input,
                  Ms timeout) override {
    for (const at::Tensor& o : outputs) {
      check_same_dtype(o, input);
    }
    Staged in({input}, false);
    Staged out(outputs, true);
    run("all_gather", {&in, &out}, [&] {
      return tpu_comm_all_gather(comm_, in.buf(), out.buf(), timeout_ms(timeout));
    });
  }

  void reduce_scatter_into(const at::Tensor& output, const std::vector<at::Tensor>& inputs,
                           const c10d::ReduceScatterOptions& opts) override {
    for (const at::Tensor& i : inputs) {
      check_same_dtype(output, i);
    }
    Staged in(inputs, false);
    Staged out({output}, true);
    run("reduce_scatter", {&in, &out}, [&] {
      return tpu_comm_reduce_scatter(comm_, in.buf(), out.buf(), to_core_dtype(output.scalar_type()),
                                     reduce_op_of(opts.reduceOp), premul_factor(opts.reduceOp),
                                     timeout_ms(opts.timeout));
    });
  }

  void all_to_all(const std::vector<at::Tensor>& inputs, const std::vector<size_t>& send,
                  const std::vector<at::Tensor>& outputs, const std::vector<size_t>& recv,
                  Ms timeout) override {
    Staged in(inputs, false);
    Staged out(outputs, true);
    std::vector<size_t> send_offsets = offsets_of(send), recv_offsets = offsets_of(recv);
    run("all_to_all", {&in, &out}, [&] {
      return tpu_comm_all_to_all(comm_, in.buf(), send_offsets.data(), send.data(), out.buf(),
                                 recv_offsets.data(), recv.data(), timeout_ms(timeout));
    });
  }

  tpu_comm* comm_ = nullptr;
  std::chrono::milliseconds timeout_;
  std::string group_;
  std::mutex mutex_;
  std::mutex threads_mutex_; // guards the two threads' start and the streams below
  std::unique_ptr<TaskThread> sender_;      // started by the first send
  std::unique_ptr<TaskThread> collectives_; // started by the first asynchronous collective
  std::map<c10::DeviceIndex, c10::Stream> streams_; // the communication thread's, per device
};

} // namespace

void register_dist(pybind11::module& m) {
  pybind11::class_<TpuDistBackend, c10d::Backend, c10::intrusive_ptr<TpuDistBackend>>(
      m, "_TpuDistBackend")
      .def(pybind11::init([](const std::string& segment, int rank, int size, double timeout_s,
                             const std::string& group) {
             return c10::make_intrusive<TpuDistBackend>(
                 segment, rank, size,
                 std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0)), group);
           }),
           pybind11::call_guard<pybind11::gil_scoped_release>());
  m.def("_tpu_dist_stop_threads", &TpuDistBackend::stop_all_threads,
        pybind11::call_guard<pybind11::gil_scoped_release>());
}

} // namespace torch_tpu
