"""Hugging Face models on tpu against PyTorch CPU: tiny transformers models of many architectures
(decoder LMs dense and MoE, encoders, encoder-decoders, vision, audio; built offline from configs,
see tests/_hf_models.py), forward and backward; generate() (greedy, sampling, beam search);
from_pretrained(..., device_map="tpu"); and diffusers' UNet, DiT and schedulers. Each runs in the
strict and fused eager modes and must not call the CPU fallback or the driver's fallback, except
where EXPECTED_FALLBACKS lists a fallback still expected, with the op that lacks a kernel: the test
fails when a listed one no longer happens too, so that the list stays true.

Tolerances: float32 throughout, on both sides; the models' sums are short (hidden size 32, 2
layers), so results agree to a few float32 ulps of their scale; a relative 1e-4 of the output's
largest magnitude (1e-3 for gradients, which accumulate over the batch and the sequence) leaves
room for a different summation order (the PJRT driver's XLA) without hiding a wrong formula.
Gradients that are zero in exact arithmetic (a key projection's bias: softmax ignores a shift)
are rounding noise on both sides, hence an absolute tolerance from the largest gradient of all.

timm is not tested: it needs torchvision, which has no CPU-only wheel for this PyTorch here.
On the PJRT driver (XLA's CPU plugin), which compiles each new shape, only PJRT_ARCHS run."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _hf_models as hf
import pytest
import torch

if os.environ.get("CI"):
    import diffusers
    import transformers
else:  # A clean skip for a local checkout without requirements-dev.txt's packages.
    transformers = pytest.importorskip("transformers")
    diffusers = pytest.importorskip("diffusers")

DEV = "tpu"
PJRT = os.environ.get("TORCH_TPU_DRIVER") == "pjrt"

# Calls through the CPU fallback (ATen op) still expected per architecture, with the reason: the
# op has no tpu kernel yet. Keys are model_types (tests/_hf_models.py) or the names of the other
# tests' models; the same in both eager modes and on both drivers.
EXPECTED_FALLBACKS: dict[str, dict[str, str]] = {}
# Core ops without a PJRT lowering that the PJRT driver runs on the host kernels (the driver's
# fallback), per architecture, with the reason.
EXPECTED_DRIVER_FALLBACKS: dict[str, dict[str, str]] = {}

# The architectures that run on the PJRT driver: one or two of each kind, the ones whose ops
# differ most (rotary, MoE routing, relative positions, convolutions, audio).
PJRT_ARCHS = {
    "llama",
    "gpt2",
    "qwen2_moe",
    "gemma2",
    "bert",
    "deberta-v2",
    "t5",
    "bart",
    "vit",
    "convnext",
    "whisper",
    "wav2vec2",
}


@pytest.fixture(params=["strict", "fused"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test in one eager mode, then restores the default (strict)."""
    torch.tpu.set_eager_mode(request.param)
    try:
        yield request.param
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_eager_mode("strict")


def check_fallbacks(name: str) -> None:
    """The fallbacks since the last reset are exactly those expected for `name`."""
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert set(stats["fallback"]) == set(EXPECTED_FALLBACKS.get(name, {})), stats["fallback"]
    want = set(EXPECTED_DRIVER_FALLBACKS.get(name, {})) if PJRT else set()
    assert set(stats["driver_fallback"]) == want, stats["driver_fallback"]


def assert_close_to_scale(got: torch.Tensor, want: torch.Tensor, rtol: float, scale: float) -> None:
    """`got` on tpu equals `want` on CPU to rtol, and absolutely to rtol * scale."""
    assert got.device.type == DEV
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=rtol * scale)


def compare_grads(cpu_model: torch.nn.Module, tpu_model: torch.nn.Module) -> None:
    """Every parameter's gradient on tpu equals CPU's (None where CPU's is None)."""
    pairs = list(zip(cpu_model.named_parameters(), tpu_model.named_parameters(), strict=True))
    scale = max(p.grad.abs().max().item() for (_, p), _ in pairs if p.grad is not None)
    for (name, p), (_, q) in pairs:
        if p.grad is None:
            assert q.grad is None, name
            continue
        assert q.grad is not None, name
        try:
            assert_close_to_scale(q.grad, p.grad, 1e-3, scale)
        except AssertionError as e:
            raise AssertionError(f"gradient of {name}: {e}") from None


def forward_backward(
    name: str, model: torch.nn.Module, inputs: dict[str, Any], output: str = "logits"
) -> None:
    """The model's output and parameter gradients (of a seeded weighting of the output) on tpu
    equal CPU's, with only the expected fallbacks on tpu."""
    device_model = copy.deepcopy(model).to(DEV)
    want = getattr(model(**inputs), output) if output else model(**inputs)
    weights = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    (want * weights).sum().backward()

    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    got = device_model(**hf.to(inputs, DEV))
    got = getattr(got, output) if output else got
    (got * weights.to(DEV)).sum().backward()
    check_fallbacks(name)
    assert_close_to_scale(got.detach(), want.detach(), 1e-4, want.abs().max().item())
    compare_grads(model, device_model)


def pjrt_subset(names: list[str]) -> list[Any]:
    """The names, those outside PJRT_ARCHS skipped on the PJRT driver."""
    skip = pytest.mark.skip(reason="PJRT runs PJRT_ARCHS only (XLA compiles every shape)")
    return [pytest.param(n, marks=[skip] if PJRT and n not in PJRT_ARCHS else []) for n in names]


@pytest.mark.parametrize("name", pjrt_subset([a.model_type for a in hf.ARCHS]))
def test_forward_backward_matches_cpu(name: str, mode: str) -> None:
    arch = hf.BY_NAME[name]
    forward_backward(name, hf.build(arch), hf.inputs(arch))


def test_expected_fallbacks_name_tested_models() -> None:
    # Every entry of the lists belongs to a model some test runs.
    known = set(hf.BY_NAME) | {"unet", "dit", *SCHEDULERS}
    known |= {f"generate-{name}" for name in GENERATE_ARCHS}
    assert set(EXPECTED_FALLBACKS) <= known and set(EXPECTED_DRIVER_FALLBACKS) <= known


def test_moe_grouped_mm_experts() -> None:
    # transformers' default experts implementation on a device (the other tests use "eager"): it
    # counts tokens per expert with torch.histc on int32, as CUDA's histc takes, then calls
    # torch._grouped_mm.
    arch = hf.BY_NAME["mixtral"]
    model = hf.build(arch)
    model.set_experts_implementation("grouped_mm")
    forward_backward("mixtral", model, hf.inputs(arch))


# generate(): greedy and beam search give CPU's tokens; sampling is reproducible under a seed on
# tpu, each token one the warpers (top-k, top-p) left a finite score.
GENERATE_ARCHS = ["llama", "gpt2", "qwen2"]
EOS = 2  # the tiny configs' eos_token_id
DECODING: dict[str, dict[str, Any]] = {
    "greedy": {"do_sample": False},
    "beam": {"do_sample": False, "num_beams": 3},
    "top_k": {"do_sample": True, "top_k": 5},
    "top_p": {"do_sample": True, "top_p": 0.8, "top_k": 0},
}


@pytest.mark.parametrize("decoding", list(DECODING))
@pytest.mark.parametrize("name", GENERATE_ARCHS)
def test_generate(name: str, decoding: str, mode: str) -> None:
    arch = hf.BY_NAME[name]
    model = hf.build(arch)
    prompt = hf.inputs(arch)
    prompt["attention_mask"] = torch.ones_like(prompt["attention_mask"])  # no right padding
    device_model = copy.deepcopy(model).to(DEV)
    options = {"max_new_tokens": 6, "pad_token_id": 0, "eos_token_id": EOS, **DECODING[decoding]}

    def run(m: torch.nn.Module, x: dict[str, torch.Tensor], seed: int) -> Any:
        torch.manual_seed(seed)
        with torch.no_grad():
            return m.generate(**x, **options, return_dict_in_generate=True, output_scores=True)

    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    got = run(device_model, hf.to(prompt, DEV), 3)
    check_fallbacks(f"generate-{name}")
    tokens = got.sequences.cpu()
    assert tokens.shape[0] == hf.BATCH and tokens.shape[1] > hf.SEQ
    assert ((tokens >= 0) & (tokens < hf.VOCAB)).all()
    if not options["do_sample"]:
        assert torch.equal(tokens, run(model, prompt, 3).sequences)
        return
    assert torch.equal(tokens, run(device_model, hf.to(prompt, DEV), 3).sequences.cpu())
    new = tokens[:, hf.SEQ :]
    scores = torch.stack([s.cpu() for s in got.scores], 1)  # (batch, step, vocab), warped
    picked = scores.gather(2, new[..., None]).squeeze(2)
    # Sampled tokens: those up to a row's first end of sequence (padding follows it).
    ended = (new == EOS).long().cumsum(1) - (new == EOS).long() > 0
    assert (torch.isfinite(picked) | ended).all(), (new, picked)


def test_from_pretrained_device_map(tmp_path: Path, mode: str) -> None:
    # save_pretrained (safetensors), then from_pretrained straight onto tpu: CPU's logits.
    arch = hf.BY_NAME["llama"]
    hf.build(arch).save_pretrained(tmp_path, safe_serialization=True)
    assert (tmp_path / "model.safetensors").exists()
    cpu_model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    torch.tpu.reset_op_stats()
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, device_map=DEV).eval()
    assert all(p.device.type == DEV for p in model.parameters())
    inputs = hf.inputs(arch)
    with torch.no_grad():
        want = cpu_model(**inputs).logits
        got = model(**hf.to(inputs, DEV)).logits
    check_fallbacks("llama")
    assert_close_to_scale(got, want, 1e-4, want.abs().max().item())


# diffusers: a tiny UNet2DConditionModel (cross attention, ResNet blocks, group norm, up/down
# sampling) and a tiny DiT, forward and backward; scheduler steps.
def tiny_unet() -> tuple[torch.nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    model = diffusers.UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=4,
        norm_num_groups=8,
    ).eval()
    g = torch.Generator().manual_seed(2)
    inputs = {
        "sample": torch.randn(2, 4, 8, 8, generator=g),
        "timestep": torch.tensor([10, 500]),
        "encoder_hidden_states": torch.randn(2, 5, 16, generator=g),
    }
    return model, inputs


def tiny_dit() -> tuple[torch.nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    model = diffusers.DiTTransformer2DModel(
        num_attention_heads=2,
        attention_head_dim=8,
        in_channels=4,
        out_channels=4,
        num_layers=2,
        sample_size=8,
        patch_size=2,
        num_embeds_ada_norm=10,
        norm_num_groups=4,
    ).eval()
    g = torch.Generator().manual_seed(2)
    inputs = {
        "hidden_states": torch.randn(2, 4, 8, 8, generator=g),
        "timestep": torch.tensor([10, 500]),
        "class_labels": torch.tensor([3, 7]),
    }
    return model, inputs


@pytest.mark.parametrize("name", ["unet", "dit"])
def test_diffusers_model(name: str, mode: str) -> None:
    model, inputs = {"unet": tiny_unet, "dit": tiny_dit}[name]()
    forward_backward(name, model, inputs, output="sample")


SCHEDULERS = ["DDPMScheduler", "DDIMScheduler", "EulerDiscreteScheduler"]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_scheduler_step(scheduler: str, mode: str) -> None:
    # Two denoising steps on tpu tensors equal CPU's; DDPM's noise from a CPU generator, which
    # diffusers draws on the CPU and moves (the same noise on both sides).
    def steps(device: str) -> torch.Tensor:
        sched = getattr(diffusers, scheduler)(num_train_timesteps=100)
        sched.set_timesteps(10, device=device)
        g = torch.Generator().manual_seed(4)
        sample = torch.randn(2, 4, 8, 8, generator=g).to(device)
        sample = sample * sched.init_noise_sigma
        noise_gen = torch.Generator().manual_seed(5)
        for t in sched.timesteps[:2]:
            model_in = sched.scale_model_input(sample, t)
            model_out = torch.tanh(model_in)  # a stand-in denoiser
            extra = {"generator": noise_gen} if scheduler == "DDPMScheduler" else {}
            sample = sched.step(model_out, t, sample, **extra).prev_sample
        return sample

    want = steps("cpu")
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    got = steps(DEV)
    check_fallbacks(scheduler)
    assert_close_to_scale(got, want, 1e-5, want.abs().max().item())
