#!/usr/bin/env python3
"""Generate the tokenizer reference fixtures (tests/reference/fixtures/tokenizer_*.json).

Each fixture holds, for one model file and every entry of tests/reference/tokenizer_corpus.json,
the token ids an independent, published tokenizer implementation produces: once with control
tokens written in the text split out as single tokens ("ids_special", our parse_special=true) and
once with them treated as plain text ("ids_text", parse_special=false). No BOS/EOS is added.
The C++ tests (tests/engine/tokenizer/tokenizer_fixture_test.cpp) must match every entry exactly.

Which reference, and why
------------------------
The first choice was transformers' `AutoTokenizer.from_pretrained(dir, gguf_file=...)`. It is not
used: it needs torch (not installed here), and, reading its GGUF converter
(transformers/integrations/gguf/gguf_tokenizer_mapping.py, v5.x), it would not reproduce either
published tokenizer anyway:
  * SmolLM2: `tokenizer.ggml.pre = "smollm"` is not in its pre-tokenizer table, so it falls back
    to GPT-2's ByteLevel regex alone. The published SmolLM2 tokenizer.json runs
    Digits(individual_digits=True) *before* ByteLevel, so every number would come out differently.
  * Gemma 3: it rebuilds a `tokenizers` BPE whose merges are guessed from the vocabulary order.
    That is an approximation of SentencePiece's score-driven merging, not the original algorithm.

So each reference is built from the GGUF's own vocabulary (read with the `gguf` package), using
the library the model was published with:

  * SmolLM2-135M-Instruct -> HuggingFace `tokenizers`: a BPE model with the file's vocab and
    merges (rank = index), no unk token, no byte fallback, ignore_merges=False, and the published
    pre-tokenizer Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False,
    use_regex=True)], ByteLevel decoder, no normalizer. The file's CONTROL tokens (type 3) are
    added as special tokens (normalized=False), as the published tokenizer.json does; for
    parse_special=false `encode_special_tokens` makes them plain text.

  * Gemma 3 270M -> Google `sentencepiece`: a ModelProto of type BPE with the file's pieces, scores
    and types, byte_fallback=True, normalizer "identity" with add_dummy_prefix=False,
    remove_extra_whitespaces=False, escape_whitespaces=True (Gemma's tokenizer.model adds no dummy
    prefix and keeps whitespace runs; the GGUF says add_space_prefix=false). Two things undo
    conversions llama.cpp's converter made:
      - the USER_DEFINED whitespace tokens ("  ", "   ", ...) are stored in the GGUF with real
        spaces; SentencePiece matches user-defined pieces after turning " " into "\u2581", so
        they are spelled back with "\u2581";
      - `<unk>` (id = tokenizer.ggml.unknown_token_id) is typed CONTROL in the GGUF;
        SentencePiece requires it to be UNKNOWN.
    SentencePiece never matches CONTROL pieces in text, which is exactly parse_special=false. For
    parse_special=true the text is first cut at CONTROL token texts (leftmost, longest first — what
    HuggingFace `tokenizers` does for added special tokens), and each piece between them is encoded
    by SentencePiece. USER_DEFINED pieces (newline/space/tab runs, a few HTML tags) are matched by
    SentencePiece itself in both modes.

    Token types are the GGUF's, because they are all our engine sees. They differ from Google's
    tokenizer.model: there only <pad>/<eos>/<bos> are CONTROL and <start_of_turn>, <end_of_turn>,
    <mask> and the <unusedN> tokens are USER_DEFINED (always matched, even in user text), while
    llama.cpp's converter typed all of those CONTROL (and <unk> CONTROL). So "ids_text" spells
    <start_of_turn> as text where the original SentencePiece model would not, and "ids_special"
    matches <bos>/<eos>/<pad> as single tokens, as HuggingFace's tokenizer.json and llama.cpp do
    but the bare tokenizer.model does not. Everything between special tokens — normalisation,
    user-defined pieces, score-ordered merges, byte fallback — is SentencePiece's own algorithm.

The script also checks that each reference decodes every entry back to its text (with special
tokens rendered) and records the script, library, version and the model's sha256 in each fixture.

Usage: python3 tests/reference/make_tokenizer_fixtures.py [--models-dir DIR] [--out-dir DIR]
                                                          [--corpus FILE]
"""

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import gguf
import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPT = "tests/reference/make_tokenizer_fixtures.py"

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"

# tokenizer.ggml.token_type values (the same numbers as SentencePiece's piece types)
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_UNUSED, TYPE_BYTE = range(1, 7)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class GgufTokenizerData:
    """The tokenizer.* metadata of a GGUF file, as plain Python values."""

    def __init__(self, path: Path):
        reader = gguf.GGUFReader(str(path))
        self.fields = reader.fields
        self.tokens = self._strings("tokenizer.ggml.tokens")
        self.types = self._ints("tokenizer.ggml.token_type")
        self.scores = self._floats("tokenizer.ggml.scores")
        self.merges = self._strings("tokenizer.ggml.merges")
        self.model = self._scalar_string("tokenizer.ggml.model")
        self.pre = self._scalar_string("tokenizer.ggml.pre")

    def _field(self, key):
        return self.fields.get(key)

    def _strings(self, key):
        f = self._field(key)
        if f is None:
            return None
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def _ints(self, key):
        f = self._field(key)
        if f is None:
            return None
        return [int(f.parts[i][0]) for i in f.data]

    def _floats(self, key):
        f = self._field(key)
        if f is None:
            return None
        return [float(np.float32(f.parts[i][0])) for i in f.data]

    def _scalar_string(self, key):
        f = self._field(key)
        return None if f is None else bytes(f.parts[f.data[0]]).decode("utf-8")

    def scalar(self, key):
        f = self._field(key)
        if f is None:
            return None
        v = f.parts[f.data[0]].tolist()
        return v[0] if isinstance(v, list) else v

    def vocab_facts(self):
        keys = {
            "model": "tokenizer.ggml.model",
            "pre": "tokenizer.ggml.pre",
            "bos": "tokenizer.ggml.bos_token_id",
            "eos": "tokenizer.ggml.eos_token_id",
            "unk": "tokenizer.ggml.unknown_token_id",
            "pad": "tokenizer.ggml.padding_token_id",
            "add_bos": "tokenizer.ggml.add_bos_token",
            "add_eos": "tokenizer.ggml.add_eos_token",
            "add_space_prefix": "tokenizer.ggml.add_space_prefix",
        }
        facts = {"n_tokens": len(self.tokens), "n_merges": len(self.merges or [])}
        for name, key in keys.items():
            if key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
                facts[name] = self._scalar_string(key)
            else:
                v = self.scalar(key)
                facts[name] = bool(v) if name.startswith("add_") and v is not None else v
        return facts


# --------------------------------------------------------------------------------------------
# SmolLM2: HuggingFace tokenizers, published SmolLM2 pipeline


def build_smollm2_reference(data: GgufTokenizerData):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    assert data.model == "gpt2", data.model
    vocab = {tok: i for i, tok in enumerate(data.tokens)}
    merges = []
    for m in data.merges:
        cut = m.index(" ", 1)
        merges.append((m[:cut], m[cut + 1:]))
    bpe = models.BPE(vocab=vocab, merges=merges, unk_token=None, byte_fallback=False,
                     ignore_merges=False, fuse_unk=False, dropout=None)
    tk = Tokenizer(bpe)
    tk.normalizer = None
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tk.decoder = decoders.ByteLevel()
    control = [AddedToken(t, special=True, normalized=False, lstrip=False, rstrip=False,
                          single_word=False)
               for t, ty in zip(data.tokens, data.types) if ty == TYPE_CONTROL]
    tk.add_special_tokens(control)
    for t in control:  # added tokens must keep their GGUF ids
        assert tk.token_to_id(t.content) == vocab[t.content]

    def encode(text: str, parse_special: bool):
        tk.encode_special_tokens = not parse_special
        return tk.encode(text, add_special_tokens=False).ids

    def decode(ids):
        return tk.decode(ids, skip_special_tokens=False)

    import tokenizers
    info = {"library": "tokenizers", "version": tokenizers.__version__,
            "pipeline": "BPE(vocab+merges from GGUF) with Sequence[Digits(individual_digits=True), "
                        "ByteLevel(add_prefix_space=False, use_regex=True)]; CONTROL tokens added "
                        "as special tokens"}
    return encode, decode, info


# --------------------------------------------------------------------------------------------
# Gemma 3: SentencePiece BPE model rebuilt from the GGUF


def build_gemma3_reference(data: GgufTokenizerData):
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as sp_pb2

    assert data.model == "llama", data.model
    unk_id = data.scalar("tokenizer.ggml.unknown_token_id")
    proto = sp_pb2.ModelProto()
    ts = proto.trainer_spec
    ts.model_type = sp_pb2.TrainerSpec.BPE
    ts.vocab_size = len(data.tokens)
    ts.byte_fallback = True
    ts.unk_id = unk_id
    ts.bos_id = data.scalar("tokenizer.ggml.bos_token_id")
    ts.eos_id = data.scalar("tokenizer.ggml.eos_token_id")
    ts.pad_id = data.scalar("tokenizer.ggml.padding_token_id")
    ts.unk_piece = data.tokens[ts.unk_id]
    ts.bos_piece = data.tokens[ts.bos_id]
    ts.eos_piece = data.tokens[ts.eos_id]
    ts.pad_piece = data.tokens[ts.pad_id]
    ns = proto.normalizer_spec
    ns.name = "identity"
    ns.add_dummy_prefix = False
    ns.remove_extra_whitespaces = False
    ns.escape_whitespaces = True
    for i, (tok, ty, score) in enumerate(zip(data.tokens, data.types, data.scores)):
        p = proto.pieces.add()
        if ty == TYPE_USER_DEFINED and tok.strip(" ") == "" and tok:
            tok = tok.replace(" ", "\u2581")  # undo the converter's "\u2581" -> " " respelling
        p.piece = tok
        p.score = score
        p.type = TYPE_UNKNOWN if i == unk_id else ty
    sp = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())

    control = sorted((t for t, ty in zip(data.tokens, data.types) if ty == TYPE_CONTROL),
                     key=len, reverse=True)
    control_re = re.compile("|".join(re.escape(t) for t in control))
    control_id = {t: i for i, (t, ty) in enumerate(zip(data.tokens, data.types))
                  if ty == TYPE_CONTROL}

    def encode(text: str, parse_special: bool):
        if not parse_special:
            return sp.encode(text)
        ids, pos = [], 0
        for m in control_re.finditer(text):
            ids += sp.encode(text[pos:m.start()])
            ids.append(control_id[m.group(0)])
            pos = m.end()
        return ids + sp.encode(text[pos:])

    def decode(ids):
        # SentencePiece's decoder drops control pieces; render them as text like our
        # render_special=true, decoding the runs between them with SentencePiece.
        out, run = [], []
        for i in ids:
            if data.types[i] == TYPE_CONTROL:
                out.append(sp.decode(run))
                out.append(data.tokens[i])
                run = []
            else:
                run.append(i)
        out.append(sp.decode(run))
        return "".join(out)

    info = {"library": "sentencepiece", "version": spm.__version__,
            "pipeline": "ModelProto(model_type=BPE, pieces/scores/types from GGUF, byte_fallback, "
                        "identity normalizer, no dummy prefix, whitespace kept); text cut at "
                        "CONTROL tokens first when parse_special"}
    return encode, decode, info


# --------------------------------------------------------------------------------------------


def make_fixture(model_path: Path, builder, corpus):
    data = GgufTokenizerData(model_path)
    encode, decode, info = builder(data)
    entries = []
    for e in corpus:
        text = e["text"]
        ids_special = encode(text, True)
        ids_text = encode(text, False)
        for ids in (ids_special, ids_text):
            back = decode(ids)
            if back != text:
                sys.exit(f"{model_path.name}: reference does not round-trip entry {e['name']!r}: "
                         f"{back!r} != {text!r}")
        entries.append({"name": e["name"], "text": text, "ids_special": ids_special,
                        "ids_text": ids_text})
    return {
        "about": "Token ids from an independent reference tokenizer; regenerate with the script.",
        "generator": SCRIPT,
        "reference": info,
        "model_file": model_path.name,
        "model_sha256": sha256_of(model_path),
        "vocab": data.vocab_facts(),
        "entries": entries,
    }


def write_compact(path: Path, fixture):
    """JSON with one entry per line: small, diff-friendly, readable."""
    entries = fixture.pop("entries")
    head = json.dumps(fixture, ensure_ascii=False, indent=1)
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in entries]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head[:-2] + ',\n "entries": [\n' + ",\n".join(lines) + "\n ]\n}\n")
    fixture["entries"] = entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", type=Path, default=REPO / "models")
    ap.add_argument("--out-dir", type=Path, default=HERE / "fixtures")
    ap.add_argument("--corpus", type=Path, default=HERE / "tokenizer_corpus.json",
                    help="another corpus (same format), e.g. for a local stress comparison")
    args = ap.parse_args()

    corpus = json.loads(args.corpus.read_text(encoding="utf-8"))["entries"]
    jobs = [(SMOLLM2_FILE, build_smollm2_reference, "tokenizer_smollm2.json"),
            (GEMMA3_FILE, build_gemma3_reference, "tokenizer_gemma3.json")]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for model_file, builder, out_name in jobs:
        fixture = make_fixture(args.models_dir / model_file, builder, corpus)
        out = args.out_dir / out_name
        write_compact(out, fixture)
        json.loads(out.read_text(encoding="utf-8"))  # must parse back
        n_tokens = sum(len(e["ids_special"]) + len(e["ids_text"]) for e in fixture["entries"])
        print(f"wrote {out} ({out.stat().st_size} bytes, {len(fixture['entries'])} entries, "
              f"{n_tokens} ids)")


if __name__ == "__main__":
    main()
