"""The UI in a real browser: `dagster dev` on 127.0.0.1 and the system's headless Chromium.

One `dagster dev` serves every test of this module. Chromium is driven through the system's
chromedriver (``Service('/usr/bin/chromedriver')``), so Selenium downloads nothing at run time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGSTER = Path(sys.executable).parent / "dagster"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
CHROMEDRIVER = "/usr/bin/chromedriver"
LOCATION = "tradingmem_assets"
GROUPS = ("landing", "evaluation", "role_memory", "learning", "profile", "audit", "migration")
LOAD_TIMEOUT_S = 120
SCREENSHOTS = REPO / "data" / "screenshots"  # git-ignored, like all of data/
PAGE_TIMEOUT_S = 90  # generous: CI shares two cores with the rest of the suite
CLICK_ATTEMPTS = 3
CLICK_TAKES_S = 30  # how long one click may take to reach the instance before it is tried again
HOMES: dict[str, Path] = {}  # the webserver's DAGSTER_HOME, by its address
INSTANCE_YAML = """\
telemetry:
  enabled: false
concurrency:
  runs:
    max_concurrent_runs: 1
"""

if CHROMIUM is None or not Path(CHROMEDRIVER).exists():
    pytest.skip(
        "headless Chromium is not installed (Debian packages 'chromium' and 'chromium-driver'; "
        ".ci/run installs them when it can)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the dev extra) is not installed")
from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# the page re-renders while its GraphQL queries come back: an element found may be replaced
REDRAWN = (NoSuchElementException, StaleElementReferenceException)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _default_signals() -> None:
    # a non-interactive parent may ignore SIGINT, and dagster dev shuts down through its SIGINT handler
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _location_status(base: str) -> str | None:
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
    query += "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            entries = json.load(response)["data"]["workspaceOrError"]["locationEntries"]
    except (urllib.error.URLError, ConnectionError, TimeoutError, KeyError, TypeError, ValueError):
        return None
    for entry in entries:
        if entry["name"] == LOCATION and entry["loadStatus"] == "LOADED":
            loaded = entry["locationOrLoadError"] or {}
            if loaded.get("__typename") == "PythonError":
                pytest.fail(f"the code location failed to load: {loaded.get('message')}")
            return "LOADED"
    return "LOADING"


@pytest.fixture(scope="module")
def webserver(tmp_path_factory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("ui")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(INSTANCE_YAML, encoding="utf-8")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRADINGMEM_", "DAGSTER_"))}
    env.update(
        DAGSTER_HOME=str(home),
        TRADINGMEM_DB=str(root / "tradingmem.duckdb"),
        TRADINGMEM_LANDING_DIR=str(root / "landing"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    log_path = root / "dagster_dev.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(DAGSTER), "dev", "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO,  # the repo root's workspace.yaml, as an operator runs it
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the teardown signals all of it
            preexec_fn=_default_signals,
        )
    base = f"http://127.0.0.1:{port}"
    HOMES[base] = home
    try:
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while _location_status(base) != "LOADED":
            if proc.poll() is not None:
                pytest.fail(f"dagster dev exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"code location not loaded after {LOAD_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(1)
        yield base
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # dagster dev shuts its webserver, daemon and code servers down
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(webserver) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, base: str, path: str, *texts: str) -> str:
    """Open a UI page and wait until every text shows; returns the page's visible text."""
    driver.get(base + path)
    seen = {"text": ""}

    def shows_all(d) -> bool:
        seen["text"] = d.find_element(By.TAG_NAME, "body").text
        return all(t in seen["text"] for t in texts)

    try:
        WebDriverWait(driver, PAGE_TIMEOUT_S, poll_frequency=0.5).until(shows_all)
    except TimeoutException:
        missing = [t for t in texts if t not in seen["text"]]
        pytest.fail(
            f"{path}: {missing} not shown after {PAGE_TIMEOUT_S} s; page text:\n{seen['text'][:2000]}"
        )
    for skip in driver.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
        skip.click()  # the first-visit newsletter dialog hides the page in screenshots
    return seen["text"]


def toggle(driver, name: str):
    """The on/off switch of an automation row of the Automation page.

    The row is the name's nearest ancestor holding a checkbox (its selection box, drawn with the
    row); the switch is the row's ``Switch``-styled checkbox, which the page draws only once the
    row's schedule or sensor state has loaded. Until then this raises NoSuchElementException
    (a wait retries it): picking "the row's last checkbox" then would pick a neighbour's selection
    box, and a click on it starts nothing.
    """
    label = driver.find_element(By.XPATH, f"//span[normalize-space(text())='{name}']")
    row = label.find_element(By.XPATH, "./ancestor::*[.//input[@type='checkbox']][1]")
    return row.find_element(By.XPATH, ".//label[contains(@class, 'Switch')]/input[@type='checkbox']")


def wait_for_switch(driver, name: str):
    """The row's switch, once drawn (the page's text shows before the switches do)."""
    return WebDriverWait(driver, PAGE_TIMEOUT_S, poll_frequency=0.5, ignored_exceptions=REDRAWN).until(
        lambda d: toggle(d, name)
    )


def toggle_is_on(driver, name: str) -> bool:
    return toggle(driver, name).is_selected()


def instigator_status(base: str, name: str) -> str:
    """The schedule's stored state, as the GraphQL API reports it."""
    query = (
        '{ scheduleOrError(scheduleSelector: {repositoryName: "__repository__", '
        f'repositoryLocationName: "{LOCATION}", scheduleName: "{name}"}}) '
        "{ ... on Schedule { scheduleState { status } } } }"
    )
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["data"]["scheduleOrError"]["scheduleState"]["status"]


def screenshot(driver, name: str) -> Path:
    """Save what the browser shows under data/screenshots/ and check it is a real picture."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / name
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    return shot


def test_the_catalog_shows_every_asset_group(browser, webserver):
    open_page(browser, webserver, "/asset-groups", *GROUPS)
    screenshot(browser, "asset_groups.png")


def test_an_assets_checks_page_lists_its_checks(browser, webserver):
    text = open_page(
        browser,
        webserver,
        "/assets/role_cases?view=checks",
        "Checks (",
        "role_cases_invariants",
        "every_role_decision_exactly_once",
    )
    assert "blocking asset check" in text
    screenshot(browser, "role_cases_checks.png")


def test_automation_page_lists_the_schedules_and_sensors_stopped_by_default(browser, webserver):
    open_page(
        browser,
        webserver,
        "/automation",
        "trading_memory_schedule",
        "warehouse_checks_schedule",
        "landing_sensor",
        "At 02:00 AM UTC",
    )
    for name in ("trading_memory_schedule", "warehouse_checks_schedule", "landing_sensor"):
        assert not wait_for_switch(browser, name).is_selected(), f"{name} should start stopped"
    assert wait_for_switch(browser, "audit_isolation_sensor").is_selected()  # the watchdog runs by default
    screenshot(browser, "automation.png")


def stored_status(home: Path, name: str) -> str | None:
    """The schedule's state as the instance stores it (None: never switched, its default applies)."""
    import dagster as dg
    from dagster._core.scheduler.instigation import InstigatorType

    with dg.DagsterInstance.from_config(str(home)) as instance:
        states = instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
    found = [state.status.value for state in states if state.instigator_name == name]
    return found[0] if found else None


def click_switch_until_running(driver, base: str, name: str) -> int:
    """Click the schedule's switch on the Automation page until GraphQL says it runs.

    Each attempt opens the page, waits until the row's own switch is drawn and enabled, clicks it
    if it is still off, then waits for the state GraphQL reports. Should a click still get lost
    (the page re-rendering under it), the next attempt reloads and clicks again. Returns the
    number of clicks it took.
    """
    for attempt in range(1, CLICK_ATTEMPTS + 1):
        open_page(driver, base, "/automation", name)
        switch = WebDriverWait(driver, PAGE_TIMEOUT_S, poll_frequency=0.5, ignored_exceptions=REDRAWN).until(
            lambda d: (sw := toggle(d, name)).is_enabled() and sw
        )
        if not switch.is_selected():
            # a click through JavaScript: a dialog or toast drawn over the row must not swallow it
            driver.execute_script("arguments[0].click();", switch)
        try:
            WebDriverWait(driver, CLICK_TAKES_S, poll_frequency=0.5).until(
                lambda _d: instigator_status(base, name) == "RUNNING"
            )
            return attempt
        except TimeoutException:
            continue
    pytest.fail(f"{CLICK_ATTEMPTS} clicks on the switch did not start {name}")


def test_the_toggle_on_the_automation_page_starts_a_schedule(browser, webserver):
    open_page(browser, webserver, "/automation", "trading_memory_schedule")
    assert instigator_status(webserver, "trading_memory_schedule") == "STOPPED"
    assert stored_status(HOMES[webserver], "trading_memory_schedule") is None  # its default: stopped
    clicks = click_switch_until_running(browser, webserver, "trading_memory_schedule")
    print(f"the switch started trading_memory_schedule after {clicks} click(s)")
    assert clicks == 1, "the first click on the row's drawn switch starts the schedule"
    # the instance stores the switch's state, and a fresh page shows the switch on
    assert stored_status(HOMES[webserver], "trading_memory_schedule") == "RUNNING"
    open_page(browser, webserver, "/automation", "trading_memory_schedule")
    WebDriverWait(browser, PAGE_TIMEOUT_S, ignored_exceptions=REDRAWN).until(
        lambda d: toggle_is_on(d, "trading_memory_schedule")
    )
    # the click hit only its own row (each row's switch is drawn once its own state has loaded)
    assert not wait_for_switch(browser, "warehouse_checks_schedule").is_selected()


def test_the_schedule_page_names_its_job_and_cron_and_has_its_switch(browser, webserver):
    open_page(
        browser,
        webserver,
        f"/locations/{LOCATION}/schedules/trading_memory_schedule",
        "trading_memory_schedule",
        "trading_memory_job",
        "0 2 * * *",
    )
    switches = browser.find_elements(By.XPATH, "//label[contains(@class, 'Switch')]/input[@type='checkbox']")
    assert switches, "no on/off switch on the schedule page"
