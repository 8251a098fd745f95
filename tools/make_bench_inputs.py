#!/usr/bin/env python3
"""Screenshot-like requests for the processor benchmark and the server benchmark.

Processor benchmark (bench/prepare_bench.cpp): screenshot-1280x720-{png,jpeg}.json. Draws a
desktop-application screen with Pillow 11.3.0 (title bar, sidebar, a form with text fields and
buttons, a table of text rows, an image-like gradient panel) so that PNG compression and JPEG
content resemble real screenshots, and writes /v1/systemone request bodies with one 3-option
question.

Server benchmark (bench/bench_server.py): gpu-WxH-q1.json and gpu-WxH-q8.json for 640x480,
1280x720 and 1024x1024 PNG screenshots of an order-management application (window controls,
toolbar, sidebar, an orders table with pagination, an order form, a notification, a chart),
laid out for each size. q1 has one 4-option question; q8 has eight different questions on the
same screenshot with 4, 2, 6, 26, 3, 12, 8 and 17 options (UI actions on the drawn elements;
one with object instructions and structured / null criteria), so that the q8 requests exercise
the image-feature reuse path of contract section 2 with different prompt lengths.

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
    write_gpu_inputs(out)


# ---- server benchmark inputs -------------------------------------------------------------

GPU_SIZES = [(640, 480), (1280, 720), (1024, 1024)]

CUSTOMERS = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov",
             "Donald Knuth", "Margaret Hamilton", "Ken Thompson", "Frances Allen", "John Backus"]
STATUSES = ["Pending", "Processing", "Shipped", "Delivered", "Cancelled", "Refunded", "On hold"]
SIDEBAR = ["Dashboard", "Customers", "Orders", "Invoices", "Products", "Reports", "Settings",
           "Help", "Sign out"]
TOOLBAR = ["New order", "Import", "Export", "Refresh", "Filter"]


def order_row(r):
    month, day = 11 + (r + 2) // 28, (r + 2) % 28 + 1
    return (f"ORD-{10231 + r}", CUSTOMERS[r % len(CUSTOMERS)], f"2026-{month:02d}-{day:02d}",
            f"${(r * 137.25 + 49.9) % 1900:,.2f}", STATUSES[(r * 3) % len(STATUSES)])


def app_screen(width, height):
    """An order-management screen laid out for width x height (flat colours and text, as UI
    screenshots are; the default Pillow font, so small sizes are dense)."""
    image = Image.new("RGB", (width, height), "#f3f4f6")
    draw = ImageDraw.Draw(image)
    # Title bar with window controls.
    draw.rectangle([0, 0, width, 28], fill="#1f2937")
    draw.text((10, 9), "Acme Commerce - Orders - ORD-10237", fill="#e5e7eb")
    for i, (glyph, colour) in enumerate([("x", "#ef4444"), ("[]", "#9ca3af"), ("_", "#9ca3af")]):
        x = width - 26 * (i + 1)
        draw.rectangle([x, 4, x + 20, 24], fill=colour)
        draw.text((x + 6, 8), glyph, fill="white")
    # Sidebar.
    side = max(120, width // 7)
    draw.rectangle([0, 28, side, height - 20], fill="#111827")
    for i, item in enumerate(SIDEBAR):
        y = 44 + 28 * i
        if item == "Orders":
            draw.rectangle([0, y - 6, side, y + 16], fill="#1e3a8a")
        draw.text((16, y), item, fill="#d1d5db" if item != "Orders" else "#93c5fd")
    # Toolbar with search.
    draw.rectangle([side, 28, width, 64], fill="white", outline="#e5e7eb")
    x = side + 10
    for label in TOOLBAR:
        w = 12 + 6 * len(label)
        fill = "#2563eb" if label == "New order" else "#e5e7eb"
        draw.rounded_rectangle([x, 36, x + w, 58], 4, fill=fill)
        draw.text((x + 6, 42), label, fill="white" if label == "New order" else "#111827")
        x += w + 8
    search_x = max(x + 10, width - 220)
    if search_x + 120 < width - 10:
        draw.rectangle([search_x, 36, width - 12, 58], fill="#f9fafb", outline="#9ca3af")
        draw.text((search_x + 8, 42), "Search orders...", fill="#6b7280")
    # Layout of the content area: the table left, the order form right (below on narrow screens).
    content_w = width - side - 20
    wide = content_w >= 700
    table_w = content_w * 3 // 5 if wide else content_w
    top = 76
    bottom = height - 30
    table_h = (bottom - top) if wide else (bottom - top) * 11 // 20
    tx0, ty0 = side + 10, top
    draw.rectangle([tx0, ty0, tx0 + table_w, ty0 + table_h], fill="white", outline="#d1d5db")
    cols = [("", 0.0), ("Order", 0.05), ("Customer", 0.22), ("Date", 0.50), ("Total", 0.67),
            ("Status", 0.83)]
    draw.rectangle([tx0 + 1, ty0 + 1, tx0 + table_w - 1, ty0 + 22], fill="#f9fafb")
    for name, frac in cols:
        draw.text((tx0 + 8 + int(frac * table_w), ty0 + 7), name, fill="#374151")
    rows = max(3, (table_h - 60) // 24)
    for r in range(rows):
        y = ty0 + 28 + 24 * r
        if r == 6:
            draw.rectangle([tx0 + 1, y - 4, tx0 + table_w - 1, y + 18], fill="#dbeafe")
        draw.rectangle([tx0 + 8, y, tx0 + 18, y + 10], outline="#6b7280",
                       fill="#2563eb" if r == 6 else "white")
        for (name, frac), value in zip(cols[1:], order_row(r)):
            cx = tx0 + 8 + int(frac * table_w)
            if name == "Status":
                colour = {"Shipped": "#dcfce7", "Cancelled": "#fee2e2", "Pending": "#fef9c3"}.get(
                    value, "#e5e7eb")
                draw.rounded_rectangle([cx - 3, y - 3, cx + 6 * len(value) + 6, y + 13], 6,
                                       fill=colour)
            draw.text((cx, y), value, fill="#111827")
        if y + 24 > ty0 + table_h - 30:
            break
    # Pagination.
    py = ty0 + table_h - 24
    px = tx0 + 8
    for label in ["Previous", "1", "2", "3", "...", "9", "Next"]:
        w = 10 + 6 * len(label)
        draw.rectangle([px, py, px + w, py + 18], fill="#2563eb" if label == "1" else "white",
                       outline="#d1d5db")
        draw.text((px + 5, py + 4), label, fill="white" if label == "1" else "#111827")
        px += w + 4
    if tx0 + table_w - 150 > px:
        draw.text((tx0 + table_w - 150, py + 4), "Rows per page: 25 v", fill="#374151")
    # Order form.
    if wide:
        fx0, fy0, fx1, fy1 = tx0 + table_w + 10, top, width - 10, bottom
    else:
        fx0, fy0, fx1, fy1 = tx0, ty0 + table_h + 8, tx0 + table_w, bottom
    draw.rectangle([fx0, fy0, fx1, fy1], fill="white", outline="#d1d5db")
    draw.text((fx0 + 12, fy0 + 10), "Order ORD-10237 - Grace Hopper", fill="#111827")
    fields = [("Customer", "Grace Hopper"), ("Email", ""), ("Shipping address", "1 Navy Way"),
              ("Status", "Processing v"), ("Notes", "Gift wrap requested")]
    columns = 1 if wide else 2
    field_w = (fx1 - fx0 - 24 - 12 * (columns - 1)) // columns
    step = 48 if wide else 40
    for i, (label, value) in enumerate(fields):
        cx = fx0 + 12 + (i % columns) * (field_w + 12)
        cy = fy0 + 30 + step * (i // columns)
        if cy + 34 > fy1 - 36:
            break
        draw.text((cx, cy), label, fill="#374151")
        draw.rectangle([cx, cy + 13, cx + field_w, cy + 33], fill="#f9fafb",
                       outline="#2563eb" if label == "Email" else "#9ca3af")
        draw.text((cx + 6, cy + 18), value or "name@example.com", fill="#111827" if value else
                  "#9ca3af")
    bx = fx1 - 12
    for label, fill, ink in [("Save", "#2563eb", "white"), ("Cancel", "#e5e7eb", "#111827"),
                             ("Delete", "#fee2e2", "#b91c1c")]:
        w = 16 + 6 * len(label)
        draw.rounded_rectangle([bx - w, fy1 - 32, bx, fy1 - 10], 5, fill=fill)
        draw.text((bx - w + 8, fy1 - 26), label, fill=ink)
        bx -= w + 8
    # A bar chart where the form leaves room.
    chart_top = fy0 + 30 + step * ((len(fields) + columns - 1) // columns) + 10
    base_y = min(fy1 - 100, chart_top + 300)  # room for the notification and the buttons
    if wide and base_y - 20 - chart_top > 80:
        draw.text((fx0 + 12, chart_top), "Revenue, last 12 weeks", fill="#374151")
        bars = 12
        bar_w = (fx1 - fx0 - 40) // bars
        for b in range(bars):
            h = int((base_y - 20 - chart_top) * (0.3 + 0.7 * ((b * 7) % 11) / 10))
            x0 = fx0 + 20 + b * bar_w
            draw.rectangle([x0, base_y - h, x0 + bar_w - 6, base_y], fill="#60a5fa")
        draw.line([fx0 + 16, base_y, fx1 - 16, base_y], fill="#6b7280")
    # Notification toast: above the form buttons (wide) or over the table's last rows.
    toast_w = min(300, width - side - 40)
    if wide:
        tx, ty = fx1 - toast_w - 12, fy1 - 84
    else:
        tx, ty = tx0 + table_w - toast_w - 12, ty0 + table_h - 72
    draw.rounded_rectangle([tx, ty, tx + toast_w, ty + 40], 6, fill="#111827")
    draw.text((tx + 10, ty + 8), "Status of ORD-10237 changed", fill="white")
    draw.text((tx + 10, ty + 22), "to Processing.", fill="#d1d5db")
    draw.text((tx + toast_w - 90, ty + 15), "Undo", fill="#93c5fd")
    draw.text((tx + toast_w - 50, ty + 15), "Dismiss", fill="#d1d5db")
    # Status bar.
    draw.rectangle([0, height - 20, width, height], fill="#e5e7eb")
    draw.text((8, height - 15), f"Connected - {rows} of 214 orders - last sync 12:04",
              fill="#374151")
    return image


def gpu_questions():
    """Eight different closed-choice questions on app_screen (4, 2, 6, 26, 3, 12, 8, 17
    options)."""
    rows = [order_row(r) for r in range(10)]
    target = [f"Click the table row {o} ({c})" for o, c, *_ in rows]
    target += [f"Click the {t} button in the toolbar" for t in TOOLBAR]
    target += [f"Click {s} in the sidebar" for s in SIDEBAR]
    target += ["Click Previous page", "Click Next page"]
    assert len(target) == 26
    questions = {
        "next": {"type": "choice", "instructions": "Save the changes to order ORD-10237.",
                 "criteria": {"save": "Click the Save button", "cancel": "Click Cancel",
                              "delete": "Click Delete", "wait": "Wait for the page to load"}},
        "toast": {"type": "choice", "instructions": "Revert the last status change.",
                  "criteria": {"undo": "Click Undo in the notification",
                               "dismiss": "Click Dismiss in the notification"}},
        "navigate": {"type": "choice", "instructions": "Open the list of invoices.",
                     "criteria": {s.lower(): f"Click {s} in the sidebar"
                                  for s in SIDEBAR[:6]}},
        "open_order": {"type": "choice",
                       "instructions": "Open the order placed by Donald Knuth on 2026-11-08.",
                       "criteria": {f"opt{i:02d}": text for i, text in enumerate(target)}},
        "window": {"type": "choice", "instructions": "Close the application window.",
                   "criteria": {"minimize": "Click the Minimize button of the title bar",
                                "maximize": "Click the Maximize button of the title bar",
                                "close": "Click the Close button of the title bar"}},
        "status": {"type": "choice", "instructions": "Mark the selected order as shipped.",
                   "criteria": {**{f"select_{s.lower().replace(' ', '_')}":
                                   f"Select '{s}' in the Status dropdown" for s in STATUSES},
                                "open_dropdown": "Open the Status dropdown",
                                "type_notes": "Type in the Notes field",
                                "save": "Click Save", "scroll": "Scroll down",
                                "wait": "Wait"}},
        "email": {"type": "choice",
                  "instructions": {"goal": "Fill in the customer's email address",
                                   "email": "grace.hopper@example.com",
                                   "note": "the field is still empty"},
                  "criteria": {"click_email": {"element": "Email field", "action": "click"},
                               "type_email": "Type 'grace.hopper@example.com'",
                               "click_customer": {"element": "Customer field", "action": "click"},
                               "click_notes": "Click the Notes field",
                               "press_tab": "Press Tab",
                               "save": "Click Save",
                               "search": "Click the Search orders box",
                               "done": None}},
        "pagination": {"type": "choice", "instructions": "Go to the next page of orders.",
                       "criteria": {"previous": "Click Previous", "next": "Click Next",
                                    **{f"page_{p}": f"Click page {p}" for p in range(1, 10)},
                                    "first": "Go to the first page",
                                    "last": "Go to the last page",
                                    **{f"rows_{n}": f"Set rows per page to {n}"
                                       for n in (10, 25, 50, 100)}}},
    }
    counts = [len(q["criteria"]) for q in questions.values()]
    assert counts == [4, 2, 6, 26, 3, 12, 8, 17] and len(set(counts)) == 8, counts
    return questions


def write_gpu_inputs(out):
    questions = gpu_questions()
    first = next(iter(questions))
    for width, height in GPU_SIZES:
        buffer = io.BytesIO()
        app_screen(width, height).save(buffer, format="PNG", optimize=True)
        url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
        for count, qs in [(1, {first: questions[first]}), (8, questions)]:
            body = {"model": "cua-s1-4b-0.2", "state": {"image": url}, "questions": qs}
            path = out / f"gpu-{width}x{height}-q{count}.json"
            path.write_text(json.dumps(body, ensure_ascii=False))
            print(path, len(buffer.getvalue()), "bytes PNG,", count, "question(s)")


if __name__ == "__main__":
    main()
