// What a torch.compile graph does on the device, noted while it is recorded for the first time, so
// that later calls replay its op calls with their own buffers (TpuReplay.h) instead of running the
// graph's Python code and the dispatcher again. The runtime's hooks below note, for the calling
// thread's active capture, each op call launched, each storage allocated, and anything a replay
// could not repeat (a host read, random numbers, events, another stream), which makes the capture
// unusable. Random ops drawing from the chip's default generator are noted too: a replay draws
// new Philox arguments for them.
#pragma once

#include <vector>

#include "core/include/tpu.h"

namespace torch_tpu {

// One thread's notes on one compiled graph's recording.
struct CaptureLog {
  explicit CaptureLog(tpu_stream* stream) : stream(stream) {}
  ~CaptureLog();
  CaptureLog(const CaptureLog&) = delete;
  CaptureLog& operator=(const CaptureLog&) = delete;

  tpu_stream* stream;                 // the stream the graph is recorded on
  std::vector<tpu_op_call*> calls;    // copies of the calls launched, in order (owned)
  std::vector<tpu_buffer*> allocated; // buffers allocated meanwhile, each retained
  std::vector<size_t> random_calls;   // calls holding Philox arguments in scalars[2] and [3]
  const char* unusable = nullptr;     // why the capture cannot be replayed (a literal), or null
  // The Philox arguments drawn for the next call (capture_random), and whether there are some.
  uint64_t seed = 0, offset = 0;
  bool drawn = false;
};

// Makes `log` the calling thread's active capture (nullptr: none); returns the one before.
CaptureLog* set_active_capture(CaptureLog* log);

// Hooks for the runtime, each a no-op without an active capture (launches reach the capture through
// the core's submission observer). A storage's new buffer:
void capture_allocation(tpu_buffer* buffer) noexcept;
// Philox arguments drawn for the op call about to be launched, from the chip's default generator
// when `default_generator` (the only one a replay can draw from again):
void capture_random(uint64_t seed, uint64_t offset, bool default_generator) noexcept;
// Something a replay would not repeat (`what`, a string literal, says what):
void capture_unusable(const char* what) noexcept;

} // namespace torch_tpu
