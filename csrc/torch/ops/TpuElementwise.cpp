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

// Refuses a dtype the driver cannot run the op in with the exception CPU raises, before the
// parameters are converted to that dtype: PyTorch's kernels dispatch on the dtype first, so
// leaky_relu of uint8 is "not implemented", whatever its slope. Takes the call when it throws.
void check_supported(tpu_op_call* call, at::ScalarType compute) {
  if (!tpu_op_supported(call)) {
    tpu_op_id op = call->op;
    tpu_op_call_free(call);
    TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", tpu_op_name(op), "\" not implemented for '",
                                c10::toString(compute), "' on tpu");
  }
}

// Launches the call; an op without elements stops after the checks, which PyTorch's kernels make
// for empty tensors too. Takes the call in every case.
void launch_unless_empty(tpu_op_call* call, const at::TensorBase& out0) {
  if (out0.numel() == 0) {
    tpu_op_call_free(call);
    return;
  }
  launch(out0.device().index(), call);
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

// Stores the parameters in the call's scalar slots from 0 on. Takes the call when it throws.
void set_params(tpu_op_call* call, std::initializer_list<Param> params, at::ScalarType compute) {
  try {
    int slot = 0;
    for (const Param& p : params) {
      set_param(call, slot++, p, compute);
    }
  } catch (...) {
    tpu_op_call_free(call);
    throw;
  }
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
  const at::TensorBase& out0 = **outputs.begin();
  const int n_in = static_cast<int>(inputs.size());
  tpu_op_call* call = new_call(op, n_in, static_cast<int>(outputs.size()));
  call->compute = to_core_dtype(compute);
  try {
    int k = 0;
    for (const Input& in : inputs) {
      set_input(call, k++, in);
    }
    for (const at::TensorBase* out : outputs) {
      call->tensors[k++] = core_view(at::Tensor(*out));
    }
  } catch (...) {
    tpu_op_call_free(call);
    throw;
  }
  check_supported(call, compute);
  set_params(call, params, compute);
  launch_unless_empty(call, out0);
}

void run(tpu_op_id op, const at::TensorIteratorBase& it, std::initializer_list<Param> params) {
  const at::TensorBase& out0 = it.output_base(0);
  const int n_in = it.ninputs(), n_out = it.noutputs();
  const at::ScalarType compute = it.common_dtype();
  tpu_op_call* call = new_call(op, n_in, n_out);
  call->compute = to_core_dtype(compute);
  try {
    for (int i = 0; i < n_in; i++) {
      set_input(call, i, Input(it.input_base(i)));
    }
    for (int i = 0; i < n_out; i++) {
      call->tensors[n_in + i] = core_view(at::Tensor(it.output_base(i)));
    }
  } catch (...) {
    tpu_op_call_free(call);
    throw;
  }
  check_supported(call, compute);
  set_params(call, params, compute);
  launch_unless_empty(call, out0);
}

} // namespace torch_tpu::ew
