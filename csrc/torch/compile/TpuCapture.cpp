#include "compile/TpuCapture.h"

#include <new>

namespace torch_tpu {
namespace {

thread_local CaptureLog* active = nullptr;

void mark_unusable(CaptureLog* log, const char* why) {
  if (!log->unusable) {
    log->unusable = why;
  }
}

} // namespace

CaptureLog::~CaptureLog() {
  for (tpu_op_call* call : calls) {
    tpu_op_call_free(call);
  }
  for (tpu_buffer* buffer : allocated) {
    tpu_buffer_release(buffer);
  }
}

namespace {

// Notes an op call about to be launched on `stream` (before the core takes it over).
void capture_launch(tpu_stream* stream, const tpu_op_call* call) noexcept {
  CaptureLog* log = active;
  if (!log || log->unusable) {
    return;
  }
  if (stream != log->stream) {
    mark_unusable(log, "an op on another stream");
    return;
  }
  bool random = log->drawn;
  log->drawn = false;
  // A random op's call holds its Philox arguments in scalars[2] and [3] (ops/TpuRandom.cpp).
  if (random && (call->scalars[2].u != log->seed || call->scalars[3].u != log->offset)) {
    mark_unusable(log, "random numbers drawn for another use");
    return;
  }
  tpu_op_call* copy = tpu_op_call_clone(call);
  try {
    if (copy) {
      if (random) {
        log->random_calls.push_back(log->calls.size());
      }
      log->calls.push_back(copy);
      return;
    }
  } catch (const std::bad_alloc&) {
    tpu_op_call_free(copy);
  }
  mark_unusable(log, "out of host memory");
}

// The core tells of every submission (exec/tpu_submit.h): a launch is noted, a host read spoils
// the capture.
void observe_submission(tpu_stream* stream, const tpu_op_call* call, bool sync) {
  if (sync) {
    capture_unusable("a host read");
  } else {
    capture_launch(stream, call);
  }
}

} // namespace

CaptureLog* set_active_capture(CaptureLog* log) {
  tpu_submit_set_observer(observe_submission);
  CaptureLog* before = active;
  active = log;
  return before;
}

void capture_allocation(tpu_buffer* buffer) noexcept {
  CaptureLog* log = active;
  if (!log || log->unusable) {
    return;
  }
  try {
    log->allocated.push_back(buffer);
    // Retained so that its address cannot name another buffer before the capture ends.
    tpu_buffer_retain(buffer);
  } catch (const std::bad_alloc&) {
    mark_unusable(log, "out of host memory");
  }
}

void capture_random(uint64_t seed, uint64_t offset, bool default_generator) noexcept {
  CaptureLog* log = active;
  if (!log || log->unusable) {
    return;
  }
  if (!default_generator || log->drawn) {
    mark_unusable(log, default_generator ? "random numbers drawn twice for one op"
                                         : "random numbers from a generator of its own");
    return;
  }
  log->seed = seed;
  log->offset = offset;
  log->drawn = true;
}

void capture_unusable(const char* what) noexcept {
  if (active) {
    mark_unusable(active, what);
  }
}

} // namespace torch_tpu
