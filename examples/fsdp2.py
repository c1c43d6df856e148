"""FSDP2 on tpu, then a sharded checkpoint: `torchrun --nproc-per-node=2 examples/fsdp2.py`.

Each transformer block and the root of bench's tiny GPT are `fully_shard`-ed: every rank keeps
1/world of each parameter and its optimizer state, all-gathers a block's parameters before using
it and reduce-scatters its gradients (tpu_dist's all_gather_into_tensor and
reduce_scatter_tensor). Rank 0 checks the losses against one CPU process on whole batches; then
torch.distributed.checkpoint saves the sharded state (each rank writes its shards) and loads it
into a freshly initialized sharded model, which must compute the same outputs.
"""

from __future__ import annotations

import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from dist_common import batches, check, models, my_rows, train
from torch.distributed.fsdp import fully_shard


def shard(model: torch.nn.Module) -> torch.nn.Module:
    for block in model.blocks:
        fully_shard(block)
    return fully_shard(model)


def main() -> None:
    dist.init_process_group()
    device = torch.accelerator.current_accelerator()
    model, reference = models()
    data = batches(dist.get_world_size())
    model = shard(model.to(device))
    check("FSDP2", train(model, device, data, my_rows()), reference, data)

    where = [tempfile.mkdtemp(prefix="fsdp2-dcp-") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(where, 0)
    dcp.save(model.state_dict(), checkpoint_id=where[0])
    torch.manual_seed(123)
    restored = shard(models()[0].to(device))
    state = restored.state_dict()
    dcp.load(state, checkpoint_id=where[0])
    restored.load_state_dict(state)
    tokens = data[0, :2].to(device)
    same = torch.equal(
        model(tokens[:, :-1], tokens[:, 1:]), restored(tokens[:, :-1], tokens[:, 1:])
    )
    if dist.get_rank() == 0:
        print(f"  DCP save/load of the sharded model ({where[0]}): outputs equal: {same}")
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(where[0])
    if not same:
        raise SystemExit("the restored model differs")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
