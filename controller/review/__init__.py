"""The weekly review: the controller's transfer logs read back, summarised and plotted.

The data flow is three modules:

- ``logs``: JSON-lines files in, records out; every line that cannot be used is
  counted with its reason and its ``file:line`` (never a traceback);
- ``figures`` (pure): the records in, the review's numbers out: the summary, p50/p95/p99
  per 5-minute window, each rack pair's baseline (median) and its outliers (slower than
  twice it, the design's reroute rule), scheduling efficiency per window with the 80%
  line, reroutes and fallbacks, per-tier utilisation, and the alerts' intervals;
- ``html``: the figures drawn with matplotlib into PNGs embedded (base64) in one
  self-contained HTML file.

Public API::

    read_logs, Records, Review, review, render_html
"""

from controller.review.figures import Review, review
from controller.review.html import render_html
from controller.review.logs import Records, read_logs

__all__ = ["Records", "Review", "read_logs", "render_html", "review"]
