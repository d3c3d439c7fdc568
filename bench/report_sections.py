"""Markdown sections of the generated benchmark page, one function per section (see bench/report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

Results = dict[str, dict[str, Any]]
GIB = 1024


def _f(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def _latency(row: dict[str, Any]) -> str:
    """The median, p95 and queries/s cells of a latency row."""
    return f"{row['median_ms']:.2f} | {row['p95_ms']:.2f} | {row['qps']:,.0f}"


def _img(title: str, path: Path) -> list[str]:
    return [f"![{title}]({Path(*path.parts[1:]) if path.parts[0] == 'docs' else path})", ""]


def _head(left: int, *columns: str) -> list[str]:
    """A markdown table header; the first ``left`` columns are text, the rest numbers (right-aligned)."""
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" if i < left else "---:" for i in range(len(columns))) + "|",
    ]


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**not met**")


def targets(r: Results) -> list[str]:
    rows = []
    if lex := r.get("lexical_100k"):
        rows += _lexical_targets(lex)
    if hyb := r.get("hybrid_100k"):
        rows.append(_hybrid_target(hyb))
    if den := r.get("dense_100k"):
        rec = den["recall_at_10_vs_exact"]["medcite-hnsw"]
        rows.append(
            (
                "HNSW recall@10 at 100k >= 0.98 of exact",
                f"{rec:.3f} (efSearch {den['hnsw']['ef_search']})",
                rec >= 0.98,
            )
        )
    if big := r.get("hybrid_1M"):
        rows.append(_memory_target(big))
    lines = ["### Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {_verdict(ok)} |" for name, value, ok in rows]
    return [*lines, ""]


Target = tuple[str, str, bool]  # what is asked, what was measured, whether it is met


def _lexical_targets(lex: dict[str, Any]) -> list[Target]:
    """BM25 at 100k: throughput against rank-bm25, and the same top 10."""
    ratios = lex["ratios_vs_medcite"]["rank-bm25"]
    p, alone = lex["latency_paired"], lex["latency_all_queries"]["medcite-bm25s"]
    slowest = max(lex["raw_ms"]["paired"]["medcite-bm25s"])
    throughput = (
        "BM25 at 100k: >= 50x the query throughput of rank-bm25",
        f"{ratios['throughput_ratio']:.0f}x in the interleaved run "
        f"({p['medcite-bm25s']['qps']:,.0f} vs {p['rank-bm25']['qps']:,.1f} queries/s, "
        f"{p['rank-bm25']['n']} paired queries; medcite's "
        f"slowest {slowest:.0f} ms); median latency {ratios['median_ratio']:.0f}x; medcite alone on "
        f"{alone['n']} queries {alone['qps']:,.0f} queries/s = "
        f"{alone['qps'] / p['rank-bm25']['qps']:.0f}x",
        ratios["throughput_ratio"] >= 50,
    )
    agree = lex["agreement"]["medcite-bm25s vs rank-bm25"]
    rob = lex["agreement"]["bm25s-robertson vs rank-bm25"]
    same_top10 = (
        "BM25 at 100k: identical top-10 on > 95% of queries (vs rank-bm25)",
        f"{agree['identical_up_to_ties_share']:.0%} identical up to ties at the cut-off "
        f"({agree['identical_top10_share']:.0%} as plain sets; mean overlap "
        f"{agree['mean_overlap_at_10']:.3f}); lucene vs Okapi idf, bm25s with the Okapi idf: "
        f"{rob['identical_up_to_ties_share']:.0%}",
        agree["identical_up_to_ties_share"] > 0.95,
    )
    return [throughput, same_top10]


def _hybrid_target(hyb: dict[str, Any]) -> Target:
    h, f = hyb["latency"]["hybrid-hnsw"], hyb["latency"]["hybrid-flat"]
    return (
        "Hybrid at 100k incl. query embedding: median < 50 ms (2 cores)",
        f"HNSW {h['median_ms']:.1f} ms (p95 {h['p95_ms']:.1f}); exact flat {f['median_ms']:.1f} ms "
        f"(p95 {f['p95_ms']:.1f}); 1 thread",
        h["median_ms"] < 50,
    )


def _memory_target(big: dict[str, Any]) -> Target:
    s = big["serving_process"]
    return (
        "1M BM25 + HNSW served within 4 GB RSS",
        f"{s['rss_serving_mb'] / GIB:.2f} GiB after {s['latency']['n']} hybrid queries, peak "
        f"{s['peak_rss_mb'] / GIB:.2f} GiB (fresh process, `load_index` + embedder)",
        s["peak_rss_mb"] < 4 * GIB,
    )


def corpora(r: Results, sizes: list[str]) -> list[str]:
    lines = [
        "### Corpora",
        "",
        "10k and 100k are seeded samples of the ~124k real chunks of the built indexes (orphanet-medquad, "
        "default, bioasq-snippets) with their real MiniLM vectors; 1M adds ~876k **synthetic** chunks: each "
        "copies a seeded random real chunk, replaces 20% of its BM25 tokens by draws from the real unigram "
        "distribution and adds gaussian noise (sigma 0.025 per dimension, renormalised; cosine to its origin "
        "~0.89) to its vector (`bench/retrieval/corpus.py`). Each size is written as a medcite index "
        "folder (chunks, bm25s, HNSW, manifest) by `bench/retrieval/materialize.py` in a child process "
        "that samples its RSS per stage.",
        "",
        *_head(
            1,
            "size",
            "real",
            "synthetic",
            "chunks s",
            "bm25s s",
            "HNSW s (M, efC)",
            "peak RSS chunks / bm25s / HNSW",
            "on disk bm25 / HNSW / chunks",
        ),
    ]
    for s in sizes:
        b = r[f"build_{s}"]
        sp, sec, pk, disk = b["spec"], b["seconds"], b["peak_rss_in_stage_mb"], b["bytes_on_disk"]
        lines.append(
            f"| {s} | {sp['real_chunks']:,} | {sp['synthetic_chunks']:,} | {sec['chunks']:.1f} | "
            f"{sec['bm25s']:.1f} | "
            f"{sec['hnsw']:.1f} ({sp['dense']['hnsw_m']}, {sp['dense']['ef_construction']}) | "
            f"{pk['chunks']:,.0f} / {pk['bm25s']:,.0f} / {pk['hnsw']:,.0f} MB | "
            f"{disk['bm25'] / 1e6:,.0f} / {disk['dense'] / 1e6:,.0f} / {disk['chunks.jsonl'] / 1e6:,.0f} MB |"
        )
    lines += [
        "",
        "The BM25 stage indexes tokens made once per real chunk (synthetic ones are perturbed token "
        "lists), so its time excludes tokenizing; the peak of the largest build is the largest of its "
        "stage peaks. "
        "HNSW above 200k chunks uses efConstruction 100 instead of medcite's 200 (build time; see "
        "`bench/retrieval/materialize.py:dense_params`).",
        "",
    ]
    return lines


def lexical(r: Results, sizes: list[str], plot: Path) -> list[str]:
    lines = [
        "### Lexical: medcite (bm25s) vs rank-bm25 vs LangChain BM25Retriever",
        "",
        "Same tokens for all three (`indexes.text`; LangChain through `preprocess_func`), k1 1.2, b 0.75. "
        "Latency: one query at a time, contenders interleaved per query; medcite returns hits with chunks "
        "read from disk, the others their in-memory documents. rank-bm25 and LangChain are timed on a "
        "prefix of the 200 questions (all 200 at 10k, 50 at 100k) and skipped at 1M: their build is "
        "pure Python over every token and each query scores every document in Python (about 10x "
        "their 100k cost, i.e. seconds per query). Build = from texts, tokenizing included; memory = "
        "RSS of a process holding only that index after its queries, minus a bare process (medcite: "
        "loaded from disk, memory-mapped, with its chunk store; in brackets the peak while building it "
        "from texts, which includes the texts and tokens).",
        "",
        *_head(
            2,
            "size",
            "contender",
            "build s (tokenizing)",
            "load s",
            "median ms",
            "p95 ms",
            "queries/s",
            "slower than medcite (median / throughput)",
            "memory MB (peak while building)",
        ),
    ]
    lines += _lexical_contender_rows(r, sizes)
    lines += _lexical_alone(r, sizes)
    lines += [
        "",
        "Bytes touched = the query tokens' score columns (float32 value + int32 row) plus writing and "
        "reading the float32 score array; floor = bytes / copy bandwidth. The gap to the floor is Python "
        "per-query overhead and the full-array top-k. medcite's load is `Bm25sIndex.load` (manifest "
        "checks not included); rank-bm25 and LangChain cannot be saved without pickle, so loading "
        "them means rebuilding.",
        "",
    ]
    if any(r[f"lexical_{s}"].get("agreement") for s in sizes):
        lines += agreement_table(r, sizes)
    lines += [
        *_img("BM25 latency", plot),
    ]
    return lines


def _lexical_contender_rows(r: Results, sizes: list[str]) -> list[str]:
    """A row per size and contender: build, load, latency, slowdown, memory."""
    lines = []
    for s in sizes:
        x = r[f"lexical_{s}"]
        for name, row in x["latency_paired"].items():
            mem = x["memory"].get("bm25s-build" if name == "medcite-bm25s" else name, {})
            load = x["memory"].get("bm25s-load", {}) if name == "medcite-bm25s" else {}
            if mem:
                tok = mem.get("tokenize_s") if name != "langchain-bm25" else None
                build = f"{mem['build_s']:.1f}" + (f" ({tok:.1f})" if tok is not None else " (inside)")
            else:  # synthetic sizes: the corpus build's bm25s stage, from pre-made tokens
                build = f"{r[f'build_{s}']['seconds']['bm25s']:.1f} (none)"
            ratio = x["ratios_vs_medcite"].get(name)
            rt = f"{ratio['median_ratio']:.0f}x / {ratio['throughput_ratio']:.0f}x" if ratio else "1"
            memory = load.get("index_mb") if name == "medcite-bm25s" else mem.get("index_mb")
            peak = f" ({mem['peak_build_or_load_mb'] - mem['rss_after_imports_mb']:,.0f})" if mem else ""
            lines.append(
                f"| {s} | {name} | {build} | {_f(load.get('load_s'), 2) if load else 'rebuild'} | "
                f"{_latency(row)} | {rt} | {_f(memory, 0)}{peak} |"
            )
    return lines


def _lexical_alone(r: Results, sizes: list[str]) -> list[str]:
    """medcite alone on every question, its load times and its floor: a table, a row per size."""
    lines = ["", "medcite alone on all 200 questions, its index memory-mapped, and its physical floor:", ""]
    lines += _head(
        1, "size", "median ms", "p95 ms", "queries/s", "load (mmap / read) ms", "bytes touched", "floor ms"
    )
    for s in sizes:
        x = r[f"lexical_{s}"]
        a, fl, ld = x["latency_all_queries"]["medcite-bm25s"], x["floor"], x["load_seconds_bm25s"]
        lines.append(
            f"| {s} | {_latency(a)} | {1000 * ld['mmap']:.1f} / "
            f"{1000 * ld['read']:.1f} | {fl['median_bytes_per_query'] / 1e6:.2f} MB | "
            f"{fl['median_floor_ms']:.3f} |"
        )
    return lines


def agreement_table(r: Results, sizes: list[str]) -> list[str]:
    lines = [
        'Ranking agreement on the paired queries. "Same up to ties": each side\'s top 10 is also a valid '
        "top 10 under the other side's scores (every member scores at least the other's 10th best), so "
        "documents tied at the cut-off, frequent with the corpus's duplicate passages, may come in any "
        "order; rank-bm25 breaks ties by row, LangChain by reversed row, and medcite returns only "
        "positive scores where rank-bm25 pads with zero-score rows.",
        "",
        *_head(2, "size", "pair", "same top-10 set", "same up to ties", "mean overlap@10"),
    ]
    for s in sizes:
        for pair, a in r[f"lexical_{s}"].get("agreement", {}).items():
            lines.append(
                f"| {s} | {pair} | {a['identical_top10_share']:.0%} | "
                f"{a['identical_up_to_ties_share']:.0%} | {a['mean_overlap_at_10']:.3f} |"
            )
    return [
        *lines,
        "",
        "LangChain is rank-bm25 underneath. medcite uses bm25s's `lucene` idf, "
        "log(1 + (N - n + 0.5) / (n + 0.5)), always positive; rank-bm25's Okapi idf is "
        "log((N - n + 0.5) / (n + 0.5)) with negative values floored at 0.25 x the mean idf, which weighs "
        "common terms differently. The bm25s `robertson` row (Okapi idf, no floor) shows how much of the "
        "difference the idf flavour explains.",
        "",
    ]


def dense(r: Results, sizes: list[str], plot: Path) -> list[str]:
    lines = [
        "### Dense: exact vs HNSW vs IVF-PQ; medcite's DenseIndex vs LangChain's FAISS store",
        "",
        "Same query vectors (the 200 questions embedded once), one at a time, interleaved; each contender "
        "returns chunk ids with documents (medcite from its on-disk chunk store, LangChain from its "
        "in-memory docstore). LangChain's store is built with `FAISS.from_embeddings` on the same vectors "
        "(inner product) and **never saved or loaded**: `FAISS.load_local` unpickles its docstore "
        "(`allow_dangerous_deserialization`), which medcite forbids. Recall@10 is against the exact search.",
        "",
        *_head(
            2, "size", "contender", "build s", "median ms", "p95 ms", "queries/s", "recall@10", "memory MB"
        ),
    ]
    lines += _dense_contender_rows(r, sizes)
    lines += _dense_sweeps(r, sizes)
    lines += [
        "",
        "Floor = vectors compared x 384 x 4 bytes / copy bandwidth (exact: the whole matrix, "
        f"{_f(r[f'dense_{sizes[-1]}']['floor']['exact_bytes_per_query'] / 1e6, 0)} MB per query at "
        f"{sizes[-1]}). "
        "HNSW reads its vectors at random, so its real cost sits further above its floor. IVF-PQ "
        "(1,024 lists, 96 x 8-bit codes, 96 bytes per vector) is measured only at the synthetic size; its "
        "recall is capped by the code size, not by nprobe. At the synthetic size every real chunk has ~7 "
        "noisy copies (cosine ~0.89 to it), so the exact top 10 is a crowd of near-duplicates, harder "
        "for a graph built with efConstruction 100 than real data: read its recall as a lower bound.",
        "",
    ]
    cold = [s for s in sizes if _slower_first(r[f"dense_{s}"]["sweeps"]["hnsw_ef_search"])]
    if cold:
        lines += [
            f"At {', '.join(cold)} the smallest efSearch measured slower than the next: it ran first, on "
            "caches just flushed by the exact scans (`bench/retrieval/dense.py` now warms each setting up "
            "first).",
            "",
        ]
    return [*lines, *_img("dense recall vs latency", plot)]


def _dense_contender_rows(r: Results, sizes: list[str]) -> list[str]:
    """A row per size and contender: build, latency, recall, memory."""
    lines = []
    for s in sizes:
        x = r[f"dense_{s}"]
        for name, row in x["latency"].items():
            rec = x["recall_at_10_vs_exact"].get(name, 1.0)
            lines.append(
                f"| {s} | {name} | {_f(x['build_seconds'].get(name), 2)} | {_latency(row)} | "
                f"{rec:.3f} | {_f(x['memory'][name]['index_mb'], 0)} |"
            )
    return lines


def _dense_sweeps(r: Results, sizes: list[str]) -> list[str]:
    """The efSearch sweep, the exact search and the IVF-PQ nprobe sweep with their floors."""
    lines = ["", "HNSW efSearch sweep (raw search, vector given) and physical floors:", ""]
    lines += [
        *_head(1, "size", "efSearch", "recall@10", "median ms", "distances / query", "floor ms"),
    ]
    for s in sizes:
        x = r[f"dense_{s}"]
        bw = x["floor"]["copy_bandwidth_gbps"] * 1e9
        for p in x["sweeps"]["hnsw_ef_search"]:
            floor = p["distances_per_query"] * 384 * 4 / bw * 1000
            lines.append(
                f"| {s} | {p['efSearch']} | {p['recall_at_10']:.3f} | {p['median_ms']:.3f} | "
                f"{p['distances_per_query']:,} | {floor:.3f} |"
            )
        fl = x["floor"]
        lines.append(
            f"| {s} | exact | 1.000 | {x['exact_search_only']['median_ms']:.3f} | "
            f"{x['chunks']:,} | {fl['exact_floor_ms']:.3f} |"
        )
        for p in x["sweeps"].get("ivfpq_nprobe", []):
            lines.append(
                f"| {s} | IVF-PQ nprobe {p['nprobe']} | {p['recall_at_10']:.3f} | "
                f"{p['median_ms']:.3f} | – | – |"
            )
    return lines


def _slower_first(sweep: list[dict[str, Any]]) -> bool:
    return len(sweep) > 1 and sweep[0]["median_ms"] > sweep[1]["median_ms"]


def hybrid(r: Results, sizes: list[str], plot: Path) -> list[str]:
    lines = [
        "### Hybrid retrieval end to end",
        "",
        '`make_retriever(index, embedder, "hybrid")` on each benchmark folder: query embedding (1 torch '
        "thread), BM25 and dense top-50, RRF, chunks read from disk; with the folder's HNSW index and with "
        "an exact flat index, interleaved. Stages timed separately (interleaved too). The serving "
        "process is a fresh process that loads embedder + index with `load_index` (checksums "
        "verified) and answers the same questions.",
        "",
        *_head(
            1,
            "size",
            "hybrid HNSW median / p95 ms",
            "hybrid flat median / p95 ms",
            "embed",
            "bm25 top-50",
            "HNSW top-50",
            "flat top-50",
            "chunk reads",
            "top-10 overlap HNSW vs flat",
            "serving RSS / peak",
            "load s",
        ),
    ]
    for s in sizes:
        x = r[f"hybrid_{s}"]
        h, f, st, sv = (
            x["latency"]["hybrid-hnsw"],
            x["latency"]["hybrid-flat"],
            x["stages"],
            x["serving_process"],
        )
        med = [st[k]["median_ms"] for k in st]
        lines.append(
            f"| {s} | {h['median_ms']:.1f} / {h['p95_ms']:.1f} | {f['median_ms']:.1f} / {f['p95_ms']:.1f} | "
            + " | ".join(f"{m:.2f}" for m in med)
            + f" | {x['hnsw_vs_flat_top10_overlap']:.3f} | {sv['rss_serving_mb'] / GIB:.2f} / "
            f"{sv['peak_rss_mb'] / GIB:.2f} GiB | {sv['index_load_s_incl_checksums']:.1f} |"
        )
    lines += [
        "",
        "The query embedding is the floor of every hybrid query here (a 6-layer MiniLM forward pass); the "
        "rest is the searches plus per-hit Python (Hit objects, RRF, reading ~100 chunks).",
        "",
        *_img("hybrid stages", plot),
    ]
    return lines


def embedding(e: dict[str, Any]) -> list[str]:
    return [
        "### Embedding throughput (default embedder)",
        "",
        f"{e['sample']}; `embed_cached` with an empty cache, {e['torch_threads']} torch threads, batches of "
        f"{e['batch']['cache_batch']} (model batch {e['batch']['model_batch']}), unsorted and length-sorted "
        f"alternating over {e['batch']['blocks']} blocks. Mean {e['wordpieces']['mean']} wordpieces per text "
        f"(model maximum {e['wordpieces']['max_seq_length']}).",
        "",
        "| order | seconds | chunks/s |",
        "|---|---:|---:|",
        f"| corpus order | {e['seconds']['unsorted']:.1f} | {e['chunks_per_s']['unsorted']:.1f} |",
        f"| sorted by length | {e['seconds']['sorted']:.1f} | {e['chunks_per_s']['sorted']:.1f} |",
        "",
        f"Sorting speeds embedding up {e['speedup_sorted']:.2f}x: a batch pads to its longest text, and "
        "sentence-transformers already sorts the texts inside each 256-text call, so the global sort only "
        "regroups texts across calls. The rate depends on what else runs: the first default index build, "
        "on an idle machine, embedded 53 chunks/s unsorted and 67 sorted (Index builds, below).",
        "",
        *implementations(e.get("implementations")),
    ]


def implementations(i: dict[str, Any] | None) -> list[str]:
    if not i:
        return []
    rows = [f"| {name} | {i['seconds'][name]:.1f} | {rate:.1f} |" for name, rate in i["chunks_per_s"].items()]
    return [
        "The same texts through sentence-transformers and through medcite's plain-torch encoder "
        f"(`indexes/dense/minilm.py`), alternating blocks (load average {i['load_average'][0]} at the end):",
        "",
        "| implementation | seconds | chunks/s |",
        "|---|---:|---:|",
        *rows,
        "",
        f"Largest difference between their vectors: {i['max_abs_difference']:.1e}.",
        "",
    ]


def generation(g: dict[str, Any], hyb: dict[str, Any] | None) -> list[str]:
    unc, cac, new = g["uncached_rerank_run"], g["cached_rerank_run"], g.get("new_measurement")
    lines = ["### Reranking, generation and the full ask", ""]
    if new:
        fl = new["floor"]
        lines += [
            f"New measurement ({new['model']}, llama.cpp, {new['threads']} thread): one real RAG prompt of "
            f"{new['prompt_tokens']} tokens processed at **{new['prompt_tokens_per_s']} tokens/s** "
            f"({new['prompt_s']} s), then {new['output_tokens']} output tokens at "
            f"**{new['output_tokens_per_s']} tokens/s** (prompt prefix reused); model load "
            f"{new['load_s']} s. "
            f"Decoding floor: {new['model_bytes'] / 1e9:.2f} GB of weights streamed per token / "
            f"{fl['copy_bandwidth_gbps']} GB/s = {fl['decode_floor_s_per_token']} s per token "
            f"(ceiling {fl['decode_ceiling_tokens_per_s']} tokens/s).",
            "",
        ]
    lines += [
        "From the measured ten-question runs (`docs/results/ask_10_questions*.json`, default index):",
        "",
        *_head(1, "run", "retrieve s", "rerank s", "generate s", "verify s", "total s"),
    ]
    for label, run in (("rerank uncached (first run)", unc), ("rerank cached", cac)):
        m = run["median_seconds"]
        lines.append(
            f"| {label} | {m['retrieve']:.2f} | {m['rerank']:.2f} | {m['generate']:.1f} | "
            f"{m['verify']:.2f} | {run['median_total_seconds']:.1f} |"
        )
    fit = cac.get("fit_from_generate_stage", {})
    rate = new["prompt_tokens_per_s"] if new else fit.get("prompt_tokens_per_s")
    lines += [
        "",
        f"Reranking costs **{unc.get('rerank_seconds_per_candidate_uncached')} s per candidate** uncached "
        f"(one LLM relevance judgement, ~250 prompt tokens) and {cac.get('rerank_ms_per_candidate_cached')} "
        "ms cached. "
        f"A least-squares fit of the generate stage over the answered questions (seconds = prompt tokens / "
        f"p + output tokens / o) gives p = {fit.get('prompt_tokens_per_s')} and o = "
        f"{fit.get('output_tokens_per_s')} tokens/s. Floor of one answer: {fit.get('median_prompt_tokens')} "
        f"prompt tokens / {rate} tokens/s = "
        f"{(fit.get('median_prompt_tokens') or 0) / (rate or 1):.0f} s before the first output token; "
        "retrieval (tens of ms) is noise next to it.",
        "",
    ]
    return lines
