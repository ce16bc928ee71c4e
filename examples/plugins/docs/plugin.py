"""docs: writes the API docs of the fixed file once the run succeeds.

A ralph-loop plugin (protocol 1) for the `on_success` stage. It writes
`<config.out_dir>/<target's stem>.md` (default `docs/api/`) in the project:

- Python, read with `ast`: the module's docstring, then each public function and class (and a
  class's public methods), with its signature and docstring.
- JavaScript and TypeScript: each `function`, `export function` and `export const x = (...)`
  with the JSDoc block before it.
- Rust: each `pub fn` with the `///` lines before it.

It always passes: the run has already succeeded.
"""

import ast
import os
import re
import sys

import ralph_plugin as rp


def fail(message):
    """Ends the plugin as a failure, with one line on stderr."""
    sys.stderr.write(f"docs: {message}\n")
    sys.exit(1)


def fenced(code, language):
    return [f"```{language}", code, "```", ""]


# Python ------------------------------------------------------------------------------------


def signature(node):
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    text = f"{prefix} {node.name}({ast.unparse(node.args)})"
    if node.returns is not None:
        text += f" -> {ast.unparse(node.returns)}"
    return text


def class_line(node):
    bases = [ast.unparse(b) for b in node.bases] + [
        ast.unparse(k) for k in node.keywords
    ]
    return f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"


def public(node):
    return not node.name.startswith("_")


def python_docs(code, target):
    try:
        module = ast.parse(code, filename=target)
    except SyntaxError as e:
        fail(f"cannot parse {target}: {e}")
    out = []
    doc = ast.get_docstring(module)
    if doc:
        out += [doc, ""]
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in module.body:
        if isinstance(node, functions) and public(node):
            out += [f"## `{node.name}`", ""] + fenced(signature(node), "python")
            out += [ast.get_docstring(node) or "_No docstring._", ""]
        elif isinstance(node, ast.ClassDef) and public(node):
            out += [f"## class `{node.name}`", ""] + fenced(class_line(node), "python")
            out += [ast.get_docstring(node) or "_No docstring._", ""]
            for item in node.body:
                if isinstance(item, functions) and (
                    public(item) or item.name == "__init__"
                ):
                    out += [f"### `{node.name}.{item.name}`", ""]
                    out += fenced(signature(item), "python")
                    out += [ast.get_docstring(item) or "_No docstring._", ""]
    return out


# JavaScript and TypeScript -----------------------------------------------------------------

JS_ITEM = re.compile(
    r"(?P<doc>/\*\*(?:(?!\*/).)*?\*/\s*)?"
    r"^[ \t]*(?P<sig>(?:export\s+(?:default\s+)?)?(?:async\s+)?function\s*\*?\s*(?P<fn>[\w$]+)\s*"
    r"(?:<[^>{]*>)?\s*\([^)]*\)[^{;]*"
    r"|export\s+const\s+(?P<const>[\w$]+)\s*(?::[^=]+)?=\s*(?:async\s+)?\([^)]*\)[^={]*=>)",
    re.MULTILINE | re.DOTALL,
)


def jsdoc_text(block):
    """A JSDoc block's text; its tags (`@param`, `@returns`, ...) as a list."""
    lines = []
    for line in block.strip()[3:-2].splitlines():
        line = re.sub(r"^\s*\*\s?", "", line).rstrip()
        if line.startswith("@"):
            if lines and lines[-1] and not lines[-1].startswith("- "):
                lines.append("")
            line = f"- `{line}`"
        lines.append(line)
    return "\n".join(lines).strip()


def js_docs(code, language):
    out = []
    for m in JS_ITEM.finditer(code):
        name = m.group("fn") or m.group("const")
        sig = " ".join(m.group("sig").split())
        out += [f"## `{name}`", ""] + fenced(sig, language)
        out += [jsdoc_text(m.group("doc")) if m.group("doc") else "_No JSDoc._", ""]
    return out


# Rust --------------------------------------------------------------------------------------


def rust_docs(code):
    out = []
    lines = code.splitlines()
    doc, i = [], 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("///"):
            doc.append(stripped[3:].removeprefix(" "))
        elif stripped.startswith(("#[", "#![")):
            pass  # attributes between the docs and the item
        elif re.match(
            r"pub(\([^)]*\))?\s+(const\s+|async\s+|unsafe\s+|extern\s+\"\w+\"\s+)*fn\s",
            stripped,
        ):
            sig = [stripped]
            while not re.search(r"[{;]\s*$", sig[-1]) and i + 1 < len(lines):
                i += 1
                sig.append(lines[i].strip())
            text = " ".join(sig)
            text = re.sub(r"\s*[{;]\s*$", "", text).replace("( ", "(")
            text = re.sub(r",?\s*\)", ")", text).rstrip(",")
            name = re.search(r"fn\s+(\w+)", text).group(1)
            out += [f"## `{name}`", ""] + fenced(text, "rust")
            out += ["\n".join(doc) if doc else "_No doc comment._", ""]
            doc = []
        else:
            doc = []
        i += 1
    return out


# The plugin --------------------------------------------------------------------------------


def handle(req: rp.Request):
    if req.stage != "on_success":
        return rp.pass_()
    config = req.config if isinstance(req.config, dict) else {}
    out_dir = str(config.get("out_dir", "docs/api"))
    path = os.path.join(req.project_dir, req.target)
    code = req.code
    if code is None:
        with open(path, encoding="utf-8") as f:
            code = f.read()
    language = rp.language(req) or ""
    if language == "python":
        body = python_docs(code, req.target)
    elif language in ("javascript", "typescript"):
        body = js_docs(code, language)
    elif language == "rust":
        body = rust_docs(code)
    else:
        return rp.pass_([f"docs: no API docs for {language or req.target}"])
    stem = os.path.splitext(os.path.basename(req.target))[0]
    header = [
        f"# API: `{req.target}`",
        "",
        (
            f"_Generated by the ralph-loop docs plugin at session `{req.session_id}`, "
            f"iteration {req.iteration}. Edits are overwritten at the next successful run._"
        ),
        "",
    ]
    if not body:
        body = ["_Nothing public._", ""]
    folder = os.path.join(req.project_dir, out_dir)
    os.makedirs(folder, exist_ok=True)
    written = os.path.join(folder, f"{stem}.md")
    with open(written, "w", encoding="utf-8") as f:
        f.write("\n".join(header + body).rstrip() + "\n")
    return rp.pass_([f"docs: wrote {os.path.relpath(written, req.project_dir)}"])


if __name__ == "__main__":
    rp.run(handle)
