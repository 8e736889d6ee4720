"""Report: compute tables (pandas) in one place, draw them (matplotlib) in another."""

from sweeper.report._contents import ReportTables
from sweeper.report._draw import (
    draw_heatmap,
    draw_roofline,
    footprint_figure,
    heatmap_figure,
    roofline_figure,
)
from sweeper.report._footprint import FootprintCurve, footprint_curves
from sweeper.report._heatmaps import HeatmapData, cell_text, heatmaps, tick_labels
from sweeper.report._html import html_fragment, html_page
from sweeper.report._provenance import reproduce_command
from sweeper.report._roofline import Roof, Roofline, roofline, studies_roofline
from sweeper.report._tables import best_configs, failure_counts, nothing_measured, trials_frame
from sweeper.report._write import ReportFiles, study_tables, write_report

__all__ = ["FootprintCurve", "HeatmapData", "ReportFiles", "ReportTables", "Roof", "Roofline",
           "best_configs", "cell_text", "draw_heatmap", "draw_roofline", "failure_counts",
           "footprint_curves", "footprint_figure", "heatmap_figure", "heatmaps", "html_fragment",
           "html_page", "nothing_measured", "reproduce_command", "roofline", "roofline_figure",
           "studies_roofline", "study_tables", "tick_labels", "trials_frame", "write_report"]
