"""docket inside LangChain, LlamaIndex and Haystack pipelines.

Each framework has its own module and its own optional extra; none is imported until you ask
for it, so `import docket` never pulls a framework in:

    from docket.integrations.langchain import DocketCompressor, DocketPrompt   # docket[langchain]
    from docket.integrations.llamaindex import DocketPostprocessor, docket_query_engine  # docket[llamaindex]
    from docket.integrations.haystack import DocketAssembler, DocketAnswerChecker     # docket[haystack]

The names are also reachable from this package (`from docket.integrations import DocketPrompt`),
imported on first use. A framework that is not installed raises `UnavailableError` naming the
extra to install. What the modules share (how a framework's fields map onto docket's chunk
record, the store adapters, history, the not-found prompt) lives in `mapping`, `lookup` and
`common`, which import no framework. `acting_as(principal, groups=...)` (from `common`) sets
who the integration calls inside a block read as; each class also takes `principal=`.
"""

from __future__ import annotations

import importlib
from typing import Any

from docket.integrations.mapping import DEFAULT_KEYS, FieldMap

#: public name -> the module that defines it (imported on first use)
_LAZY = {
    "DocketCompressor": "langchain",
    "DocketPrompt": "langchain",
    "DocketPromptValue": "langchain",
    "DocketCheck": "langchain",
    "DocketEmbeddings": "langchain",
    "DocketPostprocessor": "llamaindex",
    "DocketSynthesizer": "llamaindex",
    "DocketEmbedding": "llamaindex",
    "docket_query_engine": "llamaindex",
    "DocketAssembler": "haystack",
    "DocketAnswerChecker": "haystack",
    "DocketTextEmbedder": "haystack",
    "DocketDocumentEmbedder": "haystack",
    "acting_as": "common",  # no framework: who the calls inside a block read as
}

__all__ = ["DEFAULT_KEYS", "FieldMap", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'docket.integrations' has no attribute {name!r}")
    return getattr(importlib.import_module(f"docket.integrations.{module}"), name)
