"""The ralph-loop plugin protocol, version 1, for plugins written in Python.

A plugin reads one request on stdin and prints one response on stdout. With this module:

    import ralph_plugin as rp

    def handle(req: rp.Request):
        if req.stage == "on_after_gen" and req.code is not None:
            return rp.change(req.code.rstrip() + "\\n")
        return rp.pass_()

    rp.run(handle)

ralph-loop puts this module on PYTHONPATH for every hook it runs, so a plugin needs nothing
installed; `pip install ./sdk/python` installs it elsewhere. The types follow
sdk/schema/plugin-protocol.v1.json, which is generated from ralph-loop's own.
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

PROTOCOL = 1

STAGES = (
    "on_before_gen",
    "on_after_gen",
    "on_test_fail",
    "on_before_success",
    "on_success",
    "pre_task",
    "post_task",
)


@dataclass
class Failure:
    id: str
    message: Optional[str] = None


@dataclass
class Tests:
    command: str
    passed: int
    failed: int
    skipped: int
    criteria_met: bool
    summary: str
    failures: list[Failure] = field(default_factory=list)


@dataclass
class Budget:
    spent_usd: float
    max_cost_usd: float


@dataclass
class Task:
    """A task of a batch, of the agent's inbox or of a loop's list (at pre_task and post_task)."""

    id: str
    name: str
    kind: str
    targets: list[str]
    iterations: int
    cost_usd: float
    status: Optional[str] = None
    reason: Optional[str] = None
    description: str = ""


@dataclass
class Request:
    """What the plugin is told at a stage (see the schema for each field)."""

    protocol: int
    stage: str
    hook: str
    session_id: str
    iteration: int
    project_dir: str
    target: str
    budget: Budget
    language: Optional[str] = None
    code: Optional[str] = None
    tests: Optional[Tests] = None
    config: Any = None
    task: Optional[Task] = None

    @staticmethod
    def parse(data: dict) -> "Request":
        tests = data.get("tests")
        if tests is not None:
            tests = Tests(
                **{k: v for k, v in tests.items() if k != "failures"},
                failures=[Failure(**f) for f in tests.get("failures", [])],
            )
        task = data.get("task")
        return Request(
            **{k: v for k, v in data.items() if k not in ("tests", "budget", "task")},
            tests=tests,
            budget=Budget(**data["budget"]),
            task=Task(**task) if task is not None else None,
        )


@dataclass
class Response:
    action: str
    code: Optional[str] = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        out: dict[str, Any] = {"protocol": PROTOCOL, "action": self.action}
        if self.code is not None:
            out["code"] = self.code
        if self.reasons:
            out["reasons"] = self.reasons
        if self.notes:
            out["notes"] = self.notes
        return json.dumps(out)


EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescript",
    ".rs": "rust",
}


def language(req: Request) -> Optional[str]:
    """The target's language: the request's, else guessed from the target's extension."""
    if req.language:
        return req.language.lower()
    suffix = req.target[req.target.rfind(".") :].lower() if "." in req.target else ""
    return EXTENSIONS.get(suffix)


def pass_(notes: Optional[list[str]] = None) -> Response:
    """Nothing to change or stop; `notes` go to the Artisan's next prompt."""
    return Response("pass", notes=list(notes or []))


def change(code: str, notes: Optional[list[str]] = None) -> Response:
    """Replace the proposal with `code`, the whole file (at on_after_gen only)."""
    return Response("change", code=code, notes=list(notes or []))


def veto(reasons: list[str], notes: Optional[list[str]] = None) -> Response:
    """Stop what the stage guards (at on_before_success, the success); the reasons go to the
    Artisan."""
    return Response("veto", reasons=list(reasons), notes=list(notes or []))


def run(handler: Callable[[Request], Optional[Response]]) -> None:
    """Reads the request, calls `handler`, prints its response (None passes) and exits.

    A handler that raises makes the plugin fail (exit 1, the traceback on stderr): the hook's
    `on_failure` decides what that does."""
    try:
        data = json.load(sys.stdin)
        if data.get("protocol") != PROTOCOL:
            raise ValueError(
                f"this plugin speaks protocol {PROTOCOL}, the request is {data.get('protocol')}"
            )
        response = handler(Request.parse(data)) or pass_()
    except Exception:  # the plugin's failure, told on stderr
        traceback.print_exc()
        sys.exit(1)
    sys.stdout.write(response.to_json() + "\n")
    sys.stdout.flush()
    sys.exit(0)
