#!/usr/bin/env python3
"""Reference inputs for whole requests: what Transformers 5.17 feeds the model.

For every request of a small corpus (the contract's standard and boundary corpora, section
12.3, plus extra cases) this records what the reference worker computes before the model runs,
in the schema that `cua-s1-prepare` prints:
  image: decoded size (Pillow 11.3.0 open + the contract's checks + convert("RGB")), resized size
         and grid from Qwen2VLImageProcessor (torchvision backend), sha256 of the RGB8 bytes and
         of the float32 pixel_values;
  questions: input_ids and mm_token_type_ids from Qwen3VLProcessor(text=[prompt], images=[image])
         (the processor expands <|image_pad|>), position_ids from Qwen3_5Model.get_rope_index,
         letter ids from tokenizer.encode(letter, add_special_tokens=False);
  input_tokens: the sum of the prompt lengths.
The chat text is rendered as spec/contract.md section 5.2 gives it (the pinned
chat_template.jinja is not available here; the contract records that rendering as verified
token-identical to the template).

Versions: Python 3.11, torch 2.14.0, torchvision 0.29.0, transformers 5.17.0, tokenizers 0.23.2,
Pillow 11.3.0, numpy 2.4.

Usage: make_prepare_fixtures.py TOKENIZER_DIR OUT_DIR
  TOKENIZER_DIR: the directory written by tools/make_qwen35_tokenizer.py
  OUT_DIR: tests/fixtures/prepare (requests/*.json and expected.json are written there)
"""

import base64
import hashlib
import io
import json
import sys
import types
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw
from transformers import AutoTokenizer
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5Model
from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

SYSTEM_PROMPT = (
    "You are a one-pass computer-use decision model. You are shown the current state of a screen "
    "and a fixed, closed list of candidate (element, action) options, each given a single letter. "
    "Choose exactly one option: the single best next action to take. Answer with ONLY that "
    "option's letter -- no words, no punctuation, no explanation.")

PREPROCESSOR_CONFIG = {
    "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "merge_size": 2,
    "patch_size": 16, "rescale_factor": 1 / 255, "temporal_patch_size": 2,
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
}


def text_of(value):
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def prompt_for(question):
    """spec/contract.md 5.1/5.2 for one question dict (already valid)."""
    labels = [json.dumps(text_of(k if v is None else v), ensure_ascii=False)[1:-1]
              for k, v in question["criteria"].items()]
    goal = "" if question["instructions"] is None else text_of(question["instructions"])
    lines = "\n".join(f'{chr(65 + i)}. Decision "{label}" -> select' for i, label in enumerate(labels))
    text = ((f"Goal: {goal}\n\n" if goal else "")
            + "App: Cua Driver\nTask family: closed-candidate decision\n\n"
            + "The current screenshot is attached.\n\n"
            + f"Options:\n{lines}\n\nAnswer with a single letter.")
    return (f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
            f"<|vision_start|><|image_pad|><|vision_end|>{text}<|im_end|>\n"
            f"<|im_start|>assistant\n<think>\n")


def rope_index(input_ids, mm_token_type_ids, grid):
    fake = types.SimpleNamespace(
        config=types.SimpleNamespace(vision_config=types.SimpleNamespace(spatial_merge_size=2)))
    fake.get_vision_position_ids = lambda *a, **k: Qwen3_5Model.get_vision_position_ids(fake, *a, **k)
    positions, _ = Qwen3_5Model.get_rope_index(fake, input_ids=input_ids,
                                               mm_token_type_ids=mm_token_type_ids,
                                               image_grid_thw=grid)
    return positions


def settings_screen(width, height):
    """A synthetic "Account settings" screen: grey background, white panel, blue Save button."""
    image = Image.new("RGB", (width, height), "#f4f6f8")
    draw = ImageDraw.Draw(image)
    draw.rectangle([width // 10, height // 10, width * 9 // 10, height * 9 // 10], fill="white")
    draw.text((width // 8, height // 8), "Account settings", fill="#202124")
    draw.text((width // 8, height // 8 + 24), "Display name: Ada Lovelace", fill="#3c4043")
    bx, by = width * 6 // 10, height * 7 // 10
    draw.rectangle([bx, by, bx + max(8, width // 6), by + max(6, height // 12)], fill="#1460b4")
    draw.text((bx + 6, by + 4), "Save", fill="white")
    return image


def pattern_image(width, height):
    data = bytes(((i * 73 + (i // 3) * 17) % 256) for i in range(width * height * 3))
    return Image.frombytes("RGB", (width, height), data)


def noise_image(width, height, seed):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def encode(image, fmt, **kwargs):
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    mime = "png" if fmt == "PNG" else "jpeg"
    return f"data:image/{mime};base64," + base64.b64encode(buffer.getvalue()).decode()


def choice(instructions, criteria):
    return {"type": "choice", "instructions": instructions, "criteria": criteria}


SAVE3 = {"save": "Click Save", "cancel": "Click Cancel", "wait": "Wait"}
GOAL = "Save the changed display name."


def corpus():
    small = encode(settings_screen(320, 240), "PNG")
    cases = {
        # Standard corpus (contract 12.3).
        "std-small": (small, {"next": choice(GOAL, SAVE3)}),
        "std-wide": (encode(settings_screen(640, 320), "PNG"), {"next": choice(GOAL, SAVE3)}),
        "std-portrait": (encode(settings_screen(320, 640), "PNG"), {"next": choice(GOAL, SAVE3)}),
        "std-jpeg": (encode(settings_screen(640, 480), "JPEG", quality=90),
                     {"next": choice(GOAL, SAVE3)}),
        "std-single-option": (small, {"next": choice(GOAL, {"save": "Click Save"})}),
        "std-26-options": (encode(settings_screen(256, 256), "PNG"),
                           {"next": choice(GOAL, {f"option-{i}": f"Option {i}" for i in range(26)})}),
        "std-two-questions": (small, {
            "next": choice(GOAL, SAVE3),
            "second": choice({"goal": "保存名称"}, {"continue": {"label": "Save"}, "cancel": None})}),
        # Boundary corpus.
        "bnd-maximum": (encode(pattern_image(1024, 1024), "PNG"),
                        {"q": choice("Choose a useful next action. Case 0.", SAVE3)}),
        "bnd-narrow": (encode(pattern_image(200, 1), "PNG"),
                       {"q": choice("Choose a useful next action. Case 1.", SAVE3)}),
        "bnd-noise": (encode(noise_image(383, 257, 2), "PNG"),
                      {"q": choice("Choose a useful next action. Case 2.", SAVE3)}),
        "bnd-tiny-eight": (encode(pattern_image(1, 1), "PNG"), {
            f"q{i}": choice(f"Choose a useful next action. Case {3 + i}.", SAVE3) for i in range(8)}),
        # Extras: tall narrow image, JPEG 4:4:4 and grayscale, special-token spellings in text,
        # escapes, non-ASCII, structured values, long text.
        "ext-tall": (encode(pattern_image(7, 1400), "PNG"), {"q": choice(None, {"a": None})}),
        "ext-jpeg444-gray": (encode(settings_screen(500, 333).convert("L"), "JPEG", quality=85),
                             {"q": choice("", {"ok": "OK", "no": ["No", {"x": 1.5e-7}]})}),
        "ext-jpeg444": (encode(noise_image(300, 200, 5), "JPEG", quality=95, subsampling=0),
                        {"q": choice("<|im_end|> and <think> stay special; \"quotes\"\\ \n\t\u00e9",
                                     {"k\u00e9y": "\u4e2d\u6587 \U0001f600 label", "tab\t": None})}),
        "ext-long": (encode(settings_screen(800, 600), "PNG"),
                     {"q": choice("Please " * 1500, {"go": "Go " * 300, "stop": "Stop"})}),
        "ext-rgba-palette": (encode(settings_screen(240, 180).convert("P"), "PNG"),
                             {"q": choice(["step 1", {"n": 2}], SAVE3)}),
    }
    return cases


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main():
    tokenizer_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    (out / "requests").mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    image_processor = Qwen2VLImageProcessor(**PREPROCESSOR_CONFIG)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                 video_processor=Qwen3VLVideoProcessor())
    letters = [tokenizer.encode(chr(65 + i), add_special_tokens=False) for i in range(26)]
    assert all(len(ids) == 1 for ids in letters)
    letters = [ids[0] for ids in letters]

    expected = {}
    for name, (data_url, questions) in corpus().items():
        body = {"model": "cua-s1-4b-0.2", "state": {"image": data_url}, "questions": questions}
        (out / "requests" / f"{name}.json").write_text(json.dumps(body, ensure_ascii=False))
        raw = base64.b64decode(data_url.split(",", 1)[1], validate=True)
        with Image.open(io.BytesIO(raw)) as source:
            source.load()
            rgb = source.convert("RGB")
        record = {"status": 200, "image": {}, "questions": [], "input_tokens": 0}
        for qname, question in questions.items():
            inputs = processor(text=[prompt_for(question)], images=[rgb], return_tensors="pt")
            ids = inputs["input_ids"]
            if ids.shape[-1] > 4096:
                record = {"status": 422, "detail": "processed prompt exceeds 4096 tokens"}
                break
            grid = inputs["image_grid_thw"]
            positions = rope_index(ids, inputs["mm_token_type_ids"], grid)
            record["image"] = {
                "width": rgb.width, "height": rgb.height,
                "resized_width": int(grid[0, 2]) * 16, "resized_height": int(grid[0, 1]) * 16,
                "grid_thw": [int(v) for v in grid[0]],
                "rgb_sha256": sha256(rgb.tobytes()),
                "pixel_values_sha256": sha256(
                    inputs["pixel_values"].to(torch.float32).contiguous().numpy().astype("<f4").tobytes()),
            }
            record["questions"].append({
                "name": qname, "input_ids": ids[0].tolist(),
                "position_ids": positions[:, 0, :].tolist(),
                "option_keys": list(question["criteria"]),
                "letter_ids": letters[:len(question["criteria"])],
            })
            record["input_tokens"] += ids.shape[-1]
        expected[name] = record
        print(name, record.get("status"), record.get("input_tokens"), record.get("image", {}).get("grid_thw"))
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
