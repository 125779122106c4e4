"""The dashboard page at ``/`` and its assets, served from this package (no CDN).

The page (``static/dashboard.html``, ``dashboard.js``, ``dashboard.css``) draws every chart with
Plotly, whose JavaScript ships inside the ``plotly`` Python package (``plotly.min.js``), and asks
the API for every number, so what it shows equals what the API answers.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

from forecast.service.guard import shown

router = APIRouter(include_in_schema=False)

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {
    "dashboard.js": "application/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}
ASSET_CACHE = "public, max-age=3600"


@cache
def plotly_js() -> bytes:
    """Plotly's minified bundle from the installed ``plotly`` package."""
    bundled = resources.files("plotly") / "package_data" / "plotly.min.js"
    if bundled.is_file():
        return bundled.read_bytes()
    # why here: plotly's bundle is read once, when the dashboard is served
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


@router.get("/", response_class=HTMLResponse)
def page() -> HTMLResponse:
    return HTMLResponse(
        (STATIC / "dashboard.html").read_text(), headers={"Cache-Control": "no-cache"}
    )


@router.get("/static/plotly.min.js")
def plotly_asset() -> Response:
    return Response(
        plotly_js(), media_type="application/javascript", headers={"Cache-Control": ASSET_CACHE}
    )


@router.get("/static/{name}")
def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise HTTPException(status_code=404, detail=f"no asset {shown(name)}")
    return FileResponse(
        STATIC / name, media_type=ASSETS[name], headers={"Cache-Control": "no-cache"}
    )
