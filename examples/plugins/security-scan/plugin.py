"""security-scan: vetoes a success while the fixed file has a serious security finding.

A ralph-loop plugin (protocol 1) for the `on_before_success` stage: the tests pass, and before
the run may succeed the target (on disk at that stage) is scanned. Python files are scanned
with bandit (`python3 -m bandit -f json -q FILE`). Each finding at or above `config.fail_on`
(LOW, MEDIUM or HIGH; default HIGH) becomes a reason of a `veto`: the success does not go
through and the reasons go to the Artisan, who tries again. Lower findings go as notes.

Other languages pass with a note: no scanner is configured for them. bandit missing or
failing makes the plugin exit 1 with one line on stderr: the entry's `on_failure` decides.
"""

import json
import os
import subprocess
import sys

import ralph_plugin as rp

SEVERITIES = ("LOW", "MEDIUM", "HIGH")


def fail(message):
    """Ends the plugin as a failure, with one line on stderr."""
    sys.stderr.write(f"security-scan: {message}\n")
    sys.exit(1)


def rank(severity):
    severity = str(severity).upper()
    return SEVERITIES.index(severity) if severity in SEVERITIES else 0


def bandit(req, threshold):
    """Scans the target with bandit: the reasons to veto and the notes."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bandit", "-f", "json", "-q", req.target],
            check=False,
            capture_output=True,
            text=True,
            cwd=req.project_dir,
            timeout=100,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        fail(f"cannot run bandit: {e}")
    if "No module named bandit" in done.stderr:
        fail("bandit is not installed: `python3 -m pip install bandit`")
    # bandit exits 1 when it finds issues: its report is what counts.
    try:
        report = json.loads(done.stdout)
    except ValueError:
        said = (
            " ".join(done.stderr.split())[:500] or f"exit {done.returncode}, no report"
        )
        fail(f"bandit failed on {req.target}: {said}")
    errors = report.get("errors") or []
    if errors:
        fail(
            f"bandit could not scan {req.target}: {errors[0].get('reason', errors[0])}"
        )
    reasons, notes = [], []
    for issue in report.get("results", []):
        severity = str(issue.get("issue_severity", "")).upper()
        line = (
            f"bandit {issue.get('test_id')} ({severity}): {issue.get('issue_text')} "
            f"at {req.target}:{issue.get('line_number')} — {issue.get('more_info')}"
        )
        (reasons if rank(severity) >= threshold else notes).append(line)
    return reasons, notes


def handle(req: rp.Request):
    config = req.config if isinstance(req.config, dict) else {}
    fail_on = str(config.get("fail_on", "HIGH")).upper()
    if fail_on not in SEVERITIES:
        fail(f"config.fail_on is {fail_on!r}; it is one of LOW, MEDIUM, HIGH")
    language = (req.language or "").lower()
    if not language and req.target.endswith((".py", ".pyi")):
        language = "python"
    if language != "python":
        return rp.pass_(
            [f"security-scan: no scanner is configured for {language or req.target}"]
        )
    if not os.path.isfile(os.path.join(req.project_dir, req.target)):
        fail(f"{req.target} is not in the project")
    reasons, notes = bandit(req, rank(fail_on))
    if reasons:
        return rp.veto(reasons, notes)
    return rp.pass_(notes)


if __name__ == "__main__":
    rp.run(handle)
