# Local stand-in for ghcr.io/ggml-org/llama.cpp:server, for machines that cannot pull it:
# llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) from the project's
# prebuilt wheel, with the upstream image's command-line flags (scripts/compose/llm_entry.py).
# Built by scripts/compose_smoke.sh from the repository root:
#   podman build -f scripts/compose/llm-server.Dockerfile --build-arg LLAMA_VARIANT=avx2 -t localhost/medcite-llm:latest .
# The wheel is read from build/wheels/shared/$LLAMA_VARIANT/ (a mount, not a layer); without it,
# pip builds llama-cpp-python from source with the AMX-free flags (about 10 minutes).
FROM python:3.11-slim-bookworm
ARG LLAMA_VARIANT=avx2
RUN apt-get update && apt-get install -y --no-install-recommends curl libgomp1 && apt-get clean && rm -rf /var/lib/apt/lists/*
RUN --mount=type=secret,id=ca \
    --mount=type=bind,target=/ctx \
    --mount=type=cache,target=/root/.cache \
    set -eu; \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi; \
    python3 -m venv /opt/llm; \
    WHEEL=$(ls /ctx/build/wheels/shared/$LLAMA_VARIANT/llama_cpp_python-0.3.36-*.whl 2>/dev/null | head -n 1); \
    if [ -z "$WHEEL" ]; then \
        apt-get update && apt-get install -y --no-install-recommends build-essential cmake; \
        export FORCE_CMAKE=1 CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF"; \
        WHEEL="llama-cpp-python==0.3.36"; \
    fi; \
    /opt/llm/bin/python -m pip install --quiet "$WHEEL" "uvicorn>=0.22" "fastapi>=0.100" \
        "pydantic-settings>=2.0.1" "sse-starlette>=1.6.1" "starlette-context>=0.3.6,<0.4" "pyyaml>=5.1"; \
    if [ "$WHEEL" = "llama-cpp-python==0.3.36" ]; then \
        apt-get purge -y --auto-remove build-essential cmake && rm -rf /var/lib/apt/lists/*; fi
COPY scripts/compose/llm_entry.py /usr/local/bin/llm-entry
USER 10001
EXPOSE 8080
ENTRYPOINT ["/opt/llm/bin/python", "/usr/local/bin/llm-entry"]
