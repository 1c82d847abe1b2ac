"""The alignment worklist (issue #35): GET /alignment and GET /api/alignment (thin: tracker.selectors.alignment reads).

?release= one of the releases with an exact reading (default the newest), ?sort= a column (``-`` first: descending),
?api= and ?dtype= one row and its configs."""
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from . import params
from .conditional import public_page
from ..selectors import alignment as selectors


def _sorts() -> list[str]:
    return [key for name in selectors.SORTS for key in (name, "-" + name)]


def _headers(release: str, sort: str) -> list[tuple[str, str, str]]:
    """(column, label, the link that sorts by it: descending first, ascending when it already is)."""
    labels = {"api": _("API"), "dtype": _("dtype"), "configs": _("configs"), "exact": _("exact"),
              "within_tolerance": _("within tolerance"), "failing": _("failing"), "median_ulp": _("median ULP"),
              "max_ulp": _("max ULP"), "paddle_off": _("Paddle off"), "torch_off": _("Torch off"),
              "rmse_ratio": _("RMSE Paddle ÷ Torch"), "advice": _("what to do")}
    out = []
    for key in selectors.SORTS:
        following = key if sort == "-" + key else "-" + key
        mark = " ▼" if sort == "-" + key else " ▲" if sort == key else ""
        out.append((key, labels[key] + mark, "?" + urlencode({"release": release, "sort": following})))
    return out


@require_GET
@public_page("release", "sort", "api", "dtype")
def alignment_page(request):
    releases = selectors.alignment_releases()
    release = params.choice(request, "release", releases, releases[0] if releases else "")
    sort = params.choice(request, "sort", _sorts(), "api")
    api, dtype = request.GET.get("api", "").strip()[:200], request.GET.get("dtype", "").strip()[:20]
    rows = selectors.alignment_table(release, sort, api, dtype) if release else []
    return render(request, "tracker/alignment.html", {
        "releases": releases, "release": release, "sort": sort, "api": api, "dtype": dtype, "rows": rows,
        "totals": selectors.alignment_totals(rows), "one_group": bool(api and dtype),
        "headers": _headers(release, sort)})


@require_GET
@public_page("release", "sort", "api", "dtype")
def api_alignment(request):
    releases = selectors.alignment_releases()
    release = request.GET.get("release", "") or (releases[0] if releases else "")
    sort = request.GET.get("sort", "") or "api"
    errors = []
    if releases and release not in releases:
        errors.append(f"release={params.shown(release)!r}: use one of {', '.join(releases)}")
    if sort not in _sorts():
        errors.append(f"sort={params.shown(sort)!r}: use one of {', '.join(selectors.SORTS)} (a leading - descends)")
    if errors:
        return JsonResponse({"errors": errors}, status=400)
    api, dtype = request.GET.get("api", "").strip()[:200], request.GET.get("dtype", "").strip()[:20]
    rows = selectors.alignment_table(release, sort, api, dtype) if release else []
    configs = bool(api or dtype)
    return JsonResponse({"release": release or None, "releases": releases, "sort": sort,
                         "totals": selectors.alignment_totals(rows),
                         "rows": [row.as_dict(configs=configs) for row in rows]},
                        json_dumps_params={"ensure_ascii": False})
