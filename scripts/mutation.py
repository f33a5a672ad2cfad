"""Mutation check of the pure layers and storage: how many planted bugs do the tests catch?

Runs cosmic-ray (pip install -e '.[mutation]') on a copy of the checkout, so the working tree is never
mutated. All mutants of compactcli/layers/ and compactcli/storage/ are listed, a random sample of them
(--sample, fixed --seed) is run against the tests that cover those modules, and the score is printed:
killed / (killed + survived), with each survivor's place so a test can be written for it.

    python scripts/mutation.py --sample 40        # about 20 minutes on two busy cores
    python scripts/mutation.py --sample 0         # every mutant (hours)

Not part of CI: too slow for every push. Its last score is in the README (Development).
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MUTATED = ["compactcli/layers", "compactcli/storage"]
# The tests that exercise the mutated modules; the whole suite would take minutes per mutant.
TESTS = [
    "tests/test_micro_layer.py",
    "tests/test_micro_oracle.py",
    "tests/test_micro_properties.py",
    "tests/test_summarize_layer.py",
    "tests/test_summarize_property.py",
    "tests/test_storage.py",
    "tests/test_archive_steps.py",
    "tests/test_cli_validate.py",
    "tests/test_cli_replay.py",
    "tests/test_cli_estimate.py",
]


def copy_checkout(target: Path) -> None:
    """The files git knows (tracked and untracked, not ignored), without .venv or caches."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def config(work: Path, timeout: float, tests: list[str]) -> str:
    tests = " ".join(t for t in tests if (work / t).exists())
    # PYTHONPATH puts the mutated copy before the installed package, in subprocesses too.
    pytest = f"{sys.executable} -m pytest -x -q -p no:randomly -p no:cacheprovider"
    command = f"env PYTHONPATH={work} {pytest} {tests}"
    modules = ", ".join(f'"{m}"' for m in MUTATED)
    return (
        "[cosmic-ray]\n"
        f"module-path = [{modules}]\n"
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{command}"\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def sample(session: Path, size: int, seed: int) -> int:
    """Mark all but `size` randomly chosen mutants as skipped; returns how many mutants there are."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    def place(item) -> tuple:
        [mutation] = item.mutations
        return (str(mutation.module_path), mutation.start_pos, mutation.operator_name, mutation.occurrence)

    with use_db(str(session)) as db:
        items = sorted(db.work_items, key=place)  # job ids are random; places are not
        ids = [item.job_id for item in items]
        if 0 < size < len(ids):
            chosen = set(random.Random(seed).sample(ids, size))
            skipped = [job for job in ids if job not in chosen]
            db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        return len(ids)


def report(session: Path) -> tuple[int, int, list[str]]:
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    killed, survivors = 0, []
    with use_db(str(session)) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            if result.test_outcome == TestOutcome.SURVIVED:
                [mutation] = item.mutations
                where = f"{mutation.module_path}:{mutation.start_pos[0]}"
                survivors.append(f"{where} {mutation.operator_name} #{mutation.occurrence}")
            else:  # killed, or incompetent (the mutant did not even import): caught either way
                killed += 1
    return killed, len(survivors), survivors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=40, help="mutants to run (0: all)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant")
    parser.add_argument("--tests", nargs="*", default=TESTS, help="test files to run against each mutant")
    args = parser.parse_args()
    if shutil.which("cosmic-ray") is None and not Path(sys.executable).with_name("cosmic-ray").exists():
        parser.error("cosmic-ray is not installed: pip install -e '.[mutation]'")
    cosmic_ray = str(Path(sys.executable).with_name("cosmic-ray"))
    with tempfile.TemporaryDirectory(prefix="compactcli-mutation-") as tmp:
        work = Path(tmp)
        copy_checkout(work)
        (work / "mutation.toml").write_text(config(work, args.timeout, args.tests))
        session = work / "mutation.sqlite"
        subprocess.run([cosmic_ray, "init", "mutation.toml", str(session)], cwd=work, check=True)
        total = sample(session, args.sample, args.seed)
        subprocess.run([cosmic_ray, "exec", "mutation.toml", str(session)], cwd=work, check=True)
        killed, survived, survivors = report(session)
    ran = killed + survived
    print(f"mutants: {total} in {', '.join(MUTATED)}; ran {ran} (seed {args.seed})")
    print(f"killed: {killed}, survived: {survived}, score: {killed / ran:.0%}" if ran else "nothing ran")
    for line in survivors:
        print(f"  survived: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
