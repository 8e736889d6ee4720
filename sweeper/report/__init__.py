"""Report: compute tables (pandas) in one place, draw them (seaborn) in another."""

from sweeper.report._draw import draw_heatmap
from sweeper.report._tables import HeatmapData, best_configs, failure_counts, heatmaps, trials_frame
from sweeper.report._write import ReportFiles, reproduce_command, study_tables, write_report

__all__ = ["HeatmapData", "ReportFiles", "best_configs", "draw_heatmap", "failure_counts",
           "heatmaps", "reproduce_command", "study_tables", "trials_frame", "write_report"]
