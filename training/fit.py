"""Train the relevance model's top layers on cached bottom-layer outputs, resumably, on CPU.

The bottom ``trainable_from`` layers and the embeddings keep the base weights, so their output
for a pair never changes: it is computed once (``cache_bottom``) and the epochs run only the top
layers forward and backward. On this 2-core CPU that makes an epoch about three times cheaper
than full fine-tuning, and it keeps the stored model small (the top layers and the head only).

Deterministic for a seed: batch order comes from ``Random(seed * 1000 + epoch)``, and torch's
generator is seeded before the head is initialised. Checkpoints (trainable tensors, AdamW
moments and a progress record: safetensors + JSON, no pickle) are written every
``checkpoint_every`` steps and at each epoch's end; a restarted run with the same folder resumes
at the step after the last checkpoint. The epoch with the best validation nDCG@10 is kept.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from core.errors import require

if TYPE_CHECKING:
    from rag.rerank.minilm import RelevanceModel


@dataclass(frozen=True)
class FitConfig:
    seed: int = 13
    epochs: int = 3
    batch_size: int = 32
    lr_layers: float = 1e-4
    lr_head: float = 1e-3
    weight_decay: float = 0.01
    warmup_share: float = 0.05
    trainable_from: int = 4
    max_length: int = 192
    checkpoint_every: int = 200
    # with groups (``train(groups=...)``): each batch holds whole groups (a question's candidate
    # lines), and the loss adds the listwise one (softmax over a group, its positives the target)
    listwise_weight: float = 0.0


def group_batches(groups: Sequence[Hashable], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of whole groups (about ``batch_size`` items each), each index exactly once."""
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    order = list(members)
    rng.shuffle(order)
    batches: list[list[int]] = [[]]
    for g in order:
        if batches[-1] and len(batches[-1]) + len(members[g]) > batch_size:
            batches.append([])
        batches[-1].extend(members[g])
    return [b for b in batches if b]


def length_batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of similar-length items (little padding), each index exactly once."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(order), pool):
        block = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches.extend(block[i : i + batch_size] for i in range(0, len(block), batch_size))
    rng.shuffle(batches)
    return batches


def cache_bottom(
    model: RelevanceModel, encoded: Sequence[tuple[list[int], list[int]]], desc: str
) -> list[Any]:
    """Bottom-layer outputs per pair (float16, unpadded), computed in length-sorted batches."""
    torch = require("torch", package="torch", extra="dense")
    from indexes.dense.minilm import padded

    out: list[Any] = [None] * len(encoded)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    with torch.inference_mode():
        for start in tqdm(range(0, len(order), 64), desc=desc, unit="batch", dynamic_ncols=True):
            rows = order[start : start + 64]
            ids, types, mask = padded([encoded[i] for i in rows])
            hidden = model.encoder.bottom(ids, types, mask, model.trainable_from)
            for j, i in enumerate(rows):
                out[i] = hidden[j, : len(encoded[i][0])].to(torch.float16).clone()
    return out


def stack(hidden: Sequence[Any]) -> tuple[Any, Any]:
    """Pad cached per-pair tensors into one float32 batch and its mask."""
    torch = require("torch", package="torch", extra="dense")
    width = max(h.shape[0] for h in hidden)
    batch = torch.zeros((len(hidden), width, hidden[0].shape[1]), dtype=torch.float32)
    mask = torch.zeros((len(hidden), width), dtype=torch.long)
    for row, h in enumerate(hidden):
        batch[row, : h.shape[0]] = h.float()
        mask[row, : h.shape[0]] = 1
    return batch, mask


def logits_of(model: RelevanceModel, hidden: Sequence[Any], batch_size: int = 64) -> np.ndarray:
    torch = require("torch", package="torch", extra="dense")
    out = []
    with torch.inference_mode():
        for start in range(0, len(hidden), batch_size):
            out.append(model.logits_from_hidden(*stack(hidden[start : start + batch_size])).double().numpy())
    return np.concatenate(out) if out else np.zeros(0)


class Checkpoint:
    """Trainable tensors + AdamW moments (safetensors) and progress (JSON) in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tensors, self.progress = folder / "checkpoint.safetensors", folder / "checkpoint.json"

    def save(self, model: RelevanceModel, optimizer: Any, state: dict[str, Any]) -> None:
        safetensors = require("safetensors.torch", package="safetensors", extra="dense")
        names = dict(model.named_parameters())
        tensors = {f"param/{n}": names[n].detach().clone() for n in model.trained_names()}
        for group in optimizer.param_groups:
            for p in group["params"]:
                name = next(n for n, q in names.items() if q is p)
                moments = optimizer.state.get(p, {})
                for key in ("exp_avg", "exp_avg_sq"):
                    if key in moments:
                        tensors[f"{key}/{name}"] = moments[key].clone()
                if "step" in moments:
                    state.setdefault("adam_steps", {})[name] = float(moments["step"])
        self.folder.mkdir(parents=True, exist_ok=True)
        safetensors.save_file(tensors, str(self.tensors) + ".tmp")
        Path(str(self.tensors) + ".tmp").replace(self.tensors)
        self.progress.write_text(json.dumps(state, indent=1), encoding="utf-8")

    def load(self, model: RelevanceModel, optimizer: Any, config: FitConfig) -> dict[str, Any] | None:
        if not (self.tensors.is_file() and self.progress.is_file()):
            return None
        torch = require("torch", package="torch", extra="dense")
        safetensors = require("safetensors.torch", package="safetensors", extra="dense")
        state: dict[str, Any] = json.loads(self.progress.read_text(encoding="utf-8"))
        if state.get("config") != asdict(config):
            raise ValueError(f"{self.folder} holds a checkpoint of another configuration; use a new --out")
        tensors = safetensors.load_file(str(self.tensors))
        names = dict(model.named_parameters())
        with torch.no_grad():
            for name in model.trained_names():
                names[name].copy_(tensors[f"param/{name}"])
        for name, steps in state.get("adam_steps", {}).items():
            optimizer.state[names[name]] = {
                "step": torch.tensor(steps),
                "exp_avg": tensors[f"exp_avg/{name}"],
                "exp_avg_sq": tensors[f"exp_avg_sq/{name}"],
            }
        return state


def load_finished(model: RelevanceModel, config: FitConfig, folder: Path) -> dict[str, Any] | None:
    """The progress record of a run in ``folder`` that trained every epoch, its best epoch loaded
    into ``model``; ``None`` when there is none (then :func:`train` starts or resumes it).

    Lets a caller skip preparing training data that :func:`train` would not read any more.
    """
    progress, best = Checkpoint(folder).progress, folder / "best.safetensors"
    if not (progress.is_file() and best.is_file()):
        return None
    state: dict[str, Any] = json.loads(progress.read_text(encoding="utf-8"))
    if state.get("config") != asdict(config) or len(state.get("epochs", [])) < config.epochs:
        return None
    _load_trained(model, best)
    model.eval()
    return {**state, "finished": True}


def train(
    model: RelevanceModel,
    hidden: Sequence[Any],
    labels: Sequence[int],
    config: FitConfig,
    folder: Path,
    validate: Callable[[RelevanceModel], float],
    max_steps: int | None = None,
    groups: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """Train ``model``'s top layers; ``validate(model) -> float`` scores an epoch (higher is better).
    ``groups``: each pair's group (with ``config.listwise_weight``, the listwise loss's lists).

    Returns the progress record: per-epoch loss and validation score, the best epoch, time.
    The best epoch's trainable tensors are left loaded in ``model``. ``max_steps`` stops this
    call after that many steps, checkpointed (``state["finished"]`` is then False); calling
    again with the same folder goes on from there.
    """
    run = _start(model, hidden, labels, config, folder, max_steps, groups)
    state = run.state
    while state["step"] < run.stop_at:
        epoch, running = _train_epoch(run)
        if state["step"] % run.steps_per_epoch and state["step"] < run.total:  # stopped mid-epoch
            _save_checkpoint(run)
            break
        _end_epoch(run, epoch, running, validate)
    run.bar.close()
    state["finished"] = state["step"] >= run.total
    if state["finished"]:
        _load_trained(model, run.best_path)
    model.eval()
    return state


@dataclass
class _Run:
    """One call of :func:`train`: what its steps read, and the progress record they update."""

    model: RelevanceModel
    hidden: Sequence[Any]
    target: Any  # float labels, one per pair
    lengths: list[int]
    config: FitConfig
    optimizer: Any
    base_lrs: list[float]
    loss_fn: Any
    checkpoint: Checkpoint
    best_path: Path
    state: dict[str, Any]
    steps_per_epoch: int
    total: int
    warmup: int
    stop_at: int
    started: float  # perf_counter at the start, less the seconds of earlier calls
    bar: Any
    groups: Sequence[Hashable] | None = None


def _optimizer(model: RelevanceModel, config: FitConfig) -> Any:
    """AdamW over the trained tensors only (layers and head at their own rates); the rest frozen."""
    torch = require("torch", package="torch", extra="dense")
    params = dict(model.named_parameters())
    for name, p in params.items():
        p.requires_grad_(name in set(model.trained_names()))
    trained_names = model.trained_names()
    return torch.optim.AdamW(
        [
            {
                "params": [params[n] for n in trained_names if not n.startswith("head.")],
                "lr": config.lr_layers,
            },
            {"params": [params[n] for n in trained_names if n.startswith("head.")], "lr": config.lr_head},
        ],
        weight_decay=config.weight_decay,
    )


def _start(
    model: RelevanceModel,
    hidden: Sequence[Any],
    labels: Sequence[int],
    config: FitConfig,
    folder: Path,
    max_steps: int | None,
    groups: Sequence[Hashable] | None = None,
) -> _Run:
    """The optimizer, the schedule and the progress record (resumed from ``folder`` when there)."""
    torch = require("torch", package="torch", extra="dense")
    optimizer = _optimizer(model, config)
    base_lrs = [g["lr"] for g in optimizer.param_groups]
    if groups is not None:
        steps_per_epoch = len(group_batches(groups, config.batch_size, random.Random(0)))
    else:
        steps_per_epoch = -(-len(hidden) // config.batch_size)
    total = steps_per_epoch * config.epochs
    warmup = max(1, int(config.warmup_share * steps_per_epoch * config.epochs))
    checkpoint, best_path = Checkpoint(folder), folder / "best.safetensors"
    folder.mkdir(parents=True, exist_ok=True)  # the best epoch may be written before a checkpoint
    state = checkpoint.load(model, optimizer, config) or {
        "config": asdict(config),
        "step": 0,
        "epochs": [],
        "best_epoch": None,
        "best_score": None,
        "seconds": 0.0,
    }
    target = torch.tensor([float(y) for y in labels])
    lengths = [h.shape[0] for h in hidden]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started = time.perf_counter() - state["seconds"]
    model.train()
    bar = tqdm(total=total, initial=state["step"], desc="training", unit="step", dynamic_ncols=True)
    stop_at = total if max_steps is None else min(total, state["step"] + max_steps)
    return _Run(
        model,
        hidden,
        target,
        lengths,
        config,
        optimizer,
        base_lrs,
        loss_fn,
        checkpoint,
        best_path,
        state,
        steps_per_epoch,
        total,
        warmup,
        stop_at,
        started,
        bar,
        groups,
    )


def _train_epoch(run: _Run) -> tuple[int, list[float]]:
    """The rest of the current epoch's batches, up to ``stop_at``; its number and batch losses."""
    state, config = run.state, run.config
    epoch, done_in_epoch = divmod(state["step"], run.steps_per_epoch)
    rng = random.Random(config.seed * 1000 + epoch)
    if run.groups is not None:
        batches = group_batches(run.groups, config.batch_size, rng)
    else:
        batches = length_batches(run.lengths, config.batch_size, rng)
    running: list[float] = []
    for rows in batches[done_in_epoch:]:
        if state["step"] >= run.stop_at:
            break
        running.append(_train_step(run, rows))
        state["step"] += 1
        run.bar.update(1)
        run.bar.set_postfix(loss=f"{np.mean(running[-50:]):.3f}")
        if state["step"] % config.checkpoint_every == 0:
            _save_checkpoint(run)
    return epoch, running


def _train_step(run: _Run, rows: list[int]) -> float:
    """One optimizer step on the pairs ``rows`` (linear warmup, then linear decay); its loss."""
    step, total, warmup = run.state["step"], run.total, run.warmup
    scale = min(1.0, (step + 1) / warmup) * max(0.0, (total - step) / max(1, total - warmup))
    for group, lr in zip(run.optimizer.param_groups, run.base_lrs, strict=True):
        group["lr"] = lr * min(1.0, scale)
    batch, mask = stack([run.hidden[i] for i in rows])
    logits = run.model.logits_from_hidden(batch, mask)
    target = run.target[rows]
    loss = run.loss_fn(logits, target)
    if run.groups is not None and run.config.listwise_weight:
        loss = loss + run.config.listwise_weight * _listwise(logits, target, [run.groups[i] for i in rows])
    run.optimizer.zero_grad()
    loss.backward()
    run.optimizer.step()
    return float(loss.item())


def _listwise(logits: Any, target: Any, groups: Sequence[Hashable]) -> Any:
    """Mean over the groups holding a positive of ``-log(sum softmax over the group's positives)``."""
    torch = require("torch", package="torch", extra="dense")
    losses = []
    for g in dict.fromkeys(groups):
        rows = [i for i, h in enumerate(groups) if h == g]
        z, y = logits[rows], target[rows]
        if y.sum() > 0:
            losses.append(torch.logsumexp(z, 0) - torch.logsumexp(z[y > 0], 0))
    return torch.stack(losses).mean() if losses else logits.sum() * 0.0


def _end_epoch(
    run: _Run, epoch: int, running: list[float], validate: Callable[[RelevanceModel], float]
) -> None:
    """Validate the finished epoch, keep it when it is the best so far, checkpoint."""
    state, model = run.state, run.model
    model.eval()
    score = float(validate(model))
    model.train()
    state["epochs"].append(
        {"epoch": epoch + 1, "loss": float(np.mean(running)) if running else None, "validation_ndcg10": score}
    )
    if state["best_score"] is None or score > state["best_score"]:
        state["best_score"], state["best_epoch"] = score, epoch + 1
        _save_trained(model, run.best_path)
    _save_checkpoint(run)


def _save_checkpoint(run: _Run) -> None:
    run.state["seconds"] = time.perf_counter() - run.started
    run.checkpoint.save(run.model, run.optimizer, run.state)


def save_float16(model: RelevanceModel, path: Path) -> None:
    """The trained tensors as float16 safetensors: what a shipped model stores (half the size)."""
    torch = require("torch", package="torch", extra="dense")
    safetensors = require("safetensors.torch", package="safetensors", extra="dense")
    params = dict(model.named_parameters())
    tensors = {n: params[n].detach().to(torch.float16).contiguous() for n in model.trained_names()}
    safetensors.save_file(tensors, str(path))


def _save_trained(model: RelevanceModel, path: Path) -> None:
    safetensors = require("safetensors.torch", package="safetensors", extra="dense")
    params = dict(model.named_parameters())
    safetensors.save_file({n: params[n].detach().clone() for n in model.trained_names()}, str(path))


def _load_trained(model: RelevanceModel, path: Path) -> None:
    torch = require("torch", package="torch", extra="dense")
    safetensors = require("safetensors.torch", package="safetensors", extra="dense")
    tensors = safetensors.load_file(str(path))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in tensors.items():
            params[name].copy_(value)
