"""DTensor tensor parallelism on tpu: `torchrun --nproc-per-node=2 examples/tensor_parallel.py`.

A 1-d DeviceMesh over the ranks; in each block of bench's tiny GPT the MLP's first Linear is split
by columns and the second by rows (Megatron style), so each rank holds half of every MLP weight
and one all_reduce per block joins the partial outputs. Each rank drives its own chip, tpu:<local
rank>, as DeviceMesh sets it, so the simulated driver needs a chip per rank:
TORCH_TPU_NUM_DEVICES=2. Every rank sees the whole batch; rank 0 checks the losses against one
CPU process.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from dist_common import batches, check, models, train
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


def main() -> None:
    dist.init_process_group()
    mesh = init_device_mesh("tpu", (dist.get_world_size(),))
    device = torch.device("tpu", torch.tpu.current_device())
    model, reference = models()
    plan = {}
    for i in range(len(model.blocks)):
        plan[f"blocks.{i}.fc"] = ColwiseParallel()
        plan[f"blocks.{i}.out"] = RowwiseParallel()
    model = parallelize_module(model.to(device), mesh, plan)
    data = batches(1)
    check("tensor parallel", train(model, device, data, slice(None)), reference, data)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
