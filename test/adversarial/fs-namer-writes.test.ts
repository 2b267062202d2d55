// An fs namer file rewritten in place while traffic flows: truncated, half written, rewritten
// every ~10 ms. A real router over a real io.prx.fs namer with real backends must never see the
// name empty or broken (zero non-200s), and a file that stays empty or goes away is still believed
// once it settles. The writers are exported: any fs-watching namer can be run through them.
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { FsNamer } from '../../src/namer/fs.js';
import { readPath } from '../../src/naming/index.js';
import { type Backend, type RouterUnderTest, eventually, startBackend, startRouter } from '../router/harness.js';

/** Rewrites a file the way most programs do: `open(O_TRUNC)` then one write. */
export function rewriteInPlace(path: string, text: string): Promise<void> {
  writeFileSync(path, text);
  return Promise.resolve();
}

/** Truncates the file, then writes it a moment later: readers can see it empty. */
export async function truncateThenWrite(path: string, text: string): Promise<void> {
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, 0);
    await sleep(3);
    writeSync(fd, text, 0);
  } finally {
    closeSync(fd);
  }
}

/** Writes the first line up to its port, then the rest 20 ms later: readers can see a malformed line. */
export async function writeInTwoParts(path: string, text: string): Promise<void> {
  const cut = text.indexOf(' ');
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, text.slice(0, cut));
    await sleep(20);
    writeSync(fd, text.slice(cut));
  } finally {
    closeSync(fd);
  }
}

/** Runs `write` every ~`periodMs` for `ms`, alternating between `texts`; resolves with the number of writes. */
export async function keepRewriting(
  path: string,
  texts: readonly string[],
  write: (path: string, text: string) => Promise<void>,
  ms = 2000,
  periodMs = 10,
): Promise<number> {
  const end = Date.now() + ms;
  let n = 0;
  while (Date.now() < end) {
    await write(path, texts[n++ % texts.length] as string);
    await sleep(periodMs);
  }
  return n;
}

/** Sends requests on `loops` keep-alive loops until `stop()` is true; counts statuses. */
async function traffic(url: string, host: string, loops: number, stop: () => boolean): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const agent = new Agent({ connections: loops });
  const loop = async (): Promise<void> => {
    while (!stop()) {
      const r = await request(url, { headers: { host }, dispatcher: agent });
      await r.body.dump();
      statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
    }
  };
  try {
    await Promise.all(Array.from({ length: loops }, loop));
  } finally {
    await agent.close();
  }
  return statuses;
}

let cat: Backend;
let dog: Backend;
before(async () => {
  cat = await startBackend('cat');
  dog = await startBackend('dog');
});
after(async () => {
  await cat.close();
  await dog.close();
});

/** A router whose `/svc/web` is the fs namer's file `web`, which holds `text` at first. */
async function routerOverFile(text: string): Promise<{ rt: RouterUnderTest; file: string; close(): Promise<void> }> {
  const root = mkdtempSync(join(tmpdir(), 'prx-fs-writes-'));
  const file = join(root, 'web');
  writeFileSync(file, text);
  const prefix = readPath('/#/io.prx.fs');
  const namer = new FsNamer(root, prefix);
  const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [{ prefix, namer }] });
  return {
    rt,
    file,
    async close() {
      await rt.close();
      namer.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

const writers = { 'rewritten in place (open with truncate, one write)': rewriteInPlace, 'truncated, then written': truncateThenWrite, 'written in two parts': writeInTwoParts };

describe('fs namer: a file rewritten in place while requests flow', () => {
  for (const [how, write] of Object.entries(writers)) {
    test(`${how} every ~10 ms for 2 s: every request is answered 200`, async () => {
      const texts = [`127.0.0.1 ${cat.port}\n`, `127.0.0.1 ${dog.port}\n`, `127.0.0.1 ${cat.port}\n127.0.0.1 ${dog.port}\n`];
      const fx = await routerOverFile(texts[0] as string);
      try {
        let stop = false;
        const seen = cat.requests.length;
        const flowing = traffic(fx.rt.url, 'web', 4, () => stop);
        await eventually(() => cat.requests.length > seen, 5000, 'traffic to the first address');
        const writes = await keepRewriting(fx.file, texts, write).finally(() => (stop = true));
        const statuses = await flowing;
        const total = [...statuses.values()].reduce((a, b) => a + b, 0);
        assert.ok(writes > 50, `the writer kept writing (${writes} writes)`);
        assert.ok(total > 100, `requests flowed (${total})`);
        assert.deepEqual(Object.fromEntries(statuses), { 200: total }, 'no request failed while the file was being written');
      } finally {
        await fx.close();
      }
    });
  }

  test('a file already being rewritten when the namer first reads it: every request is answered 200', async () => {
    const texts = [`127.0.0.1 ${cat.port}\n`, `127.0.0.1 ${dog.port}\n`];
    const fx = await routerOverFile(texts[0] as string);
    try {
      let stop = false;
      const writing = keepRewriting(fx.file, texts, writeInTwoParts, 1500).finally(() => (stop = true));
      await sleep(100);
      const statuses = await traffic(fx.rt.url, 'web', 4, () => stop);
      await writing;
      const total = [...statuses.values()].reduce((a, b) => a + b, 0);
      assert.ok(total > 50, `requests flowed (${total})`);
      assert.deepEqual(Object.fromEntries(statuses), { 200: total });
    } finally {
      await fx.close();
    }
  });

  test('a file that stays empty, then one that goes away, is believed once settled', async () => {
    const fx = await routerOverFile(`127.0.0.1 ${cat.port}\n`);
    const status = async (): Promise<number> => {
      const r = await request(fx.rt.url, { headers: { host: 'web' } });
      await r.body.dump();
      return r.statusCode;
    };
    try {
      assert.equal(await status(), 200);
      writeFileSync(fx.file, '');
      const deadline = Date.now() + 5000;
      while ((await status()) === 200) {
        assert.ok(Date.now() < deadline, 'an empty file is believed after it settles');
        await sleep(20);
      }
      writeFileSync(fx.file, `127.0.0.1 ${dog.port}\n`);
      const back = Date.now() + 5000;
      while ((await status()) !== 200) {
        assert.ok(Date.now() < back, 'a sound file is used again');
        await sleep(20);
      }
      unlinkSync(fx.file);
      const gone = Date.now() + 5000;
      while ((await status()) === 200) {
        assert.ok(Date.now() < gone, 'a deleted file is Neg after it settles');
        await sleep(20);
      }
    } finally {
      await fx.close();
    }
  });
});
