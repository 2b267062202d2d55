// A TCP relay whose open connections a test can silence without closing them: what a stalled
// load balancer, or a peer that died behind one, looks like to a client. New connections are
// relayed normally, so a client that notices and reconnects gets through.
import * as net from 'node:net';

export interface SilentRelay {
  readonly port: number;
  /** Every open connection stops forwarding, both ways; nothing is closed. */
  blackhole(): void;
  /** Connections accepted so far. */
  connections(): number;
  close(): void;
}

export async function silentRelay(target: number): Promise<SilentRelay> {
  const pairs = new Set<{ a: net.Socket; b: net.Socket; silent: boolean }>();
  let accepted = 0;
  const server = net.createServer((a) => {
    accepted++;
    const b = net.connect(target, '127.0.0.1');
    const pair = { a, b, silent: false };
    pairs.add(pair);
    a.on('data', (d) => {
      if (!pair.silent) b.write(d);
    });
    b.on('data', (d) => {
      if (!pair.silent) a.write(d);
    });
    const end = (): void => {
      pairs.delete(pair);
      a.destroy();
      b.destroy();
    };
    a.on('close', end).on('error', end);
    b.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    blackhole: () => {
      for (const p of pairs) p.silent = true;
    },
    connections: () => accepted,
    close: () => {
      for (const p of pairs) {
        p.a.destroy();
        p.b.destroy();
      }
      server.close();
    },
  };
}
