// Launching elementwise core calls: inputs (tpu tensors, CPU scalars, numbers), outputs, the
// compute dtype and the op's scalar parameters.
#include "ops/TpuElementwise.h"

#include <ATen/Dispatch_v2.h>

#include "core/include/tpu.h"

namespace torch_tpu::ew {
namespace {

// Scalar operands live in the call's top slots; parameters take slots 0..3.
constexpr int kFirstOperandSlot = TPU_OP_MAX_SCALARS - 1;

void set_number(tpu_op_call* call, int index, const at::Scalar& s) {
  tpu_scalar v{};
  bool is_float = s.isFloatingPoint();
  TORCH_CHECK(!s.isComplex(), "complex scalars are not supported by tpu elementwise kernels");
  if (is_float) {
    v.f = s.toDouble();
  } else {
    v.i = s.isBoolean() ? static_cast<int64_t>(s.toBool()) : s.toLong();
  }
  tpu_op_set_scalar_input(call, index, kFirstOperandSlot - index, v, is_float);
}

void set_input(tpu_op_call* call, int index, const Input& in) {
  if (in.scalar) {
    set_number(call, index, *in.scalar);
  } else if (in.tensor->is_cpu()) {
    // A CPU 0-dim tensor is a scalar (the metas refuse any other CPU tensor): its value travels in
    // the call, so the asynchronous kernel never reads host memory that may be gone by then.
    set_number(call, index, at::Tensor(*in.tensor).item());
  } else {
    call->tensors[index] = core_view(at::Tensor(*in.tensor));
  }
}

// Stores a parameter as the kernels read it: .f for floating compute dtypes, .i otherwise.
void set_param(tpu_op_call* call, int slot, const Param& p, at::ScalarType compute) {
  const bool floating = at::isFloatingType(compute);
  if (p.kind == Param::kCast && floating) {
    call->scalars[slot].f = p.value.toDouble(); // the kernel's conversion casts it
    return;
  }
  if (p.kind == Param::kOpmath && at::isReducedFloatingType(compute)) {
    call->scalars[slot].f = static_cast<double>(p.value.to<float>());
    return;
  }
  AT_DISPATCH_V2(compute, "tpu_elementwise_param", AT_WRAP([&] {
    scalar_t v = p.value.to<scalar_t>(); // checks for overflow, as PyTorch's kernels do
    if (floating) {
      call->scalars[slot].f = static_cast<double>(v);
    } else {
      call->scalars[slot].i = static_cast<int64_t>(v);
    }
  }), AT_EXPAND(AT_ALL_TYPES), at::kBool, at::kHalf, at::kBFloat16);
}

// Raises what a kernel that does not exist for the call's dtypes raises (NotImplementedError),
// when no driver can run it.
void refuse_unless_runnable(tpu_op_call* call) {
  check(tpu_op_route(call));
}

// Stores the parameters in the call's scalar slots from 0 on and launches the call; an op without
// elements stops after the checks, which PyTorch's kernels make for empty tensors too. A dtype no
// driver runs the op in is refused before a parameter's conversion can fail: PyTorch's kernels
// dispatch on the dtype first, so leaky_relu of uint8 is "not implemented", whatever its slope.
void finish(OpCall call, std::initializer_list<Param> params, at::ScalarType compute,
            const at::TensorBase& out0) {
  try {
    int slot = 0;
    for (const Param& p : params) {
      set_param(call, slot++, p, compute);
    }
  } catch (...) {
    refuse_unless_runnable(call);
    throw;
  }
  if (out0.numel() == 0) {
    refuse_unless_runnable(call);
    return;
  }
  launch(out0.device().index(), std::move(call));
}

} // namespace

bool is_native(at::ScalarType type) {
  switch (type) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
      return true;
    default:
      return false;
  }
}

bool is_native(const at::TensorIteratorBase& it) {
  if (!is_native(it.common_dtype())) {
    return false;
  }
  for (int i = 0; i < it.ntensors(); i++) {
    if (!is_native(it.tensor_base(i).scalar_type())) {
      return false;
    }
  }
  return true;
}

void run(tpu_op_id op, at::ScalarType compute, std::initializer_list<Input> inputs,
         std::initializer_list<const at::TensorBase*> outputs,
         std::initializer_list<Param> params) {
  OpCall call = new_call(op, static_cast<int>(inputs.size()), static_cast<int>(outputs.size()));
  call->compute = to_core_dtype(compute);
  int k = 0;
  for (const Input& in : inputs) {
    set_input(call, k++, in);
  }
  for (const at::TensorBase* out : outputs) {
    call->tensors[k++] = core_view(at::Tensor(*out));
  }
  finish(std::move(call), params, compute, **outputs.begin());
}

void run(tpu_op_id op, const at::TensorIteratorBase& it, std::initializer_list<Param> params) {
  const int n_in = it.ninputs(), n_out = it.noutputs();
  const at::ScalarType compute = it.common_dtype();
  OpCall call = new_call(op, n_in, n_out);
  call->compute = to_core_dtype(compute);
  for (int i = 0; i < n_in; i++) {
    set_input(call, i, Input(it.input_base(i)));
  }
  for (int i = 0; i < n_out; i++) {
    call->tensors[n_in + i] = core_view(at::Tensor(it.output_base(i)));
  }
  finish(std::move(call), params, compute, it.output_base(0));
}

} // namespace torch_tpu::ew
