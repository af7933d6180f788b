"""Draw the pictures docs/commands.md shows, with the dyn of this environment:

    python docs/images/draw.py

talos (example-robot-data, in the [test] extra) for ``mass --sparsity``; the repository's
fixtures for ``check-limits``. Each is a PNG kept small (< 150 kB) by its --plot-size."""
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
ROBOTS = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
TALOS = ROBOTS / "talos_data" / "robots" / "talos_reduced.urdf"

PICTURES = {
    "sparsity_talos.png": ["mass", str(TALOS), "--free-flyer", "--sparsity",
                           "--plot-size", "1200x660px"],
    "check_limits.png": ["check-limits", "fixtures/two_link_arm.urdf", "--input",
                         "fixtures/two_link_arm_limits_log.csv", "--plot-size", "1000x700px"],
}

for name, args in PICTURES.items():
    target = IMAGES / name
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", *args, "--plot", str(target),
                           "--format", "json"], cwd=ROOT, stdout=subprocess.DEVNULL)
    if done.returncode not in (0, 1):  # (check-limits: 1, the log leaves a limit)
        sys.exit(f"{name}: dyn ended with {done.returncode}")
    print(f"{target.relative_to(ROOT)}: {target.stat().st_size // 1024} kB")
