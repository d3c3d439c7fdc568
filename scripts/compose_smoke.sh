#!/usr/bin/env bash
# Smoke run of docker-compose.yml, as a user would meet it (docs/deployment.md):
#   1. a container engine: docker (daemon + compose plugin) if it answers, else podman from the
#      distribution's packages (installed here when missing; runc, explicit ulimits) with Debian's
#      docker-compose talking to `podman system service`;
#   2. images: medcite:latest from ./Dockerfile; the LLM server image pulled, or, when it cannot be
#      pulled, a local stand-in (scripts/compose/llm-server.Dockerfile); the python base image
#      pulled, or made from a debootstrap rootfs of the Debian mirror apt uses. The machine's CA
#      bundle goes to the builds as a secret (never into a layer) when one is configured;
#   3. `up -d`, wait until the API is healthy, ask a clinical question through the API with a key
#      (the openai client; outcome and citations checked), ask /v1/retrieve, kill -9 the API's
#      process, wait for the restart and ask again (same answer), then `down -v`.
# Idempotent: what is installed or built is reused. Timings go to build/compose-smoke/timings.txt.
#
# Settings (environment): SMOKE_KEEP=1 leaves the services up; SMOKE_SKIP_BUILD=1 reuses images;
# SMOKE_PROFILE=ray also runs the Ray profile check (head + 2 workers, a 2-shard build);
# MEDCITE_BUILD_CA=PATH|none (default: $SSL_CERT_FILE, $PIP_CERT or $REQUESTS_CA_BUNDLE if a file);
# LLM_THREADS (default 1); COMPOSE_PROJECT_NAME (default medcite-smoke).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-medcite-smoke}
WORK="$ROOT/build/compose-smoke"
mkdir -p "$WORK"
TIMINGS="$WORK/timings.txt"
: >"$TIMINGS"
START=$SECONDS
log() { echo "[smoke $((SECONDS - START))s] $*"; }
fail() { echo "[smoke $((SECONDS - START))s] FAILED: $*" >&2; exit 1; }
timing() { echo "$1=$2" >>"$TIMINGS"; log "timing $1: $2"; }
PYTHON_IMAGE=docker.io/library/python:3.11-slim-bookworm
UPSTREAM_LLM_IMAGE=ghcr.io/ggml-org/llama.cpp:server
STANDIN_LLM_IMAGE=localhost/medcite-llm:latest
QUESTION=${SMOKE_QUESTION:-"What are the symptoms of Marfan syndrome?"}
KEY=${MEDCITE_API_KEYS:-smoke-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}
export MEDCITE_API_KEYS=$KEY
# 1 thread: under CPU contention 2-thread llama.cpp generation collapses (../shared/wheels/README.md)
export LLM_THREADS=${LLM_THREADS:-1}

# ---------------------------------------------------------------- 1. the engine
PIDS=()
cleanup() {
    local rc=$?
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM INT

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
    ENGINE=docker
    COMPOSE=(docker compose)
    export DOCKER_BUILDKIT=1
else
    ENGINE=podman
    need=()
    for tool in podman buildah runc debootstrap docker-compose; do
        command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
    done
    if [ ${#need[@]} -gt 0 ]; then
        [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
            || fail "no working docker, and ${need[*]} missing; install podman buildah runc debootstrap docker-compose"
        log "installing podman and docker-compose from the distribution (${need[*]} missing)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q podman buildah runc debootstrap docker-compose fuse-overlayfs slirp4netns uidmap >/dev/null \
            || { apt-get update -q >/dev/null && apt-get install -y -q podman buildah runc debootstrap \
                 docker-compose fuse-overlayfs slirp4netns uidmap >/dev/null; }
    fi
    # crun refuses hybrid cgroup layouts; default ulimits above the hard limits make every start fail.
    CONF=/etc/containers/containers.conf.d/50-medcite.conf
    if [ "$(id -u)" = 0 ] && [ ! -f "$CONF" ]; then
        hard_nofile=$(ulimit -Hn); hard_nproc=$(ulimit -Hu)
        nofile=$([ "$hard_nofile" = unlimited ] && echo 65536 || echo $((hard_nofile < 65536 ? hard_nofile : 65536)))
        nproc=$([ "$hard_nproc" = unlimited ] && echo 32768 || echo $((hard_nproc < 32768 ? hard_nproc : 32768)))
        mkdir -p "$(dirname "$CONF")"
        printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n[engine]\nruntime = "runc"\n' \
            "$nofile" "$nofile" "$nproc" "$nproc" >"$CONF"
        log "wrote $CONF (runtime runc, nofile $nofile, nproc $nproc)"
    fi
    [ "$(podman info --format '{{.Host.OCIRuntime.Name}}')" = runc ] || log "warning: podman's runtime is not runc"
    # docker-compose speaks the Docker API: podman serves it on a socket of our own
    SOCK=/run/medcite-podman.sock
    if ! curl -fsS --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; then
        rm -f "$SOCK"
        podman system service --time=0 "unix://$SOCK" >"$WORK/podman-service.log" 2>&1 &
        PIDS+=($!)
        for _ in $(seq 50); do curl -fsS --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1 && break; sleep 0.2; done
    fi
    export DOCKER_HOST="unix://$SOCK"
    COMPOSE=(docker-compose)
fi
log "engine $ENGINE, compose ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short 2>/dev/null || echo '?'))"

CA=${MEDCITE_BUILD_CA:-}
if [ -z "$CA" ]; then
    for f in "${SSL_CERT_FILE:-}" "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}"; do
        [ -n "$f" ] && [ -f "$f" ] && { CA=$f; break; }
    done
fi
SECRET=()
if [ -n "$CA" ] && [ "$CA" != none ]; then SECRET=(--secret "id=ca,src=$CA"); log "CA bundle $CA passed to builds as secret 'ca'"; fi

image_exists() { $ENGINE image inspect "$1" >/dev/null 2>&1; }
try_pull() { timeout 45 $ENGINE pull -q "$1" >/dev/null 2>&1; }
build() {  # build ARGS...: podman keeps HEALTHCHECK only in the docker format
    if [ "$ENGINE" = podman ]; then podman build --format docker "${SECRET[@]}" "$@"; else docker build "${SECRET[@]}" "$@"; fi
}

# ---------------------------------------------------------------- 2. images
if [ "${SMOKE_SKIP_BUILD:-0}" != 1 ]; then
    if ! image_exists "$PYTHON_IMAGE" && ! try_pull "$PYTHON_IMAGE"; then
        [ "$ENGINE" = podman ] || fail "cannot pull $PYTHON_IMAGE"
        t0=$SECONDS
        MIRROR=$(grep -rhoE '^(deb|URIs:) +http[^ ]*debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
                 | grep -oE 'http[^ ]*' | head -n 1 || true)
        MIRROR=${MIRROR:-http://deb.debian.org/debian}
        log "$PYTHON_IMAGE cannot be pulled: making it from a debootstrap rootfs of $MIRROR (a few minutes)"
        rootfs="$WORK/rootfs"
        rm -rf "$rootfs"
        debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates \
            bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || { tail -5 "$WORK/debootstrap.log"; fail debootstrap; }
        rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
        tar -C "$rootfs" -c . | podman import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$PYTHON_IMAGE" >/dev/null
        rm -rf "$rootfs"
        timing base_image_s $((SECONDS - t0))
    fi

    # Local wheels the Dockerfile mounts (never copies): the CPU torch and the llama-cpp-python builds.
    mkdir -p build/wheels
    for dir in ${PIP_FIND_LINKS:-}; do
        find "$dir" -maxdepth 1 -name 'torch-2.13.0+cpu-cp311-*.whl' -exec cp -u {} build/wheels/ \; 2>/dev/null || true
    done
    if [ -d "$ROOT/../shared/wheels" ]; then
        mkdir -p build/wheels/shared
        cp -ru "$ROOT/../shared/wheels/." build/wheels/shared/
    fi
    VARIANT=avx512
    for flag in avx512f avx512bw avx512vl avx512_vnni avx512_vbmi avx512_bf16; do
        grep -qw "$flag" /proc/cpuinfo || { VARIANT=avx2; break; }
    done

    t0=$SECONDS
    log "building medcite:latest ($(ls build/wheels | tr '\n' ' '))"
    build -t medcite:latest . >"$WORK/build-medcite.log" 2>&1 || { tail -30 "$WORK/build-medcite.log"; fail "image build"; }
    timing build_medcite_s $((SECONDS - t0))

    if image_exists "$UPSTREAM_LLM_IMAGE" || try_pull "$UPSTREAM_LLM_IMAGE"; then
        export MEDCITE_LLM_IMAGE=$UPSTREAM_LLM_IMAGE
    else
        t0=$SECONDS
        log "$UPSTREAM_LLM_IMAGE cannot be pulled: building the stand-in $STANDIN_LLM_IMAGE ($VARIANT wheel)"
        build -f scripts/compose/llm-server.Dockerfile --build-arg "LLAMA_VARIANT=$VARIANT" -t "$STANDIN_LLM_IMAGE" . \
            >"$WORK/build-llm.log" 2>&1 || { tail -30 "$WORK/build-llm.log"; fail "LLM image build"; }
        timing build_llm_s $((SECONDS - t0))
        export MEDCITE_LLM_IMAGE=$STANDIN_LLM_IMAGE
    fi
else
    image_exists "$UPSTREAM_LLM_IMAGE" && export MEDCITE_LLM_IMAGE=$UPSTREAM_LLM_IMAGE || export MEDCITE_LLM_IMAGE=$STANDIN_LLM_IMAGE
fi
for image in medcite:latest "$MEDCITE_LLM_IMAGE"; do
    timing "image_size_$(basename "${image%%:*}")_mb" $(( $($ENGINE image inspect --format '{{.Size}}' "$image") / 1000000 ))
done

# ---------------------------------------------------------------- 3. up, ask, kill, ask, down
# Without systemd podman runs no healthcheck by itself, and compose's service_healthy would wait
# forever: run the project's healthchecks every 5 s (docker runs its own).
if [ "$ENGINE" = podman ]; then
    (
        while sleep 5; do
            for id in $(podman ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME"); do
                podman healthcheck run "$id" >/dev/null 2>&1 || true
            done
        done
    ) &
    PIDS+=($!)
fi

"${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true  # a clean state: no containers, no volumes
t0=$SECONDS
log "compose up -d (indexer builds the default index, then llm and api start)"
"${COMPOSE[@]}" up -d --no-build >"$WORK/up.log" 2>&1 || { tail -30 "$WORK/up.log"; "${COMPOSE[@]}" logs --tail 40 >&2 || true; fail "compose up"; }
timing up_returned_s $((SECONDS - t0))

api_id() { $ENGINE ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
    --filter "label=com.docker.compose.service=api" | head -n 1; }
health() { $ENGINE inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$1" 2>/dev/null; }
wait_healthy() {  # wait_healthy SECONDS
    local deadline=$((SECONDS + $1)) id
    while [ $SECONDS -lt $deadline ]; do
        id=$(api_id)
        [ -n "$id" ] && [ "$(health "$id")" = healthy ] && return 0
        sleep 3
    done
    return 1
}
wait_healthy 2400 || { "${COMPOSE[@]}" ps; "${COMPOSE[@]}" logs --tail 40 >&2; fail "api not healthy within 40 minutes"; }
timing up_to_healthy_s $((SECONDS - t0))

PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY=python3
ask() {  # ask OUT.json: the question through the OpenAI client, then /v1/retrieve; checks both
    MEDCITE_URL=http://127.0.0.1:8000/v1 SMOKE_QUESTION="$QUESTION" "$PY" - "$1" <<'PY'
import json, os, sys, time
import httpx
from openai import OpenAI

url, key, question = os.environ["MEDCITE_URL"], os.environ["MEDCITE_API_KEYS"].split(",")[0], os.environ["SMOKE_QUESTION"]
client = OpenAI(base_url=url, api_key=key, timeout=600, max_retries=0)
t = time.monotonic()
model = client.models.list().data[0].id
reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}])
took = time.monotonic() - t
body = reply.model_dump()
outcome, citations = body["medcite"]["outcome"], body.get("citations") or []
text = body["choices"][0]["message"]["content"]
print(f"answer ({took:.1f}s, outcome {outcome}, {len(citations)} citations): {text[:300]!r}")
for c in citations[:5]:
    print(f"  cited: {json.dumps({k: c.get(k) for k in ('marker', 'title', 'source', 'url')})[:200]}")
if outcome != "answer" or not citations:
    sys.exit(f"expected outcome 'answer' with citations, got {outcome!r} with {len(citations)}")
r = httpx.post(url + "/retrieve", json={"query": question, "k": 5}, headers={"Authorization": f"Bearer {key}"}, timeout=120)
r.raise_for_status()
hits = r.json()["data"]
print(f"retrieve: {len(hits)} hits; top: {hits[0]['title']!r} ({hits[0]['source']})")
if not hits:
    sys.exit("retrieve returned no hits")
unauth = httpx.post(url + "/retrieve", json={"query": question}, timeout=30).status_code
if unauth != 401:
    sys.exit(f"retrieve without a key answered {unauth}, expected 401")
json.dump({"text": text, "outcome": outcome, "citations": [c.get("chunk_id") for c in citations],
           "hits": [h["chunk_id"] for h in hits], "seconds": took}, open(sys.argv[1], "w"))
PY
}
log "asking through the API: $QUESTION"
ask "$WORK/first.json" || fail "first question"
timing up_to_first_answer_s $((SECONDS - t0))
timing first_answer_s "$("$PY" -c "import json,sys; print(round(json.load(open(sys.argv[1]))['seconds'], 1))" "$WORK/first.json")"

id=$(api_id)
pid=$($ENGINE inspect --format '{{.State.Pid}}' "$id")
log "kill -9 of the API's process (container $id, pid $pid)"
t1=$SECONDS
kill -9 "$pid"
sleep 2
wait_healthy 300 || { "${COMPOSE[@]}" ps; "${COMPOSE[@]}" logs --tail 40 api >&2; fail "api not back within 5 minutes"; }
timing restart_to_healthy_s $((SECONDS - t1))
log "restarted ($($ENGINE inspect --format '{{.RestartCount}} restart(s)' "$(api_id)")); asking again"
ask "$WORK/second.json" || fail "question after the restart"
"$PY" - "$WORK/first.json" "$WORK/second.json" <<'PY' || fail "the restarted API answered differently"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
same = {k: a[k] == b[k] for k in ("text", "outcome", "citations", "hits")}
print("same after restart: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
sys.exit(0 if all(same.values()) else 1)
PY

# ---------------------------------------------------------------- 4. the Ray profile (SMOKE_PROFILE=ray)
if [ "${SMOKE_PROFILE:-}" = ray ]; then
    export RAY_AUTH_TOKEN=${RAY_AUTH_TOKEN:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}
    t1=$SECONDS
    log "Ray profile: a head and 2 workers (docker-compose v1 ignores deploy.replicas: --scale)"
    "${COMPOSE[@]}" --profile ray up -d --no-build --scale ray-worker=2 ray-head ray-worker >"$WORK/up-ray.log" 2>&1 \
        || { tail -20 "$WORK/up-ray.log"; fail "ray profile up"; }
    nodes=0
    for _ in $(seq 60); do
        nodes=$("${COMPOSE[@]}" exec -T ray-head python -c "import ray; ray.init(address='auto', logging_level='ERROR'); print(sum(n['Alive'] for n in ray.nodes()))" 2>/dev/null | tail -n 1 || true)
        [ "$nodes" = 3 ] && break
        sleep 5
    done
    [ "$nodes" = 3 ] || fail "the Ray cluster has ${nodes:-no} live nodes, expected 3"
    timing ray_cluster_up_s $((SECONDS - t1))
    t1=$SECONDS
    log "index build --engine ray --workers 2 --shards 2 on the head (the API's index, rebuilt sharded)"
    "${COMPOSE[@]}" exec -T ray-head medcite index build --engine ray --workers 2 --shards 2 --quiet \
        >"$WORK/ray-build.log" 2>&1 || { tail -20 "$WORK/ray-build.log"; fail "ray index build"; }
    timing ray_index_build_s $((SECONDS - t1))
    shards=$("${COMPOSE[@]}" exec -T api python -c "import json; m = json.load(open('/data/indexes/default/manifest.json')); print((m.get('shards') or {}).get('count', 1))" | tail -n 1)
    log "the default index now has ${shards} shard(s); restarting the API on it"
    "${COMPOSE[@]}" restart api >/dev/null 2>&1
    sleep 2
    wait_healthy 300 || fail "api not healthy on the sharded index"
    ask "$WORK/ray.json" || fail "question on the sharded index"
    "$PY" - "$WORK/first.json" "$WORK/ray.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print("sharded vs unsharded: " + ", ".join(f"{k} {'same' if a[k] == b[k] else 'different'}" for k in ("text", "citations", "hits")))
PY
    "${COMPOSE[@]}" --profile ray stop ray-worker ray-head >/dev/null 2>&1 || true
fi

if [ "${SMOKE_KEEP:-0}" = 1 ]; then
    log "SMOKE_KEEP=1: services left up (${COMPOSE[*]} down -v to remove them)"
else
    "${COMPOSE[@]}" --profile ray down -v >/dev/null 2>&1 || fail "compose down -v"
    log "down -v: containers and volumes removed"
fi
log "PASSED ($ENGINE; timings in ${TIMINGS#"$ROOT/"}: $(tr '\n' ' ' <"$TIMINGS"))"
