"""Run with python3 check.py: exits 1 while mean() is wrong."""
import sys

from grades import stats as grades
from sensors import stats as sensors

bad = [m.__name__ for m in (grades, sensors) if m.mean([2, 4]) != 3.0]
print("mean() is wrong in: " + ", ".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
