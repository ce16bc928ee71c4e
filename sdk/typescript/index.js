// The ralph-loop plugin protocol, version 1 (types in index.d.ts). ralph-loop puts this
// package on NODE_PATH for every hook it runs, so `require("ralph-plugin")` works in any
// plugin without an install.
"use strict";

const PROTOCOL = 1;

function response(action, extra) {
  const out = { protocol: PROTOCOL, action };
  for (const [key, value] of Object.entries(extra)) {
    if (value !== undefined && !(Array.isArray(value) && value.length === 0)) out[key] = value;
  }
  return out;
}

const EXTENSIONS = {
  ".py": "python", ".pyi": "python",
  ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
  ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
  ".rs": "rust",
};

// The target's language: the request's, else guessed from the target's extension.
function language(request) {
  if (request.language) return request.language.toLowerCase();
  const dot = request.target.lastIndexOf(".");
  return dot < 0 ? undefined : EXTENSIONS[request.target.slice(dot).toLowerCase()];
}

const pass = (notes) => response("pass", { notes });
const change = (code, notes) => response("change", { code, notes });
const veto = (reasons, notes) => response("veto", { reasons, notes });

// A failure as told on stderr: the stack's frames, then the error itself on the last line, as
// Python's traceback ends. ralph-loop's warnings and a stop's reason quote that last line.
function told(error) {
  const stack = error && typeof error.stack === "string" ? error.stack : "";
  const frames = stack.split("\n").filter((line) => /^\s+at /.test(line));
  return [...frames, String(error)].join("\n");
}

async function run(handler) {
  try {
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (request.protocol !== PROTOCOL) {
      throw new Error(`this plugin speaks protocol ${PROTOCOL}, the request is ${request.protocol}`);
    }
    const answer = (await handler(request)) || pass();
    process.stdout.write(JSON.stringify(answer) + "\n", () => process.exit(0));
  } catch (error) {
    process.stderr.write(`${told(error)}\n`);
    process.exit(1);
  }
}

module.exports = { PROTOCOL, language, pass, change, veto, run };
