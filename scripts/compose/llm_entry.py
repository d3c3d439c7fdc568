"""Entry point of the local stand-in for the llama.cpp server image (llm-server.Dockerfile here).

docker-compose.yml passes llama.cpp server's flags (--model --host --port --ctx-size --threads);
this translates them into llama-cpp-python's `python -m llama_cpp.server` settings and execs it,
so that the same compose command runs either image. Both serve the OpenAI API on /v1 (the
healthcheck asks /v1/models, which both answer once the model is loaded).

llama-cpp-python's server ends a streaming answer, with `[DONE]` and no finish reason, whenever
another request arrives (its `interrupt_requests`, on by default), and /v1/models is such a
request: the healthcheck cut every answer longer than its interval. The stand-in turns it off.
"""

import os
import sys

RENAMES = {
    "--ctx-size": "--n_ctx",
    "-c": "--n_ctx",
    "--threads": "--n_threads",
    "-t": "--n_threads",
    "-m": "--model",
}


def main(argv: list[str]) -> None:
    args = [RENAMES.get(a, a) for a in argv]
    if "--n_threads" in args:  # prompt processing uses the same budget (contention: docs/deployment.md)
        args += ["--n_threads_batch", args[args.index("--n_threads") + 1]]
    if "--interrupt_requests" not in args:
        args += ["--interrupt_requests", "False"]
    os.execv(sys.executable, [sys.executable, "-m", "llama_cpp.server", *args])


if __name__ == "__main__":
    main(sys.argv[1:])
