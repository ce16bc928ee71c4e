"""formatter: formats the Artisan's proposal before it is checked, reviewed and written.

A ralph-loop plugin (protocol 1) for the `on_after_gen` stage. It pipes the proposal through
the language's formatter and answers `change` with the result when it differs:

- python: `ruff format` (`ruff` on PATH, else `python3 -m ruff`)
- javascript, typescript: prettier (the project's `node_modules/.bin/prettier`, else on PATH)
- rust: `rustfmt --edition 2021`

`config.commands` overrides the command of a language, e.g.
`{python: "black -q --stdin-filename {file} -"}`: the command reads the code on stdin and
prints the formatted code on stdout; `{file}` is the target's path in the project.

Another language passes with a note. A formatter that is missing, or that fails on the code
(a syntax error), makes the plugin exit 1 with one line on stderr: the entry's `on_failure`
decides what that does.
"""

import os
import shlex
import shutil
import subprocess
import sys

import ralph_plugin as rp


def fail(message):
    """Ends the plugin as a failure, with one line on stderr."""
    sys.stderr.write(f"formatter: {message}\n")
    sys.exit(1)


def python_command(target):
    if shutil.which("ruff"):
        return ["ruff", "format", "--stdin-filename", target, "-"]
    # ruff installed as a module of the Python that runs this plugin (`python3 -m ruff`).
    probe = subprocess.run(
        [sys.executable, "-m", "ruff", "--version"],
        check=False,
        capture_output=True,
        text=True,
    )
    if probe.returncode == 0:
        return [sys.executable, "-m", "ruff", "format", "--stdin-filename", target, "-"]
    fail("ruff is not installed: `pip install ruff`, or set config.commands.python")


def prettier_command(project_dir, target):
    local = os.path.join(project_dir, "node_modules", ".bin", "prettier")
    if os.path.exists(local):
        return [local, "--stdin-filepath", target]
    if shutil.which("prettier"):
        return ["prettier", "--stdin-filepath", target]
    fail(
        "prettier is not installed: `npm install --save-dev prettier` in the project, "
        "or set config.commands.javascript / typescript"
    )


def rust_command(_target):
    if shutil.which("rustfmt"):
        return ["rustfmt", "--edition", "2021", "--emit", "stdout"]
    fail("rustfmt is not installed: `rustup component add rustfmt`")


def command_for(language, req):
    config = req.config if isinstance(req.config, dict) else {}
    override = (config.get("commands") or {}).get(language)
    if override:
        words = override if isinstance(override, list) else shlex.split(override)
        return [w.replace("{file}", req.target) for w in words]
    if language == "python":
        return python_command(req.target)
    if language in ("javascript", "typescript"):
        return prettier_command(req.project_dir, req.target)
    if language == "rust":
        return rust_command(req.target)
    return None


def handle(req: rp.Request):
    if req.stage != "on_after_gen" or req.code is None:
        return rp.pass_()
    language = rp.language(req)
    command = command_for(language, req)
    if command is None:
        return rp.pass_(
            [f"formatter: no formatter for {language or 'this file'}; left as it is"]
        )
    try:
        done = subprocess.run(
            command,
            input=req.code,
            check=False,
            capture_output=True,
            text=True,
            cwd=req.project_dir,
            timeout=50,
        )
    except OSError as e:
        hint = ""
        if isinstance(e, PermissionError) and os.path.islink(
            os.path.join(req.project_dir, "node_modules")
        ):
            hint = " (node_modules links out of the project: add it to the entry's read_paths)"
        fail(f"cannot run {command[0]}: {e}{hint}")
    except subprocess.TimeoutExpired:
        fail(f"{shlex.join(command)} took more than 50 s")
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[:500] or f"exit {done.returncode}"
        fail(f"{os.path.basename(command[0])} failed on {req.target}: {said}")
    formatted = done.stdout
    if not formatted.strip():
        fail(f"{os.path.basename(command[0])} printed nothing for {req.target}")
    if formatted == req.code:
        return rp.pass_()
    return rp.change(formatted)


if __name__ == "__main__":
    rp.run(handle)
