#!/usr/bin/env python3
"""Generates src/prep/unicode_tables.cpp: the Unicode data the tokenizer's regex and NFC need.

tokenizers 0.23.2 does not use one Unicode version: its Split regex runs on the bundled
Oniguruma (Unicode 16 categories), its NFC on unicode-normalization-alignments (about Unicode 9
combining classes and compositions). Python 3.11's unicodedata is Unicode 14.0. So every table is
started from unicodedata and then settled against tokenizers itself, used as the oracle:

* \\p{L}, \\p{M}, \\p{N}, \\s: the code points the tokenizers Regex matches (checked to be a superset
  of unicodedata's L/M/N categories; the extras are characters assigned after Unicode 14);
* canonical decompositions: tokenizers' NFD of every code point;
* canonical combining classes: probed through tokenizers' NFD reordering, for every code point
  unicodedata gives a nonzero class (classes tokenizers does not know come out 0);
* compositions: unicodedata's two-character canonical decompositions whose composite tokenizers'
  NFC keeps and rebuilds from the pair.

Usage (venv with tokenizers 0.23.2): make_unicode_tables.py > src/prep/unicode_tables.cpp
"""

import sys
import unicodedata

import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

ALL = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
FLAG_L, FLAG_M, FLAG_N, FLAG_SPACE, FLAG_NFC = 1, 2, 4, 8, 16
NFD = normalizers.NFD()
NFC = normalizers.NFC()


def regex_class(pattern):
    """The set of code points the tokenizers (Oniguruma) regex `pattern` matches as one char."""
    text = "".join(map(chr, ALL))
    kept = set()
    for _, (begin, end) in pre_tokenizers.Split(Regex(pattern), "removed").pre_tokenize_str(text):
        kept.update(ALL[begin:end])
    return set(ALL) - kept


def normalize_each(normalizer, strings):
    """Runs the tokenizers normalizer over many strings at once (NUL-separated)."""
    out = []
    for i in range(0, len(strings), 4096):
        part = strings[i:i + 4096]
        result = normalizer.normalize_str("\0".join(part)).split("\0")
        if len(result) != len(part):
            result = [normalizer.normalize_str(s) for s in part]
        out += result
    return out


def probe_ccc(candidates):
    """Canonical combining classes as tokenizers' NFD applies them, found by reordering probes."""
    def known(c, v):  # whether tokenizers applies class v to the (non-decomposing) mark c
        acute, mark = chr(0x0301), chr(c)
        if v < 230:
            return NFD.normalize_str(acute + mark) == mark + acute
        if v > 230:
            return NFD.normalize_str(mark + acute) == acute + mark
        return c == 0x0300

    probes = {}
    for c in range(0x300, 0x10000):
        v = unicodedata.combining(chr(c))
        if (v and v not in probes and unicodedata.normalize("NFD", chr(c)) == chr(c)
                and known(c, v)):
            probes[v] = c
    values = sorted(probes)
    reorders = {c: set() for c in candidates}
    for w in values:
        p = chr(probes[w])
        for c, r in zip(candidates, normalize_each(NFD, [chr(c) + p for c in candidates])):
            if r != NFD.normalize_str(chr(c)) + p:
                reorders[c].add(w)
    after_acute = normalize_each(NFD, [chr(0x0301) + chr(c) for c in candidates])
    result = {}
    for c, r in zip(candidates, after_acute):
        below = reorders[c]
        if below:
            ccc = min(v for v in values if v > max(below))
        else:
            ccc = 1 if not r.startswith(chr(0x0301)) else 0
        if ccc:
            result[c] = ccc
    return result


def main():
    if tokenizers.__version__ != "0.23.2":
        sys.exit("need tokenizers 0.23.2")
    classes = {}
    for flag, pattern, category in [(FLAG_L, r"\p{L}", "L"), (FLAG_M, r"\p{M}", "M"),
                                    (FLAG_N, r"\p{N}", "N"), (FLAG_SPACE, r"\s", None)]:
        got = regex_class(pattern)
        if category:
            python = {c for c in ALL if unicodedata.category(chr(c))[0] == category}
            if not python <= got:
                sys.exit(f"{pattern}: tokenizers misses unicodedata characters")
            print(f"{pattern}: {len(got)} code points ({len(got - python)} beyond Unicode "
                  f"{unicodedata.unidata_version})", file=sys.stderr)
        classes[flag] = got

    decomposed = normalize_each(NFD, [chr(c) for c in ALL])
    composed = normalize_each(NFC, [chr(c) for c in ALL])
    decomp = {}
    for c, d in zip(ALL, decomposed):
        if d != chr(c) and not 0xAC00 <= c <= 0xD7A3:
            decomp[c] = [ord(x) for x in d]
    ccc = probe_ccc([c for c in ALL if unicodedata.combining(chr(c))])
    compose = []
    for c, n in zip(ALL, composed):
        fields = unicodedata.decomposition(chr(c)).split()
        if len(fields) == 2 and not fields[0].startswith("<") and n == chr(c) and c in decomp:
            first, second = int(fields[0], 16), int(fields[1], 16)
            if NFC.normalize_str(chr(first) + chr(second)) != chr(c):
                sys.exit(f"composition of U+{c:04X} not reproduced")
            compose.append((first, second, c))
    compose.sort()
    print(f"{len(decomp)} decompositions, {len(ccc)} nonzero ccc "
          f"({sum(1 for c in ALL if unicodedata.combining(chr(c))) - len(ccc)} unknown to "
          f"tokenizers' NFC), {len(compose)} compositions", file=sys.stderr)

    flags = [0] * 0x110000
    for flag, members in classes.items():
        for c in members:
            flags[c] |= flag
    nfc_sensitive = set(decomp) | set(ccc) | {s for _, s, _ in compose}
    nfc_sensitive |= set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for c in nfc_sensitive:
        flags[c] |= FLAG_NFC

    blocks, stage1 = {}, []
    for hi in range(0x110000 >> 8):
        block = tuple(flags[hi << 8:(hi + 1) << 8])
        stage1.append(blocks.setdefault(block, len(blocks)))
    data = []
    for block, _ in sorted(blocks.items(), key=lambda kv: kv[1]):
        data += block

    def rows(values, per_line=24):
        items = [str(v) for v in values]
        return "\n".join("    " + ", ".join(items[i:i + per_line]) + ","
                         for i in range(0, len(items), per_line))

    decomp_data, decomp_index = [], []
    for c in sorted(decomp):
        decomp_index.append((c, len(decomp_data), len(decomp[c])))
        decomp_data += decomp[c]

    out = []
    out.append("// GENERATED by tools/make_unicode_tables.py from Python unicodedata "
               f"{unicodedata.unidata_version}, settled against tokenizers 0.23.2; do not edit.")
    out.append('#include "prep/unicode_tables.hpp"\n')
    out.append("namespace cua_s1::unicode {\n")
    out.append(f"const uint16_t k_flag_stage1[{len(stage1)}] = {{\n{rows(stage1)}\n}};\n")
    out.append(f"const uint8_t k_flag_stage2[{len(data)}] = {{\n{rows(data, 32)}\n}};\n")
    out.append(f"const ccc_entry k_ccc[{len(ccc)}] = {{\n" +
               rows([f"{{{c}, {v}}}" for c, v in sorted(ccc.items())], 8) + "\n};")
    out.append(f"const size_t k_ccc_size = {len(ccc)};\n")
    out.append(f"const decomposition_entry k_decompositions[{len(decomp_index)}] = {{\n" +
               rows([f"{{{c}, {o}, {n}}}" for c, o, n in decomp_index], 6) + "\n};")
    out.append(f"const size_t k_decompositions_size = {len(decomp_index)};")
    out.append(f"const uint32_t k_decomposition_data[{len(decomp_data)}] = {{\n"
               f"{rows(decomp_data, 12)}\n}};\n")
    out.append(f"const composition_entry k_compositions[{len(compose)}] = {{\n" +
               rows([f"{{{a}, {b}, {c}}}" for a, b, c in compose], 5) + "\n};")
    out.append(f"const size_t k_compositions_size = {len(compose)};\n")
    out.append("}  // namespace cua_s1::unicode")
    print("\n".join(out))


if __name__ == "__main__":
    main()
