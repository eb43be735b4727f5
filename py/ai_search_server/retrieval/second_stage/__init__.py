"""The second stage: a stronger model re-scores the first stage's candidates.

The first stage (keyword + all-MiniLM-L6-v2, fused) is cheap and finds candidates; a second stage
reads the query and each candidate again with a stronger model and gives a score on its own scale.
The score decides the order among candidates and the confidence band each result is shown in
(``bands.py``): *strong*, *related*, or dropped.

Stages (each a ``SecondStage``):

- ``local``: all-mpnet-base-v2 from its PyPI packages, with every message's vector computed in the
  background after the first-stage index (``local.py``); a message not reached yet has no score;
- ``rerank``: a remote ``POST /rerank`` endpoint (Text Embeddings Inference, vLLM, Jina- and
  Cohere-compatible), through the guarded outbound client (``remote.py``);
- ``embeddings``: a remote OpenAI-compatible ``/embeddings`` model, cosine of query and texts.
"""

from .base import Passage, SecondStage, SecondStageError, StageCoverage

__all__ = ["Passage", "SecondStage", "SecondStageError", "StageCoverage"]
