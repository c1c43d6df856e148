"""Tiny Hugging Face models built offline from configs (no hub), with seeded inputs and a loss,
for tests/test_hf_models.py: each architecture as transformers builds it for its task, with a
hidden size of 32 or so, 2 layers and a vocabulary of 99 tokens, small enough to run in
seconds on the host driver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

VOCAB = 99
BATCH, SEQ = 2, 8

# The shared sizes of decoder LMs whose configs name them the Llama way.
LLAMA_LIKE = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 48,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
# Of GPT-2-like decoder LMs.
GPT2_LIKE = {"vocab_size": VOCAB, "n_embd": 32, "n_layer": 2, "n_head": 4}
GPT2_LIKE |= {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
# Of BERT-like encoders.
BERT_LIKE = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 48,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "pad_token_id": 0,
}
# Of BART-like encoder-decoders.
BART_LIKE = {
    "vocab_size": VOCAB,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 48,
    "decoder_ffn_dim": 48,
    "max_position_embeddings": 64,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
}
# Of ViT-like image encoders (32x32 images in patches of 8).
VIT_LIKE = {
    "image_size": 32,
    "patch_size": 8,
    "num_channels": 3,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 48,
    "num_labels": 5,
}
# Of wav2vec2-like speech encoders (two strided convolutions over the waveform).
WAV2VEC2_LIKE = {
    "vocab_size": 32,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 48,
    "conv_dim": (16, 16),
    "conv_stride": (4, 4),
    "conv_kernel": (8, 8),
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 2,
    "pad_token_id": 0,
}
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}


@dataclass(frozen=True)
class Arch:
    """One architecture: its model_type, the task head it is built with, and its config."""

    model_type: str
    task: str  # causal, masked, seq2seq, image, ctc, speech2text
    config: dict[str, Any] = field(default_factory=dict)


def _arch(model_type: str, task: str, **config: Any) -> Arch:
    return Arch(model_type, task, config)


ARCHS: list[Arch] = [
    # Decoder LMs, dense.
    _arch("llama", "causal", **LLAMA_LIKE),
    _arch("mistral", "causal", **LLAMA_LIKE),
    _arch("qwen2", "causal", **LLAMA_LIKE),
    _arch("qwen3", "causal", **LLAMA_LIKE, head_dim=8),
    _arch("gemma", "causal", **LLAMA_LIKE, head_dim=8),
    _arch("gemma2", "causal", **LLAMA_LIKE, head_dim=8, sliding_window=4),
    _arch("gemma3_text", "causal", **LLAMA_LIKE, head_dim=8, sliding_window=4),
    _arch("phi", "causal", **LLAMA_LIKE),
    _arch("phi3", "causal", **LLAMA_LIKE),
    _arch("stablelm", "causal", **LLAMA_LIKE),
    _arch("olmo", "causal", **LLAMA_LIKE),
    _arch("olmo2", "causal", **LLAMA_LIKE),
    _arch("granite", "causal", **LLAMA_LIKE),
    _arch("cohere", "causal", **LLAMA_LIKE),
    _arch("starcoder2", "causal", **LLAMA_LIKE),
    _arch("gpt_neox", "causal", **LLAMA_LIKE),
    _arch("falcon", "causal", **LLAMA_LIKE),
    _arch("opt", "causal", **LLAMA_LIKE, ffn_dim=48, word_embed_proj_dim=32),
    _arch("bloom", "causal", vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4),
    _arch("gpt2", "causal", **GPT2_LIKE, n_positions=64),
    _arch("gpt_bigcode", "causal", **GPT2_LIKE),
    _arch("gptj", "causal", **GPT2_LIKE, rotary_dim=4),
    _arch("codegen", "causal", **GPT2_LIKE, rotary_dim=4),
    _arch("mpt", "causal", vocab_size=VOCAB, d_model=32, n_layers=2, n_heads=4, expansion_ratio=2),
    # Decoder LMs, mixture of experts.
    _arch("mixtral", "causal", **LLAMA_LIKE, num_local_experts=4, num_experts_per_tok=2),
    _arch("qwen2_moe", "causal", **LLAMA_LIKE, **MOE, shared_expert_intermediate_size=32),
    _arch("qwen3_moe", "causal", **LLAMA_LIKE, **MOE, head_dim=8),
    _arch("olmoe", "causal", **LLAMA_LIKE, **MOE),
    # Encoders.
    _arch("bert", "masked", **BERT_LIKE),
    _arch("roberta", "masked", **BERT_LIKE, bos_token_id=0, eos_token_id=2),
    _arch("xlm-roberta", "masked", **BERT_LIKE),
    _arch("electra", "masked", **BERT_LIKE, embedding_size=16),
    _arch("albert", "masked", **BERT_LIKE, embedding_size=16),
    _arch(
        "deberta-v2",
        "masked",
        **BERT_LIKE,
        relative_attention=True,
        position_buckets=16,
        pos_att_type=["p2c", "c2p"],
    ),
    _arch("distilbert", "masked", vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=48),
    # Encoder-decoders.
    _arch(
        "t5",
        "seq2seq",
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=48,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        decoder_start_token_id=0,
        pad_token_id=0,
    ),
    _arch("bart", "seq2seq", **BART_LIKE),
    _arch("mbart", "seq2seq", **BART_LIKE),
    _arch("pegasus", "seq2seq", **BART_LIKE),
    _arch("marian", "seq2seq", **BART_LIKE),
    # Vision.
    _arch("vit", "image", **VIT_LIKE),
    # (DeiT's task maps to two classes: the config names the one meant.)
    _arch("deit", "image", **VIT_LIKE, architectures=["DeiTForImageClassification"]),
    _arch("beit", "image", **VIT_LIKE, use_relative_position_bias=True),
    _arch(
        "swin",
        "image",
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
        num_labels=5,
    ),
    _arch(
        "convnext",
        "image",
        num_stages=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        num_labels=5,
    ),
    _arch(
        "resnet",
        "image",
        embedding_size=16,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        layer_type="basic",
        num_labels=5,
    ),
    _arch("mobilenet_v2", "image", image_size=32, depth_multiplier=0.25, num_labels=5),
    # Audio.
    _arch("wav2vec2", "ctc", **WAV2VEC2_LIKE),
    _arch("hubert", "ctc", **WAV2VEC2_LIKE),
    _arch(
        "whisper",
        "speech2text",
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=48,
        decoder_ffn_dim=48,
        num_mel_bins=16,
        max_source_positions=16,
        max_target_positions=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    ),
]

BY_NAME = {a.model_type: a for a in ARCHS}
MOE_ARCHS = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"}


def build(arch: Arch, seed: int = 0) -> torch.nn.Module:
    """The architecture's model for its task, on CPU in float32, eval mode (no dropout), with
    weights drawn from `seed`."""
    import transformers as tf

    auto = {
        "causal": tf.AutoModelForCausalLM,
        "masked": tf.AutoModelForMaskedLM,
        "seq2seq": tf.AutoModelForSeq2SeqLM,
        "image": tf.AutoModelForImageClassification,
        "ctc": tf.AutoModelForCTC,
        "speech2text": tf.AutoModelForSpeechSeq2Seq,
    }[arch.task]
    config = tf.AutoConfig.for_model(arch.model_type, **arch.config)
    # Eager attention: the plain matmul-softmax path, the same on both devices.
    # Eager experts for MoE: transformers' default on a device, grouped_mm, is
    # tests/test_hf_models.py's test_moe_grouped_mm_experts.
    extra = {"experts_implementation": "eager"} if arch.model_type in MOE_ARCHS else {}
    torch.manual_seed(seed)
    return auto.from_config(config, attn_implementation="eager", **extra).eval()


def inputs(arch: Arch, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded CPU inputs for the model's forward: a batch of 2, the second row of text padded."""
    g = torch.Generator().manual_seed(seed)
    if arch.task in ("causal", "masked", "seq2seq"):
        ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
        mask = torch.ones(BATCH, SEQ, dtype=torch.long)
        mask[1, -2:] = 0
        out = {"input_ids": ids, "attention_mask": mask}
        if arch.task == "seq2seq":
            out["decoder_input_ids"] = torch.randint(3, VOCAB, (BATCH, SEQ - 2), generator=g)
        return out
    if arch.task == "image":
        return {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g)}
    if arch.task == "ctc":
        return {"input_values": torch.randn(BATCH, 400, generator=g)}
    # Whisper: log-mel features of 2 * max_source_positions frames.
    return {
        "input_features": torch.randn(BATCH, 16, 32, generator=g),
        "decoder_input_ids": torch.randint(3, VOCAB, (BATCH, SEQ), generator=g),
    }


def to(value: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in value.items()}
