"""The wheel works on its own: ``python -m build`` makes an sdist and a wheel, and the wheel, installed
into a fresh virtual environment (not the checkout), runs ``tokenmill --help`` and the main job on the
bundled sample from a folder outside the checkout.

The venv reuses the system site-packages for the heavy dependencies (``--system-site-packages``) and
the wheel is installed with ``--no-deps``; no ``PYTHONPATH`` and a working directory outside the
checkout keep the checkout's ``src`` off the path, which the first test checks. The sample's files
(``examples/config.yaml``, ``examples/sample/``) are copied next to the run, as a user has them from
the clone or the sdist.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "mkdocs.yml",
                "src", "examples", "docs", "tests", "scripts")
_SKIP_COPY = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")

pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-4000:]}"
    return done


def _clean_env() -> dict[str, str]:
    """This environment without anything that would put the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel, built from a copy of the checkout's build inputs (the build writes
    ``*.egg-info`` and ``build/`` into its source folder; the checkout stays as it is)."""
    for module in ("build", "setuptools", "wheel"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install build setuptools wheel (the test extra has them)")
    source = tmp_path_factory.mktemp("wheel-source")
    for name in BUILD_INPUTS:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=_SKIP_COPY)
        else:
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build uses the installed setuptools and wheel, so it needs no network
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)], source, _clean_env())
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


@pytest.fixture(scope="module")
def venv(dists, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (the heavy dependencies come from the system site-packages)."""
    root = tmp_path_factory.mktemp("wheel-venv") / "venv"
    env = _clean_env()
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], root.parent, env)
    # --ignore-installed: the system's own (editable) tokenmill stays, the venv gets the wheel's
    _run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
          str(dists["wheel"])], root.parent, env)
    return root


def test_wheel_holds_every_file_of_the_package(dists):
    """Every module and every data file under src/tokenmill is in the wheel (nothing stays behind)."""
    package = REPO / "src"
    wanted = {
        str(p.relative_to(package)) for p in (package / "tokenmill").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    missing = sorted(wanted - names)
    assert not missing, f"the wheel lacks {missing[:20]}: fix MANIFEST.in / [tool.setuptools] in pyproject.toml"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "tokenmill = tokenmill.cli:main" in zipfile.ZipFile(dists["wheel"]).read(entry_points).decode()


def test_sdist_holds_the_sample_and_the_docs(dists):
    names = {name.split("/", 1)[1] for name in tarfile.open(dists["sdist"]).getnames() if "/" in name}
    for needed in ("examples/config.yaml", "examples/sample/train.en", "examples/quickstart.sh", "mkdocs.yml",
                   "docs/index.md", "src/tokenmill/cli.py", "CHANGELOG.md"):
        assert needed in names, f"the sdist lacks {needed}"


def test_the_wheel_is_what_the_venv_imports(venv, tmp_path):
    done = _run([str(venv / "bin" / "python"), "-c", "import tokenmill; print(tokenmill.__file__)"], tmp_path,
                _clean_env())
    where = Path(done.stdout.strip()).resolve()
    assert where.is_relative_to(venv.resolve()), f"the venv imports tokenmill from {where}, not from the wheel"


def test_help_and_version_from_the_wheel(venv, tmp_path):
    tokenmill = str(venv / "bin" / "tokenmill")
    out = _run([tokenmill, "--help"], tmp_path, _clean_env()).stdout
    assert "prepare" in out and "verify" in out and "batches" in out
    assert _run([tokenmill, "--version"], tmp_path, _clean_env()).stdout.startswith("tokenmill, version 0.1.0")
    prepare_help = _run([tokenmill, "prepare", "--help"], tmp_path, _clean_env()).stdout
    assert "--trainpref" in prepare_help and "--vocab-size" in prepare_help


def test_main_job_from_the_wheel(venv, tmp_path):
    """examples/quickstart.sh's three commands with the wheel's ``tokenmill``, outside the checkout."""
    shutil.copytree(REPO / "examples" / "sample", tmp_path / "examples" / "sample")
    shutil.copy2(REPO / "examples" / "config.yaml", tmp_path / "examples" / "config.yaml")
    tokenmill = str(venv / "bin" / "tokenmill")
    env = {**_clean_env(), "TOKENMILL_CACHE": str(tmp_path / ".cache")}
    _run([tokenmill, "prepare", "-c", "examples/config.yaml", "--destdir", "runs/sample-bin", "-q"], tmp_path, env)
    assert _run([tokenmill, "verify", "runs/sample-bin"], tmp_path, env).stdout.strip().endswith(": OK")
    shown = _run([tokenmill, "inspect", "runs/sample-bin/train.en-zh.zh", "--spm", "runs/sample-bin/spm.model",
                  "--range", "0:3"], tmp_path, env).stdout
    assert "[2] ids:" in shown and "text:" in shown
    assert (tmp_path / "runs" / "sample-bin" / "report.html").stat().st_size > 10_000


@pytest.fixture(scope="module")
def sourceless(dists, tmp_path_factory) -> dict[str, str]:
    """The wheel installed into a folder, compiled to .pyc files beside the modules and its .py files
    removed; the environment that imports it from there."""
    target = tmp_path_factory.mktemp("sourceless")
    env = _clean_env()
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
          str(dists["wheel"])], target, env)
    _run([sys.executable, "-m", "compileall", "-q", "-b", str(target / "tokenmill")], target, env)
    for source in (target / "tokenmill").rglob("*.py"):
        source.unlink()
    env["PYTHONPATH"] = str(target)
    probe = _run([sys.executable, "-c", "import tokenmill; print(tokenmill.__file__)"], target, env).stdout
    assert probe.strip() == str(target / "tokenmill" / "__init__.pyc"), probe
    return env


def test_help_reads_no_source_file(sourceless, tmp_path):
    """The top-level help and a command's help work from a sourceless install (only .pyc files)."""
    out = _run([sys.executable, "-m", "tokenmill", "--help"], tmp_path, sourceless).stdout
    assert "prepare" in out and "verify" in out
    assert "DIRECTORY" in _run([sys.executable, "-m", "tokenmill", "verify", "--help"], tmp_path, sourceless).stdout


def test_prepare_help_reads_no_source_file(sourceless, tmp_path):
    """prepare --help works from a sourceless install: its help texts must not come from source files."""
    out = _run([sys.executable, "-m", "tokenmill", "prepare", "--help"], tmp_path, sourceless).stdout
    assert "--trainpref" in out and "Training prefixes" in out
