#!/usr/bin/env python3
"""Writes a full-size Qwen3.5-4B-shaped model with random weights + a random `multimodal` LoRA.

What it is for: a stand-in for the pinned Qwen/Qwen3.5-4B + cua-s1-4b-0.2 artifacts (not
available here) with the exact shapes, names, dtypes and file layout, so that the native loader,
the CUDA engine and the Transformers controls (tools/make_tiny_reference.py --base/--adapter) can
be run and compared at full size on the H200.

Model: the Qwen3_5Config of /work/shared/tools/hf_baseline.py (spec/model.md section 1: 32 text
layers [GDN x 3, gated attention] x 8, hidden 2560, vocab 248,320 tied; 24-block 1024-wide
vision, 2304-entry position table, merger to 2560; real special-token ids 248044..). The script
asserts that its config equals that one and that the model has 4,539,265,536 parameters
(model.md 9). LoRA: PEFT r=16, lora_alpha=32, the 9 target_modules of model.md 7.2, asserted
to give exactly 178 modules (128 language, 50 vision incl. the merger) and 25,403,392 fp32
parameters. Base stored BF16 (every tensor, as tools/make_tiny_model.py stores the tiny base),
LoRA F32.

Layout written (the same as tools/make_tiny_model.py writes for the tiny fixture, which mirrors
the upstream artifacts):
  OUT/base/        config.json (Transformers save_pretrained), model-0000N-of-0000M.safetensors
                   shards of at most --shard-size (4GB: 3 shards), model.safetensors.index.json,
                   tokenizer.json (= tests/fixtures/tokenizer/qwen35-tokenizer.json.xz
                   decompressed), tokenizer_config.json (what Qwen3_5Tokenizer.save_pretrained
                   writes for it), preprocessor_config.json (= tests/fixtures/qwen35/)
  OUT/multimodal/  adapter_config.json (PEFT's, base_model_name_or_path set, target_modules
                   sorted), adapter_model.safetensors (PEFT save_pretrained, F32)
  OUT/weights.lock.json   schema cua-s1/weights-lock/v1, adapter files prefixed "multimodal/"
  OUT/manifest.json       tensor names/shapes/dtypes, LoRA modules, counts, init scales, seed
The tensor names are those of Transformers' save_pretrained for Qwen3_5ForConditionalGeneration
("model.visual.*", "model.language_model.*"; the tied lm_head is not stored) and of PEFT's
("base_model.model.model.{visual,language_model}.<module>.lora_{A,B}.weight"), which is what
src/model/weight_loader.cpp and src/model/lora_adapter.cpp bind.

Random init (the rules of tools/make_tiny_model.py `randomise`, spec/model.md 11, with the
embedding std scaled to the width): linear / conv weights N(0, 1/fan_in), so that every
projection keeps the RMS of its input through 32 + 24 residual layers (the Transformers
default, N(0, 0.02) everywhere, is 1/sqrt(2500): it shrinks the 1024-wide vision signal by 0.64
per linear and amplifies the 9216-wide down_proj by 1.9; its RMSNorm offsets 0, gated/Layer
norms 1 and PEFT's lora_B = 0 would leave the norm weights and the adapter untested); biases
N(0, 0.05); zero-centred RMSNorm offsets N(0, 0.1); gated-norm and LayerNorm weights
1 + N(0, 0.1), LayerNorm biases N(0, 0.05); position table N(0, 0.5); conv1d N(0, 0.5);
A_log = log U(1, 16); dt_bias N(0, 1).
Embedding (also the tied head): a letter logit is e_letter . h, h the final-norm output (RMS
about 1), so the logits of the letters spread by about std(e) * sqrt(hidden). That spread
decides flat (<< 1) versus one-hot (>> 1): the tiny fixture found std 0.12 at hidden 64
(spread about 1) right and std 1.0 (spread 8) one-hot whatever the input. So the std is
0.12 * sqrt(64 / hidden) = 0.0190 at hidden 2560, the same spread. (The 0.02 default would give
about the same spread at this width; what it gets wrong is the rest above.)
LoRA: lora_A N(0, 1/in), lora_B N(0, --lora-b-std = 0.01): for unit-RMS inputs the delta
2 * B A x has RMS about 2 * 0.01 * sqrt(16) = 0.08 of the base output, a visible but small
change per module. A short check forward on --device measures both on a few synthetic inputs
(4 letters), adapter on and off, and warns when the letters look flat or one-hot.
Measured (seed 0, full size, CPU): |LoRA delta| / |base output| 0.077-0.084 on the watched
modules; letters p(adapter) max 0.53-0.86, p(base) max 0.52-0.65; the random network
amplifies the 178 small deltas: the adapter moves the letter probabilities by up to 0.12-0.22
(relative change of the logit vector 0.74-0.87). On std-small, the native CPU engine (close to
an fp32 control) and Transformers BF16 differed by 0.028 in probability, std-two-questions/
second by 0.005.

Determinism: the weights are drawn on the CPU with numpy (PCG64 + standard_normal, float32; one
stream per tensor chunk of 2^24 values, seeded by (--seed, chunk, SHA-256 of the tensor name)),
independent of --device, of the thread count and of the order of the work. numpy's PCG64 and
ziggurat normal streams are platform independent, so the same seed should give the same bytes
on another machine (config.json, the index and adapter_config.json also carry library
versions). Seed 0, full size, on the CPU machine (torch 2.14, numpy 2.4): SHA-256
  model-00001-of-00003.safetensors c92938aa2265396649a2eeab508129cc431f4563a5602e6bf91a0b1a74260e57
  model-00002-of-00003.safetensors 933dd6dcfac1dc78aec603ef031eaab88261047372b89fad61adb34b6fd5ce5a
  model-00003-of-00003.safetensors ac49f2f94ad1b6537c30c7bb6b4318631d5dffde3823ef0e038816095755b829
  adapter_model.safetensors        0ed1c15528948cdc5e4613517f41ab23e03c91630483266db08b810933627321
(101,665,112 bytes, the size of the pinned upstream adapter file).

Options: --out DIR (required unless --dry-run), --device cuda|cpu (where the check forward
runs; default cuda), --seed N (default 0), --shard-size (default 4GB), --no-check (skip the
check forward), --dry-run (build on the meta device, check names/shapes/counts, print what
would be written, allocate and write nothing), --threads N (default: all cores),
--lora-b-std (default 0.01). Hidden /
testing: --stand-in-small (same structure, small widths, real vocabulary and token ids, so
that it runs on a CPU in seconds: 8 layers [GDN x 3, attention] x 2, hidden 64, vision depth 2
width 128; 38 LoRA modules).

Versions: transformers 5.17.0 is asserted; torch, peft, numpy, safetensors are recorded.
Run: python tools/make_full_random_model.py --out /tmp/full [--device cuda] [--seed 0]
Full size: 9.21 GB written (base 9.08 GB BF16 in 3 shards + tokenizer 33 MB + adapter 0.10 GB),
peak RSS 10.4 GB. On the 2-core CPU machine: 56 s to draw, 16 s to save, 24 s to hash, and
the check forward took 13 minutes on the CPU (seconds on a GPU).
"""

import argparse
import copy
import hashlib
import json
import lzma
import math
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import peft
import safetensors
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration
from transformers.initialization import no_init_weights

assert transformers.__version__ == "5.17.0", transformers.__version__

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER_XZ = ROOT / "tests/fixtures/tokenizer/qwen35-tokenizer.json.xz"
PREPROCESSOR_JSON = ROOT / "tests/fixtures/qwen35/preprocessor_config.json"

# spec/model.md 7.2; the same list as tools/make_tiny_model.py TARGET_MODULES (that module is not
# imported: it asserts the versions of the CPU machine, torch 2.14 / peft 0.21, at import time).
TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                  "linear_fc1", "linear_fc2"]
LORA_R, LORA_ALPHA = 16, 32

FULL_LAYER_TYPES = (["linear_attention"] * 3 + ["full_attention"]) * 8
# The values of /work/shared/tools/hf_baseline.py, written in the style of make_tiny_model.py's
# TINY_CONFIG (model types and the vision rope spelled out); hf_baseline_config() below is that
# script's call verbatim and the two are asserted to give the same Qwen3_5Config.
FULL_CONFIG = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "image_token_id": 248056,
    "video_token_id": 248057,
    "vision_start_token_id": 248053,
    "vision_end_token_id": 248054,
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "qwen3_5_text",
        "vocab_size": 248320,
        "hidden_size": 2560,
        "intermediate_size": 9216,
        "num_hidden_layers": 32,
        "layer_types": FULL_LAYER_TYPES,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "attn_output_gate": True,
        "attention_bias": False,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
            "mrope_interleaved": True,
        },
        "tie_word_embeddings": True,
    },
    "vision_config": {
        "model_type": "qwen3_5_vision",
        "depth": 24,
        "hidden_size": 1024,
        "num_heads": 16,
        "intermediate_size": 4096,
        "in_channels": 3,
        "patch_size": 16,
        "temporal_patch_size": 2,
        "spatial_merge_size": 2,
        "out_hidden_size": 2560,
        "num_position_embeddings": 2304,
        "hidden_act": "gelu_pytorch_tanh",
        "rope_parameters": {"rope_type": "axial", "rope_theta": 10000.0},
    },
}
FULL_COUNTS = {"base_params": 4_539_265_536, "lora_modules": 178, "lora_language": 128,
               "lora_vision": 50, "lora_params": 25_403_392}


def stand_in_config() -> dict:
    """The same structure at small widths (per-head dims as in the 4B model, like the tiny
    fixture of model.md 11), but the real vocabulary and special-token ids, so the real tokenizer
    and every id path stay as at full size. Shapes the CPU backend accepts."""
    config = copy.deepcopy(FULL_CONFIG)
    config["text_config"].update({
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 8,
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 2,
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4})
    config["vision_config"].update({
        "depth": 2, "hidden_size": 128, "num_heads": 2, "intermediate_size": 256,
        "out_hidden_size": 64, "num_position_embeddings": 64})
    return config


def hf_baseline_config() -> Qwen3_5Config:
    """/work/shared/tools/hf_baseline.py's Qwen3_5Config call, verbatim."""
    layer_types = (["linear_attention"] * 3 + ["full_attention"]) * 8
    return Qwen3_5Config(
        text_config=dict(vocab_size=248320, hidden_size=2560, intermediate_size=9216, num_hidden_layers=32,
            num_attention_heads=16, num_key_value_heads=4, head_dim=256, linear_num_key_heads=16,
            linear_num_value_heads=32, linear_key_head_dim=128, linear_value_head_dim=128,
            linear_conv_kernel_dim=4, layer_types=layer_types, rms_norm_eps=1e-6, hidden_act="silu",
            max_position_embeddings=262144, attn_output_gate=True, tie_word_embeddings=True,
            rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                                 mrope_section=[11, 11, 10], mrope_interleaved=True)),
        vision_config=dict(depth=24, hidden_size=1024, num_heads=16, intermediate_size=4096, patch_size=16,
            temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=2560, num_position_embeddings=2304,
            hidden_act="gelu_pytorch_tanh", in_channels=3),
        image_token_id=248056, video_token_id=248057, vision_start_token_id=248053,
        vision_end_token_id=248054, tie_word_embeddings=True)


def expected_lora_modules(config: dict) -> tuple:
    """(language, vision) LoRA module counts for the 9 targets (model.md 7.2)."""
    text, vision = config["text_config"], config["vision_config"]
    full = sum(1 for t in text["layer_types"] if t == "full_attention")
    return 4 * full + 3 * text["num_hidden_layers"], 2 * vision["depth"] + 2


# ---------------------------------------------------------------------------------------------
# Random init

CHUNK = 1 << 24
LORA_B_STD = 0.01


def embed_std(hidden: int) -> float:
    return 0.12 * math.sqrt(64.0 / hidden)


def init_rule(name: str, shape: tuple, hidden: int) -> tuple:
    """(kind, a, b): ("normal", mean, std) or ("log_uniform", low, high); make_tiny_model.py's
    randomise() rules with the embedding std scaled to the width."""
    leaf = name.split(".")[-2:]
    if name.endswith("A_log"):
        return ("log_uniform", 1.0, 16.0)
    if name.endswith("dt_bias"):
        return ("normal", 0.0, 1.0)
    if "conv1d" in name:
        return ("normal", 0.0, 0.5)
    if "embed_tokens" in name:
        return ("normal", 0.0, embed_std(hidden))
    if "pos_embed" in name:
        return ("normal", 0.0, 0.5)
    if "linear_attn.norm" in name or ".norm1." in name or ".norm2." in name or \
            "merger.norm." in name:
        # Gated RMSNorm and LayerNorm weights multiply directly: 1 + noise.
        return ("normal", 1.0, 0.1) if leaf[-1] == "weight" else ("normal", 0.0, 0.05)
    if "norm" in leaf[0]:
        # Zero-centred RMSNorm (decoder norms, final norm, q_norm, k_norm): w is an offset.
        return ("normal", 0.0, 0.1)
    if leaf[-1] == "bias":
        return ("normal", 0.0, 0.05)
    if leaf[-1] == "weight" and len(shape) >= 2:
        return ("normal", 0.0, 1.0 / math.sqrt(math.prod(shape[1:])))
    raise RuntimeError(f"no init rule for {name} {shape}")


def name_words(tag: str) -> list:
    digest = hashlib.sha256(tag.encode()).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]


def draw(seed: int, tag: str, chunk: int, count: int, rule: tuple) -> np.ndarray:
    """`count` float32 values of chunk `chunk` of the tensor `tag`: one PCG64 stream per chunk."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        [seed, chunk] + name_words(tag))))
    kind, a, b = rule
    if kind == "log_uniform":
        return np.log(rng.uniform(a, b, count)).astype(np.float32)
    values = rng.standard_normal(count, dtype=np.float32)
    values *= np.float32(b)
    if a:
        values += np.float32(a)
    return values


def fill(params: list, seed: int, threads: int) -> int:
    """params: [(tag, tensor, rule)]; fills every tensor in place (values rounded to its dtype by
    copy_, round to nearest even for BF16). Returns the number of values drawn."""
    jobs = []
    for tag, tensor, rule in params:
        assert tensor.is_contiguous() and tensor.device.type == "cpu", tag
        flat = tensor.view(-1)
        for chunk, start in enumerate(range(0, flat.numel(), CHUNK)):
            jobs.append((tag, flat, chunk, start, min(flat.numel(), start + CHUNK), rule))

    def run(job):
        tag, flat, chunk, start, end, rule = job
        flat[start:end].copy_(torch.from_numpy(draw(seed, tag, chunk, end - start, rule)))
        return end - start

    with torch.no_grad(), ThreadPoolExecutor(max_workers=threads) as pool:
        return sum(pool.map(run, jobs))


# ---------------------------------------------------------------------------------------------
# Helpers

T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {message}", flush=True)


def human(size: int) -> str:
    return f"{size / 1e9:.3f} GB" if size >= 1e8 else f"{size / 1e6:.3f} MB"


def file_entry(path: Path) -> dict:
    """make_tiny_model.py's lock entry ({"size", "sha256"}), streamed (shards are GBs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def build_model(config: Qwen3_5Config, device: str) -> Qwen3_5ForConditionalGeneration:
    """The model with BF16 parameters and no Transformers init (every parameter is drawn later).
    Built with the default dtype set to BF16 rather than _from_config(dtype=...), so that the
    saved config.json has the same content as make_tiny_model.py's (no per-subconfig dtype)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with no_init_weights(), torch.device(device):
            model = Qwen3_5ForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(previous)
    model.tie_weights()  # no_init_weights also skips init_weights(), which ties
    embed = model.model.language_model.embed_tokens.weight
    assert model.lm_head.weight is embed, "lm_head is not tied to embed_tokens"
    return model.eval()


def lora_modules_of(peft_model) -> list:
    return sorted(name for name, module in peft_model.named_modules()
                  if isinstance(module, peft.tuners.lora.LoraLayer))


def check_counts(config_dict, peft_model, full: bool) -> dict:
    """Parameter and LoRA-module counts of the PEFT-wrapped model (the tied head counted once),
    asserted against model.md 7.2 / 9 (full size) or the same formulas (stand-in)."""
    modules = lora_modules_of(peft_model)
    language = sum(1 for m in modules if ".language_model." in m)
    vision = sum(1 for m in modules if ".visual." in m)
    lora = [(n, p) for n, p in peft_model.named_parameters() if "lora_" in n]
    counts = {"base_params": sum(p.numel() for n, p in peft_model.named_parameters()
                                 if "lora_" not in n),
              "lora_modules": len(modules), "lora_language": language, "lora_vision": vision,
              "lora_params": sum(p.numel() for _, p in lora)}
    want_language, want_vision = expected_lora_modules(config_dict)
    assert (language, vision) == (want_language, want_vision) and language + vision == \
        len(modules), (language, vision, want_language, want_vision, len(modules))
    assert len(lora) == 2 * len(modules), (len(lora), len(modules))
    bad = [n for n, p in lora if p.dtype != torch.float32]
    assert not bad, f"LoRA weights not float32: {bad[:3]}"
    if full:
        assert counts == FULL_COUNTS, (counts, FULL_COUNTS)
    return counts


def lora_config() -> LoraConfig:
    return LoraConfig(r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=0.0, bias="none",
                      target_modules=list(TARGET_MODULES))


# ---------------------------------------------------------------------------------------------
# Check forward


def check_forward(peft_model, config: Qwen3_5Config, device: str, seed: int) -> dict:
    """A few synthetic multimodal prompts through the model on `device` in BF16, adapter on and
    off: letter distributions (4 options), and per-module |LoRA delta| / |base output| on the
    real activations of a few adapted modules."""
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    peft_model.to(device)
    inner = peft_model.get_base_model()
    text_layers = config.text_config.num_hidden_layers
    full_layer = config.text_config.layer_types.index("full_attention")
    watched = {
        f"language.layers.0.mlp.down_proj": inner.model.language_model.layers[0].mlp.down_proj,
        f"language.layers.{full_layer}.self_attn.q_proj":
            inner.model.language_model.layers[full_layer].self_attn.q_proj,
        f"language.layers.{text_layers - 1}.mlp.gate_proj":
            inner.model.language_model.layers[text_layers - 1].mlp.gate_proj,
        "vision.blocks.0.mlp.linear_fc1": inner.model.visual.blocks[0].mlp.linear_fc1,
        "vision.merger.linear_fc2": inner.model.visual.merger.linear_fc2,
    }
    ratios = {name: [] for name in watched}
    handles = []

    def hook_for(name, module):
        def hook(_module, args, _output):
            if not getattr(module, "merged", False) and \
                    not getattr(module, "disable_adapters", False):
                x = args[0].detach().to(torch.float32)
                base = module.base_layer
                y = torch.nn.functional.linear(
                    x, base.weight.float(), None if base.bias is None else base.bias.float())
                a = module.lora_A["default"].weight
                b = module.lora_B["default"].weight
                delta = (x @ a.T) @ b.T * module.scaling["default"]
                ratios[name].append(float(delta.norm() / y.norm()))
        return hook

    for name, module in watched.items():
        handles.append(module.register_forward_hook(hook_for(name, module)))
    letters = [32, 33, 34, 35]
    rows = []
    for k in range(3):
        g = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0x636865636B, k])))
        gh, gw = 4, 6 + 2 * k
        image = (gh * gw) // 4
        before = g.integers(100, 150000, 40 + 5 * k).tolist()
        after = g.integers(100, 150000, 30).tolist()
        ids = ([248045] + before + [config.vision_start_token_id] + [config.image_token_id] * image
               + [config.vision_end_token_id] + after + [248046, 198, 248045, 198, 248068, 198])
        ids = torch.tensor([ids], device=device)
        pixels = torch.from_numpy(np.clip(g.standard_normal((gh * gw, 1536), dtype=np.float32)
                                          * 0.5, -1, 1)).to(device)
        inputs = dict(input_ids=ids, attention_mask=torch.ones_like(ids),
                      mm_token_type_ids=(ids == config.image_token_id).long(),
                      pixel_values=pixels,
                      image_grid_thw=torch.tensor([[1, gh, gw]], device=device),
                      use_cache=False, logits_to_keep=1)
        with torch.inference_mode():
            on = peft_model(**inputs).logits[0, -1].float()
            with peft_model.disable_adapter():
                off = peft_model(**inputs).logits[0, -1].float()
        p_on = torch.softmax(on[letters], -1).cpu()
        p_off = torch.softmax(off[letters], -1).cpu()
        rows.append({"tokens": ids.shape[1], "p_adapter": [round(float(v), 5) for v in p_on],
                     "p_base": [round(float(v), 5) for v in p_off],
                     "max_dp": float((p_on - p_off).abs().max()),
                     "logit_change": float((on - off).norm() / off.norm())})
        log(f"  check input {k}: {ids.shape[1]} tokens, letters A-D p(adapter) "
            f"{rows[-1]['p_adapter']} p(base) {rows[-1]['p_base']} max|dp| "
            f"{rows[-1]['max_dp']:.4f}, |dlogits|/|logits| {rows[-1]['logit_change']:.4f}")
    for h in handles:
        h.remove()
    fractions = {name: round(float(np.mean(v)), 4) for name, v in ratios.items()}
    log(f"  |LoRA delta| / |base output| on the check activations: {fractions}")
    top = [max(r["p_adapter"]) for r in rows]
    if max(top) > 0.999 or min(top) < 1 / len(letters) + 0.01:
        log(f"  WARNING: letter distributions look {'one-hot' if max(top) > 0.999 else 'flat'} "
            f"(max p per input {top})")
    if not all(0.01 < f < 0.5 for f in fractions.values()):
        log(f"  WARNING: LoRA delta fractions outside (0.01, 0.5): {fractions}")
    return {"device": device, "inputs": rows, "lora_delta_fraction": fractions}


# ---------------------------------------------------------------------------------------------


def write_tokenizer(base: Path) -> None:
    with lzma.open(TOKENIZER_XZ) as src, open(base / "tokenizer.json", "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
    from transformers import AutoTokenizer
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer
    # The constructor (not from_pretrained, which adds its load options to the saved config) is
    # what tools/make_qwen35_tokenizer.py saved: the same tokenizer_config.json fields as the
    # tiny fixture's, and its tokenizer.json is byte-identical to the decompressed fixture.
    with tempfile.TemporaryDirectory() as tmp:
        Qwen3_5Tokenizer(tokenizer_file=str(base / "tokenizer.json")).save_pretrained(tmp)
        shutil.copy(Path(tmp) / "tokenizer_config.json", base / "tokenizer_config.json")
    tok = AutoTokenizer.from_pretrained(base)
    letters = [tok.encode(chr(65 + i), add_special_tokens=False) for i in range(26)]
    assert letters == [[32 + i] for i in range(26)], letters
    for token, index in (("<|im_start|>", 248045), ("<|vision_start|>", 248053),
                         ("<|vision_end|>", 248054), ("<|image_pad|>", 248056)):
        assert tok.convert_tokens_to_ids(token) == index, token
    assert tok.encode("<|im_start|>user\n", add_special_tokens=False) == [248045, 846, 198]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="output directory (base/, multimodal/, lock)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="where the check forward runs (weights are drawn on the CPU)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shard-size", default="4GB", help="save_pretrained max_shard_size")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--lora-b-std", type=float, default=LORA_B_STD,
                        help=f"std of lora_B (default {LORA_B_STD}: delta about 8%% of the base)")
    parser.add_argument("--no-check", action="store_true", help="skip the check forward")
    parser.add_argument("--dry-run", action="store_true",
                        help="meta device only: names, shapes and counts; writes nothing")
    parser.add_argument("--stand-in-small", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.out is None and not args.dry_run:
        parser.error("--out is required")
    if args.device == "cuda" and not args.dry_run and not args.no_check and \
            not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available (use --device cpu or --no-check)")
    full = not args.stand_in_small
    config_dict = FULL_CONFIG if full else stand_in_config()
    shard_size = args.shard_size if full or args.shard_size != "4GB" else "12MB"
    kind = "full-size" if full else "stand-in-small"
    versions = {"python": sys.version.split()[0], "torch": torch.__version__,
                "transformers": transformers.__version__, "peft": peft.__version__,
                "numpy": np.__version__, "safetensors": safetensors.__version__}
    log(f"{kind} Qwen3.5 random model, seed {args.seed}; {versions}")

    config = Qwen3_5Config(**json.loads(json.dumps(config_dict)))
    if full:
        ours = config.to_dict()
        theirs = hf_baseline_config().to_dict()
        ours.pop("architectures")
        theirs.pop("architectures")
        assert ours == theirs, "config differs from /work/shared/tools/hf_baseline.py"
        log("config equals hf_baseline.py's Qwen3_5Config")

    # Names, shapes and counts on the meta device (nothing allocated).
    with torch.device("meta"):
        meta = Qwen3_5ForConditionalGeneration(copy.deepcopy(config))
    meta_state = {n: tuple(p.shape) for n, p in meta.named_parameters()}
    meta_peft = get_peft_model(meta, lora_config())
    counts = check_counts(config_dict, meta_peft, full)
    base_bytes = 2 * counts["base_params"]
    lora_bytes = 4 * counts["lora_params"]
    log(f"meta: {counts['base_params']:,} base params in {len(meta_state)} tensors "
        f"({human(base_bytes)} BF16), {counts['lora_modules']} LoRA modules "
        f"({counts['lora_language']} language, {counts['lora_vision']} vision), "
        f"{counts['lora_params']:,} LoRA params ({human(lora_bytes)} F32)")
    del meta, meta_peft
    if args.dry_run:
        rules = {}
        hidden = config_dict["text_config"]["hidden_size"]
        for name, shape in meta_state.items():
            rule = init_rule(name, shape, hidden)  # every tensor has a rule
            rules.setdefault(rule, 0)
            rules[rule] += math.prod(shape)
        for rule, n in sorted(rules.items(), key=lambda kv: -kv[1]):
            print(f"  init {rule[0]}({rule[1]:g}, {rule[2]:.6g}): {n:,} values")
        log(f"dry run: would write about {human(base_bytes + lora_bytes)} "
            f"(shards of at most {shard_size}); nothing written")
        return 0

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    for generated in ("base", "multimodal", ".scratch"):  # replace only what this script writes
        if (out / generated).exists():
            shutil.rmtree(out / generated)
    free = shutil.disk_usage(out).free
    need = int((base_bytes + lora_bytes) * 1.05) + 100_000_000
    if free < need:
        sys.exit(f"{out}: {human(free)} free, about {human(need)} needed")
    scratch = out / ".scratch"
    scratch.mkdir()

    # 1. Base: BF16 parameters, drawn in place.
    start = time.perf_counter()
    model = build_model(config, "cpu")
    hidden = config_dict["text_config"]["hidden_size"]
    params = [(name, p.data, init_rule(name, tuple(p.shape), hidden))
              for name, p in model.named_parameters()]
    assert {n: tuple(t.shape) for n, t, _ in params} == meta_state
    drawn = fill(params, args.seed, args.threads)
    assert drawn == counts["base_params"], (drawn, counts["base_params"])
    embed = model.model.language_model.embed_tokens.weight
    log(f"base drawn: {drawn:,} values in {time.perf_counter() - start:.1f}s "
        f"({args.threads} threads); embed std {float(embed.detach()[:4096].float().std()):.5f} "
        f"(rule {embed_std(hidden):.5f})")

    start = time.perf_counter()
    model.save_pretrained(scratch / "base", max_shard_size=shard_size)
    base = out / "base"
    base.mkdir()
    for item in sorted((scratch / "base").iterdir()):
        if item.name == "generation_config.json":
            continue  # the pinned base has none
        item.rename(base / item.name)
    index = json.loads((base / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) >= 2 and all((base / s).exists() for s in shards), shards
    assert "lm_head.weight" not in index["weight_map"]
    assert sorted(index["weight_map"]) == sorted(meta_state), "index names differ from the model"
    written = sum((base / s).stat().st_size for s in shards)
    sizes = ", ".join(f"{s} {human((base / s).stat().st_size)}" for s in shards)
    log(f"base saved in {time.perf_counter() - start:.1f}s: {len(shards)} shards, "
        f"{human(written)} ({sizes})")

    shutil.copy(PREPROCESSOR_JSON, base / "preprocessor_config.json")
    start = time.perf_counter()
    write_tokenizer(base)
    log(f"tokenizer.json ({human((base / 'tokenizer.json').stat().st_size)}), "
        f"tokenizer_config.json, preprocessor_config.json written and checked in "
        f"{time.perf_counter() - start:.1f}s")
    base_tensors = {name: {"shape": list(shape), "dtype": "BF16"}
                    for name, shape in sorted(meta_state.items())}

    # 2. LoRA: F32, drawn in place; PEFT's own files.
    start = time.perf_counter()
    peft_model = get_peft_model(model, lora_config())
    assert check_counts(config_dict, peft_model, full) == counts
    lora_params = []
    for name, p in peft_model.named_parameters():
        if "lora_A" in name:
            lora_params.append(("lora:" + name, p.data, ("normal", 0.0, 1 / math.sqrt(p.shape[1]))))
        elif "lora_B" in name:
            lora_params.append(("lora:" + name, p.data, ("normal", 0.0, args.lora_b_std)))
    fill(lora_params, args.seed, args.threads)
    modules = lora_modules_of(peft_model)
    peft_model.save_pretrained(scratch / "multimodal")
    adapter = out / "multimodal"
    adapter.mkdir()
    adapter_config = json.loads((scratch / "multimodal" / "adapter_config.json").read_text())
    adapter_config["base_model_name_or_path"] = f"cua-s1/random-qwen3.5-4b-{kind}"
    adapter_config["target_modules"] = sorted(adapter_config["target_modules"])
    (adapter / "adapter_config.json").write_text(
        json.dumps(adapter_config, indent=2, sort_keys=True) + "\n")
    (scratch / "multimodal" / "adapter_model.safetensors").rename(
        adapter / "adapter_model.safetensors")
    shutil.rmtree(scratch)
    from safetensors import safe_open
    with safe_open(adapter / "adapter_model.safetensors", "pt") as f:
        keys = list(f.keys())
        assert len(keys) == 2 * len(modules), (len(keys), len(modules))
        assert all(k.startswith("base_model.model.model.") and
                   k.endswith((".lora_A.weight", ".lora_B.weight")) for k in keys), keys[:3]
        assert all(f.get_slice(k).get_dtype() == "F32" for k in keys)
    log(f"adapter saved in {time.perf_counter() - start:.1f}s: {len(modules)} modules, "
        f"{human((adapter / 'adapter_model.safetensors').stat().st_size)}")

    # 3. Lock and manifest, then the check forward (optional; it only reads the model).
    del params, lora_params
    start = time.perf_counter()
    files = sorted(list(base.iterdir()) + list(adapter.iterdir()))
    with ThreadPoolExecutor(max_workers=min(8, args.threads)) as pool:
        entries = dict(zip(files, pool.map(file_entry, files)))
    name = f"random-qwen3.5-4b{'' if full else '-stand-in-small'}"
    lock = {
        "schema": "cua-s1/weights-lock/v1",
        "description": f"Random-weight {kind} Qwen3.5-4B-shaped base and multimodal LoRA "
                       f"(tools/make_full_random_model.py --seed {args.seed}).",
        "artifacts": [
            {"name": name, "repo_id": f"cua-s1/{name}", "revision": f"seed-{args.seed}",
             "role": "base",
             "files": {p.name: entries[p] for p in sorted(base.iterdir())}},
            {"name": name + "-lora", "repo_id": f"cua-s1/{name}-lora",
             "revision": f"seed-{args.seed}", "role": "adapter",
             "files": {"multimodal/" + p.name: entries[p] for p in sorted(adapter.iterdir())}},
        ],
    }
    (out / "weights.lock.json").write_text(json.dumps(lock, indent=2) + "\n")
    log(f"weights.lock.json written ({len(files)} files hashed in "
        f"{time.perf_counter() - start:.1f}s)")
    prefix = "base_model.model."
    manifest = {
        "kind": kind, "seed": args.seed, "versions": versions, "counts": counts,
        "init": {"embed_std": embed_std(hidden), "lora_b_std": args.lora_b_std,
                 "linear_std": "1/sqrt(fan_in)"},
        "check": None,
        "base_tensors": base_tensors,
        "lora_modules": [m[len(prefix):] if m.startswith(prefix) else m for m in modules],
    }

    def write_manifest():
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    write_manifest()
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    for p in files:
        print(f"  {p.relative_to(out)}  {entries[p]['size']:>12,} B  {entries[p]['sha256']}")
    log(f"{out}: {len(base_tensors)} base tensors, {len(modules)} LoRA modules, {total:,} bytes "
        f"({human(total)}) written")

    status = 0
    if not args.no_check:
        start = time.perf_counter()
        where = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
        log(f"check forward on {args.device} ({where}; BF16, adapter on/off)")
        try:
            manifest["check"] = check_forward(peft_model, config, args.device, args.seed)
            write_manifest()
            log(f"check done in {time.perf_counter() - start:.1f}s (results in manifest.json)")
        except Exception:  # the files are written and locked; report and fail the exit code
            import traceback
            traceback.print_exc()
            log("CHECK FORWARD FAILED (the model files and the lock are complete)")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
