"""The knowledge layer: chunking, ingestion, BM25 (jieba), dense vectors (Chroma), fusion, rerank.

A plain library: nothing here imports langgraph or the graph/nodes packages.
"""
