"""The report: paper tables, comparisons, causes, the golden guard and the HTML page."""
