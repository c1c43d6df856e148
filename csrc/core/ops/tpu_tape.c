#include "ops/tpu_tape.h"

#include <stdlib.h>

#include "base/tpu_status.h"

struct tpu_tape {
  int device;
  int n_calls;
  tpu_op_call **calls; /* copies, buffers cleared */
  int *tensor_slots;   /* per tensor of each call in order: its slot, -1 for none */
  int *first_tensor;   /* per call: the index of its first tensor in tensor_slots */
  int n_slots, cap_slots;
  const tpu_buffer **keys; /* the recorded buffer of each slot */
  int *slot_input;         /* the input a slot binds, -1 for a made buffer */
  size_t *slot_nbytes;
  int n_inputs;
  bool *written; /* per input */
};

static int find_key(const tpu_tape *t, const tpu_buffer *b) {
  for (int s = 0; s < t->n_slots; s++)
    if (t->keys[s] == b)
      return s;
  return -1;
}

static bool contains(tpu_buffer *const *list, int n, const tpu_buffer *b) {
  for (int i = 0; i < n; i++)
    if (list[i] == b)
      return true;
  return false;
}

/* Appends a slot; -1 when out of host memory. */
static int add_slot(tpu_tape *t, const tpu_buffer *key, int input, size_t nbytes) {
  if (t->n_slots == t->cap_slots) {
    int cap = t->cap_slots ? 2 * t->cap_slots : 16;
    const tpu_buffer **keys = realloc(t->keys, (size_t)cap * sizeof *keys);
    if (keys)
      t->keys = keys;
    int *in = realloc(t->slot_input, (size_t)cap * sizeof *in);
    if (in)
      t->slot_input = in;
    size_t *sizes = realloc(t->slot_nbytes, (size_t)cap * sizeof *sizes);
    if (sizes)
      t->slot_nbytes = sizes;
    if (!keys || !in || !sizes)
      return -1;
    t->cap_slots = cap;
  }
  t->keys[t->n_slots] = key;
  t->slot_input[t->n_slots] = input;
  t->slot_nbytes[t->n_slots] = nbytes;
  return t->n_slots++;
}

int tpu_tape_slot_of(tpu_tape *t, tpu_buffer *b, tpu_buffer *const *made, int n_made) {
  int s = find_key(t, b);
  if (s >= 0 || !contains(made, n_made, b) || tpu_buffer_device(b) != t->device)
    return s;
  return add_slot(t, b, -1, tpu_buffer_nbytes(b));
}

static bool held_in_call(const tpu_op_call *c, const tpu_tensor *x) {
  const char *lo = (const char *)c->scalars, *p = x->host;
  return p >= lo && p < lo + sizeof c->scalars;
}

/* Names the buffers of call `c` (a copy on the tape) by slot and clears them. */
static tpu_status add_call(tpu_tape *t, tpu_op_call *c, int *slots, tpu_buffer *const *made,
                           int n_made) {
  for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
    tpu_tensor *x = &c->tensors[i];
    slots[i] = -1;
    if (!x->buf) {
      if (x->host && tpu_tensor_numel(x) > 0 && !held_in_call(c, x))
        return tpu_error(TPU_ERR_VALUE, "host memory");
      continue;
    }
    int s = tpu_tape_slot_of(t, x->buf, made, n_made);
    if (s < 0)
      return find_key(t, x->buf) < 0 && !contains(made, n_made, x->buf)
                 ? tpu_error(TPU_ERR_VALUE, "a tensor made outside the graph")
                 : tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot grow a tape");
    if (i >= c->n_inputs && t->slot_input[s] >= 0)
      t->written[t->slot_input[s]] = true;
    slots[i] = s;
    x->buf = NULL;
  }
  return TPU_OK;
}

tpu_status tpu_tape_new(const tpu_op_call *const *calls, int n_calls, tpu_buffer *const *inputs,
                        int n_inputs, tpu_buffer *const *made, int n_made, int device,
                        tpu_tape **out) {
  *out = NULL;
  int n_tensors = 0;
  for (int c = 0; c < n_calls; c++)
    n_tensors += calls[c]->n_inputs + calls[c]->n_outputs;
  tpu_tape *t = calloc(1, sizeof *t);
  if (t) {
    t->device = device;
    t->n_inputs = n_inputs;
    t->calls = calloc((size_t)n_calls + 1, sizeof *t->calls);
    t->tensor_slots = malloc(((size_t)n_tensors + 1) * sizeof *t->tensor_slots);
    t->first_tensor = malloc(((size_t)n_calls + 1) * sizeof *t->first_tensor);
    t->written = calloc((size_t)n_inputs + 1, sizeof *t->written);
  }
  if (!t || !t->calls || !t->tensor_slots || !t->first_tensor || !t->written) {
    tpu_tape_free(t);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a tape");
  }
  tpu_status st = TPU_OK;
  for (int k = 0; st == TPU_OK && k < n_inputs; k++)
    if (inputs[k] && find_key(t, inputs[k]) < 0 && add_slot(t, inputs[k], k, 0) < 0)
      st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot grow a tape");
  int first = 0;
  for (int c = 0; st == TPU_OK && c < n_calls; c++) {
    t->calls[c] = tpu_op_call_clone(calls[c]);
    t->n_calls = c + 1;
    t->first_tensor[c] = first;
    st = t->calls[c] ? add_call(t, t->calls[c], t->tensor_slots + first, made, n_made)
                     : tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot copy an op call");
    first += calls[c]->n_inputs + calls[c]->n_outputs;
  }
  if (st != TPU_OK) {
    tpu_tape_free(t);
    return st;
  }
  *out = t;
  return TPU_OK;
}

void tpu_tape_free(tpu_tape *t) {
  if (!t)
    return;
  for (int c = 0; c < t->n_calls; c++)
    tpu_op_call_free(t->calls[c]);
  free(t->calls);
  free(t->tensor_slots);
  free(t->first_tensor);
  free(t->keys);
  free(t->slot_input);
  free(t->slot_nbytes);
  free(t->written);
  free(t);
}

int tpu_tape_slots(const tpu_tape *t) { return t->n_slots; }

int tpu_tape_calls(const tpu_tape *t) { return t->n_calls; }

int tpu_tape_slot_input(const tpu_tape *t, int s, size_t *nbytes) {
  *nbytes = t->slot_nbytes[s];
  return t->slot_input[s];
}

bool tpu_tape_writes_input(const tpu_tape *t, int k) { return k < t->n_inputs && t->written[k]; }

tpu_op_call *tpu_tape_call(const tpu_tape *t, int c, tpu_buffer *const *slot_buffers) {
  tpu_op_call *call = tpu_op_call_clone(t->calls[c]);
  if (!call)
    return NULL;
  const int *slots = t->tensor_slots + t->first_tensor[c];
  for (int i = 0; i < call->n_inputs + call->n_outputs; i++)
    if (slots[i] >= 0)
      call->tensors[i].buf = slot_buffers[slots[i]];
  return call;
}
