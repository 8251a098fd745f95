#!/usr/bin/env python3
"""Generates tests/fixtures/tokenizer/corpus.jsonl.xz: strings and their reference token ids.

Each line is {"kind": ..., "text": ..., "ids": [...]}; strings up to 2,000 characters also carry
"pieces": the UTF-8 byte lengths of the pieces the tokenizer's Split pre-tokenizer alone makes of
the NFC form (added tokens not split out), and the NFC cases "nfc": tokenizers' NFC output. Reference ids come from Transformers 5.17.0 AutoTokenizer
(tokenizers 0.23.2) loading the directory written by tools/make_qwen35_tokenizer.py, called with
add_special_tokens=False. The corpus is deterministic (fixed seed).

Usage: make_tokenizer_fixtures.py TOKENIZER_DIR OUT.jsonl.xz
"""

import json
import lzma
import random
import sys
import unicodedata

SEED = 20240611
SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]
WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from "
         "or one had by word but not what all were we when your can said there use an each which "
         "she do how their if will up other about out many then them these so some her would make "
         "like him into time has look two more write go see number no way could people my than "
         "first water been call who oil its now find long down day did get come made may part "
         "screenshot button option select decision goal app cua driver candidate window click "
         "Settings Safari Finder Terminal GitHub JSON HTTP OpenAI Qwen McDonald's O'Neil naïve "
         "café résumé coöperate façade jalapeño Zürich São Paulo Kraków Ærø").split()
SYSTEM = ("You are a one-pass computer-use decision model. You are shown the current state of a "
          "screen and a fixed, closed list of candidate (element, action) options, each given a "
          "single letter. Choose exactly one option: the single best next action to take. Answer "
          "with ONLY that option's letter -- no words, no punctuation, no explanation.")
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\u00a0", "\u3000", "\u2028",
          "\u2029", "\x0b", "\x0c", "\x85", "\u2003", "\u200b", "\u202f", "\ufeff", "\x1c"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["—", "–", "…", "«", "»", "“", "”", "¿", "¡",
                                                       "•", "→", "©", "®", "™", "°", "§", "¶"]
MARKS = [0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x030A, 0x030C, 0x0323, 0x0327, 0x0328, 0x0316,
         0x0334, 0x0338, 0x0345, 0x035C, 0x0361, 0x05B0, 0x05BC, 0x064B, 0x0651, 0x093C, 0x094D,
         0x0E38, 0x0E48, 0x3099, 0x309A, 0x1DFA, 0x07FD, 0x0C3C, 0x1AB0, 0x20D7, 0xFE20, 0x0F71,
         0x0F72, 0x0F74, 0x0F80, 0x1D165, 0x1D16D, 0x11930, 0x0344, 0x0340, 0x0343]


def prose(rng, n_words):
    out = []
    for i in range(n_words):
        w = rng.choice(WORDS)
        r = rng.random()
        if r < 0.08:
            w = w.capitalize()
        elif r < 0.1:
            w = w.upper()
        out.append(w)
        if rng.random() < 0.1:
            out[-1] += rng.choice([",", ".", ";", ":", "!", "?", "'s", "'S", "'ll", "'LL", "n't"])
    text = " ".join(out)
    return text[:1].upper() + text[1:] + rng.choice([".", "", "\n", "!", "?"])


def code(rng):
    name = rng.choice(["compute", "parse_json", "HttpServer", "x", "_tmp", "fooBar", "MAX_LEN"])
    n = rng.randint(0, 99999)
    samples = [
        f"def {name}(a, b=None):\n    return a + {n}  # add\n",
        f"for (int i = 0; i < {n}; ++i) {{\n\tsum += v[i] * 0x{n:x};\n}}\n",
        f'{{"{name}": [{n}, {n / 7:.5f}, null, true], "s": "a\\nb"}}',
        f"<div class=\"{name}\">&nbsp;{n}</div>\r\n",
        f"SELECT * FROM {name} WHERE id = {n} AND name LIKE '%x%';",
        f"    if {name} != nil {{\n        return fmt.Errorf(\"bad %d\", {n})\n    }}\n",
        f"#include <vector>\nstd::vector<int> {name}{{{n}}};\n",
        f"$ curl -sS http://127.0.0.1:{n % 65536}/v1/systemone -d @req.json | jq .choice\n",
        f"x = [{', '.join(str(rng.randint(0, 999)) for _ in range(rng.randint(1, 12)))}]",
        f"/* {name} */\n\n\n    \t  return;  \n",
    ]
    return rng.choice(samples)


def rand_chars(rng, ranges, n):
    out = []
    for _ in range(n):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def random_scalar(rng):
    plane = rng.choice([0, 0, 0, 1, 1, 2, 3, 14, 15, 16])
    while True:
        c = plane * 0x10000 + rng.randint(0, 0xFFFF)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def build(rng):
    cases = []

    def add(kind, text):
        cases.append((kind, text))

    for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz":
        add("letter", c)
    for c in range(0, 128):
        add("ascii_char", chr(c))
    for i in range(350):
        add("prose", prose(rng, rng.randint(1, 60)))
    for i in range(150):
        add("code", code(rng))
    cjk = [(0x4E00, 0x9FFF), (0x3000, 0x303F), (0xFF01, 0xFF5E), (0x3400, 0x4DBF)]
    for i in range(100):
        add("cjk", rand_chars(rng, cjk, rng.randint(1, 40)) + rng.choice(["", " ok", "123", "。\n"]))
    jk = [(0x3041, 0x3096), (0x30A1, 0x30FA), (0xAC00, 0xD7A3), (0x4E00, 0x4FFF), (0x1100, 0x1112),
          (0x1161, 0x1175), (0x11A8, 0x11C2), (0xFF66, 0xFF9F), (0x3131, 0x318E)]
    for i in range(100):
        add("ja_ko", rand_chars(rng, jk, rng.randint(1, 40)))
    for text in ["日本語のテキストです。", "한국어 텍스트입니다.", "\u1100\u1161\u11a8", "\u1112\u1161\u11ab",
                 "\uac00\u11a8", "\u1100\u1161 \u1100", "ｶﾞｷﾞｸﾞ", "か\u3099き\u3099", "パ\u309a"]:
        add("ja_ko", text)
    emoji = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸🇬🇧", "❤️", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "1️⃣", "#️⃣",
             "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "✌🏻", "☺︎", "🤷‍♀️"]
    for i in range(120):
        parts = [rng.choice(emoji) for _ in range(rng.randint(1, 6))]
        sep = rng.choice(["", " ", "\n", "a", "!"])
        add("emoji", sep.join(parts) + rng.choice(["", " done", "?"]))
    for i in range(250):
        base = rng.choice(["a", "e", "o", "A", "u", "n", "c", "s", ">", "<", "=", "\u1100", "ε",
                           "α", "ω", "и", "क", "ก", "ا", "ב", " ", "1", "\u0627", "\u11935", "Å"])
        marks = "".join(chr(rng.choice(MARKS)) for _ in range(rng.randint(0, 4)))
        text = base + marks
        if rng.random() < 0.5:
            text = prose(rng, 2) + text + rng.choice(["", "x", " word", "\u0301"])
        add("nfc", text)
    for text in ["e\u0301", "e\u0301\u0323", "e\u0323\u0301", "\u212b", "\u2126", "\u0344",
                 "\u00c5\u0301", "A\u030a\u0301", "\u1e0b\u0323", "q\u0307\u0323", "\u0958",
                 "\ufb2c", "\u0f73", "\u0f77", "\U0001d15e", "\u11935\u11930", "\U00011935\U00011930",
                 "\u0301abc", "\u0301\u0300", "a\u0338", "<think>\u0338", "<|im_end|>\u0301",
                 "=\u0338", "\u0627\u0653", "\u0915\u093c", "\u09c7\u09be", "\u0b47\u0b56",
                 "\u0dd9\u0dcf\u0dca", "\u1025\u102e", "\u1b05\u1b35", "\u3046\u3099",
                 "\U000110a5\U000110ba", "\U00011131\U00011127", "\U0001d1bb\U0001d165",
                 "\u0041\u0300\u0316\u0301", "\u0061\u0315\u0300\u05ae\u0300\u0062"]:
        add("nfc", text)
    scripts = [(0x0600, 0x06FF), (0x05D0, 0x05EA), (0x0591, 0x05C7), (0x0900, 0x097F),
               (0x0E00, 0x0E7F), (0x0980, 0x09FF), (0x0B80, 0x0BFF), (0x0400, 0x04FF),
               (0x0370, 0x03FF), (0x10A0, 0x10FF), (0x0530, 0x058F), (0x1780, 0x17FF)]
    for i in range(150):
        words = [rand_chars(rng, [rng.choice(scripts)], rng.randint(1, 9))
                 for _ in range(rng.randint(1, 8))]
        add("scripts", rng.choice([" ", "  ", "\n", "، ", ". "]).join(words))
    for text in ["مرحبا بالعالم", "שָׁלוֹם עוֹלָם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Привет, мир!",
                 "Γειά σου Κόσμε", "مرحبا 123 hello"]:
        add("scripts", text)
    for i in range(200):
        parts = []
        for _ in range(rng.randint(1, 8)):
            parts.append("".join(rng.choice(SPACES) for _ in range(rng.randint(1, 5))))
            if rng.random() < 0.7:
                parts.append(rng.choice(WORDS + ["123", "!!", "'s", "<|im_end|>", "é"]))
        add("whitespace", "".join(parts))
    for text in [" ", "  ", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\t", "\t\t", " \t\n", "a  b",
                 "a \n b", "a\n\n b", " \u00a0x", "\u3000\u3000漢", "x\u2028y", "end   ", "  start",
                 "a\t\tb", "a \t b", "\n \n \n", "x \r\n\r\n y", "\u00a0\u00a0"]:
        add("whitespace", text)
    for i in range(120):
        r = rng.random()
        if r < 0.3:
            text = str(rng.randint(0, 10 ** rng.randint(1, 40)))
        elif r < 0.5:
            text = f"{rng.uniform(-1e6, 1e6):,.{rng.randint(0, 6)}f}"
        elif r < 0.7:
            text = rand_chars(rng, [(0xFF10, 0xFF19), (0x0660, 0x0669), (0x00B2, 0x00B3), (0x2460,
                                    0x2473), (0x0966, 0x096F), (0x2150, 0x218B)], rng.randint(1, 12))
        else:
            text = f"v{rng.randint(0, 9)}.{rng.randint(0, 99)}.{rng.randint(0, 999)} at " \
                   f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} on 2024-0{rng.randint(1, 9)}"
        add("digits", text)
    contractions = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'rE", "'ve", "'VE", "'m", "'M",
                    "'ll", "'LL", "'Ll", "'d", "'D", "'ſ", "'x", "'", "''", "'''s", "’s", "'l",
                    "'r", "'v", "'e"]
    for i in range(150):
        w = rng.choice(WORDS + ["I", "YOU", "she", "it", "", " ", "x", "1", "é", "中"])
        add("contraction", w + rng.choice(contractions) + rng.choice(["", " ", "x", "s", ".", "\n",
                                                                      "'s", "ll"]))
    for i in range(120):
        add("punct", "".join(rng.choice(PUNCT + [" ", "\n", "\r\n", "a", "1"]) for _ in
                             range(rng.randint(1, 25))))
    for tok in SPECIALS:
        for ctx in ["{t}", "a{t}b", " {t} ", "\n{t}\n", "{t}{t}", "{t}user\n", "x {t}", "{t}  ",
                    "é{t}\u0301", "{t}'s", "123{t}456"]:
            add("special", ctx.format(t=tok))
    partial = ["<|im_start", "<|im_start|", "|im_start|>", "<|IM_START|>", "<im_start>",
               "<| im_start |>", "< think>", "<think", "think>", "</think", "<|endoftext|", "<<|im_end|>>",
               "<|im_end|>|>", "<|<|im_start|>", "<thinking>", "<tool_call", "<|image_pad|><|image",
               "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>", "<tts_text_bos_single",
               "<tts_text_bos_singl>", "<tts_text_bos>_single>", "<|endoftext|><|endoftext|>x",
               "<|box_start|>(1,2),(3,4)<|box_end|>", "<|\u00e9m_start|>", "＜think＞"]
    for text in partial:
        add("special_partial", text)
        add("special_partial", "text " + text + " more")
    for i in range(200):
        parts = []
        for _ in range(rng.randint(1, 10)):
            r = rng.random()
            if r < 0.3:
                parts.append(rng.choice(SPECIALS))
            elif r < 0.4:
                parts.append(rng.choice(partial))
            else:
                parts.append(prose(rng, rng.randint(0, 5)))
        add("special_mix", rng.choice(["", " ", "\n"]).join(parts))
    for n_options in range(1, 27):
        options = "\n".join(f"{chr(65 + i)}. Decision \"{prose(rng, rng.randint(1, 4))}\" -> select"
                            for i in range(n_options))
        user = (f"Goal: {prose(rng, 8)}\n\nApp: Cua Driver\nTask family: closed-candidate decision"
                f"\n\nThe current screenshot is attached.\n\nOptions:\n{options}\n\nAnswer with a "
                "single letter.")
        pads = "<|image_pad|>" * rng.randint(1, 300)
        add("chat", f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n<|vision_start|>"
                    f"{pads}<|vision_end|>{user}<|im_end|>\n<|im_start|>assistant\n<think>\n")
    for i in range(250):
        add("random_unicode", "".join(random_scalar(rng) for _ in range(rng.randint(1, 40))))
    for i in range(120):
        raw = bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 60)))
        add("random_bytes", raw.decode("utf-8", errors=rng.choice(["ignore", "replace"])) or "x")
    # Fuzz: short strings from a pool of characters at the regex's class boundaries.
    pool = (list("'sStTrReEvVmMlLdD ") + ["ſ", "\r", "\n", "\t", "\u00a0", "\u3000", "\u2028",
            "\x85", "\x0b", "1", "٣", "²", "Ⅻ", "é", "e\u0301", "\u0301", "\u0903", "\u20dd",
            "中", "あ", "한", "\u1100", "\u1161", "\u11a8", "😀", "\u200d", "\ufe0f", "!", ".",
            "-", "_", "$", "€", "<", ">", "|", "<|im_end|>", "<think>", "\x00", "\U000e0001",
            "\U0001e4d0", "\U000105c0", "\U00010d40", "\U00011938", "\u0338", "\U0010fffd"])
    for i in range(600):
        add("fuzz", "".join(rng.choice(pool) for _ in range(rng.randint(1, 30))))
    # Very long strings (~100 KB).
    add("long_prose", " ".join(prose(rng, 40) for _ in range(450))[:100000])
    add("long_letters", "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(100000)))
    add("long_same", "a" * 100000)
    add("long_spaces", " " * 50000 + "x" + "\n" * 30000 + " \t" * 10000)
    add("long_digits", "".join(rng.choice("0123456789") for _ in range(100000)))
    add("long_mixed", "".join(rng.choice([random_scalar(rng), rng.choice(WORDS) + " ",
                                          rng.choice(SPECIALS), rng.choice(SPACES),
                                          rng.choice(emoji)]) for _ in range(20000)))
    add("long_cjk", rand_chars(rng, cjk, 33000))
    add("long_marks", "a" + "".join(chr(rng.choice(MARKS)) for _ in range(5000)))
    return cases


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import tokenizers
    import transformers
    from tokenizers import normalizers
    from transformers import AutoTokenizer

    assert transformers.__version__ == "5.17.0" and tokenizers.__version__ == "0.23.2"
    tok = AutoTokenizer.from_pretrained(sys.argv[1])
    rng = random.Random(SEED)
    cases = build(rng)
    nfc = normalizers.NFC()
    # The Split step alone (same Oniguruma regex), to check piece boundaries directly.
    split = tok.backend_tokenizer.pre_tokenizer[0]
    texts = [t for _, t in cases]
    ids = tok(texts, add_special_tokens=False)["input_ids"]
    lines = []
    for (kind, text), token_ids in zip(cases, ids):
        item = {"kind": kind, "text": text, "ids": token_ids}
        if len(text) <= 2000:
            normalized = nfc.normalize_str(text)
            item["pieces"] = [len(piece.encode("utf-8")) for piece, _ in
                              split.pre_tokenize_str(normalized)]
        if kind == "nfc":
            item["nfc"] = nfc.normalize_str(text)
            if item["nfc"] != unicodedata.normalize("NFC", text):
                item["python_nfc_differs"] = True
        lines.append(json.dumps(item, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with open(sys.argv[2], "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print(f"{len(cases)} cases, {sum(len(t) for t in texts)} characters, "
          f"{sum(len(i) for i in ids)} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()
