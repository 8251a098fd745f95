#!/usr/bin/env python3
"""Writes tests/fixtures/tiny/: a tiny Qwen3.5 model + `multimodal` LoRA in the upstream layout.

Reference: Transformers 5.17.0 Qwen3_5ForConditionalGeneration and PEFT 0.21.0 (torch 2.14.0,
CPU). The config is spec/model.md section 11; weights are re-randomised as that section suggests
(linear weights N(0, 1/fan_in), lora_B non-zero) and the base is stored in BF16, LoRA in F32.

Layout written (the same shape as the real pinned artifacts):
  tiny/base/        config.json, preprocessor_config.json, model.safetensors.index.json + 2 shards,
                    tokenizer.json, tokenizer_config.json
  tiny/multimodal/  adapter_config.json, adapter_model.safetensors
  tiny/weights.lock.json   schema cua-s1/weights-lock/v1; adapter names prefixed "multimodal/"
  tiny/manifest.json       what the C++ loaders must find (names, shapes, dtypes, LoRA modules)

The tiny tokenizer (tokenizer.json, tokenizer_config.json) is written into tiny/base/ by
tools/make_tiny_tokenizer.py, which this script runs before it writes the lock.

Run: /work/venv/bin/python tools/make_tiny_model.py [output_dir]
"""

import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

assert transformers.__version__ == "5.17.0", transformers.__version__
assert peft.__version__ == "0.21.0", peft.__version__
assert torch.__version__.startswith("2.14."), torch.__version__

# spec/model.md section 11.
TINY_CONFIG = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "image_token_id": 500,
    "video_token_id": 501,
    "vision_start_token_id": 497,
    "vision_end_token_id": 498,
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "qwen3_5_text",
        "vocab_size": 512,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 4,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "attn_output_gate": True,
        "attention_bias": False,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 4096,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000000,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
            "mrope_interleaved": True,
        },
        "tie_word_embeddings": True,
    },
    "vision_config": {
        "model_type": "qwen3_5_vision",
        "depth": 2,
        "hidden_size": 128,
        "num_heads": 2,
        "intermediate_size": 256,
        "in_channels": 3,
        "patch_size": 16,
        "temporal_patch_size": 2,
        "spatial_merge_size": 2,
        "out_hidden_size": 64,
        "num_position_embeddings": 64,
        "hidden_act": "gelu_pytorch_tanh",
        "rope_parameters": {"rope_type": "axial", "rope_theta": 10000.0},
    },
}

TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                  "linear_fc1", "linear_fc2"]
BASE_MODEL_NAME = "cua-s1/tiny-qwen3.5"

# The pinned processor settings (tests/fixtures/qwen35/preprocessor_config.json).
PREPROCESSOR_CONFIG = {
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "Qwen2VLImageProcessor",
    "image_std": [0.5, 0.5, 0.5],
    "merge_size": 2,
    "patch_size": 16,
    "processor_class": "Qwen3VLProcessor",
    "rescale_factor": 1 / 255,
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
    "temporal_patch_size": 2,
}


EMBED_STD = 0.12


def randomise(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Re-draws every base parameter so that signals neither vanish nor explode (model.md 11)."""

    def normal(shape, std, mean=0.0):
        return torch.randn(shape, generator=generator) * std + mean

    with torch.no_grad():
        for name, param in model.named_parameters():
            shape = tuple(param.shape)
            leaf = name.split(".")[-2:]
            if name.endswith("A_log"):
                value = torch.empty(shape).uniform_(1.0, 16.0, generator=generator).log()
            elif name.endswith("dt_bias"):
                value = normal(shape, 1.0)
            elif "conv1d" in name:
                value = normal(shape, 0.5)
            elif "embed_tokens" in name:
                # Also the tied head: at std 1 the letter logits span ~8 and one letter wins
                # whatever the input; a smaller row norm keeps the distributions input-dependent.
                value = normal(shape, EMBED_STD)
            elif "pos_embed" in name:
                value = normal(shape, 0.5)
            elif "linear_attn.norm" in name or ".norm1." in name or ".norm2." in name or \
                    "merger.norm." in name:
                # Gated RMSNorm and LayerNorm weights multiply directly: 1 + noise.
                value = normal(shape, 0.1, 1.0) if leaf[-1] == "weight" else normal(shape, 0.05)
            elif "norm" in leaf[0]:
                # Zero-centred RMSNorm (decoder norms, final norm, q_norm, k_norm): w is an offset.
                value = normal(shape, 0.1)
            elif leaf[-1] == "bias":
                value = normal(shape, 0.05)
            elif leaf[-1] == "weight" and len(shape) >= 2:
                fan_in = math.prod(shape[1:])
                value = normal(shape, 1.0 / math.sqrt(fan_in))
            else:
                raise RuntimeError(f"no init rule for {name} {shape}")
            param.copy_(value)


def randomise_lora(model: torch.nn.Module, generator: torch.Generator) -> None:
    """lora_A N(0, 1/in), lora_B N(0, 0.05): PEFT's lora_B = 0 would make the adapter a no-op."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_A" in name:
                param.copy_(torch.randn(param.shape, generator=generator) / math.sqrt(param.shape[1]))
            elif "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.05)


def file_entry(path: Path) -> dict:
    data = path.read_bytes()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / \
        "tests/fixtures/tiny"
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(20250317)
    config = Qwen3_5Config(**json.loads(json.dumps(TINY_CONFIG)))
    model = Qwen3_5ForConditionalGeneration(config).eval()
    randomise(model, generator)
    model = model.to(torch.bfloat16)

    state = model.state_dict()
    base_tensors = {name: {"shape": list(t.shape), "dtype": "BF16"} for name, t in state.items()
                    if name != "lm_head.weight"}  # tied: not stored

    lora_config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, bias="none",
                             target_modules=list(TARGET_MODULES))
    peft_model = get_peft_model(model, lora_config)
    # LoRA weights in fp32, as the real adapter stores them (PEFT's autocast_adapter_dtype).
    for name, param in peft_model.named_parameters():
        if "lora_" in name:
            assert param.dtype == torch.float32, (name, param.dtype)
    randomise_lora(peft_model, generator)
    lora_modules = sorted(name for name, module in peft_model.named_modules()
                          if isinstance(module, peft.tuners.lora.LoraLayer))

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        # Save the base from a fresh unwrapped copy of the same weights.
        base_copy = Qwen3_5ForConditionalGeneration(config).to(torch.bfloat16)
        base_copy.load_state_dict(state, strict=True)
        base_copy.save_pretrained(scratch / "base", max_shard_size="2MB")
        peft_model.save_pretrained(scratch / "multimodal")

        # Replace only what this script writes (reference/ is made by make_tiny_reference.py).
        for generated in ("base", "multimodal"):
            if (out / generated).exists():
                shutil.rmtree(out / generated)
        (out / "base").mkdir(parents=True)
        (out / "multimodal").mkdir()
        for item in sorted((scratch / "base").iterdir()):
            if item.name == "generation_config.json":
                continue  # the pinned base has none
            shutil.copy(item, out / "base" / item.name)
        (out / "base" / "preprocessor_config.json").write_text(
            json.dumps(PREPROCESSOR_CONFIG, indent=2, sort_keys=True) + "\n")
        adapter_config = json.loads((scratch / "multimodal" / "adapter_config.json").read_text())
        adapter_config["base_model_name_or_path"] = BASE_MODEL_NAME
        # PEFT stores a set: sort it so that reruns give the same bytes.
        adapter_config["target_modules"] = sorted(adapter_config["target_modules"])
        (out / "multimodal" / "adapter_config.json").write_text(
            json.dumps(adapter_config, indent=2, sort_keys=True) + "\n")
        shutil.copy(scratch / "multimodal" / "adapter_model.safetensors",
                    out / "multimodal" / "adapter_model.safetensors")

    subprocess.run([sys.executable, str(Path(__file__).with_name("make_tiny_tokenizer.py")),
                    str(out / "base")], check=True)

    lock = {
        "schema": "cua-s1/weights-lock/v1",
        "description": "Tiny Qwen3.5 fixture (tools/make_tiny_model.py): base and multimodal LoRA.",
        "artifacts": [
            {"name": "tiny-qwen3.5", "repo_id": BASE_MODEL_NAME, "revision": "fixture",
             "role": "base",
             "files": {p.name: file_entry(p) for p in sorted((out / "base").iterdir())}},
            {"name": "tiny-qwen3.5-lora", "repo_id": "cua-s1/tiny-qwen3.5-lora",
             "revision": "fixture", "role": "adapter",
             "files": {"multimodal/" + p.name: file_entry(p)
                       for p in sorted((out / "multimodal").iterdir())}},
        ],
    }
    (out / "weights.lock.json").write_text(json.dumps(lock, indent=2) + "\n")

    prefix = "base_model.model."
    manifest = {
        "transformers": transformers.__version__, "peft": peft.__version__,
        "base_tensors": base_tensors,
        "lora_modules": [name[len(prefix):] if name.startswith(prefix) else name
                         for name in lora_modules],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(base_tensors)} base tensors, {len(lora_modules)} LoRA modules, "
          f"{total} bytes")


if __name__ == "__main__":
    main()
