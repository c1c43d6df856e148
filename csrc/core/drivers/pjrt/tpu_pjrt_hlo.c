#include "drivers/pjrt/tpu_pjrt_hlo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *elem_name(tpu_hlo_elem e) {
  switch (e) {
  case TPU_BOOL: return "i1";
  case TPU_UINT8: return "ui8";
  case TPU_INT8: return "i8";
  case TPU_INT16: return "i16";
  case TPU_INT32: return "i32";
  case TPU_INT64: return "i64";
  case TPU_FLOAT16: return "f16";
  case TPU_BFLOAT16: return "bf16";
  case TPU_FLOAT32: return "f32";
  case TPU_FLOAT64: return "f64";
  case TPU_COMPLEX64: return "complex<f32>";
  case TPU_COMPLEX128: return "complex<f64>";
  case TPU_UINT16: return "ui16";
  case TPU_UINT32: return "ui32";
  case TPU_UINT64: return "ui64";
  case TPU_FLOAT8_E4M3FN: return "f8E4M3FN";
  case TPU_FLOAT8_E5M2: return "f8E5M2";
  case TPU_DTYPE_COUNT: break;
  }
  return "none";
}

/* Appends formatted text to a growing string; on failure marks the emitter failed. */
static void emit_to(tpu_hlo *h, char **buf, size_t *len, size_t *cap, const char *fmt,
                    va_list ap) {
  if (h->failed)
    return;
  for (;;) {
    va_list copy;
    va_copy(copy, ap);
    size_t room = *cap - *len;
    int n = *buf ? vsnprintf(*buf + *len, room, fmt, copy) : -2;
    va_end(copy);
    if (n == -1) {
      h->failed = true;
      return;
    }
    if (n >= 0 && (size_t)n < room) {
      *len += (size_t)n;
      return;
    }
    size_t need = *len + (n > 0 ? (size_t)n : 0) + 1;
    size_t cap2 = *cap ? *cap * 2 : 4096;
    while (cap2 < need)
      cap2 *= 2;
    char *grown = realloc(*buf, cap2);
    if (!grown) {
      h->failed = true;
      return;
    }
    *buf = grown;
    *cap = cap2;
  }
}

static void append(tpu_hlo *h, char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_to(h, buf, len, cap, fmt, ap);
  va_end(ap);
}

static void emit(tpu_hlo *h, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_to(h, &h->body, &h->len, &h->cap, fmt, ap);
  va_end(ap);
}

/* The value's type, e.g. "tensor<2x3xf32>", into buf (at least 32 + 21 per dimension bytes). */
static const char *type_of(const tpu_hlo_value *v, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "tensor<");
  for (int i = 0; i < v->rank && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%lldx", (long long)v->dims[i]);
  if (used < len)
    snprintf(buf + used, len - used, "%s>", elem_name(v->elem));
  return buf;
}

#define TYPE_LEN (48 + 21 * (TPU_MAX_DIMS + 1))

static void emit_type(tpu_hlo *h, const tpu_hlo_value *v) {
  char t[TYPE_LEN];
  emit(h, "%s", type_of(v, t, sizeof t));
}

static void emit_name(tpu_hlo *h, const tpu_hlo_value *v) {
  emit(h, "%%%c%d", v->arg ? 'a' : 'v', v->id);
}

static void emit_i64s(tpu_hlo *h, const char *attr, const int64_t *xs, int n) {
  emit(h, "%s = array<i64", attr);
  for (int i = 0; i < n; i++)
    emit(h, "%s %lld", i ? "," : ":", (long long)xs[i]);
  emit(h, ">");
}

static tpu_hlo_value new_value(tpu_hlo *h, tpu_hlo_elem elem, int rank, const int64_t *dims) {
  tpu_hlo_value v = {.id = h->next_id++, .elem = elem, .rank = rank};
  if (rank > 0)
    memcpy(v.dims, dims, (size_t)rank * sizeof *dims);
  return v;
}

/* Writes "  %vN = "<op>"(operands) {attrs} : (types) -> result" up to the attributes: the caller
 * adds them (or nothing) and calls end_op. */
static void begin_op(tpu_hlo *h, const tpu_hlo_value *result, const char *op,
                     const tpu_hlo_value *const *operands, int n) {
  emit(h, "    ");
  emit_name(h, result);
  emit(h, " = \"%s\"(", op);
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_name(h, operands[i]);
  }
  emit(h, ")");
}

static void end_op(tpu_hlo *h, const tpu_hlo_value *result, const tpu_hlo_value *const *operands,
                   int n) {
  emit(h, " : (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, operands[i]);
  }
  emit(h, ") -> ");
  emit_type(h, result);
  emit(h, "\n");
}

static tpu_hlo_value simple_op(tpu_hlo *h, const char *op, const tpu_hlo_value *const *operands,
                               int n, tpu_hlo_value result) {
  begin_op(h, &result, op, operands, n);
  end_op(h, &result, operands, n);
  return result;
}

void tpu_hlo_init(tpu_hlo *h) {
  memset(h, 0, sizeof *h);
  for (int i = 0; i < TPU_HLO_MAX_ARGS; i++)
    h->arg_alias[i] = -1;
}

void tpu_hlo_free(tpu_hlo *h) {
  free(h->body);
  h->body = NULL;
}

tpu_hlo_value tpu_hlo_arg(tpu_hlo *h, tpu_hlo_elem elem, int rank, const int64_t *dims,
                          int alias) {
  tpu_hlo_value v = {.id = h->n_args, .arg = true, .elem = elem, .rank = rank};
  if (rank > 0)
    memcpy(v.dims, dims, (size_t)rank * sizeof *dims);
  if (h->n_args == TPU_HLO_MAX_ARGS) {
    h->failed = true;
    return v;
  }
  h->arg_alias[h->n_args] = alias;
  h->args[h->n_args++] = v;
  return v;
}

void tpu_hlo_result(tpu_hlo *h, tpu_hlo_value v) {
  if (h->n_results == TPU_HLO_MAX_RESULTS)
    h->failed = true;
  else
    h->results[h->n_results++] = v;
}

tpu_status tpu_hlo_finish(tpu_hlo *h, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  char *out = NULL;
  size_t n = 0, cap = 0;
  char t[TYPE_LEN];
  append(h, &out, &n, &cap, "module @torch_tpu {\n  func.func public @main(");
  for (int i = 0; i < h->n_args; i++) {
    append(h, &out, &n, &cap, "%s%%a%d: %s", i ? ", " : "", i,
           type_of(&h->args[i], t, sizeof t));
    if (h->arg_alias[i] >= 0)
      append(h, &out, &n, &cap, " {tf.aliasing_output = %d : i32}", h->arg_alias[i]);
  }
  append(h, &out, &n, &cap, ") -> (");
  for (int i = 0; i < h->n_results; i++)
    append(h, &out, &n, &cap, "%s%s", i ? ", " : "", type_of(&h->results[i], t, sizeof t));
  append(h, &out, &n, &cap, ") {\n%s    func.return ", h->body ? h->body : "");
  for (int i = 0; i < h->n_results; i++)
    append(h, &out, &n, &cap, "%s%%%c%d", i ? ", " : "", h->results[i].arg ? 'a' : 'v',
           h->results[i].id);
  append(h, &out, &n, &cap, " : ");
  for (int i = 0; i < h->n_results; i++)
    append(h, &out, &n, &cap, "%s%s", i ? ", " : "", type_of(&h->results[i], t, sizeof t));
  append(h, &out, &n, &cap, "\n  }\n}\n");
  if (h->failed) {
    free(out);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a StableHLO module");
  }
  *text = out;
  *len = n;
  return TPU_OK;
}

tpu_hlo_value tpu_hlo_constant(tpu_hlo *h, tpu_hlo_elem elem, const char *literal) {
  tpu_hlo_value v = new_value(h, elem, 0, NULL);
  emit(h, "    ");
  emit_name(h, &v);
  emit(h, " = stablehlo.constant dense<%s> : ", literal);
  emit_type(h, &v);
  emit(h, "\n");
  return v;
}

tpu_hlo_value tpu_hlo_iota(tpu_hlo *h, tpu_hlo_elem elem, int64_t n) {
  tpu_hlo_value v = new_value(h, elem, 1, &n);
  emit(h, "    ");
  emit_name(h, &v);
  emit(h, " = \"stablehlo.iota\"() {iota_dimension = 0 : i64} : () -> ");
  emit_type(h, &v);
  emit(h, "\n");
  return v;
}

tpu_hlo_value tpu_hlo_unary(tpu_hlo *h, const char *op, tpu_hlo_value x) {
  char name[64];
  snprintf(name, sizeof name, "stablehlo.%s", op);
  const tpu_hlo_value *ops[] = {&x};
  /* is_finite answers in booleans; every other unary op keeps its operand's type. */
  tpu_hlo_elem elem = strcmp(op, "is_finite") == 0 ? TPU_BOOL : x.elem;
  return simple_op(h, name, ops, 1, new_value(h, elem, x.rank, x.dims));
}

tpu_hlo_value tpu_hlo_chlo_unary(tpu_hlo *h, const char *op, tpu_hlo_value x) {
  char name[64];
  snprintf(name, sizeof name, "chlo.%s", op);
  const tpu_hlo_value *ops[] = {&x};
  return simple_op(h, name, ops, 1, new_value(h, x.elem, x.rank, x.dims));
}

tpu_hlo_value tpu_hlo_binary(tpu_hlo *h, const char *op, tpu_hlo_value a, tpu_hlo_value b) {
  char name[64];
  snprintf(name, sizeof name, "stablehlo.%s", op);
  const tpu_hlo_value *ops[] = {&a, &b};
  return simple_op(h, name, ops, 2, new_value(h, a.elem, a.rank, a.dims));
}

tpu_hlo_value tpu_hlo_chlo_binary(tpu_hlo *h, const char *op, tpu_hlo_value a, tpu_hlo_value b) {
  char name[64];
  snprintf(name, sizeof name, "chlo.%s", op);
  const tpu_hlo_value *ops[] = {&a, &b};
  return simple_op(h, name, ops, 2, new_value(h, a.elem, a.rank, a.dims));
}

tpu_hlo_value tpu_hlo_compare(tpu_hlo *h, const char *direction, tpu_hlo_value a,
                              tpu_hlo_value b) {
  tpu_hlo_value r = new_value(h, TPU_BOOL, a.rank, a.dims);
  const tpu_hlo_value *ops[] = {&a, &b};
  begin_op(h, &r, "stablehlo.compare", ops, 2);
  emit(h, " {comparison_direction = #stablehlo<comparison_direction %s>}", direction);
  end_op(h, &r, ops, 2);
  return r;
}

tpu_hlo_value tpu_hlo_select(tpu_hlo *h, tpu_hlo_value pred, tpu_hlo_value a, tpu_hlo_value b) {
  const tpu_hlo_value *ops[] = {&pred, &a, &b};
  return simple_op(h, "stablehlo.select", ops, 3, new_value(h, a.elem, a.rank, a.dims));
}

tpu_hlo_value tpu_hlo_convert(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_elem elem) {
  if (x.elem == elem)
    return x;
  const tpu_hlo_value *ops[] = {&x};
  return simple_op(h, "stablehlo.convert", ops, 1, new_value(h, elem, x.rank, x.dims));
}

tpu_hlo_value tpu_hlo_bitcast(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_elem elem, int rank,
                              const int64_t *dims) {
  const tpu_hlo_value *ops[] = {&x};
  return simple_op(h, "stablehlo.bitcast_convert", ops, 1, new_value(h, elem, rank, dims));
}

tpu_hlo_value tpu_hlo_reshape(tpu_hlo *h, tpu_hlo_value x, int rank, const int64_t *dims) {
  if (x.rank == rank && (rank == 0 || memcmp(x.dims, dims, (size_t)rank * sizeof *dims) == 0))
    return x;
  const tpu_hlo_value *ops[] = {&x};
  return simple_op(h, "stablehlo.reshape", ops, 1, new_value(h, x.elem, rank, dims));
}

tpu_hlo_value tpu_hlo_transpose(tpu_hlo *h, tpu_hlo_value x, const int64_t *perm) {
  bool identity = true;
  int64_t dims[TPU_MAX_DIMS + 1];
  for (int i = 0; i < x.rank; i++) {
    identity &= perm[i] == i;
    dims[i] = x.dims[perm[i]];
  }
  if (identity)
    return x;
  tpu_hlo_value r = new_value(h, x.elem, x.rank, dims);
  const tpu_hlo_value *ops[] = {&x};
  begin_op(h, &r, "stablehlo.transpose", ops, 1);
  emit(h, " {");
  emit_i64s(h, "permutation", perm, x.rank);
  emit(h, "}");
  end_op(h, &r, ops, 1);
  return r;
}

tpu_hlo_value tpu_hlo_broadcast(tpu_hlo *h, tpu_hlo_value x, int rank, const int64_t *dims,
                                const int64_t *bdims) {
  if (x.rank == rank && (rank == 0 || memcmp(x.dims, dims, (size_t)rank * sizeof *dims) == 0)) {
    bool identity = true;
    for (int i = 0; i < rank; i++)
      identity &= bdims[i] == i;
    if (identity)
      return x;
  }
  tpu_hlo_value r = new_value(h, x.elem, rank, dims);
  const tpu_hlo_value *ops[] = {&x};
  begin_op(h, &r, "stablehlo.broadcast_in_dim", ops, 1);
  emit(h, " {");
  emit_i64s(h, "broadcast_dimensions", bdims, x.rank);
  emit(h, "}");
  end_op(h, &r, ops, 1);
  return r;
}

tpu_hlo_value tpu_hlo_slice(tpu_hlo *h, tpu_hlo_value x, const int64_t *start,
                            const int64_t *limit) {
  int64_t dims[TPU_MAX_DIMS + 1], ones[TPU_MAX_DIMS + 1];
  bool identity = true;
  for (int i = 0; i < x.rank; i++) {
    dims[i] = limit[i] - start[i];
    ones[i] = 1;
    identity &= start[i] == 0 && limit[i] == x.dims[i];
  }
  if (identity)
    return x;
  tpu_hlo_value r = new_value(h, x.elem, x.rank, dims);
  const tpu_hlo_value *ops[] = {&x};
  begin_op(h, &r, "stablehlo.slice", ops, 1);
  emit(h, " {");
  emit_i64s(h, "start_indices", start, x.rank);
  emit(h, ", ");
  emit_i64s(h, "limit_indices", limit, x.rank);
  emit(h, ", ");
  emit_i64s(h, "strides", ones, x.rank);
  emit(h, "}");
  end_op(h, &r, ops, 1);
  return r;
}

static const char *zero_literal(tpu_hlo_elem e) {
  return e == TPU_BOOL ? "false" : tpu_dtype_is_floating(e) ? "0.0" : "0";
}

tpu_hlo_value tpu_hlo_pad(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value value, const int64_t *low,
                          const int64_t *high, const int64_t *interior) {
  int64_t dims[TPU_MAX_DIMS + 1];
  for (int i = 0; i < x.rank; i++)
    dims[i] = low[i] + x.dims[i] + high[i] + (x.dims[i] > 0 ? (x.dims[i] - 1) * interior[i] : 0);
  tpu_hlo_value r = new_value(h, x.elem, x.rank, dims);
  const tpu_hlo_value *ops[] = {&x, &value};
  begin_op(h, &r, "stablehlo.pad", ops, 2);
  emit(h, " {");
  emit_i64s(h, "edge_padding_low", low, x.rank);
  emit(h, ", ");
  emit_i64s(h, "edge_padding_high", high, x.rank);
  emit(h, ", ");
  emit_i64s(h, "interior_padding", interior, x.rank);
  emit(h, "}");
  end_op(h, &r, ops, 2);
  return r;
}

tpu_hlo_value tpu_hlo_pad_end(tpu_hlo *h, tpu_hlo_value x, int64_t length) {
  if (x.dims[0] == length)
    return x;
  int64_t low = 0, high = length - x.dims[0], interior = 0;
  return tpu_hlo_pad(h, x, tpu_hlo_constant(h, x.elem, zero_literal(x.elem)), &low, &high,
                     &interior);
}

tpu_hlo_value tpu_hlo_update_slice(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value update,
                                   const int64_t *start) {
  tpu_hlo_value index[TPU_MAX_DIMS + 1];
  const tpu_hlo_value *ops[TPU_MAX_DIMS + 3] = {&x, &update};
  for (int i = 0; i < x.rank; i++) {
    char literal[24];
    snprintf(literal, sizeof literal, "%lld", (long long)start[i]);
    index[i] = tpu_hlo_constant(h, TPU_INT64, literal);
    ops[2 + i] = &index[i];
  }
  return simple_op(h, "stablehlo.dynamic_update_slice", ops, 2 + x.rank,
                   new_value(h, x.elem, x.rank, x.dims));
}

tpu_hlo_value tpu_hlo_dot(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b, bool sum_batches,
                          tpu_hlo_elem elem) {
  int64_t batched[3] = {a.dims[0], a.dims[1], b.dims[2]}, summed[2] = {a.dims[1], b.dims[2]};
  tpu_hlo_value r = sum_batches ? new_value(h, elem, 2, summed) : new_value(h, elem, 3, batched);
  const tpu_hlo_value *ops[] = {&a, &b};
  begin_op(h, &r, "stablehlo.dot_general", ops, 2);
  if (sum_batches)
    emit(h, " {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0, 2], "
            "rhs_contracting_dimensions = [0, 1]>");
  else
    emit(h, " {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], "
            "rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], "
            "rhs_contracting_dimensions = [1]>");
  emit(h, ", precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]}");
  end_op(h, &r, ops, 2);
  return r;
}

tpu_hlo_value tpu_hlo_convolution(tpu_hlo *h, tpu_hlo_value lhs, tpu_hlo_value rhs,
                                  const tpu_hlo_conv *c, int rank, const int64_t *dims) {
  tpu_hlo_value r = new_value(h, lhs.elem, rank, dims);
  const tpu_hlo_value *ops[] = {&lhs, &rhs};
  int n = c->spatial;
  char layout[3][48];
  for (int k = 0; k < 3; k++) { /* e.g. [b, f, 0, 1] */
    int used = snprintf(layout[k], sizeof layout[k], "[%s", c->layout[k]);
    for (int d = 0; d < n; d++)
      used += snprintf(layout[k] + used, sizeof layout[k] - (size_t)used, ", %d", d);
    snprintf(layout[k] + used, sizeof layout[k] - (size_t)used, "]");
  }
  begin_op(h, &r, "stablehlo.convolution", ops, 2);
  emit(h, " {batch_group_count = %lld : i64, dimension_numbers = #stablehlo.conv<%sx%s->%s>, "
          "feature_group_count = %lld : i64, ",
       (long long)(c->batch_groups > 1 ? c->batch_groups : 1), layout[0], layout[1], layout[2],
       (long long)c->groups);
  emit_i64s(h, "lhs_dilation", c->lhs_dilation, n);
  emit(h, ", padding = dense<[");
  for (int d = 0; d < n; d++)
    emit(h, "%s[%lld, %lld]", d ? ", " : "", (long long)c->pad_low[d], (long long)c->pad_high[d]);
  emit(h, "]> : tensor<%dx2xi64>, precision_config = [#stablehlo<precision HIGHEST>, "
          "#stablehlo<precision HIGHEST>], ",
       n);
  emit_i64s(h, "rhs_dilation", c->rhs_dilation, n);
  emit(h, ", ");
  emit_i64s(h, "window_strides", c->stride, n);
  emit(h, "}");
  end_op(h, &r, ops, 2);
  return r;
}

tpu_hlo_value tpu_hlo_reverse(tpu_hlo *h, tpu_hlo_value x, const int64_t *dims, int n) {
  tpu_hlo_value r = new_value(h, x.elem, x.rank, x.dims);
  const tpu_hlo_value *ops[] = {&x};
  begin_op(h, &r, "stablehlo.reverse", ops, 1);
  emit(h, " {");
  emit_i64s(h, "dimensions", dims, n);
  emit(h, "}");
  end_op(h, &r, ops, 1);
  return r;
}

tpu_hlo_value tpu_hlo_take(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value index, int dim) {
  int64_t column[2] = {index.dims[0], 1}, dims[TPU_MAX_DIMS + 1], slice[TPU_MAX_DIMS + 1];
  int64_t offset_dims[TPU_MAX_DIMS + 1], collapsed = dim;
  tpu_hlo_value starts = tpu_hlo_reshape(h, index, 2, column);
  for (int i = 0, n = 0; i < x.rank; i++) {
    dims[i] = i == dim ? index.dims[0] : x.dims[i];
    slice[i] = i == dim ? 1 : x.dims[i];
    if (i != dim)
      offset_dims[n++] = i;
  }
  tpu_hlo_value r = new_value(h, x.elem, x.rank, dims);
  const tpu_hlo_value *ops[] = {&x, &starts};
  begin_op(h, &r, "stablehlo.gather", ops, 2);
  emit(h, " {dimension_numbers = #stablehlo.gather<offset_dims = [");
  for (int i = 0; i + 1 < x.rank; i++)
    emit(h, "%s%lld", i ? ", " : "", (long long)offset_dims[i]);
  emit(h, "], collapsed_slice_dims = [%lld], start_index_map = [%lld], index_vector_dim = 1>, ",
       (long long)collapsed, (long long)collapsed);
  emit_i64s(h, "slice_sizes", slice, x.rank);
  emit(h, ", indices_are_sorted = false}");
  end_op(h, &r, ops, 2);
  return r;
}

/* The reduction region's body: %r = p combined with q, values of rank 0. */
static tpu_hlo_value combine_scalars(tpu_hlo *h, tpu_hlo_value p, tpu_hlo_value q,
                                     tpu_hlo_combine combine) {
  if (combine == TPU_HLO_ADD || combine == TPU_HLO_MUL)
    return tpu_hlo_binary(h, combine == TPU_HLO_ADD ? "add" : "multiply", p, q);
  tpu_hlo_value r = tpu_hlo_binary(h, combine == TPU_HLO_MAX ? "maximum" : "minimum", p, q);
  if (!tpu_dtype_is_floating(p.elem))
    return r;
  r = tpu_hlo_select(h, tpu_hlo_compare(h, "NE", q, q), q, r);
  return tpu_hlo_select(h, tpu_hlo_compare(h, "NE", p, p), p, r);
}

void tpu_hlo_combine_body(tpu_hlo *h, const tpu_hlo_value *p, const tpu_hlo_value *q,
                          tpu_hlo_value *r, void *ctx) {
  r[0] = combine_scalars(h, p[0], q[0], *(const tpu_hlo_combine *)ctx);
}

/* A reduction or scatter region, " ({ ^bb0(p..., q...): return body(p, q) })", on the scalars of
 * elems[0..n). */
static void emit_region(tpu_hlo *h, int n, const tpu_hlo_elem *elems, tpu_hlo_region_fn body,
                        void *ctx) {
  tpu_hlo_value p[TPU_HLO_MAX_REDUCED], q[TPU_HLO_MAX_REDUCED], r[TPU_HLO_MAX_REDUCED];
  for (int i = 0; i < n; i++)
    p[i] = new_value(h, elems[i], 0, NULL);
  for (int i = 0; i < n; i++)
    q[i] = new_value(h, elems[i], 0, NULL);
  emit(h, " ({\n    ^bb0(");
  for (int i = 0; i < 2 * n; i++) {
    const tpu_hlo_value *v = i < n ? &p[i] : &q[i - n];
    emit(h, i ? ", " : "");
    emit_name(h, v);
    emit(h, ": ");
    emit_type(h, v);
  }
  emit(h, "):\n");
  body(h, p, q, r, ctx);
  emit(h, "    \"stablehlo.return\"(");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_name(h, &r[i]);
  }
  emit(h, ") : (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &r[i]);
  }
  emit(h, ") -> ()\n    })");
}

static void combine_region(tpu_hlo *h, tpu_hlo_elem elem, tpu_hlo_combine combine) {
  emit_region(h, 1, &elem, tpu_hlo_combine_body, &combine);
}

tpu_hlo_value tpu_hlo_reduce(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value init, const int64_t *dims,
                             int n, tpu_hlo_combine combine) {
  int64_t kept[TPU_MAX_DIMS + 1];
  int rank = 0;
  for (int i = 0, j = 0; i < x.rank; i++) {
    if (j < n && dims[j] == i)
      j++;
    else
      kept[rank++] = x.dims[i];
  }
  tpu_hlo_value r = new_value(h, x.elem, rank, kept);
  const tpu_hlo_value *ops[] = {&x, &init};
  begin_op(h, &r, "stablehlo.reduce", ops, 2);
  combine_region(h, x.elem, combine);
  emit(h, " {");
  emit_i64s(h, "dimensions", dims, n);
  emit(h, "}");
  end_op(h, &r, ops, 2);
  return r;
}

tpu_hlo_value tpu_hlo_prefix_sum(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value init, int dim) {
  tpu_hlo_window w = tpu_hlo_window_one(x.rank);
  /* Each output sums the window ending at it: x.dims[dim] - 1 pad elements before the data. */
  w.size[dim] = x.dims[dim];
  w.pad_low[dim] = x.dims[dim] - 1;
  tpu_hlo_combine add = TPU_HLO_ADD;
  tpu_hlo_value r;
  tpu_hlo_reduce_window(h, 1, &x, &init, &w, tpu_hlo_combine_body, &add, &r);
  return r;
}

tpu_hlo_window tpu_hlo_window_one(int rank) {
  tpu_hlo_window w;
  memset(&w, 0, sizeof w);
  for (int i = 0; i < rank; i++)
    w.size[i] = w.stride[i] = w.dilation[i] = 1;
  return w;
}

void tpu_hlo_reduce_window(tpu_hlo *h, int n, const tpu_hlo_value *xs, const tpu_hlo_value *inits,
                           const tpu_hlo_window *w, tpu_hlo_region_fn body, void *ctx,
                           tpu_hlo_value *r) {
  int rank = xs[0].rank;
  int64_t dims[TPU_MAX_DIMS + 1];
  for (int i = 0; i < rank; i++) {
    int64_t padded = xs[0].dims[i] + w->pad_low[i] + w->pad_high[i];
    int64_t extent = (w->size[i] - 1) * w->dilation[i] + 1;
    dims[i] = padded < extent ? 0 : (padded - extent) / w->stride[i] + 1;
  }
  tpu_hlo_elem elems[TPU_HLO_MAX_REDUCED];
  const tpu_hlo_value *ops[2 * TPU_HLO_MAX_REDUCED];
  emit(h, "    ");
  for (int i = 0; i < n; i++) { /* several results: %vA, %vB = ... */
    r[i] = new_value(h, xs[i].elem, rank, dims);
    elems[i] = xs[i].elem;
    ops[i] = &xs[i];
    ops[n + i] = &inits[i];
    emit(h, i ? ", " : "");
    emit_name(h, &r[i]);
  }
  emit(h, " = \"stablehlo.reduce_window\"(");
  for (int i = 0; i < 2 * n; i++) {
    emit(h, i ? ", " : "");
    emit_name(h, ops[i]);
  }
  emit(h, ")");
  emit_region(h, n, elems, body, ctx);
  emit(h, " {");
  emit_i64s(h, "window_dimensions", w->size, rank);
  emit(h, ", ");
  emit_i64s(h, "window_strides", w->stride, rank);
  emit(h, ", ");
  emit_i64s(h, "window_dilations", w->dilation, rank);
  emit(h, ", padding = dense<[");
  for (int i = 0; i < rank; i++)
    emit(h, "%s[%lld, %lld]", i ? ", " : "", (long long)w->pad_low[i], (long long)w->pad_high[i]);
  emit(h, "]> : tensor<%dx2xi64>} : (", rank);
  for (int i = 0; i < 2 * n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, ops[i]);
  }
  emit(h, ") -> (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &r[i]);
  }
  emit(h, ")\n");
}

void tpu_hlo_sort(tpu_hlo *h, int n, const tpu_hlo_value *xs, int dim, tpu_hlo_less_fn less,
                  void *ctx, tpu_hlo_value *r) {
  tpu_hlo_value a[TPU_HLO_MAX_REDUCED], b[TPU_HLO_MAX_REDUCED];
  emit(h, "    ");
  for (int i = 0; i < n; i++) { /* several results: %vA, %vB = ... */
    r[i] = new_value(h, xs[i].elem, xs[i].rank, xs[i].dims);
    emit(h, i ? ", " : "");
    emit_name(h, &r[i]);
  }
  emit(h, " = \"stablehlo.sort\"(");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_name(h, &xs[i]);
  }
  /* The comparator's block takes each operand's pair in turn: a[0], b[0], a[1], b[1], ... */
  emit(h, ") ({\n    ^bb0(");
  for (int i = 0; i < n; i++) {
    a[i] = new_value(h, xs[i].elem, 0, NULL);
    b[i] = new_value(h, xs[i].elem, 0, NULL);
    for (int side = 0; side < 2; side++) {
      const tpu_hlo_value *v = side ? &b[i] : &a[i];
      emit(h, i || side ? ", " : "");
      emit_name(h, v);
      emit(h, ": ");
      emit_type(h, v);
    }
  }
  emit(h, "):\n");
  tpu_hlo_value before = less(h, a, b, ctx);
  emit(h, "    \"stablehlo.return\"(");
  emit_name(h, &before);
  emit(h, ") : (");
  emit_type(h, &before);
  emit(h, ") -> ()\n    }) {dimension = %d : i64, is_stable = true} : (", dim);
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &xs[i]);
  }
  emit(h, ") -> (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &r[i]);
  }
  emit(h, ")\n");
}

/* Writes "^bb0(%a: type, ...):" with a new block argument of each value's type into args. */
static void emit_block(tpu_hlo *h, int n, const tpu_hlo_value *like, tpu_hlo_value *args) {
  emit(h, "    ^bb0(");
  for (int i = 0; i < n; i++) {
    args[i] = new_value(h, like[i].elem, like[i].rank, like[i].dims);
    emit(h, i ? ", " : "");
    emit_name(h, &args[i]);
    emit(h, ": ");
    emit_type(h, &args[i]);
  }
  emit(h, "):\n");
}

/* Writes a region's terminator returning v[0..n). */
static void emit_return(tpu_hlo *h, int n, const tpu_hlo_value *v) {
  emit(h, "    \"stablehlo.return\"(");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_name(h, &v[i]);
  }
  emit(h, ") : (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &v[i]);
  }
  emit(h, ") -> ()\n");
}

void tpu_hlo_while(tpu_hlo *h, int n, const tpu_hlo_value *init, tpu_hlo_cond_fn cond,
                   tpu_hlo_step_fn step, void *ctx, tpu_hlo_value *r) {
  tpu_hlo_value args[TPU_HLO_MAX_CARRIED], next[TPU_HLO_MAX_CARRIED];
  if (n < 1 || n > TPU_HLO_MAX_CARRIED) {
    h->failed = true;
    return;
  }
  emit(h, "    ");
  for (int i = 0; i < n; i++) { /* several results: %vA, %vB = ... */
    r[i] = new_value(h, init[i].elem, init[i].rank, init[i].dims);
    emit(h, i ? ", " : "");
    emit_name(h, &r[i]);
  }
  emit(h, " = \"stablehlo.while\"(");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_name(h, &init[i]);
  }
  emit(h, ") ({\n");
  emit_block(h, n, init, args);
  tpu_hlo_value go = cond(h, args, ctx);
  emit_return(h, 1, &go);
  emit(h, "    }, {\n");
  emit_block(h, n, init, args);
  step(h, args, next, ctx);
  emit_return(h, n, next);
  emit(h, "    }) : (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &init[i]);
  }
  emit(h, ") -> (");
  for (int i = 0; i < n; i++) {
    emit(h, i ? ", " : "");
    emit_type(h, &r[i]);
  }
  emit(h, ")\n");
}

tpu_hlo_value tpu_hlo_scatter(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value index,
                              tpu_hlo_value updates, tpu_hlo_combine combine) {
  int64_t column[2] = {index.dims[0], 1}, window[TPU_MAX_DIMS + 1];
  tpu_hlo_value starts = tpu_hlo_reshape(h, index, 2, column);
  for (int i = 1; i < updates.rank; i++)
    window[i - 1] = i;
  tpu_hlo_value r = new_value(h, x.elem, x.rank, x.dims);
  const tpu_hlo_value *ops[] = {&x, &starts, &updates};
  begin_op(h, &r, "stablehlo.scatter", ops, 3);
  combine_region(h, x.elem, combine);
  emit(h, " {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [");
  for (int i = 0; i + 1 < updates.rank; i++)
    emit(h, "%s%lld", i ? ", " : "", (long long)window[i]);
  emit(h, "], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
          "index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}");
  end_op(h, &r, ops, 3);
  return r;
}

tpu_hlo_value tpu_hlo_splat(tpu_hlo *h, tpu_hlo_value scalar, const tpu_hlo_value *like) {
  return tpu_hlo_broadcast(h, scalar, like->rank, like->dims, NULL);
}

/* Float to int32 or int64 as x86's cvtt instructions convert: toward zero, and the minimum
 * integer ("integer indefinite") for NaN and values out of range, where XLA saturates. */
static tpu_hlo_value float_to_int(tpu_hlo *h, tpu_hlo_value x, tpu_dtype to) {
  if (x.elem == TPU_FLOAT16 || x.elem == TPU_BFLOAT16)
    x = tpu_hlo_convert(h, x, TPU_FLOAT32); /* exact, and room for the limits below */
  bool wide = to == TPU_INT64;
  tpu_hlo_value hi = tpu_hlo_full(h, x.elem, wide ? "9.2233720368547758E18" : "2147483648.0", &x);
  tpu_hlo_value in_range = tpu_hlo_binary(h, "and",
                                          tpu_hlo_compare(h, "GE", x, tpu_hlo_unary(h, "negate",
                                                                                    hi)),
                                          tpu_hlo_compare(h, "LT", x, hi));
  tpu_hlo_value indefinite =
      tpu_hlo_full(h, to, wide ? "-9223372036854775808" : "-2147483648", &x);
  return tpu_hlo_select(h, in_range, tpu_hlo_convert(h, x, to), indefinite);
}

tpu_hlo_value tpu_hlo_cast(tpu_hlo *h, tpu_hlo_value x, tpu_dtype to) {
  tpu_dtype from = x.elem;
  if (from == to)
    return x;
  if (to == TPU_BOOL) {
    tpu_hlo_value zero = tpu_hlo_splat(h, tpu_hlo_constant(h, from, zero_literal(from)), &x);
    return tpu_hlo_compare(h, "NE", x, zero);
  }
  if ((to == TPU_FLOAT16 || to == TPU_BFLOAT16) && from != TPU_FLOAT32 && from != TPU_BOOL &&
      from != TPU_FLOAT16 && from != TPU_BFLOAT16)
    x = tpu_hlo_convert(h, x, TPU_FLOAT32); /* c10::Half and BFloat16 convert through float */
  if (tpu_dtype_is_floating(from) && (to == TPU_INT8 || to == TPU_INT16 || to == TPU_INT32))
    x = float_to_int(h, x, TPU_INT32);
  if (tpu_dtype_is_floating(from) && (to == TPU_UINT8 || to == TPU_INT64))
    x = float_to_int(h, x, TPU_INT64);
  return tpu_hlo_convert(h, x, to);
}

tpu_hlo_value tpu_hlo_full(tpu_hlo *h, tpu_hlo_elem elem, const char *literal,
                           const tpu_hlo_value *like) {
  return tpu_hlo_splat(h, tpu_hlo_constant(h, elem, literal), like);
}

tpu_hlo_value tpu_hlo_full_i64(tpu_hlo *h, int64_t v, const tpu_hlo_value *like) {
  char literal[24];
  snprintf(literal, sizeof literal, "%lld", (long long)v);
  return tpu_hlo_full(h, TPU_INT64, literal, like);
}

tpu_hlo_value tpu_hlo_coordinate(tpu_hlo *h, const tpu_hlo_value *like, int64_t d) {
  return tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_INT64, like->dims[d]), like->rank, like->dims,
                           &d);
}

tpu_hlo_value tpu_hlo_constant_array(tpu_hlo *h, tpu_hlo_elem elem, int64_t n,
                                     const double *values) {
  tpu_hlo_value v = new_value(h, elem, 1, &n);
  emit(h, "    ");
  emit_name(h, &v);
  emit(h, " = stablehlo.constant dense<[");
  for (int64_t i = 0; i < n; i++) {
    if (tpu_dtype_is_floating(elem))
      emit(h, "%s%.17e", i ? ", " : "", values[i]);
    else
      emit(h, "%s%lld", i ? ", " : "", (long long)values[i]);
  }
  emit(h, "]> : ");
  emit_type(h, &v);
  emit(h, "\n");
  return v;
}

tpu_hlo_value tpu_hlo_any(tpu_hlo *h, tpu_hlo_value pred) {
  int64_t dims[TPU_MAX_DIMS + 1];
  for (int i = 0; i < pred.rank; i++)
    dims[i] = i;
  return tpu_hlo_reduce(h, tpu_hlo_convert(h, pred, TPU_UINT8),
                        tpu_hlo_constant(h, TPU_UINT8, "0"), dims, pred.rank, TPU_HLO_MAX);
}

tpu_hlo_value tpu_hlo_cholesky(tpu_hlo *h, tpu_hlo_value a, bool lower) {
  const tpu_hlo_value *operands[] = {&a};
  tpu_hlo_value r = new_value(h, a.elem, a.rank, a.dims);
  begin_op(h, &r, "stablehlo.cholesky", operands, 1);
  emit(h, " {lower = %s}", lower ? "true" : "false");
  end_op(h, &r, operands, 1);
  return r;
}

tpu_hlo_value tpu_hlo_triangular_solve(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b, bool left,
                                       bool lower, bool unit) {
  const tpu_hlo_value *operands[] = {&a, &b};
  tpu_hlo_value r = new_value(h, b.elem, b.rank, b.dims);
  begin_op(h, &r, "stablehlo.triangular_solve", operands, 2);
  emit(h, " {left_side = %s, lower = %s, unit_diagonal = %s, "
          "transpose_a = #stablehlo<transpose NO_TRANSPOSE>}",
       left ? "true" : "false", lower ? "true" : "false", unit ? "true" : "false");
  end_op(h, &r, operands, 2);
  return r;
}
