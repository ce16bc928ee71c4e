// The ralph-loop plugin protocol, version 1: one Request on stdin, one Response on stdout.
// These types follow sdk/schema/plugin-protocol.v1.json, generated from ralph-loop's own
// (a test keeps them in step).

export const PROTOCOL: 1;

export type Stage =
  | "on_before_gen"
  | "on_after_gen"
  | "on_test_fail"
  | "on_before_success"
  | "on_success"
  | "pre_task"
  | "post_task";

export interface Failure {
  id: string;
  message?: string | null;
}

export interface Tests {
  command: string;
  passed: number;
  failed: number;
  skipped: number;
  /** Whether every success criterion (tests, coverage, lint, ...) is met. */
  criteria_met: boolean;
  summary: string;
  /** The failing tests (at most 20), each with its message. */
  failures: Failure[];
}

export interface Budget {
  spent_usd: number;
  max_cost_usd: number;
}

/** A task of a batch, of the agent's inbox or of a loop's list (at pre_task and post_task). */
export interface Task {
  /** Its number in the batch, from 1; the spec's inbox id; the loop task's id, else its text. */
  id: string;
  /** The spec's path, or the file's, relative to the project; the loop task's text. */
  name: string;
  /** spec, file or task (a loop's). */
  kind: string;
  /** What it asks: a spec's first line, a loop task's text and the lines under it. */
  description?: string;
  /** The files it fixes, relative to the project. */
  targets: string[];
  /** At post_task: how it ended (success, max_iterations, error, ...; a loop task: completed). */
  status?: string | null;
  /** At post_task: why it did not succeed, when it did not. */
  reason?: string | null;
  iterations: number;
  cost_usd: number;
}

/** What a hook is told at a stage. */
export interface Request {
  protocol: 1;
  stage: Stage;
  /** The hook's name, as the config gives it. */
  hook: string;
  session_id: string;
  /** The iteration under way (0 before the first). */
  iteration: number;
  /** The project's root, absolute: the hook runs there. */
  project_dir: string;
  /** The file the run fixes, relative to project_dir. */
  target: string;
  /** typescript, javascript, python, rust, when known. */
  language?: string | null;
  /** At on_after_gen the Artisan's proposal; elsewhere the target as it is on disk. */
  code?: string | null;
  /** The last test run, when there was one. */
  tests?: Tests | null;
  budget: Budget;
  /** The plugin's config from ralph-plugins.yaml (null for a hook of hooks:). */
  config: unknown;
  /** At pre_task and post_task: the task. */
  task?: Task | null;
}

export type Action = "pass" | "change" | "veto";

/** What a plugin answers. */
export interface Response {
  protocol: 1;
  action: Action;
  /** With change: the whole new file (at on_after_gen). */
  code?: string | null;
  /** With veto: why (they go to the Artisan). */
  reasons?: string[];
  /** Anything for the Artisan's next prompt. */
  notes?: string[];
}

/** The target's language: the request's, else guessed from the target's extension. */
export function language(request: Request): string | undefined;
/** Nothing to change or stop; notes go to the Artisan's next prompt. */
export function pass(notes?: string[]): Response;
/** Replace the proposal with code, the whole file (at on_after_gen only). */
export function change(code: string, notes?: string[]): Response;
/** Stop what the stage guards (at on_before_success, the success). */
export function veto(reasons: string[], notes?: string[]): Response;
/**
 * Reads the request, awaits handler, prints its response (undefined passes) and exits.
 * A handler that throws makes the plugin fail (exit 1): the hook's on_failure decides.
 */
export function run(
  handler: (request: Request) => Response | undefined | Promise<Response | undefined>,
): Promise<void>;
