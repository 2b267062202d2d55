import { pino } from 'pino';
import { PrxError } from './errors.js';
import { FdLogDestination } from './log-destination.js';

/**
 * Logging: one pino root logger writing JSON lines, and named child loggers (`prx.router.http`,
 * `prx.namer.fs`, …) whose levels can be changed at runtime — the model behind `/logging.json`.
 *
 * Names are dotted. A logger without an explicitly set level takes the level of its nearest
 * ancestor that has one (`prx.router.http` → `prx.router` → `prx` → `root`), so raising `prx.router`
 * to `debug` affects every router's logger, present and future, until one of them is set itself.
 */

/** Log levels, most verbose first. `off` silences a logger. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'off'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A named logger (pino's API: `log.info({obj}, 'msg')`, `log.child({...})`). */
export type Logger = pino.Logger;

/** The name under which the root logger is listed and addressed. */
export const ROOT_LOGGER = 'root';

/** One row of {@link LogRegistry.list}. */
export interface LoggerLevel {
  readonly logger: string;
  readonly level: LogLevel;
}

/** Where log lines go: anything with `write(line)` (pino's destination contract). */
export type LogDestination = pino.DestinationStream;

export class InvalidLogLevelError extends PrxError {
  constructor(text: string) {
    super('PRX_ERR_LOG_INVALID_LEVEL', `invalid log level '${text}'; expected one of ${LOG_LEVELS.join(', ')}`);
  }
}

// Linkerd 1 (twitter util-logging) level names that have no pino twin. CRITICAL sits between ERROR
// and FATAL there; it maps up to fatal so that choosing it never logs more than asked for.
const LEVEL_ALIASES: Readonly<Record<string, LogLevel>> = {
  all: 'trace',
  warning: 'warn',
  critical: 'fatal',
  silent: 'off',
  none: 'off',
};

/** Parses a level name, case-insensitively, accepting Linkerd's names (`INFO`, `ALL`, `WARNING`, `OFF`). */
export function parseLogLevel(text: string): LogLevel {
  const lower = text.trim().toLowerCase();
  const level = (LOG_LEVELS as readonly string[]).includes(lower) ? (lower as LogLevel) : LEVEL_ALIASES[lower];
  if (level === undefined) throw new InvalidLogLevelError(text);
  return level;
}

function pinoLevel(level: LogLevel): pino.LevelWithSilent {
  return level === 'off' ? 'silent' : level;
}

/** The parent of a dotted logger name; the root logger is everyone's last ancestor. */
function parentOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? ROOT_LOGGER : name.slice(0, dot);
}

export interface LogRegistryOptions {
  /** Defaults to stdout, written asynchronously and flushed on exit. Tests pass an in-memory stream. */
  readonly destination?: LogDestination;
  /** The root level; defaults to `info`. */
  readonly level?: LogLevel;
}

/**
 * A root logger plus its named children and their levels. The process uses the default instance
 * through {@link getLogger} and friends; tests build their own with an injected destination.
 */
export class LogRegistry {
  /** The root logger; named loggers are its children. */
  readonly root: Logger;
  readonly #loggers = new Map<string, Logger>();
  // Only explicitly set levels are stored; every other level is inherited (see module doc).
  readonly #explicit = new Map<string, LogLevel>();

  constructor(options: LogRegistryOptions = {}) {
    const level = options.level ?? 'info';
    const destination = options.destination ?? new FdLogDestination(1);
    this.root = pino(
      {
        level: pinoLevel(level),
        timestamp: pino.stdTimeFunctions.isoTime,
        // Level names rather than numbers: the lines are read by people and log shippers alike.
        formatters: { level: (label) => ({ level: label }) },
      },
      destination,
    );
    this.#explicit.set(ROOT_LOGGER, level);
    this.#loggers.set(ROOT_LOGGER, this.root);
  }

  /** The logger called `name` (created on first use, at its inherited level). */
  get(name: string): Logger {
    let logger = this.#loggers.get(name);
    if (!logger) {
      logger = this.root.child({ name }, { level: pinoLevel(this.levelOf(name)) });
      this.#loggers.set(name, logger);
    }
    return logger;
  }

  /**
   * Sets the level of `name` and of every descendant that has no level of its own. `level` may be
   * any name {@link parseLogLevel} accepts. Setting a name no logger uses yet is allowed (Linkerd
   * does the same): the level applies once the logger is created.
   */
  setLevel(name: string, level: string): void {
    this.#explicit.set(name, parseLogLevel(level));
    for (const [loggerName, logger] of this.#loggers) logger.level = pinoLevel(this.levelOf(loggerName));
  }

  /** The effective level of `name`: its own if set, else its nearest ancestor's. */
  levelOf(name: string): LogLevel {
    for (let n = name; ; n = parentOf(n)) {
      const level = this.#explicit.get(n);
      if (level !== undefined) return level;
      if (n === ROOT_LOGGER) return 'info'; // unreachable: root always has a level
    }
  }

  /** The levels set explicitly (root first): what another process needs to log the same way. */
  explicitLevels(): LoggerLevel[] {
    return [...this.#explicit].map(([logger, level]) => ({ logger, level }));
  }

  /** Every known logger (created or explicitly set) with its effective level: root first, then by name. */
  list(): LoggerLevel[] {
    const names = new Set([...this.#loggers.keys(), ...this.#explicit.keys()]);
    names.delete(ROOT_LOGGER);
    return [ROOT_LOGGER, ...[...names].sort()].map((logger) => ({ logger, level: this.levelOf(logger) }));
  }
}

/** The process-wide registry, writing to stdout. */
export const defaultLogRegistry = new LogRegistry();

/** The process-wide root logger. */
export const rootLogger: Logger = defaultLogRegistry.root;

/** The process-wide logger called `name`, e.g. `getLogger('prx.router.http')`. */
export function getLogger(name: string): Logger {
  return defaultLogRegistry.get(name);
}

/** Every process-wide logger and its effective level, root first, then sorted by name. */
export function listLoggers(): LoggerLevel[] {
  return defaultLogRegistry.list();
}

/** Changes the level of a process-wide logger and of its descendants that inherit it. */
export function setLevel(name: string, level: string): void {
  defaultLogRegistry.setLevel(name, level);
}
