"""DistributedDataParallel on tpu: `torchrun --nproc-per-node=2 examples/ddp.py`.

CUDA's DDP recipe with no device or backend named: `dist.init_process_group()` picks tpu_dist for
the tpu accelerator. Each rank trains bench's tiny GPT on its share of every global batch; DDP
all-reduces the gradients, so every rank holds the same model, and rank 0 checks the losses
against one CPU process training on whole batches.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from dist_common import batches, check, models, my_rows, train
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    dist.init_process_group()
    device = torch.accelerator.current_accelerator()
    model, reference = models()
    data = batches(dist.get_world_size())
    losses = train(DDP(model.to(device)), device, data, my_rows())
    check("DDP", losses, reference, data)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
