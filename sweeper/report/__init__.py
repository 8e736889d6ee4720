"""Report: compute tables (pandas) in one place, draw them (seaborn) in another."""

from sweeper.report._draw import draw_heatmap, heatmap_figure
from sweeper.report._heatmaps import HeatmapData, cell_text, heatmaps, tick_labels
from sweeper.report._provenance import reproduce_command
from sweeper.report._tables import best_configs, failure_counts, nothing_measured, trials_frame
from sweeper.report._write import ReportFiles, study_tables, write_report

__all__ = ["HeatmapData", "ReportFiles", "best_configs", "cell_text", "draw_heatmap",
           "failure_counts", "heatmap_figure", "heatmaps", "nothing_measured",
           "reproduce_command", "study_tables", "tick_labels", "trials_frame", "write_report"]
