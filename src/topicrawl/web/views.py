"""The HTML pages (shells filled by their scripts from the API), the raw-page route and the
vendored chart and graph libraries (served from the installed packages, never a CDN)."""

from __future__ import annotations

import importlib.util
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from topicrawl.web.reading import raw_page
from topicrawl.web.state import missing_parts

__all__ = ["RAW_CSP", "VENDOR_FILES", "VendorFiles", "render_page", "views_router"]

# A raw page runs nothing and loads nothing, framed or opened on its own: ``sandbox`` without
# ``allow-scripts`` (and without same-origin: it cannot read the dashboard either).
RAW_CSP = "sandbox; default-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'self'"

_templates = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
)


def _when(epoch: float | None) -> str:
    """A time as UTC, to the minute (``–`` for none)."""
    if epoch is None:
        return "–"
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


_templates.env.filters["when"] = _when
_templates.env.filters["number"] = _number

views_router = APIRouter()


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True, slots=True)
class VendorFiles:
    """Where the vendored libraries are: plotly's bundled ``plotly.min.js`` and the
    vis-network build that pyvis ships."""

    plotly: Path | None
    vis_js: Path | None
    vis_css: Path | None
    plotly_style_ids: tuple[str, ...] = field(default=())

    @classmethod
    def installed(cls) -> VendorFiles:
        plotly = _package_dir("plotly")
        pyvis = _package_dir("pyvis")
        vis = pyvis / "lib" / "vis-9.1.2" if pyvis else None
        bundle = _file(plotly / "package_data" / "plotly.min.js" if plotly else None)
        return cls(
            plotly=bundle,
            plotly_style_ids=_inline_style_ids(bundle),
            vis_js=_file(vis / "vis-network.min.js" if vis else None),
            vis_css=_file(vis / "vis-network.css" if vis else None),
        )


def _file(path: Path | None) -> Path | None:
    return path if path is not None and path.is_file() else None


def _inline_style_ids(bundle: Path | None) -> tuple[str, ...]:
    """The ids of the ``<style>`` elements plotly.min.js adds unless one is already there.

    The CSP refuses such inline styles (and the browser reports each refusal), so the pages
    hold an empty element with each id: plotly then adds none. Read from the bundle itself,
    so that another plotly version's ids are found too.
    """
    if bundle is None:
        return ()
    source = bundle.read_text(encoding="utf-8", errors="replace")
    return tuple(dict.fromkeys(_STYLE_GUARD.findall(source)))


_STYLE_GUARD = re.compile(
    r'if\(!document\.getElementById\("([0-9a-f]{16,64})"\)\)\{'
    r'var \w+=document\.createElement\("style"\)'
)

VENDOR_FILES = VendorFiles.installed()

_VENDOR_TYPES = {
    "plotly.min.js": ("plotly", "text/javascript"),
    "vis-network.min.js": ("vis_js", "text/javascript"),
    "vis-network.css": ("vis_css", "text/css"),
}


@views_router.get("/vendor/{name}")
async def vendor(request: Request, name: str) -> FileResponse:
    """A vendored library file from its installed package."""
    if name not in _VENDOR_TYPES:
        raise HTTPException(status_code=404)
    attribute, media_type = _VENDOR_TYPES[name]
    path: Path | None = getattr(request.app.state.vendor, attribute)
    if path is None:
        raise HTTPException(status_code=404, detail=f"{name} is not installed (the web extra)")
    # Long-lived: the file only changes with the installed package.
    return FileResponse(path, media_type=media_type)


def render_page(request: Request, template: str, **context: object) -> HTMLResponse:
    """A page of the dashboard: ``template`` with the context every page has."""
    return _templates.TemplateResponse(
        request,
        template,
        {
            "display": request.app.state.dashboard.display,
            "schema_version": request.app.state.dashboard.version,
            "missing_parts": missing_parts(request.app.state.dashboard),
            "style_guards": request.app.state.vendor.plotly_style_ids,
            **context,
        },
    )


@views_router.get("/", response_class=HTMLResponse)
async def overview(request: Request) -> HTMLResponse:
    return render_page(request, "overview.html", active="overview")


@views_router.get("/topics", response_class=HTMLResponse)
async def topics(request: Request) -> HTMLResponse:
    return render_page(request, "topics.html", active="topics")


@views_router.get("/pages", response_class=HTMLResponse)
async def pages(request: Request) -> HTMLResponse:
    return render_page(request, "pages.html", active="pages")


@views_router.get("/pages/{page_id}", response_class=HTMLResponse)
async def page(request: Request, page_id: int) -> HTMLResponse:
    return render_page(request, "page.html", active="pages", page_id=page_id)


@views_router.get("/graph", response_class=HTMLResponse)
async def graph(request: Request) -> HTMLResponse:
    return render_page(request, "graph.html", active="graph")


@views_router.get("/nodes", response_class=HTMLResponse)
async def nodes(request: Request) -> HTMLResponse:
    return render_page(request, "nodes.html", active="nodes")


@views_router.get("/raw/{page_id}")
async def raw(request: Request, page_id: int) -> Response:
    """A page's raw body under a sandbox policy: it is shown, never run."""
    found = await raw_page(request.app.state.dashboard.engine, page_id)
    if found is None:
        raise HTTPException(status_code=404, detail=f"no page {page_id}")
    return Response(
        content=found.body,
        media_type=found.content_type,
        headers={"content-security-policy": RAW_CSP, "x-topicrawl-body-kept": str(found.kept)},
    )
