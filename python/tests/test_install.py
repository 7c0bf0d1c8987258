"""The package as pip installs it: into a virtual environment (system site packages, for
torch and pytest; no network), from a copy of python/, with py.typed and the version of
vlplan.__version__; then the view, contract and README tests run against it."""
import os
import shutil
import subprocess
import sys

from conftest import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))


def run(*cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_pip_install_into_a_venv_and_test_it(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build"))
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv))
    py = str(venv / "bin" / "python")
    run(py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
        str(src), cwd=str(tmp_path))
    out = run(py, "-c", "import os, vlplan, importlib.metadata as m; "
              "d = os.path.dirname(vlplan.__file__); "
              "print(d); print(vlplan.__version__ == m.version('vlplan')); "
              "print(os.path.exists(os.path.join(d, 'py.typed')))", cwd=str(tmp_path))
    where, same, typed = out.split()
    assert where.startswith(str(venv)) and same == "True" and typed == "True", out
    env = dict(os.environ, VLPLAN_TEST_INSTALLED="1", PYTHONDONTWRITEBYTECODE="1")
    tests = [os.path.join(HERE, t) for t in ("test_view.py", "test_contract.py",
                                              "test_readme.py", "test_torch.py")]
    out = run(py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "--basetemp", str(tmp_path / "t"), *tests, cwd=str(tmp_path), env=env)
    assert " passed" in out and "failed" not in out, out
