"""The sections of the report page, one module each; :mod:`tokenmill.report.page` puts them in order."""
