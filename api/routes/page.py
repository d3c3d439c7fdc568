"""The chat page: ``GET /`` (HTML), its assets under ``/static/`` and ``GET /ui/config``.

Everything the page needs comes from this app (no CDN, no build step; the files are in
``api/static/``, shipped as package data). The page and its assets need no key; the page then
calls the API with the user's key like any client. ``/ui/config`` tells the page, per served
profile, which index it answers from and which sources that index holds (for the source filter);
it needs a key like ``/v1/models`` and, being the page's own, stays out of the API schema. The
page is sent with a strict Content-Security-Policy (this origin only, no inline script or style),
so even a rendering bug could not run injected script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import FileResponse, Response

from api.deps import StateDep, require_client
from api.errors import ApiError

router = APIRouter()

STATIC = Path(__file__).resolve().parent.parent / "static"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def _asset(name: str) -> Path:
    """The file ``name`` directly inside api/static (no folders, no dot files), or a 404."""
    path = STATIC / name
    if "/" in name or name.startswith(".") or path.suffix not in MEDIA_TYPES or not path.is_file():
        raise ApiError(
            404, f"no static file {name!r}; the page's files are listed in api/static", "not_found"
        )
    return path


@router.get("/", include_in_schema=False)
def page() -> Response:
    """The chat page (HTML; its script and styles load from /static/)."""
    return static("index.html")


@router.get("/static/{name}", include_in_schema=False)
def static(name: str) -> Response:
    """One of the page's assets; revalidated on each load so an upgrade is seen at once."""
    path = _asset(name)
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}
    return FileResponse(path, media_type=MEDIA_TYPES[path.suffix], headers=headers)


@router.get("/ui/config", dependencies=[Depends(require_client)], include_in_schema=False)
def ui_config(state: StateDep) -> dict[str, Any]:
    """What the chat page offers: each served profile with its index and that index's sources."""
    profiles = []
    for name, served in state.served.items():
        manifest = served.assembled.index.manifest
        profiles.append(
            {
                "id": name,
                "description": served.assembled.profile.description,
                "index": served.assembled.profile.index,
                "sources": sorted(manifest.get("counts", {}).get("per_source", {})),
            }
        )
    return {"profiles": profiles, "auth_required": state.settings.auth_required}
