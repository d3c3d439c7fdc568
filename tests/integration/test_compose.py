"""docker-compose.yml stays consistent with the code: it validates, and every setting it passes
is one the server reads."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from api.settings import ApiSettings

ROOT = Path(__file__).resolve().parents[2]
PATH_VARIABLES = {"MEDCITE_DATA_DIR", "MEDCITE_MODEL_DIR", "MEDCITE_SOURCE_DATA"}  # core.paths.Paths


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def default_services() -> dict:
    """The services `docker compose up` starts (those without a profile)."""
    return {name: s for name, s in compose()["services"].items() if not s.get("profiles")}


def test_api_service_uses_only_settings_the_server_reads_and_checks_ready():
    services = default_services()
    assert set(services) == {"indexer", "llm", "api"}
    api = services["api"]
    names = {f"MEDCITE_{field.upper()}" for field in ApiSettings.model_fields} | PATH_VARIABLES
    passed = {k for k in api["environment"] if k.startswith("MEDCITE_")}
    assert passed <= names, passed - names
    assert "/ready" in " ".join(api["healthcheck"]["test"])
    assert api["depends_on"]["llm"]["condition"] == "service_healthy"
    assert "medcite-data:/data" in api["volumes"] and any(
        v.startswith("medcite-models:") for v in api["volumes"]
    )
    assert api["environment"]["MEDCITE_GENERATOR_URL"].startswith("http://llm:")


def test_llm_service_serves_the_file_models_fetch_assembles():
    from rag.generate.models import DEFAULT_GENERATOR

    assert f"/models/{DEFAULT_GENERATOR.filename}" in compose()["services"]["llm"]["command"]


def test_ray_profile_runs_head_and_workers_of_the_medcite_image_on_shared_storage():
    services = compose()["services"]
    ray = {name: s for name, s in services.items() if "ray" in s.get("profiles", [])}
    assert set(ray) == {"ray-head", "ray-worker"}
    head, worker = ray["ray-head"]["command"][-1], ray["ray-worker"]["command"][-1]
    assert "ray start --head --port=6379 --num-cpus=0" in head and "--block" in head
    assert "ray start --address=ray-head:6379" in worker and "--block" in worker
    for s in ray.values():
        assert s["image"] == services["api"]["image"]  # the same medcite version on every node
        assert "medcite-data:/data" in s["volumes"]  # shards are written where every node reads them
        assert s["environment"]["RAY_AUTH_MODE"] == "token" and "RAY_AUTH_TOKEN" in s["command"][-1]


def test_dockerfile_installs_the_project_and_fetches_the_models():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "scripts/setup.sh" in dockerfile and "medcite models fetch" in dockerfile
    assert "/ready" in dockerfile and "USER medcite" in dockerfile


def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_docker_compose_config_validates():
    command = _compose_command()
    if command is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed (.ci/run installs it)")
    env = {**os.environ, "MEDCITE_API_KEYS": "compose-check-key-0123456789"}
    result = subprocess.run(
        [*command, "config", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    with_ray = subprocess.run(
        [*command, "--profile", "ray", "config", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert with_ray.returncode == 0, with_ray.stderr
    env.pop("MEDCITE_API_KEYS")
    refused = subprocess.run(
        [*command, "config", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "MEDCITE_API_KEYS" in refused.stderr


def test_llm_stand_in_takes_every_flag_the_compose_file_passes(monkeypatch):
    """The local stand-in for the llama.cpp server image (scripts/compose/llm_entry.py) runs the same
    compose command: each upstream flag maps to a llama_cpp.server setting."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("llm_entry", ROOT / "scripts/compose/llm_entry.py")
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    seen: list[str] = []
    monkeypatch.setattr(entry.os, "execv", lambda _exe, argv: seen.extend(argv))
    command = [a.replace("${LLM_THREADS:-2}", "2") for a in compose()["services"]["llm"]["command"]]
    entry.main(command)
    assert seen[1:3] == ["-m", "llama_cpp.server"]
    flags = {a for a in seen[3:] if a.startswith("--")}
    assert flags == {
        "--model",
        "--host",
        "--port",
        "--n_ctx",
        "--n_threads",
        "--n_threads_batch",
        "--interrupt_requests",
    }
    assert seen[seen.index("--interrupt_requests") + 1] == "False"  # else /v1/models cuts answers
    assert "/v1/models" in " ".join(compose()["services"]["llm"]["healthcheck"]["test"])  # both servers


def test_smoke_script_parses():
    result = subprocess.run(
        ["bash", "-n", str(ROOT / "scripts/compose_smoke.sh")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("MEDCITE_COMPOSE_SMOKE") != "1",
    reason="builds images, runs containers (20-30 min): MEDCITE_COMPOSE_SMOKE=1 (docs/deployment.md)",
)
def test_compose_smoke_run():
    """scripts/compose_smoke.sh: build, up, ask with citations, kill -9 the API, same answer, down -v."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts/compose_smoke.sh")], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "PASSED" in result.stdout
