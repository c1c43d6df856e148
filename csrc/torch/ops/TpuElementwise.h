// The binding of the elementwise family: translates an ATen elementwise op into one call of a core
// op (contract in core/ops/tpu_ops_elementwise.h). Structured ops get their output and common
// dtype from ATen's own TensorIterator meta; `Structured` turns one run function into the
// functional, in-place and out= kernels, so each op is a line of registration.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"
#include "runtime/TpuCore.h"

namespace torch_tpu::ew {

// A scalar parameter of an op (alpha, a threshold...). PyTorch converts most parameters to the
// compute dtype (`.to<scalar_t>()`: round, refusing a value out of its range), activations of
// float16/bfloat16 read theirs at float precision (`.to<opmath_t>()`: opmath), and a few kernels
// cast theirs (`static_cast<scalar_t>`: cast, a value out of range becoming infinite).
struct Param {
  enum Kind { kRound, kOpmath, kCast };
  const at::Scalar& value;
  Kind kind = kRound;
};
inline Param opmath(const at::Scalar& value) {
  return {value, Param::kOpmath};
}
inline Param cast(const at::Scalar& value) {
  return {value, Param::kCast};
}

// An input of a core call: a tensor (tpu, or a CPU 0-dim scalar) or a number.
struct Input {
  Input(const at::TensorBase& t) : tensor(&t) {}
  Input(const at::Scalar& s) : scalar(&s) {}
  const at::TensorBase* tensor = nullptr;
  const at::Scalar* scalar = nullptr;
};

// Launches `op` computing in `compute` over the inputs and outputs (outputs already sized).
void run(tpu_op_id op, at::ScalarType compute, std::initializer_list<Input> inputs,
         std::initializer_list<const at::TensorBase*> outputs,
         std::initializer_list<Param> params = {});

// Launches `op` over a TensorIterator meta's inputs and outputs, in its common dtype.
void run(tpu_op_id op, const at::TensorIteratorBase& it, std::initializer_list<Param> params = {});

// True when the kernels compute on `type` (bool, integers and real floats).
bool is_native(at::ScalarType type);

// True when every operand of the meta has a native dtype; otherwise the op runs on the host.
bool is_native(const at::TensorIteratorBase& it);

// A tpu tensor's host copy; anything else unchanged.
inline at::Tensor to_host(const at::Tensor& t) {
  return t.defined() && t.is_privateuseone() ? t.to(at::kCPU) : t;
}
template <typename T,
          typename = std::enable_if_t<!std::is_base_of_v<at::TensorBase, std::decay_t<T>>>>
T&& to_host(T&& v) {
  return std::forward<T>(v);
}

// The typed handle of an ATen operator, e.g. "add.Tensor".
template <typename Sig>
c10::TypedOperatorHandle<Sig> typed_op(const char* name) {
  std::string full = name;
  size_t dot = full.find('.');
  std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow(("aten::" + full.substr(0, dot)).c_str(), overload.c_str())
      .template typed<Sig>();
}

// Functional, in-place and out= kernels of a structured TensorIterator op from its meta and a
// run function `Run(iterator, args...)` that launches the core op. Operands of a dtype the kernels
// do not compute on (complex, storage-only) run the functional op on the host, counted as a
// fallback of `Name`, and the result is copied into place.
template <typename Meta, const char* Name, auto Run>
struct Structured;

template <typename Meta, const char* Name, typename... Rest,
          void (*Run)(const at::TensorIteratorBase&, const at::Tensor&, Rest...)>
struct Structured<Meta, Name, Run> {
  static void host(const at::Tensor& dst, const at::Tensor& self, Rest... rest) {
    begin_host_fallback(Name);
    static auto op = typed_op<at::Tensor(const at::Tensor&, Rest...)>(Name);
    copy_into(op.call(to_host(self), to_host(rest)...), dst, false);
  }
  static void apply(Meta& it, const at::Tensor& dst, const at::Tensor& self, Rest... rest) {
    if (is_native(it)) {
      Run(it, self, rest...);
    } else {
      host(dst, self, rest...);
    }
  }
  static at::Tensor functional(const at::Tensor& self, Rest... rest) {
    Functional<Meta> it;
    it.meta(self, rest...);
    apply(it, it.outputs_[0], self, rest...);
    return std::move(it.outputs_[0]);
  }
  static at::Tensor& inplace(at::Tensor& self, Rest... rest) {
    Inplace<Meta> it(self);
    it.meta(self, rest...);
    apply(it, self, self, rest...);
    return self;
  }
  static at::Tensor& out(const at::Tensor& self, Rest... rest, at::Tensor& out) {
    Out<Meta> it(out);
    it.meta(self, rest...);
    apply(it, out, self, rest...);
    return out;
  }
};

// A run function that launches `Op` with no parameters.
template <tpu_op_id Op, typename... A>
void plain(const at::TensorIteratorBase& it, A...) {
  run(Op, it);
}

// The plain run functions of unary, binary, ternary and tensor-scalar ops.
template <tpu_op_id Op>
constexpr auto unary = &plain<Op, const at::Tensor&>;
template <tpu_op_id Op>
constexpr auto binary = &plain<Op, const at::Tensor&, const at::Tensor&>;
template <tpu_op_id Op>
constexpr auto ternary = &plain<Op, const at::Tensor&, const at::Tensor&, const at::Tensor&>;
template <tpu_op_id Op>
constexpr auto with_scalar = &plain<Op, const at::Tensor&, const at::Scalar&>;

} // namespace torch_tpu::ew

// Registers the functional, in-place and out= kernels of a structured op under their schema names
// ("" skips one); `name` is the functional op, which the host path runs.
#define TPU_EW_STRUCTURED(m, Meta, run_fn, name, functional_name, inplace_name, out_name)          \
  do {                                                                                             \
    static constexpr char name_[] = name;                                                          \
    using K_ = ::torch_tpu::ew::Structured<Meta, name_, run_fn>;                                   \
    if (*(functional_name)) {                                                                      \
      m.impl(functional_name, TORCH_FN(K_::functional));                                           \
    }                                                                                              \
    if (*(inplace_name)) {                                                                         \
      m.impl(inplace_name, TORCH_FN(K_::inplace));                                                 \
    }                                                                                              \
    if (*(out_name)) {                                                                             \
      m.impl(out_name, TORCH_FN(K_::out));                                                         \
    }                                                                                              \
  } while (0)

// The common case: `op` (e.g. "add.Tensor") with in-place `op_` and out= `op.out` names given.
#define TPU_EW_OP(m, Meta, run_fn, functional_name, inplace_name, out_name)                        \
  TPU_EW_STRUCTURED(m, Meta, run_fn, functional_name, functional_name, inplace_name, out_name)
