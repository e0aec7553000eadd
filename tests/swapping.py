"""A swapper process for race tests: it keeps moving a real folder aside, putting a link to a
folder outside in its place, and taking the link away again, until a stop file appears.

Run as ``python -c SWAPPER <folder> <outside> <stop file>``; it prints ``ready`` once started.
"""

SWAPPER = """
import os, sys
run, outside, stop = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(run, exist_ok=True)
print("ready", flush=True)
round_number = 0
while not os.path.exists(stop):
    round_number += 1
    for step in (
        lambda: os.rename(run, f"{run}.{round_number}"),  # the real folder moves aside
        lambda: os.symlink(outside, run),  # a link takes its place
        lambda: os.unlink(run),  # and goes, so the platform makes the folder again
    ):
        try:
            step()
        except OSError:
            pass
"""
