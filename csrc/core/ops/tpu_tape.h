/* A tape: op calls recorded once, each buffer they touch named by a slot, to be issued again with
 * other buffers (torch.compile's replay, csrc/torch/compile/TpuReplay.h). A slot is an input's
 * buffer (bound anew at each issue) or a buffer made while the calls were recorded (a new one of
 * the same size at each issue). The tape keeps no buffer: the recorded addresses are compared,
 * never used. */
#ifndef TPU_TAPE_H
#define TPU_TAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/tpu_op.h"

typedef struct tpu_tape tpu_tape;

/* A tape of copies of `calls` (n_calls). Input k's buffer is inputs[k] (NULL: the input is not a
 * buffer); inputs on one buffer share the first one's slot. Every other buffer a call touches must
 * be among `made` (n_made, made on `device` while the calls were recorded). TPU_ERR_VALUE, with the
 * reason as the message, for a buffer from elsewhere or host memory other than a scalar the call
 * holds; TPU_ERR_OUT_OF_MEMORY. */
tpu_status tpu_tape_new(const tpu_op_call *const *calls, int n_calls, tpu_buffer *const *inputs,
                        int n_inputs, tpu_buffer *const *made, int n_made, int device,
                        tpu_tape **out);

void tpu_tape_free(tpu_tape *tape);

/* The slot of `buffer`: an input's or a call's, else a new slot when it is among `made` (on the
 * tape's device), else -1. TPU_ERR_OUT_OF_MEMORY leaves -1 too. */
int tpu_tape_slot_of(tpu_tape *tape, tpu_buffer *buffer, tpu_buffer *const *made, int n_made);

int tpu_tape_slots(const tpu_tape *tape);
int tpu_tape_calls(const tpu_tape *tape);

/* The input slot s binds, or -1 for a made buffer, whose size goes to *nbytes. */
int tpu_tape_slot_input(const tpu_tape *tape, int s, size_t *nbytes);

/* Whether some call writes input k's buffer. */
bool tpu_tape_writes_input(const tpu_tape *tape, int k);

/* A new call (tpu_op_call_clone) of call c with slot s's buffer at slot_buffers[s]; NULL when out
 * of host memory. */
tpu_op_call *tpu_tape_call(const tpu_tape *tape, int c, tpu_buffer *const *slot_buffers);

#endif
