/* Tapes (ops/tpu_tape.h): inputs sharing a buffer share a slot, buffers made while recording get
 * slots of their size, written inputs are known, a call issued again takes the bound buffers and
 * keeps a scalar it holds, and a buffer from elsewhere or host memory refuses the tape. */
#include <string.h>

#include "ops/tpu_tape.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

static tpu_tensor view(tpu_buffer *buf, int64_t n) {
  tpu_tensor t = {.buf = buf, .dtype = TPU_FLOAT32, .ndim = 1};
  t.sizes[0] = n;
  t.strides[0] = 1;
  return t;
}

/* dst = a + b (the scalar input's form when b is NULL: a + 2). */
static tpu_op_call *add(tpu_buffer *a, tpu_buffer *b, tpu_buffer *dst) {
  tpu_op_call *c = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  c->tensors[0] = view(a, 4);
  if (b)
    c->tensors[1] = view(b, 4);
  else
    tpu_op_set_scalar_input(c, 1, 1, (tpu_scalar){.f = 2}, true);
  c->tensors[2] = view(dst, 4);
  return c;
}

static tpu_buffer *buffer(size_t nbytes) {
  tpu_buffer *b = NULL;
  CHECK_OK_OR(tpu_buffer_create_pending(0, 0, nbytes, &b), NULL);
  return b;
}

static void test_slots_and_reissue(void) {
  tpu_buffer *x = buffer(16), *y = buffer(16), *made = buffer(16), *out = buffer(32);
  tpu_buffer *other = buffer(16);
  /* made = x + y; y = made + 2 (writes input 2, which shares y with input 1); out viewed. */
  const tpu_op_call *calls[2] = {add(x, y, made), add(made, NULL, y)};
  tpu_buffer *inputs[4] = {x, y, y, NULL};
  tpu_buffer *mades[2] = {made, out};
  tpu_tape *tape = NULL;
  CHECK_OK(tpu_tape_new(calls, 2, inputs, 4, mades, 2, 0, &tape));
  CHECK(tpu_tape_calls(tape) == 2 && tpu_tape_slots(tape) == 3);
  size_t nbytes = 0;
  CHECK(tpu_tape_slot_input(tape, 0, &nbytes) == 0 && tpu_tape_slot_input(tape, 1, &nbytes) == 1);
  CHECK(tpu_tape_slot_input(tape, 2, &nbytes) == -1 && nbytes == 16);
  CHECK(!tpu_tape_writes_input(tape, 0) && tpu_tape_writes_input(tape, 1));
  /* An output no call touched gets a slot of its size; a foreign buffer none. */
  CHECK(tpu_tape_slot_of(tape, out, mades, 2) == 3);
  CHECK(tpu_tape_slot_input(tape, 3, &nbytes) == -1 && nbytes == 32);
  CHECK(tpu_tape_slot_of(tape, y, mades, 2) == 1 && tpu_tape_slot_of(tape, other, mades, 2) == -1);
  tpu_buffer *bound[4] = {other, x, y, made};
  tpu_op_call *again = tpu_tape_call(tape, 1, bound);
  CHECK(again && again->tensors[0].buf == y && again->tensors[2].buf == x);
  CHECK(again && again->tensors[1].host == &again->scalars[1] && again->scalars[1].f == 2);
  tpu_op_call_free(again);
  tpu_tape_free(tape);
  /* Without `made` among the recorded buffers, the tape is refused. */
  CHECK(tpu_tape_new(calls, 2, inputs, 4, NULL, 0, 0, &tape) == TPU_ERR_VALUE && !tape);
  CHECK(strstr(tpu_last_error(), "outside the graph") != NULL);
  for (int i = 0; i < 2; i++)
    tpu_op_call_free((tpu_op_call *)calls[i]);
  tpu_buffer *all[5] = {x, y, made, out, other};
  for (int i = 0; i < 5; i++)
    tpu_buffer_release_storage(all[i]);
}

static void test_host_memory_refuses(void) {
  float host[4] = {0};
  tpu_buffer *dst = buffer(16);
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  copy->tensors[0] = view(NULL, 4);
  copy->tensors[0].host = host;
  copy->tensors[1] = view(dst, 4);
  const tpu_op_call *calls[1] = {copy};
  tpu_tape *tape = NULL;
  CHECK(tpu_tape_new(calls, 1, NULL, 0, &dst, 1, 0, &tape) == TPU_ERR_VALUE && !tape);
  CHECK(strcmp(tpu_last_error(), "host memory") == 0);
  tpu_op_call_free(copy);
  tpu_buffer_release_storage(dst);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_slots_and_reissue);
  RUN_TEST(test_host_memory_refuses);
  TEST_MAIN_END();
}
