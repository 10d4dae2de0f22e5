"""Each command's module loads only when it runs, and the map of commands to modules is complete."""

import pkgutil
import subprocess
import sys

import tradingmem_assets.cli as cli
from tradingmem_assets.cli import COMMANDS, registered_commands


def test_every_module_that_registers_commands_is_in_the_map_and_the_map_names_only_real_commands():
    modules = [
        m.name
        for m in pkgutil.iter_modules(cli.__path__)
        if m.name not in ("common",) and not m.name.startswith("_")
    ]
    found = {name: module for module in modules for name in registered_commands(module)}
    assert found == COMMANDS


def test_a_cold_recall_imports_neither_dagster_nor_scikit_learn(tmp_path):
    probe = (
        "import sys\n"
        "from tradingmem_assets.cli import main\n"
        "try:\n"
        "    main(['recall', 'trend', '--role', 'trend_follower', '--json'], standalone_mode=False)\n"
        "except Exception as exc:\n"
        "    print('error:', type(exc).__name__, file=sys.stderr)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'sklearn', 'scipy', 'pandera'}))\n"
    )
    env = {"ROLE_MEMORY_MODE": "active", "TRADINGMEM_DB": str(tmp_path / "absent.duckdb"), "PATH": ""}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
