"""The columnar engine's tests share their tables (``columnar_tables``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # columnar_tables
