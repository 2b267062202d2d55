// Pieces of the fleet tests (test/e2e): real backends and keep-alive client loops recording
// where each answer came from.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A backend answering its own name. */
export async function backend(name: string, servers: http.Server[]): Promise<number> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(name));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** One keep-alive client loop: GETs until stopped, recording where each answer came from. */
export interface Answer {
  readonly sentAt: number;
  readonly doneAt: number;
  readonly body: string;
}

export function loadLoop(port: number, agent: http.Agent, answers: Answer[], failures: string[], stop: { stopped: boolean }): Promise<void> {
  return new Promise((resolve) => {
    const next = (): void => {
      if (stop.stopped) return resolve();
      const sentAt = performance.now();
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          if (res.statusCode === 200) answers.push({ sentAt, doneAt: performance.now(), body });
          else failures.push(`${res.statusCode}: ${body}`);
          next();
        });
      });
      req.on('error', (e) => {
        failures.push(e.message);
        next();
      });
    };
    next();
  });
}
