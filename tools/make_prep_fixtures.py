#!/usr/bin/env python3
"""Writes tests/fixtures/prep/reference.txt from the real reference image processor.

Reference: Transformers 5.17.0 Qwen2VLImageProcessor with its torchvision backend (torch 2.14.0,
torchvision 0.29.0, CPU), fed a Pillow RGB image as the reference worker does. Pictures are made
from a seed by a counter-based splitmix64 generator that tests/prep_resize_test.cpp reimplements,
so the fixture stores only seeds, sizes and SHA-256 digests.

Run: /work/venv/bin/python tools/make_prep_fixtures.py [output_path]
"""

import hashlib
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
import PIL
import torch
import torchvision
import transformers
from PIL import Image
from torchvision.transforms.v2 import functional as tvF
from transformers import AutoImageProcessor
from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

# Settings of src/prep/processor_config.hpp (pinned Qwen3.5-4B preprocessor_config.json).
PROCESSOR_CONFIG = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "do_resize": True,
    "resample": 3,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "do_convert_rgb": True,
    "size": {"shortest_edge": 65536, "longest_edge": 16777216},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
}
FACTOR = 32
MASK64 = (1 << 64) - 1

# ---------------------------------------------------------------------------------------------
# Picture generators (must match tests/prep_resize_test.cpp).


def splitmix(seed, index):
    """splitmix64 output number `index` (0-based) of the stream starting at `seed` (numpy)."""
    z = np.uint64(seed) + (index.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def top_byte(seed, index):
    return (splitmix(seed, np.asarray(index, dtype=np.uint64)) >> np.uint64(56)).astype(np.int64)


def make_picture(kind, seed, width, height):
    """HxWx3 uint8 picture of one of the generator kinds."""
    with np.errstate(over="ignore"):
        if kind == "noise":  # every byte independent
            k = np.arange(width * height * 3, dtype=np.uint64)
            return top_byte(seed, k).astype(np.uint8).reshape(height, width, 3)
        if kind == "binary":  # every byte 0 or 255: maximal overshoot, exercises the clamp
            k = np.arange(width * height * 3, dtype=np.uint64)
            bits = splitmix(seed, k) >> np.uint64(63)
            return (bits.astype(np.int64) * 255).astype(np.uint8).reshape(height, width, 3)
        if kind == "flat":  # one colour
            colour = top_byte(seed, [0, 1, 2])
            return np.broadcast_to(colour.astype(np.uint8), (height, width, 3)).copy()
        if kind == "gradient":  # (offset + x * ax + y * ay) mod 256 per channel
            p = top_byte(seed, list(range(9)))
            y, x = np.mgrid[0:height, 0:width]
            planes = [(p[3 * c] + x * (p[3 * c + 1] % 4) + y * (p[3 * c + 2] % 4)) % 256 for c in range(3)]
            return np.stack(planes, axis=-1).astype(np.uint8)
        if kind == "edges":  # checkerboard of two colours, cell side 1..24
            p = top_byte(seed, list(range(7)))
            cell = 1 + p[0] % 24
            y, x = np.mgrid[0:height, 0:width]
            odd = ((x // cell + y // cell) % 2).astype(bool)
            a = p[1:4].astype(np.uint8)
            b = p[4:7].astype(np.uint8)
            return np.where(odd[..., None], b, a).astype(np.uint8)
    raise ValueError(kind)


GENERATORS = ["noise", "binary", "flat", "gradient", "edges"]

# ---------------------------------------------------------------------------------------------
# Reference calls.


def make_processor():
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "preprocessor_config.json").write_text(json.dumps(PROCESSOR_CONFIG))
        processor = AutoImageProcessor.from_pretrained(tmp)
    assert processor.__class__.__name__ == "Qwen2VLImageProcessor", processor.__class__
    assert processor.backend == "torchvision", processor.backend
    return processor


def to_pil(array):
    height, width, _ = array.shape
    return Image.frombytes("RGB", (width, height), array.tobytes()).convert("RGB")


def unpatchify(pixel_values, grid_h, grid_w):
    """Inverse of patchify + normalize: the uint8 resized picture (HxWx3)."""
    v = pixel_values.numpy().reshape(grid_h // 2, grid_w // 2, 2, 2, 3, 2, 16, 16)
    assert np.array_equal(v[:, :, :, :, :, 0], v[:, :, :, :, :, 1]), "frames differ"
    v = v[:, :, :, :, :, 0]  # by, bx, my, mx, c, py, px
    v = v.transpose(0, 2, 5, 1, 3, 6, 4).reshape(grid_h * 16, grid_w * 16, 3)
    u = np.rint(v.astype(np.float64) * 127.5 + 127.5)
    assert u.min() >= 0 and u.max() <= 255
    return u.astype(np.uint8)


def direct_resize(array, width, height):
    """tvF.resize on the tensor the processor builds from a PIL picture (1x3xHxW channels-last)."""
    tensor = tvF.pil_to_tensor(to_pil(array)).unsqueeze(0)
    out = tvF.resize(tensor, [height, width], interpolation=tvF.InterpolationMode.BICUBIC, antialias=True)
    return out[0].permute(1, 2, 0).contiguous().numpy()


def sha(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# Cases.

NAMED_SIZES = [  # contract 7.3 table, then the other named sizes
    (1, 1), (17, 19), (256, 256), (319, 241), (272, 256), (304, 256), (640, 320), (319, 641),
    (200, 1), (7, 1400), (2048, 512), (1600, 600),
    (640, 480), (1280, 720), (1920, 1080), (1, 200),
]


def random_sizes(rng):
    """(category, width, height) covering upscale, one-axis and two-axis downscale, ties and
    extreme aspect ratios."""
    sizes = []
    while len(sizes) < 80:  # upscale: area below min_pixels after rounding
        w, h = rng.randint(1, 260), rng.randint(1, 260)
        if max(w, h) <= 200 * min(w, h):
            sizes.append(("upscale", w, h))
    for _ in range(50):  # one axis already a multiple of 32, the other not
        a = 32 * rng.randint(8, 40)
        b = rng.randint(250, 900)
        sizes.append(("one_axis", a, b) if rng.random() < 0.5 else ("one_axis", b, a))
    for _ in range(50):  # both axes resampled, at any small scale change
        sizes.append(("both_axes", rng.randint(240, 1000), rng.randint(240, 800)))
    for _ in range(40):  # ties: a side at 32k + 16 rounds to the even multiple
        a = 32 * rng.randint(8, 30) + 16
        b = rng.choice([32 * rng.randint(8, 30) + 16, rng.randint(256, 900)])
        sizes.append(("tie", a, b) if rng.random() < 0.5 else ("tie", b, a))
    for _ in range(50):  # extreme aspect ratios up to 200:1
        short = rng.randint(1, 12)
        ratio = rng.choice([200, 199, 150, 100, 60, 30, rng.uniform(20, 200)])
        long = max(short, min(int(short * ratio), 200 * short))
        sizes.append(("aspect", long, short) if rng.random() < 0.5 else ("aspect", short, long))
    for _ in range(30):  # around the min_pixels boundary
        a = rng.randint(200, 330)
        b = max(1, 65536 // a + rng.randint(-12, 12))
        sizes.append(("min_boundary", a, b))
    for _ in range(20):  # screenshot-like sizes with one or two odd sides
        sizes.append(("screen", rng.choice([1366, 1280, 1024, 1440, 800, 1000]),
                      rng.choice([768, 720, 600, 900, 650, 701])))
    return sizes


def resize_targets(rng):
    """Direct resizes at arbitrary targets, including strong down- and up-scaling."""
    out = []
    for _ in range(40):
        w, h = rng.randint(1, 400), rng.randint(1, 400)
        out.append((w, h, rng.randint(1, 400), rng.randint(1, 400)))
    out += [(1000, 3, 7, 1), (3, 1000, 1, 13), (640, 480, 64, 48), (640, 480, 33, 700),
            (1, 1, 5, 3), (2, 2, 1, 1), (500, 500, 499, 501), (300, 200, 3000, 2)]
    return out


def smart_table(rng):
    rows = []
    for w in list(range(1, 70)) + [200, 240, 255, 256, 257, 271, 272, 303, 304, 719, 720, 721]:
        for h in [1, 2, 5, 16, 17, 31, 32, 48, 200, 240, 256, 272, 719, 720, 1080, 4000]:
            rows.append((w, h))
    for _ in range(600):
        rows.append((rng.randint(1, 2048), rng.randint(1, 2048)))
    for _ in range(200):  # huge pictures reach the max_pixels branch
        rows.append((rng.randint(1, 40000), rng.randint(1, 40000)))
    rows += [(4096, 4096), (4097, 4096), (4112, 4112), (5000, 5000), (8192, 2048), (60000, 300)]
    return rows


def main():
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests/fixtures/prep/reference.txt"
    processor = make_processor()
    rng = random.Random(20250517)
    lines = [
        "# Reference outputs of Transformers %s Qwen2VLImageProcessor (backend %s), torch %s, "
        "torchvision %s, Pillow %s, cpu capability %s. Written by tools/make_prep_fixtures.py."
        % (transformers.__version__, processor.backend, torch.__version__, torchvision.__version__,
           PIL.__version__, torch.backends.cpu.get_cpu_capability()),
        "# case <generator> <seed> <w> <h> <resized_w> <resized_h> <grid_t> <grid_h> <grid_w> "
        "<sha256 of float32 LE pixel_values> <sha256 of resized RGB8>",
        "# resize <generator> <seed> <w> <h> <out_w> <out_h> <sha256 of RGB8 from tvF.resize>",
        "# smart <w> <h> <resized_w> <resized_h>   (w, h -> 0 0 when the reference raises)",
    ]

    cases = [("named", w, h, "noise") for (w, h) in NAMED_SIZES]
    cases.append(("named", 1280, 720, "gradient"))
    cases.append(("named", 1366, 768, "edges"))
    for i, (category, w, h) in enumerate(random_sizes(rng)):
        cases.append((category, w, h, GENERATORS[i % len(GENERATORS)]))

    total_area = 0
    for index, (category, w, h, kind) in enumerate(cases):
        seed = rng.getrandbits(64)
        picture = make_picture(kind, seed, w, h)
        result = processor(images=to_pil(picture), return_tensors="pt")
        pixel_values = result["pixel_values"]
        grid = [int(v) for v in result["image_grid_thw"][0]]
        assert pixel_values.dtype == torch.float32
        rh, rw = smart_resize(h, w, factor=FACTOR, min_pixels=65536, max_pixels=16777216)
        assert grid == [1, rh // 16, rw // 16], (w, h, grid, rw, rh)
        resized = unpatchify(pixel_values, grid[1], grid[2])
        if (rw, rh) != (w, h):
            assert np.array_equal(resized, direct_resize(picture, rw, rh)), (w, h)
        else:
            assert np.array_equal(resized, picture)
        digest = sha(pixel_values.contiguous().numpy().astype("<f4").tobytes())
        lines.append("case %s %d %d %d %d %d %d %d %d %s %s" % (
            kind, seed, w, h, rw, rh, grid[0], grid[1], grid[2], digest, sha(resized.tobytes())))
        total_area += rw * rh
        if index % 50 == 0:
            print("case %d/%d %s %dx%d" % (index, len(cases), category, w, h), file=sys.stderr)

    for index, (w, h, ow, oh) in enumerate(resize_targets(rng)):
        kind = GENERATORS[index % len(GENERATORS)]
        seed = rng.getrandbits(64)
        resized = direct_resize(make_picture(kind, seed, w, h), ow, oh)
        lines.append("resize %s %d %d %d %d %d %s" % (kind, seed, w, h, ow, oh, sha(resized.tobytes())))

    for (w, h) in smart_table(rng):
        try:
            rh, rw = smart_resize(h, w, factor=FACTOR, min_pixels=65536, max_pixels=16777216)
        except ValueError:
            rh, rw = 0, 0
        lines.append("smart %d %d %d %d" % (w, h, rw, rh))

    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("\n".join(lines) + "\n")
    print("wrote %s: %d cases, %.1f Mpx resized in all" % (out_path, len(cases), total_area / 1e6),
          file=sys.stderr)


if __name__ == "__main__":
    main()
