"""The retriever -> reranker -> generator chain: a question in, a cited answer out."""
