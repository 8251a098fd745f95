#!/usr/bin/env python3
"""Builds the tiny-model tokenizer (vocab 512) with the Qwen3.5 pipeline of Transformers 5.17.

The tiny fixture model (spec/model.md section 11, tools/make_tiny_model.py) has a 512-row
embedding, so its tokenizer must keep every id below 512 while behaving like Qwen3.5:

* ids 0..255: the 256 byte tokens in byte-level (GPT-2 bytes_to_unicode) order, as in the real
  vocabulary, so the letters A..Z are single tokens 32..57 exactly as in Qwen3.5;
* ids 256..487: 232 BPE merges learned greedily (most frequent pair, ties by first occurrence)
  from the prompt texts of the fixture corpora (tools/make_prepare_fixtures.py prompt shape);
* ids 488..511: added tokens in the Qwen3.5 order starting at <|endoftext|> = 488, so that
  <|vision_start|> = 497, <|vision_end|> = 498, <|image_pad|> = 500 and <|video_pad|> = 501 as
  the tiny config.json requires; then <tool_call>, </tool_call>, <think>, </think> and the
  fim/repo/file/tool_response tokens (24 in all; the Qwen3.5 list is cut at id 511).
* pipeline: `Qwen3_5Tokenizer` of Transformers 5.17.0 (NFC, the Qwen3.5 Split regex, ByteLevel
  without its own regex, BPE without byte fallback, ByteLevel decoder), flags of the added tokens
  as tools/make_qwen35_tokenizer.py sets them.

The result is saved with save_pretrained (only tokenizer.json and tokenizer_config.json are
kept), reloaded with AutoTokenizer and checked.

Versions: Python 3.11, transformers 5.17.0, tokenizers 0.23.2.
Usage: make_tiny_tokenizer.py OUT_DIR   (tests/fixtures/tiny)
"""

import collections
import hashlib
import os
import shutil
import sys
import tempfile

SYSTEM_PROMPT = (
    "You are a one-pass computer-use decision model. You are shown the current state of a screen "
    "and a fixed, closed list of candidate (element, action) options, each given a single letter. "
    "Choose exactly one option: the single best next action to take. Answer with ONLY that "
    "option's letter -- no words, no punctuation, no explanation.")
TRAINING_TEXT = [
    "system\n" + SYSTEM_PROMPT, "user\n", "assistant\n", "\n\n",
    "Goal: Save the changed display name.\n\nApp: Cua Driver\nTask family: closed-candidate "
    "decision\n\nThe current screenshot is attached.\n\nOptions:\n"
    'A. Decision "Click Save" -> select\nB. Decision "Click Cancel" -> select\n'
    'C. Decision "Wait" -> select\n\nAnswer with a single letter.',
    "Choose a useful next action. Case 0. Option 1 option-2",
]
ADDED = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<think>", "</think>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
]
FIRST_ADDED = 488
NON_SPECIAL = {"<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
               "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<think>",
               "</think>"}


def byte_tokens():
    """Byte-level alphabet in GPT-2 order: printable bytes first, then the remapped ones."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def learn_merges(words, count):
    """Greedy BPE: repeatedly merge the most frequent adjacent pair (ties: first seen)."""
    seqs = [list(w) for w in words]
    merges = []
    for _ in range(count):
        pairs = collections.Counter()
        first = {}
        for seq in seqs:
            for a, b in zip(seq, seq[1:]):
                pairs[(a, b)] += 1
                first.setdefault((a, b), len(first))
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -first[p]))
        merges.append(best)
        joined = best[0] + best[1]
        for i, seq in enumerate(seqs):
            out, j = [], 0
            while j < len(seq):
                if j + 1 < len(seq) and seq[j] == best[0] and seq[j + 1] == best[1]:
                    out.append(joined)
                    j += 2
                else:
                    out.append(seq[j])
                    j += 1
            seqs[i] = out
    return merges


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    import tokenizers
    import transformers
    from tokenizers import AddedToken
    from transformers import AutoTokenizer
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer
    if transformers.__version__ != "5.17.0" or tokenizers.__version__ != "0.23.2":
        sys.exit("need transformers 5.17.0 and tokenizers 0.23.2")

    alphabet = byte_tokens()
    vocab = {token: index for index, token in enumerate(alphabet)}
    # Pre-tokenize the training text with the real pipeline (no merges yet).
    probe = Qwen3_5Tokenizer(vocab=dict(vocab), merges=[])
    pre = probe.backend_tokenizer.pre_tokenizer
    normalizer = probe.backend_tokenizer.normalizer
    words = [piece for text in TRAINING_TEXT
             for piece, _ in pre.pre_tokenize_str(normalizer.normalize_str(text))]
    merges = learn_merges(words, FIRST_ADDED - 256)
    if len(merges) != FIRST_ADDED - 256:
        sys.exit(f"only {len(merges)} merges learned")
    for a, b in merges:
        vocab[a + b] = len(vocab)
    assert len(vocab) == FIRST_ADDED, len(vocab)

    added = {FIRST_ADDED + i: AddedToken(content, special=content not in NON_SPECIAL,
                                         normalized=False, lstrip=False, rstrip=False,
                                         single_word=False)
             for i, content in enumerate(ADDED)}
    tok = Qwen3_5Tokenizer(vocab=vocab, merges=list(merges),
                           added_tokens_decoder=added)
    for index, token in added.items():
        assert tok.convert_tokens_to_ids(token.content) == index, token.content

    with tempfile.TemporaryDirectory() as tmp:
        tok.save_pretrained(tmp)
        reloaded = AutoTokenizer.from_pretrained(tmp)

        def ids(text):
            return reloaded(text, add_special_tokens=False)["input_ids"]

        for offset, letter in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
            assert ids(letter) == [32 + offset], (letter, ids(letter))
        for index, token in added.items():
            assert ids(token.content) == [index], token.content
        assert max(ids("<|im_start|>system\n" + SYSTEM_PROMPT + "<|im_end|> é 中文 😀")) < 512
        for special, index in (("<|vision_start|>", 497), ("<|vision_end|>", 498),
                               ("<|image_pad|>", 500), ("<|video_pad|>", 501)):
            assert reloaded.convert_tokens_to_ids(special) == index
        print("system prompt:", len(ids(SYSTEM_PROMPT)), "tokens;", "reloaded as",
              type(reloaded).__name__)
        os.makedirs(out_dir, exist_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(out_dir, name))
    path = os.path.join(out_dir, "tokenizer.json")
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    print(f"tokenizer.json: {os.path.getsize(path)} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()
