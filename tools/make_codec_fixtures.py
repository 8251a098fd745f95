#!/usr/bin/env python3
"""Writes tests/fixtures/codec/: small PNG/JPEG (and other) files plus manifest.json with what
the reference (Pillow 11.3.0 `Image.open(BytesIO(data)).convert("RGB")` behind the reference
worker's checks, contract section 3.2 item 5) answers for each.

Pinned environment (/work/venv): Python 3.11.7, Pillow==11.3.0 (libjpeg-turbo 3.1.1, zlib 1.2.13),
pypng==0.20220715.0 (imported only to cross-check our own PNG writer), numpy==2.4.6.
Run: /work/venv/bin/python tools/make_codec_fixtures.py  (deterministic; rewrites the folder).
"""
import hashlib
import io
import json
import random
import shutil
import struct
import sys
import zlib
from pathlib import Path

import png as pypng  # pypng, cross-check only
from PIL import Image, ImageDraw, features

assert Image.__version__ == "11.3.0", Image.__version__
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "codec"

MSG_PREFIX = "only inline PNG/JPEG images are supported"
MSG_MISMATCH = "image format does not match its MIME type"
MSG_ASPECT = "image aspect ratio must not exceed 200:1"
MSG_LIMITS = "image must be single-frame, at most 2048 per side and 1048576 pixels"
MSG_INVALID = "invalid image data"
MSG_CMYK = "CMYK JPEG images are not supported"


def reference(data: bytes, mime: str):
    """The reference worker's image checks, in its order."""
    try:
        im = Image.open(io.BytesIO(data))
    except Exception:
        return 422, MSG_INVALID, None
    want = {"png": "PNG", "jpeg": "JPEG"}[mime]
    if im.format != want:
        return 422, MSG_MISMATCH, None
    w, h = im.size
    if max(w, h) > 200 * min(w, h):
        return 422, MSG_ASPECT, None
    if w > 2048 or h > 2048 or w * h > 1048576 or getattr(im, "n_frames", 1) != 1:
        return 422, MSG_LIMITS, None
    try:
        im.load()
        rgb = im.convert("RGB")
    except Exception:
        return 422, MSG_INVALID, None
    return 200, "", rgb


# ----------------------------------------------------------------------------- PNG writer


def chunk(cid: bytes, data: bytes, crc=None) -> bytes:
    c = zlib.crc32(cid + data) & 0xFFFFFFFF if crc is None else crc
    return struct.pack(">I", len(data)) + cid + data + struct.pack(">I", c)


CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def pack_row(samples, bd):
    if bd == 8:
        return bytes(samples)
    if bd == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, acc, n = bytearray(), 0, 0
    for s in samples:
        acc = (acc << bd) | s
        n += bd
        if n == 8:
            out.append(acc)
            acc, n = 0, 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def filter_rows(rows, bpp, filters):
    out, prev = bytearray(), bytes(len(rows[0])) if rows else b""
    for y, row in enumerate(rows):
        ft = filters[y % len(filters)]
        f = bytearray()
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][ft]
            f.append((x - pred) & 0xFF)
        out += bytes([ft]) + f
        prev = row
    return bytes(out)


def scanlines(pixels, w, h, bd, ct, interlace, filters):
    """pixels[y][x] is a tuple of samples; returns the filtered (uncompressed) IDAT stream."""
    ch = CHANNELS[ct]
    bpp = max(1, ch * bd // 8)
    if not interlace:
        rows = [pack_row([s for px in pixels[y] for s in px], bd) for y in range(h)]
        return filter_rows(rows, bpp, filters)
    out = b""
    for x0, y0, dx, dy in ADAM7:
        xs = list(range(x0, w, dx))
        ys = list(range(y0, h, dy))
        if not xs or not ys:
            continue
        rows = [pack_row([s for x in xs for s in pixels[y][x]], bd) for y in ys]
        out += filter_rows(rows, bpp, filters)
    return out


def make_png(w, h, bd, ct, pixels, interlace=False, filters=(0, 1, 2, 3, 4), plte=None, trns=None,
             before=(), after=(), idat_parts=1, raw=None, ihdr=None, zdata=None, iend=True):
    stream = scanlines(pixels, w, h, bd, ct, interlace, filters) if raw is None else raw
    z = zlib.compress(stream, 9) if zdata is None else zdata
    hdr = ihdr if ihdr is not None else struct.pack(">IIBBBBB", w, h, bd, ct, 0, 0, 1 if interlace else 0)
    s = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", hdr)
    for c in before:
        s += c
    if plte is not None:
        s += chunk(b"PLTE", plte)
    if trns is not None:
        s += chunk(b"tRNS", trns)
    step = max(1, -(-len(z) // idat_parts))
    for i in range(0, max(len(z), 1), step):
        s += chunk(b"IDAT", z[i:i + step])
    for c in after:
        s += c
    if iend:
        s += chunk(b"IEND", b"")
    return s


def rand_pixels(rng, w, h, ch, maxv):
    return [[tuple(rng.randint(0, maxv) for _ in range(ch)) for _ in range(w)] for _ in range(h)]


# ----------------------------------------------------------------------------- cases

cases = []  # (name, filename, mime, data, note)


def add(name, data, mime, ext, note=""):
    cases.append((name, f"{name}.{ext}", mime, data, note))


def add_png(name, data, mime="png", note=""):
    add(name, data, mime, "png", note)


def add_jpeg(name, data, mime="jpeg", note=""):
    add(name, data, mime, "jpg", note)


def pil_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def screenshot_like(w, h, seed):
    rng = random.Random(seed)
    im = Image.new("RGB", (w, h), (236, 239, 244))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, w, max(2, h // 10)], fill=(40, 44, 52))
    for _ in range(12):
        x0, y0 = rng.randrange(w), rng.randrange(h)
        x1, y1 = min(w - 1, x0 + rng.randrange(1, w // 2 + 2)), min(h - 1, y0 + rng.randrange(1, h // 3 + 2))
        d.rectangle([x0, y0, x1, y1], fill=tuple(rng.randrange(256) for _ in range(3)),
                    outline=(20, 20, 20))
    for y in range(h // 6, h, max(3, h // 12)):
        for x in range(4, w - 4, 5):
            if rng.random() < 0.6:
                d.line([x, y, x + 2, y + rng.randrange(0, 3)], fill=(rng.randrange(80), 0, rng.randrange(120)))
    for y in range(h):  # a gradient strip and some noise, so JPEG chroma work is exercised
        for x in range(0, max(1, w // 6)):
            im.putpixel((x, y), ((x * 37) % 256, (y * 11) % 256, (x * y) % 256))
    return im


def build_png_cases(rng):
    # Every colour type x bit depth, odd sizes (partial bytes), all five filters, both interlaces.
    for ct, depths in ((0, (1, 2, 4, 8, 16)), (2, (8, 16)), (3, (1, 2, 4, 8)), (4, (8, 16)), (6, (8, 16))):
        for bd in depths:
            for il in (False, True):
                w, h = (13, 11) if il else (7, 5)
                if ct == 3:
                    n = 1 << bd
                    pix = rand_pixels(rng, w, h, 1, n - 1)
                    plte = bytes(rng.randrange(256) for _ in range(3 * n))
                    add_png(f"png_pal{bd}{'_il' if il else ''}", make_png(w, h, bd, ct, pix, il, plte=plte))
                else:
                    pix = rand_pixels(rng, w, h, CHANNELS[ct], (1 << bd) - 1)
                    add_png(f"png_ct{ct}_{bd}{'_il' if il else ''}", make_png(w, h, bd, ct, pix, il))
    # 16-bit gray values of the contract oracle (100, 1000, 65535) and around the clamp.
    pix = [[(100,), (1000,), (65535,), (255,), (256,), (0,)]]
    add_png("png_l16_values", make_png(6, 1, 16, 0, pix))
    add_png("png_l16_trns", make_png(6, 1, 16, 0, pix, trns=struct.pack(">H", 1000)))
    add_png("png_l8_trns", make_png(7, 5, 8, 0, rand_pixels(rng, 7, 5, 1, 255), trns=b"\x00\x07"))
    add_png("png_rgb8_trns", make_png(7, 5, 8, 2, rand_pixels(rng, 7, 5, 3, 255), trns=b"\0\1\0\2\0\3"))
    add_png("png_rgb16_trns", make_png(7, 5, 16, 2, rand_pixels(rng, 7, 5, 3, 65535), trns=b"\0\1\0\2\0\3"))
    add_png("png_la16_oracle", make_png(1, 1, 16, 4, [[(0x0380, 0x1234)]]))
    add_png("png_rgba16_oracle", make_png(1, 1, 16, 6, [[(0x03FF, 0x00AB, 0x80CD, 0)]]))
    # Palettes: tRNS (simple and full), indices beyond PLTE, no PLTE, odd length, too long.
    pix = [[(i,) for i in range(16)] for _ in range(2)]
    plte4 = bytes(range(10, 10 + 12))
    add_png("png_pal_trns_simple", make_png(16, 2, 8, 3, pix, plte=plte4, trns=b"\xff\x00\xff"))
    add_png("png_pal_trns_alpha", make_png(16, 2, 8, 3, pix, plte=plte4, trns=b"\x10\x20\x30\x40"))
    add_png("png_pal_out_of_range", make_png(16, 2, 8, 3, pix, plte=plte4))
    add_png("png_pal4_out_of_range", make_png(16, 2, 4, 3, pix, plte=plte4))
    add_png("png_pal_no_plte", make_png(16, 2, 8, 3, pix))
    add_png("png_pal_odd_plte", make_png(16, 2, 8, 3, pix, plte=plte4 + b"\x01\x02"))
    add_png("png_pal_plte_256", make_png(16, 2, 8, 3, pix, plte=bytes(range(256)) * 3))
    add_png("png_pal_plte_257", make_png(16, 2, 8, 3, pix, plte=bytes(range(256)) * 3 + b"\1\2\3"))
    add_png("png_pal_plte_in_rgb", make_png(7, 5, 8, 2, rand_pixels(rng, 7, 5, 3, 255), plte=plte4))
    # Tiny interlaced sizes (empty Adam7 passes).
    for w, h in ((1, 1), (2, 1), (1, 9), (9, 2), (5, 5)):
        add_png(f"png_il_{w}x{h}", make_png(w, h, 8, 2, rand_pixels(rng, w, h, 3, 255), True))
        add_png(f"png_il_g1_{w}x{h}", make_png(w, h, 1, 0, rand_pixels(rng, w, h, 1, 1), True))
    # A Pillow-written screenshot-like PNG (real encoder output, adaptive filters) and RGBA/P.
    shot = screenshot_like(96, 64, 1)
    add_png("png_pillow_rgb", pil_bytes(shot, "PNG", optimize=True))
    add_png("png_pillow_rgba", pil_bytes(shot.convert("RGBA"), "PNG"))
    add_png("png_pillow_p", pil_bytes(shot.convert("P", palette=Image.Palette.ADAPTIVE, colors=37), "PNG"))
    add_png("png_pillow_l", pil_bytes(shot.convert("L"), "PNG"))
    add_png("png_pillow_1", pil_bytes(shot.convert("1"), "PNG"))
    add_png("png_pypng_il", pypng_bytes(rng))
    # Container details.
    base = rand_pixels(rng, 9, 7, 3, 255)
    add_png("png_idat_split", make_png(9, 7, 8, 2, base, idat_parts=40))
    z = zlib.compress(scanlines(base, 9, 7, 8, 2, False, (1,)))
    split = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 9, 7, 8, 2, 0, 0, 0))
             + chunk(b"IDAT", z[:10]) + chunk(b"IDAT", b"") + chunk(b"IDAT", z[10:]) + chunk(b"IEND", b""))
    add_png("png_idat_empty_middle", split)
    anc = [chunk(b"gAMA", struct.pack(">I", 45455)), chunk(b"pHYs", struct.pack(">IIB", 2835, 2835, 1)),
           chunk(b"tEXt", b"Software\0test"), chunk(b"sRGB", b"\0"),
           chunk(b"iCCP", b"name\0\0" + zlib.compress(b"not really a profile")),
           chunk(b"zTXt", b"k\0\0" + zlib.compress(b"v")), chunk(b"iTXt", b"k\0\0\0\0\0v"),
           chunk(b"prVt", b"private"), chunk(b"cHRM", bytes(32))]
    add_png("png_ancillary", make_png(9, 7, 8, 2, base, before=anc, after=[chunk(b"tEXt", b"late\0x")]))
    good = make_png(9, 7, 8, 2, base)
    add_png("png_crc_ihdr", flip(good, 29))
    add_png("png_crc_idat", flip(good, good.index(b"IEND") - 5))
    add_png("png_crc_ancillary_before", make_png(9, 7, 8, 2, base, before=[chunk(b"tEXt", b"a\0b", crc=5)]))
    add_png("png_crc_ancillary_after", make_png(9, 7, 8, 2, base, after=[chunk(b"tEXt", b"a\0b", crc=5)]))
    add_png("png_crc_plte", make_png(16, 2, 8, 3, pix, before=[chunk(b"PLTE", plte4, crc=7)]))
    stream = scanlines(base, 9, 7, 8, 2, False, (0, 1, 2, 3, 4))
    zz = zlib.compress(stream)
    add_png("png_bad_adler", make_png(9, 7, 8, 2, base, zdata=zz[:-4] + bytes(4)))
    add_png("png_no_adler", make_png(9, 7, 8, 2, base, zdata=zz[:-4]))
    add_png("png_zlib_trailing", make_png(9, 7, 8, 2, base, zdata=zz + b"trailing garbage"))
    add_png("png_extra_rows", make_png(9, 7, 8, 2, base, zdata=zlib.compress(stream + stream[:28])))
    add_png("png_zlib_short", make_png(9, 7, 8, 2, base, zdata=zz[:-9]))
    add_png("png_bad_filter", make_png(9, 7, 8, 2, base, raw=b"\x07" + stream[1:]))
    add_png("png_no_iend", make_png(9, 7, 8, 2, base, iend=False))
    add_png("png_garbage_after_idat", good[:-12] + b"\x00\x01garbage!")
    add_png("png_truncated_after_idat_chunk", good[:-12] + chunk(b"tEXt", b"abc\0def")[:-6])
    add_png("png_trunc_mid_idat", good[: len(good) // 2 + 20])
    add_png("png_trunc_in_ihdr", good[:20])
    add_png("png_trunc_signature", good[:8])
    add_png("png_bad_chunk_name", good[:33] + b"\0\0\0\0" + b"I?AT" + good[41:])
    add_png("png_iend_before_idat", good[:33] + chunk(b"IEND", b"") + good[33:])
    add_png("png_plte_short_trns_gray", make_png(7, 5, 8, 0, rand_pixels(rng, 7, 5, 1, 255), trns=b"\x01"))
    add_png("png_phys_short", make_png(9, 7, 8, 2, base, before=[chunk(b"pHYs", b"\0\0")]))
    add_png("png_phys_short_after", make_png(9, 7, 8, 2, base, after=[chunk(b"pHYs", b"\0\0")]))
    # IHDR oddities.
    def ihdr(w, h, bd, ct, cm=0, fm=0, il=0):
        return struct.pack(">IIBBBBB", w, h, bd, ct, cm, fm, il)
    add_png("png_bad_depth_pal16", make_png(2, 2, 8, 3, [[(0,), (1,)]] * 2, ihdr=ihdr(2, 2, 16, 3), plte=b"\0" * 6))
    add_png("png_bad_depth_rgb4", make_png(2, 2, 8, 2, [[(0, 0, 0)] * 2] * 2, ihdr=ihdr(2, 2, 4, 2)))
    add_png("png_compression_method_1", make_png(9, 7, 8, 2, base, ihdr=ihdr(9, 7, 8, 2, cm=1)))
    add_png("png_filter_method_1", make_png(9, 7, 8, 2, base, ihdr=ihdr(9, 7, 8, 2, fm=1)))
    add_png("png_interlace_byte_2", make_png(9, 7, 8, 2, base, True, ihdr=ihdr(9, 7, 8, 2, il=2)))
    add_png("png_interlace_byte_2_plain_data", make_png(9, 7, 8, 2, base, False, ihdr=ihdr(9, 7, 8, 2, il=2)))
    add_png("png_zero_width", make_png(1, 1, 8, 0, [[(0,)]], ihdr=ihdr(0, 1, 8, 0)))
    add_png("png_ihdr_short", b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", b"\0\0\0\1\0\0\0\1\x08") + good[33:])
    # Zlib stream that ends cleanly after 3 of 7 rows: Pillow keeps the rest black (known divergence).
    add_png("png_zlib_ends_early", make_png(9, 7, 8, 2, base, zdata=zlib.compress(stream[: 3 * 28])),
            note="divergence")
    # APNG.
    actl = lambda n: chunk(b"acTL", struct.pack(">II", n, 0))
    def fctl(seq, w, h, x=0, y=0):
        return chunk(b"fcTL", struct.pack(">IIIIIHHBB", seq, w, h, x, y, 1, 10, 0, 0))
    f2 = zlib.compress(scanlines(rand_pixels(rng, 9, 7, 3, 255), 9, 7, 8, 2, False, (0,)))
    fdat = chunk(b"fdAT", struct.pack(">I", 2) + f2)
    add_png("apng_two_frames", make_png(9, 7, 8, 2, base, before=[actl(2), fctl(0, 9, 7)], after=[fctl(1, 9, 7), fdat]))
    add_png("apng_one_frame", make_png(9, 7, 8, 2, base, before=[actl(1), fctl(0, 9, 7)]))
    add_png("apng_default_image", make_png(9, 7, 8, 2, base, before=[actl(1)],
                                           after=[fctl(0, 9, 7), chunk(b"fdAT", struct.pack(">I", 1) + f2)]))
    add_png("apng_zero_frames", make_png(9, 7, 8, 2, base, before=[actl(0)]))
    add_png("apng_huge_frames", make_png(9, 7, 8, 2, base, before=[actl(0x80000001)]))
    add_png("apng_two_actl", make_png(9, 7, 8, 2, base, before=[actl(2), actl(2)]))
    add_png("apng_actl_short", make_png(9, 7, 8, 2, base, before=[chunk(b"acTL", b"\0\0\0\2")]))
    add_png("apng_bad_seq", make_png(9, 7, 8, 2, base, before=[actl(1), fctl(3, 9, 7)]))
    add_png("apng_fctl_outside", make_png(9, 7, 8, 2, base, before=[actl(1), fctl(0, 10, 7)]))
    small = rand_pixels(rng, 4, 3, 3, 255)
    add_png("apng_fctl_region", make_png(4, 3, 8, 2, small, before=[actl(1), fctl(0, 4, 3, 2, 1)],
                                         ihdr=ihdr(9, 7, 8, 2)))
    add_png("png_fctl_region_pal", make_png(4, 3, 8, 3, [[(1,)] * 4] * 3, ihdr=ihdr(9, 7, 8, 3),
                                            before=[fctl(0, 4, 3, 5, 4)], plte=b"\x05\x06\x07\x10\x20\x30"))
    # Limits, all from the header (IDAT of a constant image is tiny).
    def const_png(w, h, valid=True):
        rows = (b"\0" + bytes(w)) * h
        return make_png(w, h, 8, 0, None, raw=rows, filters=(0,)) if valid else \
            make_png(w, h, 8, 0, None, raw=b"", zdata=b"\x78\x9c\x03\x00")
    add_png("png_limit_200x1", const_png(200, 1))
    add_png("png_limit_201x1", const_png(201, 1))
    add_png("png_limit_1x201", const_png(1, 201))
    add_png("png_limit_2049x1", const_png(2049, 1))
    add_png("png_limit_2049x11", const_png(2049, 11))
    add_png("png_limit_2048x512", const_png(2048, 512))
    add_png("png_limit_1024x1024", const_png(1024, 1024))
    add_png("png_limit_1024x1025", const_png(1024, 1025))
    add_png("png_limit_13000x13000_header_only", const_png(13000, 13000, valid=False))
    add_png("png_bomb_13000x13800_header_only", const_png(13000, 13800, valid=False))
    add_png("png_limit_2048x512_bad_data", const_png(2048, 512, valid=False))


def pypng_bytes(rng):
    b = io.BytesIO()
    rows = [[rng.randrange(256) for _ in range(11 * 3)] for _ in range(6)]
    pypng.Writer(11, 6, greyscale=False, interlace=True).write(b, rows)
    return b.getvalue()


def flip(data, i, mask=1):
    b = bytearray(data)
    b[i] ^= mask
    return bytes(b)


def build_jpeg_cases(rng):
    shot = screenshot_like(61, 35, 2)
    for sub in (0, 1, 2):
        name = {0: "444", 1: "422", 2: "420"}[sub]
        add_jpeg(f"jpeg_{name}", pil_bytes(shot, "JPEG", quality=90, subsampling=sub))
        add_jpeg(f"jpeg_{name}_progressive", pil_bytes(shot, "JPEG", quality=75, subsampling=sub, progressive=True))
    add_jpeg("jpeg_420_q50_optimize", pil_bytes(shot, "JPEG", quality=50, optimize=True))
    add_jpeg("jpeg_gray", pil_bytes(shot.convert("L"), "JPEG", quality=85))
    add_jpeg("jpeg_gray_progressive", pil_bytes(shot.convert("L"), "JPEG", quality=85, progressive=True))
    add_jpeg("jpeg_restart_blocks", pil_bytes(shot, "JPEG", quality=90, restart_marker_blocks=3))
    add_jpeg("jpeg_restart_rows", pil_bytes(shot, "JPEG", quality=90, restart_marker_rows=1))
    add_jpeg("jpeg_1x1", pil_bytes(Image.new("RGB", (1, 1), (200, 30, 90)), "JPEG"))
    add_jpeg("jpeg_odd_17x9", pil_bytes(screenshot_like(17, 9, 3), "JPEG", quality=95))
    big = screenshot_like(160, 120, 4)
    add_jpeg("jpeg_160x120_420", pil_bytes(big, "JPEG", quality=90))
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 CW; must be ignored
    add_jpeg("jpeg_exif_orientation", pil_bytes(shot, "JPEG", quality=90, exif=exif))
    add_jpeg("jpeg_icc", pil_bytes(shot, "JPEG", quality=90, icc_profile=b"\0" * 300))
    add_jpeg("jpeg_cmyk", pil_bytes(shot.convert("CMYK"), "JPEG", quality=90))
    # MPO: Pillow writes the APP2 MPF index itself.
    mpo = pil_bytes(shot, "MPO", save_all=True, append_images=[screenshot_like(61, 35, 9)], quality=80)
    add_jpeg("mpo_two_pictures", mpo)
    add_jpeg("mpo_as_png", mpo, mime="png")
    single_mp = mp_app2_jpeg(pil_bytes(shot, "JPEG", quality=80), 1, big_endian=False)
    add_jpeg("jpeg_mp_index_one_image", single_mp)
    add_jpeg("jpeg_mp_index_two_be", mp_app2_jpeg(pil_bytes(shot, "JPEG", quality=80), 2, big_endian=True))
    add_jpeg("jpeg_mp_index_two_le", mp_app2_jpeg(pil_bytes(shot, "JPEG", quality=80), 2, big_endian=False))
    add_jpeg("jpeg_mp_index_short_entries", mp_app2_jpeg(pil_bytes(shot, "JPEG", quality=80), 3,
                                                         big_endian=False, entries=2))
    add_jpeg("jpeg_mp_index_bad_tiff", insert_app(pil_bytes(shot, "JPEG"), 0xE2, b"MPF\0XX\0*\0\0\0\x08"))
    # Damage.
    good = pil_bytes(shot, "JPEG", quality=90)
    prog = pil_bytes(shot, "JPEG", quality=90, progressive=True)
    add_jpeg("jpeg_trunc_half", good[: len(good) // 2])
    add_jpeg("jpeg_trunc_no_eoi", good[:-2])
    add_jpeg("jpeg_trunc_last_bytes", good[:-5])
    add_jpeg("jpeg_progressive_trunc", prog[: len(prog) * 2 // 3])
    add_jpeg("jpeg_progressive_no_eoi", prog[:-2])
    add_jpeg("jpeg_trunc_header", good[:100])
    add_jpeg("jpeg_soi_only", b"\xff\xd8\xff")
    sos = good.index(b"\xff\xda")
    body = bytearray(good)
    for k in range(5):
        i = sos + 40 + k * 97
        if body[i] != 0xFF and body[i - 1] != 0xFF:
            body[i] ^= 0x5A
    add_jpeg("jpeg_corrupt_entropy", bytes(body))
    add_jpeg("jpeg_garbage_after_eoi", good + b"garbage after the end")
    add_jpeg("jpeg_junk_before_marker", good[:2] + b"\xff\xe0\x00\x04ab" + b"junk" + good[2:])
    sof = good.index(b"\xff\xc0")
    add_jpeg("jpeg_12bit_sof", good[: sof + 4] + b"\x0c" + good[sof + 5:])
    add_jpeg("jpeg_zero_height", good[: sof + 5] + b"\0\0" + good[sof + 7:])
    add_jpeg("jpeg_two_layers", good[: sof + 9] + b"\x02" + good[sof + 10:])
    add_jpeg("jpeg_bad_marker", good[:2] + b"\xff\x05" + good[2:])
    add_jpeg("jpeg_dqt_short", insert_seg(good, 0xDB, b"\x00" + bytes(10)))
    add_jpeg("jpeg_jfif_short", good[:2] + b"\xff\xe0\x00\x08JFIF\0\1" + good[2:])
    add_jpeg("jpeg_sent_as_png", good, mime="png")
    # Limits from SOF (data need not be valid).
    add_jpeg("jpeg_limit_201x1", pil_bytes(Image.new("RGB", (201, 1)), "JPEG"))
    add_jpeg("jpeg_limit_2049x11", pil_bytes(Image.new("RGB", (2049, 11)), "JPEG"))
    add_jpeg("jpeg_limit_1024x1025", pil_bytes(Image.new("L", (1024, 1025)), "JPEG", quality=10))
    add_jpeg("jpeg_bomb_header", good[: sof + 5] + struct.pack(">HH", 14000, 14000) + good[sof + 9:])


def insert_seg(jpeg, marker, payload):
    return jpeg[:2] + bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def insert_app(jpeg, marker, payload):
    return insert_seg(jpeg, marker, payload)


def mp_app2_jpeg(jpeg, n, big_endian, entries=None):
    """A JPEG with an APP2 MP index declaring n images (entries: how many MP entries to write)."""
    e = ">" if big_endian else "<"
    entries = n if entries is None else entries
    head = (b"MM\0*" if big_endian else b"II*\0") + struct.pack(e + "I", 8)
    ifd_count = 3
    ifd_size = 2 + 12 * ifd_count + 4
    mpentry_offset = 8 + ifd_size
    mpentries = b"".join(struct.pack(e + "IIIHH", 0x030000 if i == 0 else 0, 1000, 0, 0, 0) for i in range(entries))
    ifd = struct.pack(e + "H", ifd_count)
    ifd += struct.pack(e + "HHI4s", 0xB000, 7, 4, b"0100")
    ifd += struct.pack(e + "HHII", 0xB001, 4, 1, n)
    ifd += struct.pack(e + "HHII", 0xB002, 7, len(mpentries), mpentry_offset)
    ifd += struct.pack(e + "I", 0)
    return insert_app(jpeg, 0xE2, b"MPF\0" + head + ifd + mpentries)


def build_other_cases(rng):
    shot = screenshot_like(12, 9, 5)
    add("gif_as_png", pil_bytes(shot, "GIF"), "png", "gif")
    add("bmp_as_png", pil_bytes(shot, "BMP"), "png", "bmp")
    add("webp_as_jpeg", pil_bytes(shot, "WEBP"), "jpeg", "webp")
    add("tiff_as_png", pil_bytes(shot, "TIFF"), "png", "tif")
    add("png_as_jpeg", pil_bytes(shot, "PNG"), "jpeg", "png")
    add("random_bytes", bytes(rng.randrange(256) for _ in range(300)), "png", "bin")
    add("text_bytes", b"hello, this is not an image", "jpeg", "bin")
    add("empty", b"", "png", "bin")


def main():
    rng = random.Random(20250711)
    build_png_cases(rng)
    build_jpeg_cases(rng)
    build_other_cases(rng)
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    manifest = []
    for name, filename, mime, data, note in cases:
        status, detail, rgb = reference(data, mime)
        entry = {"name": name, "file": filename, "mime": mime, "status": status, "detail": detail}
        if rgb is not None:
            entry.update(width=rgb.width, height=rgb.height,
                         sha256=hashlib.sha256(rgb.tobytes()).hexdigest())
            if Image.open(io.BytesIO(data)).mode == "CMYK":
                # Our documented choice: Pillow converts CMYK, we refuse it.
                entry.update(status=422, detail=MSG_CMYK, pillow_status=200)
        if note:
            entry["note"] = note
        (OUT / filename).write_bytes(data)
        manifest.append(entry)
    (OUT / "manifest.json").write_text(json.dumps(
        {"generator": "tools/make_codec_fixtures.py", "pillow": Image.__version__,
         "libjpeg_turbo": features.version("libjpeg_turbo"), "cases": manifest}, indent=1) + "\n")
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{len(manifest)} cases, {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
