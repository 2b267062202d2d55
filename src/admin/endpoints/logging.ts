import { InvalidLogLevelError, type LogRegistry, type LoggerLevel } from '../../core/log.js';
import { BadRequestError } from '../errors.js';
import { jsonResponse, negotiate, requestParams, type AdminEndpoint } from '../handler.js';

/** A logger row as `/logging.json` shows it: Linkerd's upper-case level names. */
function row({ logger, level }: LoggerLevel): { logger: string; level: string } {
  return { logger, level: level.toUpperCase() };
}

/**
 * `/logging.json`: GET lists loggers and levels (root first, then by name); POST with `logger`
 * and `level` (query string or JSON body) sets a level — an unknown logger is fine, as in Linkerd, an
 * unknown level is a 400.
 */
export function loggingEndpoint(logs: LogRegistry): AdminEndpoint {
  return {
    path: '/logging.json',
    method: ['GET', 'POST'],
    description: 'Configured loggers and log levels; POST ?logger=<name>&level=<level> (or a JSON body) changes one.',
    handler: (req) => {
      if (req.method !== 'POST') return jsonResponse(logs.list().map(row));
      const params = requestParams(req);
      const logger = params.get('logger');
      const level = params.get('level');
      if (!logger || !level) throw new BadRequestError('both `logger` and `level` are required');
      try {
        logs.setLevel(logger, level);
      } catch (e) {
        if (e instanceof InvalidLogLevelError) throw new BadRequestError(e.message);
        throw e;
      }
      const updated = row({ logger, level: logs.levelOf(logger) });
      return negotiate(req, { json: () => updated, text: () => `${updated.logger} ${updated.level}` });
    },
  };
}
