#!/usr/bin/env python3
"""Reference outputs of the tiny fixture model (Transformers + PEFT) on the parity corpora.

What it is for: the numerical reference that the native engine is compared against on the tiny
model (tests/fixtures/tiny/base + the LoRA in tests/fixtures/tiny/multimodal), following
spec/contract.md 12.2 on CPU; with --base/--adapter/--device the same controls for another
model directory of the same layout, e.g. the full-size random model of
tools/make_full_random_model.py on a GPU:
  * corpora: tests/fixtures/prepare/requests/std-*.json (standard, 7 requests / 8 questions) and
    bnd-*.json (boundary, 4 requests / 11 questions), the server API bodies of contract 2;
  * reference inputs exactly as tools/make_prepare_fixtures.py builds them (contract 5.2 prompt,
    Pillow decode + convert("RGB"), Qwen3VLProcessor with Qwen2VLImageProcessor, position ids
    from Qwen3_5Model.get_rope_index), but with the tiny tokenizer / preprocessor config of
    tests/fixtures/tiny/base;
  * two controls, CPU (or --device cuda), seed 0, torch.set_num_threads(8), TF32 off (matmul
    and cuDNN), float32 matmul precision "highest", on cuda also CUBLAS_WORKSPACE_CONFIG=:4096:8:
    "fp32" (base loaded with dtype=float32) and "bf16" (dtype=bfloat16); both with the adapter
    loaded unmerged by peft.PeftModel.from_pretrained (LoRA weights stay fp32);
  * one full vision + language prefill per question (no cache, no decoding); readout = the
    last-position hidden state after the final norm, times the embed_tokens rows of the letter ids,
    in float32; probabilities = float32 softmax of those logits (contract 9 / 12.2);
  * per-stage tensors from forward hooks, as a row sample (rows = sorted unique
    round(linspace(0, R-1, min(R, 12))), all columns, float32 values written with 9 significant
    digits): vision.embeddings (input of visual.blocks[0]), vision.blocks.N (block outputs),
    vision.merger (merger output = image features); per question language.embeddings (input of
    language_model.layers[0], image features scattered), language.layers.N, language.norm;
    --stages records only some of them, --sample-rows changes the 12;
  * optional cross-check of input ids, position ids, letter ids, grid and pixel_values sha256
    against our own preprocessing CLI (cua-s1-prepare --model tests/fixtures/tiny/base REQ.json),
    and of grid / pixel hash against tests/fixtures/prepare/expected.json (real tokenizer; the
    image path does not depend on the tokenizer; when --base holds that real tokenizer, as the
    full-size random model does, also of input ids, position ids and letter ids). Any mismatch is
    printed and the exit code is 1 (the reference file is still written: it records
    Transformers' values, not ours).

Writes tests/fixtures/tiny/reference/reference.json (schema cua-s1/tiny-reference/v1) and prints
per question the probabilities, max p, |p_bf16 - p_fp32| and the fp32 top-two margin, and per
corpus max |p_bf16 - p_fp32|.

Versions: transformers 5.17.0 is asserted. The committed tiny reference was made with Python
3.11, torch 2.14.0 (CPU), peft 0.21.0, tokenizers 0.23.2, torchvision 0.29.0, Pillow 11.3.0,
numpy 2.4; other versions are allowed (e.g. the H200's torch 2.11 / torchvision 0.26) and are
printed. The JSON header keeps {schema, versions: torch/transformers/peft, attn_implementation};
it also gets "environment" (every version, Python, the device name, --base/--adapter, model
size, threads, --stages/--sample-rows) whenever the run is not the pinned default (tiny fixture,
CPU, the versions above), so that the committed file stays byte-identical.

Output size: about 11 bytes per stage value (gzip: about 3 bytes). The tiny model: 3.2 MB. The
full-size model with every stage: 47 M values, about 0.5 GB and a minute or two of formatting;
--stages (comma-separated fnmatch patterns, or "none") and --sample-rows cut it (e.g. 9 stages
at 4 rows: about 26 MB, 7 MB gzipped), and an --out ending in .gz is written gzipped. The
readout and the checks always capture vision.merger, language.embeddings and language.norm.

Run (from the repository root):
  /work/venv/bin/python tools/make_tiny_reference.py [--prepare build-ref/src/cua-s1-prepare]
      [--out tests/fixtures/tiny/reference/reference.json]
  python3 tools/make_tiny_reference.py --base FULL/base --adapter FULL/multimodal --device cuda
      --out /tmp/full-reference.json [--stages PATTERNS] [--sample-rows N]
"""

import argparse
import base64
import fnmatch
import gc
import gzip
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import peft
import PIL
import tokenizers
import torch
import torchvision
import transformers
from peft import PeftModel
from PIL import Image
from transformers import AutoTokenizer, Qwen3_5ForConditionalGeneration
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

assert transformers.__version__ == "5.17.0", transformers.__version__
# The environment of the committed tiny reference: other versions are recorded, not refused.
PINNED = {"python": "3.11.", "torch": "2.14.0", "peft": "0.21.0", "tokenizers": "0.23.2",
          "torchvision": "0.29.0", "pillow": "11.3.0", "numpy": "2.4."}

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_prepare_fixtures as prep  # noqa: E402  (prompt_for, rope_index, PREPROCESSOR_CONFIG)

BASE = ROOT / "tests/fixtures/tiny/base"
ADAPTER = ROOT / "tests/fixtures/tiny/multimodal"
REQUESTS = ROOT / "tests/fixtures/prepare/requests"
EXPECTED = ROOT / "tests/fixtures/prepare/expected.json"
SAMPLE_ROWS = 12
# Contract 12.3 table order.
CORPUS_ORDER = ["std-small", "std-wide", "std-portrait", "std-jpeg", "std-single-option",
                "std-26-options", "std-two-questions",
                "bnd-maximum", "bnd-narrow", "bnd-noise", "bnd-tiny-eight"]
CONTROLS = {"fp32": torch.float32, "bf16": torch.bfloat16}
# tests/fixtures/tokenizer/qwen35-tokenizer.json.xz decompressed: the tokenizer of
# tests/fixtures/prepare/expected.json (and of tools/make_full_random_model.py's base).
QWEN35_TOKENIZER_SHA256 = "be33384cc87a71da4bab7bc9f363c676d740820afcfdba16073753824fca4914"
REQUIRED_STAGES = ("vision.merger", "language.embeddings", "language.norm")  # readout + checks


def setup_determinism():
    torch.manual_seed(0)  # also seeds every CUDA device
    np.random.seed(0)
    torch.set_num_threads(8)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def versions_now() -> dict:
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "peft": peft.__version__,
            "tokenizers": tokenizers.__version__, "torchvision": torchvision.__version__,
            "pillow": PIL.__version__, "numpy": np.__version__}


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    try:
        with open("/proc/cpuinfo") as f:
            names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
        if names:
            return f"{names[0]} ({len(names)} CPUs)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def f9(value: float) -> float:
    """A float32 value as the double of its shortest round-trip decimal (numpy's float32 repr,
    at most 9 significant digits); json.dumps then prints that decimal, and parsing it as float32
    gives back the exact value."""
    value = np.float32(value)
    if not np.isfinite(value):
        raise ValueError(f"non-finite value {value}")
    short = float(np.format_float_scientific(value, unique=True, trim="-"))
    assert np.float32(short) == value
    return short


def f9_rows(values: np.ndarray) -> list:
    """f9 of every element of a float32 matrix, vectorised: numpy's float32 str is the same
    shortest round-trip decimal (Dragon4, unique) as format_float_scientific(unique=True)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if not np.isfinite(values).all():
        raise ValueError("non-finite value in a stage tensor")
    out = [list(map(float, row)) for row in values.astype(str).tolist()]
    assert np.array_equal(np.array(out, dtype=np.float32).reshape(values.shape), values)
    return out


def sample_rows(count: int) -> list:
    rows = np.round(np.linspace(0, count - 1, min(count, SAMPLE_ROWS))).astype(np.int64)
    rows = sorted(set(int(r) for r in rows))
    assert rows[0] == 0 and rows[-1] == count - 1
    return rows


def stage_record(tensor: torch.Tensor) -> dict:
    t = tensor.detach()
    if t.dim() == 3:
        assert t.shape[0] == 1, t.shape
        t = t[0]
    assert t.dim() == 2, t.shape
    rows = sample_rows(t.shape[0])
    values = t[rows].to(torch.float32).cpu().numpy()
    return {"shape": list(t.shape), "rows": rows, "values": f9_rows(values)}


def load_processor(base_dir: Path):
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    image_processor = Qwen2VLImageProcessor.from_pretrained(base_dir)
    for key, value in prep.PREPROCESSOR_CONFIG.items():
        got = getattr(image_processor, key)
        if isinstance(got, (tuple, list)):
            got = list(got)
        if isinstance(got, dict) or hasattr(got, "keys"):
            got = {k: v for k, v in dict(got).items() if v is not None}
        assert got == value or (isinstance(value, float) and abs(got - value) < 1e-15), \
            (key, got, value)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                 video_processor=Qwen3VLVideoProcessor())
    letters = [tokenizer.encode(chr(65 + i), add_special_tokens=False) for i in range(26)]
    assert all(len(ids) == 1 for ids in letters), letters
    letters = [ids[0] for ids in letters]
    assert letters == list(range(32, 58)), letters
    config = json.loads((base_dir / "config.json").read_text())
    assert tokenizer.convert_tokens_to_ids("<|image_pad|>") == config["image_token_id"]
    assert tokenizer.convert_tokens_to_ids("<|vision_start|>") == config["vision_start_token_id"]
    return processor, letters


def prepare_case(path: Path, processor, letters) -> dict:
    body = json.loads(path.read_text())
    data_url = body["state"]["image"]
    raw = base64.b64decode(data_url.split(",", 1)[1], validate=True)
    with Image.open(io.BytesIO(raw)) as source:
        source.load()
        rgb = source.convert("RGB")
    questions = []
    grid = pixel_values = None
    for qname, question in body["questions"].items():
        inputs = processor(text=[prep.prompt_for(question)], images=[rgb], return_tensors="pt")
        ids = inputs["input_ids"]
        assert ids.shape[-1] <= 4096
        positions = prep.rope_index(ids, inputs["mm_token_type_ids"], inputs["image_grid_thw"])
        if grid is None:
            grid, pixel_values = inputs["image_grid_thw"], inputs["pixel_values"]
        else:  # one image per request: identical processor tensors for every question
            assert torch.equal(grid, inputs["image_grid_thw"])
            assert torch.equal(pixel_values, inputs["pixel_values"])
        questions.append({
            "name": qname, "inputs": inputs, "positions": positions,
            "letter_ids": letters[:len(question["criteria"])],
        })
    pv = pixel_values.to(torch.float32).contiguous().numpy().astype("<f4")
    return {"grid": grid, "pixel_values": pixel_values, "questions": questions,
            "rgb_sha256": hashlib.sha256(rgb.tobytes()).hexdigest(),
            "pixel_values_sha256": hashlib.sha256(pv.tobytes()).hexdigest()}


def expected_lora_modules(config) -> int:
    """The 9 target modules of model.md 7.2: q/k/v/o per full-attention layer, gate/up/down
    per MLP, fc1/fc2 per vision block and in the merger (tiny: 22, full size: 178)."""
    text = config.text_config
    full = sum(1 for t in text.layer_types if t == "full_attention")
    return 4 * full + 3 * text.num_hidden_layers + 2 * config.vision_config.depth + 2


def load_model(dtype, base_dir: Path, adapter_dir: Path, device: str):
    base = Qwen3_5ForConditionalGeneration.from_pretrained(base_dir, dtype=dtype)
    model = PeftModel.from_pretrained(base, adapter_dir).eval()
    lora = [(n, p.dtype) for n, p in model.named_parameters() if "lora_" in n]
    assert lora and all(d == torch.float32 for _, d in lora), lora[:4]
    inner = model.get_base_model()
    assert len(lora) == 2 * expected_lora_modules(inner.config), len(lora)
    assert inner.model.language_model.embed_tokens.weight.dtype == dtype
    if device != "cpu":
        model.to(device)
    return model, inner


class Capture:
    """Forward hooks on the stage boundaries of one Qwen3_5ForConditionalGeneration."""

    def __init__(self, inner, wanted=lambda name: True):
        self.tensors = {}
        self.handles = []
        self._names = []
        self._wanted = wanted
        visual = inner.model.visual
        language = inner.model.language_model
        self._pre(visual.blocks[0], "vision.embeddings")
        for i, block in enumerate(visual.blocks):
            self._post(block, f"vision.blocks.{i}")
        self._post(visual.merger, "vision.merger")
        self._pre(language.layers[0], "language.embeddings")
        for i, layer in enumerate(language.layers):
            self._post(layer, f"language.layers.{i}")
        self._post(language.norm, "language.norm")

    @property
    def names(self):
        return self._names

    def _store(self, name, tensor):
        assert isinstance(tensor, torch.Tensor), (name, type(tensor))
        assert name not in self.tensors, f"stage {name} captured twice in one forward"
        self.tensors[name] = tensor.detach().clone()

    def _pre(self, module, name):
        if not self._wanted(name):
            return
        self._names.append(name)
        def hook(_module, args, kwargs):
            self._store(name, args[0] if args else kwargs["hidden_states"])
        self.handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))

    def _post(self, module, name):
        if not self._wanted(name):
            return
        self._names.append(name)
        def hook(_module, _args, output):
            self._store(name, output[0] if isinstance(output, tuple) else output)
        self.handles.append(module.register_forward_hook(hook))

    def take(self):
        tensors, self.tensors = self.tensors, {}
        return tensors


def run_control(label, dtype, cases, opts):
    setup_determinism()
    start = time.perf_counter()
    model, inner = load_model(dtype, opts.base, opts.adapter, opts.device)
    print(f"{label}: model loaded on {opts.device} in {time.perf_counter() - start:.1f}s",
          flush=True)
    recorded = opts.recorded
    capture = Capture(inner, lambda name: recorded(name) or name in REQUIRED_STAGES)
    every = (["vision.embeddings"] +
             [f"vision.blocks.{i}" for i in range(len(inner.model.visual.blocks))] +
             ["vision.merger", "language.embeddings"] +
             [f"language.layers.{i}" for i in range(len(inner.model.language_model.layers))] +
             ["language.norm"])
    kept = [name for name in every if recorded(name)]
    assert set(capture.names) == set(kept) | set(REQUIRED_STAGES), capture.names
    print(f"{label}: recording {len(kept)} of {len(every)} stages"
          f"{': ' + ', '.join(kept) if len(kept) < len(every) else ''}", flush=True)
    embed = inner.model.language_model.embed_tokens.weight
    results = {}
    notes = []
    for cname, case in cases.items():
        vision = None
        per_question = []
        for q in case["questions"]:
            inputs = {k: v.to(opts.device) for k, v in q["inputs"].items()
                      if k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw",
                               "mm_token_type_ids")}
            started = time.perf_counter()
            with torch.inference_mode():
                out = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                            pixel_values=inputs["pixel_values"],
                            image_grid_thw=inputs["image_grid_thw"],
                            mm_token_type_ids=inputs["mm_token_type_ids"],
                            use_cache=False, logits_to_keep=1)
            if opts.device == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - started
            stages = capture.take()
            assert sorted(stages) == sorted(capture.names), sorted(stages)
            # The stages are what they claim: the image rows of language.embeddings are exactly
            # the merger output, and the norm's last row is the model's final hidden state.
            image_rows = inputs["input_ids"][0] == inner.config.image_token_id
            assert torch.equal(stages["language.embeddings"][0, image_rows], stages["vision.merger"])
            hidden = stages["language.norm"][0, -1].to(torch.float32)
            letter_rows = embed[q["letter_ids"]].to(torch.float32)
            logits = letter_rows @ hidden
            probs = torch.softmax(logits, dim=-1)
            assert torch.isfinite(logits).all() and abs(float(probs.sum()) - 1) < 1e-5
            # The model's own tied lm_head (BF16 in the bf16 control): agreement check only.
            head = out.logits[0, -1, q["letter_ids"]].to(torch.float32)
            head_diff = float((head - logits).abs().max())
            logits, probs = logits.cpu(), probs.cpu()
            print(f"  {label} {cname}/{q['name']}: {inputs['input_ids'].shape[-1]} tokens, "
                  f"forward {elapsed:.2f}s, p {[round(float(v), 4) for v in probs]}", flush=True)
            dtypes = sorted({str(t.dtype) for t in stages.values()})
            vis = {k: v for k, v in stages.items() if k.startswith("vision.")}
            if vision is None:
                vision = vis
            elif not all(torch.equal(vision[k], vis[k]) for k in vision):
                notes.append(f"{label} {cname}/{q['name']}: vision stages differ from the first "
                             "question's forward")
            stages = {k: v for k, v in stages.items() if recorded(k)}
            per_question.append({
                "logits": logits, "probabilities": probs, "head_diff": head_diff,
                "dtypes": dtypes,
                "stages": {k: stage_record(v) for k, v in stages.items()
                           if k.startswith("language.")},
            })
        results[cname] = {"vision": {k: stage_record(v) for k, v in vision.items()
                                     if recorded(k)},
                          "questions": per_question}
    for h in capture.handles:
        h.remove()
    attn = inner.config._attn_implementation
    vattn = inner.config.vision_config._attn_implementation
    print(f"{label}: done in {time.perf_counter() - start:.1f}s", flush=True)
    del model, inner, embed, capture
    gc.collect()
    if opts.device == "cuda":
        torch.cuda.empty_cache()
    return results, notes, {"text_attn_implementation": attn, "vision_attn_implementation": vattn}


def cross_check(prepare_bin, cases, expected, base_dir, expected_questions=False):
    """Our preprocessing CLI against the reference inputs; returns a list of mismatch lines.
    expected_questions: base_dir has the tokenizer of prepare/expected.json, so its token ids,
    position ids and letter ids are compared too (not only grid and pixel hash)."""
    problems = []
    for cname, case in cases.items():
        if expected is not None and cname in expected:
            exp = expected[cname]["image"]
            if exp["grid_thw"] != [int(v) for v in case["grid"][0]]:
                problems.append(f"{cname}: grid differs from prepare/expected.json")
            if exp["pixel_values_sha256"] != case["pixel_values_sha256"]:
                problems.append(f"{cname}: pixel hash differs from prepare/expected.json")
            if expected_questions:
                problems += compare_questions(f"{cname} (prepare/expected.json)",
                                              expected[cname], case)
        if prepare_bin is None:
            continue
        proc = subprocess.run([str(prepare_bin), "--model", str(base_dir), str(case["path"])],
                              capture_output=True, text=True, check=True)
        ours = json.loads(proc.stdout)
        if ours.get("status") != 200:
            problems.append(f"{cname}: cua-s1-prepare status {ours.get('status')} "
                            f"{ours.get('detail')}")
            continue
        image = ours["image"]
        if image["grid_thw"] != [int(v) for v in case["grid"][0]]:
            problems.append(f"{cname}: grid ours {image['grid_thw']} ref {case['grid'][0].tolist()}")
        for key in ("pixel_values_sha256", "rgb_sha256"):
            if image[key] != case[key]:
                problems.append(f"{cname}: {key} ours {image[key]} ref {case[key]}")
        problems += compare_questions(cname, ours, case)
    return problems


def compare_questions(cname, ours, case):
    """The questions of a cua-s1-prepare answer (or of prepare/expected.json) against the
    reference inputs of one case."""
    problems = []
    if len(ours["questions"]) != len(case["questions"]):
        problems.append(f"{cname}: {len(ours['questions'])} questions, ref "
                        f"{len(case['questions'])}")
    for oq, rq in zip(ours["questions"], case["questions"]):
        tag = f"{cname}/{rq['name']}"
        ref_ids = rq["inputs"]["input_ids"][0].tolist()
        ref_pos = rq["positions"][:, 0, :].tolist()
        if oq["name"] != rq["name"]:
            problems.append(f"{tag}: name ours {oq['name']!r}")
        if oq["input_ids"] != ref_ids:
            first = next((i for i, (a, b) in enumerate(zip(oq["input_ids"], ref_ids))
                          if a != b), min(len(ref_ids), len(oq["input_ids"])))
            problems.append(f"{tag}: input_ids differ (len ours {len(oq['input_ids'])} ref "
                            f"{len(ref_ids)}, first difference at {first})")
        if oq["position_ids"] != ref_pos:
            problems.append(f"{tag}: position_ids differ")
        if oq["letter_ids"] != rq["letter_ids"]:
            problems.append(f"{tag}: letter_ids ours {oq['letter_ids']} ref {rq['letter_ids']}")
    return problems


def main():
    global SAMPLE_ROWS  # --sample-rows
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_bin = ROOT / "build-ref/src/cua-s1-prepare"
    parser.add_argument("--prepare", type=Path, default=default_bin if default_bin.exists() else None,
                        help="cua-s1-prepare binary for the input cross-check (default: "
                             "build-ref/src/cua-s1-prepare if it exists)")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "tests/fixtures/tiny/reference/reference.json",
                        help="output JSON (gzipped when the name ends in .gz)")
    parser.add_argument("--base", type=Path, default=BASE,
                        help="base model directory (default: tests/fixtures/tiny/base)")
    parser.add_argument("--adapter", type=Path, default=ADAPTER,
                        help="PEFT adapter directory (default: tests/fixtures/tiny/multimodal)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--stages", default="all",
                        help='stages to record: "all" (default), "none", or comma-separated '
                             'fnmatch patterns, e.g. "vision.merger,language.layers.3*"')
    parser.add_argument("--sample-rows", type=int, default=SAMPLE_ROWS,
                        help=f"rows sampled per stage tensor (default {SAMPLE_ROWS})")
    args = parser.parse_args()
    if args.device == "cuda":
        # Before the first cuBLAS call (contract 12.2); TF32 off is set in setup_determinism().
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        if not torch.cuda.is_available():
            parser.error("--device cuda: CUDA is not available")
    if args.sample_rows < 2:
        parser.error("--sample-rows must be at least 2 (the first and the last row)")
    SAMPLE_ROWS = args.sample_rows
    patterns = [] if args.stages == "none" else \
        ["*"] if args.stages == "all" else [p.strip() for p in args.stages.split(",") if p.strip()]
    args.recorded = lambda name: any(fnmatch.fnmatchcase(name, p) for p in patterns)
    args.base, args.adapter = args.base.resolve(), args.adapter.resolve()
    setup_determinism()
    started = time.perf_counter()

    versions = versions_now()
    unpinned = sorted(k for k, v in PINNED.items() if not versions[k].startswith(v))
    default_run = (args.base == BASE.resolve() and args.adapter == ADAPTER.resolve() and
                   args.device == "cpu" and args.stages == "all" and
                   args.sample_rows == 12 and not unpinned)
    with open(args.base / "config.json") as f:
        model_config = json.load(f)
    environment = {
        "versions": versions, "device": args.device, "device_name": device_name(args.device),
        "torch_threads": torch.get_num_threads(), "base": str(args.base),
        "adapter": str(args.adapter),
        "model": {k: model_config["text_config"][k] for k in
                  ("num_hidden_layers", "hidden_size", "vocab_size")} |
                 {"vision_depth": model_config["vision_config"]["depth"],
                  "vision_hidden_size": model_config["vision_config"]["hidden_size"]},
        "stages": args.stages, "sample_rows": args.sample_rows,
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }
    print("environment:", json.dumps(environment))
    if unpinned:
        print("note: versions other than those of the committed tiny reference:",
              {k: versions[k] for k in unpinned})

    processor, letters = load_processor(args.base)
    paths = [REQUESTS / f"{name}.json" for name in CORPUS_ORDER]
    assert sorted(p.name for p in REQUESTS.glob("std-*.json")) + \
        sorted(p.name for p in REQUESTS.glob("bnd-*.json")) == \
        sorted(p.name for p in paths if p.name.startswith("std-")) + \
        sorted(p.name for p in paths if p.name.startswith("bnd-"))
    cases = {}
    for path in paths:
        case = prepare_case(path, processor, letters)
        case["path"] = path
        case["corpus"] = "standard" if path.name.startswith("std-") else "boundary"
        cases[path.stem] = case
    nq = {c: sum(len(k["questions"]) for k in cases.values() if k["corpus"] == c)
          for c in ("standard", "boundary")}
    assert sum(1 for c in cases.values() if c["corpus"] == "standard") == 7 and nq["standard"] == 8
    assert sum(1 for c in cases.values() if c["corpus"] == "boundary") == 4 and nq["boundary"] == 11

    print(f"reference inputs prepared in {time.perf_counter() - started:.1f}s", flush=True)

    expected = json.loads(EXPECTED.read_text()) if EXPECTED.exists() else None
    digest = hashlib.sha256((args.base / "tokenizer.json").read_bytes()).hexdigest()
    problems = cross_check(args.prepare, cases, expected, args.base,
                           expected_questions=digest == QWEN35_TOKENIZER_SHA256)
    if digest == QWEN35_TOKENIZER_SHA256:
        print("cross-check: the base has the tokenizer of prepare/expected.json: its input ids, "
              "position ids and letter ids are checked too")
    if args.prepare is None:
        print("cross-check: cua-s1-prepare not given/built; only prepare/expected.json checked")
    print("cross-check:", "all equal" if not problems else f"{len(problems)} MISMATCHES")
    for line in problems:
        print("  MISMATCH", line)

    controls, notes, attn = {}, [], {}
    for label, dtype in CONTROLS.items():
        controls[label], n, attn[label] = run_control(label, dtype, cases, args)
        notes += n

    out_cases = []
    corpus_max = {"standard": 0.0, "boundary": 0.0}
    logit_max = {"standard": 0.0, "boundary": 0.0}
    print(f"{'case/question':34s} {'n':>2s} {'max p32':>8s} {'margin32':>9s} {'|dp| bf16':>10s} "
          f"{'top32':>5s} {'top16':>5s}  head-vs-readout(fp32,bf16)")
    for cname, case in cases.items():
        questions = []
        for qi, q in enumerate(case["questions"]):
            rec = {"name": q["name"], "input_ids": q["inputs"]["input_ids"][0].tolist(),
                   "position_ids": q["positions"][:, 0, :].tolist(),
                   "letter_ids": q["letter_ids"]}
            per = {label: controls[label][cname]["questions"][qi] for label in CONTROLS}
            for label in CONTROLS:
                rec[label] = {"logits": [f9(v) for v in per[label]["logits"]],
                              "probabilities": [f9(v) for v in per[label]["probabilities"]]}
            rec["stages"] = {label: per[label]["stages"] for label in CONTROLS}
            p32 = per["fp32"]["probabilities"].double()
            p16 = per["bf16"]["probabilities"].double()
            diff = float((p16 - p32).abs().max())
            top = torch.sort(p32, descending=True).values
            margin = 1.0 if len(top) == 1 else float(top[0] - top[1])
            corpus_max[case["corpus"]] = max(corpus_max[case["corpus"]], diff)
            logit_diff = float((per["bf16"]["logits"] - per["fp32"]["logits"]).abs().max())
            logit_max[case["corpus"]] = max(logit_max[case["corpus"]], logit_diff)
            print(f"{cname + '/' + q['name']:34s} {len(top):2d} {float(top[0]):8.5f} {margin:9.5f} "
                  f"{diff:10.3e} {int(p32.argmax()):5d} {int(p16.argmax()):5d}  "
                  f"{per['fp32']['head_diff']:.2e},{per['bf16']['head_diff']:.2e}")
            questions.append(rec)
        out_cases.append({
            "name": cname, "corpus": case["corpus"], "request": case["path"].name,
            "grid_thw": [int(v) for v in case["grid"][0]],
            "pixel_values_sha256": case["pixel_values_sha256"],
            "questions": questions,
            "stages": {label: controls[label][cname]["vision"] for label in CONTROLS},
        })
    for corpus, value in corpus_max.items():
        print(f"max |p_bf16 - p_fp32| {corpus}: {value:.9g}   "
              f"(letter logits: max |l_bf16 - l_fp32| {logit_max[corpus]:.9g})")
    first = controls["bf16"][next(iter(cases))]["questions"][0]["dtypes"]
    print("stage dtypes in the bf16 control:", first, "| attention:", attn)
    for line in notes:
        print("NOTE", line)

    header = {"schema": "cua-s1/tiny-reference/v1",
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                           "peft": peft.__version__},
              "attn_implementation": attn["fp32"]}
    if not default_run:
        # Not the committed configuration: say where and with what the values were made.
        environment["attn_implementation"] = attn
        environment["seconds"] = round(time.perf_counter() - started, 1)
        header["environment"] = environment
    text = json.dumps(header, separators=(",", ":"))[:-1] + ',"cases":[\n'
    text += ",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in out_cases)
    text += "\n]}\n"
    json.loads(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    if args.out.suffix == ".gz":
        with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                        filename="") as f:
            f.write(data)
        print(f"wrote {args.out} ({len(data)} bytes, {args.out.stat().st_size} gzipped) "
              f"in {time.perf_counter() - started:.1f}s")
    else:
        args.out.write_bytes(data)
        print(f"wrote {args.out} ({len(data)} bytes) in {time.perf_counter() - started:.1f}s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
