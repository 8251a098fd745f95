#!/usr/bin/env python3
"""Screenshot-like 1280x720 requests (PNG and JPEG) for the processor benchmark.

Draws a desktop-application screen with Pillow 11.3.0 (title bar, sidebar, a form with text
fields and buttons, a table of text rows, an image-like gradient panel) so that PNG compression
and JPEG content resemble real screenshots, and writes /v1/systemone request bodies with one
3-option question.

Usage: make_bench_inputs.py bench/inputs
"""

import base64
import io
import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw


def screenshot(width=1280, height=720):
    image = Image.new("RGB", (width, height), "#f3f4f6")
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, width, 36], fill="#1f2937")
    draw.text((12, 12), "Acme CRM - Customers - Edit record", fill="#e5e7eb")
    draw.rectangle([0, 36, 220, height], fill="#111827")
    for i, item in enumerate(["Dashboard", "Customers", "Orders", "Invoices", "Reports",
                              "Settings", "Help"]):
        draw.text((20, 60 + 34 * i), item, fill="#d1d5db" if i != 1 else "#60a5fa")
    draw.rectangle([240, 56, 760, 680], fill="white", outline="#d1d5db")
    for i, label in enumerate(["First name", "Last name", "Email", "Phone", "Company", "Notes"]):
        y = 80 + 70 * i
        draw.text((260, y), label, fill="#374151")
        draw.rectangle([260, y + 18, 740, y + 50], fill="#f9fafb", outline="#9ca3af")
        draw.text((268, y + 28), f"value of {label.lower()} #{i * 7919 % 1000}", fill="#111827")
    draw.rounded_rectangle([560, 620, 740, 660], 6, fill="#2563eb")
    draw.text((625, 633), "Save", fill="white")
    draw.rounded_rectangle([360, 620, 540, 660], 6, fill="#e5e7eb")
    draw.text((420, 633), "Cancel", fill="#111827")
    draw.rectangle([780, 56, 1260, 400], fill="white", outline="#d1d5db")
    for r in range(14):
        y = 66 + 23 * r
        draw.text((792, y), f"ORD-{10231 + r}   2026-11-{r + 1:02d}   ${(r * 37.5) % 900:8.2f}",
                  fill="#1f2937" if r % 2 else "#4b5563")
    for y in range(420, 680):
        for x in range(780, 1260, 4):
            shade = (x * 3 + y * 5) % 256
            draw.line([x, y, x + 3, y], fill=(shade, (shade * 2) % 256, 200))
    return image


def request(data_url):
    return {"model": "cua-s1-4b-0.2", "state": {"image": data_url}, "questions": {
        "next": {"type": "choice", "instructions": "Save the customer record.",
                 "criteria": {"save": "Click Save", "cancel": "Click Cancel", "wait": "Wait"}}}}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    image = screenshot()
    for fmt, mime, kwargs in [("PNG", "png", {}), ("JPEG", "jpeg", {"quality": 90})]:
        buffer = io.BytesIO()
        image.save(buffer, format=fmt, **kwargs)
        url = f"data:image/{mime};base64," + base64.b64encode(buffer.getvalue()).decode()
        path = out / f"screenshot-1280x720-{mime}.json"
        path.write_text(json.dumps(request(url)))
        print(path, len(buffer.getvalue()), "bytes")


if __name__ == "__main__":
    main()
