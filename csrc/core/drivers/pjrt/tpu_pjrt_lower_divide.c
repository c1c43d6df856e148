#include "drivers/pjrt/tpu_pjrt_lower_divide.h"

bool tpu_pjrt_int_divides(const tpu_op_call *call) {
  bool divides = call->op == TPU_OP_DIV_TRUNC || call->op == TPU_OP_DIV_FLOOR ||
                 call->op == TPU_OP_REMAINDER || call->op == TPU_OP_FMOD;
  return divides && call->n_inputs == 2 && call->compute != TPU_BOOL &&
         !tpu_dtype_is_floating(call->compute) && !tpu_dtype_is_complex(call->compute);
}

typedef struct divide {
  tpu_hlo *h;
  tpu_hlo_value like; /* of the compute dtype and the output's dims */
} divide;

static tpu_hlo_value full(divide *d, const char *literal) {
  return tpu_hlo_full(d->h, d->like.elem, literal, &d->like);
}

static tpu_hlo_value cmp(divide *d, const char *dir, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_compare(d->h, dir, a, b);
}

static tpu_hlo_value sel(divide *d, tpu_hlo_value p, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_select(d->h, p, a, b);
}

static tpu_hlo_value either(divide *d, tpu_hlo_value p, tpu_hlo_value q) {
  return tpu_hlo_binary(d->h, "or", p, q);
}

/* Whether the signs of x and y differ (never, for unsigned values). */
static tpu_hlo_value signs_differ(divide *d, tpu_hlo_value x, tpu_hlo_value y) {
  tpu_hlo_value zero = full(d, "0");
  return tpu_hlo_binary(d->h, "xor", cmp(d, "LT", x, zero), cmp(d, "LT", y, zero));
}

tpu_hlo_value tpu_pjrt_int_divide(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value a,
                                  tpu_hlo_value b, tpu_hlo_value *zero) {
  a = tpu_hlo_cast(h, a, call->compute);
  b = tpu_hlo_cast(h, b, call->compute);
  divide d = {.h = h, .like = a};
  tpu_hlo_value by_zero = cmp(&d, "EQ", b, full(&d, "0"));
  *zero = tpu_hlo_any(h, by_zero);
  /* The plugin divides by 1 where the divisor is 0 or -1; those elements are replaced below. */
  tpu_hlo_value special = by_zero;
  if (call->compute != TPU_UINT8)
    special = either(&d, special, cmp(&d, "EQ", b, full(&d, "-1")));
  tpu_hlo_value safe = sel(&d, special, full(&d, "1"), b);
  tpu_hlo_value quotient = tpu_hlo_binary(h, "divide", a, safe); /* toward zero */
  tpu_hlo_value rest = tpu_hlo_binary(h, "remainder", a, safe); /* the sign of a */
  tpu_hlo_value zeros = full(&d, "0");
  /* Divisor -1: the quotient is -a (wrapping) and the remainder 0; divisor 0: both 0. */
  tpu_hlo_value instead = zeros;
  if (call->compute != TPU_UINT8)
    instead = sel(&d, by_zero, zeros, tpu_hlo_unary(h, "negate", a));
  quotient = sel(&d, special, instead, quotient);
  rest = sel(&d, special, zeros, rest);
  tpu_hlo_value inexact = cmp(&d, "NE", rest, zeros);
  switch (call->op) {
  case TPU_OP_DIV_TRUNC: return quotient;
  case TPU_OP_FMOD: return rest;
  case TPU_OP_DIV_FLOOR: { /* one less where the signs differ and the division was inexact */
    tpu_hlo_value down = tpu_hlo_binary(h, "and", inexact, signs_differ(&d, a, b));
    return sel(&d, down, tpu_hlo_binary(h, "subtract", quotient, full(&d, "1")), quotient);
  }
  default: { /* REMAINDER: moved to the sign of b */
    tpu_hlo_value move = tpu_hlo_binary(h, "and", inexact, signs_differ(&d, rest, b));
    return sel(&d, move, tpu_hlo_binary(h, "add", rest, b), rest);
  }
  }
}
