"""The package is light: public names load on first use, the version lives in a leaf module, and the
modules below the front door never import the package (so ``import tokenmill.store.reader`` and
``tokenmill --version`` pay only for what they run)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tokenmill
from tokenmill._version import __version__
from tokenmill.cli import COMMANDS, SUMMARIES

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tokenmill"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on this checkout's sources."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


def _loaded_after(statement: str) -> set[str]:
    """The modules ``statement`` leaves in ``sys.modules`` of a fresh interpreter."""
    done = _python(f"import sys\n{statement}\nprint('\\n'.join(sys.modules))")
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_every_public_name_resolves_and_is_listed():
    for name in tokenmill.__all__:
        assert getattr(tokenmill, name) is not None, name
    assert set(tokenmill.__all__) <= set(dir(tokenmill))
    assert tokenmill.__version__ == __version__
    from tokenmill import batches, loader, open, prepare  # the front door's own spelling

    assert (prepare, open, batches, loader) == (tokenmill.prepare, tokenmill.open, tokenmill.batches, tokenmill.loader)
    assert tokenmill.open.__module__ == "tokenmill.front"
    assert tokenmill.BatchConfig.__module__ == "tokenmill.batching.config"


def test_subpackages_and_unknown_names():
    assert tokenmill.store.IndexedDataset is tokenmill.IndexedDataset
    with pytest.raises(AttributeError, match="no_such_name"):
        tokenmill.no_such_name  # noqa: B018


def test_import_is_light():
    loaded = _loaded_after("import tokenmill")
    assert {m for m in loaded if m.startswith("tokenmill")} == {"tokenmill", "tokenmill._version"}
    reader = _loaded_after("import tokenmill.store.reader")
    ours = sorted(m for m in reader if m == "tokenmill" or m.startswith("tokenmill."))
    assert len(ours) <= 15, ours
    assert "click" not in reader and "tokenmill.prepare" not in reader


def test_first_use_loads_the_name():
    loaded = _loaded_after("import tokenmill\ntokenmill.BatchConfig")
    assert "tokenmill.batching.config" in loaded and "tokenmill.prepare" not in loaded


def test_settings_do_not_need_click():
    assert "click" not in _loaded_after("import tokenmill.settings")


def test_version_command_runs_without_the_library():
    done = _python("import sys\nfrom tokenmill.cli import main\ntry:\n    main(['--version'])\n"
                   "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('tokenmill')))")
    assert done.returncode == 0, done.stderr
    assert f"tokenmill, version {__version__}" in done.stdout
    modules = done.stdout.strip().splitlines()[-1]
    assert "tokenmill.prepare" not in modules and "tokenmill.store" not in modules


def test_no_module_below_the_front_door_imports_the_package():
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.parent == SRC and path.name in ("__init__.py", "__main__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            bare = isinstance(node, ast.ImportFrom) and node.module == "tokenmill" and node.level == 0
            plain = isinstance(node, ast.Import) and any(alias.name == "tokenmill" for alias in node.names)
            if bare or plain:
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def test_pyproject_reads_the_version_from_the_leaf_module():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tokenmill._version.__version__"}


def test_loader_without_torch_names_the_extra():
    done = _python("import sys\nsys.modules['torch'] = None\nimport tokenmill\n"
                   "tokenmill.loader('nowhere')")
    assert done.returncode != 0
    assert "pip install 'tokenmill[torch]'" in done.stderr.strip().splitlines()[-1]


def test_help_lists_commands_without_importing_them():
    done = _python("import sys\nfrom tokenmill.cli import main\ntry:\n    main(['--help'])\n"
                   "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('tokenmill')))")
    assert done.returncode == 0, done.stderr
    assert "tokenmill.commands" not in done.stdout.strip().splitlines()[-1]
    for name, summary in SUMMARIES.items():
        assert " ".join(summary.split()[:4]) in done.stdout, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_summary_is_the_commands_own(name):
    module, attribute = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert SUMMARIES[name] == " ".join(command.help.split("\n\n", 1)[0].split())


def test_functions_keep_their_names_after_the_subpackages_load():
    done = _python("import tokenmill\nimport tokenmill.prepare, tokenmill.loader\n"
                   "from tokenmill.prepare import PrepareConfig\n"
                   "print(tokenmill.prepare.__module__, tokenmill.loader.__module__, PrepareConfig.__name__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tokenmill.front", "tokenmill.front", "PrepareConfig"]


def test_a_build_takes_the_leaf_modules_version():
    pyprojecttoml = pytest.importorskip("setuptools.config.pyprojecttoml")
    config = pyprojecttoml.read_configuration(ROOT / "pyproject.toml", expand=True)
    assert config["project"]["version"] == __version__
