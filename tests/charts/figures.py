"""Reading a chart page's figures as plotly.js gets them."""
import json


def page_figure(page: str, figure_id: str) -> dict:
    """The figure a chart page hands plotly.js (its JSON <script> element)."""
    text = page.split(f'<script type="application/json" id="{figure_id}-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(text)
