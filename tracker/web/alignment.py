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


# The decision table's columns, in order: (key, sortable). A row is one line at 1,440 px (docs/board.md).
COLUMNS = (("api", True), ("dtype", True), ("configs", True), ("exact_share", True), ("ulp:0", False),
           ("ulp:1", False), ("ulp:2-3", False), ("ulp:>3", False), ("max_ulp", True), ("paddle_off", True),
           ("torch_off", True), ("read_configs", True), ("rmse_ratio", True), ("threads", False), ("torch", False),
           ("decision", True))


def _headers(release: str, sort: str) -> list[tuple[str, str, str, str]]:
    """(column, label, its tooltip, the link that sorts by it — "" when it does not sort: descending first,
    ascending when it already is)."""
    labels = {"api": _("API"), "dtype": _("dtype"), "configs": _("configs"), "exact_share": _("exact"),
              "ulp:0": "0", "ulp:1": "1", "ulp:2-3": "2–3", "ulp:>3": ">3", "max_ulp": _("max ULP"),
              "paddle_off": _("Paddle off"), "torch_off": _("Torch off"), "read_configs": _("read"),
              "rmse_ratio": _("RMSE P÷T"), "threads": _("threads"), "torch": _("Torch"), "decision": _("decision")}
    tips = {"exact_share": _("share of the configs that are exact (atol = rtol = 0)"),
            "ulp:0": _("configs whose largest distance between Paddle and Torch is 0 ULP"),
            "ulp:1": _("configs 1 ULP apart"), "ulp:2-3": _("configs 2 to 3 ULP apart"),
            "ulp:>3": _("configs more than 3 ULP apart"),
            "paddle_off": _("inexact configs the float64 oracle reads Paddle off (Torch is closer)"),
            "torch_off": _("inexact configs the float64 oracle reads Torch off (Paddle is closer)"),
            "read_configs": _("inexact configs with a float64 reading / readings over every run (draws read)"),
            "rmse_ratio": _("sum of Paddle's RMSEs to float64 over the sum of Torch's"),
            "threads": _("does the verdict change with the thread count"),
            "torch": _("does the verdict change with the Torch build"),
            "decision": _("keep Paddle's kernel, align to Torch, or undecided: the rule is in docs/board.md")}
    out = []
    for key, sortable in COLUMNS:
        mark = " ▼" if sort == "-" + key else " ▲" if sort == key else ""
        following = key if sort == "-" + key else "-" + key
        url = "?" + urlencode({"release": release, "sort": following}) if sortable else ""
        out.append((key, labels[key] + mark, tips.get(key, ""), url))
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
